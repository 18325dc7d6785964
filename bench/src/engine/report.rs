//! The engine benchmark's results: the small transactions with SQLite beside them, nvpage's rates
//! divided by SQLite's (per run, then the median), the project's targets for durable single-row
//! inserts against SQLite, and the load and recovery figures. Every row names its durability.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, Table};
use serde::Serialize;

use super::{Medium, Sample};
use crate::report::right;
use crate::stats::{Summary, summarize};

/// One layer's commit rate divided by one SQLite journal mode's, for one workload and medium:
/// over runs, each ratio taken within one run.
#[derive(Clone, Debug, Serialize)]
pub struct Ratio {
    /// The workload: `insert 1 row`, `update 10 rows`, ...
    pub test: String,
    /// nvpage's medium.
    pub medium: Medium,
    /// nvpage's layer.
    pub layer: String,
    /// SQLite's journal mode: `journal_mode=DELETE` or `journal_mode=WAL`.
    pub sqlite: String,
    /// SQLite's medium: nvpage's, or the disk for `disk-log-tmpfs` (SQLite has no log apart).
    pub sqlite_medium: Medium,
    /// The median of the per-run ratios.
    pub median: f64,
    /// The smallest per-run ratio.
    pub min: f64,
    /// The largest per-run ratio.
    pub max: f64,
    /// Runs with both figures.
    pub runs: usize,
}

/// One of the targets for durable single-row inserts against SQLite, against one layer.
#[derive(Clone, Debug, Serialize)]
pub struct Target {
    /// The target in words.
    pub target: &'static str,
    /// nvpage's medium.
    pub medium: Medium,
    /// nvpage's layer.
    pub layer: String,
    /// The ratio aimed at (at least).
    pub want: f64,
    /// The median ratio measured.
    pub median: f64,
    /// Whether the median reaches `want`.
    pub met: bool,
}

/// The project's targets for durable single-row inserts against SQLite (`docs/benchmarks.md`,
/// "Engine"): (workload, nvpage's medium, SQLite's journal mode, ratio, words).
const TARGETS: [(&str, Medium, &str, f64, &str); 3] = [
    (
        "insert 1 row",
        Medium::Disk,
        "journal_mode=DELETE",
        1.5,
        "single-row inserts on disk ≥ 1.5× SQLite's rollback journal on disk",
    ),
    (
        "insert 1 row",
        Medium::DiskLogTmpfs,
        "journal_mode=WAL",
        1.0,
        "single-row inserts, data on disk and log on tmpfs ≥ SQLite WAL on disk",
    ),
    (
        "insert 1 row",
        Medium::Tmpfs,
        "journal_mode=WAL",
        2.0,
        "single-row inserts on tmpfs ≥ 2× SQLite WAL on tmpfs",
    ),
];

/// Where SQLite's figure for nvpage's `medium` comes from.
fn sqlite_medium(medium: Medium) -> Medium {
    if medium == Medium::DiskLogTmpfs { Medium::Disk } else { medium }
}

/// Orders rows by workload and medium as they first appear, then system and configuration
/// (nvpage's layers by name, then SQLite's modes).
fn first_seen(samples: &[Sample]) -> impl Fn(&str, Medium) -> (usize, usize) + '_ {
    move |test, medium| {
        let t = samples.iter().position(|s| s.test == test).unwrap_or(usize::MAX);
        let m = samples.iter().position(|s| s.medium == medium).unwrap_or(usize::MAX);
        (t, m)
    }
}

/// Every layer's commit rate divided by every SQLite mode's, per workload and medium.
pub fn ratios(samples: &[Sample]) -> Vec<Ratio> {
    type Key = (String, Medium, String, String);
    let mut groups: Vec<(Key, Vec<f64>)> = Vec::new();
    for s in samples.iter().filter(|s| s.system == "nvpage" && s.unit == "commits/s") {
        let qm = sqlite_medium(s.medium);
        let beside = samples.iter().filter(|q| {
            q.system == "sqlite" && q.test == s.test && q.run == s.run && q.medium == qm
        });
        for q in beside {
            let key = (s.test.clone(), s.medium, s.config.clone(), q.config.clone());
            let ratio = s.value / q.value;
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => v.push(ratio),
                None => groups.push((key, vec![ratio])),
            }
        }
    }
    let order = first_seen(samples);
    groups.sort_by(|(a, _), (b, _)| {
        (order(&a.0, a.1), &a.2, &a.3).cmp(&(order(&b.0, b.1), &b.2, &b.3))
    });
    groups
        .into_iter()
        .filter_map(|((test, medium, layer, sqlite), v)| {
            let Summary { median, min, max } = summarize(&v)?;
            let sqlite_medium = sqlite_medium(medium);
            Some(Ratio {
                test,
                medium,
                layer,
                sqlite,
                sqlite_medium,
                median,
                min,
                max,
                runs: v.len(),
            })
        })
        .collect()
}

/// The targets for durable single-row inserts (`TARGETS`) against each layer measured for them.
pub fn targets(ratios: &[Ratio]) -> Vec<Target> {
    let mut out = Vec::new();
    for (test, medium, sqlite, want, target) in TARGETS {
        for r in
            ratios.iter().filter(|r| r.test == test && r.medium == medium && r.sqlite == sqlite)
        {
            let median = r.median;
            out.push(Target {
                target,
                medium,
                layer: r.layer.clone(),
                want,
                median,
                met: median >= want,
            });
        }
    }
    out
}

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(header.to_vec());
    t
}

/// Prints every table. `log_apart` says whether the `disk-log-tmpfs` medium was measured.
pub fn print(samples: &[Sample], ratios: &[Ratio], targets: &[Target], log_apart: bool) {
    let txns: Vec<&Sample> = samples.iter().filter(|s| s.unit == "commits/s").collect();
    if !txns.is_empty() {
        print_txns(samples, &txns);
        println!(
            "Each transaction (begin, its rows, commit) returns only when it is durable in the \
             mode shown; the latencies are of whole transactions. Updates add one cent to rows \
             drawn at random among the preloaded ones (distinct within a transaction; the same \
             rows for every system), in place."
        );
        if log_apart && !ratios.is_empty() {
            println!(
                "disk-log-tmpfs: SQLite has no counterpart — its rollback journal and its WAL \
                 always lie beside the database file — so that medium's ratios are to SQLite on \
                 the disk, measured in the same run."
            );
        }
        print_ratios(ratios);
        print_targets(targets);
    }
    let others: Vec<&Sample> = samples.iter().filter(|s| s.unit != "commits/s").collect();
    if !others.is_empty() {
        print_others(&others);
    }
}

fn print_txns(samples: &[Sample], txns: &[&Sample]) {
    type Key<'a> = (&'a str, Medium, &'static str, &'a str);
    let mut keys: Vec<Key<'_>> = Vec::new();
    for s in txns {
        let k = (s.test.as_str(), s.medium, s.system, s.config.as_str());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let order = first_seen(samples);
    keys.sort_by(|a, b| (order(a.0, a.1), a.2, a.3).cmp(&(order(b.0, b.1), b.2, b.3)));
    let mut t = table(&[
        "workload",
        "medium",
        "system",
        "config",
        "commits/s",
        "min–max",
        "p50 µs",
        "p99 µs",
        "durability",
    ]);
    for k in keys {
        let runs: Vec<&&Sample> = txns
            .iter()
            .filter(|s| (s.test.as_str(), s.medium, s.system, s.config.as_str()) == k)
            .collect();
        let med = |f: &dyn Fn(&Sample) -> Option<f64>| {
            let v: Vec<f64> = runs.iter().filter_map(|s| f(s)).collect();
            summarize(&v)
        };
        let (Some(rate), Some(p50), Some(p99)) =
            (med(&|s| Some(s.value)), med(&|s| s.p50_us), med(&|s| s.p99_us))
        else {
            continue;
        };
        t.add_row(vec![
            Cell::new(k.0),
            Cell::new(k.1.name()),
            Cell::new(k.2),
            Cell::new(k.3),
            right(format!("{:.0}", rate.median)),
            right(format!("{:.0}–{:.0}", rate.min, rate.max)),
            right(format!("{:.0}", p50.median)),
            right(format!("{:.0}", p99.median)),
            Cell::new(&runs[0].durability),
        ]);
    }
    println!("{t}");
}

fn print_ratios(ratios: &[Ratio]) {
    if ratios.is_empty() {
        return;
    }
    let mut t = table(&[
        "workload",
        "medium",
        "layer",
        "SQLite on",
        "÷ SQLite rollback journal",
        "÷ SQLite WAL",
    ]);
    let mut done: Vec<(&str, Medium, &str)> = Vec::new();
    for r in ratios {
        let k = (r.test.as_str(), r.medium, r.layer.as_str());
        if done.contains(&k) {
            continue;
        }
        done.push(k);
        let cell = |mode: &str| {
            let found = ratios
                .iter()
                .find(|q| (q.test.as_str(), q.medium, q.layer.as_str()) == k && q.sqlite == mode);
            right(found.map_or_else(
                || "-".into(),
                |q| format!("{:.2}× ({:.2}–{:.2})", q.median, q.min, q.max),
            ))
        };
        t.add_row(vec![
            Cell::new(k.0),
            Cell::new(k.1.name()),
            Cell::new(k.2),
            Cell::new(r.sqlite_medium.name()),
            cell("journal_mode=DELETE"),
            cell("journal_mode=WAL"),
        ]);
    }
    println!("nvpage's commits/s ÷ SQLite's, same workload and run (median of runs, min–max):");
    println!("{t}");
}

fn print_targets(targets: &[Target]) {
    if targets.is_empty() {
        return;
    }
    let mut t = table(&["target: durable commits/s ÷ SQLite's", "layer", "median ratio", "met"]);
    for g in targets {
        t.add_row(vec![
            Cell::new(g.target),
            Cell::new(&g.layer),
            right(format!("{:.2}×", g.median)),
            Cell::new(if g.met { "yes" } else { "no" }),
        ]);
    }
    println!("{t}");
    if targets.iter().any(|g| g.medium == Medium::Tmpfs) {
        println!(
            "The tmpfs target names no layer: it is read as the engine on NVM with the layers made \
             for NVM (SE1, and SE2, the default); pread, which makes a pwrite and an fdatasync at \
             every commit, is the system-call baseline beside them (docs/benchmarks.md, \
             \"Engine\")."
        );
    }
}

fn print_others(samples: &[&Sample]) {
    type Key<'a> = (&'a str, &'a str, &'a str, Medium);
    let mut keys: Vec<Key<'_>> = Vec::new();
    for s in samples {
        let k = (s.test.as_str(), s.param.as_str(), s.config.as_str(), s.medium);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut t =
        table(&["test", "size", "layer", "medium", "median", "min–max", "unit", "durability"]);
    for k in keys {
        let runs: Vec<&&Sample> = samples
            .iter()
            .filter(|s| (s.test.as_str(), s.param.as_str(), s.config.as_str(), s.medium) == k)
            .collect();
        let v: Vec<f64> = runs.iter().map(|s| s.value).collect();
        let Some(sum) = summarize(&v) else { continue };
        // Opens take milliseconds: a tenth shows the log's size; rates need no fraction.
        let places = if runs[0].unit == "ms" { 1 } else { 0 };
        t.add_row(vec![
            Cell::new(k.0),
            Cell::new(k.1),
            Cell::new(k.2),
            Cell::new(k.3.name()),
            right(format!("{:.places$}", sum.median)),
            right(format!("{:.places$}–{:.places$}", sum.min, sum.max)),
            Cell::new(runs[0].unit),
            Cell::new(&runs[0].durability),
        ]);
    }
    println!("{t}");
    println!(
        "recovery: open time of a database whose log holds that many before-images of an \
         unfinished transaction (0 MiB: a clean open)."
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(
        system: &'static str,
        config: &str,
        medium: Medium,
        run: usize,
        value: f64,
    ) -> Sample {
        Sample {
            test: "insert 1 row".into(),
            system,
            config: config.into(),
            medium,
            durability: String::new(),
            param: String::new(),
            run,
            value,
            unit: "commits/s",
            p50_us: Some(1.0),
            p99_us: Some(2.0),
        }
    }

    #[test]
    fn ratios_divide_within_a_run_and_a_log_apart_is_set_against_sqlite_on_disk() {
        let delete = "journal_mode=DELETE";
        let samples = [
            // Run 0: nvpage 200 against 100; run 1: 300 against 100 — 2× and 3×, median 2.5×.
            sample("nvpage", "se2", Medium::Disk, 0, 200.0),
            sample("sqlite", delete, Medium::Disk, 0, 100.0),
            sample("nvpage", "se2", Medium::DiskLogTmpfs, 0, 1000.0),
            sample("nvpage", "se2", Medium::Disk, 1, 300.0),
            sample("sqlite", delete, Medium::Disk, 1, 100.0),
            sample("nvpage", "se2", Medium::DiskLogTmpfs, 1, 500.0),
        ];
        let r = ratios(&samples);
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!((r[0].medium, r[0].sqlite_medium), (Medium::Disk, Medium::Disk));
        assert_eq!((r[0].median, r[0].min, r[0].max, r[0].runs), (2.5, 2.0, 3.0, 2));
        assert_eq!((r[1].medium, r[1].sqlite_medium), (Medium::DiskLogTmpfs, Medium::Disk));
        assert_eq!((r[1].median, r[1].min, r[1].max), (7.5, 5.0, 10.0));
        let t = targets(&r);
        assert_eq!(t.len(), 1, "no WAL figure, so only the rollback journal's target: {t:?}");
        assert!(t[0].met && t[0].want == 1.5 && t[0].medium == Medium::Disk, "{t:?}");
    }
}
