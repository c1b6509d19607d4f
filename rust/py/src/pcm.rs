//! Accepting PCM16 from Python: numpy int16 arrays, bytes, bytearray, memoryview.
//!
//! Arrays and bytes are read in place (no copy); other buffer objects are copied once with
//! `tobytes()` because the stable ABI we build against (abi3, Python 3.10) has no buffer
//! protocol. Wrong types and dtypes are `TypeError`s that say what to pass instead.

use numpy::{PyArray1, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyByteArrayMethods, PyBytes, PyBytesMethods, PyMemoryView};
use voxwire_audio::Pcm;

use crate::errors;

/// Run `f` on a borrowed PCM16 view of `obj`.
pub(crate) fn with_pcm<R>(obj: &Bound<'_, PyAny>, f: impl FnOnce(Pcm<'_>) -> PyResult<R>) -> PyResult<R> {
    if let Ok(arr) = obj.cast::<PyArray1<i16>>() {
        let ro = arr.try_readonly().map_err(|e| PyValueError::new_err(e.to_string()))?;
        return match ro.as_slice() {
            Ok(s) => f(Pcm::Samples(s)),
            // A strided view (e.g. one channel sliced out of interleaved audio): copy it.
            Err(_) => {
                let v = ro.as_array().to_vec();
                f(Pcm::Samples(&v))
            }
        };
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return f(Pcm::from_le_bytes(b.as_bytes()).map_err(errors::process)?);
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        // SAFETY: the bytes are only read inside `f`, which is given a view with no way to run
        // Python code that could resize the bytearray; we hold the GIL throughout.
        let bytes = unsafe { b.as_bytes() };
        return f(Pcm::from_le_bytes(bytes).map_err(errors::process)?);
    }
    if obj.is_instance_of::<PyMemoryView>() {
        let copied = obj.call_method0("tobytes")?;
        let b = copied.cast::<PyBytes>()?;
        return f(Pcm::from_le_bytes(b.as_bytes()).map_err(errors::process)?);
    }
    if let Ok(arr) = obj.cast::<PyUntypedArray>() {
        let dtype = arr.dtype().str()?.to_string();
        if arr.ndim() != 1 && dtype.contains("int16") {
            return Err(PyValueError::new_err(format!(
                "expected a 1-D mono int16 array, got shape {:?}: mix channels down first with \
                 voxwire.audio.to_mono(pcm, channels)",
                arr.shape()
            )));
        }
        return Err(PyTypeError::new_err(format!(
            "expected PCM16 audio (numpy int16), got a numpy array of dtype {dtype}: convert float \
             audio in [-1, 1] with (x * 32767).astype(numpy.int16)"
        )));
    }
    Err(PyTypeError::new_err(format!(
        "expected PCM16 audio as bytes, bytearray, memoryview or a 1-D numpy int16 array, got {}",
        obj.get_type().name()?
    )))
}
