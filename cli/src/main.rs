//! The `nvpage` command: `nvpage file-info PATH` prints a data file's header and the persistence
//! mode it gets; `nvpage log info|dump|check PATH` inspects a log (see `log.rs`); `nvpage check
//! PATH` and `nvpage info PATH` check and describe a database directory (see `db.rs`). Exit status 0
//! on success, 1 on any error (a message on stderr), 2 for a usage error.

#![forbid(unsafe_code)]

mod db;
mod log;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use nvpage_storage::{Layer, OpenOptions};

#[derive(Parser)]
#[command(name = "nvpage", version, about = "Inspect nvpage data files and logs")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Print a data file's header (page size, page count, UUID) and its persistence mode.
    FileInfo {
        /// The data file.
        path: PathBuf,
    },
    /// Verify a database: every page in use, the catalog against the tables, the log. Exits 1 on
    /// any damage, a missing database, or a log that needs recovery.
    Check {
        /// The database directory.
        path: PathBuf,
        /// The log's directory, for a database whose log lives apart (`Builder::log_dir`).
        #[arg(long)]
        log_dir: Option<PathBuf>,
    },
    /// Describe a database: format, page size and count, durability, tables, the log's state.
    Info {
        /// The database directory.
        path: PathBuf,
        /// The log's directory, for a database whose log lives apart (`Builder::log_dir`).
        #[arg(long)]
        log_dir: Option<PathBuf>,
    },
    /// Inspect a log file: `info`, `dump` or `check`.
    #[command(subcommand)]
    Log(log::LogCmd),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::FileInfo { path } => file_info(&path),
        Cmd::Check { path, log_dir } => {
            let place = db::Place { path: &path, log_dir: log_dir.as_deref() };
            report(db::check(place, &mut std::io::stdout().lock(), &mut std::io::stderr().lock()))
        }
        Cmd::Info { path, log_dir } => {
            let place = db::Place { path: &path, log_dir: log_dir.as_deref() };
            report(db::info(place, &mut std::io::stdout().lock()))
        }
        Cmd::Log(cmd) => match log::run(&cmd, &mut std::io::stdout().lock()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("nvpage: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

fn report(r: Result<(), db::Failure>) -> ExitCode {
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nvpage: {e}");
            ExitCode::FAILURE
        }
    }
}

fn file_info(path: &std::path::Path) -> ExitCode {
    let opts = OpenOptions { read_only: true, ..OpenOptions::new(Layer::Pread) };
    match opts.open(path) {
        Ok(f) => {
            let h = f.file().header();
            println!("file:       {}", path.display());
            println!("page size:  {}", h.page_size.bytes());
            println!("page count: {}", h.page_count);
            println!("uuid:       {}", h.uuid);
            println!("durability: {}", f.file().durability());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("nvpage: {e}");
            ExitCode::FAILURE
        }
    }
}
