//! The undo-only write-ahead log: before-images logged before a page is overwritten in place
//! (the buffer pool's write-back hook), and the one routine that rolls them back — abort and
//! recovery alike (DESIGN.md rules 1 and 4).
//!
//! A before-image record's payload:
//!
//! ```text
//! | page id u64 | page size u32 | the page's bytes as the file held them (page size) |
//! ```

use std::collections::HashSet;
use std::sync::Arc;

use nvpage_buffer::{HookError, WriteBackHook};
use nvpage_storage::{FileLayer, PageId, RawFile};
use nvpage_wal::Log;
use parking_lot::{Mutex, RwLock};

use crate::error::{Error, Result};

const ID_LEN: usize = 8;
const SIZE_LEN: usize = 4;
/// Bytes before the page image in a before-image record.
pub const IMAGE_OFFSET: usize = ID_LEN + SIZE_LEN;

/// What the hook knows of the write transaction in progress.
#[derive(Debug)]
struct TxnUndo {
    /// Pages at or past this count were allocated by the transaction: they need no image.
    start_page_count: u64,
    /// Pages whose first before-image is already in the log.
    logged: HashSet<u64>,
}

/// The buffer pool's write-back hook: persists a page's before-image in the log before the pool
/// stores a byte of the page (rule 1).
#[derive(Debug)]
pub struct UndoHook {
    log: Arc<RwLock<Log>>,
    txn: Mutex<Option<TxnUndo>>,
}

impl UndoHook {
    pub fn new(log: Arc<RwLock<Log>>) -> Self {
        Self { log, txn: Mutex::new(None) }
    }

    /// A write transaction begins with `page_count` pages in the file.
    pub fn begin(&self, page_count: u64) {
        let mut t = self.txn.lock();
        debug_assert!(t.is_none(), "one write transaction at a time");
        *t = Some(TxnUndo { start_page_count: page_count, logged: HashSet::new() });
    }

    /// The write transaction ended (committed or rolled back).
    pub fn end(&self) {
        *self.txn.lock() = None;
    }
}

impl WriteBackHook for UndoHook {
    fn before_write_back(&self, layer: &dyn FileLayer, page: PageId) -> Result<(), HookError> {
        let mut guard = self.txn.lock();
        let Some(t) = guard.as_mut() else {
            // A dirty frame with no transaction to log to is a bug: refuse to store it.
            debug_assert!(false, "page {page} written back with no write transaction");
            return Err(hook_error(Error::InvalidOption(format!(
                "page {page} written back outside a write transaction"
            ))));
        };
        if page.0 >= t.start_page_count || t.logged.contains(&page.0) {
            return Ok(());
        }
        let file = layer.file();
        let ps = file.page_size().bytes();
        let mut record = vec![0u8; IMAGE_OFFSET + ps];
        record[..ID_LEN].copy_from_slice(&page.0.to_le_bytes());
        record[ID_LEN..IMAGE_OFFSET].copy_from_slice(&(ps as u32).to_le_bytes());
        // The bytes as the file holds them, unverified: a page being reinitialised (a free
        // extent taken again, a page past an old crash's rolled-back growth) may hold anything,
        // and undo must restore exactly that, not refuse to log it.
        file.raw().read_at(&mut record[IMAGE_OFFSET..], file.offset(page)).map_err(hook_error)?;
        self.log.read().append_record(&record).map_err(hook_error)?;
        t.logged.insert(page.0);
        Ok(())
    }
}

/// The hook's error: an engine [`Error`] boxed once, so that `From<BufferError>` can downcast it
/// back (a `Box<Error>` turned into a `HookError` by `?` would be boxed twice and lost).
fn hook_error(e: impl Into<Error>) -> HookError {
    Box::new(e.into())
}

/// A before-image decoded from a record.
pub struct Image<'a> {
    pub page: PageId,
    pub bytes: &'a [u8],
}

/// Decodes a before-image record, checking it against the file's page size.
pub fn decode(payload: &[u8], page_size: usize) -> Result<Image<'_>> {
    let bad = |why: &str| Error::CorruptLog(format!("before-image: {why}"));
    if payload.len() < IMAGE_OFFSET {
        return Err(bad("shorter than its header"));
    }
    let page = u64::from_le_bytes(payload[..ID_LEN].try_into().expect("8 bytes"));
    let size = u32::from_le_bytes(payload[ID_LEN..IMAGE_OFFSET].try_into().expect("4 bytes"));
    if size as usize != page_size || payload.len() != IMAGE_OFFSET + page_size {
        return Err(bad("page size differs from the data file's"));
    }
    Ok(Image { page: PageId(page), bytes: &payload[IMAGE_OFFSET..] })
}

/// Rolls the current generation back: every before-image, newest first, written with plain
/// `pwrite`s that append nothing to the log; then the data file is synced and the log rewound.
/// Returns the pages restored. Idempotent: a crash part-way leaves the log unchanged, and running
/// it again writes the same images.
pub fn roll_back(log: &mut Log, data: &RawFile, page_size: usize) -> Result<Vec<PageId>> {
    let mut restored = Vec::new();
    {
        let records = log.records_newest_first()?;
        for r in &records {
            let img = decode(r.payload, page_size)?;
            data.write_at(img.bytes, img.page.0 * page_size as u64)?;
            restored.push(img.page);
        }
    }
    if !restored.is_empty() {
        data.sync()?;
    }
    if log.tell() > 0 {
        log.rewind()?;
    }
    if log.is_poisoned() {
        // An append failed before it reached the log (an empty log rewinds nothing, so
        // nothing above noticed): the log takes no more before-images until it is reopened,
        // so neither does the database.
        return Err(Error::Poisoned);
    }
    Ok(restored)
}
