//! A minimal safe wrapper over PMDK's libpmemlog (Debian's `libpmemlog-dev`), for the
//! side-by-side benchmark and the test that runs the same operations against both logs (Cargo
//! feature `pmdk`). libpmemlog was removed from PMDK 2.0; this links the 1.x library the
//! distribution ships.
//!
//! libpmemlog persists through libpmem, which uses cache-line flushes only on real persistent
//! memory unless `PMEM_IS_PMEM_FORCE=1` is set in the environment (then also on tmpfs: emulated
//! NVM; `PMEM_IS_PMEM_FORCE=0` forces `msync` everywhere); otherwise it calls `msync`. libpmem
//! reads the variable once per process, so callers set it before the first create or open and
//! say which in their reports.
//!
//! Every failure is libpmemlog's `errno`, as an [`io::Error`].

use std::any::Any;
use std::ffi::{CString, c_char, c_int, c_void};
use std::io::{self, IoSlice};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::path::Path;
use std::ptr::NonNull;

#[repr(C)]
struct PmemLogPool {
    _private: [u8; 0],
}

/// `pmemlog_walk`'s callback: returns 0 to stop the walk.
type ProcessChunk = unsafe extern "C" fn(buf: *const c_void, len: usize, arg: *mut c_void) -> c_int;

#[link(name = "pmemlog")]
unsafe extern "C" {
    fn pmemlog_create(path: *const c_char, poolsize: usize, mode: u32) -> *mut PmemLogPool;
    fn pmemlog_open(path: *const c_char) -> *mut PmemLogPool;
    fn pmemlog_close(plp: *mut PmemLogPool);
    fn pmemlog_nbyte(plp: *mut PmemLogPool) -> usize;
    fn pmemlog_append(plp: *mut PmemLogPool, buf: *const c_void, count: usize) -> c_int;
    fn pmemlog_appendv(plp: *mut PmemLogPool, iov: *const IoSlice<'_>, iovcnt: c_int) -> c_int;
    fn pmemlog_tell(plp: *mut PmemLogPool) -> i64;
    fn pmemlog_rewind(plp: *mut PmemLogPool);
    fn pmemlog_walk(plp: *mut PmemLogPool, chunksize: usize, cb: ProcessChunk, arg: *mut c_void);
    fn pmemlog_check(path: *const c_char) -> c_int;
}

/// An open libpmemlog pool. libpmemlog locks internally, so it may be shared between threads.
#[derive(Debug)]
pub struct PmemLog {
    pool: NonNull<PmemLogPool>,
}

// SAFETY: libpmemlog guards every call on a pool with the pool's own rwlock; the handle is a
// pointer to that pool and carries no thread-affine state.
unsafe impl Send for PmemLog {}
// SAFETY: as above: concurrent calls on one pool are libpmemlog's documented use.
unsafe impl Sync for PmemLog {}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))
}

impl PmemLog {
    /// `pmemlog_create(path, poolsize, 0644)`; the file must not exist.
    pub fn create(path: &Path, pool_bytes: u64) -> io::Result<Self> {
        Self::create_with_mode(path, pool_bytes, 0o644)
    }

    /// `pmemlog_create(path, poolsize, mode)`: a new file of `pool_bytes` bytes, or with
    /// `pool_bytes` 0 a pool built inside the existing file `path`.
    pub fn create_with_mode(path: &Path, pool_bytes: u64, mode: u32) -> io::Result<Self> {
        let c = c_path(path)?;
        let pool_bytes = usize::try_from(pool_bytes)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pool size past usize"))?;
        // SAFETY: `c` is a valid NUL-terminated string for the call's duration; the library
        // copies what it keeps.
        let p = unsafe { pmemlog_create(c.as_ptr(), pool_bytes, mode) };
        NonNull::new(p).map(|pool| Self { pool }).ok_or_else(io::Error::last_os_error)
    }

    /// `pmemlog_open(path)`.
    pub fn open(path: &Path) -> io::Result<Self> {
        let c = c_path(path)?;
        // SAFETY: as in `create_with_mode`.
        let p = unsafe { pmemlog_open(c.as_ptr()) };
        NonNull::new(p).map(|pool| Self { pool }).ok_or_else(io::Error::last_os_error)
    }

    /// `pmemlog_check(path)`: whether the pool's descriptor is consistent.
    pub fn check(path: &Path) -> io::Result<bool> {
        let c = c_path(path)?;
        // SAFETY: as in `create_with_mode`.
        match unsafe { pmemlog_check(c.as_ptr()) } {
            rc if rc < 0 => Err(io::Error::last_os_error()),
            rc => Ok(rc == 1),
        }
    }

    /// `pmemlog_append`: durable on return.
    pub fn append(&self, buf: &[u8]) -> io::Result<()> {
        // SAFETY: the pool is open (closed only in Drop); `buf` is valid for `buf.len()` bytes.
        let rc = unsafe { pmemlog_append(self.pool.as_ptr(), buf.as_ptr().cast(), buf.len()) };
        if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
    }

    /// `pmemlog_appendv`: the buffers as one append, durable on return.
    pub fn append_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<()> {
        let n = c_int::try_from(bufs.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "more buffers than an int"))?;
        // SAFETY: the pool is open; `IoSlice` is ABI-compatible with `struct iovec` on Unix (its
        // documented guarantee), and `bufs` holds `n` of them, each valid for its length.
        let rc = unsafe { pmemlog_appendv(self.pool.as_ptr(), bufs.as_ptr(), n) };
        if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
    }

    /// `pmemlog_walk`: calls `f` with the log's bytes in chunks of `chunk_size` (0: all at
    /// once) until it returns `false`. libpmemlog holds the pool's read lock meanwhile, so `f`
    /// must not append to this pool (it would deadlock). A panic in `f` stops the walk and is
    /// resumed once libpmemlog has returned.
    pub fn walk<F: FnMut(&[u8]) -> bool>(&self, chunk_size: usize, f: F) {
        struct Walker<F> {
            f: F,
            panic: Option<Box<dyn Any + Send>>,
        }
        unsafe extern "C" fn process<F: FnMut(&[u8]) -> bool>(
            buf: *const c_void,
            len: usize,
            arg: *mut c_void,
        ) -> c_int {
            // SAFETY: `arg` is the `Walker<F>` that `walk` passed, alive and borrowed by nobody
            // else for the call; libpmemlog hands `len` readable bytes at `buf`, which nothing
            // writes while its read lock is held (a zero-length chunk may have any pointer, so
            // it is not dereferenced).
            let (walker, chunk) = unsafe {
                let chunk: &[u8] =
                    if len == 0 { &[] } else { std::slice::from_raw_parts(buf.cast(), len) };
                (&mut *arg.cast::<Walker<F>>(), chunk)
            };
            match catch_unwind(AssertUnwindSafe(|| (walker.f)(chunk))) {
                Ok(more) => c_int::from(more),
                Err(p) => {
                    walker.panic = Some(p);
                    0
                }
            }
        }
        let mut walker = Walker { f, panic: None };
        // SAFETY: the pool is open; `process::<F>` matches `arg`'s type and never unwinds.
        unsafe {
            pmemlog_walk(
                self.pool.as_ptr(),
                chunk_size,
                process::<F>,
                (&raw mut walker).cast::<c_void>(),
            )
        };
        if let Some(p) = walker.panic {
            resume_unwind(p);
        }
    }

    /// `pmemlog_nbyte`: usable bytes.
    pub fn nbyte(&self) -> u64 {
        // SAFETY: the pool is open.
        unsafe { pmemlog_nbyte(self.pool.as_ptr()) as u64 }
    }

    /// `pmemlog_tell`: bytes appended.
    pub fn tell(&self) -> u64 {
        // SAFETY: the pool is open.
        unsafe { pmemlog_tell(self.pool.as_ptr()) }.max(0) as u64
    }

    /// `pmemlog_rewind`.
    pub fn rewind(&self) {
        // SAFETY: the pool is open.
        unsafe { pmemlog_rewind(self.pool.as_ptr()) }
    }
}

impl Drop for PmemLog {
    fn drop(&mut self) {
        // SAFETY: the pool is open and closed exactly once; no borrow of it outlives `self`.
        unsafe { pmemlog_close(self.pool.as_ptr()) }
    }
}
