//! The SPSC ring against a `VecDeque` model (proptest), and with its halves on two threads.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// The position `v` denotes, given the last position seen.
fn position_after(last: Option<u64>, v: i16) -> u64 {
    let next = last.map_or(0, |l| l + 1);
    next + u64::from((v as u16).wrapping_sub(next as u16))
}

/// Run a producer thread and a consumer thread over one ring. The producer writes positions
/// `0..total` (as [`value`]s) in irregular chunks and, when `discard_every` is set, discards
/// the unread audio every that many chunks. Returns the positions the consumer got, in order,
/// and every discard.
fn run_two_threads(capacity: usize, total: u64, discard_every: Option<usize>) -> (Vec<u64>, Vec<(Discarded, u64)>) {
    let (mut p, mut c) = ring::channel(capacity).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let consumer = {
        let done = Arc::clone(&done);
        thread::spawn(move || {
            let mut rng = Lcg(7);
            let mut buf = vec![0i16; capacity + 3];
            let mut got = Vec::new();
            loop {
                // Read `done` before popping: if it was set, this pop sees everything pushed.
                let finished = done.load(Ordering::Acquire);
                let want = 1 + rng.below(buf.len() as u64);
                let n = c.pop(&mut buf[..want]);
                for &v in &buf[..n] {
                    let pos = position_after(got.last().copied(), v);
                    got.push(pos);
                }
                if n == 0 {
                    if finished {
                        return got;
                    }
                    thread::yield_now();
                }
            }
        })
    };
    let mut rng = Lcg(11);
    let mut discards = Vec::new();
    let mut pos = 0u64;
    let mut chunk = Vec::new();
    let mut chunks = 0usize;
    while pos < total {
        let len = (1 + rng.below(capacity as u64 + 5)).min((total - pos) as usize);
        chunk.clear();
        chunk.extend((pos..pos + len as u64).map(value));
        let mut sent = 0;
        while sent < len {
            let n = p.push(&chunk[sent..]);
            sent += n;
            if n == 0 {
                thread::yield_now();
            }
        }
        pos += len as u64;
        chunks += 1;
        if discard_every.is_some_and(|k| chunks % k == 0) {
            discards.push((p.discard_unread(), pos));
        }
    }
    done.store(true, Ordering::Release);
    (consumer.join().unwrap(), discards)
}

#[test]
fn two_threads_every_sample_arrives_once_in_order() {
    let total = 3_000_000;
    // An odd capacity so that chunk boundaries fall everywhere relative to the wrap point.
    let (got, _) = run_two_threads(257, total, None);
    assert_eq!(got.len() as u64, total);
    assert!(got.iter().enumerate().all(|(i, &pos)| pos == i as u64), "a sample was lost, repeated or torn");
}

#[test]
fn two_threads_discard_drops_exactly_what_was_not_yet_read() {
    let total = 6_000_000;
    let (got, discards) = run_two_threads(4099, total, Some(1));
    assert!(discards.len() > 2000);
    // Exactness: the consumer got every position except those each discard reported dropped,
    // i.e. exactly `consumed_samples .. tail` of each discard and nothing else.
    let mut expected = Vec::with_capacity(got.len());
    let mut next = 0u64;
    for (d, tail) in &discards {
        assert_eq!(d.consumed_samples + d.dropped_samples, *tail);
        expected.extend(next..d.consumed_samples);
        next = *tail;
    }
    expected.extend(next..total);
    assert_eq!(got.len(), expected.len());
    let first_bad = got.iter().zip(&expected).position(|(g, e)| g != e);
    assert_eq!(first_bad, None, "consumer and discards disagree about what was played");
    // Concurrency actually happened: some discards dropped audio, some found the ring drained.
    assert!(discards.iter().any(|(d, _)| d.dropped_samples > 0));
    eprintln!("RETRIES {}", voxwire_audio::ring::RETRIES.load(Ordering::Relaxed));
}

#[test]
fn tmp_race_probe() {
    let (mut p, mut c) = ring::channel(8192).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let d2 = Arc::clone(&done);
    let t = thread::spawn(move || {
        let mut buf = vec![0i16; 8192];
        let mut n = 0u64;
        while !d2.load(Ordering::Relaxed) { n += c.pop(&mut buf) as u64; }
        n
    });
    let chunk = vec![1i16; 4096];
    for _ in 0..300_000 { p.push(&chunk); p.discard_unread(); }
    done.store(true, Ordering::Relaxed);
    let n = t.join().unwrap();
    eprintln!("popped {n} RETRIES {}", voxwire_audio::ring::RETRIES.load(Ordering::Relaxed));
}
