//! Public-API tests of the resampler: every pair of common rates x chunk sizes.

use voxwire_audio::{Pcm, ProcessError, Quality, Resampler};

const RATES: [u32; 8] = [8_000, 11_025, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000];

fn signal(n: usize, seed: u32) -> Vec<i16> {
    // xorshift noise plus a tone: deterministic, full band.
    let mut s = seed.wrapping_mul(2_654_435_761) | 1;
    (0..n)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            let noise = (s % 8000) as i32 - 4000;
            let tone = (12_000.0 * (i as f64 * 0.05).sin()) as i32;
            (noise + tone) as i16
        })
        .collect()
}

fn one_shot(a: u32, b: u32, q: Quality, x: &[i16]) -> Vec<i16> {
    let mut r = Resampler::new(a, b, q).unwrap();
    let mut out = r.process(x);
    out.extend(r.flush());
    out
}

#[test]
fn chunked_equals_one_shot_for_every_pair_and_chunk_size() {
    let x = signal(9_000, 7);
    for &a in &RATES {
        for &b in &RATES {
            let expected = one_shot(a, b, Quality::Hq, &x);
            for chunk in [1usize, 2, 3, 17, 160, 441, 480, 2_047, 2_049, 9_000] {
                let mut r = Resampler::new(a, b, Quality::Hq).unwrap();
                let mut got = Vec::with_capacity(expected.len());
                for c in x.chunks(chunk) {
                    let before = got.len();
                    got.extend(r.process(c));
                    // No bunching: every call returns exactly what its input determines.
                    assert!(got.len() - before <= (c.len() * b as usize).div_ceil(a as usize) + 1);
                }
                got.extend(r.flush());
                assert_eq!(got, expected, "{a}->{b} in chunks of {chunk}");
            }
        }
    }
}

#[test]
fn all_presets_stream_identically() {
    let x = signal(5_000, 3);
    for q in [Quality::Fast, Quality::Hq, Quality::Vhq] {
        for (a, b) in [(48_000, 24_000), (44_100, 24_000), (8_000, 24_000), (24_000, 16_000)] {
            let expected = one_shot(a, b, q, &x);
            let mut r = Resampler::new(a, b, q).unwrap();
            let mut got = Vec::new();
            for c in x.chunks(333) {
                got.extend(r.process(c));
            }
            got.extend(r.flush());
            assert_eq!(got, expected, "{a}->{b} {q:?}");
        }
    }
}

#[test]
fn le_bytes_and_samples_agree() {
    let x = signal(3_000, 11);
    let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut r1 = Resampler::new(16_000, 24_000, Quality::Hq).unwrap();
    let mut r2 = Resampler::new(16_000, 24_000, Quality::Hq).unwrap();
    let mut o1 = vec![0i16; r1.output_len(x.len()).unwrap()];
    let mut o2 = vec![0i16; r2.output_len(x.len()).unwrap()];
    r1.process_into(Pcm::Samples(&x), &mut o1).unwrap();
    r2.process_into(Pcm::from_le_bytes(&bytes).unwrap(), &mut o2).unwrap();
    assert_eq!(o1, o2);
    assert_eq!(Pcm::from_le_bytes(&bytes[..3]).unwrap_err(), ProcessError::OddByteLength { len_bytes: 3 });
}

#[test]
fn float_path_matches_int16_path_before_rounding() {
    let x = signal(4_000, 5);
    let xf: Vec<f32> = x.iter().map(|&v| f32::from(v) / 32768.0).collect();
    let mut ri = Resampler::new(44_100, 24_000, Quality::Hq).unwrap();
    let mut rf = Resampler::new(44_100, 24_000, Quality::Hq).unwrap();
    let yi = ri.process(&x);
    let mut yf = vec![0f32; rf.output_len(xf.len()).unwrap()];
    rf.process_f32_into(&xf, &mut yf).unwrap();
    for (a, b) in yi.iter().zip(&yf) {
        let r = (b * 32768.0).round_ties_even().clamp(-32768.0, 32767.0) as i16;
        assert_eq!(*a, r);
    }
}

#[test]
fn identity_rate_passes_audio_through_delayed() {
    let x = signal(2_000, 9);
    let mut r = Resampler::new(24_000, 24_000, Quality::Hq).unwrap();
    let y = r.process(&x);
    let d = r.output_delay();
    assert_eq!(d.fract(), 0.0, "odd-length filter: integer delay at 1:1");
    let d = d as usize;
    // A 1:1 low-pass at 0.95 x Nyquist changes broadband noise a little, never by much.
    let err: f64 = y[d..].iter().zip(&x).map(|(a, b)| (f64::from(*a) - f64::from(*b)).powi(2)).sum::<f64>()
        / (y.len() - d) as f64;
    let pow: f64 = x.iter().map(|v| f64::from(*v).powi(2)).sum::<f64>() / x.len() as f64;
    assert!(err / pow < 0.05, "relative error {}", err / pow);
}

#[test]
fn saturates_instead_of_wrapping() {
    // A full-scale square wave overshoots (Gibbs); the output must clip, not wrap around.
    let x: Vec<i16> = (0..4_000).map(|i| if (i / 40) % 2 == 0 { 32_767 } else { -32_768 }).collect();
    let y = one_shot(16_000, 48_000, Quality::Hq, &x);
    let d = Resampler::new(16_000, 48_000, Quality::Hq).unwrap().output_delay() as usize;
    // Right after each rising edge the output must stay high, never jump negative.
    for k in 1..40 {
        let edge = (k * 80) * 3 + d;
        for v in &y[edge + 6..edge + 100] {
            assert!(*v > 20_000, "wrapped at {edge}");
        }
    }
    assert!(y.contains(&32_767) && y.contains(&-32_768));
}
