//! The undo-only write-ahead log: before-images logged before a page is overwritten in place
//! (the buffer pool's write-back hook: a commit's images are appended, then persisted together
//! with one flush before the first of their pages is stored), and the one routine that rolls
//! them back — abort and recovery alike (DESIGN.md rules 1 and 4).
//!
//! A before-image names the lines of one page that a write-back changes, as the file held them
//! (a single-row commit logs a few hundred bytes, not whole pages):
//!
//! ```text
//! | page id u64 | page size u32, bit 31 (RANGES) set | count u32 | (offset u32, len u32) x count |
//! | the ranges' old bytes, one after another |
//! ```
//!
//! A record's payload is one or more images, one after another: the images of a commit's pages
//! are gathered and appended as one record when the pool asks for them to be persisted (one
//! append and one fence, however many pages), or earlier, unsynced, in chunks of
//! [`PENDING_MAX`]. A page is logged at each write-back in a transaction (evicted, changed again,
//! written back again: the lines that changed since), and rolled back newest first, so every byte
//! ends with the value it had when the transaction began. The header page's first image is whole
//! (a header torn by a crash is recognised by it at open). Logs of older builds hold one whole
//! page per record, read as one range covering the page:
//!
//! ```text
//! | page id u64 | page size u32 | the page's bytes as the file held them (page size) |
//! ```

use std::ops::Range;
use std::sync::Arc;

use nvpage_buffer::idhash::IdSet;
use nvpage_buffer::{HookError, LinesImage, Version, WriteBack, WriteBackHook, WriteBackPage};
use nvpage_storage::PageId;
use nvpage_wal::Log;
use parking_lot::{Mutex, RwLock};

use crate::error::{Error, Result};

const ID_LEN: usize = 8;
const SIZE_LEN: usize = 4;
/// Bytes before the page image in an older build's whole-page record.
pub const IMAGE_OFFSET: usize = ID_LEN + SIZE_LEN;
/// The bit of the page-size field that marks a record of ranges.
pub const RANGES: u32 = 1 << 31;
/// Bytes of one range in a record's table.
const RANGE_LEN: usize = 8;
/// Images gathered past this many bytes are appended (unsynced) before the pool asks for them
/// to be persisted: what a large transaction holds in memory stays bounded.
pub const PENDING_MAX: usize = 1 << 20;

/// What the hook knows of the write transaction in progress.
#[derive(Debug)]
struct TxnUndo {
    /// Pages at or past this count were allocated by the transaction: they need no image.
    start_page_count: u64,
    /// Pages whose first before-image is already in the log.
    logged: IdSet<u64>,
    /// Pages readers never read through the pool (the header, the catalog chain as the
    /// transaction began): their images are logged for undo but kept as no version.
    unversioned: IdSet<u64>,
    /// Images gathered since the last append, not yet in the log.
    pending: Vec<u8>,
    /// Whether images were appended since the last persist.
    unpersisted: bool,
    /// A page's old bytes where they lie nowhere in memory (pread, no shared frame).
    scratch: Vec<u8>,
}

/// The buffer pool's write-back hook: persists a page's before-image in the log before the pool
/// stores a byte of the page (rule 1).
#[derive(Debug)]
pub struct UndoHook {
    log: Arc<RwLock<Log>>,
    txn: Mutex<Option<TxnUndo>>,
    /// The last transaction's sets and buffer, emptied, for the next one to reuse: a single-row
    /// commit allocated them anew each time (and grew the buffer), a few percent of its time.
    spare: Mutex<Option<TxnUndo>>,
}

impl UndoHook {
    pub fn new(log: Arc<RwLock<Log>>) -> Self {
        Self { log, txn: Mutex::new(None), spare: Mutex::new(None) }
    }

    /// A write transaction begins with `page_count` pages in the file and the catalog in the
    /// pages of `catalog_chain`.
    pub fn begin(&self, page_count: u64, catalog_chain: &[u64]) {
        let mut t = self.txn.lock();
        debug_assert!(t.is_none(), "one write transaction at a time");
        let mut next = self.spare.lock().take().unwrap_or_else(|| TxnUndo {
            start_page_count: 0,
            logged: IdSet::default(),
            unversioned: IdSet::default(),
            pending: Vec::new(),
            unpersisted: false,
            scratch: Vec::new(),
        });
        debug_assert!(next.logged.is_empty() && next.unversioned.is_empty());
        debug_assert!(next.pending.is_empty() && !next.unpersisted);
        next.start_page_count = page_count;
        next.unversioned.insert(PageId::HEADER.0);
        next.unversioned.extend(catalog_chain.iter().copied());
        *t = Some(next);
    }

    /// The write transaction ended (committed or rolled back).
    pub fn end(&self) {
        let Some(mut t) = self.txn.lock().take() else { return };
        // Kept unless a large transaction grew them: what stays allocated stays small.
        if t.pending.capacity() <= SPARE_MAX && t.logged.capacity() <= SPARE_MAX / 8 {
            t.logged.clear();
            t.unversioned.clear();
            t.pending.clear();
            t.unpersisted = false;
            *self.spare.lock() = Some(t);
        }
    }
}

/// The largest buffer of images (bytes) kept from one transaction for the next.
const SPARE_MAX: usize = 64 << 10;

impl WriteBackHook for UndoHook {
    fn before_write_back(&self, wb_page: &mut WriteBackPage<'_>) -> Result<WriteBack, HookError> {
        let page = wb_page.id();
        let mut guard = self.txn.lock();
        let Some(t) = guard.as_mut() else {
            // A dirty frame with no transaction to log to is a bug: refuse to store it.
            debug_assert!(false, "page {page} written back with no write transaction");
            return Err(hook_error(Error::InvalidOption(format!(
                "page {page} written back outside a write transaction"
            ))));
        };
        if page.0 >= t.start_page_count {
            // Allocated by this transaction: undo shrinks the file back, no image needed.
            return Ok(WriteBack::default());
        }
        let first = !t.logged.contains(&page.0);
        let (changed, lines) = if first && page == PageId::HEADER {
            // The header's first image is whole (a header torn by a crash is recognised by it
            // at open); the header keeps no version.
            let mut old = wb_page.image_buffer();
            let buf = old.page_mut();
            let changed = wb_page.read_old_and_seal(buf).map_err(hook_error)?;
            let whole = 0..buf.len();
            push_image(&mut t.pending, page, buf, std::slice::from_ref(&whole));
            (changed, None)
        } else {
            // The bytes as the file holds them, unverified: a page being reinitialised (a free
            // extent taken again, a page past an old crash's rolled-back growth) may hold
            // anything, and undo must restore exactly that, not refuse to log it. The new page
            // is sealed from them, and the lines that change (its checksum's among them), with
            // their old bytes, are what is logged and what readers of older snapshots read.
            let (changed, lines) =
                wb_page.seal_from_old_lines(&mut t.scratch).map_err(hook_error)?;
            if !changed.is_empty() {
                push_lines(&mut t.pending, page, &lines);
            }
            (changed, Some(lines))
        };
        if t.pending.len() >= PENDING_MAX {
            // Unsynced: `persist` makes them durable with the rest, before the pool stores the
            // first of their pages (rule 1).
            self.log.read().append_buffered(&t.pending).map_err(hook_error)?;
            t.pending.clear();
            t.unpersisted = true;
        }
        t.logged.insert(page.0);
        // The old lines go with every write-back of a versioned page, not only the first: the
        // pool keeps the first store's in this transaction and adds a later one's lines it
        // lacks (the bytes the transaction began with), so a write-back whose persist failed
        // after this call (the images dropped, nothing stored) does not leave the page's later
        // store without them.
        let version = lines.filter(|_| !t.unversioned.contains(&page.0)).map(Version::Lines);
        Ok(WriteBack { version, changed: Some(changed) })
    }

    fn persist(&self) -> Result<(), HookError> {
        let mut guard = self.txn.lock();
        let Some(t) = guard.as_mut() else { return Ok(()) };
        let log = self.log.read();
        if !t.pending.is_empty() {
            // The gathered images as one durable record: one fence in the cache-line modes, one
            // sync in `msync` mode, covering the unsynced chunks before it too.
            let r = log.append(&t.pending);
            t.pending.clear();
            r.map_err(hook_error)?;
        } else if t.unpersisted {
            // One device flush for every chunk appended since the last (the log's watermark is
            // stored only when due).
            log.persist_appends().map_err(hook_error)?;
        }
        t.unpersisted = false;
        Ok(())
    }
}

/// Appends to `out` the image of `page` whose old bytes, in the lines that change, are `lines`.
fn push_lines(out: &mut Vec<u8>, page: PageId, lines: &LinesImage) {
    push_header(out, page, lines.page_len(), lines.ranges());
    out.extend_from_slice(lines.bytes());
}

/// Appends to `out` an image's page id, page size and table of `ranges`.
fn push_header(out: &mut Vec<u8>, page: PageId, page_len: usize, ranges: &[Range<usize>]) {
    out.extend_from_slice(&page.0.to_le_bytes());
    out.extend_from_slice(&(page_len as u32 | RANGES).to_le_bytes());
    out.extend_from_slice(&(ranges.len() as u32).to_le_bytes());
    for r in ranges {
        out.extend_from_slice(&(r.start as u32).to_le_bytes());
        out.extend_from_slice(&(r.len() as u32).to_le_bytes());
    }
}

/// Appends to `out` the image of `page` whose old bytes are `old`: the lines `ranges`.
fn push_image(out: &mut Vec<u8>, page: PageId, old: &[u8], ranges: &[Range<usize>]) {
    push_header(out, page, old.len(), ranges);
    for r in ranges {
        out.extend_from_slice(&old[r.clone()]);
    }
}

/// The hook's error: an engine [`Error`] boxed once, so that `From<BufferError>` can downcast it
/// back (a `Box<Error>` turned into a `HookError` by `?` would be boxed twice and lost).
fn hook_error(e: impl Into<Error>) -> HookError {
    Box::new(e.into())
}

/// A before-image decoded from a record: parts of one page, offsets into it and their bytes.
pub struct Image<'a> {
    pub page: PageId,
    pub parts: Vec<(usize, &'a [u8])>,
}

impl Image<'_> {
    /// The whole page, if the image holds all of it.
    pub fn whole(&self, page_size: usize) -> Option<&[u8]> {
        match self.parts.as_slice() {
            [(0, bytes)] if bytes.len() == page_size => Some(bytes),
            _ => None,
        }
    }
}

/// Decodes a before-image record — its images, in the order they were logged — checking each
/// against the file's page size: every range inside the page, in ascending order without
/// overlap, and the record's bytes exactly its images.
pub fn decode(payload: &[u8], page_size: usize) -> Result<Vec<Image<'_>>> {
    let mut images = Vec::new();
    let mut rest = payload;
    while !rest.is_empty() {
        let (img, len) = decode_one(rest, page_size)?;
        images.push(img);
        rest = &rest[len..];
    }
    if images.is_empty() {
        return Err(Error::CorruptLog("before-image: an empty record".into()));
    }
    Ok(images)
}

/// Decodes the image at the start of `bytes`; returns it and its length.
fn decode_one(bytes: &[u8], page_size: usize) -> Result<(Image<'_>, usize)> {
    let bad = |why: &str| Error::CorruptLog(format!("before-image: {why}"));
    let u32_at = |at: usize| {
        bytes.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
    };
    if bytes.len() < IMAGE_OFFSET {
        return Err(bad("shorter than its header"));
    }
    let page = PageId(u64::from_le_bytes(bytes[..ID_LEN].try_into().expect("8 bytes")));
    let size = u32_at(ID_LEN).expect("checked above");
    if size & !RANGES != page_size as u32 {
        return Err(bad("page size differs from the data file's"));
    }
    if size & RANGES == 0 {
        // An older build's whole page, alone in its record.
        let page_bytes = &bytes[IMAGE_OFFSET..];
        if page_bytes.len() != page_size {
            return Err(bad("a whole-page image of the wrong length"));
        }
        return Ok((Image { page, parts: vec![(0, page_bytes)] }, bytes.len()));
    }
    let count = u32_at(IMAGE_OFFSET).ok_or_else(|| bad("shorter than its header"))? as usize;
    let table = IMAGE_OFFSET + SIZE_LEN;
    let data = count
        .checked_mul(RANGE_LEN)
        .and_then(|n| n.checked_add(table))
        .filter(|&end| end <= bytes.len())
        .ok_or_else(|| bad("its table of ranges passes the record's end"))?;
    let (mut parts, mut at, mut floor) = (Vec::with_capacity(count), data, 0usize);
    for i in 0..count {
        let off = u32_at(table + i * RANGE_LEN).expect("inside the table") as usize;
        let len = u32_at(table + i * RANGE_LEN + 4).expect("inside the table") as usize;
        if off < floor || off.checked_add(len).is_none_or(|end| end > page_size) {
            return Err(bad("a range outside the page or out of order"));
        }
        let range_bytes = bytes
            .get(at..at + len)
            .ok_or_else(|| bad("its ranges' bytes pass the record's end"))?;
        parts.push((off, range_bytes));
        (at, floor) = (at + len, off + len);
    }
    Ok((Image { page, parts }, at))
}

/// What [`roll_back`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Undone {
    /// Log records read.
    pub records: u64,
    /// Before-images applied.
    pub images: u64,
    /// Distinct pages restored.
    pub pages: u64,
}

/// Rolls the current generation back: every before-image, newest first, handed to `store` as
/// its page and parts (plain writes that append nothing to the log: `pwrite` at recovery, the
/// pool's store in place under the page latch at abort); then `sync` makes them durable and the
/// log is rewound. Returns how many records, images and pages it went through. Idempotent: a
/// crash part-way leaves the log unchanged, and running it again writes the same images.
pub fn roll_back(
    log: &mut Log,
    page_size: usize,
    mut store: impl FnMut(PageId, &[(usize, &[u8])]) -> Result<()>,
    sync: impl FnOnce() -> Result<()>,
) -> Result<Undone> {
    let mut restored = Vec::new();
    let mut undone = Undone::default();
    {
        let records = log.records_newest_first()?;
        for r in &records {
            undone.records += 1;
            for img in decode(r.payload, page_size)?.iter().rev() {
                store(img.page, &img.parts)?;
                restored.push(img.page);
            }
        }
    }
    undone.images = restored.len() as u64;
    restored.sort_unstable();
    restored.dedup();
    undone.pages = restored.len() as u64;
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
    Ok(undone)
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // one range of a page, not a Vec of its indices
mod tests {
    use super::{Error, PageId, RANGES, decode, push_image};

    const PS: usize = 256;

    fn old() -> Vec<u8> {
        (0..PS).map(|i| (i * 7) as u8).collect()
    }

    #[test]
    fn a_record_of_images_decodes_to_its_ranges() {
        let old = old();
        let mut rec = Vec::new();
        push_image(&mut rec, PageId(3), &old, &[0..64, 128..192]);
        push_image(&mut rec, PageId(5), &old, &[192..256]);
        let images = decode(&rec, PS).unwrap();
        assert_eq!(images.len(), 2);
        assert_eq!(images[0].page, PageId(3));
        assert_eq!(images[0].parts, vec![(0, &old[0..64]), (128, &old[128..192])]);
        assert_eq!(images[1].page, PageId(5));
        assert_eq!(images[1].parts, vec![(192, &old[192..256])]);
        assert_eq!(images[0].whole(PS), None);
        let mut whole = Vec::new();
        push_image(&mut whole, PageId(0), &old, &[0..PS]);
        assert_eq!(decode(&whole, PS).unwrap()[0].whole(PS), Some(old.as_slice()));
    }

    #[test]
    fn an_older_builds_whole_page_record_decodes() {
        let old = old();
        let mut rec = 9u64.to_le_bytes().to_vec();
        rec.extend_from_slice(&(PS as u32).to_le_bytes());
        rec.extend_from_slice(&old);
        let images = decode(&rec, PS).unwrap();
        assert_eq!(images.len(), 1);
        assert_eq!(images[0].page, PageId(9));
        assert_eq!(images[0].whole(PS), Some(old.as_slice()));
        // One byte short, or one too many: the wrong length.
        assert!(matches!(decode(&rec[..rec.len() - 1], PS), Err(Error::CorruptLog(_))));
        rec.push(0);
        assert!(matches!(decode(&rec, PS), Err(Error::CorruptLog(_))));
    }

    #[test]
    fn damaged_records_are_corrupt_log_errors() {
        let old = old();
        let mut rec = Vec::new();
        push_image(&mut rec, PageId(3), &old, &[0..64, 128..192]);
        let first = rec.len();
        push_image(&mut rec, PageId(5), &old, &[192..256]);
        // Cut anywhere but between the two images: never a panic, always a typed error.
        for cut in (0..rec.len()).filter(|&c| c != first) {
            assert!(matches!(decode(&rec[..cut], PS), Err(Error::CorruptLog(_))), "cut at {cut}");
        }
        let field = |rec: &mut Vec<u8>, at: usize, v: u32| {
            rec[at..at + 4].copy_from_slice(&v.to_le_bytes());
        };
        // The table starts at byte 16: (offset, len) pairs.
        let mut bad = rec.clone();
        field(&mut bad, 16, 200); // first range now 200..264: past the page
        assert!(matches!(decode(&bad, PS), Err(Error::CorruptLog(_))));
        let mut bad = rec.clone();
        field(&mut bad, 24, 32); // second range starts inside the first
        assert!(matches!(decode(&bad, PS), Err(Error::CorruptLog(_))));
        let mut bad = rec.clone();
        field(&mut bad, 12, u32::MAX); // a count whose table cannot fit
        assert!(matches!(decode(&bad, PS), Err(Error::CorruptLog(_))));
        let mut bad = rec.clone();
        field(&mut bad, 8, 512 | RANGES); // another page size
        assert!(matches!(decode(&bad, PS), Err(Error::CorruptLog(_))));
    }
}
