//! The kernels against each other and across machines.
//!
//! * The fused kernels (AVX-512 and AVX2+FMA on x86-64, NEON on aarch64) give bit-identical
//!   output: the hashes below were recorded on x86-64 with AVX2+FMA, and CI checks them on
//!   aarch64 (NEON, under qemu-user, `scripts/ci-aarch64.sh`).
//! * The portable kernel (two roundings per multiply-add) is within 1 LSB of the fused ones.

use super::*;

/// Conversions and presets covered: both layouts (lanes for few phases, dot for 44.1 kHz).
const CASES: [(u32, u32, Quality); 8] = [
    (48_000, 24_000, Quality::Hq),
    (44_100, 24_000, Quality::Hq),
    (16_000, 24_000, Quality::Hq),
    (24_000, 48_000, Quality::Hq),
    (24_000, 16_000, Quality::Hq),
    (8_000, 24_000, Quality::Hq),
    (44_100, 48_000, Quality::Fast),
    (24_000, 11_025, Quality::Vhq),
];

/// FNV-1a of the int16 output and of the float output's bits, recorded on x86-64 (AVX2+FMA).
const FUSED_HASHES: [(u64, u64); 8] = [
    (0x40df_5810_9fda_b0bb, 0x820e_e13f_5013_1deb),
    (0x01d2_aab2_9496_e90b, 0x3824_feeb_3264_dd87),
    (0x23e7_f61c_65e0_d5be, 0x4a8d_1fe1_1fa4_3b66),
    (0x31af_30d9_52f0_5eff, 0x3be7_513e_d348_4b8d),
    (0xdfe0_5909_1485_93fd, 0x7dab_e086_ff1b_ae49),
    (0xa741_1ae3_3a72_8062, 0x4756_b6df_8eac_e13f),
    (0x39f9_3964_2191_6f9b, 0x2da1_2a16_4368_8a7e),
    (0x1020_ee4b_db9e_3e45, 0xd33d_fdbb_173d_0e55),
];

fn signal(n: usize) -> Vec<i16> {
    // xorshift noise plus a loud tone: full band, and large enough accumulators that a
    // difference in rounding would show.
    let mut s = 0x9e37_79b9u32;
    (0..n)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            let noise = (s % 12_000) as i32 - 6_000;
            let tone = (20_000.0 * (i as f64 * 0.031).sin()) as i32;
            (noise + tone).clamp(-32_768, 32_767) as i16
        })
        .collect()
}

fn run(case: (u32, u32, Quality), kernel: Kernel, x: &[i16]) -> (Vec<i16>, Vec<f32>) {
    let (a, b, q) = case;
    let mut r = Resampler::new(a, b, q).unwrap();
    r.simd = kernel;
    let mut y = Vec::new();
    for c in x.chunks(a as usize / 50) {
        y.extend(r.process(c));
    }
    y.extend(r.flush());
    let xf: Vec<f32> = x.iter().map(|&v| f32::from(v) / 32_768.0).collect();
    let mut yf = vec![0f32; r.output_len(xf.len()).unwrap()];
    let n = r.process_f32_into(&xf, &mut yf).unwrap();
    yf.truncate(n);
    (y, yf)
}

fn fnv1a(bytes: impl Iterator<Item = u8>) -> u64 {
    bytes.fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

fn hashes(y: &[i16], yf: &[f32]) -> (u64, u64) {
    (fnv1a(y.iter().flat_map(|v| v.to_le_bytes())), fnv1a(yf.iter().flat_map(|v| v.to_bits().to_le_bytes())))
}

#[test]
fn fused_kernels_give_the_recorded_bits_on_every_machine() {
    // Every fused kernel this CPU runs (here: AVX-512 and AVX2+FMA, or NEON), not only the best.
    let x = signal(12_000);
    let fused: Vec<Kernel> = Kernel::supported().into_iter().filter(|&k| k != Kernel::Portable).collect();
    if fused.is_empty() {
        eprintln!("no fused kernel on this CPU: bits checked by the next test only");
    }
    for kernel in fused {
        let got: Vec<(u64, u64)> =
            CASES.iter().map(|&c| run(c, kernel, &x)).map(|(y, yf)| hashes(&y, &yf)).collect();
        assert_eq!(got, FUSED_HASHES, "kernel {} differs from x86-64 AVX2+FMA", kernel.name());
    }
}

#[test]
fn portable_kernel_is_within_one_lsb_of_the_detected_one() {
    let x = signal(12_000);
    for case in CASES {
        let (y, yf) = run(case, Kernel::detect(), &x);
        let (p, pf) = run(case, Kernel::Portable, &x);
        assert_eq!(y.len(), p.len());
        let worst = y.iter().zip(&p).map(|(a, b)| (i32::from(*a) - i32::from(*b)).abs()).max().unwrap();
        assert!(worst <= 1, "{case:?}: {worst} LSB apart");
        // Before rounding: well under one LSB (in int16 units).
        let worst_f = yf.iter().zip(&pf).map(|(a, b)| ((a - b) * 32_768.0).abs()).fold(0f32, f32::max);
        assert!(worst_f < 0.05, "{case:?}: float paths {worst_f} LSB apart");
    }
}
