//! The `nvpage` command. Every command takes a database directory (`--log-dir D` where the
//! database keeps its log apart, as `Builder::log_dir` put it); the file commands, `file-info`
//! and `log …`, also take the data file or the log file itself:
//!
//! - `nvpage info DIR`, `nvpage check DIR`: describe and verify a database (see `db.rs`);
//! - `nvpage recover DIR`: roll back what a crash left, and say what was rolled back;
//! - `nvpage file-info DIR|FILE`: the data file's header;
//! - `nvpage log info|dump|check DIR|FILE`: the log (see `log.rs`).
//!
//! All but `recover` open read-only, with a shared lock: they run beside an application or
//! another `nvpage` that has the database open read-only, and are refused, with the holder's
//! process id, while one has it open writable. Exit status 0 on success, 1 on any error (one line
//! on stderr), 2 for a usage error.

#![forbid(unsafe_code)]

mod db;
mod log;
mod place;
#[cfg(feature = "sql")]
mod sql;
#[cfg(feature = "cluster")]
mod worker;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use nvpage_storage::{Layer, OpenOptions};

use crate::place::{Failure, Place};

#[derive(Parser)]
#[command(
    name = "nvpage",
    version,
    about = "Inspect, check and recover nvpage databases, their data files and logs",
    after_help = "Every command takes the database directory; `file-info` and `log` also take \
                  the file itself. From a checkout: `cargo run --release -p nvpage-cli -- info \
                  DIR`, or install the command with `cargo install --path cli`."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

/// A database directory, and its log's directory if apart.
#[derive(Args)]
struct DbArgs {
    /// The database directory.
    path: PathBuf,
    /// The log's directory, for a database whose log lives apart (`Builder::log_dir`).
    #[arg(long)]
    log_dir: Option<PathBuf>,
}

impl DbArgs {
    fn place(&self) -> Place<'_> {
        Place { path: &self.path, log_dir: self.log_dir.as_deref() }
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Describe a database: format, page size and count, the durability each layer would get,
    /// tables and indexes, the log's state.
    Info(DbArgs),
    /// Verify a database: every page in use, the catalog against the tables, each index against
    /// its table, the log. Exits 1 on any damage, a missing database, or a log that needs
    /// recovery.
    Check(DbArgs),
    /// Roll back the unfinished transaction a crash or a killed process left in the log (opening
    /// the database writable once, as an application's open would), and print what was rolled
    /// back. Refused while another process has the database open.
    Recover(DbArgs),
    /// Print a data file's header (page size, page count, UUID) and the durability an open with
    /// each layer would get.
    FileInfo {
        /// The database directory, or its data file.
        path: PathBuf,
    },
    /// Inspect a database's log: `info`, `dump` or `check`.
    #[command(subcommand)]
    Log(log::LogCmd),
    /// Run SQL over a database: statements from -c and -f in the order given, else from
    /// standard input, else (on a terminal) an interactive shell. All run in one session, so
    /// `BEGIN` … `COMMIT` may span them; the first that fails ends the run (exit status 1).
    #[cfg(feature = "sql")]
    Sql(sql::SqlArgs),
    /// Serve a database's shards to a cluster's coordinator (`nvpage sql --cluster FILE`) until
    /// SIGTERM or Ctrl-C. Every request must carry the cluster's token.
    #[cfg(feature = "cluster")]
    Worker(worker::WorkerArgs),
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    let (out, err) = (std::io::stdout, std::io::stderr);
    let r = match &cli.cmd {
        Cmd::Info(a) => db::info(a.place(), &mut out().lock()),
        Cmd::Check(a) => db::check(a.place(), &mut out().lock(), &mut err().lock()),
        Cmd::Recover(a) => db::recover(a.place(), &mut out().lock()),
        Cmd::FileInfo { path } => file_info(path),
        Cmd::Log(cmd) => log::run(cmd, &mut out().lock()),
        #[cfg(feature = "sql")]
        Cmd::Sql(a) => match matches.subcommand_matches("sql") {
            Some(m) => sql::run(a, m),
            None => Err("the sql command's arguments were not parsed".into()),
        },
        #[cfg(feature = "cluster")]
        Cmd::Worker(a) => worker::run(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nvpage: {e}");
            ExitCode::FAILURE
        }
    }
}

fn file_info(path: &std::path::Path) -> Result<(), Failure> {
    let data = place::file(path, None, nvpage::DATA_FILE)?;
    let opts = OpenOptions { read_only: true, ..OpenOptions::new(Layer::Pread) };
    let f = opts.open(&data).map_err(|e| e.to_string())?;
    let h = f.file().header();
    println!("file:       {}", data.display());
    println!("page size:  {}", h.page_size.bytes());
    println!("page count: {}", h.page_count);
    println!("uuid:       {}", h.uuid);
    db::write_durabilities(&data, &mut std::io::stdout().lock()).map_err(|e| e.to_string())
}
