//! The cache-line persistence path: CLWB, else CLFLUSHOPT, else CLFLUSH, chosen once from CPUID,
//! then SFENCE; and a non-temporal copy that needs no flush at all.
//!
//! SFENCE orders only the issuing core's flushes and streaming stores, so whoever stores a range
//! flushes and fences it on the same thread. On targets other than x86_64 there is no cache-line
//! path: [`FlushInstr::detect`] returns `None` and callers fall back to `msync`.

use std::sync::OnceLock;

/// The flush instruction this CPU offers, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushInstr {
    /// Write back the line and keep it cached (Skylake-SP and later).
    Clwb,
    /// Write back and evict, weakly ordered.
    Clflushopt,
    /// Write back and evict, strongly ordered (every x86_64 has it).
    Clflush,
    /// No flush at all: on a platform with eADR the CPU caches are inside the power-fail domain,
    /// so a store is persistent once it is globally visible and a fence orders it. Never
    /// detected — the CPU cannot tell — only chosen when asked ([`PersistRequest::Eadr`]).
    ///
    /// [`PersistRequest::Eadr`]: crate::PersistRequest::Eadr
    Eadr,
}

/// Cache line size assumed for flushes; x86_64 has used 64 bytes throughout.
pub const CACHE_LINE: usize = 64;

impl FlushInstr {
    /// The best instruction available, decided once per process. `None` where the target has no
    /// cache-line path (not x86_64), or where `NVPAGE_FLUSH` names an instruction the CPU lacks.
    ///
    /// `NVPAGE_FLUSH=clflushopt` or `=clflush` pins a weaker instruction, for measuring.
    pub fn detect() -> Option<FlushInstr> {
        static CHOSEN: OnceLock<Option<FlushInstr>> = OnceLock::new();
        *CHOSEN.get_or_init(|| {
            let available = detect_cpu();
            match std::env::var("NVPAGE_FLUSH").ok().as_deref() {
                Some("clflushopt") => {
                    available.filter(|f| *f != FlushInstr::Clflush).map(|_| FlushInstr::Clflushopt)
                }
                Some("clflush") => available.map(|_| FlushInstr::Clflush),
                _ => available,
            }
        })
    }

    /// The instruction's name, as reports print it.
    pub fn name(self) -> &'static str {
        match self {
            FlushInstr::Clwb => "clwb",
            FlushInstr::Clflushopt => "clflushopt",
            FlushInstr::Clflush => "clflush",
            FlushInstr::Eadr => "eadr: fence only",
        }
    }
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
fn detect_cpu() -> Option<FlushInstr> {
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    // SAFETY: CPUID exists on every x86_64 CPU; leaf 0 reports the highest leaf, and leaf 7 is
    // only read when the CPU says it exists.
    #[allow(unused_unsafe)]
    let (max_leaf, leaf7_ebx, leaf1_edx) = unsafe {
        let max_leaf = __cpuid(0).eax;
        let leaf7_ebx = if max_leaf >= 7 { __cpuid_count(7, 0).ebx } else { 0 };
        (max_leaf, leaf7_ebx, __cpuid(1).edx)
    };
    let _ = max_leaf;
    if leaf7_ebx & (1 << 24) != 0 {
        Some(FlushInstr::Clwb)
    } else if leaf7_ebx & (1 << 23) != 0 {
        Some(FlushInstr::Clflushopt)
    } else if leaf1_edx & (1 << 19) != 0 {
        Some(FlushInstr::Clflush)
    } else {
        None
    }
}

/// Miri cannot run CPUID (inline assembly): it interprets the program as on a baseline x86_64,
/// which has CLFLUSH, and under Miri [`flush`] issues no instruction.
#[cfg(all(target_arch = "x86_64", miri))]
fn detect_cpu() -> Option<FlushInstr> {
    Some(FlushInstr::Clflush)
}

#[cfg(not(target_arch = "x86_64"))]
fn detect_cpu() -> Option<FlushInstr> {
    None
}

/// Flushes every cache line overlapping `[addr, addr + len)` with `instr`. Does not fence.
///
/// Flushing only reads the lines' addresses: it never changes the bytes, so it is safe to run
/// while other threads read the range.
///
/// # Safety
/// `[addr, addr + len)` must be mapped memory for the call's duration: a flush of an unmapped
/// address faults like a load.
#[cfg(target_arch = "x86_64")]
pub unsafe fn flush(instr: FlushInstr, addr: *const u8, len: usize) {
    if len == 0 || instr == FlushInstr::Eadr {
        return;
    }
    let start = addr.addr() & !(CACHE_LINE - 1);
    let end = addr.addr() + len;
    let mut line = start;
    while line < end {
        // The line's address with `addr`'s provenance: no integer-to-pointer cast.
        let p = addr.with_addr(line);
        // Miri cannot run inline assembly. A flush never changes the bytes, so skipping it leaves
        // every load and store Miri checks as it was.
        #[cfg(miri)]
        let _ = (instr, p);
        #[cfg(not(miri))]
        // SAFETY: the instruction takes an address and writes the line back (or evicts it); it
        // neither reads nor writes the bytes as Rust sees them. The caller keeps the range mapped
        // (a flush of an unmapped address would fault like a load), and `instr` was chosen from
        // CPUID, so the CPU implements it.
        unsafe {
            match instr {
                FlushInstr::Clwb => {
                    std::arch::asm!("clwb [{0}]", in(reg) p, options(nostack, preserves_flags))
                }
                FlushInstr::Clflushopt => {
                    std::arch::asm!("clflushopt [{0}]", in(reg) p, options(nostack, preserves_flags))
                }
                FlushInstr::Clflush => {
                    std::arch::asm!("clflush [{0}]", in(reg) p, options(nostack, preserves_flags))
                }
                FlushInstr::Eadr => unreachable!("returned above: eADR flushes nothing"),
            }
        }
        line += CACHE_LINE;
    }
}

/// # Safety
/// As the x86_64 version (never called: there is no instruction to pass off x86_64).
#[cfg(not(target_arch = "x86_64"))]
pub unsafe fn flush(_instr: FlushInstr, _addr: *const u8, _len: usize) {
    unreachable!("FlushInstr::detect returns None off x86_64")
}

/// Orders this core's earlier flushes and streaming stores before anything it does next.
pub fn fence() {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: SFENCE has no operands and no memory-safety preconditions; SSE is part of the
    // x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
    // Miri has no SFENCE; it models no cache and no streaming stores, so a fence orders enough.
    #[cfg(any(not(target_arch = "x86_64"), miri))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

/// Copies `src` to `dst` so that, after a [`fence`], the bytes are in the persistence domain:
/// streaming (non-temporal) stores for the aligned body, ordinary stores plus a flush for an
/// unaligned head and tail. Does not fence.
///
/// # Safety
/// `dst..dst + src.len()` must be valid for writes, must not overlap `src`, and no other thread
/// may read or write it during the call.
#[cfg(target_arch = "x86_64")]
pub unsafe fn copy_nontemporal(instr: FlushInstr, dst: *mut u8, src: &[u8]) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128};
    let len = src.len();
    let head = (dst as usize).wrapping_neg() & 15;
    let head = head.min(len);
    let body = (len - head) & !15;
    let tail = len - head - body;
    // SAFETY: the caller grants exclusive access to `dst..dst + len`; every pointer stays inside
    // `src` or that range; the streaming stores write to 16-byte aligned addresses (`dst + head`
    // is aligned by construction); SSE2 is in the x86_64 baseline.
    unsafe {
        std::ptr::copy_nonoverlapping(src.as_ptr(), dst, head);
        let mut i = 0;
        while i < body {
            let v = _mm_loadu_si128(src.as_ptr().add(head + i).cast::<__m128i>());
            stream_store(dst.add(head + i).cast::<__m128i>(), v);
            i += 16;
        }
        std::ptr::copy_nonoverlapping(src.as_ptr().add(head + body), dst.add(head + body), tail);
    }
    // SAFETY: the caller's range is valid for writes, so mapped; head and tail lie inside it
    // (`head + body + tail == len`).
    unsafe {
        flush(instr, dst, head);
        flush(instr, dst.add(head + body), tail);
    }
}

/// Copies one whole cache line, `src`, to the line at `dst` with streaming stores: after a
/// [`fence`] it is in the persistence domain, with no flush and no read of the line first.
///
/// # Safety
/// `dst` must be valid for a 64-byte write, 16-byte aligned, and not overlap `src`; no other
/// thread may read or write it during the call.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn stream_line(dst: *mut u8, src: &[u8; CACHE_LINE]) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128};
    for i in 0..CACHE_LINE / 16 {
        // SAFETY: the loads read `src` (64 bytes, four unaligned 16-byte loads inside it); the
        // stores write the caller's 64 bytes at `dst`, 16-byte aligned, four 16-byte stores.
        unsafe {
            let v = _mm_loadu_si128(src.as_ptr().add(16 * i).cast::<__m128i>());
            stream_store(dst.add(16 * i).cast::<__m128i>(), v);
        }
    }
}

/// [`stream_line`] with two 32-byte streaming stores (VMOVNTDQ) instead of four 16-byte ones:
/// half the instructions, for a caller compiled for AVX2 (inlined there; elsewhere each
/// intrinsic would be a call).
///
/// # Safety
/// As [`stream_line`], with `dst` 32-byte aligned; and the CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn stream_line_avx2(dst: *mut u8, src: &[u8; CACHE_LINE]) {
    use std::arch::x86_64::{__m256i, _mm256_loadu_si256};
    for i in 0..CACHE_LINE / 32 {
        // SAFETY: the loads read `src` (64 bytes, two unaligned 32-byte loads inside it); the
        // stores write the caller's 64 bytes at `dst`, 32-byte aligned; the caller vouches
        // for AVX2.
        unsafe {
            let v = _mm256_loadu_si256(src.as_ptr().add(32 * i).cast::<__m256i>());
            let to = dst.add(32 * i).cast::<__m256i>();
            #[cfg(not(miri))]
            std::arch::x86_64::_mm256_stream_si256(to, v);
            // Miri: an ordinary aligned store stands in for the streaming one, as in
            // `stream_store`.
            #[cfg(miri)]
            to.write(v);
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
pub(crate) unsafe fn stream_line(_dst: *mut u8, _src: &[u8; CACHE_LINE]) {
    unreachable!("FlushInstr::detect returns None off x86_64")
}

/// One 16-byte streaming store (MOVNTDQ).
///
/// # Safety
/// `dst` must be valid for a 16-byte write and 16-byte aligned.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn stream_store(dst: *mut std::arch::x86_64::__m128i, v: std::arch::x86_64::__m128i) {
    #[cfg(not(miri))]
    // SAFETY: forwarded from the caller; SSE2 is in the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_stream_si128(dst, v)
    };
    // Miri cannot run MOVNTDQ (inline assembly in `core::arch`): an ordinary aligned store
    // stands in for it, checked for the same bounds and alignment.
    #[cfg(miri)]
    // SAFETY: forwarded from the caller.
    unsafe {
        dst.write(v)
    };
}

/// Off x86_64 there is no flush instruction ([`FlushInstr::detect`] returns `None`), so nothing
/// calls this.
///
/// # Safety
/// As on x86_64: `dst..dst + src.len()` must be valid for writes and not overlap `src`.
#[cfg(not(target_arch = "x86_64"))]
pub unsafe fn copy_nontemporal(_instr: FlushInstr, _dst: *mut u8, _src: &[u8]) {
    unreachable!("FlushInstr::detect returns None off x86_64")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_cpu_has_a_flush() {
        // Every x86_64 CPU has at least CLFLUSH.
        #[cfg(target_arch = "x86_64")]
        assert!(FlushInstr::detect().is_some());
    }

    #[test]
    fn nontemporal_copy_copies_every_alignment() {
        let Some(instr) = FlushInstr::detect() else { return };
        let src: Vec<u8> = (0..300u32).map(|i| (i * 7) as u8).collect();
        for dst_off in 0..17 {
            for len in [0usize, 1, 15, 16, 17, 63, 64, 65, 200, 283] {
                let mut dst = vec![0u8; 320];
                // SAFETY: `dst` is a local buffer of 320 bytes; `dst_off + len <= 300`.
                unsafe { copy_nontemporal(instr, dst.as_mut_ptr().add(dst_off), &src[..len]) };
                fence();
                assert_eq!(&dst[dst_off..dst_off + len], &src[..len]);
                assert!(dst[..dst_off].iter().all(|&b| b == 0));
                assert!(dst[dst_off + len..].iter().all(|&b| b == 0));
            }
        }
    }
}
