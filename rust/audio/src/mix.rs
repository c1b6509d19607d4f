//! Interleaved multi-channel PCM16 to mono.

use crate::error::{ConfigError, ProcessError};

/// Average each frame of `channels` interleaved samples into one mono sample.
///
/// The mean is rounded to the nearest integer, ties away from zero, so that a signal present
/// identically on every channel comes out unchanged. Returns the number of mono samples
/// written (`interleaved.len() / channels`).
pub fn to_mono(interleaved: &[i16], channels: usize, out: &mut [i16]) -> Result<usize, MixError> {
    if channels == 0 || channels > crate::MAX_CHANNELS {
        return Err(MixError::Config(ConfigError::InvalidChannels { value: channels }));
    }
    if !interleaved.len().is_multiple_of(channels) {
        return Err(MixError::Process(ProcessError::PartialFrame {
            len_samples: interleaved.len(),
            channels,
        }));
    }
    let frames = interleaved.len() / channels;
    if out.len() < frames {
        return Err(MixError::Process(ProcessError::OutputTooSmall { needed: frames, given: out.len() }));
    }
    if channels == 2 {
        // The common case gets a loop the compiler vectorises.
        for (o, f) in out.iter_mut().zip(interleaved.chunks_exact(2)) {
            let s = i32::from(f[0]) + i32::from(f[1]);
            // (s + sign) / 2 rounds halves away from zero; the result always fits in i16.
            *o = ((s + s.signum()) / 2) as i16;
        }
    } else {
        let n = channels as i32;
        for (o, f) in out.iter_mut().zip(interleaved.chunks_exact(channels)) {
            let s: i32 = f.iter().map(|&v| i32::from(v)).sum();
            let half = n / 2;
            *o = (if s >= 0 { (s + half) / n } else { (s - half) / n }) as i16;
        }
    }
    Ok(frames)
}

/// Why [`to_mono`] refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MixError {
    /// A bad channel count.
    Config(ConfigError),
    /// A buffer of the wrong shape.
    Process(ProcessError),
}

impl std::fmt::Display for MixError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MixError::Config(e) => e.fmt(f),
            MixError::Process(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for MixError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stereo_mean_rounds_half_away_from_zero() {
        let mut out = [0i16; 4];
        let n = to_mono(&[1, 2, -1, -2, 32767, 32767, -32768, -32768], 2, &mut out).unwrap();
        assert_eq!(n, 4);
        assert_eq!(out, [2, -2, 32767, -32768]);
    }

    #[test]
    fn three_channels() {
        let mut out = [0i16; 2];
        to_mono(&[3, 3, 4, -3, -3, -4], 3, &mut out).unwrap();
        assert_eq!(out, [3, -3]);
    }

    #[test]
    fn rejects_zero_channels_and_partial_frames() {
        let mut out = [0i16; 4];
        assert!(matches!(to_mono(&[1, 2], 0, &mut out), Err(MixError::Config(_))));
        assert!(matches!(to_mono(&[1, 2, 3], 2, &mut out), Err(MixError::Process(_))));
    }
}
