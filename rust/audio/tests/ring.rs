//! The SPSC ring against a `VecDeque` model (proptest), and with its halves on two threads.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

use proptest::prelude::*;
use voxwire_audio::ring::{self, Discarded};

#[derive(Debug, Clone)]
enum Op {
    Push(Vec<i16>),
    Pop(usize),
    PopOrSilence(usize),
    Clear,
    Discard,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => prop::collection::vec(any::<i16>(), 0..40).prop_map(Op::Push),
        3 => (0usize..40).prop_map(Op::Pop),
        2 => (0usize..40).prop_map(Op::PopOrSilence),
        1 => Just(Op::Clear),
        1 => Just(Op::Discard),
    ]
}

/// What the ring should do, written the obvious way.
struct Model {
    capacity: usize,
    queue: VecDeque<i16>,
    pushed: u64,
    consumed: u64,
    /// Where the consumer last finished reading: space is reclaimed from here (see ring docs).
    released: u64,
    overrun: u64,
    underrun: u64,
    dropped: u64,
}

impl Model {
    fn writable(&self) -> usize {
        self.capacity - (self.pushed - self.released) as usize
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn ring_matches_a_model(capacity in 1usize..48, ops in prop::collection::vec(op(), 1..80)) {
        let (mut p, mut c) = ring::channel(capacity).unwrap();
        let mon = p.monitor();
        let mut m = Model {
            capacity, queue: VecDeque::new(), pushed: 0, consumed: 0, released: 0,
            overrun: 0, underrun: 0, dropped: 0,
        };
        for op in ops {
            match op {
                Op::Push(v) => {
                    let n = v.len().min(m.writable());
                    prop_assert_eq!(p.push(&v), n);
                    m.queue.extend(&v[..n]);
                    m.pushed += n as u64;
                    m.overrun += (v.len() - n) as u64;
                }
                Op::Pop(k) | Op::PopOrSilence(k) => {
                    let silence = matches!(op, Op::PopOrSilence(_));
                    let mut out = vec![i16::MIN + 7; k];
                    let got = if silence { c.pop_or_silence(&mut out) } else { c.pop(&mut out) };
                    let n = k.min(m.queue.len());
                    prop_assert_eq!(got, n);
                    let expected: Vec<i16> = m.queue.drain(..n).collect();
                    prop_assert_eq!(&out[..n], &expected[..]);
                    // The rest is silence for a device callback, untouched for a plain pop.
                    let rest = if silence { 0 } else { i16::MIN + 7 };
                    prop_assert!(out[n..].iter().all(|&s| s == rest));
                    if silence {
                        m.underrun += (k - n) as u64;
                    }
                    m.consumed += n as u64;
                    m.released = m.consumed;
                }
                Op::Clear => {
                    prop_assert_eq!(c.clear(), m.queue.len());
                    m.dropped += m.queue.len() as u64;
                    m.consumed += m.queue.len() as u64;
                    m.released = m.consumed;
                    m.queue.clear();
                }
                Op::Discard => {
                    let d = p.discard_unread();
                    prop_assert_eq!(d, Discarded {
                        consumed_samples: m.consumed,
                        dropped_samples: m.queue.len() as u64,
                    });
                    m.dropped += m.queue.len() as u64;
                    m.consumed += m.queue.len() as u64;
                    m.queue.clear();
                }
            }
            prop_assert_eq!(c.readable(), m.queue.len());
            prop_assert_eq!(p.readable(), m.queue.len());
            prop_assert_eq!(mon.readable(), m.queue.len());
            prop_assert_eq!(p.writable(), m.writable());
            prop_assert_eq!(mon.writable(), m.writable());
            prop_assert_eq!(p.pushed_samples(), m.pushed);
            prop_assert_eq!(mon.pushed_samples(), m.pushed);
            prop_assert_eq!(c.consumed_samples(), m.consumed);
            prop_assert_eq!(p.consumed_samples(), m.consumed);
            prop_assert_eq!(mon.overrun_samples(), m.overrun);
            prop_assert_eq!(mon.underrun_samples(), m.underrun);
            prop_assert_eq!(mon.dropped_samples(), m.dropped);
        }
    }
}

/// Tiny deterministic generator for chunk sizes (the threads must not share one).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n) as usize
    }
}

/// Sample value for ring position `pos`: the position's low 16 bits, so a reader can tell
/// exactly which position it got (positions never jump by 65536 or more here).
fn value(pos: u64) -> i16 {
    pos as u16 as i16
}

/// Append `start .. start + n` to a list of disjoint, increasing ranges, merging adjacent ones.
fn add_range(ranges: &mut Vec<(u64, u64)>, start: u64, n: u64) {
    match ranges.last_mut() {
        Some(last) if last.1 == start => last.1 += n,
        _ if n > 0 => ranges.push((start, start + n)),
        _ => {}
    }
}

/// The consumer's check of one pop: it is one run of consecutive positions with the right
/// values (nothing torn, stale or overwritten). Adds the run to `got`.
fn check_run(got: &mut Vec<(u64, u64)>, run: &[i16]) {
    // Positions only move forward, by less than 65536 between pops.
    let next = got.last().map_or(0, |r| r.1);
    let start = next + u64::from((run[0] as u16).wrapping_sub(next as u16));
    let bad = run.iter().zip(start..).position(|(&v, pos)| v != value(pos));
    assert_eq!(bad, None, "pop at position {start} returned a torn or stale sample");
    add_range(got, start, run.len() as u64);
}

#[test]
fn two_threads_every_sample_arrives_once_in_order() {
    const TOTAL: u64 = 4_000_000;
    // An odd capacity so that chunk boundaries fall everywhere relative to the wrap point.
    const CAPACITY: usize = 257;
    let (mut p, mut c) = ring::channel(CAPACITY).unwrap();
    let consumer = thread::spawn(move || {
        let mut rng = Lcg(7);
        let mut buf = vec![0i16; CAPACITY + 3];
        let mut got = Vec::new();
        while got.last().map_or(0, |r: &(u64, u64)| r.1) < TOTAL {
            let want = 1 + rng.below(buf.len() as u64);
            let n = c.pop(&mut buf[..want]);
            if n > 0 {
                check_run(&mut got, &buf[..n]);
            } else {
                thread::yield_now();
            }
        }
        got
    });
    let mut rng = Lcg(11);
    let mut chunk = Vec::new();
    while p.pushed_samples() < TOTAL {
        // Irregular chunks; what a full ring refuses is pushed again (at its new position).
        let tail = p.pushed_samples();
        let len = (1 + rng.below(CAPACITY as u64 + 40)).min((TOTAL - tail) as usize);
        chunk.clear();
        chunk.extend((tail..tail + len as u64).map(value));
        if p.push(&chunk) == 0 {
            thread::yield_now();
        }
    }
    assert_eq!(consumer.join().unwrap(), [(0, TOTAL)], "a sample was lost or repeated");
}

#[test]
fn two_threads_discard_drops_exactly_what_was_not_yet_read() {
    // The producer pushes, waits a random moment, and discards, while the consumer pops in a
    // tight loop: discards land before, after and *during* pops. The last case (in measurements,
    // hundreds of times per run) is what the compare-and-swap in `pop` exists for.
    const CAPACITY: usize = 8192;
    let (mut p, mut c) = ring::channel(CAPACITY).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let popped = Arc::new(AtomicU64::new(0));
    let consumer = {
        let (done, popped) = (Arc::clone(&done), Arc::clone(&popped));
        thread::spawn(move || {
            let mut buf = vec![0i16; CAPACITY];
            let mut got: Vec<(u64, u64)> = Vec::new();
            loop {
                let finished = done.load(Ordering::Acquire);
                let n = c.pop(&mut buf);
                if n > 0 {
                    // Discards may skip far ahead, so the 16-bit value alone is ambiguous. Our
                    // pop started at most `CAPACITY` before the current head (the producer
                    // cannot get further ahead than that), which pins it down.
                    let bound = c.consumed_samples() - n as u64;
                    let start = bound - u64::from((bound as u16).wrapping_sub(buf[0] as u16));
                    let bad = buf[..n].iter().zip(start..).position(|(&v, pos)| v != value(pos));
                    assert_eq!(bad, None, "pop at position {start} returned a torn or stale sample");
                    add_range(&mut got, start, n as u64);
                    popped.fetch_add(n as u64, Ordering::Release);
                } else if finished {
                    return got;
                }
            }
        })
    };
    let mut rng = Lcg(3);
    let mut discards = Vec::new();
    let mut chunk = vec![0i16; 1500];
    for _ in 0..30_000 {
        let tail = p.pushed_samples();
        if p.writable() >= chunk.len() {
            for (s, pos) in chunk.iter_mut().zip(tail..) {
                *s = value(pos);
            }
            assert_eq!(p.push(&chunk), chunk.len());
        }
        for _ in 0..rng.below(400) {
            std::hint::spin_loop();
        }
        discards.push((p.discard_unread(), p.pushed_samples()));
    }
    if popped.load(Ordering::Acquire) == 0 {
        // The consumer lost every race. Natively it wins hundreds; under emulation (the aarch64
        // CI run, qemu-user) it can be too slow to. Give it one chunk with time to read it, so
        // that both outcomes are still checked below.
        // (The space a discard frees is writable again once the consumer next pops.)
        let waited = std::time::Instant::now();
        while p.writable() < chunk.len() && waited.elapsed().as_secs() < 20 {
            thread::yield_now();
        }
        let tail = p.pushed_samples();
        for (s, pos) in chunk.iter_mut().zip(tail..) {
            *s = value(pos);
        }
        assert_eq!(p.push(&chunk), chunk.len());
        while popped.load(Ordering::Acquire) == 0 && waited.elapsed().as_secs() < 20 {
            thread::yield_now();
        }
        discards.push((p.discard_unread(), p.pushed_samples()));
    }
    let total = p.pushed_samples();
    done.store(true, Ordering::Release);
    let got = consumer.join().unwrap();

    // Exactness: the consumer got every position except those each discard reported dropped,
    // i.e. exactly `consumed_samples .. tail` of each discard and nothing else.
    let mut expected = Vec::new();
    let mut next = 0u64;
    for (d, tail) in &discards {
        assert_eq!(d.consumed_samples + d.dropped_samples, *tail);
        add_range(&mut expected, next, d.consumed_samples - next);
        next = *tail;
    }
    add_range(&mut expected, next, total - next);
    assert_eq!(got, expected, "consumer and discards disagree about what was played");
    // Both outcomes of the race happened: some discards dropped audio, and some audio played.
    assert!(discards.iter().any(|(d, _)| d.dropped_samples > 0));
    assert!(!got.is_empty());
}
