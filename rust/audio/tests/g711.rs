//! G.711 against a reference written from the standard's tables, for every input.
//!
//! The reference below does not share code or method with `src/g711.rs`: it lists the decision
//! values of ITU-T G.711 Tables 1a/2a (segment start and step per segment), finds a sample's
//! interval by search, and decodes to the middle of the interval. Negative samples use the
//! ITU-T G.191 convention (magnitude of `x < 0` is `-(x + 1)`).

use voxwire_audio::g711::{
    alaw_decode, alaw_decode_sample, alaw_encode, alaw_encode_sample, ulaw_decode, ulaw_decode_sample,
    ulaw_encode, ulaw_encode_sample,
};
use voxwire_audio::Pcm;

/// µ-law, in 14-bit magnitude units: (first decision value, step) of segments 0..=7. The first
/// interval of segment 0 is [0, 1), so its nominal start of -1 is harmless.
const ULAW_SEGMENTS: [(i32, i32); 8] =
    [(-1, 2), (31, 4), (95, 8), (223, 16), (479, 32), (991, 64), (2015, 128), (4063, 256)];
/// Upper end of the last µ-law interval (14-bit units).
const ULAW_END: i32 = 8159;
/// A-law, in 12-bit magnitude units: (first decision value, step) of segments 0..=7.
const ALAW_SEGMENTS: [(i32, i32); 8] =
    [(0, 1), (16, 1), (32, 2), (64, 4), (128, 8), (256, 16), (512, 32), (1024, 64)];

/// Lower decision value of each of the 128 magnitude codes.
fn thresholds(segments: &[(i32, i32); 8]) -> Vec<i32> {
    segments.iter().flat_map(|&(start, step)| (0..16).map(move |j| start + j * step)).collect()
}

/// Sign and magnitude as the G.191 reference sees a PCM16 sample.
fn sign_magnitude(x: i16) -> (bool, i32) {
    let x = i32::from(x);
    if x < 0 {
        (true, -(x + 1))
    } else {
        (false, x)
    }
}

/// Largest `n` with `thr[n] <= m` (the interval containing `m`), clipped to the top code.
fn interval(thr: &[i32], m: i32) -> u8 {
    (thr.iter().filter(|&&t| t <= m).count() - 1) as u8
}

fn ref_ulaw_encode(x: i16) -> u8 {
    let (neg, mag) = sign_magnitude(x);
    let n = interval(&thresholds(&ULAW_SEGMENTS), mag >> 2);
    // Transmitted inverted; the (pre-inversion) sign bit is 1 for negative.
    if neg {
        0x7F ^ n
    } else {
        0xFF ^ n
    }
}

fn ref_alaw_encode(x: i16) -> u8 {
    let (neg, mag) = sign_magnitude(x);
    let n = interval(&thresholds(&ALAW_SEGMENTS), mag >> 4);
    // Sign bit 1 for positive; even bits inverted.
    if neg {
        n ^ 0x55
    } else {
        (0x80 | n) ^ 0x55
    }
}

fn ref_ulaw_decode(code: u8) -> i16 {
    let thr = thresholds(&ULAW_SEGMENTS);
    let neg = code & 0x80 == 0;
    let n = usize::from(!code & 0x7F);
    let upper = thr.get(n + 1).copied().unwrap_or(ULAW_END);
    // Middle of the interval, scaled from 14 to 16 bits; interval 0 decodes to exactly 0.
    let mid = if n == 0 { 0 } else { (thr[n] + upper) / 2 * 4 };
    (if neg { -mid } else { mid }) as i16
}

fn ref_alaw_decode(code: u8) -> i16 {
    let c = code ^ 0x55;
    let neg = c & 0x80 == 0;
    let n = usize::from(c & 0x7F);
    let (_, step) = ALAW_SEGMENTS[n / 16];
    // Middle of the interval (start + step / 2) in 12-bit units, scaled to 16 bits (x 16).
    let mid = (2 * thresholds(&ALAW_SEGMENTS)[n] + step) * 8;
    (if neg { -mid } else { mid }) as i16
}

#[test]
fn ulaw_encode_matches_the_reference_for_every_sample() {
    let thr = thresholds(&ULAW_SEGMENTS);
    assert_eq!(*thr.last().unwrap(), 7903);
    for x in i16::MIN..=i16::MAX {
        assert_eq!(ulaw_encode_sample(x), ref_ulaw_encode(x), "x = {x}");
    }
}

#[test]
fn alaw_encode_matches_the_reference_for_every_sample() {
    for x in i16::MIN..=i16::MAX {
        assert_eq!(alaw_encode_sample(x), ref_alaw_encode(x), "x = {x}");
    }
}

#[test]
fn decode_matches_the_reference_for_every_code() {
    for code in 0..=255u8 {
        assert_eq!(ulaw_decode_sample(code), ref_ulaw_decode(code), "ulaw code {code:#04x}");
        assert_eq!(alaw_decode_sample(code), ref_alaw_decode(code), "alaw code {code:#04x}");
    }
}

#[test]
fn decode_tables_start_with_the_classic_values() {
    // The first row of the decode tables printed in the G.711 literature (codes 0x00..=0x0F).
    const ULAW_ROW0: [i16; 16] = [
        -32124, -31100, -30076, -29052, -28028, -27004, -25980, -24956, -23932, -22908, -21884, -20860,
        -19836, -18812, -17788, -16764,
    ];
    const ALAW_ROW0: [i16; 16] = [
        -5504, -5248, -6016, -5760, -4480, -4224, -4992, -4736, -7552, -7296, -8064, -7808, -6528, -6272,
        -7040, -6784,
    ];
    for (code, (&u, &a)) in ULAW_ROW0.iter().zip(&ALAW_ROW0).enumerate() {
        assert_eq!(ulaw_decode_sample(code as u8), u);
        assert_eq!(alaw_decode_sample(code as u8), a);
    }
    // Extremes and zeros.
    assert_eq!([0x00, 0x7F, 0x80, 0xFF].map(ulaw_decode_sample), [-32124, 0, 32124, 0]);
    assert_eq!([0x2A, 0x55, 0xAA, 0xD5].map(alaw_decode_sample), [-32256, -8, 32256, 8]);
}

#[test]
fn one_complement_pairs_differ_only_in_the_sign_bit() {
    for x in 0..=i16::MAX {
        assert_eq!(ulaw_encode_sample(x) ^ ulaw_encode_sample(!x), 0x80, "x = {x}");
        assert_eq!(alaw_encode_sample(x) ^ alaw_encode_sample(!x), 0x80, "x = {x}");
    }
}

#[test]
fn decoding_is_monotonic_and_reencoding_is_stable() {
    let mut prev = (i16::MIN, i16::MIN);
    for x in i16::MIN..=i16::MAX {
        let y = (ulaw_decode_sample(ulaw_encode_sample(x)), alaw_decode_sample(alaw_encode_sample(x)));
        assert!(y.0 >= prev.0 && y.1 >= prev.1, "x = {x}");
        prev = y;
    }
    for code in 0..=255u8 {
        let u = ulaw_decode_sample(code);
        assert_eq!(ulaw_decode_sample(ulaw_encode_sample(u)), u);
        let a = alaw_decode_sample(code);
        assert_eq!(alaw_encode_sample(a), code, "A-law has no negative zero: every code round-trips");
    }
}

#[test]
fn buffer_functions_agree_with_the_per_sample_ones() {
    let samples: Vec<i16> = (i16::MIN..=i16::MAX).step_by(7).collect();
    let bytes: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
    let mut u = vec![0u8; samples.len()];
    let mut a = vec![0u8; samples.len()];
    assert_eq!(ulaw_encode(Pcm::from_le_bytes(&bytes).unwrap(), &mut u), Ok(samples.len()));
    assert_eq!(alaw_encode(Pcm::Samples(&samples), &mut a), Ok(samples.len()));
    let mut back = vec![0i16; samples.len()];
    ulaw_decode(&u, &mut back).unwrap();
    for ((&x, &c), &y) in samples.iter().zip(&u).zip(&back) {
        assert_eq!(c, ulaw_encode_sample(x));
        assert_eq!(y, ulaw_decode_sample(c));
    }
    alaw_decode(&a, &mut back).unwrap();
    for ((&x, &c), &y) in samples.iter().zip(&a).zip(&back) {
        assert_eq!(c, alaw_encode_sample(x));
        assert_eq!(y, alaw_decode_sample(c));
    }
}
