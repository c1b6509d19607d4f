//! Criterion benches of the output path: the SPSC ring and the playback clock, in the shape a
//! session drives them (24 kHz: a 20 ms network chunk in, two 10 ms device buffers out, with
//! 200 ms of audio buffered so the indices wrap), and the cost of an interruption.

use std::hint::black_box;
use std::num::NonZeroU32;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use voxwire_audio::playback::PlaybackClock;
use voxwire_audio::{ring, Pcm};

const CHUNK_20MS: usize = 480;
const BUFFER_10MS: usize = 240;
const BACKLOG_200MS: usize = 4800;
const CAPACITY: usize = 24_000;

fn signal(n: usize) -> Vec<i16> {
    (0..n).map(|i| ((i * 7919) % 65536) as u16 as i16).collect()
}

fn ring_round_trip(c: &mut Criterion) {
    let mut g = c.benchmark_group("ring_24k");
    g.throughput(Throughput::Elements(CHUNK_20MS as u64));
    let chunk = signal(CHUNK_20MS);
    let bytes: Vec<u8> = chunk.iter().flat_map(|s| s.to_le_bytes()).collect();

    let (mut p, mut cons) = ring::channel(CAPACITY).unwrap();
    p.push(&signal(BACKLOG_200MS));
    let mut out = [0i16; BUFFER_10MS];
    g.bench_function("push_20ms_then_pop_2x10ms", |b| {
        b.iter(|| {
            p.push(black_box(&chunk));
            cons.pop_or_silence(&mut out);
            cons.pop_or_silence(&mut out);
            black_box(&out);
        })
    });
    g.bench_function("push_20ms_le_bytes_then_pop_2x10ms", |b| {
        let pcm = Pcm::from_le_bytes(&bytes).unwrap();
        b.iter(|| {
            p.push_pcm(black_box(pcm));
            cons.pop_or_silence(&mut out);
            cons.pop_or_silence(&mut out);
            black_box(&out);
        })
    });

    let (p, mut cons) = ring::channel(CAPACITY).unwrap();
    let mut clock = PlaybackClock::new(p, 24_000).unwrap();
    let rate = NonZeroU32::new(24_000).unwrap();
    clock.push("item_backlog", 0, rate, Pcm::Samples(&signal(BACKLOG_200MS)));
    g.bench_function("clock_push_20ms_then_pop_2x10ms", |b| {
        b.iter(|| {
            clock.push("item_backlog", 0, rate, Pcm::Samples(black_box(&chunk)));
            cons.pop_or_silence(&mut out);
            cons.pop_or_silence(&mut out);
            black_box(&out);
        })
    });
    g.finish();
}

fn interrupt(c: &mut Criterion) {
    // Queue three items (200 ms), play 30 ms, interrupt: what a barge-in costs.
    let (p, mut cons) = ring::channel(CAPACITY).unwrap();
    let mut clock = PlaybackClock::new(p, 24_000).unwrap();
    let rate = NonZeroU32::new(24_000).unwrap();
    let chunk = signal(1600);
    let mut out = [0i16; 720];
    c.bench_function("clock_queue_3_items_play_30ms_interrupt", |b| {
        b.iter(|| {
            for id in ["item_a", "item_b", "item_c"] {
                clock.push(id, 0, rate, Pcm::Samples(&chunk));
            }
            cons.pop(&mut out);
            black_box(clock.interrupt())
        })
    });
}

criterion_group!(benches, ring_round_trip, interrupt);
criterion_main!(benches);
