//! `PcmRing` for Python: the SPSC ring with both halves in one object.
//!
//! Python code cannot hand a half to "its" thread the way Rust moves a value, so one object
//! holds both, each behind its own mutex: the producer thread and the consumer thread never
//! contend (different mutexes), and two threads misusing one side are serialised instead of
//! corrupting the ring. Calls that touch the ring release the GIL (so a Python-level audio
//! callback is not held up by the interpreter, nor the interpreter by it); the one exception is
//! pushing from a `bytearray`, whose buffer another thread could resize meanwhile. Code holding
//! one of these mutexes never waits for the GIL, and the two are never held together, so they
//! cannot deadlock. Counters are atomics, read without a lock.

use std::sync::{Arc, Mutex, MutexGuard};

use numpy::{PyArray1, PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyByteArray;
use voxwire_audio::ring::{self, Consumer, Producer, RingMonitor};

use crate::{errors, pcm::with_pcm};

/// The two halves of one ring, shared by `PcmRing` and a `PlaybackClock` built on it.
pub(crate) struct RingHalves {
    /// `None` once a `PlaybackClock` has taken the producer.
    pub(crate) producer: Mutex<Option<Producer>>,
    pub(crate) consumer: Mutex<Consumer>,
    pub(crate) monitor: RingMonitor,
}

/// Lock a mutex; a poisoned one is still consistent here (nothing panics while holding them).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An int argument as `i64`: wrong types are `TypeError`, ints beyond 64 bits `ValueError`
/// saying what is `allowed`.
pub(crate) fn int_arg(obj: &Bound<'_, PyAny>, name: &str, allowed: &str) -> PyResult<i64> {
    match obj.extract::<i64>() {
        Ok(v) => Ok(v),
        Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => {
            Err(errors::out_of_range(name, obj.str()?, allowed))
        }
        Err(_) => Err(PyTypeError::new_err(format!(
            "{name} must be an int ({allowed}), got {}",
            obj.get_type().name()?
        ))),
    }
}

/// Whether the GIL may be released while Rust reads `obj`'s memory. Not for a `bytearray`:
/// another thread could resize (and so free) its buffer meanwhile. Bytes are immutable,
/// memoryviews are copied to bytes, numpy arrays are borrowed (and cannot be resized while
/// referenced).
pub(crate) fn may_detach_reading(obj: &Bound<'_, PyAny>) -> bool {
    !obj.is_instance_of::<PyByteArray>()
}

const OWNED_BY_CLOCK: &str = "this PcmRing feeds a PlaybackClock, which owns its producer side: \
     queue audio with PlaybackClock.push(item_id, content_index, pcm) and drop it with \
     PlaybackClock.interrupt(), so the clock knows what was played";

/// Lock-free single-producer single-consumer ring buffer of PCM16 mono samples.
///
/// One thread pushes (the network side), another pops (the audio device callback). Full and
/// empty are not errors: ``push`` returns how many samples fit (the rest is counted in
/// ``overrun_samples``), ``pop`` returns what is there. ``pop_into(out, fill_silence=True)``
/// always fills a device buffer, padding with silence (counted in ``underrun_samples``).
#[pyclass(module = "voxwire._core", name = "PcmRing", frozen)]
pub(crate) struct PcmRing {
    pub(crate) halves: Arc<RingHalves>,
}

#[pymethods]
impl PcmRing {
    #[new]
    fn new(capacity_samples: &Bound<'_, PyAny>) -> PyResult<Self> {
        let allowed = format!("1..={}", voxwire_audio::MAX_CAPACITY_SAMPLES);
        let v = int_arg(capacity_samples, "capacity_samples", &allowed)?;
        let cap = usize::try_from(v).map_err(|_| errors::out_of_range("capacity_samples", v, &allowed))?;
        let (producer, consumer) = ring::channel(cap).map_err(errors::config)?;
        let monitor = producer.monitor();
        Ok(Self {
            halves: Arc::new(RingHalves {
                producer: Mutex::new(Some(producer)),
                consumer: Mutex::new(consumer),
                monitor,
            }),
        })
    }

    /// Queue PCM16 samples; returns how many were queued (a prefix of ``pcm``).
    ///
    /// Accepts bytes, bytearray, memoryview (little-endian PCM16) or a 1-D numpy int16 array.
    /// Raises ``InvalidState`` if a ``PlaybackClock`` owns the producer side.
    fn push(&self, py: Python<'_>, pcm: &Bound<'_, PyAny>) -> PyResult<usize> {
        let halves = &*self.halves;
        let detach = may_detach_reading(pcm);
        with_pcm(pcm, |pcm| {
            let push = || lock(&halves.producer).as_mut().map(|p| p.push_pcm(pcm));
            let pushed = if detach { py.detach(push) } else { push() };
            pushed.ok_or_else(|| errors::invalid_state(py, OWNED_BY_CLOCK))
        })
    }

    /// Take up to ``max_samples`` samples; returns them as a new numpy int16 array (empty if
    /// the ring is empty).
    fn pop<'py>(
        &self,
        py: Python<'py>,
        max_samples: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<i16>>> {
        let v = int_arg(max_samples, "max_samples", ">= 0")?;
        let max = usize::try_from(v).map_err(|_| errors::out_of_range("max_samples", v, ">= 0"))?;
        // Size the array by what is readable now; only a concurrent discard can make it less.
        let n = max.min(self.halves.monitor.readable());
        let out = PyArray1::<i16>::zeros(py, n, false);
        let got = {
            let mut rw = out.try_readwrite().map_err(|e| PyValueError::new_err(e.to_string()))?;
            let slice = rw.as_slice_mut().map_err(|e| PyValueError::new_err(e.to_string()))?;
            let halves = &*self.halves;
            py.detach(|| lock(&halves.consumer).pop(slice))
        };
        if got < n {
            let ro = out.readonly();
            let kept = ro.as_slice().map_err(|e| PyValueError::new_err(e.to_string()))?[..got].to_vec();
            return Ok(PyArray1::from_vec(py, kept));
        }
        Ok(out)
    }

    /// Take samples into ``out`` in place (no allocation); returns how many were taken.
    ///
    /// ``out`` is a writable, C-contiguous numpy int16 array of shape ``(n,)`` or ``(n, 1)``
    /// (a mono device buffer as ``sounddevice`` passes it). With ``fill_silence=True`` the part
    /// of ``out`` the ring could not fill is set to zero and counted in ``underrun_samples``;
    /// otherwise it is left as it was.
    #[pyo3(signature = (out, *, fill_silence = false))]
    fn pop_into(&self, py: Python<'_>, out: &Bound<'_, PyAny>, fill_silence: bool) -> PyResult<usize> {
        let arr = out_array(out)?;
        let mut rw = arr.try_readwrite().map_err(|e| {
            PyValueError::new_err(format!("out cannot be written: {e} (pass a writable int16 array)"))
        })?;
        let slice = rw.as_slice_mut().map_err(|_| {
            PyValueError::new_err("out must be C-contiguous: pass a fresh array, not a strided view")
        })?;
        let halves = &*self.halves;
        Ok(py.detach(|| {
            let mut c = lock(&halves.consumer);
            if fill_silence {
                c.pop_or_silence(slice)
            } else {
                c.pop(slice)
            }
        }))
    }

    /// Drop everything queued (consumer side); returns how many samples were dropped.
    ///
    /// Raises ``InvalidState`` if a ``PlaybackClock`` feeds this ring: use its ``interrupt()``,
    /// which also reports what was played.
    fn clear(&self, py: Python<'_>) -> PyResult<usize> {
        let halves = &*self.halves;
        // Checked first, not under the consumer's lock: the two locks are never nested.
        if lock(&halves.producer).is_none() {
            return Err(errors::invalid_state(py, OWNED_BY_CLOCK));
        }
        Ok(py.detach(|| lock(&halves.consumer).clear()))
    }

    /// Consumer side: the listener has heard the ring's samples up to ``position`` (a total
    /// count like ``consumed_samples``): what was handed to the device minus what is still in
    /// its buffer. The playback clock reports played lengths at this position. Positions only
    /// move forward (a smaller one is ignored) and are capped by ``consumed_samples``.
    fn report_heard(&self, py: Python<'_>, position: &Bound<'_, PyAny>) -> PyResult<()> {
        let v = int_arg(position, "position", ">= 0")?;
        let pos = u64::try_from(v).map_err(|_| errors::out_of_range("position", v, ">= 0"))?;
        let halves = &*self.halves;
        py.detach(|| lock(&halves.consumer).report_heard(pos));
        Ok(())
    }

    /// Total samples heard: the position last given to ``report_heard`` capped by
    /// ``consumed_samples``, or ``consumed_samples`` if none was reported.
    #[getter]
    fn heard_samples(&self) -> u64 {
        self.halves.monitor.heard_samples()
    }

    /// Capacity in samples.
    #[getter]
    fn capacity_samples(&self) -> usize {
        self.halves.monitor.capacity()
    }

    /// Samples queued and not yet popped.
    #[getter]
    fn readable_samples(&self) -> usize {
        self.halves.monitor.readable()
    }

    /// Samples that can be pushed now without being refused.
    #[getter]
    fn writable_samples(&self) -> usize {
        self.halves.monitor.writable()
    }

    /// Total samples pushed since the ring was made.
    #[getter]
    fn pushed_samples(&self) -> u64 {
        self.halves.monitor.pushed_samples()
    }

    /// Total samples consumed since the ring was made: popped, cleared or interrupted.
    #[getter]
    fn consumed_samples(&self) -> u64 {
        self.halves.monitor.consumed_samples()
    }

    /// Samples refused by ``push`` because the ring was full.
    #[getter]
    fn overrun_samples(&self) -> u64 {
        self.halves.monitor.overrun_samples()
    }

    /// Samples of silence ``pop_into(..., fill_silence=True)`` padded because the ring was empty.
    #[getter]
    fn underrun_samples(&self) -> u64 {
        self.halves.monitor.underrun_samples()
    }

    /// Samples dropped unplayed by ``clear()`` or ``PlaybackClock.interrupt()``.
    #[getter]
    fn dropped_samples(&self) -> u64 {
        self.halves.monitor.dropped_samples()
    }

    fn __len__(&self) -> usize {
        self.halves.monitor.readable()
    }

    fn __repr__(&self) -> String {
        let m = &self.halves.monitor;
        format!("PcmRing(capacity_samples={}, readable_samples={})", m.capacity(), m.readable())
    }
}

/// `out` of `pop_into` as an int16 array of a mono shape, or the error saying what to pass.
fn out_array<'a, 'py>(out: &'a Bound<'py, PyAny>) -> PyResult<&'a Bound<'py, PyArrayDyn<i16>>> {
    let Ok(arr) = out.cast::<PyArrayDyn<i16>>() else {
        let what = match out.cast::<PyUntypedArray>() {
            Ok(a) => format!("a numpy array of dtype {}", a.dtype().str()?),
            Err(_) => out.get_type().name()?.to_string(),
        };
        return Err(PyTypeError::new_err(format!("out must be a writable numpy int16 array, got {what}")));
    };
    let shape = arr.shape();
    if !(shape.len() == 1 || (shape.len() == 2 && shape[1] == 1)) {
        return Err(PyValueError::new_err(format!(
            "out must be a mono buffer of shape (n,) or (n, 1), got shape ({}): pop mono samples \
             and copy them to each channel",
            shape.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(arr)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PcmRing>()?;
    Ok(())
}
