//! What `nvpage-bench tpch` prints by default: one screen, at most [`SCREEN_LINES`] lines of at
//! most [`SCREEN_WIDTH`] columns for the default matrix — the machine, the loads, the summary of
//! query times, the verdict (the fastest layer where, by how much, and what every answer was
//! checked against), and the file the rest went to ([`super::output::write_detail`]).

use std::io::{self, Write};

use comfy_table::Table;

use super::output;
use super::runner::{LoadRecord, Report};
use super::{summary, verdict};
use crate::report::{new_table, right, wrap};

/// The most lines the default command's screen takes.
pub const SCREEN_LINES: usize = 50;

/// The widest line of the screen, in characters.
pub const SCREEN_WIDTH: usize = 120;

/// The widest the screen's load table may be, in characters.
pub const LOAD_TABLE_WIDTH: usize = 100;

/// Where prose is wrapped.
const PROSE_WIDTH: usize = 100;

/// How a data file is persisted, without its medium (the table has a column for it):
/// `fdatasync`, `emulated-nvm (clwb)`; PostgreSQL's is its WAL's.
fn persisted_by(l: &LoadRecord) -> String {
    if l.layer.starts_with("postgres") {
        return "fsync (its WAL)".into();
    }
    let head = l.durability.split(": survives").next().unwrap_or_default();
    // How pages are written (`(pwrite, then msync or fdatasync)`) is in the detail file.
    let head = head.split(" (pwrite").next().unwrap_or(head);
    head.replace(&format!(" on {}", l.medium), "")
}

/// What a persisted range survives, in a few words: `power loss`, `process crash only`.
fn survives(durability: &str) -> String {
    let Some((_, tail)) = durability.split_once("survives ") else { return "-".into() };
    let words = tail.split([',', ':']).next().unwrap_or_default().trim();
    words.strip_prefix("a ").unwrap_or(words).to_string()
}

/// The loads, in at most [`LOAD_TABLE_WIDTH`] columns: time, rate, size, and how each data file
/// is persisted and what that survives (the full durability is in the detail file).
pub fn load_table(loads: &[LoadRecord]) -> Table {
    let mut t = new_table(&[
        "layer",
        "medium",
        "load s",
        "k rows/s",
        "data MiB",
        "persisted by",
        "survives",
    ]);
    for l in loads {
        t.add_row(vec![
            l.layer.as_str().into(),
            l.medium.as_str().into(),
            right(format!("{:.1}", l.seconds)),
            right(format!("{:.1}", l.rows_per_s / 1e3)),
            right(format!("{:.1}", l.data_bytes as f64 / (1 << 20) as f64)),
            persisted_by(l).into(),
            survives(&l.durability).into(),
        ]);
    }
    t
}

/// The load table's title: how many rows each load held.
fn load_title(loads: &[LoadRecord]) -> String {
    let lo = loads.iter().map(|l| l.rows).min();
    let hi = loads.iter().map(|l| l.rows).max();
    let each = match (lo, hi) {
        (Some(lo), Some(hi)) if lo == hi => format!(", each of {lo} rows"),
        (Some(lo), Some(hi)) => format!(", of {lo} to {hi} rows"),
        _ => String::new(),
    };
    format!("Loads{each} (generation and primary-key indexes included):")
}

/// The run's scale, queries and passes in one line.
fn run_line(report: &Report) -> String {
    let c = &report.config.options;
    let names: Vec<&str> = report.results.iter().map(|r| r.query.as_str()).collect();
    let queries = if names.len() == super::Query::ALL.len() {
        format!("all {} queries", names.len())
    } else {
        format!("queries {}", names.join(" "))
    };
    let passes = match (c.cold, c.warm) {
        (true, true) => "cold and warm",
        (true, false) => "cold only",
        _ => "warm only",
    };
    format!(
        "TPC-H SF {}: {queries}, {} scan threads, {} run{} per configuration, {passes}.",
        c.sf,
        c.threads,
        c.runs,
        if c.runs == 1 { "" } else { "s" }
    )
}

/// Writes the screen. `checked` says what the answers were checked against (a sentence);
/// `detail` names the file the detailed tables went to, if they went to one.
pub fn write_screen(
    report: &Report,
    checked: &str,
    detail: Option<&str>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let with_postgres = report.config.options.with_postgres;
    let para = |out: &mut dyn Write, text: &str| writeln!(out, "{}", wrap(text, PROSE_WIDTH));
    para(out, &report.machine.summary())?;
    para(out, &run_line(report))?;
    writeln!(out)?;
    para(out, &load_title(&report.config.loads))?;
    writeln!(out, "{}", load_table(&report.config.loads))?;
    writeln!(out)?;
    let lines = output::lines(&report.runs);
    let rows = summary::summarize(&lines, &report.runs);
    para(out, &summary::times_legend(report.results.len(), with_postgres))?;
    writeln!(out, "{}", summary::times_table(&rows))?;
    writeln!(out)?;
    let fastest = verdict::sentence(
        &verdict::standings(&lines),
        report.results.len(),
        verdict::passes(&lines),
    );
    para(out, &format!("{fastest} {checked}"))?;
    if let Some(path) = detail {
        writeln!(out)?;
        para(
            out,
            &format!(
                "Per-query tables, system CPU shares, the durability of every file and the \
                 notes: {path}"
            ),
        )?;
    }
    Ok(())
}
