//! A minimal safe wrapper over PMDK's libpmemlog (Debian's `libpmemlog-dev`), for the
//! side-by-side benchmark only (Cargo feature `pmdk`). libpmemlog was removed from PMDK 2.0; this
//! links the 1.x library the distribution ships.
//!
//! libpmemlog persists through libpmem, which uses cache-line flushes only on real persistent
//! memory unless `PMEM_IS_PMEM_FORCE=1` is set in the environment (then also on tmpfs: emulated
//! NVM); otherwise it calls `msync`. Callers set that before the first create and say which in
//! their reports.

use std::ffi::{CString, c_char, c_int, c_void};
use std::io;
use std::path::Path;
use std::ptr::NonNull;

#[repr(C)]
struct PmemLogPool {
    _private: [u8; 0],
}

#[link(name = "pmemlog")]
unsafe extern "C" {
    fn pmemlog_create(path: *const c_char, poolsize: usize, mode: u32) -> *mut PmemLogPool;
    fn pmemlog_close(plp: *mut PmemLogPool);
    fn pmemlog_nbyte(plp: *mut PmemLogPool) -> usize;
    fn pmemlog_append(plp: *mut PmemLogPool, buf: *const c_void, count: usize) -> c_int;
    fn pmemlog_tell(plp: *mut PmemLogPool) -> i64;
    fn pmemlog_rewind(plp: *mut PmemLogPool);
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

impl PmemLog {
    /// `pmemlog_create(path, poolsize, 0644)`; the file must not exist.
    pub fn create(path: &Path, pool_bytes: u64) -> io::Result<Self> {
        let c = CString::new(path.as_os_str().as_encoded_bytes()).map_err(io::Error::other)?;
        // SAFETY: `c` is a valid NUL-terminated string for the call's duration; the library
        // copies what it keeps.
        let p = unsafe { pmemlog_create(c.as_ptr(), pool_bytes as usize, 0o644) };
        NonNull::new(p).map(|pool| Self { pool }).ok_or_else(io::Error::last_os_error)
    }

    /// `pmemlog_append`: durable on return.
    pub fn append(&self, buf: &[u8]) -> io::Result<()> {
        // SAFETY: the pool is open (closed only in Drop); `buf` is valid for `buf.len()` bytes.
        let rc = unsafe { pmemlog_append(self.pool.as_ptr(), buf.as_ptr().cast(), buf.len()) };
        if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
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
