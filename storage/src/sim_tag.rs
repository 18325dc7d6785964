//! The hooks [`RawFile`](crate::RawFile) calls so the power-loss simulator can follow a file.
//! Without the `sim` feature they compile to nothing.

/// The kinds of call the simulator can count and fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SimOp {
    /// A `pread`.
    Read,
    /// A `pwrite`.
    Write,
    /// Growth (`fallocate` and its `fsync`).
    Grow,
    /// A persist: cache-line flush and fence, `msync`, `fdatasync` or `fsync`.
    Persist,
}

#[cfg(feature = "sim")]
pub(crate) use crate::sim::SimTag;

/// No simulator in this build: every hook is a no-op.
#[cfg(not(feature = "sim"))]
#[derive(Debug, Clone, Default)]
pub(crate) struct SimTag;

#[cfg(not(feature = "sim"))]
use std::{fs::File, io, path::Path};

#[cfg(not(feature = "sim"))]
impl SimTag {
    #[inline(always)]
    pub(crate) fn track(_path: &Path, _file: &File) -> Self {
        SimTag
    }

    #[inline(always)]
    pub(crate) fn check(&self, _op: SimOp) -> io::Result<()> {
        Ok(())
    }

    #[inline(always)]
    pub(crate) fn persisted(&self, _offset: u64, _len: u64) {}

    #[inline(always)]
    pub(crate) fn synced(&self) {}
}
