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

/// [`prefetch`] of the second 64-byte line of `*x` as well (for values that span two lines and
/// are read whole, such as the packet a switch hop reads: headers on the first line, the
/// tunnel and its tags on the second).
#[inline(always)]
pub fn prefetch_two_lines<T>(x: Option<&T>) {
    #[cfg(target_arch = "x86_64")]
    if let Some(r) = x {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = (r as *const T).cast::<i8>();
        // SAFETY: as in `prefetch`; the second address may lie past `*x`, which a hint allows
        // (`wrapping_add` makes no claim that it is in bounds).
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(p);
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
