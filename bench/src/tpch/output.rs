//! The detail behind the screen ([`super::screen`]): the run's configuration and caveats, the
//! summary with the system shares of CPU time, the durability of every file, the loads in full,
//! one line per query and configuration (median and range over runs, CPU split, pages), and each
//! query's time relative to pread's; written to a file by default (`--detail`). Every column
//! names its unit.

use std::io::{self, Write};

use comfy_table::{Cell, Table};

use super::runner::{LoadRecord, Report, RunRecord};
use super::summary;
use crate::cputime::sys_share;
use crate::report::{new_table, right};
use crate::stats::summarize;

/// One configuration's runs, summarised.
#[derive(Clone, Debug)]
pub struct Line {
    /// Query name.
    pub query: String,
    /// Layer name (or `se2+sql`, `datafusion`, `postgres`: [`super::runner::RunRecord::layer`]).
    pub layer: String,
    /// Medium name.
    pub medium: String,
    /// Pool fraction.
    pub pool_fraction: f64,
    /// Cold or warm.
    pub cold: bool,
    /// Median wall time.
    pub median_ms: f64,
    /// Fastest run.
    pub min_ms: f64,
    /// Slowest run.
    pub max_ms: f64,
    /// Median user CPU time.
    pub user_ms: f64,
    /// Median system CPU time.
    pub sys_ms: f64,
    /// System share of CPU time, pooled over runs.
    pub sys_share: Option<f64>,
    /// Median pages read.
    pub pages_read: f64,
    /// Median redirected reads.
    pub redirected: f64,
    /// Median bytes copied.
    pub bytes_copied: f64,
}

/// The order layers are shown in: nvpage's, then PostgreSQL's.
pub fn layer_rank(l: &str) -> usize {
    [
        "pread",
        "se1",
        "se2",
        "pread+sql",
        "se1+sql",
        "se2+sql",
        super::runner::IN_MEMORY,
        "postgres",
        "postgres-1w",
    ]
    .iter()
    .position(|x| *x == l)
    .unwrap_or(usize::MAX)
}

/// Whether `l` names a layer running the hand-written plans (not their SQL, DataFusion in
/// memory, or PostgreSQL): the layers the verdict ranks.
pub fn is_plan_layer(l: &str) -> bool {
    matches!(l, "pread" | "se1" | "se2")
}

/// Groups runs by configuration, ordered by medium, pool, pass, query, layer.
pub fn lines(runs: &[RunRecord]) -> Vec<Line> {
    let mut keys: Vec<(String, f64, bool, String, String)> = Vec::new();
    for r in runs {
        let k = (r.medium.clone(), r.pool_fraction, r.cold, r.query.clone(), r.layer.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let fractions: Vec<f64> = {
        let mut f: Vec<f64> = Vec::new();
        for r in runs {
            if !f.contains(&r.pool_fraction) {
                f.push(r.pool_fraction);
            }
        }
        f
    };
    let frac_rank = |f: f64| fractions.iter().position(|x| *x == f).unwrap_or(0);
    keys.sort_by(|a, b| {
        (a.0.as_str(), frac_rank(a.1), !a.2, a.3.as_str(), layer_rank(&a.4)).cmp(&(
            b.0.as_str(),
            frac_rank(b.1),
            !b.2,
            b.3.as_str(),
            layer_rank(&b.4),
        ))
    });
    keys.into_iter()
        .filter_map(|(medium, pool_fraction, cold, query, layer)| {
            let mine: Vec<&RunRecord> = runs
                .iter()
                .filter(|r| {
                    r.medium == medium
                        && r.pool_fraction == pool_fraction
                        && r.cold == cold
                        && r.query == query
                        && r.layer == layer
                })
                .collect();
            let med = |f: &dyn Fn(&RunRecord) -> f64| {
                summarize(&mine.iter().map(|r| f(r)).collect::<Vec<_>>()).map_or(0.0, |s| s.median)
            };
            let wall = summarize(&mine.iter().map(|r| r.wall_ms).collect::<Vec<_>>())?;
            // Summed in microseconds, the unit they were measured in.
            let user: f64 = mine.iter().map(|r| r.user_ms * 1e3).sum();
            let sys: f64 = mine.iter().map(|r| r.sys_ms * 1e3).sum();
            Some(Line {
                median_ms: wall.median,
                min_ms: wall.min,
                max_ms: wall.max,
                user_ms: med(&|r| r.user_ms),
                sys_ms: med(&|r| r.sys_ms),
                sys_share: sys_share(user.round() as u64, sys.round() as u64),
                pages_read: med(&|r| r.pages_read as f64),
                redirected: med(&|r| r.redirected_reads as f64),
                bytes_copied: med(&|r| r.bytes_copied as f64),
                query,
                layer,
                medium,
                pool_fraction,
                cold,
            })
        })
        .collect()
}

/// The medium as the tables name it.
pub fn medium_label(m: &str) -> String {
    if m == "tmpfs" { "tmpfs (emulated NVM)".into() } else { m.into() }
}

/// A pool fraction as the tables show it: the share of the data the pool holds.
pub fn pool_label(f: f64) -> String {
    let p = f * 100.0;
    if (p - p.round()).abs() < 1e-9 { format!("{p:.0}%") } else { format!("{p}%") }
}

fn ms(v: f64) -> String {
    if v >= 100.0 { format!("{v:.0}") } else { format!("{v:.1}") }
}

/// The loads, with their CPU time (the durability of each file is listed apart).
pub fn load_table(loads: &[LoadRecord]) -> Table {
    let mut t =
        new_table(&["layer", "medium", "rows", "load s", "rows/s", "user s", "sys s", "data MiB"]);
    for l in loads {
        t.add_row(vec![
            Cell::new(&l.layer),
            Cell::new(medium_label(&l.medium)),
            right(l.rows.to_string()),
            right(format!("{:.2}", l.seconds)),
            right(format!("{:.0}", l.rows_per_s)),
            right(l.user_ms.map_or("-".into(), |v| format!("{:.2}", v / 1e3))),
            right(l.sys_ms.map_or("-".into(), |v| format!("{:.2}", v / 1e3))),
            right(format!("{:.1}", l.data_bytes as f64 / (1 << 20) as f64)),
        ]);
    }
    t
}

/// One line per query and configuration.
pub fn query_table(lines: &[Line]) -> Table {
    let mut t = new_table(&[
        "medium",
        "pool holds",
        "pass",
        "query",
        "layer",
        "median ms",
        "min–max ms",
        "user ms",
        "sys ms",
        "sys CPU %",
        "pages read",
        "redirected pages",
        "copied MiB",
    ]);
    for l in lines {
        // PostgreSQL's pages and DataFusion's in memory are not counted: a dash, not a zero.
        let counted = |v: String| {
            if l.layer.starts_with("postgres") || l.layer == super::runner::IN_MEMORY {
                "-".into()
            } else {
                v
            }
        };
        t.add_row(vec![
            Cell::new(medium_label(&l.medium)),
            right(pool_label(l.pool_fraction)),
            Cell::new(if l.cold { "cold" } else { "warm" }),
            Cell::new(&l.query),
            Cell::new(&l.layer),
            right(ms(l.median_ms)),
            right(format!("{}–{}", ms(l.min_ms), ms(l.max_ms))),
            right(format!("{:.0}", l.user_ms)),
            right(format!("{:.0}", l.sys_ms)),
            right(l.sys_share.map_or("-".into(), |s| format!("{:.1}%", s * 100.0))),
            right(counted(format!("{:.0}", l.pages_read))),
            right(counted(format!("{:.0}", l.redirected))),
            right(counted(format!("{:.1}", l.bytes_copied / (1 << 20) as f64))),
        ]);
    }
    t
}

/// Per medium, pool and pass: each layer's median time as a percentage of pread's, per query
/// and as the geometric mean over the queries (the paper's comparison of SE1 and SE2 with the
/// unmodified file layer).
pub fn comparison_table(lines: &[Line]) -> Table {
    let mut layers: Vec<String> = Vec::new();
    for l in lines {
        if l.layer != "pread" && !layers.contains(&l.layer) {
            layers.push(l.layer.clone());
        }
    }
    layers.sort_by_key(|l| layer_rank(l));
    let mut header: Vec<String> = ["medium", "pool holds", "pass", "query", "pread median ms"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    header.extend(layers.iter().map(|l| format!("{l} / pread %")));
    let mut t = new_table(&header);
    let mut groups: Vec<(String, f64, bool)> = Vec::new();
    for l in lines {
        let g = (l.medium.clone(), l.pool_fraction, l.cold);
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    for (medium, pool, cold) in groups {
        let mine: Vec<&Line> = lines
            .iter()
            .filter(|l| l.medium == medium && l.pool_fraction == pool && l.cold == cold)
            .collect();
        let mut queries: Vec<&str> = mine.iter().map(|l| l.query.as_str()).collect();
        queries.dedup();
        let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); layers.len()];
        let row = |query: String, base: String, cells: Vec<String>| {
            let mut r = vec![
                Cell::new(medium_label(&medium)),
                right(pool_label(pool)),
                Cell::new(if cold { "cold" } else { "warm" }),
                Cell::new(query),
                right(base),
            ];
            r.extend(cells.into_iter().map(right));
            r
        };
        for q in &queries {
            let find = |layer: &str| mine.iter().find(|l| l.query == *q && l.layer == layer);
            let Some(base) = find("pread") else { continue };
            let mut cells = Vec::new();
            for (i, layer) in layers.iter().enumerate() {
                match find(layer) {
                    Some(l) if base.median_ms > 0.0 => {
                        let r = l.median_ms / base.median_ms;
                        ratios[i].push(r);
                        cells.push(format!("{:.0}%", r * 100.0));
                    }
                    _ => cells.push("-".into()),
                }
            }
            t.add_row(row(q.to_string(), ms(base.median_ms), cells));
        }
        let cells = ratios
            .iter()
            .map(|r| {
                summary::geo_mean(r).map_or("-".into(), |mean| {
                    format!("{:.0}% ({:+.1}%)", mean * 100.0, (mean - 1.0) * 100.0)
                })
            })
            .collect();
        t.add_row(row("geo. mean".into(), String::new(), cells));
    }
    t
}

/// The loads in one line: rows, time and rate per database, the data file's size.
pub fn loads_line(loads: &[LoadRecord]) -> String {
    let ours: Vec<&LoadRecord> =
        loads.iter().filter(|l| !l.layer.starts_with("postgres")).collect();
    let range = |f: &dyn Fn(&LoadRecord) -> f64| {
        let v: Vec<f64> = ours.iter().map(|l| f(l)).collect();
        let (lo, hi) = v.iter().fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        (lo, hi)
    };
    let Some(first) = ours.first() else { return "no nvpage database loaded".into() };
    let (s0, s1) = range(&|l| l.seconds);
    let (r0, r1) = range(&|l| l.rows_per_s);
    format!(
        "{} database{} of {} rows, each loaded in {s0:.1}–{s1:.1} s ({:.0}–{:.0} k rows/s, \
         generation included), data file {:.0} MiB",
        ours.len(),
        if ours.len() == 1 { "" } else { "s" },
        first.rows,
        r0 / 1e3,
        r1 / 1e3,
        first.data_bytes as f64 / (1 << 20) as f64
    )
}

/// The memory floor: one warm pass over lineitem's heap at the machine's memory bandwidth.
pub fn floor_line(report: &Report) -> Option<String> {
    let c = &report.config.options;
    let gbps = report.config.mem_read_gb_per_s;
    let li = report.config.loads.first()?.table_bytes.get("lineitem")?;
    let floor_ms = *li as f64 / (gbps * 1e9 * c.threads as f64) * 1e3;
    Some(format!(
        "Memory read bandwidth, one thread: {gbps:.1} GB/s. The lineitem heap is {:.0} MiB: one \
         pass over it on {} threads at that rate takes {floor_ms:.1} ms, the floor under a warm \
         Q1 or Q6.",
        *li as f64 / (1 << 20) as f64,
        c.threads
    ))
}

/// Writes everything the screen ([`super::screen`]) leaves out, after what it shows: the run's
/// configuration, what the answers were checked against (`checked`), the loads, the memory floor
/// and limit, the summary with the system shares of CPU time, the durability of every file, the
/// notes; then the load table in full, every query in every configuration, and each query
/// relative to pread.
pub fn write_detail(report: &Report, checked: &str, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", report.machine.summary())?;
    let c = &report.config.options;
    writeln!(
        out,
        "TPC-H SF {}, {} queries ({}), {} scan threads, runs per configuration: {}",
        c.sf,
        report.results.len(),
        report.results.iter().map(|r| r.query.as_str()).collect::<Vec<_>>().join(" "),
        c.threads,
        c.runs
    )?;
    writeln!(out, "{checked}")?;
    writeln!(out, "Loads: {}.", loads_line(&report.config.loads))?;
    if let Some(floor) = floor_line(report) {
        writeln!(out, "{floor}")?;
    }
    for m in &report.config.memory {
        writeln!(out, "{m}")?;
    }
    let lines = lines(&report.runs);
    let rows = summary::summarize(&lines, &report.runs);
    writeln!(out, "\n{}", summary::times_legend(report.results.len(), c.with_postgres))?;
    writeln!(out, "{}", summary::times_table(&rows))?;
    writeln!(out, "{}", summary::sys_legend(c.with_postgres))?;
    writeln!(out, "{}", summary::sys_table(&rows))?;
    #[cfg(feature = "sql")]
    if c.sql {
        super::sql::write_section(report, &lines, out)?;
    }
    let mut durabilities: Vec<(String, String, String)> = Vec::new();
    for r in &report.runs {
        let d = (r.layer.clone(), r.medium.clone(), r.durability.clone());
        if !durabilities.contains(&d) {
            durabilities.push(d);
        }
    }
    writeln!(out, "\nDurability of the data files:")?;
    for (layer, medium, d) in durabilities {
        writeln!(out, "  {layer}/{}: {d}", medium_label(&medium))?;
    }
    writeln!(out, "\nNotes:")?;
    for n in &report.config.notes {
        writeln!(out, "  - {n}")?;
    }
    writeln!(out, "\nLoading (generation included):\n{}", load_table(&report.config.loads))?;
    writeln!(out, "\nQuery times (medians over runs):\n{}", query_table(&lines))?;
    writeln!(
        out,
        "\nEach query relative to pread (median wall time; below 100% is faster; the last line \
         of each group is the geometric mean over its queries):"
    )?;
    writeln!(out, "{}", comparison_table(&lines))?;
    Ok(())
}
