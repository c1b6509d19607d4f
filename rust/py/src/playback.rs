//! `PlaybackClock` and `ItemPlayback` for Python.

use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use voxwire_audio::playback::{ItemPlayback as CoreItemPlayback, PlaybackClock as CoreClock};
use voxwire_audio::resample::MAX_RATE_HZ;
use voxwire_audio::ConfigError;

use crate::errors;
use crate::pcm::with_pcm;
use crate::ring::{int_arg, lock, may_detach_reading, PcmRing, RingHalves};

/// What the playback clock knows about one item's audio.
///
/// Sample counts are at the item's own rate ``rate_hz`` (rounded down); ``played_ms`` is the
/// ``audio_end_ms`` for ``conversation.item.truncate``. ``started`` is ``played_samples > 0``; an
/// item not started is better deleted (``conversation.item.delete``) than truncated.
#[pyclass(module = "voxwire._core", name = "ItemPlayback", frozen, eq, hash, get_all)]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ItemPlayback {
    item_id: String,
    content_index: u32,
    rate_hz: u32,
    played_samples: u64,
    played_ms: u64,
    queued_samples: u64,
    started: bool,
}

#[pymethods]
impl ItemPlayback {
    #[new]
    #[pyo3(signature = (item_id, content_index, rate_hz, played_samples, played_ms, queued_samples, started))]
    fn new(
        item_id: String,
        content_index: &Bound<'_, PyAny>,
        rate_hz: &Bound<'_, PyAny>,
        played_samples: &Bound<'_, PyAny>,
        played_ms: &Bound<'_, PyAny>,
        queued_samples: &Bound<'_, PyAny>,
        started: bool,
    ) -> PyResult<Self> {
        Ok(Self {
            item_id,
            content_index: content_index_arg(content_index)?,
            rate_hz: rate_arg(rate_hz, "rate_hz")?.get(),
            played_samples: count_arg(played_samples, "played_samples")?,
            played_ms: count_arg(played_ms, "played_ms")?,
            queued_samples: count_arg(queued_samples, "queued_samples")?,
            started,
        })
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        // The id through Python's repr, so the text is valid Python whatever the id contains.
        let item_id = pyo3::types::PyString::new(py, &self.item_id).repr()?;
        Ok(format!(
            "ItemPlayback(item_id={item_id}, content_index={}, rate_hz={}, played_samples={}, \
             played_ms={}, queued_samples={}, started={})",
            self.content_index,
            self.rate_hz,
            self.played_samples,
            self.played_ms,
            self.queued_samples,
            if self.started { "True" } else { "False" },
        ))
    }
}

impl From<CoreItemPlayback> for ItemPlayback {
    fn from(r: CoreItemPlayback) -> Self {
        Self {
            item_id: r.item_id,
            content_index: r.content_index,
            rate_hz: r.rate_hz,
            played_samples: r.played_samples,
            played_ms: r.played_ms,
            queued_samples: r.queued_samples,
            started: r.started,
        }
    }
}

/// A sample rate argument, checked like the core checks rates (same message).
fn rate_arg(obj: &Bound<'_, PyAny>, name: &'static str) -> PyResult<NonZeroU32> {
    let allowed = format!("1..={MAX_RATE_HZ} Hz");
    let v = int_arg(obj, name, &allowed)?;
    u32::try_from(v)
        .ok()
        .filter(|&r| r <= MAX_RATE_HZ)
        .and_then(NonZeroU32::new)
        .ok_or_else(|| errors::config(ConfigError::InvalidRate { name, value: v }))
}

fn count_arg(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<u64> {
    let v = int_arg(obj, name, ">= 0")?;
    u64::try_from(v).map_err(|_| errors::out_of_range(name, v, ">= 0"))
}

fn content_index_arg(obj: &Bound<'_, PyAny>) -> PyResult<u32> {
    let allowed = format!("0..={}", u32::MAX);
    let v = int_arg(obj, "content_index", &allowed)?;
    u32::try_from(v).map_err(|_| errors::out_of_range("content_index", v, &allowed))
}

/// Tags the audio queued into a ``PcmRing`` with the assistant item it belongs to, and knows
/// how much of each item has been played.
///
/// The clock takes over the ring's producer side (``ring.push`` and ``ring.clear`` then raise
/// ``InvalidState``); the device callback keeps popping from the ring. Samples in the ring are at
/// ``ring_rate_hz`` (the device rate); each item is reported at its own rate (the rate the server
/// sent it at), converted exactly and rounded down.
#[pyclass(module = "voxwire._core", name = "PlaybackClock", frozen)]
pub(crate) struct PlaybackClock {
    clock: Mutex<CoreClock>,
    ring_rate_hz: NonZeroU32,
    halves: Arc<RingHalves>,
    ring: Py<PcmRing>,
}

#[pymethods]
impl PlaybackClock {
    #[new]
    fn new(py: Python<'_>, ring: Bound<'_, PcmRing>, ring_rate_hz: &Bound<'_, PyAny>) -> PyResult<Self> {
        // Validate before taking the producer, so a failed construction leaves the ring usable.
        let rate = rate_arg(ring_rate_hz, "ring_rate_hz")?;
        let halves = Arc::clone(&ring.get().halves);
        let producer = lock(&halves.producer).take().ok_or_else(|| {
            errors::invalid_state(
                py,
                "this PcmRing already feeds a PlaybackClock: use that clock (one ring, one clock)",
            )
        })?;
        let clock = CoreClock::new(producer, rate.get()).map_err(errors::config)?;
        Ok(Self { clock: Mutex::new(clock), ring_rate_hz: rate, halves, ring: ring.unbind() })
    }

    /// Queue ``pcm`` (PCM16 at ``ring_rate_hz``) as audio of ``(item_id, content_index)``;
    /// returns how many samples the ring accepted (a prefix: queue the rest later).
    ///
    /// ``item_rate_hz`` is the item's own rate, in which its played length is reported; it
    /// defaults to ``ring_rate_hz`` (no resampling between the server and the device).
    ///
    /// ``warmup_samples``: ring samples (possibly fractional) at the start of the item that come
    /// before its sound, a resampler's ``output_delay()``; they do not count as played. Taken
    /// from the push that starts the item (ignored on later pushes of it).
    #[pyo3(signature = (item_id, content_index, pcm, item_rate_hz = None, warmup_samples = 0.0))]
    fn push(
        &self,
        py: Python<'_>,
        item_id: &str,
        content_index: &Bound<'_, PyAny>,
        pcm: &Bound<'_, PyAny>,
        item_rate_hz: Option<&Bound<'_, PyAny>>,
        warmup_samples: f64,
    ) -> PyResult<usize> {
        let content_index = content_index_arg(content_index)?;
        let rate = match item_rate_hz {
            Some(r) => rate_arg(r, "item_rate_hz")?,
            None => self.ring_rate_hz,
        };
        if !(0.0..=f64::from(MAX_RATE_HZ)).contains(&warmup_samples) {
            let allowed = format!("0 ..= {MAX_RATE_HZ} (ring samples)");
            return Err(errors::out_of_range("warmup_samples", warmup_samples, &allowed));
        }
        let detach = may_detach_reading(pcm);
        with_pcm(pcm, |pcm| {
            let push =
                || lock(&self.clock).push_with_warmup(item_id, content_index, rate, warmup_samples, pcm);
            Ok(if detach { py.detach(push) } else { push() })
        })
    }

    /// What has been played of ``(item_id, content_index)``, or ``None`` if it is not tracked.
    fn played(
        &self,
        py: Python<'_>,
        item_id: &str,
        content_index: &Bound<'_, PyAny>,
    ) -> PyResult<Option<ItemPlayback>> {
        let content_index = content_index_arg(content_index)?;
        Ok(py.detach(|| lock(&self.clock).played(item_id, content_index)).map(Into::into))
    }

    /// A report for every tracked item, in queue order.
    fn items(&self, py: Python<'_>) -> Vec<ItemPlayback> {
        py.detach(|| lock(&self.clock).items()).into_iter().map(Into::into).collect()
    }

    /// Drop all audio not yet played; returns a report for each item that was playing or
    /// waiting to play, in queue order (see the module docs for exactly which).
    fn interrupt(&self, py: Python<'_>) -> Vec<ItemPlayback> {
        let halves = &*self.halves;
        let reports = py.detach(|| {
            let reports = lock(&self.clock).interrupt();
            // The space the discard freed is reusable once the consumer has run (it may be
            // mid-copy right now). If it is idle, let it acknowledge now, so a stopped device
            // does not leave the ring looking full; if it is busy, its current pop will.
            if let Ok(mut consumer) = halves.consumer.try_lock() {
                consumer.pop(&mut []);
            }
            reports
        });
        reports.into_iter().map(Into::into).collect()
    }

    /// Forget items played to the end that another item follows; returns how many segments
    /// were dropped.
    fn drop_finished(&self, py: Python<'_>) -> usize {
        py.detach(|| lock(&self.clock).drop_finished())
    }

    /// Samples queued in the ring and not yet played.
    #[getter]
    fn buffered_samples(&self) -> usize {
        self.halves.monitor.readable()
    }

    /// Rate of the samples in the ring (the device rate).
    #[getter]
    fn ring_rate_hz(&self) -> u32 {
        self.ring_rate_hz.get()
    }

    /// The ring this clock feeds.
    #[getter]
    fn ring(&self, py: Python<'_>) -> Py<PcmRing> {
        self.ring.clone_ref(py)
    }

    fn __repr__(&self) -> String {
        format!(
            "PlaybackClock(ring_rate_hz={}, buffered_samples={})",
            self.ring_rate_hz,
            self.halves.monitor.readable()
        )
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ItemPlayback>()?;
    m.add_class::<PlaybackClock>()?;
    Ok(())
}
