//! G.711 µ-law and A-law (ITU-T G.711), bit-exact with the ITU reference.
//!
//! Both laws map a sign and a magnitude to 8 bits: a 3-bit segment (octave) and a 4-bit step
//! within it. µ-law works on the top 14 bits of a PCM16 sample, A-law on the top 13. Codes are
//! transmitted with bits inverted (µ-law: all bits; A-law: the even bits, `^ 0x55`), so silence
//! is not a run of zeros on the line.
//!
//! Negative samples follow the ITU-T G.191 reference implementation (`g711.c` of the Software
//! Tool Library): the magnitude of a negative sample `x` is that of its one's complement `!x`
//! (`-x - 1`), so `x` and `!x` always encode to codes that differ only in the sign bit — the
//! code treats PCM16 as sign-magnitude around -0.5. (The classic Sun `linear2ulaw` negates with
//! `-x` instead and so differs from the reference for some negative µ-law inputs; A-law agrees.)
//!
//! Decoding gives the middle of each quantisation interval, scaled to 16 bits: the classic
//! tables (µ-law 0..=±32124, A-law ±8..=±32256).

use crate::error::ProcessError;
use crate::pcm::Pcm;

/// µ-law bias in 14-bit units: adding it puts segment boundaries on powers of two.
const ULAW_BIAS: u16 = 33;
/// Largest biased 14-bit magnitude; louder samples clip to the top code.
const ULAW_MAX_BIASED: u16 = 0x1FFF;

/// Encode one PCM16 sample to µ-law.
#[inline]
pub fn ulaw_encode_sample(x: i16) -> u8 {
    // The one's complement of a negative sample is its magnitude in the reference's convention.
    // The sign bit is 1 for negative before the inversion, so 1 for positive on the line.
    let (sign, magnitude) = if x < 0 { (0x80, !x as u16) } else { (0x00, x as u16) };
    let biased = ((magnitude >> 2) + ULAW_BIAS).min(ULAW_MAX_BIASED);
    // `biased` is in 33..=8191, so its top bit is bit 5..=12: segment 0..=7.
    let segment = (15 - biased.leading_zeros() as u16) - 5;
    let step = (biased >> (segment + 1)) & 0x0F;
    !(sign | (segment << 4) as u8 | step as u8)
}

/// Decode one µ-law code to PCM16.
#[inline]
pub fn ulaw_decode_sample(code: u8) -> i16 {
    ULAW_DECODE[usize::from(code)]
}

/// Encode one PCM16 sample to A-law.
#[inline]
pub fn alaw_encode_sample(x: i16) -> u8 {
    // A-law's sign bit is 1 for positive (and not touched by the `^ 0x55`).
    let (sign, magnitude) = if x < 0 { (0x00, !x as u16) } else { (0x80, x as u16) };
    // 12-bit magnitude (the 13th bit of A-law's input is the sign).
    let m = magnitude >> 4;
    let code = if m < 32 {
        // Segments 0 and 1 share one step size, so the code is the magnitude itself.
        m as u8
    } else {
        // Top bit at position 5..=10: segment 2..=7, step = the 4 bits below the top bit.
        let top = 15 - m.leading_zeros() as u16;
        let segment = top - 3;
        ((segment << 4) | ((m >> (top - 4)) & 0x0F)) as u8
    };
    (sign | code) ^ 0x55
}

/// Decode one A-law code to PCM16.
#[inline]
pub fn alaw_decode_sample(code: u8) -> i16 {
    ALAW_DECODE[usize::from(code)]
}

/// Encode `pcm` to µ-law into `out`; returns the number of bytes written (`pcm.len()`).
///
/// Fails with [`ProcessError::OutputTooSmall`] (nothing written) if `out` is shorter than `pcm`.
pub fn ulaw_encode(pcm: Pcm<'_>, out: &mut [u8]) -> Result<usize, ProcessError> {
    encode(pcm, out, ulaw_encode_sample)
}

/// Encode `pcm` to A-law into `out`; returns the number of bytes written (`pcm.len()`).
///
/// Fails with [`ProcessError::OutputTooSmall`] (nothing written) if `out` is shorter than `pcm`.
pub fn alaw_encode(pcm: Pcm<'_>, out: &mut [u8]) -> Result<usize, ProcessError> {
    encode(pcm, out, alaw_encode_sample)
}

/// Decode µ-law `codes` into `out`; returns the number of samples written (`codes.len()`).
///
/// Fails with [`ProcessError::OutputTooSmall`] (nothing written) if `out` is shorter than `codes`.
pub fn ulaw_decode(codes: &[u8], out: &mut [i16]) -> Result<usize, ProcessError> {
    decode(codes, out, &ULAW_DECODE)
}

/// Decode A-law `codes` into `out`; returns the number of samples written (`codes.len()`).
///
/// Fails with [`ProcessError::OutputTooSmall`] (nothing written) if `out` is shorter than `codes`.
pub fn alaw_decode(codes: &[u8], out: &mut [i16]) -> Result<usize, ProcessError> {
    decode(codes, out, &ALAW_DECODE)
}

fn encode(pcm: Pcm<'_>, out: &mut [u8], f: fn(i16) -> u8) -> Result<usize, ProcessError> {
    let n = pcm.len();
    let given = out.len();
    let out = out.get_mut(..n).ok_or(ProcessError::OutputTooSmall { needed: n, given })?;
    match pcm {
        Pcm::Samples(s) => {
            for (o, &x) in out.iter_mut().zip(s) {
                *o = f(x);
            }
        }
        Pcm::LeBytes(b) => {
            for (o, pair) in out.iter_mut().zip(b.chunks_exact(2)) {
                *o = f(i16::from_le_bytes([pair[0], pair[1]]));
            }
        }
    }
    Ok(n)
}

fn decode(codes: &[u8], out: &mut [i16], table: &[i16; 256]) -> Result<usize, ProcessError> {
    let n = codes.len();
    let given = out.len();
    let out = out.get_mut(..n).ok_or(ProcessError::OutputTooSmall { needed: n, given })?;
    for (o, &c) in out.iter_mut().zip(codes) {
        *o = table[usize::from(c)];
    }
    Ok(n)
}

/// Decoded value of every µ-law code, built at compile time from the expansion rule.
static ULAW_DECODE: [i16; 256] = {
    let mut t = [0i16; 256];
    let mut code = 0;
    while code < 256 {
        let c = !(code as u8);
        let segment = ((c >> 4) & 0x07) as i32;
        let step = (c & 0x0F) as i32;
        // Middle of step `step` of the segment, in biased 14-bit units, then unbiased and
        // scaled to 16 bits: ((2 * step + 33) << segment) - 33, times 4.
        let magnitude = (((2 * step + 33) << segment) - ULAW_BIAS as i32) * 4;
        // After undoing the inversion, a set sign bit means negative.
        t[code] = if c & 0x80 != 0 { -magnitude as i16 } else { magnitude as i16 };
        code += 1;
    }
    t
};

/// Decoded value of every A-law code, built at compile time from the expansion rule.
static ALAW_DECODE: [i16; 256] = {
    let mut t = [0i16; 256];
    let mut code = 0;
    while code < 256 {
        let c = code as u8 ^ 0x55;
        let segment = ((c >> 4) & 0x07) as i32;
        let step = (c & 0x0F) as i32;
        // Middle of the interval in 12-bit magnitude units (half a step = 0.5 << (segment - 1)),
        // scaled to 16 bits (x 16). Segment 0 has no implied leading one.
        let magnitude =
            if segment == 0 { (2 * step + 1) * 8 } else { ((2 * step + 33) * 8) << (segment - 1) };
        t[code] = if c & 0x80 != 0 { magnitude as i16 } else { -magnitude as i16 };
        code += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ulaw_anchor_values() {
        assert_eq!(ulaw_decode_sample(0x00), -32124);
        assert_eq!(ulaw_decode_sample(0x7F), 0);
        assert_eq!(ulaw_decode_sample(0x80), 32124);
        assert_eq!(ulaw_decode_sample(0xFF), 0);
        assert_eq!(ulaw_encode_sample(0), 0xFF);
        assert_eq!(ulaw_encode_sample(-1), 0x7F);
        assert_eq!(ulaw_encode_sample(i16::MAX), 0x80);
        assert_eq!(ulaw_encode_sample(i16::MIN), 0x00);
    }

    #[test]
    fn alaw_anchor_values() {
        assert_eq!(alaw_decode_sample(0xD5), 8);
        assert_eq!(alaw_decode_sample(0x55), -8);
        assert_eq!(alaw_decode_sample(0xAA), 32256);
        assert_eq!(alaw_decode_sample(0x2A), -32256);
        assert_eq!(alaw_encode_sample(0), 0xD5);
        assert_eq!(alaw_encode_sample(-1), 0x55);
        assert_eq!(alaw_encode_sample(i16::MAX), 0xAA);
        assert_eq!(alaw_encode_sample(i16::MIN), 0x2A);
    }

    #[test]
    fn slices_and_bytes_encode_alike_and_short_outputs_are_refused() {
        let samples = [0i16, 1000, -1000, 32767, -32768];
        let bytes: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
        let (mut a, mut b) = ([0u8; 5], [0u8; 5]);
        assert_eq!(ulaw_encode(Pcm::Samples(&samples), &mut a), Ok(5));
        assert_eq!(ulaw_encode(Pcm::from_le_bytes(&bytes).unwrap(), &mut b), Ok(5));
        assert_eq!(a, b);
        assert_eq!(
            alaw_encode(Pcm::Samples(&samples), &mut [0u8; 4]),
            Err(ProcessError::OutputTooSmall { needed: 5, given: 4 })
        );
        assert_eq!(
            ulaw_decode(&a, &mut [0i16; 3]),
            Err(ProcessError::OutputTooSmall { needed: 5, given: 3 })
        );
    }
}
