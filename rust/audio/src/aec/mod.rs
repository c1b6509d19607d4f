//! Acoustic echo cancellation: remove from the microphone what the speaker played.
//!
//! [`EchoCanceller`] takes two streams at one rate, the microphone capture and the *reference*
//! (what was played, aligned so that reference sample `i` left the speaker no later than
//! microphone sample `i` was captured), and returns the microphone with the echo removed:
//!
//! 1. a partitioned-block frequency-domain adaptive filter (10 ms blocks, `tail_ms` of echo
//!    path) estimates the echo and subtracts it; foreground/background weights keep
//!    double-talk from corrupting the output (see `filter.rs`);
//! 2. a spectral post-filter removes the residual echo the linear filter cannot (reverberation
//!    beyond the tail, convergence, path changes) and, optionally, stationary noise (see
//!    `suppress.rs`).
//!
//! With [`EchoConfig::delay_search`], a matched filter (see `delay.rs`) also measures how much
//! later than the reference the echo arrives and the reference is fed to the filter that much
//! later (in whole blocks, keeping the echo near the start of the tail; once a clock drift of 30
//! ppm or more is measured, through a fractional delay that follows it): for when the clocks'
//! alignment is off. It can only delay the reference, so the reference must lead its echo (by
//! up to [`AEC_SEARCH_MS`]); a reference that lags cannot be cancelled.
//!
//! Streams may be fed in chunks of any size; the output has the same length as the input and
//! lags it by [`EchoCanceller::latency_samples`] (two blocks). Nothing allocates after
//! construction.

mod delay;
mod fft;
mod filter;
mod suppress;

use crate::error::{ConfigError, ProcessError};
use delay::{DelayEstimator, DelayLine};
use fft::Fft;
use filter::EchoFilter;
use realfft::num_complex::Complex32;
use suppress::Suppressor;

/// Lowest and highest supported rate.
pub const AEC_RATES_HZ: std::ops::RangeInclusive<u32> = 8_000..=48_000;
/// Shortest and longest echo tail, in ms.
pub const AEC_TAIL_MS: std::ops::RangeInclusive<u32> = 20..=1_000;
/// Longest echo delay behind the reference the delay search finds, in ms.
pub const AEC_SEARCH_MS: u32 = 500;
/// Largest residual echo suppression, in dB.
pub const AEC_MAX_SUPPRESSION_DB: f32 = 80.0;

/// How an [`EchoCanceller`] is built.
#[derive(Debug, Clone, PartialEq)]
pub struct EchoConfig {
    /// Rate of both streams, in Hz (8000..=48000).
    pub rate_hz: u32,
    /// Length of the echo path the linear filter models, in ms: from the earliest echo (the
    /// alignment margin included) to where the room's reverberation has decayed enough
    /// (20..=1000; 300 suits rooms up to an RT60 of about 0.6 s). CPU grows with it.
    pub tail_ms: u32,
    /// Most attenuation the post-filter may apply, in dB (0 turns it off: linear filter only).
    pub suppression_db: f32,
    /// Also attenuate stationary noise (fans, hum) in the post-filter.
    pub noise_suppression: bool,
    /// Measure the echo's delay behind the reference (up to [`AEC_SEARCH_MS`]) and delay the
    /// reference by it (see the module docs). Costs about as much again as the linear filter.
    pub delay_search: bool,
}

impl Default for EchoConfig {
    fn default() -> Self {
        Self {
            rate_hz: 24_000,
            tail_ms: 300,
            suppression_db: 40.0,
            noise_suppression: false,
            delay_search: false,
        }
    }
}

/// What the canceller currently believes (for metrics and for alignment checks).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EchoStats {
    /// Echo reduction of the linear filter while the far end plays, in dB (smoothed).
    pub linear_erle_db: f32,
    /// Fraction of the echo power the linear filter is estimated to miss (0..=1).
    pub leak: f32,
    /// Whether the linear filter has converged once.
    pub converged: bool,
    /// Delay of the strongest part of the echo path, in samples (block resolution).
    pub echo_delay_samples: usize,
    /// Blocks processed.
    pub blocks: u64,
    /// The delay search's estimate of the strongest echo path behind the reference as given,
    /// in samples (`None` while it has none, or with the search off).
    pub delay_estimate_samples: Option<usize>,
    /// How much later than given the reference is fed to the filter, in samples (0 with the
    /// search off; fractional parts while drift is compensated are rounded).
    pub reference_delay_samples: usize,
    /// The drift between the reference's and the microphone's clocks the delay search measures
    /// and compensates, in parts per million (positive: the echo falls further behind); `None`
    /// while it sees none it can tell from zero, or with the search off.
    pub drift_ppm: Option<f32>,
    /// Level of the echo the canceller estimates is left in its latest output block (10 ms),
    /// after the linear filter and the post-filter, in dBFS (-120 for none). A barge-in
    /// detector can ask whether what it hears is louder than this.
    pub residual_echo_dbfs: f32,
}

/// A streaming acoustic echo canceller; see the module docs.
pub struct EchoCanceller {
    config: EchoConfig,
    n: usize,
    fft: Fft,
    filter: EchoFilter,
    suppressor: Suppressor,
    search: Option<(DelayEstimator, DelayLine)>,
    delay_blocks: usize,
    /// Drift compensation: how much later than `delay_blocks` the reference is read, in
    /// samples (fractional; follows the delay search's drift estimate).
    phase: f64,
    delayed: Vec<f32>,
    mic: Vec<f32>,
    reference: Vec<f32>,
    filled: usize,
    out: Vec<i16>,
    y_fg: Vec<f32>,
    y_bg: Vec<f32>,
    e_fg: Vec<f32>,
    e_bg: Vec<f32>,
    cleaned: Vec<f32>,
    frame: Vec<f32>,
    spec_e: Vec<Complex32>,
    energy_mic: f32,
    energy_fg: f32,
    energy_bg: f32,
    converged: bool,
    /// Consecutive blocks with a high residual after convergence (see `follow_delay`).
    troubled_blocks: u32,
    blocks: u64,
}

/// Blocks of high residual after which the delay search may move the reference again: a
/// double-talk turn rarely lasts longer, a changed echo path does.
const HOLD_BLOCKS: u32 = 100;

/// Reference blocks quieter than this mean square (about -70 dBFS) teach the filter nothing.
const FAR_ACTIVE_POWER: f32 = 1e-7;
/// Step size of the background filter (normalised; stable below 2). A large fixed step
/// converges fastest; the foreground/background pair, not a smaller step, is what keeps
/// double-talk out of the output (on the benchmark this beat Valin's adaptive step, which
/// waits for a leak estimate that is slow to settle on speech).
const STEP: f32 = 0.8;

impl EchoCanceller {
    /// A canceller for `config`, or the parameter that is out of range and what is allowed.
    pub fn new(config: EchoConfig) -> Result<Self, ConfigError> {
        let EchoConfig { rate_hz, tail_ms, suppression_db, noise_suppression, delay_search } = config;
        if !AEC_RATES_HZ.contains(&rate_hz) {
            return Err(ConfigError::OutOfRange {
                name: "rate_hz",
                value: rate_hz.to_string(),
                allowed: "8000..=48000 Hz",
            });
        }
        if !AEC_TAIL_MS.contains(&tail_ms) {
            return Err(ConfigError::OutOfRange {
                name: "tail_ms",
                value: tail_ms.to_string(),
                allowed: "20..=1000 ms",
            });
        }
        if !(0.0..=AEC_MAX_SUPPRESSION_DB).contains(&suppression_db) {
            return Err(ConfigError::OutOfRange {
                name: "suppression_db",
                value: suppression_db.to_string(),
                allowed: "0.0..=80.0 dB",
            });
        }
        let n = (rate_hz as usize + 50) / 100;
        let parts = (tail_ms as usize * rate_hz as usize).div_ceil(1000 * n).max(1);
        let fft = Fft::new(2 * n);
        let bins = fft.bins();
        let floor = 10f32.powf(-suppression_db / 20.0);
        let search = delay_search.then(|| {
            let max_delay = (AEC_SEARCH_MS as usize * rate_hz as usize).div_ceil(1000);
            (DelayEstimator::new(n, max_delay), DelayLine::new(max_delay + (parts + 3) * n, 2 * n))
        });
        Ok(Self {
            n,
            search,
            delay_blocks: 0,
            phase: 0.0,
            delayed: vec![0.0; n],
            filter: EchoFilter::new(n, parts, bins),
            suppressor: Suppressor::new(n, bins, floor, suppression_db > 0.0, noise_suppression),
            fft,
            mic: vec![0.0; n],
            reference: vec![0.0; n],
            filled: 0,
            out: vec![0; n],
            y_fg: vec![0.0; n],
            y_bg: vec![0.0; n],
            e_fg: vec![0.0; n],
            e_bg: vec![0.0; n],
            cleaned: vec![0.0; n],
            frame: vec![0.0; 2 * n],
            spec_e: vec![Complex32::default(); bins],
            energy_mic: 0.0,
            energy_fg: 0.0,
            energy_bg: 0.0,
            converged: false,
            troubled_blocks: 0,
            blocks: 0,
            config,
        })
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &EchoConfig {
        &self.config
    }

    /// Samples per processing block (10 ms).
    pub fn block_samples(&self) -> usize {
        self.n
    }

    /// How far the output lags the input, in samples (two blocks).
    pub fn latency_samples(&self) -> usize {
        2 * self.n
    }

    /// Current estimates (see [`EchoStats`]).
    pub fn stats(&self) -> EchoStats {
        EchoStats {
            linear_erle_db: 10.0 * (self.energy_mic.max(1e-12) / self.energy_fg.max(1e-12)).log10(),
            leak: self.suppressor.leak,
            converged: self.converged,
            echo_delay_samples: self.filter.peak_partition() * self.n,
            blocks: self.blocks,
            delay_estimate_samples: self.search.as_ref().and_then(|(e, _)| e.estimate()),
            reference_delay_samples: ((self.delay_blocks * self.n) as f64 + self.phase).round() as usize,
            drift_ppm: self
                .search
                .as_ref()
                .and_then(|(e, _)| e.drift_per_block(self.n))
                .map(|d| (d / self.n as f64 * 1e6) as f32),
            residual_echo_dbfs: 10.0 * self.suppressor.residual.max(1e-12).log10(),
        }
    }

    /// Forget everything learned (a new echo path, e.g. another device).
    pub fn reset(&mut self) {
        self.filter.reset();
        self.suppressor.reset();
        self.filled = 0;
        self.out.fill(0);
        self.energy_mic = 0.0;
        self.energy_fg = 0.0;
        self.energy_bg = 0.0;
        self.converged = false;
        self.troubled_blocks = 0;
        self.blocks = 0;
        self.delay_blocks = 0;
        self.phase = 0.0;
        if let Some((estimator, line)) = &mut self.search {
            estimator.reset();
            line.reset();
        }
    }

    /// Cancel the echo of `reference` in `mic` (same length); writes `mic.len()` samples to
    /// `out` and returns that count. Nothing is consumed on error.
    pub fn process(
        &mut self,
        mic: &[i16],
        reference: &[i16],
        out: &mut [i16],
    ) -> Result<usize, ProcessError> {
        if mic.len() != reference.len() {
            return Err(ProcessError::LengthMismatch { first: mic.len(), second: reference.len() });
        }
        if out.len() < mic.len() {
            return Err(ProcessError::OutputTooSmall { needed: mic.len(), given: out.len() });
        }
        let mut pos = 0;
        while pos < mic.len() {
            let take = (self.n - self.filled).min(mic.len() - pos);
            let (at, end) = (self.filled, self.filled + take);
            out[pos..pos + take].copy_from_slice(&self.out[at..end]);
            for (d, s) in self.mic[at..end].iter_mut().zip(&mic[pos..pos + take]) {
                *d = f32::from(*s) / 32768.0;
            }
            for (d, s) in self.reference[at..end].iter_mut().zip(&reference[pos..pos + take]) {
                *d = f32::from(*s) / 32768.0;
            }
            self.filled = end;
            pos += take;
            if self.filled == self.n {
                self.filled = 0;
                self.process_block();
            }
        }
        Ok(mic.len())
    }

    fn process_block(&mut self) {
        self.blocks += 1;
        let n = self.n;
        if self.search.is_some() {
            self.follow_delay();
        } else {
            self.delayed.copy_from_slice(&self.reference);
        }
        self.filter.push_reference(&self.delayed, &mut self.fft);
        let far_power = self.delayed.iter().map(|v| v * v).sum::<f32>() / n as f32;
        let far_active = far_power > FAR_ACTIVE_POWER;
        self.filter.predict(true, &mut self.fft, &mut self.y_fg);
        self.filter.predict(false, &mut self.fft, &mut self.y_bg);
        let (mut s_mic, mut s_fg, mut s_bg) = (0.0f32, 0.0f32, 0.0f32);
        for i in 0..n {
            let d = self.mic[i];
            self.e_fg[i] = d - self.y_fg[i];
            self.e_bg[i] = d - self.y_bg[i];
            s_mic += d * d;
            s_fg += self.e_fg[i] * self.e_fg[i];
            s_bg += self.e_bg[i] * self.e_bg[i];
        }
        if far_active {
            self.choose_weights(s_mic, s_fg, s_bg);
            self.adapt();
        }
        self.suppressor.process(
            &self.e_fg,
            &self.y_fg,
            &self.filter.envelope,
            far_active,
            &mut self.fft,
            &mut self.cleaned,
        );
        for (o, v) in self.out.iter_mut().zip(&self.cleaned) {
            *o = (v * 32768.0).round().clamp(-32768.0, 32767.0) as i16;
        }
    }

    /// Delay search: learn the delay and its drift, move the filter's reference when the echo
    /// has left the first blocks of the tail (or the drift has moved it a whole block), and take
    /// this block's reference from the delay line.
    fn follow_delay(&mut self) {
        let n = self.n;
        let Some((estimator, line)) = &mut self.search else { return };
        estimator.process(&self.mic, &self.reference);
        line.push(&self.reference);
        let max_blocks = AEC_SEARCH_MS as usize * self.config.rate_hz as usize / 1000 / n;
        // Drift: read the reference later (earlier) by as much as the echo moved, so the path
        // the filter sees stands still. A whole block of it is carried into `delay_blocks`
        // (the total delay, hence the filter, does not change).
        if let Some(drift) = estimator.drift_per_block(n) {
            self.phase += drift;
        }
        if self.phase >= n as f64 && self.delay_blocks < max_blocks {
            self.phase -= n as f64;
            self.delay_blocks += 1;
        } else if self.phase < 0.0 && self.delay_blocks > 0 {
            self.phase += n as f64;
            self.delay_blocks -= 1;
        }
        // Only a reference that leads can be delayed: at no delay, drift the other way waits.
        self.phase = self.phase.clamp(0.0, n as f64);
        // A residual that has stayed high for less than a second after convergence is more
        // likely the user talking than a moved echo: the reference stays where it is meanwhile.
        let troubled = self.converged && self.energy_fg > 0.25 * self.energy_mic;
        self.troubled_blocks = if troubled { self.troubled_blocks.saturating_add(1) } else { 0 };
        let hold = self.troubled_blocks > 0 && self.troubled_blocks < HOLD_BLOCKS;
        // The filter must keep the direct sound: the earliest strong path, not the strongest.
        if let (Some(estimate), false) = (estimator.earliest(), hold) {
            // The strongest path should sit in the filter's first blocks: after half a block
            // (room for the path to come earlier) and before four (the tail's length is for
            // the reverberation, not for delay).
            let at = estimate as f64 - (self.delay_blocks * n) as f64 - self.phase;
            let inside = at >= (n / 2) as f64 && at < (4 * n) as f64;
            let lead = (estimate as f64 - self.phase - (2 * n) as f64).max(0.0);
            let wanted = (lead as usize / n).min(max_blocks);
            if !inside && wanted != self.delay_blocks {
                let shift = wanted as isize - self.delay_blocks as isize;
                self.delay_blocks = wanted;
                let phase = self.phase;
                self.filter.realign(shift, &mut self.fft, |p, frame| {
                    line.read_frac(((wanted + p + 1) * n) as f64 + phase, frame)
                });
            }
        }
        line.read_frac((self.delay_blocks * n) as f64 + self.phase, &mut self.delayed);
    }

    /// Foreground/background bookkeeping on blocks where the far end plays.
    fn choose_weights(&mut self, s_mic: f32, s_fg: f32, s_bg: f32) {
        self.energy_mic = 0.8 * self.energy_mic + 0.2 * s_mic;
        self.energy_fg = 0.8 * self.energy_fg + 0.2 * s_fg;
        self.energy_bg = 0.8 * self.energy_bg + 0.2 * s_bg;
        // Once converged, a background that is better but still leaves more than a tenth of the
        // microphone's energy is most likely fitting the near-end talker (double-talk), not a
        // new echo path: a real path change gets below that within a second and is copied then.
        let plausible = !self.converged || self.energy_bg < 0.1 * self.energy_mic;
        if self.energy_bg < 0.5 * self.energy_fg && s_bg < s_fg && plausible {
            // The background is clearly better: it becomes the output filter.
            self.filter.copy_background_to_foreground();
            self.energy_fg = self.energy_bg;
            if self.energy_fg < 0.25 * self.energy_mic {
                self.converged = true;
            }
        } else if self.energy_bg > 4.0 * self.energy_fg && self.energy_fg > 0.0 {
            // The background diverged (double-talk): restart it from the foreground.
            self.filter.reset_background_to_foreground();
            self.energy_bg = self.energy_fg;
        }
    }

    fn adapt(&mut self) {
        let n = self.n;
        self.frame[..n].fill(0.0);
        self.frame[n..].copy_from_slice(&self.e_bg);
        self.fft.forward(&self.frame, &mut self.spec_e);
        self.filter.adapt(&self.spec_e, STEP, &mut self.fft);
    }
}
