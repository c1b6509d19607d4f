//! Criterion benches of G.711: one 20 ms chunk at 8 kHz (160 samples), each way.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use voxwire_audio::{g711, Pcm};

fn g711_20ms(c: &mut Criterion) {
    let pcm: Vec<i16> = (0..160).map(|i| ((i * 7919) % 65536) as u16 as i16).collect();
    let mut codes = [0u8; 160];
    let mut back = [0i16; 160];
    let mut g = c.benchmark_group("g711_8k_20ms");
    g.throughput(Throughput::Elements(160));
    g.bench_function("ulaw_encode", |b| {
        b.iter(|| g711::ulaw_encode(Pcm::Samples(black_box(&pcm)), &mut codes))
    });
    g.bench_function("alaw_encode", |b| {
        b.iter(|| g711::alaw_encode(Pcm::Samples(black_box(&pcm)), &mut codes))
    });
    g.bench_function("ulaw_decode", |b| b.iter(|| g711::ulaw_decode(black_box(&codes), &mut back)));
    g.bench_function("alaw_decode", |b| b.iter(|| g711::alaw_decode(black_box(&codes), &mut back)));
    g.finish();
}

criterion_group!(benches, g711_20ms);
criterion_main!(benches);
