//! `voxwire._core`: the Python face of `voxwire-audio`.
//!
//! This crate adds nothing but conversion: Python objects in, core calls, numpy arrays or
//! bytes out, core errors turned into Python exceptions in [`errors`]. Calls that touch shared
//! state of the ring buffer release the GIL.

use pyo3::prelude::*;

mod aec;
mod errors;
mod g711;
mod pcm;
mod playback;
mod resample;
mod ring;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    resample::register(m)?;
    ring::register(m)?;
    playback::register(m)?;
    g711::register(m)?;
    aec::register(m)?;
    Ok(())
}
