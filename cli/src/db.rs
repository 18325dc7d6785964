//! `nvpage check DIR`, `nvpage info DIR` and `nvpage recover DIR`.
//!
//! `check` and `info` open the database read-only with the pread layer (the on-disk format does
//! not depend on the layer) and change nothing. Their lock is shared: they run beside any number
//! of read-only opens, in the application or other tools, and are refused while a process has
//! the database open writable (the error names it). A database whose log holds an unfinished
//! transaction cannot be opened read-only (recovery would have to write): both say so, and that
//! `nvpage recover DIR` rolls it back. An error names its path once, and names the file (not
//! just the directory) where it concerns one.
//!
//! `recover` opens the database writable once, as an application's open would, which rolls the
//! unfinished transaction back, and prints what recovery did (`Database::recovery`).
//!
//! `info` shows no durability as the database's: a database stores none (each open chooses a mode
//! from its layer and the media, and the format records neither). It shows what an open with each
//! layer compiled into this build would get on these media, labelled so. It reads no table page,
//! so it says that `check` is what verifies them.

use std::io::{self, Write};
use std::path::Path;

use nvpage::{Database, Error, Layer, ReadOps};
use nvpage_wal::{Log, OpenOptions};

use crate::place::{Failure, Place};

/// The pool `recover` opens with: recovery writes with plain writes, not through the pool, so a
/// small one does (64 KiB pages, the largest, need 256 KiB).
const RECOVER_POOL_BYTES: u64 = 4 << 20;

fn open(place: Place<'_>) -> Result<Database, Failure> {
    let b = Database::builder().layer(Layer::Pread).read_only(true);
    open_with(place, b)
}

fn open_with(place: Place<'_>, mut b: nvpage::Builder) -> Result<Database, Failure> {
    if let Some(dir) = place.log_dir {
        b = b.log_dir(dir);
    }
    b.open(place.path).map_err(|e| describe(place, &e))
}

/// The one line for an error met on the database at `place`: the error's own message when it
/// names its file or directory (never the path twice), else the file it concerns, then the
/// message.
fn describe(place: Place<'_>, e: &Error) -> Failure {
    let path = place.path;
    match e {
        Error::NotFound { .. } => format!(
            "{}: no database here (no {} or {})",
            path.display(),
            nvpage::DATA_FILE,
            nvpage::LOG_FILE
        ),
        Error::RecoveryNeeded { log, .. } => format!(
            "{}: its log {} holds an unfinished transaction (a crash or a killed process left \
             it), which a read-only open cannot roll back; nothing was changed: run `nvpage \
             recover {}{}` to roll it back, then run this again",
            path.display(),
            log.display(),
            place.log_dir_arg(),
            path.display()
        ),
        e if e.path().is_some() => e.to_string(),
        Error::CorruptCatalog(_)
        | Error::IncompatibleFormat(_)
        | Error::CorruptPage { .. }
        | Error::CorruptRow(_) => {
            format!("{}: {e}", path.join(nvpage::DATA_FILE).display())
        }
        Error::CorruptLog(_) => format!("{}: {e}", place.log_path().display()),
        e => format!("{}: {e}", path.display()),
    }
}

fn io_failure(e: io::Error) -> Failure {
    format!("writing the report: {e}")
}

/// `nvpage check DIR`: every page in use, the catalog against the tables' pages, each index
/// against its table, the log.
pub fn check(place: Place<'_>, out: &mut dyn Write, err: &mut dyn Write) -> Result<(), Failure> {
    let path = place.path;
    let db = open(place)?;
    let r = db.check().map_err(|e| describe(place, &e))?;
    for d in &r.damage {
        writeln!(err, "damage: {d}").map_err(io_failure)?;
    }
    if !r.is_sound() {
        return Err(format!("{}: {} problem(s) found", path.display(), r.damage.len()));
    }
    writeln!(
        out,
        "{}: sound: {} of {} pages in use verified ({} unused), {} tables, {} rows, {} indexes \
         ({} entries, each matching its row); log generation {}, {} records",
        path.display(),
        r.pages_verified,
        r.page_count,
        r.pages_unused,
        r.tables.len(),
        r.tables.iter().map(|t| t.rows_scanned).sum::<u64>(),
        r.indexes.len(),
        r.indexes.iter().map(|x| x.entries_found).sum::<u64>(),
        r.log_generation,
        r.log_records
    )
    .map_err(io_failure)
}

/// `nvpage recover DIR`: a writable open (which recovers), closed at once; prints what recovery
/// did, or that there was nothing to do.
pub fn recover(place: Place<'_>, out: &mut dyn Write) -> Result<(), Failure> {
    let b = Database::builder().create(false).pool_bytes(RECOVER_POOL_BYTES);
    let db = open_with(place, b)?;
    let line = match db.recovery() {
        Some(r) => format!("{}: recovered: {r}", place.path.display()),
        None => format!(
            "{}: nothing to recover: the log holds no unfinished transaction",
            place.path.display()
        ),
    };
    db.close().map_err(|e| describe(place, &e))?;
    writeln!(out, "{line}").map_err(io_failure)
}

/// Writes one "durability if opened with LAYER:" line per compiled layer for the data file at
/// `path`: what a writable open with that layer would get, found by a read-only open with it
/// (which asks the medium the same questions); a layer refused there (emulated NVM asked for on
/// a disk) gives the refusal.
pub fn write_durabilities(path: &Path, out: &mut dyn Write) -> io::Result<()> {
    for layer in Layer::compiled() {
        let opts = nvpage_storage::OpenOptions {
            read_only: true,
            ..nvpage_storage::OpenOptions::new(layer)
        };
        let label = format!("durability if opened with {layer}:");
        match opts.open(path) {
            Ok(f) => writeln!(out, "{label:<33} data file {}", f.file().durability())?,
            Err(e) => writeln!(out, "{label:<33} refused: {e}")?,
        }
    }
    Ok(())
}

/// `nvpage info DIR`: format, page size and count, the durability each layer would get,
/// tables, the log's state, and that the pages were not verified (`nvpage check` does that).
pub fn info(place: Place<'_>, out: &mut dyn Write) -> Result<(), Failure> {
    let path = place.path;
    let log_path = place.log_path();
    let log_state =
        Log::open_with(&log_path, &OpenOptions { read_only: true, ..OpenOptions::default() })
            .map(|l| (l.nbyte(), l.generation(), l.tell(), l.record_count()));
    let db = open(place)?;
    let w = |out: &mut dyn Write| -> io::Result<()> {
        writeln!(out, "database:    {}", path.display())?;
        if place.log_dir.is_some() {
            writeln!(out, "log file:    {}", log_path.display())?;
        }
        writeln!(out, "format:      nvpage data file v{}", nvpage_storage::header::FORMAT_VERSION)?;
        writeln!(out, "uuid:        {}", db.uuid())?;
        writeln!(out, "page size:   {} bytes", db.page_size())?;
        writeln!(out, "page count:  {}", db.page_count())?;
        // A database has no durability of its own: every open chooses a mode from its layer and
        // the media (and the format records neither), so the tool shows what each layer would
        // get here, never one mode as if it were the database's.
        writeln!(
            out,
            "durability:  none is stored in a database: each open gets its own from its layer \
             and the media; with the default persistence, here:"
        )?;
        write_durabilities(&path.join(nvpage::DATA_FILE), out)?;
        writeln!(out, "{:<33} {}", "durability of the log, any layer:", db.log_durability())?;
        let rx = db.begin_read().map_err(io::Error::other)?;
        let tables = rx.tables();
        writeln!(out, "tables:      {}", tables.len())?;
        for t in &tables {
            let rows = rx.row_count(t).map_err(io::Error::other)?;
            let pages = rx.page_count(t).map_err(io::Error::other)?;
            let kind = match t.storage() {
                nvpage::Storage::Heap => "",
                nvpage::Storage::Clustered => " (clustered: rows in its primary key's leaves)",
            };
            writeln!(out, "  {:<24} {rows:>12} rows {pages:>10} pages{kind}", t.name())?;
            for x in rx.indexes(t).map_err(io::Error::other)? {
                let entries = rx.index_len(&x).map_err(io::Error::other)?;
                let kind = match (x.is_primary(), x.is_unique()) {
                    (true, _) => "primary key",
                    (false, true) => "unique index",
                    (false, false) => "index",
                };
                writeln!(
                    out,
                    "    {kind} {} ({}): {entries} entries",
                    x.name(),
                    x.columns().join(", ")
                )?;
            }
        }
        match &log_state {
            Ok((cap, generation, used, records)) => {
                writeln!(
                    out,
                    "log:         generation {generation}, {used} of {cap} bytes used, {records} records"
                )
            }
            Err(e) => writeln!(out, "log:         {e}"),
        }?;
        // Info reads only the header, the catalog and the log's state, so it cannot vouch for
        // the table pages: say what would.
        writeln!(
            out,
            "checked:     no (info reads the header, the catalog and the log); run `nvpage check \
             {}{}` to verify every page",
            place.log_dir_arg(),
            path.display()
        )
    };
    w(out).map_err(io_failure)
}
