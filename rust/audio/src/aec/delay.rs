//! Delay search: how much later than the reference its echo reaches the microphone, for when
//! the clocks' alignment is off (a device that misreports its latency, input and output clocks
//! that drift apart).
//!
//! A matched filter, as WebRTC's AEC3 uses for the same job, on decimated signals: both streams
//! are averaged over `factor` samples (about 2 kHz, 0.5 ms resolution), pre-emphasised (a first
//! difference, which whitens speech so the filter's taps stand out), and a normalised LMS filter
//! of `taps` coefficients learns the microphone from the reference's recent history. Its largest
//! coefficient is the strongest echo path (the direct sound, or a reflection stronger than it);
//! the lag of that coefficient is the estimate once it is clearly above the rest and has stayed
//! put for a quarter of a second. The filter keeps adapting, so a drifting delay is followed.
//!
//! Cost: `2 * taps` multiply-adds per decimated sample (1000 taps cover 500 ms), about the
//! linear echo filter's own cost at 24 kHz; nothing allocates after construction.

/// Decimated samples per 10 ms block (about 2 kHz).
const PER_BLOCK: usize = 20;
/// Step size of the matched filter (normalised): small, since double-talk and noise disturb it
/// and only the position of its peak matters.
const STEP: f32 = 0.3;
/// Pre-emphasis coefficient (the first difference whitens speech's spectral tilt).
const PRE_EMPHASIS: f32 = 0.9;
/// The peak (three taps) must hold this share of the filter's energy to count.
const PEAK_SHARE: f32 = 0.06;
/// An earlier path with at least this share of the peak's energy (three taps each) is the
/// direct path the peak is a reflection of (in diffuse rooms a late reflection can be the
/// strongest tap; the filter must keep the direct sound, which comes first).
const EARLY_SHARE: f32 = 0.2;
/// Consecutive blocks the peak must stay within `WOBBLE` taps before it is believed: a quarter
/// of a second to follow a small move (drift), a second to jump elsewhere (a peak that moves
/// far for a moment is more often the filter disturbed by double-talk than a new delay).
const STABLE_BLOCKS: u32 = 25;
const JUMP_BLOCKS: u32 = 100;
const WOBBLE: usize = 2;
/// Decimated reference quieter than this mean square (about -60 dBFS) teaches nothing.
const ACTIVE_POWER: f32 = 1e-6;
/// Forgetting factor of the drift fit, per block (a time constant of 30 s).
const DRIFT_FORGET: f64 = 1.0 - 1.0 / 3000.0;
/// Weight (blocks' worth of measurements) the drift fit needs before it is used: 20 s.
const DRIFT_MIN_WEIGHT: f64 = 2000.0;
/// Smallest drift compensated, in parts per million: below it the adaptive filter follows the
/// sliding path well enough itself (35 dB at 10 ppm), and the fit of a few seconds cannot tell
/// such a drift from none reliably (it sees 5-25 ppm where there is none).
const DRIFT_MIN_PPM: f64 = 30.0;
/// Blocks over which the fine delay estimates are correlated (see `drift_per_block`).
const DRIFT_CORRELATED_BLOCKS: f64 = 50.0;
/// Largest drift believed, in parts per million (beyond it the fit is taken as wrong).
const DRIFT_MAX_PPM: f64 = 1000.0;

pub(crate) struct DelayEstimator {
    factor: usize,
    taps: usize,
    /// Decimated, pre-emphasised reference, written twice so the newest `taps` are contiguous.
    history: Vec<f32>,
    pos: usize,
    power: f32,
    h: Vec<f32>,
    acc: (f32, f32),
    count: usize,
    last: (f32, f32),
    candidate: usize,
    stable: u32,
    estimate: Option<usize>,
    /// The earliest path with `EARLY_SHARE` of the peak's energy, when the estimate was last
    /// believed, in samples.
    earliest: Option<usize>,
    /// Blocks seen, the drift fit's clock.
    blocks: f64,
    /// Exponentially weighted least-squares sums of the fine delay `d` against the block `t`:
    /// weight, t, d, t*t, t*d, d*d.
    fit: [f64; 6],
}

impl DelayEstimator {
    /// For blocks of `n` samples, searching lags up to `max_delay` samples.
    pub(crate) fn new(n: usize, max_delay: usize) -> Self {
        let factor = (n / PER_BLOCK).max(1);
        let taps = max_delay.div_ceil(factor).max(1);
        Self {
            factor,
            taps,
            history: vec![0.0; 2 * taps],
            pos: 0,
            power: 0.0,
            h: vec![0.0; taps],
            acc: (0.0, 0.0),
            count: 0,
            last: (0.0, 0.0),
            candidate: 0,
            stable: 0,
            estimate: None,
            earliest: None,
            blocks: 0.0,
            fit: [0.0; 6],
        }
    }

    pub(crate) fn reset(&mut self) {
        self.history.fill(0.0);
        self.h.fill(0.0);
        self.pos = 0;
        self.power = 0.0;
        self.acc = (0.0, 0.0);
        self.count = 0;
        self.last = (0.0, 0.0);
        self.candidate = 0;
        self.stable = 0;
        self.estimate = None;
        self.earliest = None;
        self.blocks = 0.0;
        self.fit = [0.0; 6];
    }

    /// How much the delay grows per block, in samples (negative: shrinks), once the fit of the
    /// last half minute's fine estimates says so clearly (the slope more than three standard
    /// errors from zero, and at least `DRIFT_MIN_PPM`); `None` before, or when there is no
    /// telling drift from none.
    pub(crate) fn drift_per_block(&self, n: usize) -> Option<f64> {
        let [w, st, sd, stt, std, sdd] = self.fit;
        if w < DRIFT_MIN_WEIGHT {
            return None;
        }
        let (sxx, sxy, syy) = (stt - st * st / w, std - st * sd / w, sdd - sd * sd / w);
        if sxx <= 0.0 {
            return None;
        }
        let slope = sxy / sxx;
        // Consecutive fine estimates are far from independent (the matched filter moves slowly:
        // about half a second, 50 blocks), so the textbook standard error is ~sqrt(50) too small.
        let residual = (syy - slope * sxy).max(0.0) / (w - 2.0);
        let error = (DRIFT_CORRELATED_BLOCKS * residual / sxx).sqrt();
        let plausible = slope.abs() <= DRIFT_MAX_PPM * 1e-6 * n as f64;
        let large = slope.abs() >= DRIFT_MIN_PPM * 1e-6 * n as f64;
        (plausible && large && slope.abs() > 3.0 * error).then_some(slope)
    }

    /// The believed delay of the strongest echo path behind the reference, in samples.
    pub(crate) fn estimate(&self) -> Option<usize> {
        self.estimate
    }

    /// The earliest echo path of about the strongest's size (the direct sound), in samples:
    /// never later than [`estimate`](Self::estimate).
    pub(crate) fn earliest(&self) -> Option<usize> {
        self.earliest
    }

    /// Learn from one block of microphone and reference (same length).
    pub(crate) fn process(&mut self, mic: &[f32], reference: &[f32]) {
        for (m, r) in mic.iter().zip(reference) {
            self.acc.0 += m;
            self.acc.1 += r;
            self.count += 1;
            if self.count == self.factor {
                let scale = 1.0 / self.factor as f32;
                let (m, r) = (self.acc.0 * scale, self.acc.1 * scale);
                self.acc = (0.0, 0.0);
                self.count = 0;
                let (pm, pr) = self.last;
                self.last = (m, r);
                self.step(m - PRE_EMPHASIS * pm, r - PRE_EMPHASIS * pr);
            }
        }
        for v in &mut self.fit {
            *v *= DRIFT_FORGET;
        }
        self.update_estimate();
        self.blocks += 1.0;
    }

    fn step(&mut self, mic: f32, reference: f32) {
        let taps = self.taps;
        let dropped = self.history[self.pos];
        self.history[self.pos] = reference;
        self.history[self.pos + taps] = reference;
        self.pos = (self.pos + 1) % taps;
        self.power += reference * reference - dropped * dropped;
        if self.pos == 0 {
            // Re-sum now and then so rounding cannot accumulate.
            self.power = self.history[..taps].iter().map(|v| v * v).sum();
        }
        if self.power < ACTIVE_POWER * taps as f32 {
            return;
        }
        // Oldest first: coefficient j is the lag `taps - 1 - j`.
        let window = &self.history[self.pos..self.pos + taps];
        let y = dot(&self.h, window);
        let g = STEP * (mic - y) / (self.power + 1e-9);
        for (h, x) in self.h.iter_mut().zip(window) {
            *h += g * x;
        }
    }

    fn update_estimate(&mut self) {
        // The energy of three neighbouring taps: a path between two decimated samples splits
        // its energy over both and would otherwise lose to a weaker reflection on one.
        let (mut best, mut peak, mut total) = (0, 0.0f32, 0.0f32);
        let (mut before, mut here) = (0.0f32, 0.0f32);
        for (j, h) in self.h.iter().enumerate() {
            let next = h * h;
            total += next;
            let e = before + here + next;
            if j > 0 && e > peak {
                (best, peak) = (j - 1, e);
            }
            (before, here) = (here, next);
        }
        if total <= 0.0 || peak < PEAK_SHARE * total {
            self.stable = 0;
            return;
        }
        let lag = self.taps - 1 - best;
        if lag.abs_diff(self.candidate) <= WOBBLE {
            self.stable = self.stable.saturating_add(1);
        } else {
            self.stable = 0;
        }
        self.candidate = lag;
        let near = self.estimate.is_some_and(|e| (lag * self.factor).abs_diff(e) <= 4 * self.factor);
        let needed = if near || self.estimate.is_none() { STABLE_BLOCKS } else { JUMP_BLOCKS };
        if self.stable >= needed {
            self.estimate = Some(lag * self.factor);
            self.earliest = Some(self.earliest_lag(peak) * self.factor);
        }
        if near && self.stable >= STABLE_BLOCKS && best > 0 && best + 1 < self.taps {
            self.add_fine(best);
        }
    }

    /// The smallest lag whose three taps hold `EARLY_SHARE` of `peak` (coefficient j is the lag
    /// `taps - 1 - j`, so the search runs from the newest coefficient down).
    fn earliest_lag(&self, peak: f32) -> usize {
        let h2 = |j: usize| self.h[j] * self.h[j];
        for j in (1..self.taps.saturating_sub(1)).rev() {
            if h2(j - 1) + h2(j) + h2(j + 1) >= EARLY_SHARE * peak {
                return self.taps - 1 - j;
            }
        }
        self.candidate
    }

    /// Add the sub-tap position of the peak at `j` (a parabola through the energies of it and
    /// its neighbours) to the drift fit, in samples of delay.
    fn add_fine(&mut self, j: usize) {
        let (a, b, c) = (self.h[j - 1] * self.h[j - 1], self.h[j] * self.h[j], self.h[j + 1] * self.h[j + 1]);
        let curve = a - 2.0 * b + c;
        let offset = if curve < 0.0 { (0.5 * (a - c) / curve).clamp(-0.5, 0.5) } else { 0.0 };
        let d = (self.taps as f64 - 1.0 - (j as f64 + f64::from(offset))) * self.factor as f64;
        let t = self.blocks;
        for (v, add) in self.fit.iter_mut().zip([1.0, t, d, t * t, t * d, d * d]) {
            *v += add;
        }
    }
}

/// `a . b` with eight running sums, which the compiler can keep in one vector register (a single
/// sum is a chain of dependent additions, four times slower here).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let rest: f32 = a8.remainder().iter().zip(b8.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in a8.zip(b8) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    acc.iter().sum::<f32>() + rest
}

/// The reference's recent past at full rate, so the filter can be fed it later than it came.
pub(crate) struct DelayLine {
    buf: Vec<f32>,
    /// Total samples written.
    written: usize,
    /// Windowed-sinc interpolator: `PHASES` rows of `TAPS` coefficients.
    table: Vec<f32>,
    scratch: Vec<f32>,
}

/// Fractional positions the interpolator distinguishes (1/64 sample: its error stays below
/// about -40 dB up to 6 kHz at 24 kHz).
const PHASES: usize = 64;
/// Taps of the interpolator; it reads `TAPS / 2` samples past the position, so fractional
/// delays shorter than `TAPS` are read whole.
const TAPS: usize = 16;

impl DelayLine {
    /// A line of `capacity` samples whose fractional reads are at most `longest_read` long.
    pub(crate) fn new(capacity: usize, longest_read: usize) -> Self {
        // Row p interpolates at p / PHASES of a sample after sample k; coefficient m multiplies
        // sample k + m - TAPS / 2 + 1. A Blackman-windowed sinc, normalised to unit DC gain.
        let mut table = vec![0.0f32; PHASES * TAPS];
        for (p, row) in table.chunks_mut(TAPS).enumerate() {
            let mu = p as f64 / PHASES as f64;
            let mut sum = 0.0;
            let mut taps = [0.0f64; TAPS];
            for (m, t) in taps.iter_mut().enumerate() {
                let x = (m as f64 - (TAPS / 2 - 1) as f64) - mu;
                let sinc = if x.abs() < 1e-9 {
                    1.0
                } else {
                    (std::f64::consts::PI * x).sin() / (std::f64::consts::PI * x)
                };
                let u = (x + TAPS as f64 / 2.0) / TAPS as f64;
                let window = 0.42 - 0.5 * (2.0 * std::f64::consts::PI * u).cos()
                    + 0.08 * (4.0 * std::f64::consts::PI * u).cos();
                *t = sinc * window;
                sum += *t;
            }
            for (r, t) in row.iter_mut().zip(taps) {
                *r = (t / sum) as f32;
            }
        }
        Self { buf: vec![0.0; capacity.max(1)], written: 0, table, scratch: vec![0.0; longest_read + TAPS] }
    }

    /// As [`read`](Self::read) with a fractional `delay` (read whole when it is a whole number
    /// of samples or shorter than the interpolator).
    pub(crate) fn read_frac(&mut self, delay: f64, out: &mut [f32]) {
        let whole = delay.floor();
        let phase = ((delay - whole) * PHASES as f64).round() as usize;
        if delay < TAPS as f64 || phase == 0 || phase == PHASES {
            self.read(delay.round() as usize, out);
            return;
        }
        // Delay `whole + f` puts output i between samples k = end - len + i - 1 and k + 1
        // (end = written - whole), at 1 - f after k; the taps reach from k - 7 to k + 8, which
        // for every i is the span [end - len - 8, end + 7): read it whole first.
        let row = &self.table[(PHASES - phase) * TAPS..(PHASES - phase + 1) * TAPS];
        let span = out.len() + TAPS - 1;
        let mut scratch = std::mem::take(&mut self.scratch);
        self.read(whole as usize - (TAPS / 2 - 1), &mut scratch[..span]);
        for (i, o) in out.iter_mut().enumerate() {
            *o = dot(row, &scratch[i..i + TAPS]);
        }
        self.scratch = scratch;
    }

    pub(crate) fn reset(&mut self) {
        self.buf.fill(0.0);
        self.written = 0;
    }

    pub(crate) fn push(&mut self, x: &[f32]) {
        let len = self.buf.len();
        let mut at = self.written % len;
        for chunk in x.chunks(len) {
            let first = chunk.len().min(len - at);
            self.buf[at..at + first].copy_from_slice(&chunk[..first]);
            self.buf[..chunk.len() - first].copy_from_slice(&chunk[first..]);
            at = (at + chunk.len()) % len;
        }
        self.written += x.len();
    }

    /// The `out.len()` samples that ended `delay` samples ago (silence before the start or
    /// beyond the capacity).
    pub(crate) fn read(&self, delay: usize, out: &mut [f32]) {
        let len = self.buf.len();
        let end = self.written.saturating_sub(delay);
        // Samples older than the capacity (or before the start) are silence.
        let oldest = self.written.saturating_sub(len);
        let start = end as isize - out.len() as isize;
        let silent = ((oldest as isize - start).max(0) as usize).min(out.len());
        out[..silent].fill(0.0);
        let mut at = (start + silent as isize) as usize % len;
        let mut i = silent;
        while i < out.len() {
            let take = (out.len() - i).min(len - at);
            out[i..i + take].copy_from_slice(&self.buf[at..at + take]);
            i += take;
            at = (at + take) % len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::DelayLine;

    /// A fractional read of a sine is the sine that much later: within -50 dB at 1 kHz and
    /// -35 dB at 6 kHz (24 kHz), for every phase.
    #[test]
    fn fractional_reads_delay_a_sine() {
        for (freq, tolerance) in [(1_000.0f64, 3e-3f64), (6_000.0, 2e-2)] {
            let mut line = DelayLine::new(4800, 480);
            let w = 2.0 * std::f64::consts::PI * freq / 24_000.0;
            let x: Vec<f32> = (0..2400).map(|i| (w * i as f64).sin() as f32).collect();
            line.push(&x);
            for delay in [16.0, 40.25, 40.5, 97.9, 250.013] {
                let mut out = vec![0.0f32; 240];
                line.read_frac(delay, &mut out);
                for (i, o) in out.iter().enumerate() {
                    let t = (2400 - 240 + i) as f64 - delay;
                    let want = (w * t).sin();
                    assert!((f64::from(*o) - want).abs() < tolerance, "{freq} Hz, delay {delay}, i {i}");
                }
            }
        }
    }

    /// Against the obvious definition, over pushes and reads of many sizes (some larger than the
    /// line), wrapping many times.
    #[test]
    fn delay_line_reads_what_was_pushed_that_long_ago() {
        let mut line = DelayLine::new(37, 40);
        let mut all: Vec<f32> = Vec::new();
        let mut next = 1.0f32;
        for step in 0..200usize {
            let block: Vec<f32> = (0..(step * 7) % 45)
                .map(|_| {
                    next += 1.0;
                    next
                })
                .collect();
            line.push(&block);
            all.extend_from_slice(&block);
            for (delay, len) in [(0, 5), (3, 10), (20, 17), (30, 12), (50, 4), (0, 40)] {
                let mut out = vec![-1.0; len];
                line.read(delay, &mut out);
                let end = all.len() as isize - delay as isize;
                for (i, o) in out.iter().enumerate() {
                    let at = end - len as isize + i as isize;
                    let kept = at >= 0 && all.len() as isize - at <= 37;
                    let want = if kept { all[at as usize] } else { 0.0 };
                    assert_eq!(*o, want, "step {step} delay {delay} len {len} i {i}");
                }
            }
        }
    }
}
