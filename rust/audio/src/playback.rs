//! Playback clock: how much of each assistant item the listener has actually heard.
//!
//! The Realtime protocol streams assistant audio per `(item_id, content_index)`. When the user
//! barges in, the client must tell the server how much of the item was *heard*
//! (`conversation.item.truncate` with `audio_end_ms`), so the transcript the model keeps matches
//! what the user got; audio of items that never started playing is better deleted
//! (`conversation.item.delete`). Only the audio output knows where playback is, so the clock sits
//! on the producer side of the output [ring](crate::ring):
//!
//! * [`PlaybackClock::push`] queues samples into the ring and records which ring positions belong
//!   to which item, as *segments* `(item, rate, start position, length)` in queue order
//!   (consecutive pushes of the same item extend one segment, so there is one per item);
//! * the consumer (device callback) pops from the ring as usual; the ring's monotonic consumed
//!   position ([`Producer::consumed_samples`]) says how far playback got;
//! * [`PlaybackClock::interrupt`] drops everything not yet played, atomically with respect to the
//!   consumer ([`Producer::discard_unread`]), and reports per item what was played.
//!
//! ## Rates
//!
//! Samples in the ring are at the ring's rate (the device rate, `ring_rate_hz`). Each item also
//! has its own rate (`item_rate_hz`): the rate of the audio the server sent, which is what its
//! `audio_end_ms` refers to — 24 kHz for `pcm16`, 8 kHz for G.711. When the session resamples
//! item audio to the device rate before queueing, the clock counts played samples in ring samples
//! (exact) and converts once, when reporting:
//!
//! ```text
//! played_samples = floor(played_ring_samples * item_rate_hz / ring_rate_hz)
//! played_ms      = floor(played_samples * 1000 / item_rate_hz)
//! ```
//!
//! Both round down, so a truncation never claims audio that was not heard.
//!
//! ## Warm-up
//!
//! A streaming resampler's output lags its input by its delay ([`Resampler::output_delay`](
//! crate::resample::Resampler::output_delay): 76.25 ring samples from 24 to 44.1 kHz, 82 to
//! 48 kHz): the first ring samples of an item resampled on its own are the filter's warm-up,
//! before its sound. [`PlaybackClock::push_with_warmup`] records that lead with the item's first
//! push, and played lengths count only what follows it:
//!
//! ```text
//! played_samples = floor(max(0, played_ring_samples - warmup) * item_rate_hz / ring_rate_hz)
//! ```
//!
//! (`warmup` is kept in 1/2^20 of a ring sample, rounded up, so the count still never runs ahead
//! of the sound rendered.)
//!
//! ## Heard, not just handed over
//!
//! Played lengths are measured at the ring's *heard* position ([`Producer::heard_samples`]): the
//! consumed position, or less when the consumer reports that the last samples it took are still
//! in the device's buffer ([`Consumer::report_heard`](crate::ring::Consumer::report_heard)). When the two rates are
//! equal (a 24 kHz device, or G.711 at 8 kHz end to end) this is exact to the sample. With
//! resampling it is exact to the sample of the item's rate once the resampler's delay is given
//! as the item's warm-up (see above).
//!
//! ## Assumptions
//!
//! * The clock owns the ring's [`Producer`], so every queued sample is tagged. Audio dropped by
//!   the consumer's [`Consumer::clear`](crate::ring::Consumer::clear) would count as played:
//!   drop audio with [`PlaybackClock::interrupt`].
//! * An item's audio is queued contiguously, as the protocol streams it. Its rate is the one given
//!   with its first tracked push.
//! * Segments are kept until [`PlaybackClock::interrupt`] or [`PlaybackClock::drop_finished`], so
//!   a report always covers all of an item's tracked audio (one segment per item: tiny).

use std::collections::VecDeque;
use std::num::NonZeroU32;

use crate::error::ConfigError;
use crate::pcm::Pcm;
use crate::ring::Producer;

/// `samples` at `from_rate_hz` expressed at `to_rate_hz`, rounded down.
///
/// Exact integer arithmetic (no overflow for any `u64` count and `u32` rates); a result past
/// `u64::MAX` (only an upsampled count near `u64::MAX`, which no stream reaches) is `u64::MAX`,
/// never a wrapped value.
pub fn convert_samples(samples: u64, from_rate_hz: NonZeroU32, to_rate_hz: NonZeroU32) -> u64 {
    let exact = u128::from(samples) * u128::from(to_rate_hz.get()) / u128::from(from_rate_hz.get());
    u64::try_from(exact).unwrap_or(u64::MAX)
}

/// Duration of `samples` at `rate_hz` in whole milliseconds, rounded down.
/// Like [`convert_samples`], `u64::MAX` past it (rates under 1000 Hz), never a wrapped value.
pub fn samples_to_ms(samples: u64, rate_hz: NonZeroU32) -> u64 {
    u64::try_from(u128::from(samples) * 1000 / u128::from(rate_hz.get())).unwrap_or(u64::MAX)
}

/// Fixed-point scale of a warm-up: 1/2^20 of a ring sample.
const WARMUP_SHIFT: u32 = 20;

/// `ring` samples at `ring_rate_hz` minus a warm-up (fixed point, see [`WARMUP_SHIFT`]),
/// expressed at `item_rate_hz`, rounded down (0 while within the warm-up).
fn after_warmup(ring: u64, warmup: u64, ring_rate_hz: NonZeroU32, item_rate_hz: NonZeroU32) -> u64 {
    let sound = (u128::from(ring) << WARMUP_SHIFT).saturating_sub(u128::from(warmup));
    let scaled_rate = u128::from(ring_rate_hz.get()) << WARMUP_SHIFT;
    (sound * u128::from(item_rate_hz.get()) / scaled_rate) as u64
}

/// What the clock knows about one item's audio.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ItemPlayback {
    /// The assistant item (`item_id` in the protocol).
    pub item_id: String,
    /// The content part of the item the audio belongs to.
    pub content_index: u32,
    /// The item's own sample rate, in which the sample counts below are expressed.
    pub rate_hz: u32,
    /// Samples of the item played so far (at `rate_hz`, rounded down).
    pub played_samples: u64,
    /// `played_samples` in whole milliseconds (rounded down): the `audio_end_ms` to truncate at.
    pub played_ms: u64,
    /// Samples of the item accepted into the ring (at `rate_hz`, rounded down).
    pub queued_samples: u64,
    /// Whether `played_samples > 0`: at least one sample of the item, at its own rate, has been
    /// played. An item that never started should be deleted rather than truncated.
    pub started: bool,
}

/// Tags ring positions with the item they belong to and reports played lengths per item.
#[derive(Debug)]
pub struct PlaybackClock {
    producer: Producer,
    ring_rate_hz: NonZeroU32,
    /// Contiguous, in queue order: `segments[i + 1].start == segments[i].start + segments[i].len`.
    segments: VecDeque<Segment>,
}

#[derive(Debug)]
struct Segment {
    item_id: Box<str>,
    content_index: u32,
    item_rate_hz: NonZeroU32,
    /// Ring position of the segment's first sample.
    start: u64,
    /// Ring samples in the segment.
    len: u64,
    /// Warm-up at the segment's start, in 1/2^[`WARMUP_SHIFT`] ring samples.
    warmup: u64,
}

impl Segment {
    fn is(&self, item_id: &str, content_index: u32) -> bool {
        self.content_index == content_index && &*self.item_id == item_id
    }

    /// Ring samples of this segment consumed once the ring has consumed `consumed` in total.
    fn played(&self, consumed: u64) -> u64 {
        consumed.saturating_sub(self.start).min(self.len)
    }

    fn end(&self) -> u64 {
        self.start + self.len
    }
}

impl PlaybackClock {
    /// A clock feeding `producer`, whose samples are at `ring_rate_hz`.
    ///
    /// Fails with [`ConfigError::InvalidRate`] (name `ring_rate_hz`) for 0 or a rate above
    /// [`MAX_RATE_HZ`](crate::resample::MAX_RATE_HZ).
    pub fn new(producer: Producer, ring_rate_hz: u32) -> Result<Self, ConfigError> {
        let rate = NonZeroU32::new(ring_rate_hz)
            .filter(|r| r.get() <= crate::resample::MAX_RATE_HZ)
            .ok_or(ConfigError::InvalidRate { name: "ring_rate_hz", value: i64::from(ring_rate_hz) })?;
        Ok(Self { producer, ring_rate_hz: rate, segments: VecDeque::new() })
    }

    /// Queue `pcm` (at the ring's rate) as audio of `(item_id, content_index)`, whose own rate is
    /// `item_rate_hz`. Returns how many samples the ring accepted (a prefix; the rest did not fit
    /// and is counted as overrun by the ring — push it again later).
    ///
    /// Zero-length pushes are recorded too: the item is then known, with nothing queued.
    /// Allocates only when a new item starts (its segment record), never per chunk of one item.
    pub fn push(
        &mut self,
        item_id: &str,
        content_index: u32,
        item_rate_hz: NonZeroU32,
        pcm: Pcm<'_>,
    ) -> usize {
        self.push_with_warmup(item_id, content_index, item_rate_hz, 0.0, pcm)
    }

    /// [`push`](Self::push), where the first `warmup_samples` ring samples of the item (a
    /// resampler's [`output_delay`](crate::resample::Resampler::output_delay), possibly
    /// fractional) precede its sound: played lengths count only what follows them. The warm-up
    /// is recorded when this push starts the item's record (its first push); later pushes of the
    /// same item ignore it. A negative or NaN warm-up counts as 0.
    pub fn push_with_warmup(
        &mut self,
        item_id: &str,
        content_index: u32,
        item_rate_hz: NonZeroU32,
        warmup_samples: f64,
        pcm: Pcm<'_>,
    ) -> usize {
        let start = self.producer.pushed_samples();
        let n = self.producer.push_pcm(pcm);
        match self.segments.back_mut() {
            Some(last) if last.is(item_id, content_index) && last.item_rate_hz == item_rate_hz => {
                debug_assert_eq!(last.end(), start);
                last.len += n as u64;
            }
            _ => self.segments.push_back(Segment {
                item_id: item_id.into(),
                content_index,
                item_rate_hz,
                start,
                len: n as u64,
                // Rounded up: the count stays behind the sound, never ahead of it (an `as`
                // cast saturates: NaN and negatives give 0).
                warmup: (warmup_samples * f64::from(1u32 << WARMUP_SHIFT)).ceil() as u64,
            }),
        }
        n
    }

    /// What has been played of `(item_id, content_index)` so far, or `None` if the clock does not
    /// track it (never pushed, or forgotten by [`interrupt`](Self::interrupt) /
    /// [`drop_finished`](Self::drop_finished)).
    pub fn played(&self, item_id: &str, content_index: u32) -> Option<ItemPlayback> {
        self.report(item_id, content_index, self.producer.heard_samples())
    }

    /// A report for every tracked item, in queue order.
    pub fn items(&self) -> Vec<ItemPlayback> {
        let heard = self.producer.heard_samples();
        self.reports(heard, |_, _| true)
    }

    /// Drop all audio not yet played and forget every segment; returns a report for each item
    /// that was still playing or waiting to play, in queue order.
    ///
    /// Reported: items with audio that was dropped (partly played, or never started), and the
    /// most recently queued item even when all of its queued audio has been played (the server
    /// may still be generating it, so it too needs truncating at `played_ms`). Items that finished
    /// playing before another item started are not reported: nothing of them was cut.
    ///
    /// The played lengths are exact with respect to the consumer, even while it pops on another
    /// thread (see [`Producer::discard_unread`]).
    pub fn interrupt(&mut self) -> Vec<ItemPlayback> {
        let consumed = self.producer.discard_unread().consumed_samples;
        // Audio handed to the device but not heard yet counts as cut: the report is what the
        // listener had heard when the interruption happened.
        let heard = self.producer.heard_samples().min(consumed);
        let last = self.segments.len().saturating_sub(1);
        let reports = self.reports(heard, |i, seg| i == last || heard < seg.end());
        self.segments.clear();
        reports
    }

    /// Forget segments that have been played to the end and cannot grow any more (another
    /// segment follows them); returns how many were dropped.
    pub fn drop_finished(&mut self) -> usize {
        let heard = self.producer.heard_samples();
        let mut dropped = 0;
        while self.segments.len() > 1 && self.segments[0].end() <= heard {
            self.segments.pop_front();
            dropped += 1;
        }
        dropped
    }

    /// Samples queued in the ring and not yet played.
    pub fn buffered_samples(&self) -> usize {
        self.producer.readable()
    }

    /// Rate of the samples in the ring.
    pub fn ring_rate_hz(&self) -> u32 {
        self.ring_rate_hz.get()
    }

    /// The ring's producer, for its counters.
    pub fn producer(&self) -> &Producer {
        &self.producer
    }

    /// Give the producer back (the clock's records are dropped).
    pub fn into_producer(self) -> Producer {
        self.producer
    }

    /// Reports for the items that have at least one segment selected by `pick(index, segment)`,
    /// in order of their first segment; each report covers all of the item's segments.
    fn reports(&self, consumed: u64, pick: impl Fn(usize, &Segment) -> bool) -> Vec<ItemPlayback> {
        let mut out: Vec<ItemPlayback> = Vec::new();
        for (i, seg) in self.segments.iter().enumerate() {
            if pick(i, seg) && !out.iter().any(|r| seg.is(&r.item_id, r.content_index)) {
                out.extend(self.report(&seg.item_id, seg.content_index, consumed));
            }
        }
        out
    }

    fn report(&self, item_id: &str, content_index: u32, consumed: u64) -> Option<ItemPlayback> {
        let mut segs = self.segments.iter().filter(|s| s.is(item_id, content_index)).peekable();
        let first = segs.peek()?;
        let (rate, warmup) = (first.item_rate_hz, first.warmup);
        let (mut played_ring, mut queued_ring) = (0u64, 0u64);
        for s in segs {
            played_ring += s.played(consumed);
            queued_ring += s.len;
        }
        let played_samples = after_warmup(played_ring, warmup, self.ring_rate_hz, rate);
        Some(ItemPlayback {
            item_id: item_id.to_owned(),
            content_index,
            rate_hz: rate.get(),
            played_samples,
            played_ms: samples_to_ms(played_samples, rate),
            queued_samples: after_warmup(queued_ring, warmup, self.ring_rate_hz, rate),
            started: played_samples > 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring;

    fn hz(v: u32) -> NonZeroU32 {
        NonZeroU32::new(v).unwrap()
    }

    fn clock(capacity: usize, ring_rate_hz: u32) -> (PlaybackClock, ring::Consumer) {
        let (p, c) = ring::channel(capacity).unwrap();
        (PlaybackClock::new(p, ring_rate_hz).unwrap(), c)
    }

    #[test]
    fn rejects_unusable_ring_rates() {
        for bad in [0, crate::resample::MAX_RATE_HZ + 1] {
            let (p, _c) = ring::channel(4).unwrap();
            assert_eq!(
                PlaybackClock::new(p, bad).unwrap_err(),
                ConfigError::InvalidRate { name: "ring_rate_hz", value: i64::from(bad) }
            );
        }
    }

    #[test]
    fn conversions_round_down() {
        assert_eq!(convert_samples(4799, hz(48_000), hz(24_000)), 2399);
        assert_eq!(convert_samples(3, hz(8_000), hz(24_000)), 9);
        assert_eq!(convert_samples(u64::MAX, hz(1), hz(1)), u64::MAX);
        assert_eq!(convert_samples(u64::MAX, hz(24_000), hz(48_000)), u64::MAX); // wrapped before
        assert_eq!(convert_samples(u64::MAX / 2, hz(24_000), hz(48_000)), u64::MAX - 1);
        assert_eq!(samples_to_ms(u64::MAX, hz(1)), u64::MAX); // wrapped before
        assert_eq!(samples_to_ms(23, hz(24_000)), 0);
        assert_eq!(samples_to_ms(24, hz(24_000)), 1);
        assert_eq!(samples_to_ms(159, hz(8_000)), 19);
        assert_eq!(samples_to_ms(160, hz(8_000)), 20);
    }

    #[test]
    fn interrupt_reports_the_partly_played_item_and_the_unstarted_one() {
        let (mut clk, mut c) = clock(48_000, 24_000);
        assert_eq!(clk.push("a", 0, hz(24_000), Pcm::Samples(&[1; 2400])), 2400);
        assert_eq!(clk.push("b", 0, hz(24_000), Pcm::Samples(&[2; 2400])), 2400);
        let mut out = vec![0i16; 1000];
        assert_eq!(c.pop(&mut out), 1000);
        let got = clk.interrupt();
        assert_eq!(
            got,
            vec![
                ItemPlayback {
                    item_id: "a".into(),
                    content_index: 0,
                    rate_hz: 24_000,
                    played_samples: 1000,
                    played_ms: 41,
                    queued_samples: 2400,
                    started: true,
                },
                ItemPlayback {
                    item_id: "b".into(),
                    content_index: 0,
                    rate_hz: 24_000,
                    played_samples: 0,
                    played_ms: 0,
                    queued_samples: 2400,
                    started: false,
                },
            ]
        );
        assert_eq!(c.readable(), 0);
        assert!(clk.items().is_empty());
    }

    #[test]
    fn finished_items_are_not_reported_but_the_last_one_is() {
        let (mut clk, mut c) = clock(100, 8_000);
        clk.push("a", 0, hz(8_000), Pcm::Samples(&[1; 10]));
        clk.push("b", 1, hz(8_000), Pcm::Samples(&[2; 10]));
        assert_eq!(c.pop(&mut [0; 20]), 20);
        let got = clk.interrupt();
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].item_id.as_str(), got[0].content_index), ("b", 1));
        assert_eq!((got[0].played_samples, got[0].queued_samples, got[0].started), (10, 10, true));
    }

    #[test]
    fn played_query_and_drop_finished() {
        let (mut clk, mut c) = clock(100, 8_000);
        clk.push("a", 0, hz(8_000), Pcm::Samples(&[1; 16]));
        clk.push("a", 0, hz(8_000), Pcm::Samples(&[1; 16]));
        clk.push("b", 0, hz(8_000), Pcm::Samples(&[2; 8]));
        c.pop(&mut [0; 20]);
        let a = clk.played("a", 0).unwrap();
        assert_eq!((a.played_samples, a.queued_samples, a.played_ms), (20, 32, 2));
        assert!(clk.played("a", 1).is_none());
        assert_eq!(clk.drop_finished(), 0);
        c.pop(&mut [0; 12]);
        assert_eq!(clk.drop_finished(), 1);
        assert!(clk.played("a", 0).is_none());
        c.pop(&mut [0; 8]);
        // "b" is fully played but is the last segment: it may still grow, so it stays.
        assert_eq!(clk.drop_finished(), 0);
        assert_eq!(clk.played("b", 0).unwrap().played_samples, 8);
    }

    #[test]
    fn a_warmup_is_not_counted_as_played() {
        // 24 -> 44.1 kHz: 76.25 ring samples of warm-up before the item's first sample.
        let (mut clk, mut c) = clock(1_000, 44_100);
        clk.push_with_warmup("a", 0, hz(24_000), 76.25, Pcm::Samples(&[1; 500]));
        // A later push of the same item does not add a warm-up.
        clk.push_with_warmup("a", 0, hz(24_000), 76.25, Pcm::Samples(&[1; 100]));
        assert_eq!(c.pop(&mut [0; 76]), 76);
        let a = clk.played("a", 0).unwrap();
        assert_eq!((a.played_samples, a.started), (0, false));
        // 76.25 + 44.1/24 * 3 = 81.76 ring samples hold 3 item samples: 81 do not, 82 do.
        assert_eq!(c.pop(&mut [0; 5]), 5);
        assert_eq!(clk.played("a", 0).unwrap().played_samples, 2);
        assert_eq!(c.pop(&mut [0; 1]), 1);
        assert_eq!(clk.played("a", 0).unwrap().played_samples, 3);
        // queued: (600 - 76.25) * 24 / 44.1 = 285.03
        assert_eq!(clk.played("a", 0).unwrap().queued_samples, 285);
        // Without a warm-up the same ring position counts 82 * 24 / 44.1 = 44 samples.
        let (mut plain, mut pc) = clock(1_000, 44_100);
        plain.push("a", 0, hz(24_000), Pcm::Samples(&[1; 500]));
        pc.pop(&mut [0; 82]);
        assert_eq!(plain.played("a", 0).unwrap().played_samples, 44);
    }

    #[test]
    fn reports_follow_the_heard_position_when_the_consumer_reports_one() {
        let (mut clk, mut c) = clock(100, 8_000);
        clk.push("a", 0, hz(8_000), Pcm::Samples(&[1; 10]));
        clk.push("b", 0, hz(8_000), Pcm::Samples(&[2; 10]));
        assert_eq!(c.pop(&mut [0; 15]), 15);
        assert_eq!(clk.played("a", 0).unwrap().played_samples, 10);
        // 7 of the 15 consumed samples are still in the device buffer.
        c.report_heard(8);
        assert_eq!(clk.played("a", 0).unwrap().played_samples, 8);
        assert_eq!(clk.played("b", 0).unwrap().played_samples, 0);
        assert_eq!(clk.drop_finished(), 0);
        // A smaller position is ignored; a larger one than consumed is capped at consumed.
        c.report_heard(3);
        assert_eq!(clk.producer().heard_samples(), 8);
        let got = clk.interrupt();
        let played: Vec<_> = got.iter().map(|r| (r.item_id.as_str(), r.played_samples)).collect();
        assert_eq!(played, vec![("a", 8), ("b", 0)]);
        c.report_heard(1_000);
        assert_eq!(clk.producer().heard_samples(), 20);
    }
}
