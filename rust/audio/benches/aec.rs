//! Criterion bench of the echo canceller: one 10 ms device buffer (microphone + reference) at
//! 16, 24 and 48 kHz with the default 300 ms tail and post-filter, on a converged filter; and at
//! 24 kHz with the delay search on (`24k_search`).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use voxwire_audio::{EchoCanceller, EchoConfig};

/// Pseudo-random samples in -4096..4096 (a linear congruential generator: not periodic within
/// the bench, so the delay search sees one clear lag).
fn signal(n: usize, seed: u64) -> Vec<i16> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            ((x >> 51) as i16) - 4096
        })
        .collect()
}

fn aec(c: &mut Criterion) {
    let mut g = c.benchmark_group("aec_10ms");
    for (rate, delay_search) in [(16_000u32, false), (24_000, false), (48_000, false), (24_000, true)] {
        let n = rate as usize / 100;
        g.throughput(Throughput::Elements(n as u64));
        let config = EchoConfig { rate_hz: rate, delay_search, ..EchoConfig::default() };
        let mut aec = EchoCanceller::new(config).unwrap();
        let far = signal(n * 100, 1);
        let mic: Vec<i16> = far.iter().map(|v| v / 2).collect();
        let mut out = vec![0i16; n];
        for (m, r) in mic.chunks(n).zip(far.chunks(n)) {
            aec.process(m, r, &mut out).unwrap();
        }
        let mut k = 0;
        let name = format!("{}k{}", rate / 1000, if delay_search { "_search" } else { "" });
        g.bench_function(name, |b| {
            b.iter(|| {
                let at = (k % 100) * n;
                k += 1;
                aec.process(black_box(&mic[at..at + n]), black_box(&far[at..at + n]), &mut out).unwrap();
                black_box(&out);
            })
        });
    }
    g.finish();
}

criterion_group!(benches, aec);
criterion_main!(benches);
