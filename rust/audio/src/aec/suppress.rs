//! Residual echo (and optionally noise) suppression: a short-time spectral gain on what the
//! linear filter left.
//!
//! Frames of `2n` samples, hop `n`, square-root Hann window for analysis and synthesis (their
//! product overlap-adds to one, so a gain of one everywhere gives the input back, delayed by
//! `n`). Per bin the interference is the larger of two residual echo estimates, plus the noise
//! floor when noise suppression is on:
//!
//! * `leak * |Y|^2`: the linear echo estimate scaled by the fraction of the echo the filter
//!   misses. The leak is the regression of the error's power fluctuations on the echo
//!   estimate's (Valin, "On adjusting the learning rate in frequency domain echo cancellation
//!   with double-talk", IEEE TASLP 2007), so it rises when the filter is wrong and falls as it
//!   converges; near-end speech does not correlate with the echo and averages out.
//! * `ratio[k] * envelope[k]`: the reference's recent power envelope times the residual-to-
//!   reference ratio observed while the far end plays. It falls quickly and rises slowly, so
//!   it suppresses echo before the linear filter has converged and after the echo path changed,
//!   without learning near-end speech as echo.
//! * `nonlinear[k] * total`: the reference's broadband power (its envelope summed over bins)
//!   times the residual-to-broadband ratio observed in bin `k`, learned as `ratio` is. A
//!   distorting loudspeaker puts echo (harmonics, intermodulation) in bins where the reference
//!   itself is quiet, in proportion to how loud the reference is overall, which the per-bin
//!   terms cannot see.
//!
//! The gain is a Wiener gain on a decision-directed a-priori ratio, floored at `floor`.

use realfft::num_complex::Complex32;

use super::fft::Fft;

pub(crate) struct Suppressor {
    n: usize,
    window: Vec<f32>,
    prev_e: Vec<f32>,
    prev_y: Vec<f32>,
    frame: Vec<f32>,
    time: Vec<f32>,
    overlap: Vec<f32>,
    spec_e: Vec<Complex32>,
    spec_y: Vec<Complex32>,
    mean_e: Vec<f32>,
    mean_y: Vec<f32>,
    ratio: Vec<f32>,
    nonlinear: Vec<f32>,
    noise: Vec<f32>,
    prev_clean: Vec<f32>,
    cov_ey: f32,
    var_y: f32,
    pub(crate) leak: f32,
    /// Mean square of the echo estimated to remain in the last output block, after the gains
    /// (full scale 1.0).
    pub(crate) residual: f32,
    floor: f32,
    enabled: bool,
    noise_suppression: bool,
}

// The constants below were chosen on the benchmark (benches/aec_rooms.py): each trades echo
// reduction against near-end level in double-talk; docs/audio-io.md shows the trade.
/// How much louder than estimated the residual echo is assumed to be (10 dB): misjudging echo
/// as speech costs a false barge-in, the opposite costs some near-end level. Chosen on the tune
/// seeds of benches/aec_eval (unseen rooms, distorting speakers, drift): 3 (5 dB), the value
/// chosen on the rooms of benches/aec_rooms.py, left a median of 21 dB of echo reduction and
/// speech in 10 % of agent-only frames; 10 gives 34 dB and 2 %, for a user in double talk at
/// STOI 0.70 instead of 0.75 (benches/RESULTS.md, "Echo cancellation over unseen rooms").
const OVERDRIVE: f32 = 10.0;
/// Per block rise of the residual-to-reference ratio (about 13 dB per second at 100 blocks/s):
/// slow enough that a second of double-talk is not learned as echo.
const RATIO_RISE: f32 = 1.03;
/// How far the ratio moves towards a lower observation each block: a slow average, so the
/// estimate follows the residual's typical level rather than its quietest blocks.
const RATIO_FALL: f32 = 0.03;
/// Per block rise of the noise floor estimate when the signal is above it.
const NOISE_RISE: f32 = 1.005;
/// The linear filter is never assumed better than 20 dB (rooms are not linear, nor still).
const LEAK_MIN: f32 = 1e-2;
/// Residual-to-reference ratio assumed before any echo has been measured (10 dB): a speaker
/// turned up or a microphone with gain makes the echo louder than the reference, and an estimate
/// that starts too low lets the echo of the first second through (it rises only by
/// `RATIO_RISE`). It falls to the measured level within about a second of echo; the cost is
/// that a user talking over the very first second of agent audio is suppressed with it.
const INITIAL_RATIO: f32 = 10.0;
/// Residual-to-broadband ratio assumed before any echo has been measured (-40 dB): it rises
/// by `RATIO_RISE` to what a distorting speaker makes within a second or two of echo.
const INITIAL_NONLINEAR: f32 = 1e-4;

/// Move a residual-to-reference ratio `q` towards the observation `r`: down by a slow average,
/// up by at most `RATIO_RISE` per block.
fn learn(q: &mut f32, r: f32) {
    *q = if r < *q { (1.0 - RATIO_FALL) * *q + RATIO_FALL * r } else { (*q * RATIO_RISE).min(r) };
}

impl Suppressor {
    pub(crate) fn new(n: usize, bins: usize, floor: f32, enabled: bool, noise: bool) -> Self {
        let window =
            (0..2 * n).map(|i| (std::f32::consts::PI * (i as f32 + 0.5) / (2 * n) as f32).sin()).collect();
        let zero = Complex32::default();
        let mut s = Self {
            n,
            window,
            prev_e: vec![0.0; n],
            prev_y: vec![0.0; n],
            frame: vec![0.0; 2 * n],
            time: vec![0.0; 2 * n],
            overlap: vec![0.0; n],
            spec_e: vec![zero; bins],
            spec_y: vec![zero; bins],
            mean_e: vec![0.0; bins],
            mean_y: vec![0.0; bins],
            ratio: vec![0.0; bins],
            nonlinear: vec![0.0; bins],
            noise: vec![0.0; bins],
            prev_clean: vec![0.0; bins],
            cov_ey: 0.0,
            var_y: 0.0,
            leak: 1.0,
            residual: 0.0,
            floor,
            enabled,
            noise_suppression: noise,
        };
        s.reset();
        s
    }

    pub(crate) fn reset(&mut self) {
        for v in [&mut self.prev_e, &mut self.prev_y, &mut self.overlap] {
            v.fill(0.0);
        }
        for v in [&mut self.mean_e, &mut self.mean_y, &mut self.prev_clean] {
            v.fill(0.0);
        }
        // Start by assuming the echo is louder than the reference: suppression works from the
        // first block and the estimate falls to the real level within about a second of echo.
        self.ratio.fill(INITIAL_RATIO);
        self.nonlinear.fill(INITIAL_NONLINEAR);
        self.noise.fill(1e-9);
        self.residual = 0.0;
        self.cov_ey = 0.0;
        self.var_y = 0.0;
        self.leak = 1.0;
    }

    fn analyse(&mut self, e: &[f32], y: &[f32], fft: &mut Fft) {
        let n = self.n;
        for (prev, cur, spec) in [(0, e, 0), (1, y, 1)] {
            let prev_buf = if prev == 0 { &mut self.prev_e } else { &mut self.prev_y };
            for i in 0..n {
                self.frame[i] = prev_buf[i] * self.window[i];
                self.frame[n + i] = cur[i] * self.window[n + i];
            }
            prev_buf.copy_from_slice(cur);
            let out = if spec == 0 { &mut self.spec_e } else { &mut self.spec_y };
            fft.forward(&self.frame, out);
        }
    }

    fn update_leak(&mut self) {
        let (mut cov, mut var, mut pe, mut py) = (0.0, 0.0, 0.0, 0.0);
        for k in 0..self.spec_e.len() {
            let e2 = self.spec_e[k].norm_sqr();
            let y2 = self.spec_y[k].norm_sqr();
            self.mean_e[k] = 0.95 * self.mean_e[k] + 0.05 * e2;
            self.mean_y[k] = 0.95 * self.mean_y[k] + 0.05 * y2;
            let (de, dy) = (e2 - self.mean_e[k], y2 - self.mean_y[k]);
            cov += de * dy;
            var += dy * dy;
            pe += e2;
            py += y2;
        }
        // Learn fast while the echo estimate dominates the error, slowly during double-talk.
        let alpha = 0.1 * (py / (pe + 1e-12)).min(1.0);
        self.cov_ey = (1.0 - alpha) * self.cov_ey + alpha * cov;
        self.var_y = (1.0 - alpha) * self.var_y + alpha * var;
        if self.var_y > 1e-12 {
            self.leak = (self.cov_ey / self.var_y).clamp(LEAK_MIN, 1.0);
        }
    }

    /// Clean one block `e` (the linear filter's output) given its echo estimate `y`, the
    /// reference `envelope` and whether the far end is playing; writes `n` samples (delayed by
    /// `n`) to `out`.
    pub(crate) fn process(
        &mut self,
        e: &[f32],
        y: &[f32],
        envelope: &[f32],
        far_active: bool,
        fft: &mut Fft,
        out: &mut [f32],
    ) {
        self.analyse(e, y, fft);
        self.update_leak();
        let total: f32 = envelope.iter().sum();
        let mut residual = 0.0f32;
        #[allow(clippy::needless_range_loop)] // eight per-bin arrays advance together
        for k in 0..self.spec_e.len() {
            let e2 = self.spec_e[k].norm_sqr();
            if far_active && envelope[k] > 1e-12 {
                learn(&mut self.ratio[k], e2 / envelope[k]);
                learn(&mut self.nonlinear[k], e2 / total);
            }
            let noise = &mut self.noise[k];
            *noise = if e2 < *noise { 0.9 * *noise + 0.1 * e2 } else { *noise * NOISE_RISE };
            let echo = (self.leak * self.spec_y[k].norm_sqr())
                .max(self.ratio[k] * envelope[k])
                .max(self.nonlinear[k] * total);
            if !self.enabled {
                residual += echo.min(e2);
                continue;
            }
            let mut interference = OVERDRIVE * echo + 1e-12;
            if self.noise_suppression {
                interference += *noise;
            }
            let post = e2 / interference;
            let prior = 0.7 * self.prev_clean[k] / interference + 0.3 * (post - 1.0).max(0.0);
            let gain = (prior / (1.0 + prior)).max(self.floor);
            self.spec_e[k] *= gain;
            self.prev_clean[k] = gain * gain * e2;
            residual += gain * gain * echo.min(e2);
        }
        // Parseval over half a spectrum of a 2n-point frame whose window has mean square 1/2.
        let size = (2 * self.n) as f32;
        self.residual = 4.0 * residual / (size * size);
        fft.inverse(&self.spec_e, &mut self.time);
        let n = self.n;
        let (head, tail) = self.time.split_at(n);
        let (w_head, w_tail) = self.window.split_at(n);
        for (((o, ov), t), w) in out.iter_mut().zip(self.overlap.iter_mut()).zip(head).zip(w_head) {
            *o = *ov + t * w;
            *ov = 0.0;
        }
        for ((ov, t), w) in self.overlap.iter_mut().zip(tail).zip(w_tail) {
            *ov = t * w;
        }
    }
}
