//! `Resampler` and `to_mono` for Python.

use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use voxwire_audio::{Pcm, Quality, Resampler as CoreResampler};

use crate::{errors, pcm::with_pcm};

/// Streaming PCM16 mono resampler (polyphase FIR, linear phase).
///
/// Feeding a signal in chunks of any size gives output bit-identical to one call; after each
/// call everything the input determines has been returned. The only delay is the filter's,
/// ``output_delay()`` output samples. ``flush()`` drains the tail and starts a new stream.
#[pyclass(module = "voxwire._core", name = "Resampler")]
pub(crate) struct Resampler {
    inner: CoreResampler,
}

#[pymethods]
impl Resampler {
    #[new]
    #[pyo3(signature = (in_rate_hz, out_rate_hz, quality = "hq"))]
    fn new(in_rate_hz: i64, out_rate_hz: i64, quality: &str) -> PyResult<Self> {
        let rate = |name: &'static str, value: i64| {
            u32::try_from(value)
                .map_err(|_| errors::config(voxwire_audio::ConfigError::InvalidRate { name, value }))
        };
        let (i, o) = (rate("in_rate_hz", in_rate_hz)?, rate("out_rate_hz", out_rate_hz)?);
        let q = Quality::from_name(quality).map_err(errors::config)?;
        Ok(Self { inner: CoreResampler::new(i, o, q).map_err(errors::config)? })
    }

    /// Resample one chunk; returns the new output samples as a numpy int16 array.
    fn process<'py>(
        &mut self,
        py: Python<'py>,
        pcm: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<i16>>> {
        with_pcm(pcm, |input| {
            let n = self.inner.output_len(input.len()).map_err(errors::process)?;
            let out = PyArray1::<i16>::zeros(py, n, false);
            {
                let mut rw = out
                    .try_readwrite()
                    .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
                let slice = rw
                    .as_slice_mut()
                    .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
                self.inner.process_into(input, slice).map_err(errors::process)?;
            }
            Ok(out)
        })
    }

    /// Resample float audio (numpy float32, full scale +-1.0) without rounding or clipping.
    ///
    /// Same filter, same stream as ``process`` (calls may be mixed).
    fn process_float<'py>(
        &mut self,
        py: Python<'py>,
        pcm: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let arr = pcm.cast::<PyArray1<f32>>().map_err(|_| {
            PyTypeError::new_err(
                "process_float expects a 1-D numpy float32 array: convert with x.astype(numpy.float32)",
            )
        })?;
        let ro = arr.try_readonly().map_err(|e| PyValueError::new_err(e.to_string()))?;
        let owned;
        let input = match ro.as_slice() {
            Ok(s) => s,
            Err(_) => {
                owned = ro.as_array().to_vec();
                &owned[..]
            }
        };
        let mut out = vec![0f32; self.inner.output_len(input.len()).map_err(errors::process)?];
        self.inner.process_f32_into(input, &mut out).map_err(errors::process)?;
        Ok(PyArray1::from_vec(py, out))
    }

    /// Produce the samples still owed for the input so far (as if silence followed), then reset.
    fn flush<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i16>>> {
        let out = self.inner.flush();
        Ok(PyArray1::from_vec(py, out))
    }

    /// ``flush`` for float output (float32, full scale +-1.0).
    fn flush_float<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let mut out = vec![0f32; self.inner.flush_len()];
        self.inner.flush_into(&mut out).map_err(errors::process)?;
        Ok(PyArray1::from_vec(py, out))
    }

    /// Forget all input and start a new stream.
    fn reset(&mut self) {
        self.inner.reset();
    }

    /// Delay of the output behind the input, in output samples (may be fractional).
    fn output_delay(&self) -> f64 {
        self.inner.output_delay()
    }

    /// Number of samples the next ``process`` call returns for ``n_samples`` input samples.
    /// ``OverflowError`` if that count does not fit in a machine word.
    fn output_len(&self, n_samples: usize) -> PyResult<usize> {
        self.inner.output_len(n_samples).map_err(errors::process)
    }

    #[getter]
    fn in_rate_hz(&self) -> u32 {
        self.inner.in_rate_hz()
    }

    #[getter]
    fn out_rate_hz(&self) -> u32 {
        self.inner.out_rate_hz()
    }

    #[getter]
    fn quality(&self) -> &'static str {
        self.inner.quality().name()
    }

    /// Filter taps evaluated per output sample.
    #[getter]
    fn taps_per_phase(&self) -> usize {
        self.inner.taps_per_phase()
    }

    fn __repr__(&self) -> String {
        format!(
            "Resampler(in_rate_hz={}, out_rate_hz={}, quality={:?})",
            self.inner.in_rate_hz(),
            self.inner.out_rate_hz(),
            self.inner.quality().name()
        )
    }
}

/// Mix interleaved PCM16 with ``channels`` channels down to mono (mean, rounded half away from zero).
#[pyfunction]
fn to_mono<'py>(
    py: Python<'py>,
    pcm: &Bound<'py, PyAny>,
    channels: i64,
) -> PyResult<Bound<'py, PyArray1<i16>>> {
    let channels = usize::try_from(channels).unwrap_or(0);
    with_pcm(pcm, |input| {
        // Native samples are mixed in place; only little-endian bytes need converting first.
        let converted;
        let samples: &[i16] = match input {
            Pcm::Samples(s) => s,
            Pcm::LeBytes(_) => {
                let mut v = vec![0i16; input.len()];
                input.copy_to(0, &mut v);
                converted = v;
                &converted
            }
        };
        let mut out = vec![0i16; input.len() / channels.max(1)];
        let n = voxwire_audio::to_mono(samples, channels, &mut out).map_err(errors::mix)?;
        out.truncate(n);
        Ok(PyArray1::from_vec(py, out))
    })
}

/// Which resampler kernel this CPU runs: ``"avx2+fma"`` or ``"portable"``.
#[pyfunction]
fn resampler_kernel() -> &'static str {
    voxwire_audio::resample::kernel_name()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Resampler>()?;
    m.add_function(wrap_pyfunction!(resampler_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(to_mono, m)?)?;
    Ok(())
}
