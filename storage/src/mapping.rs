//! A shared mapping of a file that never moves: address space for the largest size the file may
//! reach is reserved and mapped once, so growth never remaps and pointers stay valid.
//!
//! Bytes of the reservation past the file's end must never be touched (the kernel raises SIGBUS):
//! callers only form pointers below the length the file has been grown to. See
//! `docs/mmap-soundness.md`.
//!
//! memmap2 is not used here because it cannot ask for `MAP_SHARED_VALIDATE | MAP_SYNC`, which is
//! how DAX is detected, and because a reservation past the end of the file is outside its model.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;

/// Access advice for a range of the mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advice {
    /// The whole mapping will be read sequentially (`MADV_SEQUENTIAL`); only ever applied to the
    /// whole mapping, since advice on sub-ranges splits the kernel's mapping records.
    Sequential,
    /// The range will be read soon: start reading it ahead in the background (`MADV_WILLNEED`).
    WillNeed,
    /// The range will be read soon: fill its page tables now (`MADV_POPULATE_READ`, falling back
    /// to `MADV_WILLNEED`). Synchronous: worth it where the file is memory, so that reads then
    /// take no page faults; on a disk it would wait for the reads.
    Populate,
    /// The range will be written soon: fill its page tables writable now
    /// (`MADV_POPULATE_WRITE`; nothing where the kernel lacks it). For files that are memory or
    /// DAX only: on a disk file it would read every page and leave it dirty for write-back.
    PopulateWrite,
    /// Back to the default.
    Normal,
}

/// A fixed shared mapping of a file.
#[derive(Debug)]
pub struct Mapping {
    base: NonNull<u8>,
    reserved_bytes: usize,
    sync: bool,
}

// SAFETY: `Mapping` is an address range; it owns no thread-affine state. Access to the bytes is
// governed by the callers' own synchronisation (see the layer modules), not by this type.
unsafe impl Send for Mapping {}
// SAFETY: as above: `&Mapping` only hands out the base address and the length.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `reserved_bytes` of `file`, shared. With `try_sync`, first asks for
    /// `MAP_SHARED_VALIDATE | MAP_SYNC` and falls back to `MAP_SHARED` when the kernel or the file
    /// system refuses (`EOPNOTSUPP` or `EINVAL`); [`Mapping::is_sync`] tells which was granted.
    pub fn map(
        file: &File,
        reserved_bytes: usize,
        writable: bool,
        try_sync: bool,
    ) -> io::Result<Self> {
        let prot = if writable { libc::PROT_READ | libc::PROT_WRITE } else { libc::PROT_READ };
        if try_sync && writable {
            match Self::mmap(file, reserved_bytes, prot, libc::MAP_SHARED_VALIDATE | libc::MAP_SYNC)
            {
                Ok(base) => return Ok(Self { base, reserved_bytes, sync: true }),
                Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EINVAL)) => {}
                Err(e) => return Err(e),
            }
        }
        let base = Self::mmap(file, reserved_bytes, prot, libc::MAP_SHARED | libc::MAP_NORESERVE)?;
        Ok(Self { base, reserved_bytes, sync: false })
    }

    fn mmap(file: &File, len: usize, prot: i32, flags: i32) -> io::Result<NonNull<u8>> {
        // SAFETY: a fresh mapping at an address the kernel chooses (no MAP_FIXED), so no existing
        // memory is replaced; the fd is open for the call's duration.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, file.as_raw_fd(), 0) };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))
    }

    /// The first byte of the mapping (file offset 0).
    pub fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// Bytes reserved: the largest size the file may reach while mapped.
    pub fn reserved_bytes(&self) -> usize {
        self.reserved_bytes
    }

    /// Whether the mapping was granted `MAP_SYNC` (a DAX file).
    pub fn is_sync(&self) -> bool {
        self.sync
    }

    /// `msync(MS_SYNC)` over the OS pages covering `[offset, offset + len)`.
    pub fn msync(&self, offset: usize, len: usize) -> io::Result<()> {
        let page = crate::persist::os_page_size();
        let start = offset & !(page - 1);
        let end = (offset + len).min(self.reserved_bytes);
        if end <= start {
            return Ok(());
        }
        // SAFETY: `start..end` lies inside the reservation; msync reads no Rust-visible memory.
        let rc = unsafe {
            libc::msync(self.base.as_ptr().add(start).cast(), end - start, libc::MS_SYNC)
        };
        if rc != 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
    }

    /// Gives the kernel access advice for `[offset, offset + len)` (ignored for `Sequential` and
    /// `Normal`, which apply to the whole mapping). Advice is a hint: failures are ignored.
    pub fn advise(&self, advice: Advice, offset: usize, len: usize) {
        let page = crate::persist::os_page_size();
        let (start, end, flag) = match advice {
            Advice::Sequential => (0, self.reserved_bytes, libc::MADV_SEQUENTIAL),
            Advice::Normal => (0, self.reserved_bytes, libc::MADV_NORMAL),
            Advice::WillNeed => {
                (offset & !(page - 1), (offset + len).min(self.reserved_bytes), libc::MADV_WILLNEED)
            }
            Advice::Populate => {
                (offset & !(page - 1), (offset + len).min(self.reserved_bytes), MADV_POPULATE_READ)
            }
            Advice::PopulateWrite => {
                (offset & !(page - 1), (offset + len).min(self.reserved_bytes), MADV_POPULATE_WRITE)
            }
        };
        if end <= start {
            return;
        }
        // SAFETY: the range lies inside our reservation; advice never changes memory contents
        // (MADV_POPULATE_READ / _WRITE only fill page tables from the file, as a read or a write
        // fault would, without touching the bytes).
        let rc = unsafe { libc::madvise(self.base.as_ptr().add(start).cast(), end - start, flag) };
        if rc != 0 && flag == MADV_POPULATE_READ {
            // Older kernels lack MADV_POPULATE_READ: read ahead instead.
            // SAFETY: as above.
            unsafe {
                libc::madvise(
                    self.base.as_ptr().add(start).cast(),
                    end - start,
                    libc::MADV_WILLNEED,
                )
            };
        }
    }
}

/// `MADV_POPULATE_READ` (Linux 5.14); not in every libc release.
const MADV_POPULATE_READ: i32 = 22;
/// `MADV_POPULATE_WRITE` (Linux 5.14).
const MADV_POPULATE_WRITE: i32 = 23;

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the range was returned by mmap and is unmapped exactly once; the owners of
        // pointers into it (layers, logs) are dropped before their mapping.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.reserved_bytes) };
    }
}
