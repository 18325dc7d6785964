//! `nvpage-bench refresh`: TPC-H's refresh functions in a loop of write transactions beside a
//! query stream. For Q1 and Q6 on one thread: the query time alone and beside the
//! refresh loop, the loop's throughput alone and beside the queries, per layer and medium, with
//! the memory old page versions hold and the readers' page-latch waits.
//!
//! - [`sets`]: the refresh sets, drawn by `tpchgen`'s own generators past the loaded orders.
//! - [`functions`]: RF1 and RF2 as write transactions (RF2 finds its rows by a scan).
//! - [`model`]: the answer every snapshot must give, to check each query beside the loop.
//! - [`writer`]: the refresh loop, on its own thread.
//! - [`database`]: the phases on one database; [`runner`]: the matrix.
//! - [`records`]: the JSON's lines; [`output`]: the summaries and tables.
//!
//! What it is not: TPC-H's throughput test (no query streams of all 22 queries, no power test),
//! nor dbgen's update sets (see [`sets`] for where they differ).

pub mod args;
pub mod database;
pub mod functions;
pub mod model;
pub mod output;
pub mod records;
pub mod runner;
pub mod sets;
pub mod writer;

pub use args::{Config, QUERIES, RefreshArgs};
pub use records::Report;
pub use runner::execute;

use crate::BoxError;

/// Runs the subcommand: the matrix, the tables, and the JSON if asked for.
pub fn run(args: &RefreshArgs) -> Result<(), BoxError> {
    let cfg = Config::from_args(args)?;
    let report = execute(&cfg)?;
    output::print(&report);
    if let Some(path) = &args.json {
        write_json(&report, path)?;
        println!("\nJSON written to {}", path.display());
    }
    Ok(())
}

/// Writes the report as pretty JSON.
pub fn write_json(report: &Report, path: &std::path::Path) -> Result<(), BoxError> {
    let text = serde_json::to_string_pretty(report)?;
    std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(())
}
