//! A shared mapping of a file that never moves: address space for the largest size the file may
//! reach is reserved and mapped once, so growth never remaps and pointers stay valid.
//!
//! Bytes of the reservation past the file's end must never be touched (the kernel raises SIGBUS):
//! callers only form pointers below the length the file has been grown to. See
//! `docs/mmap-soundness.md`.
//!
//! memmap2 is not used here because it cannot ask for `MAP_SHARED_VALIDATE | MAP_SYNC`, which is
//! how DAX is detected, and because a reservation past the end of the file is outside its model.
//!
//! Under Miri, which cannot map files, a [`Mapping`] is a heap buffer standing in for the file's
//! pages (see [`Mapping::map`]), so that the code that stores into and reads from mappings (the
//! SE1 and SE2 layers, the log) runs under Miri's checks; `RawFile` reads and writes through it
//! while it exists, as `pread` and `pwrite` see a shared mapping's bytes.

use std::fs::File;
use std::io;
#[cfg(not(miri))]
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
    /// The file the heap buffer stands in for, written back when the mapping is dropped.
    #[cfg(miri)]
    file: Option<File>,
}

// SAFETY: `Mapping` is an address range; it owns no thread-affine state. Access to the bytes is
// governed by the callers' own synchronisation (see the layer modules), not by this type.
unsafe impl Send for Mapping {}
// SAFETY: as above: `&Mapping` only hands out the base address and the length. (Under Miri the
// stand-in's `read_at`/`write_at` also copy through `&Mapping`, as `pread`/`pwrite` do through a
// shared file: two threads doing so over the same bytes would be a race Miri reports, which is
// what the callers' discipline excludes natively too.)
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `reserved_bytes` of `file`, shared. With `try_sync`, first asks for
    /// `MAP_SHARED_VALIDATE | MAP_SYNC` and falls back to `MAP_SHARED` when the kernel or the file
    /// system refuses (`EOPNOTSUPP` or `EINVAL`); [`Mapping::is_sync`] tells which was granted.
    #[cfg(not(miri))]
    pub fn map(
        file: &File,
        reserved_bytes: usize,
        writable: bool,
        try_sync: bool,
    ) -> io::Result<Self> {
        let prot = if writable { libc::PROT_READ | libc::PROT_WRITE } else { libc::PROT_READ };
        // Read-only too: a read-only open reports the durability a writable one would get
        // (`nvpage info` shows it), and the kernel grants MAP_SYNC by the file, not the access.
        if try_sync {
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

    #[cfg(not(miri))]
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
    #[cfg(not(miri))]
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
    #[cfg(not(miri))]
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
#[cfg(not(miri))]
const MADV_POPULATE_READ: i32 = 22;
/// `MADV_POPULATE_WRITE` (Linux 5.14).
#[cfg(not(miri))]
const MADV_POPULATE_WRITE: i32 = 23;

#[cfg(not(miri))]
impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the range was returned by mmap and is unmapped exactly once; the owners of
        // pointers into it (layers, logs) are dropped before their mapping.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.reserved_bytes) };
    }
}

/// The stand-in under Miri: the same interface over a heap buffer.
///
/// - `map` allocates `reserved_bytes` (at most [`Mapping::MIRI_RESERVE_CAP`]; a longer file is
///   an error) zeroed and page-aligned, and reads the file's current bytes into it. `RawFile`
///   takes the smaller reservation as its file's largest size, so growth past it is refused.
/// - While the mapping exists it holds the file's bytes: `RawFile` reads through it
///   ([`Mapping::read_at`]) and writes both it and the file ([`Mapping::write_at`]), as `pread`
///   and `pwrite` see a shared mapping's bytes.
/// - Dropping it writes the file's length of bytes back to a writable file, so a reopen reads what
///   was stored. `msync` does nothing: Miri checks memory accesses, not durability (the power-loss
///   simulator does that), and copying a page out of the buffer while another thread stores into
///   another part of it would be a race of the stand-in's own making, not the code's.
/// - Advice does nothing; `MAP_SYNC` is never granted.
#[cfg(miri)]
impl Mapping {
    /// The largest reservation the stand-in allocates: files under Miri are small.
    pub const MIRI_RESERVE_CAP: usize = 256 << 20;

    /// See the section's introduction.
    pub fn map(
        file: &File,
        reserved_bytes: usize,
        writable: bool,
        _try_sync: bool,
    ) -> io::Result<Self> {
        use std::os::unix::fs::FileExt;
        let reserved_bytes = reserved_bytes.clamp(1, Self::MIRI_RESERVE_CAP);
        let len = file.metadata()?.len();
        if len > reserved_bytes as u64 {
            return Err(io::Error::other(format!(
                "a {len}-byte file is longer than Miri's stand-in mapping holds ({reserved_bytes})"
            )));
        }
        let layout = Self::layout(reserved_bytes)?;
        // SAFETY: the layout has a non-zero size.
        let base = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })
            .ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))?;
        let mut m = Self { base, reserved_bytes, sync: false, file: None };
        // SAFETY: `base` is a fresh allocation of `reserved_bytes >= len` bytes (checked above)
        // that nothing else refers to yet.
        let bytes = unsafe { std::slice::from_raw_parts_mut(base.as_ptr(), len as usize) };
        file.read_exact_at(bytes, 0)?;
        if writable {
            m.file = Some(file.try_clone()?);
        }
        Ok(m)
    }

    fn layout(reserved_bytes: usize) -> io::Result<std::alloc::Layout> {
        std::alloc::Layout::from_size_align(reserved_bytes, crate::persist::os_page_size())
            .map_err(io::Error::other)
    }

    /// Nothing: see the section's introduction.
    pub fn msync(&self, _offset: usize, _len: usize) -> io::Result<()> {
        Ok(())
    }

    /// Nothing: see the section's introduction.
    pub fn advise(&self, _advice: Advice, _offset: usize, _len: usize) {}

    /// `pread` from the file's bytes: `offset..offset + buf.len()` must lie below the file's
    /// length (`len_bytes`), as `read_exact_at` requires.
    pub fn read_at(&self, buf: &mut [u8], offset: u64, len_bytes: u64) -> io::Result<()> {
        let end = offset.checked_add(buf.len() as u64);
        if end.is_none_or(|e| e > len_bytes || e > self.reserved_bytes as u64) {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        // SAFETY: the range lies inside the buffer (checked above); `buf` is the caller's own
        // memory, not the buffer.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.base.as_ptr().add(offset as usize),
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        Ok(())
    }

    /// `pwrite`: the bytes go to the file and, inside the reservation, to the buffer.
    pub fn write_at(&self, file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        file.write_all_at(buf, offset)?;
        let end = (offset as usize).saturating_add(buf.len()).min(self.reserved_bytes);
        if let Some(n) = end.checked_sub(offset as usize) {
            // SAFETY: `offset..end` lies inside the buffer; `buf` is the caller's own memory.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    buf.as_ptr(),
                    self.base.as_ptr().add(offset as usize),
                    n,
                )
            };
        }
        Ok(())
    }
}

#[cfg(miri)]
impl Drop for Mapping {
    fn drop(&mut self) {
        use std::os::unix::fs::FileExt;
        if let Some(file) = &self.file {
            let len = file.metadata().map_or(0, |m| m.len() as usize).min(self.reserved_bytes);
            // SAFETY: `0..len` lies inside the buffer, and no pointer into it is used any more
            // (its owners are dropped before their mapping).
            let bytes = unsafe { std::slice::from_raw_parts(self.base.as_ptr(), len) };
            // A failed write-back shows as a difference on reopen, which the tests check.
            let _ = file.write_all_at(bytes, 0);
        }
        let layout = Self::layout(self.reserved_bytes).expect("checked when allocated");
        // SAFETY: allocated in `map` with this layout, and freed exactly once.
        unsafe { std::alloc::dealloc(self.base.as_ptr(), layout) };
    }
}
