//! The `nvpage` command. Today: `nvpage file-info PATH` prints a data file's header and the
//! persistence mode it gets. The log and database commands arrive with the log and the engine.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use nvpage::storage::{Layer, OpenOptions};

#[derive(Parser)]
#[command(name = "nvpage", version, about = "Inspect nvpage data files")]
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::FileInfo { path } => {
            let opts = OpenOptions { read_only: true, ..OpenOptions::new(Layer::Pread) };
            match opts.open(&path) {
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
    }
}
