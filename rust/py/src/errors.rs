//! The one place where core errors become Python exceptions.
//!
//! Construction problems and wrongly shaped buffers are the caller's to fix, so both become
//! `ValueError` with the core's message (which names the bad value and what is allowed).
//! Wrong Python types become `TypeError` where they are detected (see `pcm.rs`).

use pyo3::exceptions::{PyOverflowError, PyValueError};
use pyo3::PyErr;
use voxwire_audio::error::{ConfigError, ProcessError};
use voxwire_audio::mix::MixError;

pub(crate) fn config(e: ConfigError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A count past what the machine can hold is `OverflowError`; any other shape problem
/// `ValueError`.
pub(crate) fn process(e: ProcessError) -> PyErr {
    match e {
        ProcessError::TooLong { .. } => PyOverflowError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

pub(crate) fn mix(e: MixError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// An integer argument outside what is allowed (including ints too large for a machine word),
/// in the same words as the core's messages: the name, the value given, what is allowed.
pub(crate) fn out_of_range(name: &str, value: impl std::fmt::Display, allowed: &str) -> PyErr {
    PyValueError::new_err(format!("{name}={value} is not allowed: expected {allowed}"))
}

/// `voxwire.exceptions.InvalidState`: an operation the object's current state does not allow
/// (the message says what to do instead). Falls back to `RuntimeError` if the Python package
/// cannot be imported, which only happens when `_core` is loaded on its own.
pub(crate) fn invalid_state(py: pyo3::Python<'_>, msg: &str) -> PyErr {
    use pyo3::types::{PyAnyMethods, PyType};
    let cls = py
        .import("voxwire.exceptions")
        .and_then(|m| m.getattr("InvalidState"))
        .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
    match cls {
        Ok(cls) => PyErr::from_type(cls, msg.to_owned()),
        Err(_) => pyo3::exceptions::PyRuntimeError::new_err(msg.to_owned()),
    }
}
