//! Criterion benches of the audio core: 20 ms streaming chunks through the resampler.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use voxwire_audio::{Pcm, Quality, Resampler};

const PAIRS: [(u32, u32); 6] = [
    (48_000, 24_000),
    (44_100, 24_000),
    (16_000, 24_000),
    (24_000, 48_000),
    (24_000, 16_000),
    (8_000, 24_000),
];

fn signal(n: usize) -> Vec<i16> {
    // A deterministic mix of tones; content does not change the cost, only realism.
    (0..n)
        .map(|i| {
            let t = i as f64;
            (8000.0 * (t * 0.0123).sin() + 4000.0 * (t * 0.311).sin()) as i16
        })
        .collect()
}

fn resample_20ms(c: &mut Criterion) {
    let mut g = c.benchmark_group("resample_20ms_chunk");
    for (a, b) in PAIRS {
        for q in [Quality::Hq, Quality::Fast] {
            let chunk = (a / 50) as usize;
            let input = signal(chunk);
            let mut r = Resampler::new(a, b, q).unwrap();
            let mut out = vec![0i16; chunk * 4 + 16];
            g.throughput(Throughput::Elements(chunk as u64));
            g.bench_with_input(BenchmarkId::new(q.name(), format!("{a}->{b}")), &input, |bch, inp| {
                bch.iter(|| r.process_into(Pcm::Samples(inp), &mut out).unwrap())
            });
        }
    }
    g.finish();
}

criterion_group!(benches, resample_20ms);
criterion_main!(benches);
