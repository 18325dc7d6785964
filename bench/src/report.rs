//! Results: one [`Sample`] per measurement and run, summarised into [`Row`]s (median and range
//! over runs) for the terminal table and the JSON file.
//!
//! Every sample names its durability, so no number is published without it.

use std::path::Path;

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};
use serde::Serialize;

use crate::cputime::{CpuTimes, sys_share};
use crate::machine::Machine;
use crate::stats::summarize;

/// The unit a measurement is in, and so which way is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Unit {
    /// Decimal gigabytes per second (1 GB = 10^9 bytes); higher is better.
    #[serde(rename = "GB/s")]
    GbPerSec,
    /// Nanoseconds per operation; lower is better.
    #[serde(rename = "ns/op")]
    NsPerOp,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Unit::GbPerSec => "GB/s",
            Unit::NsPerOp => "ns/op",
        }
    }
}

/// What was measured, where, and how durable the bytes were: the key a [`Row`] groups by.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Subject {
    /// The test: `seq-read`, `mem-read`, `memcpy`, `rand-read`, `rand-write`, ...
    pub test: String,
    /// `cold` or `warm` for passes over a file; empty otherwise.
    pub pass: String,
    /// The file layer, or `-` for memory baselines.
    pub layer: String,
    /// `disk`, `tmpfs`, or `dram` for memory baselines.
    pub medium: String,
    /// The durability of the bytes measured: `buffered (...)`, `persisted (...)`, or the file's
    /// mode for reads.
    pub durability: String,
    /// What the measured bytes survive: `power loss`, `process crash`, or `-` for reads.
    pub survives: String,
}

/// One measurement in one run.
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// What was measured.
    #[serde(flatten)]
    pub subject: Subject,
    /// The run, from 0.
    pub run: usize,
    /// The measurement, in `unit`.
    pub value: f64,
    /// The measurement's unit.
    pub unit: Unit,
    /// Wall time of the measured interval.
    pub wall_ms: f64,
    /// User CPU time of the interval (microseconds from `getrusage`, see `cputime`).
    pub user_ms: f64,
    /// System CPU time of the interval (as `user_ms`).
    pub sys_ms: f64,
    /// Operations (pages) in the interval.
    pub ops: u64,
    /// For throughputs measured right after a memory read baseline: the ratio of `value` to it.
    pub of_mem_read: Option<f64>,
    #[serde(skip)]
    pub cpu: CpuTimes,
}

/// A summary over runs: what a table line shows.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// What was measured.
    #[serde(flatten)]
    pub subject: Subject,
    /// The unit of `median`, `min` and `max`.
    pub unit: Unit,
    /// Median over samples (one per run; `mem-read` is measured beside every pass).
    pub median: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// How many samples.
    pub samples: usize,
    /// System share of CPU time, `sys / (user + sys)`, pooled over samples; `None` when fewer
    /// than [`MIN_SHARE_CPU_US`] of CPU time fell in the intervals (too short to split).
    pub sys_cpu_share: Option<f64>,
    /// For throughputs: the median of each sample's ratio to the memory read bandwidth measured
    /// right before it, or else the median over the median of all `mem-read` samples.
    pub of_mem_read: Option<f64>,
}

/// The least CPU time, in microseconds, a row's intervals must hold for its system-CPU share to
/// be shown: the kernel splits CPU time between user and system in the proportion its per-tick
/// (10 ms) samples saw, so below ten ticks the split is meaningless.
pub const MIN_SHARE_CPU_US: u64 = 10 * crate::cputime::US_PER_TICK;

/// Groups samples into rows, in the order subjects first appear.
pub fn summarize_rows(samples: &[Sample]) -> Vec<Row> {
    let mut subjects: Vec<&Subject> = Vec::new();
    for s in samples {
        if !subjects.contains(&&s.subject) {
            subjects.push(&s.subject);
        }
    }
    let mut rows: Vec<Row> = subjects
        .into_iter()
        .filter_map(|subject| {
            let mine: Vec<&Sample> = samples.iter().filter(|s| &s.subject == subject).collect();
            let values: Vec<f64> = mine.iter().map(|s| s.value).collect();
            let sum = summarize(&values)?;
            let user: u64 = mine.iter().map(|s| s.cpu.user_us).sum();
            let sys: u64 = mine.iter().map(|s| s.cpu.sys_us).sum();
            let ratios: Option<Vec<f64>> = mine.iter().map(|s| s.of_mem_read).collect();
            Some(Row {
                subject: subject.clone(),
                unit: mine[0].unit,
                median: sum.median,
                min: sum.min,
                max: sum.max,
                samples: mine.len(),
                sys_cpu_share: sys_share(user, sys).filter(|_| user + sys >= MIN_SHARE_CPU_US),
                of_mem_read: ratios.and_then(|r| summarize(&r)).map(|s| s.median),
            })
        })
        .collect();
    let mem = rows.iter().find(|r| r.subject.test == MEM_READ).map(|r| r.median);
    if let Some(mem) = mem.filter(|m| *m > 0.0) {
        for r in rows.iter_mut().filter(|r| r.unit == Unit::GbPerSec && r.of_mem_read.is_none()) {
            r.of_mem_read = Some(r.median / mem);
        }
    }
    rows
}

/// The test name of the memory read bandwidth baseline.
pub const MEM_READ: &str = "mem-read";

fn number(v: f64, unit: Unit) -> String {
    match unit {
        Unit::GbPerSec => format!("{v:.2}"),
        Unit::NsPerOp => format!("{v:.0}"),
    }
}

/// An empty terminal table with `header`, in the style every benchmark prints.
pub fn new_table<S: ToString>(header: &[S]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Disabled);
    t.set_header(header.iter().map(ToString::to_string).collect::<Vec<_>>());
    t
}

/// `text` in lines of at most `width` characters, broken at spaces; a word longer than `width`
/// (a path) keeps a line of its own.
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let n = word.chars().count();
        if line > 0 && line + 1 + n > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += n;
    }
    out
}

/// A right-aligned cell, for numbers.
pub fn right(s: String) -> Cell {
    Cell::new(s).set_alignment(CellAlignment::Right)
}

/// The terminal table.
pub fn table(rows: &[Row]) -> Table {
    let mut t = new_table(&[
        "test",
        "layer",
        "medium",
        "durability",
        "survives",
        "median",
        "min–max",
        "unit",
        "of mem-read",
        "sys CPU",
    ]);
    for r in rows {
        let s = &r.subject;
        let test =
            if s.pass.is_empty() { s.test.clone() } else { format!("{} {}", s.test, s.pass) };
        let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.0}%", v * 100.0));
        t.add_row([
            Cell::new(test),
            Cell::new(&s.layer),
            Cell::new(&s.medium),
            Cell::new(&s.durability),
            Cell::new(&s.survives),
            Cell::new(number(r.median, r.unit)).set_alignment(CellAlignment::Right),
            Cell::new(format!("{}–{}", number(r.min, r.unit), number(r.max, r.unit)))
                .set_alignment(CellAlignment::Right),
            Cell::new(r.unit.name()),
            Cell::new(pct(r.of_mem_read)).set_alignment(CellAlignment::Right),
            Cell::new(pct(r.sys_cpu_share)).set_alignment(CellAlignment::Right),
        ]);
    }
    t
}

/// Everything a run produced, as written to `--json`: the configuration `C`, the summaries `R`
/// (one per table line) and the measurements `S` (one per run) are each benchmark's own.
#[derive(Debug, Serialize)]
pub struct Report<C: Serialize, R: Serialize = Row, S: Serialize = Sample> {
    /// Where it ran.
    pub machine: Machine,
    /// How it was configured.
    pub config: C,
    /// Every durability mode that appeared, with what it guarantees.
    pub durabilities: Vec<String>,
    /// Caveats a reader needs.
    pub notes: Vec<String>,
    /// Medians and ranges, as the table shows them.
    pub rows: Vec<R>,
    /// Every measurement of every run.
    pub runs: Vec<S>,
}

impl<C: Serialize, R: Serialize, S: Serialize> Report<C, R, S> {
    /// Writes the report as pretty JSON.
    pub fn write_json(&self, path: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(path, text + "\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_at_spaces_within_the_width() {
        assert_eq!(wrap("ab cd  ef", 5), "ab cd\nef");
        assert_eq!(wrap("ab cd ef", 4), "ab\ncd\nef");
        assert_eq!(wrap("a /a/long/path b", 4), "a\n/a/long/path\nb");
        assert_eq!(wrap("", 4), "");
        assert_eq!(wrap("×× ××", 5), "×× ××");
    }

    fn sample(test: &str, value: f64, unit: Unit, user: u64, sys: u64) -> Sample {
        Sample {
            subject: Subject {
                test: test.into(),
                pass: String::new(),
                layer: "-".into(),
                medium: "dram".into(),
                durability: "none (DRAM)".into(),
                survives: "-".into(),
            },
            run: 0,
            value,
            unit,
            wall_ms: 0.0,
            user_ms: 0.0,
            sys_ms: 0.0,
            ops: 1,
            of_mem_read: None,
            cpu: CpuTimes::from_ticks(user, sys),
        }
    }

    #[test]
    fn rows_pool_cpu_and_relate_to_memory_bandwidth() {
        let mut beside = sample("seq-read", 4.0, Unit::GbPerSec, 0, 0);
        beside.subject.pass = "warm".into();
        beside.of_mem_read = Some(0.5);
        let samples = [
            sample(MEM_READ, 10.0, Unit::GbPerSec, 10, 0),
            sample("seq-read", 8.0, Unit::GbPerSec, 3, 1),
            sample("seq-read", 6.0, Unit::GbPerSec, 3, 3),
            sample("seq-read", 7.0, Unit::GbPerSec, 0, 0),
            sample("rand-read", 900.0, Unit::NsPerOp, 1, 0),
            beside,
        ];
        let rows = summarize_rows(&samples);
        assert_eq!(rows.len(), 4);
        let seq = &rows[1];
        assert_eq!((seq.median, seq.min, seq.max, seq.samples), (7.0, 6.0, 8.0, 3));
        assert_eq!(seq.sys_cpu_share, Some(0.4));
        assert_eq!(seq.of_mem_read, Some(0.7));
        assert_eq!(rows[2].of_mem_read, None);
        assert_eq!(rows[2].sys_cpu_share, None, "one tick is too few to split");
        assert_eq!(rows[3].of_mem_read, Some(0.5), "the ratio to the baseline beside it wins");
        let rendered = table(&rows).to_string();
        assert!(rendered.contains("70%") && rendered.contains("40%"));
    }
}
