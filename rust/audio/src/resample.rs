//! Streaming PCM16 resampler: polyphase FIR, linear phase, f32 arithmetic.
//!
//! ## Design
//!
//! The ratio `out/in` is reduced to `L/M`. Conceptually the input is upsampled by `L` (zeros
//! between samples), filtered by one long low-pass prototype `h` (a Kaiser-windowed sinc designed
//! in f64, stored in f32) and every `M`-th sample kept. Output `n` is therefore
//!
//! ```text
//! y[n] = sum_k h[p + k*L] * x[i - k],   i = floor(n*M / L),  p = n*M mod L
//! ```
//!
//! a dot product of `taps` coefficients of phase `p` with the newest `taps` inputs up to `x[i]`.
//! Rows are stored reversed so both operands are read forwards, and padded with zeros (on the
//! oldest side, so the delay does not change) to a multiple of the SIMD width.
//!
//! ## Streaming guarantees
//!
//! * Output `n` is computed as soon as `x[i]` has arrived and never again, always with the same
//!   arithmetic in the same order, so any chunking gives output bit-identical to one call.
//! * Nothing is held back: after `I` inputs exactly `ceil(I * L / M)` outputs exist. The only
//!   delay is the filter's group delay, [`Resampler::output_delay`] output samples.
//! * [`Resampler::flush_into`] feeds virtual silence until every output sample whose centre lies
//!   inside the signal has been produced, then resets the stream.
//!
//! ## Quality presets (`lower Nyquist` = half the lower of the two rates)
//!
//! | preset | passband edge | stopband edge | stopband attenuation |
//! |--------|---------------|---------------|----------------------|
//! | `Fast` | 0.85 x        | 1.15 x        | 100 dB               |
//! | `Hq`   | 0.90 x        | 1.10 x        | 126 dB (design), >= 120 dB measured |
//! | `Vhq`  | 0.90 x        | 1.00 x        | 126 dB (design), >= 120 dB measured |
//!
//! With `Hq` nothing aliases into the passband (0 .. 0.9 x lower Nyquist): an input tone can only
//! fold into the transition band 0.9 .. 1.0 x, which lies above the passband. `Vhq` rejects
//! everything above the lower Nyquist and so has twice the filter length and delay.
//!
//! ## Speed
//!
//! The per-output dot products run in one kernel compiled per instruction set (lanes in
//! [`simd`]), chosen once per process: AVX-512F (lane layout 16 outputs wide; the dot layout
//! stays on AVX2) or AVX2+FMA on x86-64, selected at run time; NEON on aarch64 (baseline
//! there, no detection); portable Rust elsewhere. The fused kernels (AVX-512, AVX2+FMA, NEON)
//! round once per multiply-add, each output summing its taps in the same order, so every
//! x86-64 with AVX2 and every aarch64 gives bit-identical output; the portable kernel (no FMA)
//! differs from them by at most 1 LSB. `resample/kernel_tests.rs` checks both.
//!
//! In the lane layout accumulators are staged in output order and converted to int16 in one
//! pass the compiler vectorises; for 24 -> 48 kHz (two outputs per input, one phase a pure
//! delay) that per-output cost was as large as the filtering.

// The kernels walk several parallel arrays (accumulators, pointers, rows) by one index.
#![allow(clippy::needless_range_loop)]

use crate::error::{ConfigError, ProcessError};
use crate::pcm::Pcm;

/// Highest sample rate accepted, in Hz.
pub const MAX_RATE_HZ: u32 = 768_000;
/// Most polyphase filters a ratio may need (`L` after reduction). 11025 <-> 24000 needs 320.
pub const MAX_PHASES: u64 = 4096;
/// SIMD width the coefficient rows are padded to.
const LANES: usize = 8;
/// Ratios with at most this many phases vectorise across outputs (the lane layout).
const LANE_LAYOUT_MAX_PHASES: usize = 16;
/// Input samples converted to f32 per pass; the history buffer never grows beyond this.
const BLOCK_SAMPLES: usize = 2048;

/// Filter quality presets; see the module docs for the numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Quality {
    /// Shorter filter, lower delay: 0.85 passband, 100 dB.
    Fast,
    /// Transparent for int16 (the default): 0.9 passband, >= 120 dB, nothing aliases into the passband.
    Hq,
    /// Like `Hq` but also rejects the transition band's aliases: twice the length and delay.
    Vhq,
}

impl Quality {
    /// Parse a preset name: `"fast"`, `"hq"` or `"vhq"`.
    pub fn from_name(name: &str) -> Result<Self, ConfigError> {
        match name {
            "fast" => Ok(Quality::Fast),
            "hq" => Ok(Quality::Hq),
            "vhq" => Ok(Quality::Vhq),
            other => Err(ConfigError::UnknownQuality { value: other.to_owned() }),
        }
    }

    /// The preset's name.
    pub fn name(self) -> &'static str {
        match self {
            Quality::Fast => "fast",
            Quality::Hq => "hq",
            Quality::Vhq => "vhq",
        }
    }

    /// (passband edge, stopband edge) as fractions of the lower Nyquist, and attenuation in dB.
    fn spec(self) -> (f64, f64, f64) {
        match self {
            Quality::Fast => (0.85, 1.15, 100.0),
            Quality::Hq => (0.90, 1.10, 126.0),
            Quality::Vhq => (0.90, 1.00, 126.0),
        }
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `1 / k^2` for the Bessel series: multiplying by it instead of dividing makes the filter
/// design (tens of thousands of window values for 44.1 kHz ratios) several times faster.
const INV_K2: [f64; 64] = {
    let mut t = [0.0; 64];
    let mut k = 1;
    while k < 64 {
        t[k] = 1.0 / ((k * k) as f64);
        k += 1;
    }
    t
};

/// Zeroth-order modified Bessel function of the first kind (power series; for the Kaiser betas
/// used here it converges in about 30 terms).
fn bessel_i0(x: f64) -> f64 {
    let q = x * x / 4.0;
    let mut term = 1.0;
    let mut sum = 1.0;
    let mut k = 1;
    while term > sum * 1e-17 {
        term *= if k < INV_K2.len() { q * INV_K2[k] } else { q / ((k * k) as f64) };
        sum += term;
        k += 1;
    }
    sum
}

/// The polyphase coefficient table for `L/M` at the given preset.
struct Design {
    taps: usize,
    padded: usize,
    /// `L` rows of `padded` coefficients, each reversed (newest input last), zero-padded in front.
    rows: Vec<f32>,
    /// Group delay in output samples.
    delay_out: f64,
}

fn design(in_rate_hz: u32, out_rate_hz: u32, l: usize, m: usize, quality: Quality) -> Design {
    let (pass, stop, atten_db) = quality.spec();
    let nyq_low = f64::from(in_rate_hz.min(out_rate_hz)) / 2.0;
    let transition_hz = (stop - pass) * nyq_low;
    let cutoff_hz = (pass + stop) / 2.0 * nyq_low;
    // Kaiser's estimates (Oppenheim & Schafer, 3rd ed., eq. 7.62-7.63) for length and beta.
    let beta = 0.1102 * (atten_db - 8.7);
    let taps = ((atten_db - 7.95) / (14.36 * transition_hz / f64::from(in_rate_hz))).ceil() as usize;
    let taps = taps.max(2);
    let slots = taps * l;
    // An odd length puts the centre on a prototype sample. When the cutoff is fs_proto / (2L')
    // (2:1 and 3:1 conversions), the sinc's zeros then land exactly on whole phases, which the
    // lane layout skips: one phase becomes a pure delay.
    let n = if slots.is_multiple_of(2) { slots - 1 } else { slots };
    let fs_proto = f64::from(in_rate_hz) * l as f64;
    let wc = 2.0 * cutoff_hz / fs_proto; // normalised so that sinc(wc * t) has its first zero at 1/wc
    let centre = (n - 1) as f64 / 2.0;
    let i0_beta = bessel_i0(beta);
    let mut proto = vec![0f64; slots];
    // The filter is symmetric (n is odd, centre on a sample): compute the first half and the
    // centre, mirror the rest. Halves the design time and makes the symmetry exact.
    let half = n / 2;
    for (j, c) in proto.iter_mut().enumerate().take(half + 1) {
        let t = j as f64 - centre;
        let x = wc * t;
        let sinc = if t == 0.0 {
            1.0
        } else if (x - x.round()).abs() < 1e-9 {
            0.0 // an exact zero crossing; keep it exact so whole zero phases can be skipped
        } else {
            (std::f64::consts::PI * x).sin() / (std::f64::consts::PI * x)
        };
        let r = t / centre.max(0.5);
        let w = bessel_i0(beta * (1.0 - r * r).max(0.0).sqrt()) / i0_beta;
        // Gain L restores the level lost to the zeros inserted by upsampling.
        *c = wc * sinc * w * l as f64;
    }
    for j in 0..half {
        proto[n - 1 - j] = proto[j];
    }
    let padded = taps.div_ceil(LANES) * LANES;
    let mut rows = vec![0f32; l * padded];
    for p in 0..l {
        let row = &mut rows[p * padded..(p + 1) * padded];
        for k in 0..taps {
            // Row position padded-1 multiplies the newest input x[i], i.e. tap k = 0.
            row[padded - 1 - k] = proto[p + k * l] as f32;
        }
    }
    Design { taps, padded, rows, delay_out: (n - 1) as f64 / (2.0 * m as f64) }
}

/// One run of a phase's coefficients for the lane layout: taps `k = u + (t0 + t) * M` for
/// `t in 0..len`, whose inputs all lie in one de-interleaved stream.
#[derive(Clone, Copy, Debug)]
struct Segment {
    /// `k mod M` of the run.
    u: usize,
    /// First `t` (exact zero coefficients at either end are skipped).
    t0: usize,
    len: usize,
    /// Offset of the run's first coefficient in `lane_rows`.
    coef: usize,
}

/// Reorder each phase's row for the lane layout: taps `k` (oldest input first) grouped by
/// `k mod M`, exact zeros trimmed from both ends of each group. Returns the coefficients, the
/// segments, and per phase the range of its segments.
fn lane_order(d: &Design, l: usize, m: usize) -> (Vec<f32>, Vec<Segment>, Vec<(usize, usize)>) {
    let taps = d.taps;
    let mut coefs = Vec::with_capacity(l * taps);
    let mut segs = Vec::new();
    let mut ranges = Vec::with_capacity(l);
    for p in 0..l {
        let row = &d.rows[p * d.padded + d.padded - taps..(p + 1) * d.padded];
        let first = segs.len();
        for u in 0..m.min(taps) {
            let run: Vec<f32> = row.iter().skip(u).step_by(m).copied().collect();
            let Some(t0) = run.iter().position(|&c| c != 0.0) else { continue };
            let end = run.iter().rposition(|&c| c != 0.0).map_or(t0, |e| e + 1);
            segs.push(Segment { u, t0, len: end - t0, coef: coefs.len() });
            coefs.extend_from_slice(&run[t0..end]);
        }
        ranges.push((first, segs.len()));
    }
    (coefs, segs, ranges)
}

/// A streaming mono PCM16 resampler. See the module docs.
#[derive(Clone)]
pub struct Resampler {
    in_rate_hz: u32,
    out_rate_hz: u32,
    quality: Quality,
    l: usize,
    m: usize,
    taps: usize,
    padded: usize,
    rows: Vec<f32>,
    delay_out: f64,
    /// Input history as f32: `padded - 1` samples of history then up to `BLOCK_SAMPLES` new ones.
    buf: Vec<f32>,
    /// Valid samples in `buf`.
    filled: usize,
    /// Samples `buf` may hold (it is longer by `SLACK`).
    capacity: usize,
    /// De-interleaved copy of `buf` for the lane layout when `M > 1`.
    streams: Vec<f32>,
    /// Length of one stream in `streams`.
    stream_stride: usize,
    /// Lane layout: each phase's coefficients (oldest input first) grouped by tap index mod
    /// `M`, so one run reads one de-interleaved stream; see [`lane_order`].
    lane_rows: Vec<f32>,
    segments: Vec<Segment>,
    /// Per phase, its range in `segments`.
    phase_segments: Vec<(usize, usize)>,
    /// Lane layout: accumulators in output order (`STAGE_OUTPUTS` + `SLACK`), converted to the
    /// output type in one vectorised pass instead of lane by lane.
    stage: Vec<f32>,
    /// Index in `buf` of the newest input the next output needs.
    next_idx: usize,
    /// Phase (row) of the next output.
    phase: usize,
    /// Real input samples consumed since the stream began (for flush).
    consumed: u64,
    /// Outputs produced since the stream began (for flush).
    produced: u64,
    simd: Kernel,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kernel {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2Fma,
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "aarch64")]
    Neon,
}

/// Name of the kernel the resampler uses on this CPU: `"avx512"`, `"avx2+fma"`, `"neon"` or
/// `"portable"` (see [`Kernel::detect`] for the override).
pub fn kernel_name() -> &'static str {
    Kernel::detect().name()
}

impl Kernel {
    /// The best kernel this CPU runs, unless `VOXWIRE_RESAMPLER_KERNEL` names another one it
    /// runs (for benchmarks and tests: `portable`, `avx2+fma`, `avx512`, `neon`). Read once.
    fn detect() -> Self {
        static CHOSEN: std::sync::OnceLock<Kernel> = std::sync::OnceLock::new();
        *CHOSEN.get_or_init(|| {
            let supported = Kernel::supported();
            let wanted = std::env::var("VOXWIRE_RESAMPLER_KERNEL").ok();
            supported.iter().copied().find(|k| wanted.as_deref() == Some(k.name())).unwrap_or(supported[0])
        })
    }

    /// The kernels this CPU can run, best first.
    fn supported() -> Vec<Kernel> {
        let mut all = vec![Kernel::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") && has!("fma") {
                all.insert(0, Kernel::Avx2Fma);
                if has!("avx512f") {
                    all.insert(0, Kernel::Avx512);
                }
            }
        }
        #[cfg(target_arch = "aarch64")]
        all.insert(0, Kernel::Neon);
        all
    }

    fn name(self) -> &'static str {
        match self {
            Kernel::Portable => "portable",
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2Fma => "avx2+fma",
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => "avx512",
            #[cfg(target_arch = "aarch64")]
            Kernel::Neon => "neon",
        }
    }
}

impl std::fmt::Debug for Resampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resampler")
            .field("in_rate_hz", &self.in_rate_hz)
            .field("out_rate_hz", &self.out_rate_hz)
            .field("quality", &self.quality)
            .field("taps_per_phase", &self.taps)
            .field("phases", &self.l)
            .finish()
    }
}

impl Resampler {
    /// A resampler from `in_rate_hz` to `out_rate_hz` at the given quality.
    ///
    /// Fails if a rate is 0 or above [`MAX_RATE_HZ`], or if the reduced ratio needs more than
    /// [`MAX_PHASES`] filter phases.
    pub fn new(in_rate_hz: u32, out_rate_hz: u32, quality: Quality) -> Result<Self, ConfigError> {
        for (name, value) in [("in_rate_hz", in_rate_hz), ("out_rate_hz", out_rate_hz)] {
            if value == 0 || value > MAX_RATE_HZ {
                return Err(ConfigError::InvalidRate { name, value: i64::from(value) });
            }
        }
        let g = gcd(u64::from(in_rate_hz), u64::from(out_rate_hz));
        let l = u64::from(out_rate_hz) / g;
        let m = u64::from(in_rate_hz) / g;
        if l > MAX_PHASES {
            return Err(ConfigError::RatioTooComplex {
                in_rate_hz,
                out_rate_hz,
                phases: l,
                max_phases: MAX_PHASES,
            });
        }
        let (l, m) = (l as usize, m as usize);
        let d = design(in_rate_hz, out_rate_hz, l, m, quality);
        let (lane_rows, segments, phase_segments) = if l <= LANE_LAYOUT_MAX_PHASES {
            lane_order(&d, l, m)
        } else {
            (Vec::new(), Vec::new(), Vec::new())
        };
        let mut r = Resampler {
            in_rate_hz,
            out_rate_hz,
            quality,
            l,
            m,
            taps: d.taps,
            padded: d.padded,
            rows: d.rows,
            delay_out: d.delay_out,
            buf: vec![0f32; d.padded - 1 + BLOCK_SAMPLES + SLACK],
            capacity: d.padded - 1 + BLOCK_SAMPLES,
            stream_stride: if m > 1 { (d.padded - 1 + BLOCK_SAMPLES).div_ceil(m) + SLACK } else { 0 },
            streams: if l <= LANE_LAYOUT_MAX_PHASES && m > 1 {
                vec![0f32; m * ((d.padded - 1 + BLOCK_SAMPLES).div_ceil(m) + SLACK)]
            } else {
                Vec::new()
            },
            filled: 0,
            next_idx: 0,
            phase: 0,
            consumed: 0,
            produced: 0,
            stage: if l <= LANE_LAYOUT_MAX_PHASES { vec![0f32; STAGE_OUTPUTS + SLACK] } else { Vec::new() },
            lane_rows,
            segments,
            phase_segments,
            simd: Kernel::detect(),
        };
        r.reset();
        Ok(r)
    }

    /// Input rate in Hz.
    pub fn in_rate_hz(&self) -> u32 {
        self.in_rate_hz
    }

    /// Output rate in Hz.
    pub fn out_rate_hz(&self) -> u32 {
        self.out_rate_hz
    }

    /// The quality preset.
    pub fn quality(&self) -> Quality {
        self.quality
    }

    /// The reduced ratio `(L, M)`: `out/in = L/M`.
    pub fn ratio(&self) -> (usize, usize) {
        (self.l, self.m)
    }

    /// Filter taps per output sample (per polyphase row, before SIMD padding).
    pub fn taps_per_phase(&self) -> usize {
        self.taps
    }

    /// Constant delay of the output relative to the input, in output samples (may be
    /// fractional: the filter centre need not fall on an output sample).
    pub fn output_delay(&self) -> f64 {
        self.delay_out
    }

    /// Forget all input: the next call starts a new stream.
    pub fn reset(&mut self) {
        let hist = self.padded - 1;
        self.buf[..hist].fill(0.0);
        self.filled = hist;
        self.next_idx = hist;
        self.phase = 0;
        self.consumed = 0;
        self.produced = 0;
    }

    /// Exactly how many samples [`Resampler::process_into`] produces for `input_len` more inputs;
    /// [`ProcessError::TooLong`] if that count does not fit in `usize` (computed exactly, in
    /// 128 bits, whatever `input_len` is).
    pub fn output_len(&self, input_len: usize) -> Result<usize, ProcessError> {
        let filled = self.filled as u128 + input_len as u128;
        let n =
            outputs_before(filled, self.next_idx as u128, self.phase as u128, self.l as u128, self.m as u128);
        usize::try_from(n).map_err(|_| ProcessError::TooLong { input_len })
    }

    /// Resample `input`, writing exactly `output_len(input.len())` samples to the front of
    /// `output` and returning that count. Fails, consuming nothing, if `output` is too short.
    pub fn process_into(&mut self, input: Pcm<'_>, output: &mut [i16]) -> Result<usize, ProcessError> {
        self.run(input.len(), |pos, dst| input.to_f32(pos, dst), output)
    }

    /// Like [`Resampler::process_into`] for float audio (full scale +-1.0), without rounding
    /// or clipping: the same filter and the same stream (int16 and float calls may be mixed).
    pub fn process_f32_into(&mut self, input: &[f32], output: &mut [f32]) -> Result<usize, ProcessError> {
        self.run(
            input.len(),
            |pos, dst: &mut [f32]| {
                for (d, &x) in dst.iter_mut().zip(&input[pos..]) {
                    *d = x * 32768.0;
                }
            },
            output,
        )
    }

    fn run<O: OutSample>(
        &mut self,
        total: usize,
        mut fill: impl FnMut(usize, &mut [f32]),
        output: &mut [O],
    ) -> Result<usize, ProcessError> {
        let needed = self.output_len(total)?;
        if output.len() < needed {
            return Err(ProcessError::OutputTooSmall { needed, given: output.len() });
        }
        let mut written = 0;
        let mut pos = 0;
        while pos < total {
            let room = self.capacity - self.filled;
            let take = room.min(total - pos);
            fill(pos, &mut self.buf[self.filled..self.filled + take]);
            self.filled += take;
            pos += take;
            written += self.produce(&mut output[written..]);
            self.compact();
        }
        self.consumed += total as u64;
        self.produced += written as u64;
        debug_assert_eq!(written, needed);
        Ok(written)
    }

    /// Convenience: resample `input` into a new vector.
    pub fn process(&mut self, input: &[i16]) -> Vec<i16> {
        // A slice's length is at most isize::MAX / 2 samples, and L <= MAX_PHASES: it fits.
        let mut out = vec![0i16; self.output_len(input.len()).expect("an output count of a slice")];
        let n = self.process_into(Pcm::Samples(input), &mut out).expect("sized by output_len");
        out.truncate(n);
        out
    }

    /// How many samples [`Resampler::flush_into`] produces now.
    pub fn flush_len(&self) -> usize {
        if self.consumed == 0 {
            return 0; // nothing went in, nothing is owed
        }
        let total = (self.consumed as f64 * self.l as f64 / self.m as f64 + self.delay_out).ceil() as u64;
        total.saturating_sub(self.produced) as usize
    }

    /// Drain the filter: produce the outputs still owed for the input seen so far (as if
    /// silence followed), then [`reset`](Resampler::reset). Returns the count written.
    pub fn flush_into<O: OutSample>(&mut self, output: &mut [O]) -> Result<usize, ProcessError> {
        let needed = self.flush_len();
        if output.len() < needed {
            return Err(ProcessError::OutputTooSmall { needed, given: output.len() });
        }
        let mut written = 0;
        while written < needed {
            let room = self.capacity - self.filled;
            self.buf[self.filled..self.capacity].fill(0.0);
            self.filled += room;
            // Produce into a window limited to what is owed, so flush stops exactly there.
            written += self.produce(&mut output[written..needed]);
            self.compact();
        }
        self.reset();
        Ok(written)
    }

    /// Convenience: flush into a new vector.
    pub fn flush(&mut self) -> Vec<i16> {
        let mut out = vec![0i16; self.flush_len()];
        let n = self.flush_into(&mut out).expect("sized by flush_len");
        out.truncate(n);
        out
    }

    /// Compute every output the buffer determines (at most `out.len()`), advancing the phase.
    fn produce<O: OutSample>(&mut self, out: &mut [O]) -> usize {
        let lanes = self.l <= LANE_LAYOUT_MAX_PHASES;
        if lanes && self.m > 1 {
            deinterleave(&self.buf, self.filled, self.m, self.stream_stride, &mut self.streams);
        }
        let mut st = State { next_idx: self.next_idx, phase: self.phase };
        let args = Args {
            rows: &self.rows,
            lane_rows: &self.lane_rows,
            segments: &self.segments,
            phase_segments: &self.phase_segments,
            padded: self.padded,
            taps: self.taps,
            buf: &self.buf,
            streams: &self.streams,
            stride: self.stream_stride,
            filled: self.filled,
            l: self.l,
            m: self.m,
            lanes,
        };
        let stage = &mut self.stage;
        let n = match self.simd {
            Kernel::Portable => produce_portable(&args, &mut st, out, stage),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Kernel::Avx2Fma` is only chosen after run-time detection of AVX2 and FMA.
            Kernel::Avx2Fma => unsafe { produce_avx2(&args, &mut st, out, stage) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Kernel::Avx512` is only chosen after run-time detection of AVX-512F,
            // AVX2 and FMA.
            Kernel::Avx512 => unsafe { produce_avx512(&args, &mut st, out, stage) },
            #[cfg(target_arch = "aarch64")]
            Kernel::Neon => produce_neon(&args, &mut st, out, stage),
        };
        self.next_idx = st.next_idx;
        self.phase = st.phase;
        n
    }

    /// Drop history no longer needed, keeping `padded - 1` samples before the next output's window.
    fn compact(&mut self) {
        let keep_from = (self.next_idx + 1).saturating_sub(self.padded);
        if keep_from == 0 {
            return;
        }
        let keep_from = keep_from.min(self.filled);
        self.buf.copy_within(keep_from..self.filled, 0);
        self.filled -= keep_from;
        self.next_idx -= keep_from;
    }
}

struct State {
    next_idx: usize,
    phase: usize,
}

/// Everything a kernel reads. `buf` (and `streams`) extend [`SLACK`] samples past the valid
/// data; only lanes whose results are discarded read there.
struct Args<'a> {
    rows: &'a [f32],
    lane_rows: &'a [f32],
    segments: &'a [Segment],
    phase_segments: &'a [(usize, usize)],
    padded: usize,
    taps: usize,
    buf: &'a [f32],
    streams: &'a [f32],
    stride: usize,
    filled: usize,
    l: usize,
    m: usize,
    lanes: bool,
}

/// Slack after the history buffer, after each de-interleaved stream and after the stage, in
/// samples: room for the lanes past the last real output of a vector (at most 15).
const SLACK: usize = 2 * LANES;
/// Outputs the lane layout computes per pass into the stage.
const STAGE_OUTPUTS: usize = 2048;

/// An output sample type: the accumulator is in int16 units.
pub trait OutSample: Copy + Default {
    /// Convert one accumulator value.
    fn from_acc(y: f32) -> Self;
}

impl OutSample for i16 {
    #[inline(always)]
    fn from_acc(y: f32) -> Self {
        to_i16(y)
    }
}

impl OutSample for f32 {
    /// Float audio is full scale at +-1.0; no rounding, no clipping.
    #[inline(always)]
    fn from_acc(y: f32) -> Self {
        y * (1.0 / 32768.0)
    }
}

/// Round to nearest (ties to even) and saturate to i16.
#[inline(always)]
fn to_i16(y: f32) -> i16 {
    // Adding and removing 1.5 * 2^23 leaves an integer in f32's default rounding mode; the clamp
    // first keeps it inside the range where that trick is exact.
    const MAGIC: f32 = 12_582_912.0;
    // NaN (only reachable from NaN float input) becomes 0, as a saturating cast would make it.
    let c = if y.is_nan() { 0.0 } else { y.clamp(-32768.0, 32767.0) };
    let r = (c + MAGIC) - MAGIC;
    // SAFETY: `r` is finite and a whole number in -32768..=32767, so it fits i16 exactly. The
    // unchecked cast is what lets the compiler vectorise this (a saturating `as` does not).
    unsafe { r.to_int_unchecked::<i16>() }
}

/// Eight f32 lanes: the one piece of the kernels that differs per instruction set.
mod simd;

use simd::{F32x8, LaneVec};

/// Outputs processed together, so that several FMA dependency chains are in flight.
const GROUP: usize = 4;

/// Number of outputs computable from `a.buf[..a.filled]`, capped at `cap`.
#[inline(always)]
fn available(a: &Args<'_>, st: &State, cap: usize) -> usize {
    // `filled` is at most the buffer's capacity: the count is small, and at most `cap` is kept.
    outputs_before(a.filled as u128, st.next_idx as u128, st.phase as u128, a.l as u128, a.m as u128)
        .min(cap as u128) as usize
}

/// How many outputs, starting with the one at (`next`, `phase`), need only inputs `< filled`:
/// output k needs input `next + floor((phase + k*M) / L)`. In 128 bits: `filled` may be any
/// `usize` count plus the buffer's, and `L <= MAX_PHASES`, so `L * filled` cannot overflow.
#[inline(always)]
fn outputs_before(filled: u128, next: u128, phase: u128, l: u128, m: u128) -> u128 {
    if filled <= next {
        return 0;
    }
    let r = filled - 1 - next;
    (l * (r + 1) - 1 - phase) / m + 1
}

/// Phase and newest input index of output `n` counted from the state.
#[inline(always)]
fn locate(a: &Args<'_>, st: &State, n: usize) -> (usize, usize) {
    let t = st.phase as u64 + n as u64 * a.m as u64;
    ((t % a.l as u64) as usize, st.next_idx + (t / a.l as u64) as usize)
}

/// Dot layout (many phases): each output is one dot product over its padded row. Outputs
/// that share a phase (`n, n+L, n+2L, ...`) are computed together so one coefficient load
/// feeds several FMAs. Every output gets the same arithmetic whatever its neighbours, which is
/// what makes chunking invisible.
#[inline(always)]
unsafe fn dot_groups<V: F32x8, O: OutSample>(a: &Args<'_>, st: &State, count: usize, out: &mut [O]) {
    let l = a.l;
    for slot in 0..l.min(count) {
        let (p, idx0) = locate(a, st, slot);
        assert!((p + 1) * a.padded <= a.rows.len());
        let row = a.rows[p * a.padded..].as_ptr();
        let outputs = (count - slot).div_ceil(l);
        let mut j = 0;
        while j < outputs {
            // Outputs L apart share the phase and their windows are M inputs apart.
            let (n0, i0) = (slot + j * l, idx0 + j * a.m);
            let g = match outputs - j {
                1 => 1,
                2 | 3 => 2,
                _ => 4,
            };
            match g {
                // SAFETY: forwarded F32x8 contract; `row` has `padded` floats (asserted above).
                1 => unsafe { dot_same_phase::<V, O, 1>(a, row, n0, i0, out) },
                // SAFETY: as above.
                2 => unsafe { dot_same_phase::<V, O, 2>(a, row, n0, i0, out) },
                // SAFETY: as above.
                _ => unsafe { dot_same_phase::<V, O, 4>(a, row, n0, i0, out) },
            }
            j += g;
        }
    }
}

/// `G` outputs `n0, n0 + L, ...` of one phase (row `row`), the first with newest input `i0`,
/// written to `out`.
#[inline(always)]
unsafe fn dot_same_phase<V: F32x8, O: OutSample, const G: usize>(
    a: &Args<'_>,
    row: *const f32,
    n0: usize,
    i0: usize,
    out: &mut [O],
) {
    let padded = a.padded;
    let mut wins = [std::ptr::null::<f32>(); G];
    for (g, w) in wins.iter_mut().enumerate() {
        let idx = i0 + g * a.m;
        assert!(idx < a.filled && idx + 1 >= padded);
        *w = a.buf[idx + 1 - padded..].as_ptr();
    }
    // Two accumulators per output (even and odd 8-tap chunks) double the FMA chains in
    // flight; every output uses this same split, whatever G, so its bits never depend on G.
    // SAFETY: F32x8 contract holds (see the dispatch in `produce`).
    let mut acc0 = [unsafe { V::zero() }; G];
    let mut acc1 = acc0;
    let mut k = 0;
    while k + 2 * LANES <= padded {
        // SAFETY: the row has `padded` floats; each window has `padded` floats ending at
        // x[idx] < filled (asserted above); k + 16 <= padded.
        let (c0, c1) = unsafe { (V::load(row.add(k)), V::load(row.add(k + LANES))) };
        for g in 0..G {
            // SAFETY: as above.
            unsafe {
                acc0[g] = c0.mul_add(V::load(wins[g].add(k)), acc0[g]);
                acc1[g] = c1.mul_add(V::load(wins[g].add(k + LANES)), acc1[g]);
            }
        }
        k += 2 * LANES;
    }
    if k < padded {
        // SAFETY: as above; one last chunk of 8 (padded is a multiple of 8).
        let c0 = unsafe { V::load(row.add(k)) };
        for g in 0..G {
            // SAFETY: as above.
            acc0[g] = unsafe { c0.mul_add(V::load(wins[g].add(k)), acc0[g]) };
        }
    }
    for g in 0..G {
        // SAFETY: F32x8 contract.
        let (v0, v1) = unsafe { (acc0[g].to_array(), acc1[g].to_array()) };
        let mut v = [0f32; LANES];
        for j in 0..LANES {
            v[j] = v0[j] + v1[j];
        }
        // Fixed-order pairwise reduction.
        let mut w = LANES / 2;
        while w > 0 {
            for j in 0..w {
                v[j] += v[j + w];
            }
            w /= 2;
        }
        out[n0 + g * a.l] = O::from_acc(v[0]);
    }
}

/// Lane layout (few phases): a vector holds outputs `n, n+L, ..., n+(W-1)L`, which share a phase
/// and whose windows start `M` inputs apart. Each lane sums its taps in one fixed order, so an
/// output's bits do not depend on which vector or which call computed it.
///
/// Reads go through `streams`, the input de-interleaved by `M` (stream `r`, position `q` holds
/// input `q*M + r`; for `M = 1` the history itself), so that the W lanes of one tap are
/// contiguous. Taps are visited in runs of equal `k mod M` (see [`lane_order`]), so the inner
/// loop walks one stream. Vectors are batched `GROUP` at a time within one phase, so a batch
/// shares its runs — and a phase that is a pure delay costs one tap.
#[inline(always)]
unsafe fn lane_groups<V: LaneVec>(a: &Args<'_>, st: &State, count: usize, stage: &mut [f32]) {
    let (l, m, taps) = (a.l, a.m, a.taps);
    let block = V::W * l;
    let base = if m == 1 { a.buf.as_ptr() } else { a.streams.as_ptr() };
    for slot in 0..l.min(count) {
        // Vectors of this slot start at outputs slot, slot + WL, slot + 2WL, ...
        let vectors = (count - slot).div_ceil(block);
        let (p, idx0) = locate(a, st, slot);
        let (s0, s1) = a.phase_segments[p];
        let segs = &a.segments[s0..s1];
        let mut vi = 0;
        while vi < vectors {
            let mut pos = [0usize; GROUP];
            for (g, pg) in pos.iter_mut().enumerate() {
                // Past the last vector, repeat it; the duplicate is computed and dropped.
                // Vectors WL outputs apart have windows WM inputs apart.
                let idx = idx0 + (vi + g).min(vectors - 1) * V::W * m;
                *pg = idx + 1 - taps; // oldest input of lane 0's window
                                      // Lane 0 is a real output, so its window ends inside the valid data; the other
                                      // lanes reach at most W - 1 <= 15 positions further in their stream, inside
                                      // the slack (SLACK = 16).
                if m == 1 {
                    assert!(idx + V::W <= a.buf.len());
                } else {
                    assert!(idx / m + V::W < a.stride && m * a.stride <= a.streams.len());
                }
            }
            // SAFETY: LaneVec contract (dispatch in `produce`).
            let mut acc = [unsafe { V::zero() }; GROUP];
            for seg in segs {
                let mut ptr = [std::ptr::null::<f32>(); GROUP];
                for g in 0..GROUP {
                    let q = pos[g] + seg.u;
                    // SAFETY: stream (q % m), position q / m + t0 lies inside `streams`, or for
                    // m == 1 inside `buf` (asserted above: the window of lane 0 is in bounds).
                    ptr[g] = unsafe { base.add((q % m) * a.stride + q / m + seg.t0) };
                }
                let c = &a.lane_rows[seg.coef..seg.coef + seg.len];
                for (t, &ct) in c.iter().enumerate() {
                    // SAFETY: LaneVec contract.
                    let cv = unsafe { V::splat(ct) };
                    for g in 0..GROUP {
                        // SAFETY: lanes read stream positions q/m + t0 + t .. + W, inside the
                        // stream by the assertions above.
                        acc[g] = unsafe { cv.mul_add(V::load(ptr[g].add(t)), acc[g]) };
                    }
                }
            }
            for g in 0..GROUP.min(vectors - vi) {
                let n0 = slot + (vi + g) * block;
                if l == 1 {
                    // Consecutive outputs: store the vector as it is. Lanes past `count` land
                    // in the stage's slack or beyond this pass's outputs, and are never read.
                    assert!(n0 + V::W <= stage.len());
                    // SAFETY: LaneVec contract; W floats writable at `n0` (asserted).
                    unsafe { acc[g].store(stage.as_mut_ptr().add(n0)) };
                } else {
                    let mut v = [0f32; 16];
                    // SAFETY: LaneVec contract; `v` has room for W <= 16 floats.
                    unsafe { acc[g].store(v.as_mut_ptr()) };
                    for (j, &y) in v.iter().enumerate().take((count - n0).div_ceil(l).min(V::W)) {
                        stage[n0 + j * l] = y;
                    }
                }
            }
            vi += GROUP;
        }
    }
}

#[inline(always)]
unsafe fn produce_with<V: LaneVec, D: F32x8, O: OutSample>(
    a: &Args<'_>,
    st: &mut State,
    out: &mut [O],
    stage: &mut [f32],
) -> usize {
    let count = available(a, st, out.len());
    if count > 0 {
        if a.lanes {
            // In passes of at most STAGE_OUTPUTS: each output is computed on its own, so where
            // a pass starts changes no bits.
            let mut done = 0;
            while done < count {
                let n = (count - done).min(STAGE_OUTPUTS);
                let (phase, next_idx) = locate(a, st, done);
                // SAFETY: forwarded LaneVec contract; the stage holds STAGE_OUTPUTS + SLACK.
                unsafe { lane_groups::<V>(a, &State { next_idx, phase }, n, stage) };
                for (o, &y) in out[done..done + n].iter_mut().zip(&stage[..n]) {
                    *o = O::from_acc(y);
                }
                done += n;
            }
        } else {
            // SAFETY: forwarded F32x8 contract.
            unsafe { dot_groups::<D, O>(a, st, count, out) };
        }
        let (p, idx) = locate(a, st, count);
        st.phase = p;
        st.next_idx = idx;
    }
    count
}

fn produce_portable<O: OutSample>(a: &Args<'_>, st: &mut State, out: &mut [O], stage: &mut [f32]) -> usize {
    // SAFETY: the portable lanes need no CPU feature; bounds are checked inside.
    unsafe { produce_with::<simd::Portable, simd::Portable, O>(a, st, out, stage) }
}

#[cfg(target_arch = "aarch64")]
fn produce_neon<O: OutSample>(a: &Args<'_>, st: &mut State, out: &mut [O], stage: &mut [f32]) -> usize {
    // SAFETY: NEON is baseline on aarch64 (no detection needed); bounds are checked inside.
    unsafe { produce_with::<simd::Neon, simd::Neon, O>(a, st, out, stage) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn produce_avx2<O: OutSample>(
    a: &Args<'_>,
    st: &mut State,
    out: &mut [O],
    stage: &mut [f32],
) -> usize {
    // SAFETY: this function is only called after run-time detection of AVX2 and FMA.
    unsafe { produce_with::<simd::Avx2, simd::Avx2, O>(a, st, out, stage) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn produce_avx512<O: OutSample>(
    a: &Args<'_>,
    st: &mut State,
    out: &mut [O],
    stage: &mut [f32],
) -> usize {
    // SAFETY: this function is only called after run-time detection of AVX-512F, AVX2 and FMA.
    unsafe { produce_with::<simd::Avx512, simd::Avx2, O>(a, st, out, stage) }
}

/// Fill the de-interleaved streams (lane layout, `M > 1`) from `buf[..filled]`.
fn deinterleave(buf: &[f32], filled: usize, m: usize, stride: usize, streams: &mut [f32]) {
    // One pass over the input in whole frames of M; monomorphised for the common M so the
    // scatter unrolls.
    fn frames<const M: usize>(buf: &[f32], stride: usize, streams: &mut [f32]) {
        for (q, f) in buf.chunks_exact(M).enumerate() {
            for r in 0..M {
                streams[r * stride + q] = f[r];
            }
        }
    }
    let whole = filled / m * m;
    match m {
        2 => frames::<2>(&buf[..whole], stride, streams),
        3 => frames::<3>(&buf[..whole], stride, streams),
        _ => {
            for (q, f) in buf[..whole].chunks_exact(m).enumerate() {
                for (r, &v) in f.iter().enumerate() {
                    streams[r * stride + q] = v;
                }
            }
        }
    }
    for (r, &v) in buf[whole..filled].iter().enumerate() {
        streams[r * stride + whole / m] = v;
    }
}

#[cfg(test)]
mod kernel_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_reduction() {
        let r = Resampler::new(44_100, 24_000, Quality::Hq).unwrap();
        assert_eq!(r.ratio(), (80, 147));
        let r = Resampler::new(8_000, 24_000, Quality::Hq).unwrap();
        assert_eq!(r.ratio(), (3, 1));
    }

    #[test]
    fn rejects_bad_rates() {
        assert!(matches!(
            Resampler::new(0, 24_000, Quality::Hq),
            Err(ConfigError::InvalidRate { name: "in_rate_hz", .. })
        ));
        assert!(matches!(
            Resampler::new(24_000, 999_999, Quality::Hq),
            Err(ConfigError::InvalidRate { name: "out_rate_hz", .. })
        ));
        assert!(matches!(
            Resampler::new(7_919, 24_001, Quality::Hq),
            Err(ConfigError::RatioTooComplex { .. })
        ));
        assert!(Quality::from_name("best").is_err());
    }

    #[test]
    fn bessel_matches_known_values() {
        // I0(1) = 1.2660658777520082, I0(10) = 2815.716628466254 (Abramowitz & Stegun, table 9.8).
        assert!((bessel_i0(1.0) - 1.266_065_877_752_008_2).abs() < 1e-14);
        assert!((bessel_i0(10.0) / 2_815.716_628_466_254 - 1.0).abs() < 1e-13);
    }

    #[test]
    fn output_len_is_exact_and_unbunched() {
        for (a, b) in [(48_000, 24_000), (44_100, 24_000), (8_000, 24_000), (24_000, 16_000)] {
            let mut r = Resampler::new(a, b, Quality::Hq).unwrap();
            let mut total_in = 0u64;
            let mut total_out = 0u64;
            for chunk in [1usize, 7, 160, 441, 4096, 3] {
                let out = r.process(&vec![100i16; chunk]);
                total_in += chunk as u64;
                total_out += out.len() as u64;
                let expect = (total_in * u64::from(b)).div_ceil(u64::from(a));
                assert_eq!(total_out, expect, "{a}->{b} after {total_in} inputs");
            }
        }
    }

    #[test]
    fn output_too_small_consumes_nothing() {
        let mut r = Resampler::new(16_000, 24_000, Quality::Hq).unwrap();
        let mut out = [0i16; 2];
        let err = r.process_into(Pcm::Samples(&[1i16; 10]), &mut out).unwrap_err();
        assert_eq!(err, ProcessError::OutputTooSmall { needed: 15, given: 2 });
        assert_eq!(r.output_len(10), Ok(15));
    }

    #[test]
    fn output_len_is_exact_for_any_count_and_refuses_what_usize_cannot_hold() {
        // 2^60 * 160 / 147 wrapped in u64 before (125488054923194229).
        let r = Resampler::new(44_100, 48_000, Quality::Hq).unwrap();
        assert_eq!(r.output_len(1 << 60), Ok(1_254_880_549_231_942_287));
        let up = Resampler::new(8_000, 48_000, Quality::Hq).unwrap();
        assert_eq!(up.output_len(usize::MAX / 6), Ok(usize::MAX / 6 * 6));
        assert_eq!(
            up.output_len(usize::MAX / 6 + 1),
            Err(ProcessError::TooLong { input_len: usize::MAX / 6 + 1 })
        );
        assert_eq!(up.output_len(usize::MAX), Err(ProcessError::TooLong { input_len: usize::MAX }));
        let down = Resampler::new(48_000, 8_000, Quality::Hq).unwrap();
        assert_eq!(down.output_len(usize::MAX), Ok(usize::MAX.div_ceil(6)));
        let msg = up.output_len(usize::MAX).unwrap_err().to_string();
        assert!(msg.contains("pass the input in smaller chunks"), "{msg}");
    }
}
