//! Real FFTs of one size with preallocated work buffers, so the canceller's block loop never
//! allocates.

use std::sync::Arc;

use realfft::num_complex::Complex32;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};

/// Forward and inverse real FFT of `size` points; the inverse is scaled by `1 / size`, so
/// `inverse(forward(x)) == x`.
pub(crate) struct Fft {
    forward: Arc<dyn RealToComplex<f32>>,
    inverse: Arc<dyn ComplexToReal<f32>>,
    time: Vec<f32>,
    freq: Vec<Complex32>,
    scratch: Vec<Complex32>,
    scale: f32,
}

impl Fft {
    pub(crate) fn new(size: usize) -> Self {
        let mut planner = RealFftPlanner::<f32>::new();
        let forward = planner.plan_fft_forward(size);
        let inverse = planner.plan_fft_inverse(size);
        let scratch_len = forward.get_scratch_len().max(inverse.get_scratch_len());
        Self {
            time: forward.make_input_vec(),
            freq: forward.make_output_vec(),
            scratch: vec![Complex32::default(); scratch_len],
            forward,
            inverse,
            scale: 1.0 / size as f32,
        }
    }

    /// Number of bins of a spectrum (`size / 2 + 1`).
    pub(crate) fn bins(&self) -> usize {
        self.freq.len()
    }

    /// Spectrum of `input` (`size` samples) into `out` (`bins()` values).
    pub(crate) fn forward(&mut self, input: &[f32], out: &mut [Complex32]) {
        self.time.copy_from_slice(input);
        let r = self.forward.process_with_scratch(&mut self.time, out, &mut self.scratch);
        // Lengths are fixed at construction, so the only error realfft reports cannot happen.
        debug_assert!(r.is_ok());
    }

    /// Signal of `spec` (`bins()` values) into `out` (`size` samples), scaled by `1 / size`.
    pub(crate) fn inverse(&mut self, spec: &[Complex32], out: &mut [f32]) {
        self.freq.copy_from_slice(spec);
        // A real signal's DC and Nyquist bins are real; rounding may leave a trace of imaginary
        // part, which realfft would report.
        let last = self.freq.len() - 1;
        self.freq[0].im = 0.0;
        self.freq[last].im = 0.0;
        let r = self.inverse.process_with_scratch(&mut self.freq, out, &mut self.scratch);
        debug_assert!(r.is_ok());
        for v in out.iter_mut() {
            *v *= self.scale;
        }
    }
}
