//! G.711 µ-law / A-law for Python: PCM16 in, `bytes` out; G.711 bytes in, numpy int16 out.
//!
//! The GIL is kept: these calls touch no shared state, and the 20 ms chunks they see (160
//! bytes at 8 kHz) take well under a microsecond, less than releasing and retaking it.

use numpy::{PyArray1, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyByteArrayMethods, PyBytes, PyBytesMethods, PyMemoryView};
use voxwire_audio::error::ProcessError;
use voxwire_audio::{g711, Pcm};

use crate::{errors, pcm::with_pcm};

type EncodeFn = fn(Pcm<'_>, &mut [u8]) -> Result<usize, ProcessError>;
type DecodeFn = fn(&[u8], &mut [i16]) -> Result<usize, ProcessError>;

fn encode<'py>(py: Python<'py>, pcm: &Bound<'py, PyAny>, f: EncodeFn) -> PyResult<Bound<'py, PyBytes>> {
    with_pcm(pcm, |pcm| {
        // Written straight into the new bytes object: no intermediate buffer.
        PyBytes::new_with(py, pcm.len(), |out| f(pcm, out).map(drop).map_err(errors::process))
    })
}

/// Run `f` on the bytes of `data`: bytes, bytearray, memoryview or a 1-D numpy uint8 array.
fn with_codes<R>(data: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> PyResult<R>) -> PyResult<R> {
    if let Ok(b) = data.cast::<PyBytes>() {
        return f(b.as_bytes());
    }
    if let Ok(b) = data.cast::<PyByteArray>() {
        // Copied (G.711 chunks are small) rather than borrowed: allocating the output array
        // could run Python code that resizes the bytearray under a borrowed slice.
        return f(&b.to_vec());
    }
    if data.is_instance_of::<PyMemoryView>() {
        let copied = data.call_method0("tobytes")?;
        return f(copied.cast::<PyBytes>()?.as_bytes());
    }
    if let Ok(arr) = data.cast::<PyArray1<u8>>() {
        let ro = arr.try_readonly().map_err(|e| PyValueError::new_err(e.to_string()))?;
        return match ro.as_slice() {
            Ok(s) => f(s),
            Err(_) => f(&ro.as_array().to_vec()),
        };
    }
    if let Ok(arr) = data.cast::<PyUntypedArray>() {
        return Err(PyTypeError::new_err(format!(
            "expected G.711 codes as bytes or a 1-D numpy uint8 array, got a numpy array of dtype {} \
             and shape {:?}",
            arr.dtype().str()?,
            arr.shape()
        )));
    }
    Err(PyTypeError::new_err(format!(
        "expected G.711 codes as bytes, bytearray, memoryview or a 1-D numpy uint8 array, got {}",
        data.get_type().name()?
    )))
}

fn decode<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    f: DecodeFn,
) -> PyResult<Bound<'py, PyArray1<i16>>> {
    with_codes(data, |codes| {
        let out = PyArray1::<i16>::zeros(py, codes.len(), false);
        {
            let mut rw = out.try_readwrite().map_err(|e| PyValueError::new_err(e.to_string()))?;
            let slice = rw.as_slice_mut().map_err(|e| PyValueError::new_err(e.to_string()))?;
            f(codes, slice).map_err(errors::process)?;
        }
        Ok(out)
    })
}

/// Encode PCM16 (bytes, bytearray, memoryview or numpy int16) to G.711 µ-law bytes.
#[pyfunction]
fn ulaw_encode<'py>(py: Python<'py>, pcm: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    encode(py, pcm, g711::ulaw_encode)
}

/// Encode PCM16 (bytes, bytearray, memoryview or numpy int16) to G.711 A-law bytes.
#[pyfunction]
fn alaw_encode<'py>(py: Python<'py>, pcm: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    encode(py, pcm, g711::alaw_encode)
}

/// Decode G.711 µ-law (bytes, bytearray, memoryview or numpy uint8) to a numpy int16 array.
#[pyfunction]
fn ulaw_decode<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray1<i16>>> {
    decode(py, data, g711::ulaw_decode)
}

/// Decode G.711 A-law (bytes, bytearray, memoryview or numpy uint8) to a numpy int16 array.
#[pyfunction]
fn alaw_decode<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray1<i16>>> {
    decode(py, data, g711::alaw_decode)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(ulaw_encode, m)?)?;
    m.add_function(wrap_pyfunction!(ulaw_decode, m)?)?;
    m.add_function(wrap_pyfunction!(alaw_encode, m)?)?;
    m.add_function(wrap_pyfunction!(alaw_decode, m)?)?;
    Ok(())
}
