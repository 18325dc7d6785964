//! `nvpage-bench tpch`: the TPC-H query-time comparison across the file layers, on disk and on
//! emulated NVM, cold and warm (issue 6; the experiment of Mustafa et al., 2016, on our engine).
//!
//! - [`load`]: `tpchgen`'s rows into nvpage tables with exact types ([`schema`]).
//! - [`queries`]: hand-written plans over nvpage scans for Q1, Q3, Q5, Q6, Q10, Q12, Q14, Q19.
//! - [`runner`]: the matrix of media × layers × pool sizes × cold/warm × runs; every answer is
//!   checked against the first, so the layers and passes must agree.
//! - [`output`] and [`chart`]: the terminal tables, the comparison with pread, the SVG chart;
//!   the JSON is [`runner::Report`] as DESIGN.md's "The benchmark" shapes it.
//!
//! What it is not: an audited TPC-H run (no refresh functions here: `nvpage-bench refresh` runs
//! them beside Q1 and Q6; no query streams, a subset of the queries, no indexes), nor a test of
//! the answers against the specification's SQL; the tests do that against plain Rust over the
//! generator's rows, and `--with-postgres` against PostgreSQL.

pub mod answers;
pub mod args;
pub mod chart;
pub mod load;
pub mod output;
mod pg_sql;
pub mod postgres;
pub mod queries;
pub mod runner;
pub mod schema;

pub use args::{Config, Medium, TpchArgs};
pub use queries::{Query, QueryResult};
pub use runner::{Report, execute};

use crate::BoxError;

/// Runs the subcommand: the matrix, the tables, and the files asked for.
pub fn run(args: &TpchArgs) -> Result<(), BoxError> {
    let cfg = Config::from_args(args)?;
    if cfg.with_postgres {
        // Fail before the long nvpage matrix, not after it.
        postgres::find_bin()?;
    }
    let report = execute(&cfg)?;
    output::print(&report);
    if cfg.sf == 1.0 {
        let mut bad = Vec::new();
        for r in &report.results {
            let q = Query::parse(&r.query).ok_or("unknown query in the results")?;
            let ours = QueryResult { columns: r.columns.clone(), rows: r.rows.clone() };
            if let Some(d) = answers::check_sf1(q, &ours) {
                bad.push(format!("{q}: {d}"));
            }
        }
        if !bad.is_empty() {
            return Err(format!(
                "answers differ from TPC-H's SF 1 answer set:\n{}",
                bad.join("\n")
            )
            .into());
        }
        println!(
            "\nEvery answer equals TPC-H's answer set for SF 1 ({} queries).",
            report.results.len()
        );
    }
    if let Some(path) = &args.json {
        write_json(&report, path)?;
        println!("\nJSON written to {}", path.display());
    }
    if let Some(path) = &args.svg {
        let title = format!("TPC-H SF {} on nvpage: median query time per layer", cfg.sf);
        chart::draw(&output::lines(&report.runs), &title, path)?;
        println!("SVG chart written to {}", path.display());
    }
    Ok(())
}

/// Writes the report as pretty JSON.
pub fn write_json(report: &Report, path: &std::path::Path) -> Result<(), BoxError> {
    let text = serde_json::to_string_pretty(report)?;
    std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(())
}
