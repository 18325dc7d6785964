//! # nvpage-buffer
//!
//! The buffer manager: a pool of page frames that every read and write of the engine goes through,
//! over any of the three file layers, thread-safe, and the place where SE2's pointer redirection
//! and copy-on-write live.
//!
//! - [`BufferPool::read`] returns a [`PageRef`]: a frame (pread, SE1, or a page SE2 has a private
//!   copy of) or, in SE2, the page in place in the mapping with no frame and no copy.
//! - [`BufferPool::write`] returns a [`PageMut`] on a frame; in SE2 the page is copied into a
//!   private frame first, and the mapping keeps the old bytes until write-back.
//! - Replacement is a clock sweep with usage counts; [`BufferPool::read_scan`] cycles a large scan
//!   through a small [`ScanRing`] of its own.
//! - Write-back (on eviction, or on request: [`BufferPool::flush_page`], `flush_pages`,
//!   `flush_all`) calls the [`WriteBackHook`] first and stores nothing unless it returns `Ok`.
//!
//! What it is not: it does not log, order or commit anything itself — the hook is how the engine
//! keeps DESIGN.md's rule 1 — and it does not sync on its own ([`BufferPool::sync`]). Dropping
//! the pool drops dirty frames unwritten.
//!
//! Invariants:
//! - A frame's bytes are read only under its latch (shared) and written only under its latch
//!   (exclusive) or by the frame's claimer; a mapped page is read in place only under its mapped
//!   latch (shared), which every write-back into the mapping holds exclusively.
//! - Eviction never waits for a latch: it tries, and skips a busy page.
//! - A request that would wait on a latch the calling thread holds is an error, not a hang.

mod chunked;
mod counters;
mod error;
mod frame;
pub mod held;
mod hook;
pub mod idhash;
mod latch;
pub mod pin;
mod pool;
mod snapshots;
mod sync;
mod versions;

pub use counters::Counters;
pub use error::{BufferError, HookError, Result};
pub use held::{Holds, Inherited, current_holds, inherit, thread_state_alive};
pub use hook::{LINE, NoUndo, WriteBack, WriteBackHook, WriteBackPage, changed_lines};
pub use pool::{BufferPool, MIN_FRAMES, PageMut, PageRef, ScanRing, View};
pub use snapshots::{SnapshotStats, Snapshots};
pub use versions::{
    FindError, ImageBuffer, LinesImage, NoVersion, PageImage, Version, VersionStats, Versions,
};
