//! Recovery at open (DESIGN.md rule 5): the log's unfinished transaction rolled back from the
//! log alone, with plain reads and writes of the data file, before the data file is mapped or any
//! page checksum is checked (it repairs exactly the pages those checks would reject); and the
//! report of what it did ([`RecoveryReport`], [`Database::recovery`](crate::Database::recovery)).
//!
//! A read-only open never recovers: a log holding a transaction makes it
//! [`Error::RecoveryNeeded`], and it has written nothing.

use std::fmt;
use std::path::Path;

use nvpage_storage::page::MIN_PAGE_SIZE;
use nvpage_storage::{FileHeader, FileOptions, PageId, PersistRequest, RawFile};
use nvpage_wal::Log;

use crate::error::{Error, Result};
use crate::undo;

/// What recovery did when the database was opened ([`Database::recovery`]): the unfinished
/// transaction a crash or a killed process left in the log, rolled back.
///
/// [`Database::recovery`]: crate::Database::recovery
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecoveryReport {
    /// Unfinished transactions rolled back: the log holds at most one (one writer at a time,
    /// and every commit and abort rewinds the log).
    pub transactions_rolled_back: u64,
    /// Pages of the data file given back their bytes from before the transaction.
    pub pages_restored: u64,
    /// Before-images applied, newest first: a page written back more than once during the
    /// transaction has one per write-back.
    pub images_applied: u64,
    /// Log records read.
    pub log_records_read: u64,
    /// Bytes of log read: the unfinished transaction's records.
    pub log_bytes_read: u64,
}

impl fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.transactions_rolled_back;
        write!(
            f,
            "rolled back {n} unfinished transaction{}: {} page{} restored from {} before-image{} \
             in {} log record{} ({} bytes of log read)",
            plural(n),
            self.pages_restored,
            plural(self.pages_restored),
            self.images_applied,
            plural(self.images_applied),
            self.log_records_read,
            plural(self.log_records_read),
            self.log_bytes_read
        )
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Where a database's files are, and how the open treats them.
pub(crate) struct Recover<'a> {
    /// The database directory, as the caller named it.
    pub dir: &'a Path,
    pub data_path: &'a Path,
    pub log_path: &'a Path,
    pub read_only: bool,
    pub log_persistence: PersistRequest,
    /// How far the log may grow ([`crate::Builder::max_log_bytes`]).
    pub max_log_bytes: u64,
    /// How its growths set space aside ([`crate::Builder::log_prefill`]).
    pub log_prefill: nvpage_wal::Prefill,
}

/// Opens the log and rolls back its unfinished transaction, if any, with plain reads and writes
/// of the data file; returns the log and, if it rolled one back, what it did. A read-only open
/// that finds one is [`Error::RecoveryNeeded`], and has changed nothing.
pub(crate) fn recover(r: &Recover<'_>) -> Result<(Log, Option<RecoveryReport>)> {
    let wal_opts = nvpage_wal::OpenOptions {
        read_only: r.read_only,
        persistence: r.log_persistence,
        expect_uuid: None,
        max_bytes: Some(r.max_log_bytes),
        prefill: r.log_prefill,
    };
    let mut log = Log::open_with(r.log_path, &wal_opts)?;
    let fopts = FileOptions { mapped: false, read_only: r.read_only, ..FileOptions::default() };
    let raw = RawFile::open(r.data_path, &fopts)?;
    let mut prefix = vec![0u8; (MIN_PAGE_SIZE as u64).min(raw.len_bytes()) as usize];
    raw.read_at(&mut prefix, 0)?;
    let header = FileHeader::decode_prefix(r.data_path, &prefix);
    let page_size = match &header {
        Ok(h) if h.uuid != log.uuid() => {
            return Err(Error::Wal(nvpage_wal::WalError::ForeignLog {
                path: r.log_path.into(),
                expected: h.uuid,
                found: log.uuid(),
            }));
        }
        Ok(h) => h.page_size.bytes(),
        // A header torn by a crash is repaired from its before-image, if the log holds one of
        // this database.
        Err(_) => match header_image(&log)? {
            Some(size) => size,
            None => return Err(header.expect_err("matched Err").into()),
        },
    };
    let log_bytes_read = log.tell();
    if log_bytes_read == 0 {
        return Ok((log, None));
    }
    if r.read_only {
        return Err(Error::RecoveryNeeded { path: r.dir.into(), log: r.log_path.into() });
    }
    let file_bytes = raw.len_bytes();
    let store = |page: PageId, parts: &[(usize, &[u8])]| -> Result<()> {
        for &(off, bytes) in parts {
            // A record that passed its check but names a page past the file is damage, not
            // an offset to write at.
            let at = page.0.checked_mul(page_size as u64).and_then(|p| p.checked_add(off as u64));
            match at.filter(|&at| at.saturating_add(bytes.len() as u64) <= file_bytes) {
                Some(at) => raw.write_at(bytes, at)?,
                None => {
                    return Err(Error::CorruptLog(format!(
                        "before-image of page {page}, past the data file's end"
                    )));
                }
            }
        }
        Ok(())
    };
    let undone = undo::roll_back(&mut log, page_size, store, || Ok(raw.sync()?))?;
    Ok((
        log,
        Some(RecoveryReport {
            transactions_rolled_back: 1,
            pages_restored: undone.pages,
            images_applied: undone.images,
            log_records_read: undone.records,
            log_bytes_read,
        }),
    ))
}

/// The page size of the log's before-image of page 0, if it holds one whose header carries the
/// log's UUID.
fn header_image(log: &Log) -> Result<Option<usize>> {
    for r in log.records()? {
        let r = r?;
        if r.payload.len() < undo::IMAGE_OFFSET {
            continue;
        }
        let size = u32::from_le_bytes(r.payload[8..12].try_into().expect("4 bytes"));
        let size = (size & !undo::RANGES) as usize;
        let Ok(images) = undo::decode(r.payload, size) else { continue };
        let Some(bytes) =
            images.iter().filter(|i| i.page == PageId::HEADER).find_map(|i| i.whole(size))
        else {
            continue;
        };
        let prefix = &bytes[..MIN_PAGE_SIZE.min(bytes.len())];
        if FileHeader::decode_prefix(Path::new("log image"), prefix)
            .is_ok_and(|h| h.uuid == log.uuid())
        {
            return Ok(Some(size));
        }
    }
    Ok(None)
}
