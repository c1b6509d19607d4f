//! The playback clock against a per-item model (proptest), at several rates, and with the
//! consumer on another thread while the producer interrupts.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use proptest::prelude::*;
use voxwire_audio::playback::{ItemPlayback, PlaybackClock};
use voxwire_audio::ring;
use voxwire_audio::Pcm;

fn hz(v: u32) -> NonZeroU32 {
    NonZeroU32::new(v).unwrap()
}

fn clock(capacity: usize, ring_rate_hz: u32) -> (PlaybackClock, ring::Consumer) {
    let (p, c) = ring::channel(capacity).unwrap();
    (PlaybackClock::new(p, ring_rate_hz).unwrap(), c)
}

#[test]
fn g711_rate_8khz_end_to_end() {
    // A telephony call: the device runs at 8 kHz like the G.711 audio.
    let (mut clk, mut c) = clock(8000, 8000);
    clk.push("item_a", 0, hz(8000), Pcm::Samples(&[5; 1600])); // 200 ms
    c.pop(&mut [0; 1000]);
    let [a] = clk.interrupt().try_into().unwrap();
    assert_eq!((a.played_samples, a.played_ms, a.queued_samples, a.rate_hz), (1000, 125, 1600, 8000));
    // 1 sample short of a millisecond rounds down.
    clk.push("item_b", 0, hz(8000), Pcm::Samples(&[5; 100]));
    c.pop(&mut [0; 7]);
    let [b] = clk.interrupt().try_into().unwrap();
    assert_eq!((b.played_samples, b.played_ms, b.started), (7, 0, true));
}

#[test]
fn items_at_24khz_on_a_48khz_device_are_reported_at_24khz() {
    let (mut clk, mut c) = clock(48_000, 48_000);
    // 24 kHz item audio resampled 2x by the session before queueing.
    clk.push("a", 0, hz(24_000), Pcm::Samples(&[1; 9600]));
    c.pop(&mut [0; 4801]);
    let a = clk.played("a", 0).unwrap();
    // 4801 ring samples = 2400.5 item samples -> 2400 (100 ms); queued 9600 ring = 4800 item.
    assert_eq!((a.played_samples, a.played_ms, a.queued_samples), (2400, 100, 4800));
    c.pop(&mut [0; 46]);
    // 4847 ring samples = 2423 item samples = 100.958 ms -> 100.
    assert_eq!(clk.played("a", 0).unwrap().played_ms, 100);
    c.pop(&mut [0; 1]);
    assert_eq!(clk.played("a", 0).unwrap().played_ms, 101);
}

#[test]
fn less_than_one_item_sample_played_is_not_started() {
    let (mut clk, mut c) = clock(100, 48_000);
    clk.push("a", 0, hz(24_000), Pcm::Samples(&[1; 10]));
    c.pop(&mut [0; 1]);
    // Half a sample at the item's rate: nothing to truncate at, so reported as not started.
    let a = clk.played("a", 0).unwrap();
    assert_eq!((a.played_samples, a.started), (0, false));
    c.pop(&mut [0; 1]);
    let a = clk.played("a", 0).unwrap();
    assert_eq!((a.played_samples, a.started), (1, true));
}

#[test]
fn items_at_8khz_on_a_24khz_device() {
    let (mut clk, mut c) = clock(24_000, 24_000);
    clk.push("g711", 0, hz(8000), Pcm::Samples(&[1; 4800]));
    c.pop(&mut [0; 2402]);
    let r = clk.played("g711", 0).unwrap();
    // 2402 / 3 = 800.67 -> 800 samples at 8 kHz = 100 ms.
    assert_eq!((r.played_samples, r.played_ms, r.queued_samples, r.rate_hz), (800, 100, 1600, 8000));
}

#[test]
fn back_to_back_and_zero_length_items() {
    let (mut clk, mut c) = clock(1000, 24_000);
    clk.push("a", 0, hz(24_000), Pcm::Samples(&[1; 100]));
    clk.push("empty_played", 0, hz(24_000), Pcm::Samples(&[])); // at position 100
    clk.push("b", 0, hz(24_000), Pcm::Samples(&[2; 100]));
    clk.push("b", 0, hz(24_000), Pcm::Samples(&[2; 100])); // same item: extends it
    clk.push("empty_waiting", 0, hz(24_000), Pcm::Samples(&[])); // at position 300
    clk.push("c", 1, hz(24_000), Pcm::Samples(&[3; 50]));
    assert_eq!(c.pop(&mut [0; 150]), 150);

    let items = clk.items();
    let ids: Vec<&str> = items.iter().map(|r| r.item_id.as_str()).collect();
    assert_eq!(ids, ["a", "empty_played", "b", "empty_waiting", "c"]);

    let got = clk.interrupt();
    // "a" finished before "b" started; the zero-length item between them has nothing left to
    // play. "b" was cut at 50 of 200; the zero-length item after it and "c" never started.
    let summary: Vec<(&str, u64, u64, bool)> =
        got.iter().map(|r| (r.item_id.as_str(), r.played_samples, r.queued_samples, r.started)).collect();
    assert_eq!(summary, [("b", 50, 200, true), ("empty_waiting", 0, 0, false), ("c", 0, 50, false)]);
    assert_eq!(got[2].content_index, 1);
    // Everything unplayed was dropped; the ring is free again after the consumer's next pop.
    assert_eq!(clk.buffered_samples(), 0);
    c.pop(&mut []);
    assert_eq!(clk.producer().writable(), 1000);
}

#[test]
fn a_trailing_zero_length_item_is_reported_as_not_started() {
    let (mut clk, mut c) = clock(100, 24_000);
    clk.push("a", 0, hz(24_000), Pcm::Samples(&[1; 10]));
    clk.push("z", 0, hz(24_000), Pcm::Samples(&[]));
    c.pop(&mut [0; 10]);
    let got = clk.interrupt();
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].item_id.as_str(), got[0].started, got[0].queued_samples), ("z", false, 0));
}

#[test]
fn a_full_ring_tags_only_what_it_accepted() {
    let (mut clk, mut c) = clock(64, 24_000);
    assert_eq!(clk.push("a", 0, hz(24_000), Pcm::Samples(&[1; 100])), 64);
    assert_eq!(clk.played("a", 0).unwrap().queued_samples, 64);
    assert_eq!(clk.producer().monitor().overrun_samples(), 36);
    c.pop(&mut [0; 64]);
    assert_eq!(clk.push("a", 0, hz(24_000), Pcm::Samples(&[1; 36])), 36);
    let a = clk.played("a", 0).unwrap();
    assert_eq!((a.played_samples, a.queued_samples), (64, 100));
}

// ---- model-based ------------------------------------------------------------------------------

const RING_RATES: [u32; 3] = [8000, 24_000, 48_000];
const ITEM_RATES: [u32; 4] = [8000, 16_000, 24_000, 48_000];

#[derive(Debug, Clone)]
enum Op {
    /// Push `len` samples to the current item, or to a new item (content index, rate choice).
    Push {
        new_item: Option<(u32, usize)>,
        len: usize,
    },
    Pop(usize),
    Interrupt,
    DropFinished,
    Query(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (prop::option::of((0u32..3, 0usize..ITEM_RATES.len())), 0usize..60)
            .prop_map(|(new_item, len)| Op::Push { new_item, len }),
        4 => (0usize..80).prop_map(Op::Pop),
        1 => Just(Op::Interrupt),
        1 => Just(Op::DropFinished),
        2 => (0usize..12).prop_map(Op::Query),
    ]
}

/// One item as the model sees it: ring samples queued and played, and where it sits.
#[derive(Debug)]
struct ModelItem {
    id: String,
    content_index: u32,
    rate_hz: u32,
    queued: u64,
    played: u64,
    /// Ring position after the item's last sample (for a zero-length item: where it was pushed).
    end: u64,
    tracked: bool,
}

struct Model {
    capacity: u64,
    ring_rate_hz: u32,
    /// The item each queued ring sample belongs to.
    queue: std::collections::VecDeque<usize>,
    items: Vec<ModelItem>,
    current: Option<usize>,
    pushed: u64,
    consumed: u64,
    released: u64,
}

impl Model {
    fn report(&self, i: usize) -> ItemPlayback {
        let it = &self.items[i];
        let to_item = |ring_samples: u64| ring_samples * u64::from(it.rate_hz) / u64::from(self.ring_rate_hz);
        let played_samples = to_item(it.played);
        ItemPlayback {
            item_id: it.id.clone(),
            content_index: it.content_index,
            rate_hz: it.rate_hz,
            played_samples,
            played_ms: played_samples * 1000 / u64::from(it.rate_hz),
            queued_samples: to_item(it.queued),
            started: played_samples > 0,
        }
    }

    fn tracked(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.items.len()).filter(|&i| self.items[i].tracked)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn clock_matches_a_model(
        capacity in 1u64..120,
        ring_rate in 0usize..RING_RATES.len(),
        ops in prop::collection::vec(op(), 1..60),
    ) {
        let ring_rate_hz = RING_RATES[ring_rate];
        let (mut clk, mut c) = clock(capacity as usize, ring_rate_hz);
        let mut m = Model {
            capacity, ring_rate_hz, queue: Default::default(), items: Vec::new(), current: None,
            pushed: 0, consumed: 0, released: 0,
        };
        for op in ops {
            match op {
                Op::Push { new_item, len } => {
                    let i = match (new_item, m.current) {
                        (None, Some(i)) => i,
                        (new_item, _) => {
                            let (content_index, rate) = new_item.unwrap_or((0, 0));
                            m.items.push(ModelItem {
                                id: format!("item_{}", m.items.len()),
                                content_index,
                                rate_hz: ITEM_RATES[rate],
                                queued: 0, played: 0, end: m.pushed, tracked: true,
                            });
                            m.current = Some(m.items.len() - 1);
                            m.items.len() - 1
                        }
                    };
                    // Samples carry their item's number so the pops can be checked against it.
                    let samples = vec![i as i16; len];
                    let free = m.capacity - (m.pushed - m.released);
                    let n = (len as u64).min(free);
                    let it = &m.items[i];
                    let got = clk.push(&it.id, it.content_index, hz(it.rate_hz), Pcm::Samples(&samples));
                    prop_assert_eq!(got as u64, n);
                    m.queue.extend(std::iter::repeat_n(i, n as usize));
                    m.pushed += n;
                    let it = &mut m.items[i];
                    it.queued += n;
                    it.end = m.pushed;
                }
                Op::Pop(k) => {
                    let mut out = vec![-1i16; k];
                    let n = c.pop(&mut out);
                    prop_assert_eq!(n, k.min(m.queue.len()));
                    for &v in &out[..n] {
                        let i = m.queue.pop_front().unwrap();
                        prop_assert_eq!(v, i as i16);
                        m.items[i].played += 1;
                    }
                    m.consumed += n as u64;
                    m.released = m.consumed;
                }
                Op::Interrupt => {
                    let expected: Vec<ItemPlayback> = m
                        .tracked()
                        .filter(|&i| Some(i) == m.current || m.consumed < m.items[i].end)
                        .map(|i| m.report(i))
                        .collect();
                    prop_assert_eq!(clk.interrupt(), expected);
                    m.consumed += m.queue.len() as u64;
                    m.queue.clear();
                    for it in &mut m.items {
                        it.tracked = false;
                    }
                    m.current = None;
                }
                Op::DropFinished => {
                    let mut dropped = 0;
                    let tracked: Vec<usize> = m.tracked().collect();
                    for i in tracked {
                        if Some(i) == m.current || m.items[i].end > m.consumed {
                            break;
                        }
                        m.items[i].tracked = false;
                        dropped += 1;
                    }
                    prop_assert_eq!(clk.drop_finished(), dropped);
                }
                Op::Query(i) => {
                    if let Some(it) = m.items.get(i) {
                        let expected = it.tracked.then(|| m.report(i));
                        prop_assert_eq!(clk.played(&it.id, it.content_index), expected);
                    }
                }
            }
            prop_assert_eq!(clk.buffered_samples(), m.queue.len());
            let expected: Vec<ItemPlayback> = m.tracked().map(|i| m.report(i)).collect();
            prop_assert_eq!(clk.items(), expected);
        }
    }
}

// ---- two threads ------------------------------------------------------------------------------

/// The device thread pops while the session thread queues items and interrupts at random
/// moments. Every interruption's report must match, to the sample, what the device thread got.
#[test]
fn interrupt_is_exact_while_the_consumer_runs_on_another_thread() {
    const ITEMS: usize = 3000;
    let (mut clk, mut c) = clock(2400, 24_000);
    let done = Arc::new(AtomicBool::new(false));
    let device = {
        let done = Arc::clone(&done);
        thread::spawn(move || {
            // Samples carry their item number (1-based); count what the device really played.
            let mut played = vec![0u64; ITEMS + 1];
            let mut buf = [0i16; 240];
            loop {
                let finished = done.load(Ordering::Acquire);
                let n = c.pop(&mut buf);
                for &v in &buf[..n] {
                    played[v as usize] += 1;
                }
                if n == 0 {
                    if finished {
                        return played;
                    }
                    thread::yield_now();
                }
            }
        })
    };

    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut rand = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut reported: HashMap<String, ItemPlayback> = HashMap::new();
    // queued[i]: samples of item i the ring accepted (index 0 unused: items count from 1).
    let mut queued = vec![0u64];
    for item in 1..=ITEMS {
        let id = format!("item_{item}");
        let chunk = vec![item as i16; 480];
        let mut accepted = 0;
        for _ in 0..1 + rand(6) {
            let mut sent = 0;
            while sent < chunk.len() {
                let n = clk.push(&id, 0, hz(24_000), Pcm::Samples(&chunk[sent..]));
                sent += n;
                accepted += n as u64;
                if n == 0 {
                    thread::yield_now();
                }
            }
        }
        queued.push(accepted);
        if rand(4) == 0 {
            for r in clk.interrupt() {
                reported.insert(r.item_id.clone(), r);
            }
        }
        if rand(8) == 0 {
            clk.drop_finished();
        }
    }
    done.store(true, Ordering::Release);
    let played = device.join().unwrap();

    assert!(reported.len() > 500, "the test must interrupt often");
    let mut partly = 0;
    for (item, (&played, &queued)) in played.iter().zip(&queued).enumerate().skip(1) {
        match reported.get(&format!("item_{item}")) {
            Some(r) => {
                assert_eq!(r.played_samples, played, "item {item}: report vs device");
                assert_eq!(r.queued_samples, queued);
                assert_eq!(r.started, played > 0);
                partly += usize::from(r.started && r.played_samples < r.queued_samples);
            }
            // Never cut: the device played all of it.
            None => assert_eq!(played, queued, "item {item} was not interrupted"),
        }
    }
    // The interesting case (cut in the middle while the device was playing) really happened.
    assert!(partly > 50, "only {partly} items were cut mid-play");
}
