//! How bytes become durable: the one module that decides, per file, at open.
//!
//! | mode            | chosen when                                              | a range is persisted by                     | guarantee |
//! |-----------------|----------------------------------------------------------|---------------------------------------------|-----------|
//! | [`Dax`]         | `mmap(MAP_SHARED_VALIDATE \| MAP_SYNC)` succeeds          | CLWB/CLFLUSHOPT/CLFLUSH per line, SFENCE    | power loss |
//! | [`EmulatedNvm`] | the option or `NVPAGE_EMULATE_NVM=1`, on tmpfs/ramfs only | the same cache-line path                    | process crash only |
//! | (either, eADR)  | [`PersistRequest::Eadr`] only: eADR cannot be detected     | SFENCE alone, no flush                      | as above, if the platform has eADR |
//! | [`Msync`]       | default for mapped files                                 | `msync(MS_SYNC)` of the range's OS pages (a log's records: `fdatasync`) | power loss, as far as the FS keeps its promise |
//! | [`Fdatasync`]   | the pread layer                                          | `fdatasync` of the file                     | power loss, as far as the FS keeps its promise |
//!
//! In the two sync modes the bytes reach the page cache by `pwrite`, the mapping (in [`Msync`]
//! mode) serving reads: a store into a clean page of a shared mapping would make the file system
//! dirty its whole folio. [`Durability`]'s text says so ("msync on disk (pwrite, then msync or
//! fdatasync)": [`Durability::write_path`]), so that no report suggests that pages are written
//! through the mapping.
//!
//! Emulated NVM is DRAM: its flushes model NVM's cost, not durability, and no report calls it
//! durable. A mapped disk file is never put on cache-line flushes: asking for them, by the option
//! or by the environment variable alike, is
//! [`StorageError::EmulationRefused`](crate::StorageError::EmulationRefused) (unless the file is
//! DAX), never a silent fallback to `msync`. On a medium that is itself memory (tmpfs, ramfs)
//! every mode survives a process crash and nothing survives a power loss; [`Durability`] says so.
//!
//! [`Dax`]: PersistMode::Dax
//! [`EmulatedNvm`]: PersistMode::EmulatedNvm
//! [`Msync`]: PersistMode::Msync
//! [`Fdatasync`]: PersistMode::Fdatasync

pub mod cacheline;

use std::fmt;

pub use cacheline::FlushInstr;

/// The environment variable that asks for the cache-line path for every mapped file opened with
/// [`PersistRequest::Auto`]: `1` or `true` acts as [`PersistRequest::CacheLine`] (emulated NVM on
/// tmpfs/ramfs, DAX where `MAP_SYNC` is granted, refused elsewhere); any other value, or none,
/// asks for nothing.
pub const EMULATE_NVM_ENV: &str = "NVPAGE_EMULATE_NVM";

/// How a file's ranges are made durable. Decided once, at open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PersistMode {
    /// A DAX mapping with `MAP_SYNC`: cache-line flushes plus SFENCE survive power loss, by the
    /// kernel's contract for that mapping.
    Dax,
    /// Cache-line flushes on a tmpfs/ramfs mapping. Survives a process crash only: the medium is
    /// DRAM. Models NVM's cost, never its durability.
    EmulatedNvm,
    /// `msync(MS_SYNC)` over a shared mapping. Survives power loss as far as the file system
    /// keeps `msync`'s promise. Pages are written back with `pwrite` in this mode, and Linux's
    /// `msync` syncs the file's range however its pages were dirtied ([`crate::RawFile::sync`]).
    /// A log's records are written with `pwrite` on a disk (copied into the mapping on memory)
    /// and made durable by `fdatasync`, each committer through an open file description of its
    /// own ([`crate::RawFile::sync_own`]).
    Msync,
    /// `fdatasync` after `pwrite`. Survives power loss as far as the file system keeps
    /// `fdatasync`'s promise.
    Fdatasync,
}

impl PersistMode {
    /// Whether ranges are persisted by cache-line flushes (and so stores must be flushed by the
    /// thread that made them).
    pub fn uses_cache_lines(self) -> bool {
        matches!(self, PersistMode::Dax | PersistMode::EmulatedNvm)
    }

    /// A short name for reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            PersistMode::Dax => "dax",
            PersistMode::EmulatedNvm => "emulated-nvm",
            PersistMode::Msync => "msync",
            PersistMode::Fdatasync => "fdatasync",
        }
    }

    /// The granularity the medium makes durable at once, for the simulator and for alignment.
    pub fn persist_granule(self) -> usize {
        match self {
            PersistMode::Dax | PersistMode::EmulatedNvm => cacheline::CACHE_LINE,
            PersistMode::Msync | PersistMode::Fdatasync => os_page_size(),
        }
    }
}

impl fmt::Display for PersistMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a caller asks for at open.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PersistRequest {
    /// DAX if `MAP_SYNC` works, else `msync`; with `NVPAGE_EMULATE_NVM=1` set
    /// ([`EMULATE_NVM_ENV`]), what [`PersistRequest::CacheLine`] gets, refusal included. The
    /// pread layer always uses `fdatasync`.
    #[default]
    Auto,
    /// Force the cache-line path: DAX if `MAP_SYNC` works, else emulated NVM, which is allowed
    /// only on tmpfs/ramfs. The pread layer has no mapping to flush and keeps `fdatasync`.
    CacheLine,
    /// As [`PersistRequest::CacheLine`], for a platform with eADR (the CPU caches inside the
    /// power-fail domain, as Intel's eADR or CXL's global persistent flush provide): a range is
    /// persisted by a fence alone, with no cache-line flush ([`FlushInstr::Eadr`]). Nothing can
    /// detect eADR, so it is used only when asked; on a platform without it a power loss loses
    /// whatever the caches held. Reports name it (`eadr: fence only`).
    Eadr,
}

impl PersistRequest {
    /// Whether this asks for the cache-line path.
    pub fn wants_cache_lines(self) -> bool {
        matches!(self, PersistRequest::CacheLine | PersistRequest::Eadr)
    }
}

/// What kind of medium a file lives on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Medium {
    /// tmpfs: memory. Nothing on it survives a power loss.
    Tmpfs,
    /// ramfs: memory. Nothing on it survives a power loss.
    Ramfs,
    /// Anything else (a disk file system, or a DAX-capable one).
    Disk,
}

impl Medium {
    /// Whether the medium is memory, so a power loss loses everything on it.
    pub fn is_memory(self) -> bool {
        matches!(self, Medium::Tmpfs | Medium::Ramfs)
    }

    /// A short name for reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Medium::Tmpfs => "tmpfs",
            Medium::Ramfs => "ramfs",
            Medium::Disk => "disk",
        }
    }
}

/// A file's persistence mode together with the medium under it: what a report should print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Durability {
    /// How ranges are persisted.
    pub mode: PersistMode,
    /// The cache-line instruction used, in the cache-line modes.
    pub flush: Option<FlushInstr>,
    /// Where the file lives.
    pub medium: Medium,
}

impl Durability {
    /// What a persisted range survives, in DESIGN.md's words.
    pub fn guarantee(&self) -> &'static str {
        let eadr = self.flush == Some(FlushInstr::Eadr);
        match (self.mode, self.medium.is_memory()) {
            (PersistMode::Dax, _) if eadr => {
                "power loss, by the kernel's contract for MAP_SYNC mappings, if the platform's \
                 eADR keeps the CPU caches in the power-fail domain (asked for, not detected)"
            }
            (PersistMode::Dax, _) => "power loss, by the kernel's contract for MAP_SYNC mappings",
            (PersistMode::EmulatedNvm, _) => {
                "a process crash only: the medium is DRAM, flushes model NVM's cost, not durability"
            }
            (_, true) => "a process crash only: the medium is DRAM",
            (PersistMode::Msync, false) => {
                "power loss, as far as the file system keeps msync's and fdatasync's promise"
            }
            (PersistMode::Fdatasync, false) => {
                "power loss, as far as the file system keeps fdatasync's promise"
            }
        }
    }

    /// How bytes reach the file and are made durable in the two sync modes, as the code does
    /// it: pages and records are written with `pwrite` (in [`PersistMode::Msync`] mode the
    /// mapping serves reads; on a memory medium a log's records are copied into it instead),
    /// then made durable by `msync` of the range (pages, a log's state word) or by `fdatasync`
    /// (the pread layer; a record log's commits, each through an open file description of its
    /// own). `None` for the cache-line modes, whose name and instruction say it.
    pub fn write_path(&self) -> Option<&'static str> {
        match (self.mode, self.medium.is_memory()) {
            (PersistMode::Msync, false) => Some("pwrite, then msync or fdatasync"),
            (PersistMode::Msync, true) => Some("pwrite or a copy, then msync or fdatasync"),
            (PersistMode::Fdatasync, _) => Some("pwrite, then fdatasync"),
            (PersistMode::Dax | PersistMode::EmulatedNvm, _) => None,
        }
    }

    /// Whether persisted data survives a power loss.
    pub fn survives_power_loss(&self) -> bool {
        self.mode == PersistMode::Dax || !self.medium.is_memory()
    }
}

impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} on {}", self.mode, self.medium.name())?;
        if let Some(instr) = self.flush.filter(|_| self.mode.uses_cache_lines()) {
            write!(f, " ({})", instr.name())?;
        }
        if let Some(path) = self.write_path() {
            write!(f, " ({path})")?;
        }
        write!(f, ": survives {}", self.guarantee())
    }
}

/// The OS page size, read once.
pub fn os_page_size() -> usize {
    static SIZE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *SIZE.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if v > 0 { v as usize } else { 4096 }
    })
}

/// Whether `NVPAGE_EMULATE_NVM` asks for the cache-line path.
pub(crate) fn env_requests_emulation() -> bool {
    std::env::var(EMULATE_NVM_ENV).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}
