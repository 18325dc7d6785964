//! Slotted heap pages.
//!
//! ```text
//! 0          16     17      18          20           24         28        32
//! +----------+------+-------+-----------+------------+----------+---------+----------------+
//! | envelope | type | flags | slot count| free end   | table id | unused  | slots: (u16    |
//! | (storage)| 'H'  |       | u16       | u32        | u32      |         | offset, u16    |
//! |          |      |       |           |            |          |         | len) each      |
//! +----------+------+-------+-----------+------------+----------+---------+----------------+
//!  ... free space ... | rows, packed downward from the end of the page to `free end` |
//! ```
//!
//! A deleted slot is `(0, 0)` and is reused by the next insert into the page. Row bytes freed by
//! deletes and shrinking updates are reclaimed by compacting the page when an insert needs them.

use nvpage_storage::page::PAGE_HEADER_LEN;

use crate::error::{Error, Result};
use crate::le::{put_u16, put_u32, u16_at, u32_at};

/// The type byte of a heap page.
pub const HEAP_PAGE: u8 = b'H';

const TYPE_OFFSET: usize = PAGE_HEADER_LEN;
const FLAGS_OFFSET: usize = TYPE_OFFSET + 1;
const SLOT_COUNT_OFFSET: usize = FLAGS_OFFSET + 1;
const FREE_END_OFFSET: usize = SLOT_COUNT_OFFSET + 2;
const TABLE_ID_OFFSET: usize = FREE_END_OFFSET + 4;
/// Where the slot array starts.
pub const SLOTS_OFFSET: usize = TABLE_ID_OFFSET + 8;
const SLOT_BYTES: usize = 4;

const _: () = assert!(SLOTS_OFFSET == 32);

/// The largest row a page of `page_size` bytes holds.
pub fn max_row(page_size: usize) -> usize {
    (page_size - SLOTS_OFFSET - SLOT_BYTES).min(usize::from(u16::MAX))
}

/// Formats `page` as an empty heap page of table `table_id`.
pub fn init(page: &mut [u8], table_id: u32) {
    page[PAGE_HEADER_LEN..].fill(0);
    page[TYPE_OFFSET] = HEAP_PAGE;
    put_u16(page, SLOT_COUNT_OFFSET, 0);
    put_u32(page, FREE_END_OFFSET, page.len() as u32);
    put_u32(page, TABLE_ID_OFFSET, table_id);
}

/// A heap page checked for internal consistency, so that reading its slots never goes out of
/// bounds.
#[derive(Clone, Copy, Debug)]
pub struct HeapPage<'p> {
    bytes: &'p [u8],
    slots: usize,
    /// Bytes of live rows (the sum of the slots' lengths).
    used: usize,
}

impl<'p> HeapPage<'p> {
    /// Checks `bytes` as a heap page of table `table_id`.
    pub fn new(bytes: &'p [u8], table_id: u32, page: u64) -> Result<Self> {
        let (slots, free_end) = header(bytes, table_id, page)?;
        // One pass without branches, which the compiler vectorizes (an insert checks its page
        // first: a loop that stopped at the first bad slot was 4% of a single-row commit); the
        // slot to blame is looked for only when there is one. In i32 lanes (`slot_fits`): a
        // page holds at most 2^16 slots of at most 2^16 - 1 bytes each, whose sum fits in a
        // u32 lane.
        let (free_end32, end32) = (free_end as i32, bytes.len() as i32);
        let (mut used, mut bad) = (0u32, 0i32);
        for c in bytes[SLOTS_OFFSET..SLOTS_OFFSET + slots * SLOT_BYTES].chunks_exact(SLOT_BYTES) {
            let (off, len) = (
                i32::from(u16::from_le_bytes([c[0], c[1]])),
                i32::from(u16::from_le_bytes([c[2], c[3]])),
            );
            bad |= i32::from(!slot_fits(off, len, free_end32, end32));
            used += len as u32;
        }
        if bad != 0 {
            for (s, (off, len)) in slot_entries(bytes, slots).enumerate() {
                check_slot(bytes, page, s, off, len, free_end)?;
            }
        }
        let used = used as usize;
        check_used(bytes, page, slots, used)?;
        Ok(Self { bytes, slots, used })
    }

    /// The row in `slot`, if the slot holds one.
    pub fn get(&self, slot: usize) -> Option<&'p [u8]> {
        if slot >= self.slots {
            return None;
        }
        let (off, len) = self::slot(self.bytes, slot);
        (off != 0).then(|| &self.bytes[off..off + len])
    }

    /// The live rows and their slots, in slot order.
    pub fn rows(self) -> impl Iterator<Item = (usize, &'p [u8])> + 'p {
        (0..self.slots).filter_map(move |s| self.get(s).map(|r| (s, r)))
    }

    /// Bytes an insert could use after compaction (a new slot's 4 bytes not yet taken): as
    /// [`free_space`], from the sums the check made.
    pub fn free_space(&self) -> usize {
        self.bytes.len() - SLOTS_OFFSET - self.slots * SLOT_BYTES - self.used
    }

    /// Slots in the page's slot array, live or free.
    pub fn slot_count(&self) -> usize {
        self.slots
    }
}

/// Checks a heap page's header: its type, its table, and that the slot array fits. Returns the
/// slot count and the free end.
fn header(bytes: &[u8], table_id: u32, page: u64) -> Result<(usize, usize)> {
    let bad = |why: String| Error::CorruptPage { page, reason: why };
    if bytes[TYPE_OFFSET] != HEAP_PAGE {
        return Err(bad(format!("type byte {:#04x} is not a heap page", bytes[TYPE_OFFSET])));
    }
    let found = u32_at(bytes, TABLE_ID_OFFSET);
    if found != table_id {
        return Err(bad(format!("belongs to table {found}, not {table_id}")));
    }
    let slots = u16_at(bytes, SLOT_COUNT_OFFSET);
    let free_end = u32_at(bytes, FREE_END_OFFSET) as usize;
    let slots_end = SLOTS_OFFSET + slots * SLOT_BYTES;
    if slots_end > free_end || free_end > bytes.len() {
        return Err(bad(format!("{slots} slots and free end {free_end} do not fit the page")));
    }
    Ok((slots, free_end))
}

/// Checks slot `s`, `(off, len)`: empty, or a row inside the row area.
#[inline]
fn check_slot(
    bytes: &[u8],
    page: u64,
    s: usize,
    off: usize,
    len: usize,
    free_end: usize,
) -> Result<()> {
    // Exact in i32 (see `slot_fits`): `off` and `len` come from u16 fields, and `free_end` is
    // at most the page's length (checked by `header`).
    if !slot_fits(off as i32, len as i32, free_end as i32, bytes.len() as i32) {
        return Err(Error::CorruptPage {
            page,
            reason: format!("slot {s} points outside the row area"),
        });
    }
    Ok(())
}

/// Whether slot `(off, len)` is empty or a row inside the row area (`free_end..page_len`),
/// computed without branches, in i32: every value is below 2^17 (a page is at most 64 KiB),
/// so the sums and signed compares are exact, and signed compares are what SSE2 vectorizes.
#[inline(always)]
fn slot_fits(off: i32, len: i32, free_end: i32, page_len: i32) -> bool {
    let empty = off == 0;
    (empty & (len == 0)) | (!empty & (off >= free_end) & (off + len <= page_len))
}

/// Checks that `used` bytes of rows fit the row area: rows that overlap would make the free
/// space negative (and compaction overrun).
fn check_used(bytes: &[u8], page: u64, slots: usize, used: usize) -> Result<()> {
    if used > bytes.len() - SLOTS_OFFSET - slots * SLOT_BYTES {
        return Err(Error::CorruptPage {
            page,
            reason: format!("{used} bytes of rows do not fit the row area"),
        });
    }
    Ok(())
}

/// The row in `slot` of `bytes` (page `page`, a heap page of table `table_id`) as its offset and
/// length, if the slot holds one: the header and that slot are checked, which is all a reader of
/// one row needs (an edit checks the whole page first, with [`HeapPage::new`]).
pub fn row_at(
    bytes: &[u8],
    table_id: u32,
    page: u64,
    slot: usize,
) -> Result<Option<(usize, usize)>> {
    let (slots, free_end) = header(bytes, table_id, page)?;
    if slot >= slots {
        return Ok(None);
    }
    let (off, len) = self::slot(bytes, slot);
    check_slot(bytes, page, slot, off, len, free_end)?;
    Ok((off != 0).then_some((off, len)))
}

/// How far ahead of the row it is folding [`fold_rows_rev`] asks for the page's bytes: every
/// cache line up to this many bytes past the row's end is on its way (about 15 rows of
/// lineitem, more than a memory latency's worth of folding).
pub(crate) const PREFETCH_BYTES: usize = 2048;

/// The cache lines at the start of a heap page that a scan reads first: its header, its slot
/// array and (for a page filled by inserts) its lowest rows, which [`fold_rows_rev`] folds
/// first. A scan asks for them one page ahead ([`nvpage_buffer::BufferPool::prefetch`]), since
/// a page's first rows are too close to its start for the fold's own prefetch.
pub(crate) const LEADING_LINES: [usize; 16] = {
    let mut a = [0; 16];
    let mut i = 0;
    while i < a.len() {
        a[i] = i * 64;
        i += 1;
    }
    a
};

/// Folds the live rows of `bytes` (page `page`, a heap page of table `table_id`) with `f`, last
/// slot first (rows are stored from the page's end down, so this walks memory upwards and the
/// hardware prefetcher streams the page), checking the page as it goes: the header before any
/// row, each slot before its row is read, the rows' total size after the last — every check of
/// [`HeapPage::new`], in the fold's one pass over the slots instead of a pass of its own. A
/// damaged page is [`Error::CorruptPage`], and the fold's value so far goes with it.
#[inline]
pub fn fold_rows_rev<'p, A>(
    bytes: &'p [u8],
    table_id: u32,
    page: u64,
    init: A,
    mut f: impl FnMut(A, usize, &'p [u8]) -> Result<A>,
) -> Result<A> {
    let (slots, free_end) = header(bytes, table_id, page)?;
    let array = &bytes[SLOTS_OFFSET..SLOTS_OFFSET + slots * SLOT_BYTES];
    let (mut acc, mut used, mut ahead) = (init, 0, 0);
    for (s, e) in array.chunks_exact(SLOT_BYTES).enumerate().rev() {
        let off = usize::from(u16::from_le_bytes([e[0], e[1]]));
        let len = usize::from(u16::from_le_bytes([e[2], e[3]]));
        check_slot(bytes, page, s, off, len, free_end)?;
        if off != 0 {
            // Every cache line up to PREFETCH_BYTES past this row is on its way while it is
            // folded (a hardware prefetcher restarts at every 4 KiB and ramps up slowly);
            // `ahead` is the first line not yet asked for.
            let to = (off + len + PREFETCH_BYTES).min(bytes.len());
            ahead = ahead.max(off & !63);
            while ahead < to {
                nvpage_storage::prefetch::prefetch(&bytes[ahead..]);
                ahead += 64;
            }
            used += len;
            acc = f(acc, s, &bytes[off..off + len])?;
        }
    }
    check_used(bytes, page, slots, used)?;
    Ok(acc)
}

/// Where slot `s` lies in a heap page (for a prefetch of a row's slot before its page is read).
pub(crate) fn slot_offset(s: usize) -> usize {
    SLOTS_OFFSET + s * SLOT_BYTES
}

#[inline]
fn slot(p: &[u8], s: usize) -> (usize, usize) {
    let at = SLOTS_OFFSET + s * SLOT_BYTES;
    (u16_at(p, at), u16_at(p, at + 2))
}

/// The first `slots` entries of the slot array, `(offset, length)` each, read from one slice
/// (one bounds check for the array, not two per field: a page check walks every slot, and did
/// so through a call per slot).
fn slot_entries(p: &[u8], slots: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    p[SLOTS_OFFSET..SLOTS_OFFSET + slots * SLOT_BYTES].chunks_exact(SLOT_BYTES).map(|c| {
        (
            usize::from(u16::from_le_bytes([c[0], c[1]])),
            usize::from(u16::from_le_bytes([c[2], c[3]])),
        )
    })
}

fn set_slot(p: &mut [u8], s: usize, off: usize, len: usize) {
    let at = SLOTS_OFFSET + s * SLOT_BYTES;
    put_u16(p, at, off);
    put_u16(p, at + 2, len);
}

/// Bytes reclaimable for rows (after compaction) in a page already checked by [`HeapPage::new`].
pub fn free_space(p: &[u8]) -> usize {
    let slots = u16_at(p, SLOT_COUNT_OFFSET);
    let used: usize = slot_entries(p, slots).map(|(_, len)| len).sum();
    // Saturating, as `insert_counted`: slots sharing bytes may sum past the row area.
    p.len().saturating_sub(SLOTS_OFFSET + slots * SLOT_BYTES + used)
}

/// [`insert`] into a page whose check ([`HeapPage::new`]) found `slots` slots and `free` bytes
/// free: the slot (or `None`), and the page's free space after, without a pass over the slots.
pub fn insert_counted(
    p: &mut [u8],
    row: &[u8],
    slots: usize,
    free: usize,
) -> (Option<usize>, usize) {
    let slot = insert(p, row);
    // Saturating: a damaged page whose slots share bytes passes the check with less free
    // space than its gap shows; the free-space map then reads it as full, never a panic.
    let after = match slot {
        // A new slot takes its 4 bytes too; compaction moves rows but frees nothing.
        Some(s) if s == slots => free.saturating_sub(row.len() + SLOT_BYTES),
        Some(_) => free.saturating_sub(row.len()),
        None => free,
    };
    debug_assert_eq!(after, free_space(p), "free space counted after an insert");
    (slot, after)
}

/// Inserts `row` into a checked page; the slot, or `None` if the page has no room.
pub fn insert(p: &mut [u8], row: &[u8]) -> Option<usize> {
    let slots = u16_at(p, SLOT_COUNT_OFFSET);
    // A free slot reads (0, 0): four zero bytes, found a slot array's worth at a time.
    let reuse = p
        .get(SLOTS_OFFSET..SLOTS_OFFSET + slots * SLOT_BYTES)
        .and_then(|a| a.chunks_exact(SLOT_BYTES).position(|c| c == [0u8; SLOT_BYTES]));
    let slot_cost = if reuse.is_some() { 0 } else { SLOT_BYTES };
    if slots >= usize::from(u16::MAX) && reuse.is_none() {
        return None;
    }
    let free_end = u32_at(p, FREE_END_OFFSET) as usize;
    let slots_end = SLOTS_OFFSET + slots * SLOT_BYTES;
    if free_end - slots_end < row.len() + slot_cost {
        if free_space(p) < row.len() + slot_cost {
            return None;
        }
        compact(p);
        return insert(p, row);
    }
    let off = free_end - row.len();
    // A zero-length row still needs a nonzero offset to read as live.
    p[off..free_end].copy_from_slice(row);
    put_u32(p, FREE_END_OFFSET, off as u32);
    let s = reuse.unwrap_or(slots);
    if reuse.is_none() {
        put_u16(p, SLOT_COUNT_OFFSET, slots + 1);
    }
    set_slot(p, s, off, row.len());
    Some(s)
}

/// Deletes the row in `slot`; `false` if there is none.
pub fn delete(p: &mut [u8], s: usize) -> bool {
    if s >= u16_at(p, SLOT_COUNT_OFFSET) || slot(p, s).0 == 0 {
        return false;
    }
    set_slot(p, s, 0, 0);
    true
}

/// Replaces the row in `slot`, keeping the slot, if the page has room; `false` otherwise (the old
/// row is then untouched).
pub fn update(p: &mut [u8], s: usize, row: &[u8]) -> bool {
    let (off, len) = slot(p, s);
    if row.len() <= len {
        p[off..off + row.len()].copy_from_slice(row);
        set_slot(p, s, off, row.len());
        return true;
    }
    if free_space(p) + len < row.len() {
        return false;
    }
    set_slot(p, s, 0, 0);
    compact(p);
    let free_end = u32_at(p, FREE_END_OFFSET) as usize;
    let new_off = free_end - row.len();
    p[new_off..free_end].copy_from_slice(row);
    put_u32(p, FREE_END_OFFSET, new_off as u32);
    set_slot(p, s, new_off, row.len());
    true
}

/// Packs the live rows against the end of the page, keeping their slots.
fn compact(p: &mut [u8]) {
    let slots = u16_at(p, SLOT_COUNT_OFFSET);
    let mut live: Vec<(usize, Vec<u8>)> = (0..slots)
        .filter_map(|s| {
            let (off, len) = slot(p, s);
            (off != 0).then(|| (s, p[off..off + len].to_vec()))
        })
        .collect();
    live.sort_by_key(|(s, _)| *s);
    let mut end = p.len();
    for (s, row) in live {
        let off = end - row.len();
        p[off..end].copy_from_slice(&row);
        set_slot(p, s, off, row.len());
        end = off;
    }
    put_u32(p, FREE_END_OFFSET, end as u32);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> Vec<u8> {
        let mut p = vec![0u8; 4096];
        init(&mut p, 7);
        p
    }

    #[test]
    fn insert_get_delete_reuse() {
        let mut p = page();
        let a = insert(&mut p, b"alpha").unwrap();
        let b = insert(&mut p, b"beta").unwrap();
        let h = HeapPage::new(&p, 7, 1).unwrap();
        assert_eq!(h.get(a), Some(&b"alpha"[..]));
        assert_eq!(h.get(b), Some(&b"beta"[..]));
        assert!(delete(&mut p, a));
        assert!(!delete(&mut p, a));
        let c = insert(&mut p, b"gamma").unwrap();
        assert_eq!(c, a, "a deleted slot is reused");
        assert_eq!(HeapPage::new(&p, 7, 1).unwrap().rows().count(), 2);
        // The reverse walk gives the same live rows, last slot first; deleted slots are skipped.
        let d = insert(&mut p, b"delta").unwrap();
        assert!(delete(&mut p, b));
        let h = HeapPage::new(&p, 7, 1).unwrap();
        let mut fwd: Vec<_> = h.rows().collect();
        fwd.reverse();
        let rev = fold_rows_rev(&p, 7, 1, Vec::new(), |mut v, s, r| {
            v.push((s, r));
            Ok(v)
        });
        assert_eq!(rev.unwrap(), fwd);
        assert_eq!(fwd, [(d, &b"delta"[..]), (c, &b"gamma"[..])]);
        // The fold checks what HeapPage::new checks: a slot pointing past the page, rows that
        // overlap, another table's page.
        let mut bad = p.clone();
        set_slot(&mut bad, d, p.len() - 2, 5);
        assert!(HeapPage::new(&bad, 7, 1).is_err());
        assert!(fold_rows_rev(&bad, 7, 1, 0, |n, _, _| Ok(n + 1)).is_err());
        let mut bad = p.clone();
        // Both rows cover the whole row area.
        let off = SLOTS_OFFSET + u16_at(&p, SLOT_COUNT_OFFSET) * SLOT_BYTES;
        put_u32(&mut bad, FREE_END_OFFSET, off as u32);
        set_slot(&mut bad, d, off, p.len() - off);
        set_slot(&mut bad, c, off, p.len() - off);
        assert!(HeapPage::new(&bad, 7, 1).is_err());
        assert!(fold_rows_rev(&bad, 7, 1, 0, |n, _, _| Ok(n + 1)).is_err());
        assert!(fold_rows_rev(&p, 8, 1, 0, |n, _, _| Ok(n + 1)).is_err());
    }

    #[test]
    fn fills_then_compacts_freed_space() {
        let mut p = page();
        let row = [9u8; 100];
        let mut slots = vec![];
        while let Some(s) = insert(&mut p, &row) {
            slots.push(s);
        }
        assert!(slots.len() >= 38);
        for s in slots.iter().step_by(2) {
            delete(&mut p, *s);
        }
        // Freed space is scattered; inserts compact the page to reach it.
        let mut again = 0;
        while insert(&mut p, &[1u8; 100]).is_some() {
            again += 1;
        }
        assert_eq!(again, slots.len().div_ceil(2));
        let h = HeapPage::new(&p, 7, 1).unwrap();
        assert!(h.rows().all(|(_, r)| r == [9u8; 100] || r == [1u8; 100]));
    }

    #[test]
    fn update_grows_in_place_or_refuses() {
        let mut p = page();
        let s = insert(&mut p, b"short").unwrap();
        assert!(update(&mut p, s, b"a much longer row than before"));
        assert_eq!(
            HeapPage::new(&p, 7, 1).unwrap().get(s),
            Some(&b"a much longer row than before"[..])
        );
        assert!(!update(&mut p, s, &[0u8; 5000]));
        assert_eq!(
            HeapPage::new(&p, 7, 1).unwrap().get(s),
            Some(&b"a much longer row than before"[..])
        );
    }

    #[test]
    fn damaged_pages_are_errors() {
        let mut p = page();
        insert(&mut p, b"x").unwrap();
        let mut q = p.clone();
        q[TYPE_OFFSET] = 0;
        assert!(HeapPage::new(&q, 7, 1).is_err());
        assert!(HeapPage::new(&p, 8, 1).is_err());
        let mut q = p.clone();
        put_u16(&mut q, SLOT_COUNT_OFFSET, 2000);
        assert!(HeapPage::new(&q, 7, 1).is_err());
        let mut q = p.clone();
        set_slot(&mut q, 0, 4090, 100);
        assert!(HeapPage::new(&q, 7, 1).is_err());
        // A deleted slot with a length, and two slots over the same bytes past the page's room.
        let mut q = p.clone();
        set_slot(&mut q, 0, 0, 5);
        assert!(HeapPage::new(&q, 7, 1).is_err());
        let mut q = page();
        put_u16(&mut q, SLOT_COUNT_OFFSET, 1000);
        put_u32(&mut q, FREE_END_OFFSET, 4032);
        for s in 0..1000 {
            set_slot(&mut q, s, 4090, 6);
        }
        assert!(HeapPage::new(&q, 7, 1).is_err());
    }
}
