//! `EchoCanceller` for Python.

use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use voxwire_audio::{EchoCanceller as Core, EchoConfig, Pcm};

use crate::{errors, pcm::with_pcm, ring::may_detach_reading};

/// Acoustic echo canceller: the microphone minus the echo of what the speaker played.
///
/// Both streams are mono PCM16 at ``rate_hz``; ``reference[i]`` must have left the speaker no
/// later than ``mic[i]`` was captured (the echo may arrive up to ``tail_ms`` later). The output
/// has the input's length and lags it by ``latency_samples``.
#[pyclass(module = "voxwire._core", name = "EchoCanceller")]
pub(crate) struct EchoCanceller {
    inner: Core,
}

fn borrowed<'a>(pcm: &'a Pcm<'a>, owned: &'a mut Vec<i16>) -> &'a [i16] {
    match pcm {
        Pcm::Samples(s) => s,
        Pcm::LeBytes(_) => {
            owned.resize(pcm.len(), 0);
            pcm.copy_to(0, owned);
            owned
        }
    }
}

#[pymethods]
impl EchoCanceller {
    #[new]
    #[pyo3(signature = (
        rate_hz, *, tail_ms = 300, suppression_db = 40.0, noise_suppression = false, delay_search = false
    ))]
    fn new(
        rate_hz: i64,
        tail_ms: i64,
        suppression_db: f64,
        noise_suppression: bool,
        delay_search: bool,
    ) -> PyResult<Self> {
        let rate_hz = u32::try_from(rate_hz)
            .map_err(|_| errors::out_of_range("rate_hz", rate_hz, "8000..=48000 Hz"))?;
        let tail_ms =
            u32::try_from(tail_ms).map_err(|_| errors::out_of_range("tail_ms", tail_ms, "20..=1000 ms"))?;
        if !suppression_db.is_finite() {
            return Err(errors::out_of_range("suppression_db", suppression_db, "0.0..=80.0 dB"));
        }
        let config = EchoConfig {
            rate_hz,
            tail_ms,
            suppression_db: suppression_db as f32,
            noise_suppression,
            delay_search,
        };
        Ok(Self { inner: Core::new(config).map_err(errors::config)? })
    }

    /// Cancel the echo of ``reference`` in ``mic`` (same length); returns the cleaned samples.
    fn process<'py>(
        &mut self,
        py: Python<'py>,
        mic: &Bound<'py, PyAny>,
        reference: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<i16>>> {
        let detach = may_detach_reading(mic) && may_detach_reading(reference);
        with_pcm(mic, |m| {
            with_pcm(reference, |r| {
                let out = PyArray1::<i16>::zeros(py, m.len(), false);
                {
                    let mut rw = out.try_readwrite().map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
                    let slice = rw.as_slice_mut().map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
                    let (mut mo, mut ro) = (Vec::new(), Vec::new());
                    let (ms, rs) = (borrowed(&m, &mut mo), borrowed(&r, &mut ro));
                    let inner = &mut self.inner;
                    let mut run = || inner.process(ms, rs, slice);
                    if detach { py.detach(run) } else { run() }.map_err(errors::process)?;
                }
                Ok(out)
            })
        })
    }

    /// Forget the learned echo path (for example after switching devices).
    fn reset(&mut self) {
        self.inner.reset();
    }

    #[getter]
    fn rate_hz(&self) -> u32 {
        self.inner.config().rate_hz
    }

    #[getter]
    fn tail_ms(&self) -> u32 {
        self.inner.config().tail_ms
    }

    #[getter]
    fn suppression_db(&self) -> f32 {
        self.inner.config().suppression_db
    }

    #[getter]
    fn noise_suppression(&self) -> bool {
        self.inner.config().noise_suppression
    }

    #[getter]
    fn delay_search(&self) -> bool {
        self.inner.config().delay_search
    }

    /// The delay search's estimate of the strongest echo path behind the reference, in samples
    /// (``None`` until it has one, or with ``delay_search=False``).
    #[getter]
    fn delay_estimate_samples(&self) -> Option<usize> {
        self.inner.stats().delay_estimate_samples
    }

    /// How much later than given the reference is fed to the filter, in samples (0 without the
    /// delay search).
    #[getter]
    fn reference_delay_samples(&self) -> usize {
        self.inner.stats().reference_delay_samples
    }

    /// Clock drift between reference and microphone the delay search measures and compensates,
    /// in parts per million (``None`` while it sees none, or with ``delay_search=False``).
    #[getter]
    fn drift_ppm(&self) -> Option<f32> {
        self.inner.stats().drift_ppm
    }

    /// Samples per processing block (10 ms).
    #[getter]
    fn block_samples(&self) -> usize {
        self.inner.block_samples()
    }

    /// How far the output lags the input, in samples.
    #[getter]
    fn latency_samples(&self) -> usize {
        self.inner.latency_samples()
    }

    /// Echo reduction of the linear filter while the far end plays, in dB (smoothed estimate).
    #[getter]
    fn linear_erle_db(&self) -> f32 {
        self.inner.stats().linear_erle_db
    }

    /// Estimated fraction of the echo power the linear filter misses.
    #[getter]
    fn leak(&self) -> f32 {
        self.inner.stats().leak
    }

    /// Whether the linear filter has converged once.
    #[getter]
    fn converged(&self) -> bool {
        self.inner.stats().converged
    }

    /// Delay of the strongest part of the echo path, in samples (10 ms resolution).
    #[getter]
    fn echo_delay_samples(&self) -> usize {
        self.inner.stats().echo_delay_samples
    }

    /// Level of the echo the canceller estimates is left in its latest output block (10 ms,
    /// the last complete one), after the linear filter and the post-filter, in dBFS (-120 for
    /// none): what a barge-in detector can compare the output with.
    #[getter]
    fn residual_echo_dbfs(&self) -> f32 {
        self.inner.stats().residual_echo_dbfs
    }

    fn __repr__(&self) -> String {
        let c = self.inner.config();
        format!(
            "EchoCanceller(rate_hz={}, tail_ms={}, suppression_db={}, noise_suppression={}, delay_search={})",
            c.rate_hz,
            c.tail_ms,
            c.suppression_db,
            if c.noise_suppression { "True" } else { "False" },
            if c.delay_search { "True" } else { "False" }
        )
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<EchoCanceller>()
}
