//! A cache hint for the event loop: start loading data the next event will touch. It never
//! changes what a run computes, only how long the CPU waits for memory.

/// Ask the CPU to bring `*x` into cache (a no-op for `None` and on targets without the hint).
#[inline(always)]
pub fn prefetch<T>(x: Option<&T>) {
    #[cfg(target_arch = "x86_64")]
    if let Some(r) = x {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint that never faults, and SSE is part of every x86_64 CPU;
        // the pointer comes from a live reference anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((r as *const T).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
