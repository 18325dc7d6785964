//! `nvpage-bench tpch`: the TPC-H query-time comparison across the file layers, on disk and on
//! emulated NVM, cold and warm (the experiment of Mustafa et al., 2016, on our engine).
//!
//! - [`load`]: `tpchgen`'s rows into nvpage tables with exact types ([`schema`]).
//! - [`queries`]: hand-written plans over nvpage scans for all 22 queries.
//! - [`runner`]: the matrix of media × layers × pool sizes × cold/warm × runs; every answer is
//!   checked against the first, so the layers and passes must agree.
//! - [`screen`], [`summary`] and [`verdict`]: what the command prints, one screen — the loads,
//!   the paper's table, and a sentence naming the fastest layer per medium and pool size and what
//!   the answers were checked against; [`output`]: the detail, written to a file by default
//!   (`--detail`); [`chart`]: the SVG chart; the JSON is [`runner::Report`] as DESIGN.md's "The
//!   benchmark" shapes it.
//!
//! What it is not: an audited TPC-H run (no refresh functions here: `nvpage-bench refresh` runs
//! them beside Q1 and Q6; no query streams; the loader builds the primary-key indexes, and the
//! plans scan), nor a test of the answers against the
//! specification's SQL; the tests do that against plain Rust over the generator's rows, and
//! `--with-postgres` against PostgreSQL.

pub mod answers;
pub mod args;
pub mod chart;
#[cfg(feature = "cluster")]
pub mod cluster;
pub mod load;
pub mod output;
mod pg_matrix;
mod pg_sql;
pub mod postgres;
pub mod progress;
pub mod queries;
pub mod runner;
pub mod scaling;
pub mod schema;
pub mod screen;
#[cfg(feature = "sql")]
pub mod sql;
pub mod summary;
pub mod verdict;

pub use args::{Config, Medium, TpchArgs};
pub use queries::{Query, QueryResult};
pub use runner::{Report, execute};

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::BoxError;

/// Runs the subcommand: the matrix (at each scale factor of `--scaling`), the screen, the
/// detail, and the files asked for.
pub fn run(args: &TpchArgs) -> Result<(), BoxError> {
    let cfg = Config::from_args(args)?;
    if !args.workers.is_empty() {
        #[cfg(feature = "cluster")]
        return cluster::bench(&cfg, &args.workers);
        #[cfg(not(feature = "cluster"))]
        return Err("tpch --workers needs the bench feature `cluster` (cargo run --release \
                    -p nvpage-bench --features cluster -- tpch --workers 1,2,4)"
            .into());
    }
    if cfg.with_postgres {
        // Fail before the long nvpage matrix, not after it.
        postgres::find_bin()?;
    }
    if args.scaling.is_empty() {
        run_one(args, &cfg, |p| p.to_path_buf())?;
        return Ok(());
    }
    let mut reports = Vec::new();
    for (i, &sf) in args.scaling.iter().enumerate() {
        let cfg = Config { sf, ..cfg.clone() };
        if !cfg.quiet {
            eprintln!("SF {sf} ({} of {} scale factors)", i + 1, args.scaling.len());
        }
        println!("{}== SF {sf} ==", if i == 0 { "" } else { "\n" });
        reports.push(run_one(args, &cfg, |p| with_sf(p, sf))?);
    }
    println!("\n{}\n{}", scaling::LEGEND, scaling::table(&scaling::rows(&reports)));
    Ok(())
}

/// `path` with `-sf<sf>` before its extension: one file per scale factor.
fn with_sf(path: &Path, sf: f64) -> PathBuf {
    let stem = path.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(ext) => format!("{stem}-sf{sf}.{}", ext.to_string_lossy()),
        None => format!("{stem}-sf{sf}"),
    };
    path.with_file_name(name)
}

/// The detail file's name when `--detail` does not give one.
pub const DEFAULT_DETAIL: &str = "tpch-detail.txt";

/// Where the detail goes: `--detail`'s path, else [`DEFAULT_DETAIL`] beside `--json`'s file, or
/// beside `--svg`'s, or in the working directory; `None` for standard output (`--detail -`).
pub fn detail_path(args: &TpchArgs) -> Option<PathBuf> {
    match &args.detail {
        Some(p) if p.as_os_str() == "-" => None,
        Some(p) => Some(p.clone()),
        None => {
            let beside = args.json.as_deref().or(args.svg.as_deref()).and_then(Path::parent);
            Some(beside.unwrap_or(Path::new("")).join(DEFAULT_DETAIL))
        }
    }
}

/// One matrix at `cfg.sf`: runs it, checks the answers, prints the screen, writes the detail
/// and the files asked for (each path through `file`).
fn run_one(
    args: &TpchArgs,
    cfg: &Config,
    file: impl Fn(&Path) -> PathBuf,
) -> Result<Report, BoxError> {
    let report = execute(cfg)?;
    // A difference from the answer set is reported after the figures are printed and saved.
    let (checked, differs) = match check_answers(&report) {
        Ok(line) => (line, None),
        Err(e) => {
            ("Answers: the check FAILED (the error follows the report).".to_string(), Some(e))
        }
    };
    let detail = detail_path(args).map(|p| file(&p));
    let mut stdout = std::io::stdout().lock();
    let shown = detail.as_ref().map(|p| p.display().to_string());
    screen::write_screen(&report, &checked, shown.as_deref(), &mut stdout)?;
    match &detail {
        Some(path) => {
            let mut f = std::io::BufWriter::new(
                std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?,
            );
            output::write_detail(&report, &checked, &mut f)?;
            f.flush()?;
        }
        None => {
            writeln!(stdout)?;
            output::write_detail(&report, &checked, &mut stdout)?;
        }
    }
    if args.markdown {
        let rows = summary::summarize(&output::lines(&report.runs), &report.runs);
        writeln!(stdout, "\nThe summary in Markdown:\n\n{}", summary::markdown(&rows))?;
    }
    if let Some(path) = args.json.as_deref().map(&file) {
        write_json(&report, &path)?;
        writeln!(stdout, "JSON written to {}", path.display())?;
    }
    if let Some(path) = args.svg.as_deref().map(&file) {
        let title = format!("TPC-H SF {} on nvpage: median query time per layer", cfg.sf);
        chart::draw(&output::lines(&report.runs), &title, &path)?;
        writeln!(stdout, "SVG chart written to {}", path.display())?;
    }
    match differs {
        Some(e) => Err(e),
        None => Ok(report),
    }
}

/// Checks the answers against TPC-H's answer set where one exists (SF 1: an error if any
/// differs) and says, in one line, what every answer was checked against.
pub fn check_answers(report: &Report) -> Result<String, BoxError> {
    let cfg = &report.config.options;
    let mut configs: Vec<(&str, &str, f64, bool)> = Vec::new();
    for r in report.runs.iter().filter(|r| !r.layer.starts_with("postgres")) {
        let c = (r.layer.as_str(), r.medium.as_str(), r.pool_fraction, r.cold);
        if !configs.contains(&c) {
            configs.push(c);
        }
    }
    let mut against = vec![format!(
        "equal in all {} configuration{} (layer × medium × pool size × pass, every run and \
         warm-up)",
        configs.len(),
        if configs.len() == 1 { "" } else { "s" }
    )];
    if cfg.with_postgres {
        against.push("equal to PostgreSQL's".into());
    }
    if cfg.sf == 1.0 {
        let mut bad = Vec::new();
        let mut within = 0;
        for r in &report.results {
            let q = Query::parse(&r.query).ok_or("unknown query in the results")?;
            let ours = QueryResult { columns: r.columns.clone(), rows: r.rows.clone() };
            match answers::check_sf1_counted(q, &ours) {
                Ok(n) => within += n,
                Err(d) => bad.push(format!("{q}: {d}")),
            }
        }
        if !bad.is_empty() {
            return Err(format!(
                "answers differ from TPC-H's SF 1 answer set:\n{}",
                bad.join("\n")
            )
            .into());
        }
        against.push(if within == 0 {
            "equal to TPC-H's answer set for SF 1".into()
        } else {
            format!(
                "equal to TPC-H's answer set for SF 1 ({within} of the values within the \
                 precision its clause 2.1.3.5 allows rather than to the cent: see answers.rs)"
            )
        });
    } else {
        against.push(format!(
            "not compared with TPC-H's answer set, which is for SF 1 only (the plans are checked \
             against a plain-Rust reference by the tests, at SF {})",
            answers::REFERENCE_TEST_SF
        ));
    }
    Ok(format!(
        "Every answer of the {} quer{} was checked: {}.",
        report.results.len(),
        if report.results.len() == 1 { "y" } else { "ies" },
        against.join("; ")
    ))
}

/// Writes the report as pretty JSON.
pub fn write_json(report: &Report, path: &std::path::Path) -> Result<(), BoxError> {
    let text = serde_json::to_string_pretty(report)?;
    std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        tpch: TpchArgs,
    }

    fn detail(argv: &[&str]) -> Option<PathBuf> {
        detail_path(&Cli::parse_from(std::iter::once("tpch").chain(argv.iter().copied())).tpch)
    }

    #[test]
    fn the_detail_goes_beside_the_json_or_where_asked() {
        assert_eq!(detail(&[]), Some(PathBuf::from("tpch-detail.txt")));
        assert_eq!(detail(&["--json", "out/r.json"]), Some(PathBuf::from("out/tpch-detail.txt")));
        assert_eq!(detail(&["--svg", "out/c.svg"]), Some(PathBuf::from("out/tpch-detail.txt")));
        assert_eq!(detail(&["--json", "r.json", "--detail", "d.txt"]), Some("d.txt".into()));
        assert_eq!(detail(&["--detail", "-"]), None);
    }
}
