//! The resampler's hot path allocates nothing: counted with a global allocator wrapper.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use voxwire_audio::{Pcm, Quality, Resampler};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
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
            let before = ALLOCATIONS.load(Ordering::Relaxed);
            for _ in 0..200 {
                r.process_into(Pcm::Samples(&chunk), &mut out).unwrap();
                r.process_into(Pcm::LeBytes(&bytes), &mut out).unwrap();
            }
            r.flush_into(&mut out).unwrap();
            assert_eq!(ALLOCATIONS.load(Ordering::Relaxed), before, "{a}->{b} {q:?} allocated");
        }
    }
}
