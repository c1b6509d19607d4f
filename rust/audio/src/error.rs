//! Errors of the audio core.
//!
//! Two kinds, kept apart on purpose:
//! * [`ConfigError`] — a component was asked to exist with parameters it cannot honour (an
//!   unsupported rate, zero channels, a zero capacity). Raised at construction, never later.
//! * [`ProcessError`] — a call on a live component was given buffers of the wrong shape (an odd
//!   byte count for PCM16, an output slice too short). Nothing is consumed when it is returned.
//!
//! "Ring full" and "ring empty" are not errors: they are counts returned by push and pop.

use std::fmt;

/// A component cannot be built with these parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// A sample rate that is zero or above the supported maximum.
    InvalidRate {
        /// Which parameter: "in_rate_hz", "out_rate_hz", "rate_hz".
        name: &'static str,
        /// The value given (signed, so a negative value from a caller can be reported as given).
        value: i64,
    },
    /// The ratio between two rates reduces to a fraction whose filter table would be too large.
    RatioTooComplex {
        /// Input rate in Hz.
        in_rate_hz: u32,
        /// Output rate in Hz.
        out_rate_hz: u32,
        /// Number of polyphase filters the ratio needs.
        phases: u64,
        /// The most the resampler allows.
        max_phases: u64,
    },
    /// A channel count of zero (or above the maximum).
    InvalidChannels {
        /// The value given.
        value: usize,
    },
    /// A buffer capacity of zero or too large.
    InvalidCapacity {
        /// The value given.
        value: usize,
    },
    /// An unknown quality preset name.
    UnknownQuality {
        /// The name given.
        value: String,
    },
    /// A numeric parameter outside its range.
    OutOfRange {
        /// Which parameter.
        name: &'static str,
        /// The value given, as text.
        value: String,
        /// What is allowed.
        allowed: &'static str,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::InvalidRate { name, value } => write!(
                f,
                "{name}={value} is not a usable sample rate: expected 1..={} Hz \
                 (common rates: 8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000)",
                crate::resample::MAX_RATE_HZ
            ),
            ConfigError::RatioTooComplex { in_rate_hz, out_rate_hz, phases, max_phases } => write!(
                f,
                "{in_rate_hz} Hz -> {out_rate_hz} Hz reduces to a ratio that needs {phases} filter \
                 phases (at most {max_phases} are allowed): pick rates with a larger common divisor, \
                 e.g. one of 8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000"
            ),
            ConfigError::InvalidChannels { value } => {
                write!(f, "channels={value} is not allowed: expected 1..={}", crate::MAX_CHANNELS)
            }
            ConfigError::InvalidCapacity { value } => write!(
                f,
                "capacity={value} samples is not allowed: expected 1..={}",
                crate::MAX_CAPACITY_SAMPLES
            ),
            ConfigError::UnknownQuality { value } => write!(
                f,
                "quality={value:?} is not a known preset: expected one of \"fast\", \"hq\", \"vhq\""
            ),
            ConfigError::OutOfRange { name, value, allowed } => {
                write!(f, "{name}={value} is not allowed: expected {allowed}")
            }
        }
    }
}

impl std::error::Error for ConfigError {}

/// A call was given buffers of the wrong shape; nothing was consumed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessError {
    /// PCM16 given as bytes must have an even length.
    OddByteLength {
        /// The length given.
        len_bytes: usize,
    },
    /// Interleaved audio whose length is not a multiple of the channel count.
    PartialFrame {
        /// Samples given.
        len_samples: usize,
        /// Channels expected.
        channels: usize,
    },
    /// The output slice cannot hold what the call produces.
    OutputTooSmall {
        /// Samples the call needs room for.
        needed: usize,
        /// Samples of room given.
        given: usize,
    },
    /// The output for this many input samples is a count past `usize`: no buffer can hold it.
    TooLong {
        /// Input samples asked about.
        input_len: usize,
    },
    /// Two streams that must advance together were given in different lengths.
    LengthMismatch {
        /// Samples of the first stream (the microphone).
        first: usize,
        /// Samples of the second stream (the reference).
        second: usize,
    },
}

impl fmt::Display for ProcessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProcessError::OddByteLength { len_bytes } => write!(
                f,
                "PCM16 audio needs an even number of bytes (2 per sample), got {len_bytes}: \
                 keep the odd byte and send it with the next chunk"
            ),
            ProcessError::PartialFrame { len_samples, channels } => write!(
                f,
                "{len_samples} samples is not a whole number of {channels}-channel frames: \
                 pass a multiple of {channels} samples"
            ),
            ProcessError::OutputTooSmall { needed, given } => write!(
                f,
                "output buffer holds {given} samples but {needed} are produced: \
                 size it with output_len()"
            ),
            ProcessError::TooLong { input_len } => write!(
                f,
                "{input_len} input samples would give more output samples than this machine can \
                 count ({} at most): pass the input in smaller chunks",
                usize::MAX
            ),
            ProcessError::LengthMismatch { first, second } => write!(
                f,
                "microphone ({first} samples) and reference ({second} samples) must be the same \
                 length: pass the reference samples played while this microphone audio was captured"
            ),
        }
    }
}

impl std::error::Error for ProcessError {}
