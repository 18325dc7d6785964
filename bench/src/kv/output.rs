//! What the terminal shows (one line per configuration: median and range of operations per
//! second over runs; the durability of every write figure; the targets for warm uniform lookups),
//! the SVG chart and the JSON report.

use comfy_table::{Cell, Table};
use serde::Serialize;

use super::runner::Record;
use crate::chart::{Bar, uniq};
use crate::report::{new_table, right};
use crate::stats::summarize;
use crate::tpch::output::medium_label;

/// One configuration's runs, summarised: a table line, and an entry of the JSON's `rows`.
#[derive(Clone, Debug, Serialize)]
pub struct Line {
    /// `disk` or `tmpfs`.
    pub medium: String,
    /// The workload.
    pub workload: String,
    /// Threads.
    pub threads: u32,
    /// `cold` or `warm`.
    pub pass: String,
    /// `nvpage/se2`, `lmdb`, ...
    pub engine: String,
    /// What the engine reads through.
    pub cache: String,
    /// nvpage's pool fraction.
    pub pool_fraction: Option<f64>,
    /// Median operations per second over the runs.
    pub median_ops_per_s: f64,
    /// Slowest run.
    pub min_ops_per_s: f64,
    /// Fastest run.
    pub max_ops_per_s: f64,
    /// Runs.
    pub runs: usize,
    /// Median pages read from the file per operation (nvpage).
    pub pages_per_op: Option<f64>,
    /// What a commit survives, for the workloads that write.
    pub durability: Option<String>,
}

fn engine_label(r: &Record) -> String {
    if r.layer == "-" { r.engine.clone() } else { format!("{}/{}", r.engine, r.layer) }
}

fn engine_rank(label: &str) -> usize {
    ["nvpage/pread", "nvpage/se1", "nvpage/se2", "lmdb", "redb", "sqlite"]
        .iter()
        .position(|x| *x == label)
        .unwrap_or(9)
}

fn workload_rank(w: &str) -> usize {
    ["load-sorted", "load-random", "lookup-uniform", "lookup-zipf", "scan-100", "mix-50/50"]
        .iter()
        .position(|x| *x == w)
        .unwrap_or(9)
}

/// Groups records by configuration, ordered by medium, workload, threads, pass, engine, pool
/// (largest first).
pub fn lines(records: &[Record]) -> Vec<Line> {
    let key = |r: &Record| {
        (
            r.medium.clone(),
            r.workload.clone(),
            r.threads,
            r.pass.clone(),
            engine_label(r),
            r.cache.clone(),
        )
    };
    let mut keys = uniq(records.iter().map(key));
    keys.sort_by(|a, b| {
        let rank = |k: &(String, String, u32, String, String, String)| {
            (k.0.clone(), workload_rank(&k.1), k.2, k.3 != "cold", engine_rank(&k.4))
        };
        rank(a).cmp(&rank(b))
    });
    keys.into_iter()
        .filter_map(|k| {
            let mine: Vec<&Record> = records.iter().filter(|r| key(r) == k).collect();
            let rate = summarize(&mine.iter().map(|r| r.ops_per_s).collect::<Vec<_>>())?;
            let pages: Option<Vec<f64>> =
                mine.iter().map(|r| r.pages_read.map(|p| p as f64 / r.ops.max(1) as f64)).collect();
            let first = mine[0];
            let writes =
                ["load-sorted", "load-random", "mix-50/50"].contains(&first.workload.as_str());
            Some(Line {
                medium: k.0,
                workload: k.1,
                threads: k.2,
                pass: k.3,
                engine: k.4,
                cache: k.5,
                pool_fraction: first.pool_fraction,
                median_ops_per_s: rate.median,
                min_ops_per_s: rate.min,
                max_ops_per_s: rate.max,
                runs: mine.len(),
                pages_per_op: pages.and_then(|p| summarize(&p)).map(|s| s.median),
                durability: writes.then(|| first.durability.clone()),
            })
        })
        .collect()
}

/// Operations per second, with a unit prefix.
pub fn rate(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2} M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// What a commit survives, in a few words, from a durability string: what follows its last
/// "survives ", up to a colon or a bracket.
fn survives(d: &str) -> &str {
    let s = d.rsplit_once("survives ").map_or(d, |(_, s)| s);
    s.split([':', '(']).next().unwrap_or(s).trim()
}

/// One line per configuration.
pub fn table(lines: &[Line]) -> Table {
    let mut t = new_table(&[
        "medium",
        "workload",
        "threads",
        "pass",
        "engine",
        "reads through",
        "median ops/s",
        "min–max",
        "pages/op",
        "a commit survives",
    ]);
    for l in lines {
        t.add_row(vec![
            Cell::new(medium_label(&l.medium)),
            Cell::new(&l.workload),
            right(l.threads.to_string()),
            Cell::new(&l.pass),
            Cell::new(&l.engine),
            Cell::new(&l.cache),
            right(rate(l.median_ops_per_s)),
            right(format!("{}–{}", rate(l.min_ops_per_s), rate(l.max_ops_per_s))),
            right(l.pages_per_op.map_or("-".into(), |p| format!("{p:.2}"))),
            Cell::new(l.durability.as_deref().map_or("- (reads)", survives)),
        ]);
    }
    t
}

/// The ratio of two lines' medians, if both were measured: `(engine, pool)` pairs on tmpfs,
/// warm, one thread, uniform lookups.
fn ratio(lines: &[Line], a: (&str, Option<f64>), b: (&str, Option<f64>)) -> Option<f64> {
    let find = |(engine, pool): (&str, Option<f64>)| {
        lines.iter().find(|l| {
            l.medium == "tmpfs"
                && l.workload == "lookup-uniform"
                && l.threads == 1
                && l.pass == "warm"
                && l.engine == engine
                && l.pool_fraction == pool
        })
    };
    Some(find(a)?.median_ops_per_s / find(b)?.median_ops_per_s)
}

/// The targets for warm uniform lookups (tmpfs, one thread): SE2 against pread, redb and LMDB,
/// each with its measured ratio: `(what, ratio, met)`.
pub fn targets(lines: &[Line]) -> Vec<(String, Option<f64>, Option<bool>)> {
    let se2 = "nvpage/se2";
    let cases = [
        (
            "SE2 / pread, pool a tenth of the data: at least 2×",
            (se2, Some(0.1)),
            ("nvpage/pread", Some(0.1)),
            2.0,
        ),
        ("SE2 / redb, pool all of the data: at least 1×", (se2, Some(1.0)), ("redb", None), 1.0),
        (
            "SE2 / LMDB, pool all of the data: at least 1/1.5 = 0.67×",
            (se2, Some(1.0)),
            ("lmdb", None),
            1.0 / 1.5,
        ),
    ];
    cases
        .into_iter()
        .map(|(what, a, b, floor)| {
            let r = ratio(lines, a, b);
            (what.to_string(), r, r.map(|r| r >= floor))
        })
        .collect()
}

/// The chart's bars: a panel per medium, workload and pass; groups by threads; a bar per
/// engine and pool.
pub fn bars(lines: &[Line]) -> Vec<Bar> {
    lines
        .iter()
        .map(|l| Bar {
            panel: format!("{}, {}, {}", medium_label(&l.medium), l.workload, l.pass),
            group: format!("{} thread{}", l.threads, if l.threads == 1 { "" } else { "s" }),
            series: match l.pool_fraction {
                Some(f) => format!("{} pool {f}", l.engine),
                None => l.engine.clone(),
            },
            value: l.median_ops_per_s,
        })
        .collect()
}
