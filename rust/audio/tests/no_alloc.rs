//! The hot paths allocate nothing: the resampler's process/flush for every preset and common
//! conversion, ring push/pop, and the playback clock queueing more audio of an item it already
//! tracks. Counted with a global allocator wrapper; this binary has a single test (which runs
//! the checks one after another), so nothing else allocates while it counts.

use std::num::NonZeroU32;

use voxwire_audio::playback::PlaybackClock;
use voxwire_audio::{ring, Pcm, Quality, Resampler};

#[path = "common/counting.rs"]
mod counting;

#[global_allocator]
static GLOBAL: counting::Counting = counting::Counting;

#[test]
fn hot_paths_do_not_allocate() {
    process_and_flush_do_not_allocate();
    push_pop_and_clock_push_do_not_allocate();
}

fn push_pop_and_clock_push_do_not_allocate() {
    let chunk: Vec<i16> = (0..480).map(|i| (i * 37 % 20_000) as i16).collect();
    let bytes: Vec<u8> = chunk.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut out = vec![0i16; 240];
    let rate = NonZeroU32::new(24_000).unwrap();

    let (mut p, mut c) = ring::channel(1500).unwrap();
    let (clock_p, mut clock_c) = ring::channel(4800).unwrap();
    let mut clock = PlaybackClock::new(clock_p, 24_000).unwrap();
    clock.push("item_a", 0, rate, Pcm::Samples(&chunk)); // the item's record: allocated once

    let before = counting::allocations();
    for i in 0..2000 {
        // Wraps the storage many times, meets full (push refused) and empty (silence).
        p.push(&chunk);
        p.push_pcm(Pcm::LeBytes(&bytes));
        c.pop(&mut out);
        if i % 7 == 0 {
            c.clear();
        }
        c.pop_or_silence(&mut out);
        if i % 11 == 0 {
            p.discard_unread();
        }
        clock.push("item_a", 0, rate, Pcm::LeBytes(&bytes));
        clock_c.pop_or_silence(&mut out);
        clock_c.pop_or_silence(&mut out);
        clock.drop_finished();
    }
    assert_eq!(counting::allocations(), before, "the hot path allocated");
    assert!(p.monitor().overrun_samples() > 0 && c.monitor().underrun_samples() > 0);
    assert_eq!(clock.played("item_a", 0).unwrap().queued_samples, 480 * 2001);
}

fn process_and_flush_do_not_allocate() {
    for (a, b) in [
        (48_000, 24_000),
        (44_100, 24_000),
        (16_000, 24_000),
        (24_000, 48_000),
        (24_000, 16_000),
        (8_000, 24_000),
    ] {
        for q in [Quality::Fast, Quality::Hq, Quality::Vhq] {
            let mut r = Resampler::new(a, b, q).unwrap();
            let chunk: Vec<i16> = (0..a / 50).map(|i| (i * 37 % 20_000) as i16).collect();
            let bytes: Vec<u8> = chunk.iter().flat_map(|v| v.to_le_bytes()).collect();
            let mut out = vec![0i16; 8192];
            let before = counting::allocations();
            for _ in 0..200 {
                r.process_into(Pcm::Samples(&chunk), &mut out).unwrap();
                r.process_into(Pcm::LeBytes(&bytes), &mut out).unwrap();
            }
            r.flush_into(&mut out).unwrap();
            assert_eq!(counting::allocations(), before, "{a}->{b} {q:?} allocated");
        }
    }
}
