//! The summaries (medians per configuration, in the JSON's `summary` too) and what the terminal
//! shows.

use comfy_table::{Cell, Table};
use serde::Serialize;

use super::database::counts_text;
use super::records::{QueryRun, RefreshRun, Report};
use crate::report::{new_table, right};
use crate::stats::{median, summarize};
use crate::tpch::output::{load_table, medium_label};

/// Above this many cores of other work (median over runs), the tables warn that the machine was
/// not quiet.
pub const OTHERS_NOTICEABLE: f64 = 0.05;

/// The project's target for this benchmark, on SF 1, tmpfs, SE2: queries beside the loop at most
/// this many times their time alone…
pub const TARGET_SLOWDOWN: f64 = 1.3;
/// …with readers' latch waits under this share of their time.
pub const TARGET_LATCH_SHARE: f64 = 0.01;

/// One query on one database, alone and beside the refresh loop.
#[derive(Clone, Debug, Serialize)]
pub struct QueryLine {
    /// Medium.
    pub medium: String,
    /// Layer.
    pub layer: String,
    /// The data file's durability.
    pub durability: String,
    /// Query.
    pub query: String,
    /// Runs in each mode.
    pub runs: usize,
    /// Median wall time alone.
    pub alone_ms: f64,
    /// Fastest and slowest alone.
    pub alone_min_max_ms: [f64; 2],
    /// Median wall time beside the loop.
    pub beside_ms: f64,
    /// Fastest and slowest beside.
    pub beside_min_max_ms: [f64; 2],
    /// `beside_ms / alone_ms`.
    pub beside_over_alone: f64,
    /// Median CPU time (user + system) of the query's thread alone.
    pub alone_cpu_ms: f64,
    /// The same beside the loop.
    pub beside_cpu_ms: f64,
    /// Median commits made while a query ran beside the loop.
    pub commits_during: f64,
    /// Median page reads served from old versions, beside.
    pub version_reads: f64,
    /// Readers' latch waits, summed over the runs beside.
    pub latch_waits: u64,
    /// Their time over the queries' wall time, pooled over the runs beside.
    pub latch_wait_share: f64,
    /// Median memory held by old versions at a query's end, beside.
    pub version_bytes_at_end: f64,
    /// The most it held at a query's end.
    pub version_bytes_peak: u64,
    /// Median cores other processes kept busy at normal priority during a query, alone and
    /// beside: above a few hundredths, other work competed for the two cores.
    pub others_cores: [f64; 2],
}

/// The refresh loop on one database, alone or beside the queries.
#[derive(Clone, Debug, Serialize)]
pub struct RefreshLine {
    /// Medium.
    pub medium: String,
    /// Layer.
    pub layer: String,
    /// The durability of the commits.
    pub durability: String,
    /// `alone` or `beside`.
    pub mode: String,
    /// RF1 transactions counted.
    pub rf1_count: usize,
    /// RF2 transactions counted.
    pub rf2_count: usize,
    /// Median RF1 time, to its durable commit.
    pub rf1_ms: f64,
    /// Median RF2 time (scans, deletes, durable commit).
    pub rf2_ms: f64,
    /// Median CPU time of the loop's thread per RF1.
    pub rf1_cpu_ms: f64,
    /// The same per RF2.
    pub rf2_cpu_ms: f64,
    /// `1000 / (rf1_ms + rf2_ms)`.
    pub pairs_per_s: f64,
    /// Beside: `pairs_per_s` over the same database's alone figure.
    pub of_alone: Option<f64>,
    /// The most memory old versions held after one of these commits.
    pub version_bytes_peak: u64,
    /// Median cores other processes kept busy at normal priority during a function.
    pub others_cores: f64,
}

/// The medians the tables show.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Per medium, layer and query.
    pub queries: Vec<QueryLine>,
    /// Per medium, layer and mode.
    pub refresh: Vec<RefreshLine>,
}

fn min_max(v: &[f64]) -> [f64; 2] {
    summarize(v).map_or([0.0; 2], |s| [s.min, s.max])
}

fn databases<'a>(keys: impl Iterator<Item = (&'a str, &'a str, &'a str)>) -> Vec<[String; 3]> {
    let mut out: Vec<[String; 3]> = Vec::new();
    for (m, l, d) in keys {
        let k = [m.to_string(), l.to_string(), d.to_string()];
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// Summarises the runs.
pub fn summarize_runs(queries: &[QueryRun], refreshes: &[RefreshRun]) -> Summary {
    let mut q_lines = Vec::new();
    let dbs = databases(
        queries.iter().map(|r| (r.medium.as_str(), r.layer.as_str(), r.durability.as_str())),
    );
    for [medium, layer, durability] in &dbs {
        let mut names: Vec<&str> = Vec::new();
        for r in queries.iter().filter(|r| &r.medium == medium && &r.layer == layer) {
            if !names.contains(&r.query.as_str()) {
                names.push(&r.query);
            }
        }
        for q in names {
            let of = |mode: &str| -> Vec<&QueryRun> {
                queries
                    .iter()
                    .filter(|r| {
                        &r.medium == medium && &r.layer == layer && r.query == q && r.mode == mode
                    })
                    .collect()
            };
            let (alone, beside) = (of("alone"), of("beside"));
            let wall = |v: &[&QueryRun]| v.iter().map(|r| r.wall_ms).collect::<Vec<_>>();
            let cpu = |v: &[&QueryRun]| v.iter().map(|r| r.user_ms + r.sys_ms).collect::<Vec<_>>();
            let others =
                |v: &[&QueryRun]| median(&v.iter().map(|r| r.others_cores).collect::<Vec<_>>());
            let (aw, bw) = (wall(&alone), wall(&beside));
            let wall_ns: f64 = bw.iter().sum::<f64>() * 1e6;
            let wait_ns: u64 = beside.iter().map(|r| r.latch_wait_ns).sum();
            q_lines.push(QueryLine {
                medium: medium.clone(),
                layer: layer.clone(),
                durability: durability.clone(),
                query: q.to_string(),
                runs: alone.len().min(beside.len()),
                alone_ms: median(&aw),
                alone_min_max_ms: min_max(&aw),
                beside_ms: median(&bw),
                beside_min_max_ms: min_max(&bw),
                beside_over_alone: median(&bw) / median(&aw).max(1e-9),
                alone_cpu_ms: median(&cpu(&alone)),
                beside_cpu_ms: median(&cpu(&beside)),
                commits_during: median(
                    &beside.iter().map(|r| r.commits_during as f64).collect::<Vec<_>>(),
                ),
                version_reads: median(
                    &beside.iter().map(|r| r.version_reads as f64).collect::<Vec<_>>(),
                ),
                latch_waits: beside.iter().map(|r| r.latch_waits).sum(),
                latch_wait_share: if wall_ns > 0.0 { wait_ns as f64 / wall_ns } else { 0.0 },
                version_bytes_at_end: median(
                    &beside.iter().map(|r| r.version_bytes_at_end as f64).collect::<Vec<_>>(),
                ),
                version_bytes_peak: beside
                    .iter()
                    .map(|r| r.version_bytes_at_end)
                    .max()
                    .unwrap_or(0),
                others_cores: [others(&alone), others(&beside)],
            });
        }
    }
    let mut r_lines: Vec<RefreshLine> = Vec::new();
    let dbs = databases(
        refreshes.iter().map(|r| (r.medium.as_str(), r.layer.as_str(), r.durability.as_str())),
    );
    for [medium, layer, durability] in &dbs {
        for mode in ["alone", "beside"] {
            let mine: Vec<&RefreshRun> = refreshes
                .iter()
                .filter(|r| &r.medium == medium && &r.layer == layer && r.mode == mode)
                .collect();
            let f = |name: &str, cpu: bool| -> Vec<f64> {
                mine.iter()
                    .filter(|r| r.function == name)
                    .map(|r| if cpu { r.user_ms + r.sys_ms } else { r.ms })
                    .collect()
            };
            let (rf1, rf2) = (f("rf1", false), f("rf2", false));
            let pair_ms = median(&rf1) + median(&rf2);
            let pairs_per_s = if rf1.is_empty() || rf2.is_empty() { 0.0 } else { 1e3 / pair_ms };
            let of_alone = (mode == "beside")
                .then(|| {
                    r_lines
                        .iter()
                        .find(|l| &l.medium == medium && &l.layer == layer && l.mode == "alone")
                        .filter(|l| l.pairs_per_s > 0.0 && pairs_per_s > 0.0)
                        .map(|l| pairs_per_s / l.pairs_per_s)
                })
                .flatten();
            r_lines.push(RefreshLine {
                medium: medium.clone(),
                layer: layer.clone(),
                durability: durability.clone(),
                mode: mode.into(),
                rf1_count: rf1.len(),
                rf2_count: rf2.len(),
                rf1_ms: median(&rf1),
                rf2_ms: median(&rf2),
                rf1_cpu_ms: median(&f("rf1", true)),
                rf2_cpu_ms: median(&f("rf2", true)),
                pairs_per_s,
                of_alone,
                version_bytes_peak: mine.iter().map(|r| r.version_bytes_after).max().unwrap_or(0),
                others_cores: median(&mine.iter().map(|r| r.others_cores).collect::<Vec<_>>()),
            });
        }
    }
    Summary { queries: q_lines, refresh: r_lines }
}

fn ms(v: f64) -> String {
    if v >= 100.0 { format!("{v:.0}") } else { format!("{v:.1}") }
}

fn mib(bytes: f64) -> String {
    format!("{:.2}", bytes / (1 << 20) as f64)
}

/// Queries alone and beside the loop.
pub fn query_table(lines: &[QueryLine]) -> Table {
    let mut t = new_table(&[
        "medium",
        "layer",
        "query",
        "alone ms",
        "beside ms",
        "beside / alone",
        "CPU ms alone / beside",
        "commits during",
        "version reads",
        "latch waits",
        "latch wait share",
        "versions MiB (median / peak)",
        "others' cores alone / beside",
    ]);
    for l in lines {
        t.add_row(vec![
            Cell::new(medium_label(&l.medium)),
            Cell::new(&l.layer),
            Cell::new(&l.query),
            right(format!(
                "{} ({}–{})",
                ms(l.alone_ms),
                ms(l.alone_min_max_ms[0]),
                ms(l.alone_min_max_ms[1])
            )),
            right(format!(
                "{} ({}–{})",
                ms(l.beside_ms),
                ms(l.beside_min_max_ms[0]),
                ms(l.beside_min_max_ms[1])
            )),
            right(format!("{:.2}×", l.beside_over_alone)),
            right(format!("{:.0} / {:.0}", l.alone_cpu_ms, l.beside_cpu_ms)),
            right(format!("{:.0}", l.commits_during)),
            right(format!("{:.0}", l.version_reads)),
            right(l.latch_waits.to_string()),
            right(format!("{:.3}%", l.latch_wait_share * 100.0)),
            right(format!(
                "{} / {}",
                mib(l.version_bytes_at_end),
                mib(l.version_bytes_peak as f64)
            )),
            right(format!("{:.2} / {:.2}", l.others_cores[0], l.others_cores[1])),
        ]);
    }
    t
}

/// The refresh loop alone and beside the queries.
pub fn refresh_table(lines: &[RefreshLine]) -> Table {
    let mut t = new_table(&[
        "medium",
        "layer",
        "loop",
        "RF1 ms",
        "RF2 ms",
        "CPU ms RF1 / RF2",
        "pairs/s",
        "of alone",
        "counted",
        "versions MiB peak",
        "others' cores",
    ]);
    for l in lines {
        t.add_row(vec![
            Cell::new(medium_label(&l.medium)),
            Cell::new(&l.layer),
            Cell::new(&l.mode),
            right(ms(l.rf1_ms)),
            right(ms(l.rf2_ms)),
            right(format!("{:.0} / {:.0}", l.rf1_cpu_ms, l.rf2_cpu_ms)),
            right(format!("{:.2}", l.pairs_per_s)),
            right(l.of_alone.map_or("-".into(), |r| format!("{:.0}%", r * 100.0))),
            right(format!("{} + {}", l.rf1_count, l.rf2_count)),
            right(mib(l.version_bytes_peak as f64)),
            right(format!("{:.2}", l.others_cores)),
        ]);
    }
    t
}

/// Prints the whole report.
pub fn print(report: &Report) {
    println!("{}", report.machine.summary());
    let c = &report.config.options;
    println!(
        "TPC-H SF {} refresh functions ({} orders per RF, RF2 by {}) beside {}, one scan \
         thread per query, {} runs per database",
        c.sf,
        report.config.orders_per_refresh,
        c.rf2.name(),
        c.queries.iter().map(|q| q.name()).collect::<Vec<_>>().join(" and "),
        c.runs
    );
    println!("\nLoading (generation included):\n{}", load_table(&report.config.loads));
    println!(
        "\nQueries alone and beside the refresh loop:\n{}",
        query_table(&report.summary.queries)
    );
    println!(
        "\nThe refresh loop alone and beside the queries (each RF one transaction, timed to its \
         durable commit):\n{}",
        refresh_table(&report.summary.refresh)
    );
    let busiest = report
        .summary
        .queries
        .iter()
        .flat_map(|l| l.others_cores)
        .chain(report.summary.refresh.iter().map(|l| l.others_cores))
        .fold(0.0, f64::max);
    if busiest > OTHERS_NOTICEABLE {
        println!(
            "\nOther processes kept up to {busiest:.2} cores busy (median over a configuration's \
             runs): wall times and ratios are inflated by waiting for a core; the threads' CPU \
             times are not. Measure on a quiet machine."
        );
    }
    println!("\nDatabases:");
    for d in &report.databases {
        println!(
            "  {}/{}: {} refresh pairs; {} answers checked against their snapshot's state ({} \
             of snapshots holding a refresh set); rows after the last pair: {} (loaded: {}); \
             data file {:.1} → {:.1} MiB; versions peaked at {} MiB",
            d.layer,
            medium_label(&d.medium),
            d.refresh_pairs,
            d.snapshot_checks,
            d.snapshot_checks_with_sets,
            counts_text(&d.rows_after),
            counts_text(&d.rows_loaded),
            d.data_bytes_start as f64 / (1 << 20) as f64,
            d.data_bytes_after as f64 / (1 << 20) as f64,
            mib(d.peak_version_bytes as f64)
        );
    }
    println!("\nDurability of the data files (and of every refresh commit):");
    for d in &report.databases {
        println!("  {}/{}: {}", d.layer, medium_label(&d.medium), d.durability);
    }
    let target: Vec<&QueryLine> =
        report.summary.queries.iter().filter(|l| l.medium == "tmpfs" && l.layer == "se2").collect();
    if !target.is_empty() {
        println!(
            "\nTarget (readers beside the writer, stated for SF 1 on a 2-core machine, tmpfs, \
             SE2): beside the loop at most {TARGET_SLOWDOWN}× the time alone, latch waits under \
             {:.0}% of it{}:",
            TARGET_LATCH_SHARE * 100.0,
            if c.sf == 1.0 { "" } else { " (this run is not at SF 1)" }
        );
        for l in target {
            let met =
                l.beside_over_alone <= TARGET_SLOWDOWN && l.latch_wait_share < TARGET_LATCH_SHARE;
            println!(
                "  {}: {:.2}×, latch waits {:.3}% — {}",
                l.query,
                l.beside_over_alone,
                l.latch_wait_share * 100.0,
                if met { "met" } else { "not met" }
            );
        }
    }
    println!("\nNotes:");
    for n in &report.config.notes {
        println!("  - {n}");
    }
}
