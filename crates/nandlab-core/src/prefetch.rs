//! Software prefetch of state the engine will touch soon (the L2P entry of the next request, the
//! per-page bytes of the next transaction a die will start). The engine's working set (an
//! 8 MB L2P and the per-page arrays of a 16 GiB device) does not fit the core's cache, and most
//! of a replay's time without prefetching is spent waiting for those lines; a prefetch issued
//! one event ahead hides that wait. Prefetching never changes what is computed.

/// Hint that the cache line holding `*p` will be read soon. No-op off x86-64.
#[inline(always)]
pub(crate) fn read<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` only hints the cache; it never dereferences the pointer and does
    // not fault on any address, so any pointer value is sound. SSE is part of the x86-64
    // baseline, so the target feature is always present. Measured: see `engine` (issue 12).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Prefetch element `i` of `v` if it exists.
#[inline(always)]
pub(crate) fn slice<T>(v: &[T], i: usize) {
    if i < v.len() {
        read(v.as_ptr().wrapping_add(i));
    }
}
