//! `nvpage check PATH` and `nvpage info PATH`: a database directory, opened read-only with the
//! pread layer (the on-disk format does not depend on the layer), never changed.
//!
//! A database whose log holds an unfinished transaction cannot be opened read-only (recovery
//! would have to write): both commands say so and exit 1, as they do for a missing database or
//! any damage. An error names its path once, and names the file (not just the directory) where
//! it concerns one.
//!
//! `info` shows the durability of its own read-only open, labelled as such: a database has no
//! durability of its own (each open chooses a mode from its layer and the medium, and the format
//! records neither), so that is the only figure the tool can read rather than guess. It reads no
//! table page, so it says that `check` is what verifies them.

use std::io::{self, Write};
use std::path::Path;

use nvpage::{Database, Error, Layer, ReadOps};
use nvpage_wal::{Log, OpenOptions};

/// What went wrong, as the one line `main` prints after `nvpage: `.
pub type Failure = String;

/// Where a database's files are: its directory, and the log's if it lives apart
/// (`--log-dir`, as the database was opened with `Builder::log_dir`).
#[derive(Clone, Copy, Debug)]
pub struct Place<'a> {
    /// The database directory.
    pub path: &'a Path,
    /// The log's directory, if not the database's.
    pub log_dir: Option<&'a Path>,
}

impl Place<'_> {
    fn log_path(&self) -> std::path::PathBuf {
        self.log_dir.unwrap_or(self.path).join(nvpage::LOG_FILE)
    }
}

fn open(place: Place<'_>) -> Result<Database, Failure> {
    let mut b = Database::builder().layer(Layer::Pread).read_only(true);
    if let Some(dir) = place.log_dir {
        b = b.log_dir(dir);
    }
    b.open(place.path).map_err(|e| describe(place.path, &e))
}

/// The one line for an error met on the database at `path`: the error's own message when it
/// names its file or directory (never the path twice), else the file it concerns, then the
/// message.
fn describe(path: &Path, e: &Error) -> Failure {
    match e {
        Error::NotFound { .. } => format!(
            "{}: no database here (no {} or {})",
            path.display(),
            nvpage::DATA_FILE,
            nvpage::LOG_FILE
        ),
        Error::RecoveryNeeded { .. } => format!(
            "{}: the log holds an unfinished transaction (a crash or kill left it); open the \
             database writable once to roll it back, then check again",
            path.display()
        ),
        e if e.path().is_some() => e.to_string(),
        Error::CorruptCatalog(_)
        | Error::IncompatibleFormat(_)
        | Error::CorruptPage { .. }
        | Error::CorruptRow(_) => {
            format!("{}: {e}", path.join(nvpage::DATA_FILE).display())
        }
        Error::CorruptLog(_) => format!("{}: {e}", path.join(nvpage::LOG_FILE).display()),
        e => format!("{}: {e}", path.display()),
    }
}

fn io_failure(e: io::Error) -> Failure {
    format!("writing the report: {e}")
}

/// `nvpage check PATH`: every page in use, the catalog against the tables' pages, each index
/// against its table, the log.
pub fn check(place: Place<'_>, out: &mut dyn Write, err: &mut dyn Write) -> Result<(), Failure> {
    let path = place.path;
    let db = open(place)?;
    let r = db.check().map_err(|e| describe(path, &e))?;
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

/// `nvpage info PATH`: format, page size and count, durability, tables, the log's state, and
/// that the pages were not verified (`nvpage check` does that).
pub fn info(place: Place<'_>, out: &mut dyn Write) -> Result<(), Failure> {
    let path = place.path;
    let log_path = place.log_path();
    let log_state =
        Log::open_with(&log_path, &OpenOptions { read_only: true, ..OpenOptions::default() })
            .map(|l| (l.nbyte(), l.generation(), l.tell(), l.record_count(), l.durability()));
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
        // the medium (and the format records neither), so the only figure the tool can read is
        // its own read-only open's, and it says so rather than pass it off as the database's.
        writeln!(
            out,
            "durability:  of this tool's read-only open (layer {}); each open chooses its own \
             from its layer and the medium",
            db.layer()
        )?;
        writeln!(out, "  data file: {}", db.durability())?;
        writeln!(out, "  log:       {}", db.log_durability())?;
        let rx = db.begin_read().map_err(io::Error::other)?;
        let tables = rx.tables();
        writeln!(out, "tables:      {}", tables.len())?;
        for t in &tables {
            let rows = rx.row_count(t).map_err(io::Error::other)?;
            let pages = rx.page_count(t).map_err(io::Error::other)?;
            writeln!(out, "  {:<24} {rows:>12} rows {pages:>10} pages", t.name())?;
            for x in rx.indexes(t).map_err(io::Error::other)? {
                let entries = rx.index_len(&x).map_err(io::Error::other)?;
                let kind = if x.is_unique() { "unique index" } else { "index" };
                writeln!(
                    out,
                    "    {kind} {} ({}): {entries} entries",
                    x.name(),
                    x.columns().join(", ")
                )?;
            }
        }
        match &log_state {
            Ok((cap, generation, used, records, _)) => {
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
             {}` to verify every page",
            path.display()
        )
    };
    w(out).map_err(io_failure)
}
