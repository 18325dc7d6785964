//! The `nvpage` command: `nvpage file-info PATH` prints a data file's header and the persistence
//! mode it gets; `nvpage log info|dump|check PATH` inspects a log (see `log.rs`). Exit status 0
//! on success, 1 on any error (a message on stderr), 2 for a usage error.

#![forbid(unsafe_code)]

mod log;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use nvpage::storage::{Layer, OpenOptions};

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
    /// Inspect a log file: `info`, `dump` or `check`.
    #[command(subcommand)]
    Log(log::LogCmd),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::FileInfo { path } => file_info(&path),
        Cmd::Log(cmd) => match log::run(&cmd, &mut std::io::stdout().lock()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("nvpage: {e}");
                ExitCode::FAILURE
            }
        },
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
