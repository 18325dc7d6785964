//! `nvpage log info|dump|check DIR|FILE`: inspect a database's log without changing it. The
//! log is `DIR`'s (or the one in `--log-dir`), or `FILE` itself.
//!
//! Every command opens the log read-only (a shared lock: it runs beside other read-only opens,
//! not beside a writer), which checks its header, its state word and every record below the tail
//! or watermark, then finds a record log's records past the watermark (without storing
//! anything); a missing file, a file that is not a log or a damaged log is an error message and
//! exit status 1, never a panic. `dump` of an empty log says it is empty.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use nvpage_wal::{Framing, Log, OpenOptions, WalError};

use crate::place::{self, Failure};

/// The `log` subcommands.
#[derive(Subcommand, Debug)]
pub enum LogCmd {
    /// Header, persistence mode, capacity, bytes used, generation and record count.
    Info(LogArgs),
    /// The records (or a raw log's bytes) as hex and ASCII, like `pmempool dump`.
    Dump(LogArgs),
    /// Verify every checksum; exit 0 only if the log is sound.
    Check(LogArgs),
}

/// Which log: a database directory's, or a log file.
#[derive(Args, Debug)]
pub struct LogArgs {
    /// The database directory, or the log file itself.
    path: PathBuf,
    /// The log's directory, for a database whose log lives apart (`Builder::log_dir`).
    #[arg(long)]
    log_dir: Option<PathBuf>,
}

/// Runs a `log` subcommand, writing to `out`.
pub fn run(cmd: &LogCmd, out: &mut dyn Write) -> Result<(), Failure> {
    let (LogCmd::Info(a) | LogCmd::Dump(a) | LogCmd::Check(a)) = cmd;
    let path = place::file(&a.path, a.log_dir.as_deref(), nvpage::LOG_FILE)?;
    let r = match cmd {
        LogCmd::Info(_) => info(&path, out),
        LogCmd::Dump(_) => dump(&path, out),
        LogCmd::Check(_) => check(&path, out),
    };
    r.map_err(|e| e.to_string())
}

fn open(path: &Path) -> Result<Log, WalError> {
    Log::open_with(path, &OpenOptions { read_only: true, ..OpenOptions::default() })
}

fn io_err(path: &Path) -> impl Fn(io::Error) -> WalError + '_ {
    move |e| nvpage_wal::WalError::Storage(nvpage_storage::StorageError::io("write", path, e))
}

fn info(path: &Path, out: &mut dyn Write) -> Result<(), WalError> {
    let log = open(path)?;
    let h = log.header();
    let w = |out: &mut dyn Write| -> io::Result<()> {
        writeln!(out, "file:        {}", path.display())?;
        writeln!(out, "format:      nvpage log v{}", h.version)?;
        writeln!(out, "framing:     {}", h.framing)?;
        writeln!(out, "uuid:        {}", h.uuid)?;
        writeln!(out, "durability:  {}", log.durability())?;
        writeln!(out, "capacity:    {} bytes", log.nbyte())?;
        writeln!(out, "used:        {} bytes", log.tell())?;
        let mark = if h.framing == Framing::Raw { "tail" } else { "watermark" };
        writeln!(out, "state word:  {mark} {}", log.stored_mark())?;
        writeln!(out, "generation:  {}", log.generation())?;
        match h.framing {
            Framing::Records => writeln!(out, "records:     {}", log.record_count()),
            _ => writeln!(out, "records:     n/a (raw byte stream)"),
        }
    };
    w(out).map_err(io_err(path))
}

fn dump(path: &Path, out: &mut dyn Write) -> Result<(), WalError> {
    let log = open(path)?;
    if log.framing() == Framing::Raw {
        let mut stream = Vec::new();
        log.walk(0, |c| {
            stream.extend_from_slice(c);
            true
        })?;
        if stream.is_empty() {
            return empty(&log, out);
        }
        return hexdump(&stream, out).map_err(io_err(path));
    }
    if log.record_count() == 0 {
        return empty(&log, out);
    }
    for (i, r) in log.records()?.enumerate() {
        let r = r?;
        let w = |out: &mut dyn Write| -> io::Result<()> {
            writeln!(out, "record {i} at offset {} ({} bytes)", r.pos.0, r.payload.len())?;
            hexdump(r.payload, out)
        };
        w(out).map_err(io_err(path))?;
    }
    Ok(())
}

/// What `dump` prints for a log with nothing in it, so that no output is never the answer.
fn empty(log: &Log, out: &mut dyn Write) -> Result<(), WalError> {
    writeln!(
        out,
        "{}: the log is empty (generation {}, 0 of {} bytes used)",
        log.path().display(),
        log.generation(),
        log.nbyte()
    )
    .map_err(io_err(log.path()))
}

fn check(path: &Path, out: &mut dyn Write) -> Result<(), WalError> {
    let log = open(path)?;
    let records = match log.framing() {
        Framing::Records => log.records()?.try_fold(0u64, |n, r| r.map(|_| n + 1))?,
        _ => 0,
    };
    writeln!(
        out,
        "{}: sound: framing {}, generation {}, {} records, {} of {} bytes used",
        path.display(),
        log.framing(),
        log.generation(),
        records,
        log.tell(),
        log.nbyte()
    )
    .map_err(io_err(path))
}

/// 16 bytes a line: offset, hex in two groups of eight, ASCII — `pmempool dump`'s layout.
fn hexdump(bytes: &[u8], out: &mut dyn Write) -> io::Result<()> {
    for (n, line) in bytes.chunks(16).enumerate() {
        let mut hex = String::with_capacity(50);
        for i in 0..16 {
            match line.get(i) {
                Some(b) => hex.push_str(&format!("{b:02x} ")),
                None => hex.push_str("   "),
            }
            if i == 7 {
                hex.push(' ');
            }
        }
        let ascii: String = (0..16)
            .map(|i| match line.get(i) {
                Some(&b) if b.is_ascii_graphic() || b == b' ' => b as char,
                Some(_) => '.',
                None => ' ',
            })
            .collect();
        writeln!(out, "{:08x}  {hex} |{ascii}|", n * 16)?;
    }
    Ok(())
}
