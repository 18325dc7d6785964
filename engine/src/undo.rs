//! The undo-only write-ahead log: before-images logged before a page is overwritten in place
//! (the buffer pool's write-back hook: a commit's images are appended, then persisted together
//! with one flush before the first of their pages is stored), and the one routine that rolls
//! them back — abort and recovery alike (DESIGN.md rules 1 and 4).
//!
//! A before-image record's payload:
//!
//! ```text
//! | page id u64 | page size u32 | the page's bytes as the file held them (page size) |
//! ```

use std::collections::HashSet;
use std::sync::Arc;

use nvpage_buffer::{HookError, PageImage, WriteBackHook};
use nvpage_storage::{PageFile, PageId};
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
    /// Pages readers never read through the pool (the header, the catalog chain as the
    /// transaction began): their images are logged for undo but kept as no version.
    unversioned: HashSet<u64>,
    /// Whether images were appended since the last persist.
    unpersisted: bool,
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

    /// A write transaction begins with `page_count` pages in the file and the catalog in the
    /// pages of `catalog_chain`.
    pub fn begin(&self, page_count: u64, catalog_chain: &[u64]) {
        let mut t = self.txn.lock();
        debug_assert!(t.is_none(), "one write transaction at a time");
        let unversioned = std::iter::once(PageId::HEADER.0).chain(catalog_chain.iter().copied());
        *t = Some(TxnUndo {
            start_page_count: page_count,
            logged: HashSet::new(),
            unversioned: unversioned.collect(),
            unpersisted: false,
        });
    }

    /// The write transaction ended (committed or rolled back).
    pub fn end(&self) {
        *self.txn.lock() = None;
    }
}

impl WriteBackHook for UndoHook {
    fn before_write_back(
        &self,
        file: &PageFile,
        page: PageId,
    ) -> Result<Option<PageImage>, HookError> {
        let mut guard = self.txn.lock();
        let Some(t) = guard.as_mut() else {
            // A dirty frame with no transaction to log to is a bug: refuse to store it.
            debug_assert!(false, "page {page} written back with no write transaction");
            return Err(hook_error(Error::InvalidOption(format!(
                "page {page} written back outside a write transaction"
            ))));
        };
        if page.0 >= t.start_page_count || t.logged.contains(&page.0) {
            return Ok(None);
        }
        let ps = file.page_size().bytes();
        // One buffer for the record and, shared, for the version readers may need: no copy.
        let mut record: Arc<[u8]> = std::iter::repeat_n(0u8, IMAGE_OFFSET + ps).collect();
        let buf = Arc::get_mut(&mut record).expect("a fresh Arc has one owner");
        buf[..ID_LEN].copy_from_slice(&page.0.to_le_bytes());
        buf[ID_LEN..IMAGE_OFFSET].copy_from_slice(&(ps as u32).to_le_bytes());
        // The bytes as the file holds them, unverified: a page being reinitialised (a free
        // extent taken again, a page past an old crash's rolled-back growth) may hold anything,
        // and undo must restore exactly that, not refuse to log it.
        file.raw().read_at(&mut buf[IMAGE_OFFSET..], file.offset(page)).map_err(hook_error)?;
        // Buffered: `persist` makes a commit's images durable together, before the pool stores
        // the first of their pages (rule 1).
        self.log.read().append_buffered(&record).map_err(hook_error)?;
        t.logged.insert(page.0);
        t.unpersisted = true;
        Ok((!t.unversioned.contains(&page.0)).then(|| PageImage::new(record, IMAGE_OFFSET)))
    }

    fn persist(&self) -> Result<(), HookError> {
        let mut guard = self.txn.lock();
        match guard.as_mut() {
            Some(t) if t.unpersisted => {
                // One device flush for every image appended since the last (the log's
                // watermark is stored only when due): a commit's k images cost one, not k.
                self.log.read().persist_appends().map_err(hook_error)?;
                t.unpersisted = false;
                Ok(())
            }
            _ => Ok(()),
        }
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

/// Rolls the current generation back: every before-image, newest first, handed to `store`
/// (plain writes that append nothing to the log: `pwrite` at recovery, the pool's store in place
/// under the page latch at abort); then `sync` makes them durable and the log is rewound.
/// Returns the pages restored. Idempotent: a crash part-way leaves the log unchanged, and running
/// it again writes the same images.
pub fn roll_back(
    log: &mut Log,
    page_size: usize,
    mut store: impl FnMut(PageId, &[u8]) -> Result<()>,
    sync: impl FnOnce() -> Result<()>,
) -> Result<Vec<PageId>> {
    let mut restored = Vec::new();
    {
        let records = log.records_newest_first()?;
        for r in &records {
            let img = decode(r.payload, page_size)?;
            store(img.page, img.bytes)?;
            restored.push(img.page);
        }
    }
    if !restored.is_empty() {
        sync()?;
    }
    crate::failpoint::hit("abort::after_restore");
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
