//! The one place where core errors become Python exceptions.
//!
//! Construction problems and wrongly shaped buffers are the caller's to fix, so both become
//! `ValueError` with the core's message (which names the bad value and what is allowed).
//! Wrong Python types become `TypeError` where they are detected (see `pcm.rs`).

use pyo3::exceptions::PyValueError;
use pyo3::PyErr;
use voxwire_audio::error::{ConfigError, ProcessError};
use voxwire_audio::mix::MixError;

pub(crate) fn config(e: ConfigError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

pub(crate) fn process(e: ProcessError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

pub(crate) fn mix(e: MixError) -> PyErr {
    PyValueError::new_err(e.to_string())
}
