//! A hint to the CPU to bring bytes into the cache before they are read: a scan names the row
//! it will read next while it reads this one, so the row's first touch does not wait for memory.

/// Asks the CPU to start loading the cache line holding `bytes[0]` (nothing if `bytes` is
/// empty). Only a hint: it never faults, changes nothing and may be ignored.
#[inline(always)]
pub fn prefetch(bytes: &[u8]) {
    // Miri models no cache (and may not run the instruction): nothing to ask for.
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if !bytes.is_empty() {
        // SAFETY: `_mm_prefetch` needs SSE, which every x86_64 CPU has (it is in the target's
        // baseline features, so the call is sound on any CPU this code runs on); a prefetch
        // reads nothing architecturally and never faults, whatever the address (and this one
        // is inside a live slice).
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                bytes.as_ptr().cast(),
            )
        };
    }
    #[cfg(any(not(target_arch = "x86_64"), miri))]
    let _ = bytes;
}

/// Asks the CPU to start loading the cache line holding the byte at `p`, which need not point at
/// anything readable: for a hint about memory the caller may not borrow yet (a page another
/// thread may be changing, a frame that may be reused). Only a hint, as [`prefetch`].
#[inline(always)]
pub fn prefetch_addr(p: *const u8) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: as in `prefetch`; a prefetch does not dereference its address in the language's
    // sense (nothing is read architecturally, no fault is raised for any address), so `p` need
    // not be valid, aligned or unaliased.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(any(not(target_arch = "x86_64"), miri))]
    let _ = p;
}
