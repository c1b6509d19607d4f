//! Lock-free single-producer single-consumer ring of PCM16 samples.
//!
//! [`channel`] makes a ring of a fixed capacity and splits it into a [`Producer`] (the network
//! side, which queues decoded audio) and a [`Consumer`] (the audio device callback, which takes
//! samples to play). The halves can live on different threads; neither ever blocks or allocates.
//! "Full" and "empty" are counts returned by [`Producer::push`] and [`Consumer::pop`], not errors.
//!
//! ## Positions
//!
//! Both ends are 64-bit positions counted from the ring's creation, never wrapped:
//!
//! * `tail` — samples written so far (only the producer moves it),
//! * `head` — samples consumed so far, played or discarded (moved by the consumer, and by
//!   [`Producer::discard_unread`]),
//! * `released` — the position below which the consumer no longer reads: it trails `head` while
//!   a pop is copying out, and is what the producer measures its free space against.
//!
//! Sample `p` lives in slot `p % capacity`. A 64-bit position cannot wrap in practice (at
//! 768 kHz it takes over 760,000 years), so `tail - head` is always the exact fill level, with
//! no "one slot kept empty" trick, and `head` doubles as the monotonic total-consumed counter
//! that the playback clock reads ([`Producer::consumed_samples`]).
//!
//! ## Who may drop queued audio
//!
//! * [`Consumer::clear`] — the consumer owns `head`, so it may always skip to the tail.
//! * [`Producer::discard_unread`] — the producer may also drop everything not yet read, which is
//!   what an interruption needs: the session (producer side) decides, while the device thread
//!   keeps popping. The producer moves `head` to its tail with an atomic read-modify-write, and
//!   the consumer commits each pop with a compare-and-swap from the `head` it started at. So the
//!   two are ordered: either the pop committed first (and its samples count as played, included
//!   in the position `discard_unread` returns), or the discard did, the pop's compare-and-swap
//!   fails, and the pop retries from the new head — the samples it had copied are never handed
//!   out. The position returned is therefore exactly what the consumer has taken. (A pop retries
//!   only when a discard landed during its copy, so it stays lock-free: it never waits for the
//!   producer.)
//!
//!   Memory safety does not rely on `head`: the producer only writes below `released + capacity`,
//!   and `released` is at most the start of any copy in progress, so a discard never lets the
//!   producer overwrite slots the consumer is still copying from. The space a discard frees
//!   becomes writable once the consumer next runs (any [`Consumer::pop`], even an empty one).
//!
//! ## What the listener has heard
//!
//! A sample handed to an audio device is not heard at once: it sits in the device's buffer for
//! the output latency. A consumer that knows this can report, with [`Consumer::report_heard`],
//! the ring position up to which the listener has really heard (at most what it consumed). The
//! position is kept as `heard + 1` in one atomic that only grows (`fetch_max`), 0 meaning "never
//! reported": then the heard position is the consumed one. The playback clock reads it
//! ([`Producer::heard_samples`]), so truncation points exclude audio still in the device buffer.
//!
//! ## Memory ordering
//!
//! The producer writes samples, then publishes `tail` with `Release`; the consumer loads `tail`
//! with `Acquire` before reading them. The consumer reads samples, then publishes `released` with
//! `Release`; the producer loads it with `Acquire` before overwriting those slots. Counters that
//! are only statistics (overrun, underrun, dropped) are `Relaxed`.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::ConfigError;
use crate::pcm::Pcm;

/// Make a ring holding up to `capacity_samples` samples and split it into its two halves.
///
/// Fails with [`ConfigError::InvalidCapacity`] for 0 or more than
/// [`MAX_CAPACITY_SAMPLES`](crate::MAX_CAPACITY_SAMPLES). The storage is allocated here, once.
pub fn channel(capacity_samples: usize) -> Result<(Producer, Consumer), ConfigError> {
    if capacity_samples == 0 || capacity_samples > crate::MAX_CAPACITY_SAMPLES {
        return Err(ConfigError::InvalidCapacity { value: capacity_samples });
    }
    let shared = Arc::new(Shared {
        buf: (0..capacity_samples).map(|_| UnsafeCell::new(0)).collect(),
        capacity: capacity_samples as u64,
        consumer: CachePadded(ConsumerSide {
            head: AtomicU64::new(0),
            released: AtomicU64::new(0),
            underrun: AtomicU64::new(0),
            heard_plus_one: AtomicU64::new(0),
        }),
        producer: CachePadded(ProducerSide {
            tail: AtomicU64::new(0),
            overrun: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }),
    });
    Ok((Producer { shared: Arc::clone(&shared), tail: 0 }, Consumer { shared }))
}

/// What [`Producer::discard_unread`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Discarded {
    /// Total samples the consumer had taken when the discard took effect (the `head` position
    /// before it moved). Everything before it was handed to the consumer; nothing after it will be.
    pub consumed_samples: u64,
    /// Samples that were queued but not yet read, and are now gone.
    pub dropped_samples: u64,
}

/// The writing half: queues samples. Owned by one thread at a time (`&mut self` methods).
#[derive(Debug)]
pub struct Producer {
    shared: Arc<Shared>,
    /// Our own copy of `tail`: only we move it, so there is no need to load it.
    tail: u64,
}

/// The reading half: takes samples to play. Owned by one thread at a time (`&mut self` methods).
#[derive(Debug)]
pub struct Consumer {
    shared: Arc<Shared>,
}

/// A read-only view of a ring's counters, for any thread (cheap to clone).
///
/// Values read while the halves are in use are snapshots that may be stale by the time they are
/// looked at, but each is a value the counter really had.
#[derive(Debug, Clone)]
pub struct RingMonitor {
    shared: Arc<Shared>,
}

impl Producer {
    /// Queue as many of `samples` as fit; returns how many were written (a prefix).
    ///
    /// Samples that do not fit are refused, not queued, and added to the overrun counter.
    pub fn push(&mut self, samples: &[i16]) -> usize {
        self.push_pcm(Pcm::Samples(samples))
    }

    /// [`push`](Self::push) for any PCM16 view (native samples or little-endian bytes).
    pub fn push_pcm(&mut self, pcm: Pcm<'_>) -> usize {
        let s = &*self.shared;
        let len = pcm.len();
        let free = self.free();
        let n = len.min(free);
        if n < len {
            s.producer.overrun.fetch_add((len - n) as u64, Ordering::Relaxed);
        }
        if n == 0 {
            return 0;
        }
        // SAFETY: the slots of positions `tail .. tail + n` are ours to write. The consumer reads
        // only positions in `released .. tail` (it never passes the tail we published, and no
        // read in progress starts below `released`, see the module docs), and
        // `tail + n <= released + capacity` by the choice of `n`, so these `n <= capacity`
        // consecutive positions map to slots disjoint from any the consumer may be reading.
        let (first, second) = unsafe { s.slots_mut(self.tail, n) };
        pcm.copy_to(0, first);
        pcm.copy_to(first.len(), second);
        self.tail += n as u64;
        s.producer.tail.store(self.tail, Ordering::Release);
        n
    }

    /// Drop every queued sample the consumer has not read yet; safe while the consumer pops.
    ///
    /// Returns the exact position the consumer had reached (see the module docs for why it is
    /// exact under concurrency) and how much was dropped. The freed space can be written again
    /// once the consumer next calls any pop or [`Consumer::clear`]; until then
    /// [`writable`](Self::writable) does not count it.
    pub fn discard_unread(&mut self) -> Discarded {
        let s = &*self.shared;
        // `head <= tail` always holds (the consumer never reads past the published tail), so
        // this moves `head` to our tail, and the value it had is what the consumer took.
        let before = s.consumer.head.fetch_max(self.tail, Ordering::AcqRel);
        let dropped = self.tail - before;
        s.producer.dropped.fetch_add(dropped, Ordering::Relaxed);
        Discarded { consumed_samples: before, dropped_samples: dropped }
    }

    /// Samples that can be pushed now without being refused.
    pub fn writable(&self) -> usize {
        self.free()
    }

    /// Samples queued and not yet consumed.
    pub fn readable(&self) -> usize {
        let head = self.shared.consumer.head.load(Ordering::Acquire);
        (self.tail - head) as usize
    }

    /// Total samples written since the ring was made.
    pub fn pushed_samples(&self) -> u64 {
        self.tail
    }

    /// Total samples consumed since the ring was made: popped, cleared or discarded.
    ///
    /// Monotonic. The playback clock compares it with the positions at which it queued audio.
    pub fn consumed_samples(&self) -> u64 {
        self.shared.consumer.head.load(Ordering::Acquire)
    }

    /// Total samples the listener has heard: the position last given to
    /// [`Consumer::report_heard`], capped by [`consumed_samples`](Self::consumed_samples); the
    /// consumed position itself if the consumer never reported one.
    pub fn heard_samples(&self) -> u64 {
        self.shared.heard_samples()
    }

    /// Capacity in samples.
    pub fn capacity(&self) -> usize {
        self.shared.capacity as usize
    }

    /// A read-only view of the counters for other threads.
    pub fn monitor(&self) -> RingMonitor {
        RingMonitor { shared: Arc::clone(&self.shared) }
    }

    fn free(&self) -> usize {
        let released = self.shared.consumer.released.load(Ordering::Acquire);
        // `released <= head <= tail` and `tail <= released + capacity` (we never write beyond),
        // so this neither underflows nor exceeds the capacity.
        (self.shared.capacity - (self.tail - released)) as usize
    }
}

impl Consumer {
    /// Take up to `out.len()` samples into the front of `out`; returns how many were taken.
    ///
    /// An empty ring gives 0; the rest of `out` is left as it was. Every call, even with an
    /// empty `out`, also lets the producer reuse space freed by [`Producer::discard_unread`].
    pub fn pop(&mut self, out: &mut [i16]) -> usize {
        let s = &*self.shared;
        let mut head = s.consumer.head.load(Ordering::Acquire);
        loop {
            let tail = s.producer.tail.load(Ordering::Acquire);
            let n = ((tail - head) as usize).min(out.len());
            if n > 0 {
                // SAFETY: positions `head .. head + n` were published by the producer (`tail`
                // loaded with Acquire above, so their writes are visible) and it cannot overwrite
                // them: it writes only below `released + capacity`, and `released` (last stored
                // by us) is at most `head`; the producer's discard may move `head` but never
                // `released`, so the slots stay ours until we store a larger `released`.
                let (first, second) = unsafe { s.slots(head, n) };
                out[..first.len()].copy_from_slice(first);
                out[first.len()..n].copy_from_slice(second);
            }
            match s.consumer.head.compare_exchange(head, head + n as u64, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    s.consumer.released.store(head + n as u64, Ordering::Release);
                    return n;
                }
                // The producer discarded the unread audio while we copied: what we copied was
                // dropped and must not be played. Start again from where it moved `head`.
                Err(now) => head = now,
            }
        }
    }

    /// Fill all of `out`: queued samples first, silence (zeros) for the rest.
    ///
    /// Returns how many queued samples were taken; the silent remainder is added to the
    /// underrun counter. This is the call for an audio device callback, which must always
    /// deliver a full buffer.
    pub fn pop_or_silence(&mut self, out: &mut [i16]) -> usize {
        let n = self.pop(out);
        if n < out.len() {
            out[n..].fill(0);
            self.shared.consumer.underrun.fetch_add((out.len() - n) as u64, Ordering::Relaxed);
        }
        n
    }

    /// Drop everything queued now; returns how many samples were dropped.
    ///
    /// Samples the producer pushes concurrently are either dropped too or stay queued whole;
    /// nothing is torn. Note for rings fed by a [`PlaybackClock`](crate::playback::PlaybackClock):
    /// the clock counts samples cleared here as played, so drop audio there with
    /// [`PlaybackClock::interrupt`](crate::playback::PlaybackClock::interrupt) instead.
    pub fn clear(&mut self) -> usize {
        let s = &*self.shared;
        let tail = s.producer.tail.load(Ordering::Acquire);
        // `fetch_max`, not a store: a concurrent producer discard may already have moved `head`
        // past the tail we loaded, and `head` must never go back.
        let before = s.consumer.head.fetch_max(tail, Ordering::AcqRel);
        let after = before.max(tail);
        s.consumer.released.store(after, Ordering::Release);
        let dropped = after - before;
        s.producer.dropped.fetch_add(dropped, Ordering::Relaxed);
        dropped as usize
    }

    /// Report that the listener has heard the ring's samples up to `position` (a total count,
    /// like [`consumed_samples`](Self::consumed_samples)): what was handed to the device minus
    /// what is still in its buffer. Positions only move forward; a smaller value than one
    /// reported before is ignored, and the position is read capped by the consumed one.
    pub fn report_heard(&mut self, position: u64) {
        self.shared.consumer.heard_plus_one.fetch_max(position.saturating_add(1), Ordering::AcqRel);
    }

    /// Samples queued and ready to pop.
    pub fn readable(&self) -> usize {
        let s = &*self.shared;
        let head = s.consumer.head.load(Ordering::Acquire);
        (s.producer.tail.load(Ordering::Acquire) - head) as usize
    }

    /// Total samples consumed since the ring was made: popped, cleared or discarded.
    pub fn consumed_samples(&self) -> u64 {
        self.shared.consumer.head.load(Ordering::Acquire)
    }

    /// Capacity in samples.
    pub fn capacity(&self) -> usize {
        self.shared.capacity as usize
    }

    /// A read-only view of the counters for other threads.
    pub fn monitor(&self) -> RingMonitor {
        RingMonitor { shared: Arc::clone(&self.shared) }
    }
}

impl RingMonitor {
    /// Capacity in samples.
    pub fn capacity(&self) -> usize {
        self.shared.capacity as usize
    }

    /// Samples queued and not yet consumed.
    pub fn readable(&self) -> usize {
        let s = &*self.shared;
        // Load `head` first: `tail` only grows, so the difference cannot go negative.
        let head = s.consumer.head.load(Ordering::Acquire);
        (s.producer.tail.load(Ordering::Acquire) - head) as usize
    }

    /// Samples the producer could push now.
    pub fn writable(&self) -> usize {
        let s = &*self.shared;
        let released = s.consumer.released.load(Ordering::Acquire);
        let tail = s.producer.tail.load(Ordering::Acquire);
        // `released` may have moved on after we loaded it, so saturate instead of trusting the
        // producer's invariant `tail - released <= capacity` for these two snapshots.
        s.capacity.saturating_sub(tail - released) as usize
    }

    /// Total samples written since the ring was made.
    pub fn pushed_samples(&self) -> u64 {
        self.shared.producer.tail.load(Ordering::Acquire)
    }

    /// Total samples consumed since the ring was made: popped, cleared or discarded.
    pub fn consumed_samples(&self) -> u64 {
        self.shared.consumer.head.load(Ordering::Acquire)
    }

    /// See [`Producer::heard_samples`].
    pub fn heard_samples(&self) -> u64 {
        self.shared.heard_samples()
    }

    /// Samples refused by [`Producer::push`] because the ring was full.
    pub fn overrun_samples(&self) -> u64 {
        self.shared.producer.overrun.load(Ordering::Relaxed)
    }

    /// Samples of silence [`Consumer::pop_or_silence`] filled in because the ring was empty.
    pub fn underrun_samples(&self) -> u64 {
        self.shared.consumer.underrun.load(Ordering::Relaxed)
    }

    /// Samples dropped unread by [`Consumer::clear`] and [`Producer::discard_unread`].
    pub fn dropped_samples(&self) -> u64 {
        self.shared.producer.dropped.load(Ordering::Relaxed)
    }
}

/// Keeps the two sides' counters on separate cache lines, so the producer's stores do not
/// evict the consumer's line on every push (and vice versa).
#[derive(Debug)]
#[repr(align(128))]
struct CachePadded<T>(T);

impl<T> std::ops::Deref for CachePadded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

#[derive(Debug)]
struct ConsumerSide {
    head: AtomicU64,
    released: AtomicU64,
    underrun: AtomicU64,
    /// Heard position + 1 reported by the consumer; 0 while it never reported one.
    heard_plus_one: AtomicU64,
}

#[derive(Debug)]
struct ProducerSide {
    tail: AtomicU64,
    overrun: AtomicU64,
    /// Written by both sides (clear / discard), but only ever with `fetch_add`.
    dropped: AtomicU64,
}

struct Shared {
    buf: Box<[UnsafeCell<i16>]>,
    capacity: u64,
    consumer: CachePadded<ConsumerSide>,
    producer: CachePadded<ProducerSide>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("capacity", &self.capacity)
            .field("consumer", &self.consumer)
            .field("producer", &self.producer)
            .finish_non_exhaustive()
    }
}

// SAFETY: the only non-`Sync` part is the sample storage. Each slot is accessed by at most one
// side at a time: the producer writes only free slots and the consumer reads only published
// ones, with the hand-over ordered by the Release/Acquire pairs on `tail` and `released` (see the
// module docs and the SAFETY comments at each access).
unsafe impl Sync for Shared {}

impl Shared {
    fn heard_samples(&self) -> u64 {
        let consumed = self.consumer.head.load(Ordering::Acquire);
        match self.consumer.heard_plus_one.load(Ordering::Acquire) {
            0 => consumed,
            h => (h - 1).min(consumed),
        }
    }

    /// Slots of positions `pos .. pos + n` as (up to) two runs: to the end of the storage, then
    /// from its start.
    fn split(&self, pos: u64, n: usize) -> (usize, usize, usize) {
        debug_assert!(n as u64 <= self.capacity);
        let start = (pos % self.capacity) as usize;
        let first = n.min(self.buf.len() - start);
        (start, first, n - first)
    }

    /// # Safety
    ///
    /// The caller must be the only one accessing the slots of positions `pos .. pos + n` for the
    /// lifetime of the returned slices, and `n <= capacity`.
    #[allow(clippy::mut_from_ref)] // interior mutability: the storage is `UnsafeCell`s
    unsafe fn slots_mut(&self, pos: u64, n: usize) -> (&mut [i16], &mut [i16]) {
        let (start, first, second) = self.split(pos, n);
        let base = UnsafeCell::raw_get(self.buf.as_ptr());
        // SAFETY: `start + first <= len` and `second <= start` (the runs do not overlap because
        // `n <= capacity`), so both lie inside the allocation; `UnsafeCell<i16>` has the layout of
        // `i16`; exclusive access is the caller's promise.
        unsafe {
            (
                std::slice::from_raw_parts_mut(base.add(start), first),
                std::slice::from_raw_parts_mut(base, second),
            )
        }
    }

    /// # Safety
    ///
    /// Nobody may write the slots of positions `pos .. pos + n` for the lifetime of the returned
    /// slices, and `n <= capacity`.
    unsafe fn slots(&self, pos: u64, n: usize) -> (&[i16], &[i16]) {
        let (start, first, second) = self.split(pos, n);
        let base = UnsafeCell::raw_get(self.buf.as_ptr()).cast_const();
        // SAFETY: as in `slots_mut`, both runs lie inside the allocation; no writer is the
        // caller's promise.
        unsafe {
            (std::slice::from_raw_parts(base.add(start), first), std::slice::from_raw_parts(base, second))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_zero_and_huge_capacity() {
        assert_eq!(channel(0).unwrap_err(), ConfigError::InvalidCapacity { value: 0 });
        let too_big = crate::MAX_CAPACITY_SAMPLES + 1;
        assert_eq!(channel(too_big).unwrap_err(), ConfigError::InvalidCapacity { value: too_big });
        assert!(channel(1).is_ok());
    }

    #[test]
    fn push_pop_wraps_around_the_end_of_the_storage() {
        let (mut p, mut c) = channel(5).unwrap();
        let mut out = [0i16; 5];
        assert_eq!(p.push(&[1, 2, 3]), 3);
        assert_eq!(c.pop(&mut out[..2]), 2);
        assert_eq!(&out[..2], &[1, 2]);
        // Slots 3, 4, 0, 1 are free; this write wraps.
        assert_eq!(p.push(&[4, 5, 6, 7]), 4);
        assert_eq!(p.writable(), 0);
        assert_eq!(c.pop(&mut out), 5);
        assert_eq!(out, [3, 4, 5, 6, 7]);
        assert_eq!(c.consumed_samples(), 7);
        assert_eq!(p.pushed_samples(), 7);
    }

    #[test]
    fn full_and_empty_are_counts_with_overrun_and_underrun_counters() {
        let (mut p, mut c) = channel(4).unwrap();
        let m = p.monitor();
        assert_eq!(p.push(&[1, 2, 3, 4, 5, 6]), 4);
        assert_eq!(m.overrun_samples(), 2);
        let mut out = [9i16; 6];
        assert_eq!(c.pop_or_silence(&mut out), 4);
        assert_eq!(out, [1, 2, 3, 4, 0, 0]);
        assert_eq!(m.underrun_samples(), 2);
        // Plain pop on an empty ring: 0, buffer untouched, no underrun counted.
        let mut out = [7i16; 3];
        assert_eq!(c.pop(&mut out), 0);
        assert_eq!(out, [7, 7, 7]);
        assert_eq!(m.underrun_samples(), 2);
    }

    #[test]
    fn little_endian_bytes_are_pushed_as_samples() {
        let (mut p, mut c) = channel(4).unwrap();
        let bytes = [0x01, 0x00, 0xff, 0xff, 0x00, 0x80];
        assert_eq!(p.push_pcm(Pcm::from_le_bytes(&bytes).unwrap()), 3);
        let mut out = [0i16; 3];
        c.pop(&mut out);
        assert_eq!(out, [1, -1, i16::MIN]);
    }

    #[test]
    fn consumer_clear_drops_what_is_queued() {
        let (mut p, mut c) = channel(8).unwrap();
        p.push(&[1, 2, 3]);
        assert_eq!(c.clear(), 3);
        assert_eq!(c.readable(), 0);
        assert_eq!(p.writable(), 8);
        assert_eq!(c.consumed_samples(), 3);
        assert_eq!(p.monitor().dropped_samples(), 3);
        assert_eq!(c.clear(), 0);
    }

    #[test]
    fn producer_discard_reports_the_consumed_position_and_frees_space_after_the_next_pop() {
        let (mut p, mut c) = channel(8).unwrap();
        p.push(&[1, 2, 3, 4, 5, 6]);
        let mut out = [0i16; 2];
        c.pop(&mut out);
        let d = p.discard_unread();
        assert_eq!(d, Discarded { consumed_samples: 2, dropped_samples: 4 });
        assert_eq!(p.readable(), 0);
        // The consumer has not run since: the space it may still be reading stays reserved.
        assert_eq!(p.writable(), 4);
        assert_eq!(c.pop(&mut []), 0);
        assert_eq!(p.writable(), 8);
        // New audio after the discard plays normally.
        p.push(&[7, 8]);
        let mut out = [0i16; 4];
        assert_eq!(c.pop(&mut out), 2);
        assert_eq!(&out[..2], &[7, 8]);
        assert_eq!(c.consumed_samples(), 8);
    }

    #[test]
    fn monitor_sees_both_sides() {
        let (mut p, mut c) = channel(10).unwrap();
        let m = c.monitor();
        p.push(&[0; 7]);
        assert_eq!((m.readable(), m.writable(), m.pushed_samples()), (7, 3, 7));
        c.pop(&mut [0; 4]);
        assert_eq!((m.readable(), m.writable(), m.consumed_samples()), (3, 7, 4));
        assert_eq!(m.capacity(), 10);
    }
}
