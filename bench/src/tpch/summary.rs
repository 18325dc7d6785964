//! The paper's table: per medium, pool size and pass, each layer's query time relative to
//! pread's ([`times_table`], on the screen) and its system share of CPU time ([`sys_table`], in
//! the detail); both in one Markdown table, as `docs/benchmarks.md` shows it ([`markdown`]).
//!
//! A layer's relative time is the geometric mean, over the queries both ran, of its median time
//! divided by pread's: the mean TPC-H's power metric takes, which weighs a query that halves
//! and one that doubles alike (the arithmetic mean of ratios does not). The system share is
//! `sys / (user + sys)` over every measured run of every query.

use comfy_table::presets::{ASCII_MARKDOWN, UTF8_FULL_CONDENSED};
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};

use super::output::{Line, layer_rank, pool_label};
use super::runner::RunRecord;
use crate::cputime::sys_share;

/// One layer's figures in one configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerFigures {
    /// `pread`, `se1`, `se2`, `postgres`, `postgres-1w`.
    pub layer: String,
    /// Geometric mean over the queries of this layer's median time divided by pread's; `None`
    /// without pread figures.
    pub vs_pread: Option<f64>,
    /// Geometric mean of this layer's median times, in ms.
    pub geo_ms: f64,
    /// System share of CPU time over all its runs; `None` if no CPU time was counted.
    pub sys_share: Option<f64>,
    /// Queries in the means.
    pub queries: usize,
}

/// One line of the summary: a medium, a pool size, a pass.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryRow {
    /// `disk` or `tmpfs`.
    pub medium: String,
    /// The pool's size as a fraction of the data.
    pub pool_fraction: f64,
    /// Cold or warm.
    pub cold: bool,
    /// Every layer that ran, pread first.
    pub layers: Vec<LayerFigures>,
}

/// The geometric mean of `v` (`None` if empty or not all positive).
pub fn geo_mean(v: &[f64]) -> Option<f64> {
    if v.is_empty() || v.iter().any(|&x| x.is_nan() || x <= 0.0) {
        return None;
    }
    Some((v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

/// The summary of `lines` (medians per query and configuration) and `runs` (for CPU times).
pub fn summarize(lines: &[Line], runs: &[RunRecord]) -> Vec<SummaryRow> {
    let mut groups: Vec<(String, f64, bool)> = Vec::new();
    for l in lines {
        let g = (l.medium.clone(), l.pool_fraction, l.cold);
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    groups
        .into_iter()
        .map(|(medium, pool_fraction, cold)| {
            let mine: Vec<&Line> = lines
                .iter()
                .filter(|l| {
                    l.medium == medium && l.pool_fraction == pool_fraction && l.cold == cold
                })
                .collect();
            let mut names: Vec<&str> = Vec::new();
            for l in &mine {
                if !names.contains(&l.layer.as_str()) {
                    names.push(&l.layer);
                }
            }
            names.sort_by_key(|l| layer_rank(l));
            let median = |layer: &str, query: &str| {
                mine.iter().find(|l| l.layer == layer && l.query == query).map(|l| l.median_ms)
            };
            let layers = names
                .iter()
                .map(|&layer| {
                    let own: Vec<&&Line> = mine.iter().filter(|l| l.layer == layer).collect();
                    let ratios: Vec<f64> = own
                        .iter()
                        .filter_map(|l| Some(l.median_ms / median("pread", &l.query)?))
                        .collect();
                    let (user, sys) = runs
                        .iter()
                        .filter(|r| {
                            r.layer == layer
                                && r.medium == medium
                                && r.pool_fraction == pool_fraction
                                && r.cold == cold
                        })
                        .fold((0.0, 0.0), |(u, s), r| (u + r.user_ms, s + r.sys_ms));
                    let times: Vec<f64> = own.iter().map(|l| l.median_ms).collect();
                    LayerFigures {
                        layer: layer.to_string(),
                        vs_pread: geo_mean(&ratios),
                        geo_ms: geo_mean(&times).unwrap_or(0.0),
                        // Microsecond sums: the share of two float sums of milliseconds.
                        sys_share: sys_share((user * 1e3) as u64, (sys * 1e3) as u64),
                        queries: times.len(),
                    }
                })
                .collect();
            SummaryRow { medium, pool_fraction, cold, layers }
        })
        .collect()
}

/// The medium as the summary names it.
fn medium_short(m: &str) -> String {
    if m == "tmpfs" { "tmpfs (NVM)".into() } else { m.into() }
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{:.0}%", x * 100.0))
}

fn pct1(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{:.1}%", x * 100.0))
}

fn ms(v: f64) -> String {
    if v >= 100.0 { format!("{v:.0}") } else { format!("{v:.1}") }
}

/// The layers of `rows`, in order.
fn layer_names(rows: &[SummaryRow]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in rows {
        for l in &r.layers {
            if !names.contains(&l.layer) {
                names.push(l.layer.clone());
            }
        }
    }
    names.sort_by_key(|l| layer_rank(l));
    names
}

/// Which figures a rendering shows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Times,
    SysShare,
    Both,
}

/// The header and cells of the summary, for any rendering. `sep` separates a header's two
/// lines.
fn cells(rows: &[SummaryRow], part: Part, sep: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let names = layer_names(rows);
    let mut header: Vec<String> = vec!["medium".into(), "pool holds".into(), "pass".into()];
    let has_pread = names.iter().any(|n| n == "pread");
    let times = part != Part::SysShare;
    let shares = part != Part::Times;
    if times {
        if has_pread {
            header.push(format!("pread{sep}ms (geo)"));
        }
        for n in names.iter().filter(|n| *n != "pread") {
            header.push(if has_pread {
                format!("{n}{sep}/ pread")
            } else {
                format!("{n}{sep}ms (geo)")
            });
        }
    }
    if shares {
        for n in &names {
            header.push(format!("sys CPU{sep}{n}"));
        }
    }
    let body = rows
        .iter()
        .map(|r| {
            let find = |n: &str| r.layers.iter().find(|l| l.layer == n);
            let mut row = vec![
                medium_short(&r.medium),
                pool_label(r.pool_fraction),
                if r.cold { "cold" } else { "warm" }.to_string(),
            ];
            if times {
                if has_pread {
                    row.push(find("pread").map_or("-".into(), |l| ms(l.geo_ms)));
                }
                for n in names.iter().filter(|n| *n != "pread") {
                    row.push(match find(n) {
                        Some(l) if has_pread => pct(l.vs_pread),
                        Some(l) => ms(l.geo_ms),
                        None => "-".into(),
                    });
                }
            }
            if shares {
                for n in &names {
                    row.push(find(n).map_or("-".into(), |l| pct1(l.sys_share)));
                }
            }
            row
        })
        .collect();
    (header, body)
}

fn terminal_table(rows: &[SummaryRow], part: Part) -> Table {
    let (header, body) = cells(rows, part, "\n");
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Disabled);
    t.set_header(header);
    for row in body {
        t.add_row(row.into_iter().enumerate().map(|(i, c)| {
            let cell = Cell::new(c);
            if i >= 3 { cell.set_alignment(CellAlignment::Right) } else { cell }
        }));
    }
    t
}

/// The summary's times as a terminal table: pread's geometric mean, the others relative to it.
pub fn times_table(rows: &[SummaryRow]) -> Table {
    terminal_table(rows, Part::Times)
}

/// The summary's system shares of CPU time as a terminal table.
pub fn sys_table(rows: &[SummaryRow]) -> Table {
    terminal_table(rows, Part::SysShare)
}

/// The summary as a Markdown table (the one in `docs/benchmarks.md`, "SF 0.1, every layer and
/// medium").
pub fn markdown(rows: &[SummaryRow]) -> String {
    let (header, body) = cells(rows, Part::Both, " ");
    let mut t = Table::new();
    t.load_preset(ASCII_MARKDOWN).set_content_arrangement(ContentArrangement::Disabled);
    t.set_header(header);
    for row in body {
        t.add_row(row);
    }
    t.to_string()
}

/// The legend of the times table; PostgreSQL's terms only `with_postgres`.
pub fn times_legend(queries: usize, with_postgres: bool) -> String {
    let mut text = format!(
        "Query times. ms (geo): the geometric mean of a layer's median times over the {queries} \
         queries; / pread: the geometric mean of its per-query ratios to pread's median times \
         (as TPC-H's power metric averages), below 100% is faster. pool holds: the buffer \
         pool's size as a share of the data. tmpfs (NVM): emulated NVM."
    );
    if with_postgres {
        text.push_str(
            " postgres: PostgreSQL with its default parallelism; postgres-1w: with one worker \
             (max_parallel_workers_per_gather = 0); its pool is shared_buffers.",
        );
    }
    text
}

/// The legend of the system-share table; PostgreSQL's share explained only `with_postgres`.
pub fn sys_legend(with_postgres: bool) -> String {
    format!(
        "System share of CPU time, sys / (user + sys), over every measured run of every query \
         (nvpage: the whole process{}):",
        if with_postgres { "; PostgreSQL: the backend and its parallel workers" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(layer: &str, query: &str, ms: f64) -> Line {
        Line {
            query: query.into(),
            layer: layer.into(),
            medium: "disk".into(),
            pool_fraction: 0.1,
            cold: false,
            median_ms: ms,
            min_ms: ms,
            max_ms: ms,
            user_ms: 0.0,
            sys_ms: 0.0,
            sys_share: None,
            pages_read: 0.0,
            redirected: 0.0,
            bytes_copied: 0.0,
        }
    }

    fn run(layer: &str, user_ms: f64, sys_ms: f64) -> RunRecord {
        RunRecord {
            query: "q01".into(),
            layer: layer.into(),
            medium: "disk".into(),
            durability: String::new(),
            pool_fraction: 0.1,
            cold: false,
            run: 0,
            wall_ms: 1.0,
            user_ms,
            sys_ms,
            pages_read: 0,
            bytes_copied: 0,
            redirected_reads: 0,
        }
    }

    #[test]
    fn the_ratio_is_a_geometric_mean_and_the_share_is_pooled() {
        // SE2 halves one query and doubles the other: the geometric mean says "as fast", where
        // the arithmetic mean of the ratios would say 125%.
        let lines = [
            line("pread", "q01", 100.0),
            line("pread", "q06", 10.0),
            line("se2", "q01", 50.0),
            line("se2", "q06", 20.0),
        ];
        let runs = [run("pread", 30.0, 10.0), run("pread", 30.0, 30.0), run("se2", 9.0, 1.0)];
        let rows = summarize(&lines, &runs);
        assert_eq!(rows.len(), 1);
        let l = &rows[0].layers;
        assert_eq!((l[0].layer.as_str(), l[1].layer.as_str()), ("pread", "se2"));
        assert!((l[1].vs_pread.unwrap() - 1.0).abs() < 1e-12);
        assert!((l[0].geo_ms - 1000f64.sqrt()).abs() < 1e-9);
        assert_eq!(l[0].sys_share, Some(0.4));
        assert_eq!(l[1].sys_share, Some(0.1));
        let text = times_table(&rows).to_string();
        assert!(text.contains("100%") && text.contains("31.6"), "{text}");
        let text = sys_table(&rows).to_string();
        assert!(text.contains("40.0%") && text.contains("10.0%"), "{text}");
        assert!(markdown(&rows).contains("| disk"), "{}", markdown(&rows));
    }

    #[test]
    fn geometric_mean() {
        assert_eq!(geo_mean(&[]), None);
        assert_eq!(geo_mean(&[1.0, 0.0]), None);
        assert!((geo_mean(&[2.0, 8.0]).unwrap() - 4.0).abs() < 1e-12);
    }
}
