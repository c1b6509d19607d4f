//! A borrowed view of PCM16 audio that is either native `i16` samples or little-endian bytes.
//!
//! Audio arrives from Python as numpy int16 arrays or as raw bytes (the wire format of the
//! Realtime protocol after base64 decoding). Reading bytes directly avoids a copy just to get
//! aligned `i16`s; the byte form is validated (even length) when the view is made.

use crate::error::ProcessError;

/// PCM16 mono samples, borrowed.
#[derive(Debug, Clone, Copy)]
pub enum Pcm<'a> {
    /// Native samples.
    Samples(&'a [i16]),
    /// Little-endian 16-bit samples as bytes; the length is even (checked by [`Pcm::from_le_bytes`]).
    LeBytes(&'a [u8]),
}

impl<'a> Pcm<'a> {
    /// View little-endian bytes as PCM16; fails on an odd length.
    pub fn from_le_bytes(bytes: &'a [u8]) -> Result<Self, ProcessError> {
        if !bytes.len().is_multiple_of(2) {
            return Err(ProcessError::OddByteLength { len_bytes: bytes.len() });
        }
        Ok(Pcm::LeBytes(bytes))
    }

    /// Number of samples.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Pcm::Samples(s) => s.len(),
            Pcm::LeBytes(b) => b.len() / 2,
        }
    }

    /// True when there are no samples.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The samples `start..start + out.len()` copied into `out`.
    #[inline]
    pub fn copy_to(&self, start: usize, out: &mut [i16]) {
        match self {
            Pcm::Samples(s) => out.copy_from_slice(&s[start..start + out.len()]),
            Pcm::LeBytes(b) => {
                let src = &b[2 * start..2 * (start + out.len())];
                for (o, pair) in out.iter_mut().zip(src.chunks_exact(2)) {
                    *o = i16::from_le_bytes([pair[0], pair[1]]);
                }
            }
        }
    }

    /// The samples `start..start + out.len()` converted to `f32` into `out`.
    #[inline]
    pub fn to_f32(&self, start: usize, out: &mut [f32]) {
        match self {
            Pcm::Samples(s) => {
                let n = out.len();
                for (o, &v) in out.iter_mut().zip(&s[start..start + n]) {
                    *o = f32::from(v);
                }
            }
            Pcm::LeBytes(b) => {
                let src = &b[2 * start..2 * (start + out.len())];
                for (o, pair) in out.iter_mut().zip(src.chunks_exact(2)) {
                    *o = f32::from(i16::from_le_bytes([pair[0], pair[1]]));
                }
            }
        }
    }
}

impl<'a> From<&'a [i16]> for Pcm<'a> {
    fn from(s: &'a [i16]) -> Self {
        Pcm::Samples(s)
    }
}
