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
