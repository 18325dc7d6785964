//! What the JSON holds: one line per measured query, per refresh transaction and per database,
//! and the report around them.

use std::collections::BTreeMap;

use serde::Serialize;

use super::args::Config;
use super::output::Summary;
use crate::machine::Machine;
use crate::tpch::runner::{AnswerRecord, LoadRecord};

/// One measured query: a line of the JSON's `queries`.
#[derive(Clone, Debug, Serialize)]
pub struct QueryRun {
    /// `q01` or `q06`.
    pub query: String,
    /// `pread`, `se1`, `se2`.
    pub layer: String,
    /// `disk` or `tmpfs`.
    pub medium: String,
    /// The data file's persistence mode and what it survives.
    pub durability: String,
    /// `alone` (no writer) or `beside` (the refresh loop running on another thread).
    pub mode: String,
    /// The run, from 0.
    pub run: u32,
    /// Wall time, from `begin_read` to the end of the read transaction (one scan thread).
    pub wall_ms: f64,
    /// User CPU time of the query's thread (10 ms resolution).
    pub user_ms: f64,
    /// System CPU time of the query's thread.
    pub sys_ms: f64,
    /// The snapshot the query read (commits since the database was opened).
    pub snapshot: u64,
    /// The refresh sets present in that snapshot (inserted by RF1, not yet deleted by RF2).
    pub sets_in_snapshot: Vec<u64>,
    /// Commits made while the query ran: how far its snapshot fell behind.
    pub commits_during: u64,
    /// Page reads served from old versions.
    pub version_reads: u64,
    /// Readers' waits for a page latch (this query's: it is the only reader).
    pub latch_waits: u64,
    /// Their total time.
    pub latch_wait_ns: u64,
    /// Old page versions held at the query's end, its snapshot still live.
    pub versions_at_end: u64,
    /// Their memory.
    pub version_bytes_at_end: u64,
    /// Cores other processes kept busy at normal priority while the query ran, on average (the
    /// machine's busy time less this process's): above a few hundredths, other work competed.
    pub others_cores: f64,
    /// Cores niced processes kept busy meanwhile.
    pub others_niced_cores: f64,
}

/// One refresh function, one write transaction: a line of the JSON's `refreshes`.
#[derive(Clone, Debug, Serialize)]
pub struct RefreshRun {
    /// `rf1` or `rf2`.
    pub function: String,
    /// The refresh set it inserted or deleted.
    pub set: u64,
    /// `pread`, `se1`, `se2`.
    pub layer: String,
    /// `disk` or `tmpfs`.
    pub medium: String,
    /// The durability of its commit (the data file's mode; the log is on the same medium).
    pub durability: String,
    /// `alone`; `beside` (began after the first query of the run began and committed before
    /// its last query ended); `edge` (beside part of the time only: not summarised);
    /// `warm-up` (the first pair, not summarised).
    pub mode: String,
    /// The run, from 0.
    pub run: u32,
    /// Its commit's number.
    pub commit: u64,
    /// When it began, in ms since its phase began.
    pub start_ms: f64,
    /// Wall time from `begin_write` to the return of its durable commit.
    pub ms: f64,
    /// User CPU time of the loop's thread.
    pub user_ms: f64,
    /// System CPU time of the loop's thread.
    pub sys_ms: f64,
    /// Orders inserted or deleted.
    pub orders: u64,
    /// Lineitems inserted or deleted.
    pub lineitems: u64,
    /// Memory held by old page versions just after the commit.
    pub version_bytes_after: u64,
    /// Cores other processes kept busy at normal priority meanwhile, on average.
    pub others_cores: f64,
    /// Cores niced processes kept busy meanwhile.
    pub others_niced_cores: f64,
}

/// One database's checks and sizes: a line of the JSON's `databases`.
#[derive(Clone, Debug, Serialize)]
pub struct DatabaseRecord {
    /// The layer.
    pub layer: String,
    /// The medium.
    pub medium: String,
    /// The data file's durability.
    pub durability: String,
    /// The pool's size.
    pub pool_bytes: u64,
    /// Rows of the refreshed tables as loaded.
    pub rows_loaded: BTreeMap<String, u64>,
    /// Rows of the refreshed tables after the last refresh pair.
    pub rows_after: BTreeMap<String, u64>,
    /// How RF2 found its rows: `scan` or `index`.
    pub rf2: String,
    /// The data file's size when the measurements began.
    pub data_bytes_start: u64,
    /// The data file's size after the last refresh pair.
    pub data_bytes_after: u64,
    /// Refresh pairs run (RF1 + RF2 of one set), the warm-up included.
    pub refresh_pairs: u64,
    /// Queries whose answer was checked against the state of their snapshot (all of them).
    pub snapshot_checks: u64,
    /// Of those, the ones whose snapshot held a refresh set (taken between an RF1 and its RF2).
    pub snapshot_checks_with_sets: u64,
    /// The most memory old versions held, over every query's end and every commit.
    pub peak_version_bytes: u64,
}

/// The configuration, as the JSON's `config`.
#[derive(Debug, Serialize)]
pub struct ConfigOut {
    /// The validated options.
    #[serde(flatten)]
    pub options: Config,
    /// Orders in each refresh set (RF1 inserts and RF2 deletes as many).
    pub orders_per_refresh: u64,
    /// One load per medium; each layer ran on a copy of it.
    pub loads: Vec<LoadRecord>,
    /// Caveats.
    pub notes: Vec<String>,
}

/// Everything a `refresh` run produced: the JSON file's content.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Where it ran.
    pub machine: Machine,
    /// How it was configured.
    pub config: ConfigOut,
    /// Per database: row counts, sizes, checks.
    pub databases: Vec<DatabaseRecord>,
    /// Medians and ratios, as the terminal tables show them.
    pub summary: Summary,
    /// Every measured query.
    pub queries: Vec<QueryRun>,
    /// Every refresh transaction.
    pub refreshes: Vec<RefreshRun>,
    /// The loaded database's answers (equal on every layer and medium: checked).
    pub results: Vec<AnswerRecord>,
}
