//! The linear part: a partitioned-block frequency-domain adaptive filter (multi-delay filter,
//! overlap-save) with two copies of the weights.
//!
//! The echo path is modelled as `parts` partitions of `n` taps each. Every block the newest
//! reference spectrum `X_0 = FFT([x_prev, x_cur])` joins the history and the echo estimate is
//! the last `n` samples of `IFFT(sum_p W_p X_p)`.
//!
//! * The **background** weights adapt every block with a normalised, proportionate step
//!   (partitions holding more of the echo path adapt faster, which suits a room's direct path
//!   followed by a decaying tail). The gradient constraint (zeroing the circular half of a
//!   partition's impulse response) is applied to one partition per block in turn, which keeps
//!   the cost at two extra FFTs per block whatever the filter length.
//! * The **foreground** weights produce the output. They take the background's weights when
//!   the background has been clearly better for a while, and the background is reset to them
//!   when it diverges (double-talk the step control missed). Double-talk can therefore make
//!   adaptation wrong for a moment but never reach the output.

use realfft::num_complex::Complex32;

use super::fft::Fft;

pub(crate) struct EchoFilter {
    n: usize,
    bins: usize,
    parts: usize,
    /// Reference spectra, `parts` slots of `bins`; `head` is the newest.
    history: Vec<Complex32>,
    head: usize,
    pub(crate) foreground: Vec<Complex32>,
    background: Vec<Complex32>,
    /// Step normalisation per bin (scratch of `adapt`).
    power: Vec<f32>,
    /// Per-bin maximum of the reference power over the history (for the suppressor).
    pub(crate) envelope: Vec<f32>,
    frame: Vec<f32>,
    time: Vec<f32>,
    spec: Vec<Complex32>,
    weights: Vec<f32>,
    constrain_next: usize,
}

/// Regularisation of the step normalisation: a reference quieter than about -60 dBFS adapts
/// no faster than one at -60 dBFS (the spectra are of unscaled 2n-point FFTs).
const POWER_FLOOR_PER_POINT: f32 = 1e-6;

impl EchoFilter {
    pub(crate) fn new(n: usize, parts: usize, bins: usize) -> Self {
        let zero = Complex32::default();
        Self {
            n,
            bins,
            parts,
            history: vec![zero; parts * bins],
            head: 0,
            foreground: vec![zero; parts * bins],
            background: vec![zero; parts * bins],
            power: vec![0.0; bins],
            envelope: vec![0.0; bins],
            frame: vec![0.0; 2 * n],
            time: vec![0.0; 2 * n],
            spec: vec![zero; bins],
            weights: vec![1.0 / parts as f32; parts],
            constrain_next: 0,
        }
    }

    pub(crate) fn reset(&mut self) {
        let zero = Complex32::default();
        self.history.fill(zero);
        self.foreground.fill(zero);
        self.background.fill(zero);
        self.power.fill(0.0);
        self.envelope.fill(0.0);
        self.frame.fill(0.0);
        self.head = 0;
        self.constrain_next = 0;
    }

    fn slot(&self, p: usize) -> usize {
        ((self.head + p) % self.parts) * self.bins
    }

    /// Add the newest reference block (`n` samples) to the history.
    pub(crate) fn push_reference(&mut self, x: &[f32], fft: &mut Fft) {
        let n = self.n;
        self.frame.copy_within(n.., 0);
        self.frame[n..].copy_from_slice(x);
        self.head = (self.head + self.parts - 1) % self.parts;
        let at = self.head * self.bins;
        fft.forward(&self.frame, &mut self.history[at..at + self.bins]);
        let newest = &self.history[at..at + self.bins];
        // The envelope decays over about the filter length and jumps up with the reference, so
        // it covers every reference block that can still be heard in the echo.
        let decay = 1.0 - 1.0 / self.parts as f32;
        for (e, x) in self.envelope.iter_mut().zip(newest) {
            *e = (*e * decay).max(x.norm_sqr());
        }
    }

    /// Echo estimate of the foreground (`fg`) or background weights into `y` (`n` samples).
    pub(crate) fn predict(&mut self, fg: bool, fft: &mut Fft, y: &mut [f32]) {
        self.spec.fill(Complex32::default());
        let w = if fg { &self.foreground } else { &self.background };
        for p in 0..self.parts {
            let at = self.slot(p);
            let wp = &w[p * self.bins..(p + 1) * self.bins];
            let xp = &self.history[at..at + self.bins];
            for ((s, w), x) in self.spec.iter_mut().zip(wp).zip(xp) {
                *s += w * x;
            }
        }
        fft.inverse(&self.spec, &mut self.time);
        y.copy_from_slice(&self.time[self.n..]);
    }

    /// One step of the background weights towards removing `err` (the spectrum of
    /// `[0; n] ++ e`), with normalised step size `mu`.
    pub(crate) fn adapt(&mut self, err: &[Complex32], mu: f32, fft: &mut Fft) {
        self.update_weights();
        // Normalise by the reference power the filter currently sees, each partition counted by
        // its weight (proportionate NLMS): speech starts and stops, so the newest block alone
        // would make the step explode at every pause.
        let floor = POWER_FLOOR_PER_POINT * (2 * self.n) as f32;
        self.power.fill(floor);
        for p in 0..self.parts {
            let at = self.slot(p);
            let g = self.weights[p];
            for (d, x) in self.power.iter_mut().zip(&self.history[at..at + self.bins]) {
                *d += g * x.norm_sqr();
            }
        }
        for ((s, e), p) in self.spec.iter_mut().zip(err).zip(&self.power) {
            *s = e * (mu / p);
        }
        for p in 0..self.parts {
            let at = self.slot(p);
            let g = self.weights[p];
            let wp = &mut self.background[p * self.bins..(p + 1) * self.bins];
            let xp = &self.history[at..at + self.bins];
            for ((w, x), e) in wp.iter_mut().zip(xp).zip(&self.spec) {
                *w += x.conj() * e * g;
            }
        }
        let p = self.constrain_next;
        self.constrain_next = (p + 1) % self.parts;
        let wp = &mut self.background[p * self.bins..(p + 1) * self.bins];
        fft.inverse(wp, &mut self.time);
        self.time[self.n..].fill(0.0);
        fft.forward(&self.time, wp);
    }

    /// Proportionate weights: half spread evenly, half by each partition's share of the
    /// background's magnitude; they sum to one.
    fn update_weights(&mut self) {
        let mut total = 0.0;
        for (p, g) in self.weights.iter_mut().enumerate() {
            let wp = &self.background[p * self.bins..(p + 1) * self.bins];
            *g = wp.iter().map(|w| w.norm_sqr()).sum::<f32>().sqrt();
            total += *g;
        }
        let even = 0.5 / self.parts as f32;
        for g in self.weights.iter_mut() {
            *g = if total > 0.0 { even + 0.5 * *g / total } else { 2.0 * even };
        }
    }

    /// The reference is now fed `blocks` blocks later (earlier if negative): move both weight
    /// sets by as many partitions so the echo path they learned stays where it is, and refill
    /// the history with `frame(p, buf)`, which writes the `2n` samples of partition `p`'s frame
    /// (in time order) as they would have been with the new delay.
    pub(crate) fn realign(&mut self, blocks: isize, fft: &mut Fft, mut frame: impl FnMut(usize, &mut [f32])) {
        let (parts, bins) = (self.parts as isize, self.bins);
        for w in [&mut self.foreground, &mut self.background] {
            if blocks > 0 {
                let k = blocks.min(parts) as usize;
                w.copy_within(k * bins.., 0);
                let len = w.len();
                w[len - k * bins..].fill(Complex32::default());
            } else if blocks < 0 {
                let k = (-blocks).min(parts) as usize;
                let len = w.len();
                w.copy_within(..len - k * bins, k * bins);
                w[..k * bins].fill(Complex32::default());
            }
        }
        for p in (0..self.parts).rev() {
            frame(p, &mut self.frame);
            let at = self.slot(p);
            fft.forward(&self.frame, &mut self.history[at..at + bins]);
        }
        // `frame` now holds partition 0's, the newest, as `push_reference` expects.
    }

    pub(crate) fn copy_background_to_foreground(&mut self) {
        self.foreground.copy_from_slice(&self.background);
    }

    pub(crate) fn reset_background_to_foreground(&mut self) {
        self.background.copy_from_slice(&self.foreground);
    }

    /// Index of the foreground partition holding the most energy (the echo's main delay, in
    /// blocks).
    pub(crate) fn peak_partition(&self) -> usize {
        let mut best = (0, 0.0f32);
        for p in 0..self.parts {
            let e: f32 =
                self.foreground[p * self.bins..(p + 1) * self.bins].iter().map(|w| w.norm_sqr()).sum();
            if e > best.1 {
                best = (p, e);
            }
        }
        best.0
    }
}
