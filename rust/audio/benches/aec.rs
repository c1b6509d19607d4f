//! Criterion bench of the echo canceller: one 10 ms device buffer (microphone + reference) at
//! 16, 24 and 48 kHz with the default 250 ms tail and post-filter, on a converged filter.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use voxwire_audio::{EchoCanceller, EchoConfig};

fn signal(n: usize, seed: usize) -> Vec<i16> {
    (0..n).map(|i| (((i * 7919 + seed * 104_729) % 8192) as i16) - 4096).collect()
}

fn aec(c: &mut Criterion) {
    let mut g = c.benchmark_group("aec_10ms");
    for rate in [16_000u32, 24_000, 48_000] {
        let n = rate as usize / 100;
        g.throughput(Throughput::Elements(n as u64));
        let mut aec = EchoCanceller::new(EchoConfig { rate_hz: rate, ..EchoConfig::default() }).unwrap();
        let far = signal(n * 100, 1);
        let mic: Vec<i16> = far.iter().map(|v| v / 2).collect();
        let mut out = vec![0i16; n];
        for (m, r) in mic.chunks(n).zip(far.chunks(n)) {
            aec.process(m, r, &mut out).unwrap();
        }
        let mut k = 0;
        g.bench_function(format!("{}k", rate / 1000), |b| {
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
