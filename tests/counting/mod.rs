//! A counting global allocator for the tests that bound what hostile inputs make a reader
//! allocate (`tests/memory.rs`, `tests/frame.rs`): each test binary that declares `mod
//! counting;` counts every allocation it makes.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator and only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
        PEAK.fetch_max(live, Ordering::SeqCst);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The counters are global, and building a hostile input allocates too: every test in
/// this file holds this lock for its whole body, so no other test allocates while one
/// measures.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs `f`, returning the peak of bytes allocated beyond those live before, and the time.
/// Taking the guard proves the caller holds [`SERIAL`].
pub fn measure(
    _serial: &std::sync::MutexGuard<'static, ()>,
    f: impl FnOnce(),
) -> (usize, Duration) {
    let before = LIVE.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let start = Instant::now();
    f();
    (PEAK.load(Ordering::SeqCst) - before, start.elapsed())
}
