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

/// The points inside a page file where the simulator can hold a thread (`sim::Sim::pause`), so
/// that a test runs another thread's operation in the window between two steps: a race's losing
/// order, made deterministic.
#[cfg(any(feature = "sim", feature = "pread", feature = "se1", feature = "se2"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PausePoint {
    /// A read that checks the page (not verified, or a store into it began since the read did)
    /// has its bytes — copied out, or SE2's in place, whose stripe latch is held shared here —
    /// and has not checked them yet.
    BeforeCheck,
    /// A store into a page (a sealed write, `store_sealed`, `restore_parts`) has its bytes in
    /// the file and has not yet recorded whether the page is verified.
    BeforeRecord,
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

    #[cfg(any(feature = "pread", feature = "se1", feature = "se2"))]
    #[inline(always)]
    pub(crate) fn pause(&self, _at: PausePoint, _page: u64) {}
}
