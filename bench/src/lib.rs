//! nvpage's benchmarks as a library, so the `nvpage-bench` binary and the criterion benches share
//! fixtures and measuring code.
//!
//! - [`engine`]: small durable transactions beside SQLite's, bulk loads and recovery time.
//! - [`kv`]: point lookups, range scans and an update mix on a key-value data set, nvpage's
//!   indexed table beside LMDB, redb and SQLite.
//! - [`log`]: the log beside `write`+`fdatasync` and libpmemlog.
//! - [`refresh`]: TPC-H's refresh functions in a loop of write transactions beside Q1 and Q6,
//!   which read snapshots.
//! - [`storage`]: the file layers against each other and against the machine.
//! - [`tpch`]: the TPC-H query-time comparison across layers, media, pool sizes, cold and warm.
//! - [`features`]: the engines nvpage is compared with (SQLite, LMDB, redb), each compiled in
//!   only with its Cargo feature (`sqlite`, `lmdb`, `redb`; `compare` for all three).
//! - [`chart`], [`cputime`], [`dirs`], [`machine`], [`memlimit`], [`memory`], [`report`],
//!   [`stats`]: what every benchmark shares — SVG bar charts, CPU time, the disk and tmpfs
//!   directories, machine facts, the memory limit in force, memory baselines, tables and JSON,
//!   medians.
//!
//! What it is not: a test suite. Nothing here asserts on a time.

// `deny`, not `forbid`, for two calls, each allowed where it is, with its proof: heed's
// `EnvOpenOptions::open` (LMDB, for the kv benchmark's comparison, feature `lmdb`) in
// `kv/engines/lmdb_store.rs`, and `RawFile::store_persist` in the log benchmark's floor row
// (`log.rs`, `small_floor`). No other code of the crate has `unsafe`.
#![deny(unsafe_code)]

pub mod chart;
pub mod cputime;
pub mod dirs;
pub mod engine;
pub mod features;
pub mod kv;
pub mod log;
pub mod machine;
pub mod memlimit;
pub mod memory;
pub mod refresh;
pub mod report;
pub mod stats;
pub mod storage;
pub mod tpch;

/// The error type of the benchmark drivers: they report and stop.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
