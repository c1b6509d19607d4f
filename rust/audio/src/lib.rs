//! # voxwire-audio
//!
//! The audio path of voxwire, in plain Rust (no Python here; `rust/py` wraps it):
//!
//! * [`Resampler`] — streaming PCM16 sample-rate conversion between any two rates whose ratio
//!   reduces to a manageable fraction (all pairs of 8, 11.025, 16, 22.05, 24, 32, 44.1, 48 kHz).
//!   Chunked input gives output bit-identical to one call; the only delay is the filter's.
//! * [`ring`] — a lock-free single-producer single-consumer ring of PCM16 samples.
//! * [`playback`] — a playback clock that knows how many samples of each assistant item have
//!   been played, so an interruption truncates exactly at what was heard.
//! * [`g711`] — µ-law and A-law, bit-exact with ITU-T G.711.
//! * [`to_mono`] — interleaved multi-channel to mono.
//! * [`aec`] — acoustic echo cancellation: the microphone minus what the speaker played.
//!
//! Hot paths allocate nothing per call: buffers are sized at construction and "full" / "empty"
//! are counts, not errors.

pub mod aec;
pub mod error;
pub mod g711;
pub mod mix;
mod pcm;
pub mod playback;
pub mod resample;
pub mod ring;

pub use aec::{EchoCanceller, EchoConfig, EchoStats};
pub use error::{ConfigError, ProcessError};
pub use mix::to_mono;
pub use pcm::Pcm;
pub use resample::{Quality, Resampler};

/// Most channels an interleaved buffer may have.
pub const MAX_CHANNELS: usize = 64;
/// Largest ring buffer capacity, in samples (about 46 minutes at 24 kHz).
pub const MAX_CAPACITY_SAMPLES: usize = 1 << 26;
