//! A cache hint for the event loop: start loading data the next event will touch. It never
//! changes what a run computes, only how long the CPU waits for memory.

/// Ask the CPU to bring `*x` into cache (a no-op for `None` and on targets without the hint).
#[inline(always)]
pub fn prefetch<T>(x: Option<&T>) {
    if let Some(r) = x {
        hint((r as *const T).cast::<i8>());
    }
}

/// [`prefetch`] of the second 64-byte line of `*x` as well (for values that span two lines and
/// are read whole, such as the packet a switch hop reads: headers on the first line, the
/// tunnel and its tags on the second).
#[inline(always)]
pub fn prefetch_two_lines<T>(x: Option<&T>) {
    if let Some(r) = x {
        let p = (r as *const T).cast::<i8>();
        hint(p);
        // The second address may lie past `*x`, which a hint allows (`wrapping_add` makes no
        // claim that it is in bounds).
        hint(p.wrapping_add(64));
    }
}

/// The one prefetch instruction.
#[inline(always)]
fn hint(p: *const i8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint that never faults, whatever the address, and SSE is part
        // of every x86_64 CPU.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
