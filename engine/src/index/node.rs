//! Index pages: the nodes of a B+tree, slotted like heap pages.
//!
//! ```text
//! 0          16     17      18      20         24         28        29      30      31   32      40      48         64
//! +----------+------+-------+-------+----------+----------+---------+-------+-------+----+-------+-------+----------+---------+
//! | envelope | type | level | count | free end | index id | prefix  | leaf  | flags |    | prev  | next  | prefix   | slots:  |
//! | (storage)| 'X'  | u8    | u16   | u32      | u32      | len u8  | vals  | u8    |    | u64   | u64   | 16 bytes | 6 bytes |
//! +----------+------+-------+-------+----------+----------+---------+-------+-------+----+-------+-------+----------+---------+
//!  ... free space ... | entries, packed downward from the end of the page to `free end` |
//!
//! slot  := entry offset u16 | key head: 4 bytes
//! entry := key len u16 | key | value     value: a leaf's row id (10 bytes, `key::put_row_id`),
//!                                               or, in a tree of sized values, value len u16 |
//!                                               value; an inner node's child page (u64)
//! ```
//!
//! **Spilled values.** A clustered table's row too long for a leaf entry lives in a chain of
//! overflow pages (`spill.rs`); its entry's value is then the chain's reference (row length u32 |
//! first page u64), and the top bit of its value length (`SPILLED`, above any length a leaf
//! takes) says so. The `flags` byte's bit 0 (`MAY_SPILL`) is set in a leaf that has held such an
//! entry, so a scan looks for chains only in the leaves that may have them.
//!
//! The `leaf vals` byte says what a tree's leaves hold ([`LeafValues`]): 0, row ids (every index
//! of a heap table); 1, values of their own length (a clustered table's rows, and the primary
//! keys its other indexes point with). Every node of a tree has its tree's byte, inner nodes
//! included, so a node read alone is decoded alike whatever its level.
//!
//! Slots are kept in key order. Level 0 is a leaf; `prev` and `next` link the leaves in key order
//! (0: none) for range scans in both directions. In an inner node, entry `i` leads to the keys
//! from its key (inclusive) to entry `i + 1`'s (exclusive), and entry 0 to everything below
//! entry 1 whatever its own key: a search follows the last entry whose key is at most the key
//! searched, or entry 0.
//!
//! **Prefix and key heads.** Every key of a node starts with the node's prefix (up to 16 bytes,
//! kept in the header; a common prefix, not always the longest one), and each slot holds its
//! key's *head*: the 4 bytes after the prefix, padded with zeros. Heads order as their keys do
//! wherever they differ (a key's padded head is a monotone function of the key), so a binary
//! search compares heads in the slot array and reads an entry only where two heads are equal:
//! a lookup in a leaf of hundreds of entries touches a few lines of slots and one entry, not two
//! scattered lines per probe.

use nvpage_storage::page::PAGE_HEADER_LEN;
use nvpage_storage::prefetch::prefetch;

use super::key::ROW_ID_LEN;
use crate::error::{Error, Result};
use crate::le::{put_u16, put_u32, u16_at, u32_at, u64_at};

/// The type byte of an index page.
pub const INDEX_PAGE: u8 = b'X';

const TYPE_OFFSET: usize = PAGE_HEADER_LEN;
const LEVEL_OFFSET: usize = TYPE_OFFSET + 1;
const COUNT_OFFSET: usize = LEVEL_OFFSET + 1;
const FREE_END_OFFSET: usize = COUNT_OFFSET + 2;
const INDEX_ID_OFFSET: usize = FREE_END_OFFSET + 4;
const PREFIX_LEN_OFFSET: usize = INDEX_ID_OFFSET + 4;
const LEAF_VALUES_OFFSET: usize = PREFIX_LEN_OFFSET + 1;
const FLAGS_OFFSET: usize = LEAF_VALUES_OFFSET + 1;
/// A flags bit: the leaf has held a spilled entry (it may hold one still).
const MAY_SPILL: u8 = 1;
/// The top bit of a sized value's length: the value is a spilled row's chain reference.
const SPILLED: usize = 0x8000;
/// The longest sized value: lengths keep their top bit for [`SPILLED`].
pub const MAX_SIZED_VALUE: usize = SPILLED - 1;
const PREV_OFFSET: usize = INDEX_ID_OFFSET + 8;
const NEXT_OFFSET: usize = PREV_OFFSET + 8;
const PREFIX_OFFSET: usize = NEXT_OFFSET + 8;
/// The longest prefix a node keeps.
pub const MAX_PREFIX: usize = 16;
/// Where the slot array starts.
pub const SLOTS_OFFSET: usize = PREFIX_OFFSET + MAX_PREFIX;
const HEAD_BYTES: usize = 4;
const SLOT_BYTES: usize = 2 + HEAD_BYTES;
const KEY_LEN_BYTES: usize = 2;
/// A sized value's length field.
const VALUE_LEN_BYTES: usize = 2;
/// A child pointer's bytes in an inner node.
pub const CHILD_LEN: usize = 8;

const _: () = assert!(SLOTS_OFFSET == 64);

/// `key`'s head in a node whose prefix is `p` bytes long: the 4 bytes after the prefix,
/// padded with zeros, as a number that orders as the bytes do.
pub fn head(key: &[u8], p: usize) -> u32 {
    let tail = key.get(p..).unwrap_or(&[]);
    let n = tail.len().min(HEAD_BYTES);
    let mut h = [0u8; HEAD_BYTES];
    h[..n].copy_from_slice(&tail[..n]);
    u32::from_be_bytes(h)
}

/// Bytes `a` and `b` share at their start.
pub(crate) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// What a tree's leaves hold beside their keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeafValues {
    /// A row id (`ROW_ID_LEN` bytes): the indexes of heap tables.
    RowIds,
    /// A value of its own length (a `u16` before it): a clustered table's rows.
    Sized,
}

impl LeafValues {
    fn byte(self) -> u8 {
        match self {
            LeafValues::RowIds => 0,
            LeafValues::Sized => 1,
        }
    }

    fn of_byte(b: u8) -> Option<Self> {
        match b {
            0 => Some(LeafValues::RowIds),
            1 => Some(LeafValues::Sized),
            _ => None,
        }
    }

    /// The bytes an entry of a node at `level` stores for a value of `len` bytes (its length
    /// field included).
    pub fn stored(self, level: u8, len: usize) -> usize {
        match (self, level) {
            (LeafValues::Sized, 0) => VALUE_LEN_BYTES + len,
            _ => len,
        }
    }

    /// Whether a value of `len` bytes is one a node at `level` takes: a row id or a child page
    /// where those are fixed, any length where sized.
    pub fn fits(self, level: u8, len: usize) -> bool {
        match (self, level) {
            (LeafValues::RowIds, 0) => len == ROW_ID_LEN,
            (LeafValues::Sized, 0) => len <= MAX_SIZED_VALUE,
            _ => len == CHILD_LEN,
        }
    }
}

/// The value's length in an entry of a node of `level` in a tree of row ids.
pub fn value_len(level: u8) -> usize {
    if level == 0 { ROW_ID_LEN } else { CHILD_LEN }
}

/// Where the entry at `off` (of a node whose entries were checked) ends: its key's length, key,
/// and value as `values` and `level` store it.
fn entry_end(page: &[u8], off: usize, level: u8, values: LeafValues) -> usize {
    let value_at = off + KEY_LEN_BYTES + u16_at(page, off);
    match (values, level) {
        (LeafValues::Sized, 0) => value_at + VALUE_LEN_BYTES + (u16_at(page, value_at) & !SPILLED),
        _ => value_at + value_len(level),
    }
}

/// Whether the node in `page` (not checked) is a leaf that may hold spilled entries: one byte
/// read, for a scan to decide whether the leaf's chains need reading.
pub fn may_spill(page: &[u8]) -> bool {
    page.get(FLAGS_OFFSET).is_some_and(|f| f & MAY_SPILL != 0)
}

/// The tree kind a node's header names (a damaged byte reads as row ids; [`Node::new`] refuses
/// it before any edit).
fn values_of(page: &[u8]) -> LeafValues {
    LeafValues::of_byte(page[LEAF_VALUES_OFFSET]).unwrap_or(LeafValues::RowIds)
}

/// The longest key a page of `page_size` bytes takes, so that every node holds at least four
/// entries (a split always leaves two on each side).
pub fn max_key(page_size: usize) -> usize {
    (page_size - SLOTS_OFFSET) / 4 - SLOT_BYTES - KEY_LEN_BYTES - ROW_ID_LEN
}

/// The most bytes a leaf entry of a tree of sized values may hold in key and value together, so
/// that every leaf holds at least four entries (as [`max_key`] for row ids), and an inner node,
/// whose keys are at most as long, too.
pub fn max_sized_entry(page_size: usize) -> usize {
    (page_size - SLOTS_OFFSET) / 4 - SLOT_BYTES - KEY_LEN_BYTES - VALUE_LEN_BYTES
}

/// Formats `page` as an empty node of index `index_id` at `level`, in a tree whose leaves hold
/// `values`.
pub fn init(page: &mut [u8], index_id: u32, level: u8, values: LeafValues) {
    page[PAGE_HEADER_LEN..].fill(0);
    page[TYPE_OFFSET] = INDEX_PAGE;
    page[LEVEL_OFFSET] = level;
    page[LEAF_VALUES_OFFSET] = values.byte();
    put_u32(page, FREE_END_OFFSET, page.len() as u32);
    put_u32(page, INDEX_ID_OFFSET, index_id);
}

/// A node whose header was checked: the slot array lies inside the page. Each entry is checked
/// when it is read (so a lookup's binary search checks the dozen entries it reads, not the
/// hundreds in the node); an entry outside the page is [`Error::CorruptPage`], never a read out
/// of bounds. [`Node::check_entries`] checks them all, as the writer does before it changes a
/// node in place. Key order, the prefix and the key heads are not checked here (a search in a
/// disordered node, or one whose heads are not its keys', finds wrong entries, never reads out
/// of bounds); `check` verifies them.
#[derive(Clone, Copy, Debug)]
pub struct Node<'p> {
    bytes: &'p [u8],
    /// Every key starts with it.
    prefix: &'p [u8],
    count: usize,
    level: u8,
    values: LeafValues,
    free_end: usize,
    page: u64,
}

impl<'p> Node<'p> {
    /// Checks `bytes` (a whole page, `page`) as a node of index `index_id`: type, index, and
    /// that the slot array fits.
    ///
    /// Inlined, with its errors made out of line: a scan makes its leaf's node at every step,
    /// and a node handed back through the stack was stored in parts and loaded whole, a
    /// store-forwarding stall per step (perf annotate).
    #[inline(always)]
    pub fn new(bytes: &'p [u8], index_id: u32, page: u64) -> Result<Self> {
        if bytes.len() < SLOTS_OFFSET
            || bytes[TYPE_OFFSET] != INDEX_PAGE
            || u32_at(bytes, INDEX_ID_OFFSET) != index_id
        {
            return Err(Self::not_a_node(bytes, index_id, page));
        }
        let level = bytes[LEVEL_OFFSET];
        let count = u16_at(bytes, COUNT_OFFSET);
        let free_end = u32_at(bytes, FREE_END_OFFSET) as usize;
        let p = usize::from(bytes[PREFIX_LEN_OFFSET]);
        let values = LeafValues::of_byte(bytes[LEAF_VALUES_OFFSET]);
        let (Some(values), false) = (
            values,
            SLOTS_OFFSET + count * SLOT_BYTES > free_end
                || free_end > bytes.len()
                || p > MAX_PREFIX,
        ) else {
            return Err(Self::bad_header(bytes, page));
        };
        let prefix = &bytes[PREFIX_OFFSET..PREFIX_OFFSET + p];
        Ok(Self { bytes, prefix, count, level, values, free_end, page })
    }

    /// Why `bytes` (page `page`, at least [`SLOTS_OFFSET`] long or not) is not a node of index
    /// `index_id`.
    #[cold]
    #[inline(never)]
    fn not_a_node(bytes: &[u8], index_id: u32, page: u64) -> Error {
        let reason = if bytes.len() < SLOTS_OFFSET || bytes[TYPE_OFFSET] != INDEX_PAGE {
            "not an index page".to_string()
        } else {
            let found = u32_at(bytes, INDEX_ID_OFFSET);
            format!("belongs to index {found}, not {index_id}")
        };
        Error::CorruptPage { page, reason }
    }

    /// What is wrong with the header of node `bytes` (page `page`), whose type and index are
    /// right.
    #[cold]
    #[inline(never)]
    fn bad_header(bytes: &[u8], page: u64) -> Error {
        let count = u16_at(bytes, COUNT_OFFSET);
        let free_end = u32_at(bytes, FREE_END_OFFSET) as usize;
        let p = usize::from(bytes[PREFIX_LEN_OFFSET]);
        let reason = if SLOTS_OFFSET + count * SLOT_BYTES > free_end || free_end > bytes.len() {
            format!("{count} entries and free end {free_end} do not fit the page")
        } else if p > MAX_PREFIX {
            format!("a prefix of {p} bytes (at most {MAX_PREFIX})")
        } else {
            format!("leaf values of unknown kind {}", bytes[LEAF_VALUES_OFFSET])
        };
        Error::CorruptPage { page, reason }
    }

    /// What the tree's leaves hold.
    pub fn values(&self) -> LeafValues {
        self.values
    }

    /// Checks every entry, as reading each would, and that together they fit the entry area
    /// (entries of a sound node are disjoint; slots sharing one entry would count it many times
    /// over, and the writer's edits — `insert_at`, `compact`, `split` — rely on the sum).
    pub fn check_entries(&self) -> Result<()> {
        let mut used = 0;
        for i in 0..self.count {
            used += self.entry(i)?.stored;
        }
        if used > self.bytes.len() - self.free_end {
            return Err(Error::CorruptPage {
                page: self.page,
                reason: format!(
                    "entries of {used} bytes in an entry area of {}",
                    self.bytes.len() - self.free_end
                ),
            });
        }
        Ok(())
    }

    /// Entries in the node.
    pub fn len(&self) -> usize {
        self.count
    }

    /// 0 for a leaf.
    pub fn level(&self) -> u8 {
        self.level
    }

    /// The left sibling (leaves), 0 if none.
    pub fn prev(&self) -> u64 {
        u64_at(self.bytes, PREV_OFFSET)
    }

    /// The right sibling (leaves), 0 if none.
    pub fn next(&self) -> u64 {
        u64_at(self.bytes, NEXT_OFFSET)
    }

    /// Entry `i`'s parts, checked against the page.
    ///
    /// Inlined, with its errors made out of line, for the reason [`Node::new`] is.
    #[inline(always)]
    fn entry(&self, i: usize) -> Result<Entry> {
        if i >= self.count {
            return Err(self.bad_entry(i, "is past the node's entries"));
        }
        let off = u16_at(self.bytes, SLOTS_OFFSET + i * SLOT_BYTES);
        if off < self.free_end || off + KEY_LEN_BYTES > self.bytes.len() {
            return Err(self.bad_entry(i, "lies outside the entry area"));
        }
        let key_len = u16_at(self.bytes, off);
        let key_at = off + KEY_LEN_BYTES;
        let (value_at, value_len, spilled) = match (self.values, self.level) {
            (LeafValues::Sized, 0) => {
                let len_at = key_at + key_len;
                if len_at + VALUE_LEN_BYTES > self.bytes.len() {
                    return Err(self.bad_entry(i, "runs past the page"));
                }
                let len = u16_at(self.bytes, len_at);
                (len_at + VALUE_LEN_BYTES, len & !SPILLED, len & SPILLED != 0)
            }
            (_, level) => (key_at + key_len, value_len(level), false),
        };
        if value_at + value_len > self.bytes.len() {
            return Err(self.bad_entry(i, "runs past the page"));
        }
        let stored = value_at + value_len - off;
        Ok(Entry { key_at, key_len, value_at, value_len, stored, spilled })
    }

    /// Entry `i` is damaged: `what` says how.
    #[cold]
    #[inline(never)]
    fn bad_entry(&self, i: usize, what: &str) -> Error {
        Error::CorruptPage {
            page: self.page,
            reason: format!("entry {i} of {} {what}", self.count),
        }
    }

    /// Entry `i`'s key.
    #[inline]
    pub fn key(&self, i: usize) -> Result<&'p [u8]> {
        let e = self.entry(i)?;
        Ok(&self.bytes[e.key_at..e.key_at + e.key_len])
    }

    /// Entry `i`'s value: a leaf's row id bytes or sized value, an inner node's child.
    pub fn value(&self, i: usize) -> Result<&'p [u8]> {
        let e = self.entry(i)?;
        Ok(&self.bytes[e.value_at..e.value_at + e.value_len])
    }

    /// Whether entry `i`'s value is a spilled row's chain reference (see the module's notes).
    pub fn spilled(&self, i: usize) -> Result<bool> {
        Ok(self.entry(i)?.spilled)
    }

    /// Whether the node is a leaf that may hold spilled entries ([`may_spill`]).
    pub fn may_spill(&self) -> bool {
        may_spill(self.bytes)
    }

    /// Entry `i`'s key, and where its value lies in the page: one check of the entry for both,
    /// as a scan's step wants them.
    #[inline(always)]
    pub fn entry_at(&self, i: usize) -> Result<(&'p [u8], ValueAt)> {
        let e = self.entry(i)?;
        let at = ValueAt { off: e.value_at, len: e.value_len, spilled: e.spilled };
        Ok((&self.bytes[e.key_at..e.key_at + e.key_len], at))
    }

    /// Folds a leaf's values (a clustered table's rows) with `f`, the last entry first: entries
    /// of a leaf filled in key order lie from the end of the page down, so this walks its memory
    /// upwards, asking for the lines ahead as it goes (as a heap page's fold does). Each entry is
    /// checked as [`Node::value`] checks it; `f` is told whether the value is a spilled row's
    /// chain reference.
    #[inline]
    pub fn fold_values_rev<A>(
        &self,
        init: A,
        mut f: impl FnMut(A, usize, &'p [u8], bool) -> Result<A>,
    ) -> Result<A> {
        let (mut acc, mut ahead) = (init, 0);
        for i in (0..self.count).rev() {
            let e = self.entry(i)?;
            let to = (e.value_at + e.value_len + crate::heap::PREFETCH_BYTES).min(self.bytes.len());
            ahead = ahead.max(e.key_at & !63);
            while ahead < to {
                prefetch(&self.bytes[ahead..]);
                ahead += 64;
            }
            acc = f(acc, i, &self.bytes[e.value_at..e.value_at + e.value_len], e.spilled)?;
        }
        Ok(acc)
    }

    /// The node's page.
    pub fn bytes(&self) -> &'p [u8] {
        self.bytes
    }

    /// Entry `i`'s child page (inner nodes).
    pub fn child(&self, i: usize) -> Result<u64> {
        let v = self.value(i)?;
        v.try_into().map(u64::from_le_bytes).map_err(|_| Error::CorruptPage {
            page: self.page,
            reason: "a leaf's entry read as a child".into(),
        })
    }

    /// Slot `i`'s key head (`i` below the count: inside the checked slot array).
    fn head_at(&self, i: usize) -> u32 {
        let at = SLOTS_OFFSET + i * SLOT_BYTES + 2;
        u32::from_be_bytes([
            self.bytes[at],
            self.bytes[at + 1],
            self.bytes[at + 2],
            self.bytes[at + 3],
        ])
    }

    /// A hint to load slot `i`'s line (nothing past the slots).
    #[inline(always)]
    fn prefetch_slot(&self, i: usize) {
        if i < self.count {
            prefetch(&self.bytes[SLOTS_OFFSET + i * SLOT_BYTES..]);
        }
    }

    /// A hint to load the first `span` bytes of entry `i` (its key and the start of its value),
    /// reading only its slot; nothing for an entry past the last, and only lines of the page.
    #[inline]
    pub fn prefetch_entry(&self, i: usize, span: usize) {
        if i >= self.count {
            return;
        }
        let off = u16_at(self.bytes, SLOTS_OFFSET + i * SLOT_BYTES);
        prefetch_lines(self.bytes, off, off + span);
    }

    /// A hint to load the slots of entries `from..` (the lines of the slot array from `from`'s
    /// on): each entry's place is read from its slot before the entry itself can be asked for.
    #[inline]
    pub fn prefetch_slots(&self, from: usize) {
        if from >= self.count {
            return;
        }
        let slot = |i: usize| SLOTS_OFFSET + i * SLOT_BYTES;
        prefetch_lines(self.bytes, slot(from), slot(self.count));
    }

    /// Where `key` is: `Ok(i)` if entry `i` holds it, else `Err(i)`, the position it would take.
    /// Compares the prefix once, then heads; reads an entry only where its head equals `key`'s.
    pub fn search(&self, key: &[u8]) -> Result<std::result::Result<usize, usize>> {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let p = self.prefix.len();
        let n = p.min(key.len());
        match key[..n].cmp(&self.prefix[..n]) {
            // Below every key, or above: every key starts with the prefix.
            Less => return Ok(Err(0)),
            Greater => return Ok(Err(self.count)),
            // A proper prefix of the prefix: below every key.
            Equal if n < p => return Ok(Err(0)),
            Equal => {}
        }
        let h = head(key, p);
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = (lo + hi) / 2;
            // The next probe is in one half or the other: ask for both halves' slots now, so
            // their lines load while this one is compared (a lookup's probes are otherwise one
            // cache miss after another).
            self.prefetch_slot((lo + mid) / 2);
            self.prefetch_slot((mid + 1 + hi) / 2);
            let ord = match self.head_at(mid).cmp(&h) {
                Equal => self.key(mid)?.cmp(key),
                o => o,
            };
            match ord {
                Less => lo = mid + 1,
                Greater => hi = mid,
                Equal => return Ok(Ok(mid)),
            }
        }
        Ok(Err(lo))
    }

    /// What is wrong with the prefix and heads, if anything: a key that does not start with
    /// the prefix, or a head that is not its key's (a search would miss entries). For `check`.
    pub fn head_damage(&self) -> Result<Option<String>> {
        for i in 0..self.count {
            let k = self.key(i)?;
            if !k.starts_with(self.prefix) {
                return Ok(Some(format!("entry {i}'s key does not start with the node's prefix")));
            }
            if self.head_at(i) != head(k, self.prefix.len()) {
                return Ok(Some(format!("slot {i}'s key head is not its key's")));
            }
        }
        Ok(None)
    }

    /// The entry of an inner node to follow for `key`: the last whose key is at most `key`, or 0.
    pub fn child_for(&self, key: &[u8]) -> Result<usize> {
        Ok(match self.search(key)? {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        })
    }

    /// Bytes an insert could use after compaction (entries checked).
    pub fn free_space(&self) -> Result<usize> {
        let mut used = 0;
        for i in 0..self.count {
            used += self.entry(i)?.stored;
        }
        Ok(self.bytes.len() - SLOTS_OFFSET - self.count * SLOT_BYTES - used)
    }
}

/// Where an entry's value lies in its page, from [`Node::entry_at`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueAt {
    pub off: usize,
    pub len: usize,
    /// The value is a spilled row's chain reference, not the row.
    pub spilled: bool,
}

/// An entry's parts: where its key and value lie, and the bytes it takes (slot aside).
#[derive(Clone, Copy, Debug)]
struct Entry {
    key_at: usize,
    key_len: usize,
    value_at: usize,
    value_len: usize,
    stored: usize,
    spilled: bool,
}

/// Bytes an entry with a key of `key_len` takes at `level` of a tree of row ids, its slot
/// included.
pub fn entry_cost(key_len: usize, level: u8) -> usize {
    SLOT_BYTES + KEY_LEN_BYTES + key_len + value_len(level)
}

/// Sets a leaf's left sibling.
pub fn set_prev(page: &mut [u8], prev: u64) {
    page[PREV_OFFSET..PREV_OFFSET + 8].copy_from_slice(&prev.to_le_bytes());
}

/// Sets a leaf's right sibling.
pub fn set_next(page: &mut [u8], next: u64) {
    page[NEXT_OFFSET..NEXT_OFFSET + 8].copy_from_slice(&next.to_le_bytes());
}

/// Inserts an entry at position `pos` of a node whose entries were checked ([`Node::check_entries`]); `false` if it does not fit.
pub fn insert_at(page: &mut [u8], pos: usize, key: &[u8], value: &[u8]) -> bool {
    insert_entry(page, pos, key, value, false)
}

/// [`insert_at`], of a leaf entry whose value is a spilled row's chain reference where
/// `spilled` (a leaf of sized values only): its length is marked, and the leaf's flags say it
/// may hold such entries.
pub fn insert_entry(page: &mut [u8], pos: usize, key: &[u8], value: &[u8], spilled: bool) -> bool {
    let count = u16_at(page, COUNT_OFFSET);
    let level = page[LEVEL_OFFSET];
    let values = values_of(page);
    debug_assert!(values.fits(level, value.len()));
    debug_assert!(!spilled || values.stored(level, 0) > 0, "spilled, where values are not sized");
    let need = KEY_LEN_BYTES + key.len() + values.stored(level, value.len());
    let slots_end = SLOTS_OFFSET + (count + 1) * SLOT_BYTES;
    if (u32_at(page, FREE_END_OFFSET) as usize) < slots_end + need {
        let free = Node { bytes: page, prefix: &[], count, level, values, free_end: 0, page: 0 }
            .free_space()
            .unwrap_or(0);
        if free < need + SLOT_BYTES {
            return false;
        }
        compact(page);
    }
    // The prefix shrinks to what the new key shares with it (an empty node takes the key's).
    let p = usize::from(page[PREFIX_LEN_OFFSET]).min(MAX_PREFIX);
    let keep = if count == 0 {
        key.len().min(MAX_PREFIX)
    } else {
        common_prefix(&page[PREFIX_OFFSET..PREFIX_OFFSET + p], key)
    };
    if keep != p || count == 0 {
        let mut prefix = [0u8; MAX_PREFIX];
        prefix[..keep].copy_from_slice(&key[..keep]);
        set_prefix(page, &prefix[..keep]);
    }
    let off = u32_at(page, FREE_END_OFFSET) as usize - need;
    put_u16(page, off, key.len());
    let key_end = off + KEY_LEN_BYTES + key.len();
    page[off + KEY_LEN_BYTES..key_end].copy_from_slice(key);
    let value_at = off + need - value.len();
    if value_at > key_end {
        put_u16(page, key_end, value.len() | if spilled { SPILLED } else { 0 });
    }
    if spilled {
        page[FLAGS_OFFSET] |= MAY_SPILL;
    }
    page[value_at..off + need].copy_from_slice(value);
    put_u32(page, FREE_END_OFFSET, off as u32);
    let at = SLOTS_OFFSET + pos * SLOT_BYTES;
    page.copy_within(at..SLOTS_OFFSET + count * SLOT_BYTES, at + SLOT_BYTES);
    put_u16(page, at, off);
    page[at + 2..at + SLOT_BYTES].copy_from_slice(&head(key, keep).to_be_bytes());
    put_u16(page, COUNT_OFFSET, count + 1);
    true
}

/// Sets the prefix of a node whose entries were checked to `prefix` (every key must start with
/// it) and rewrites every slot's head for it.
fn set_prefix(page: &mut [u8], prefix: &[u8]) {
    debug_assert!(prefix.len() <= MAX_PREFIX);
    page[PREFIX_LEN_OFFSET] = prefix.len() as u8;
    page[PREFIX_OFFSET..PREFIX_OFFSET + prefix.len()].copy_from_slice(prefix);
    page[PREFIX_OFFSET + prefix.len()..SLOTS_OFFSET].fill(0);
    for i in 0..u16_at(page, COUNT_OFFSET) {
        let at = SLOTS_OFFSET + i * SLOT_BYTES;
        let off = u16_at(page, at);
        let key = &page[off + KEY_LEN_BYTES..off + KEY_LEN_BYTES + u16_at(page, off)];
        let h = head(key, prefix.len()).to_be_bytes();
        page[at + 2..at + SLOT_BYTES].copy_from_slice(&h);
    }
}

/// Lengthens the prefix of a node whose entries were checked to what its keys share (after
/// removals, which leave it shorter than it could be), so that its heads tell more keys apart.
fn fit_prefix(page: &mut [u8]) {
    let count = u16_at(page, COUNT_OFFSET);
    if count == 0 {
        return;
    }
    let key_of = |page: &[u8], i: usize| {
        let off = u16_at(page, SLOTS_OFFSET + i * SLOT_BYTES);
        off + KEY_LEN_BYTES..off + KEY_LEN_BYTES + u16_at(page, off)
    };
    let first = &page[key_of(page, 0)];
    let mut keep = first.len().min(MAX_PREFIX);
    let mut prefix = [0u8; MAX_PREFIX];
    prefix[..keep].copy_from_slice(&first[..keep]);
    for i in 1..count {
        keep = common_prefix(&prefix[..keep], &page[key_of(page, i)]);
    }
    if keep != usize::from(page[PREFIX_LEN_OFFSET]) {
        set_prefix(page, &prefix[..keep]);
    }
}

/// Removes entry `pos` of a node whose entries were checked (its bytes are reclaimed by the next compaction).
pub fn remove_at(page: &mut [u8], pos: usize) {
    let count = u16_at(page, COUNT_OFFSET);
    let at = SLOTS_OFFSET + pos * SLOT_BYTES;
    page.copy_within(at + SLOT_BYTES..SLOTS_OFFSET + count * SLOT_BYTES, at);
    put_u16(page, COUNT_OFFSET, count - 1);
}

/// Packs the entries of a node whose entries were checked against the end of the page.
fn compact(page: &mut [u8]) {
    let count = u16_at(page, COUNT_OFFSET);
    let level = page[LEVEL_OFFSET];
    let values = values_of(page);
    let entries: Vec<Vec<u8>> = (0..count)
        .map(|i| {
            let off = u16_at(page, SLOTS_OFFSET + i * SLOT_BYTES);
            page[off..entry_end(page, off, level, values)].to_vec()
        })
        .collect();
    let mut end = page.len();
    for (i, e) in entries.iter().enumerate() {
        end -= e.len();
        page[end..end + e.len()].copy_from_slice(e);
        put_u16(page, SLOTS_OFFSET + i * SLOT_BYTES, end);
    }
    put_u32(page, FREE_END_OFFSET, end as u32);
}

/// Moves the upper half (by bytes) of full node `left`'s entries into empty node `right` (same
/// level); returns how many entries `left` keeps, or `None` if it has fewer than two.
pub fn split(left: &mut [u8], right: &mut [u8]) -> Option<usize> {
    let count = u16_at(left, COUNT_OFFSET);
    let level = left[LEVEL_OFFSET];
    let values = values_of(left);
    if count < 2 {
        return None;
    }
    // Split by bytes, not by count, so both halves have room whatever the key lengths.
    let sizes: Vec<usize> = (0..count)
        .map(|i| {
            let off = u16_at(left, SLOTS_OFFSET + i * SLOT_BYTES);
            entry_end(left, off, level, values) - off
        })
        .collect();
    let total: usize = sizes.iter().sum();
    let mut acc = 0;
    let mut mid = count / 2;
    for (i, s) in sizes.iter().enumerate() {
        acc += s;
        if acc * 2 >= total {
            mid = (i + 1).clamp(1, count - 1);
            break;
        }
    }
    for i in mid..count {
        let off = u16_at(left, SLOTS_OFFSET + i * SLOT_BYTES);
        let klen = u16_at(left, off);
        let key_end = off + KEY_LEN_BYTES + klen;
        let key = left[off + KEY_LEN_BYTES..key_end].to_vec();
        let end = entry_end(left, off, level, values);
        let sized = values.stored(level, 0) > 0;
        let value_at = if sized { key_end + VALUE_LEN_BYTES } else { key_end };
        let spilled = sized && u16_at(left, key_end) & SPILLED != 0;
        let value = left[value_at..end].to_vec();
        let pos = i - mid;
        let fitted = insert_entry(right, pos, &key, &value, spilled);
        debug_assert!(fitted, "half a page fits an empty page");
    }
    put_u16(left, COUNT_OFFSET, mid);
    compact(left);
    fit_prefix(left);
    Some(mid)
}

/// A hint to load every cache line of `bytes[from..to]` (`to` clipped to the page).
#[inline]
fn prefetch_lines(bytes: &[u8], from: usize, to: usize) {
    let end = to.min(bytes.len());
    let mut at = from & !63;
    while at < end {
        prefetch(&bytes[at..]);
        at += 64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(level: u8) -> Vec<u8> {
        let mut p = vec![0u8; 4096];
        init(&mut p, 3, level, LeafValues::RowIds);
        p
    }

    /// Leaves of sized values keep each value whole and with its key through inserts (into
    /// nodes needing compaction), removals and a split; every leaf of a tree of sized values takes
    /// four entries of the largest size; a damaged kind byte is an error.
    #[test]
    fn sized_values_stay_with_their_keys() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(40);
        for round in 0..100 {
            let mut p = vec![0u8; 4096];
            init(&mut p, 3, 0, LeafValues::Sized);
            let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            for _ in 0..rng.random_range(1..200) {
                let key = awkward_key(&mut rng);
                let value: Vec<u8> =
                    (0..rng.random_range(0..300)).map(|_| rng.random::<u8>()).collect();
                let n = Node::new(&p, 3, 1).unwrap();
                assert_eq!(n.values(), LeafValues::Sized);
                if let Err(pos) = n.search(&key).unwrap()
                    && insert_at(&mut p, pos, &key, &value)
                {
                    model.insert(pos, (key, value));
                }
                if rng.random_bool(0.3) && !model.is_empty() {
                    let i = rng.random_range(0..model.len());
                    remove_at(&mut p, i);
                    model.remove(i);
                }
            }
            let n = Node::new(&p, 3, 1).unwrap();
            n.check_entries().unwrap();
            let got: Vec<_> = (0..n.len())
                .map(|i| (n.key(i).unwrap().to_vec(), n.value(i).unwrap().to_vec()))
                .collect();
            assert_eq!(got, model, "round {round}");
            if model.len() >= 2 {
                let mut right = vec![0u8; 4096];
                init(&mut right, 3, 0, LeafValues::Sized);
                let mid = split(&mut p, &mut right).unwrap();
                let (l, r) = (Node::new(&p, 3, 1).unwrap(), Node::new(&right, 3, 2).unwrap());
                l.check_entries().unwrap();
                r.check_entries().unwrap();
                let mut both: Vec<_> = (0..l.len())
                    .map(|i| (l.key(i).unwrap().to_vec(), l.value(i).unwrap().to_vec()))
                    .collect();
                both.extend(
                    (0..r.len())
                        .map(|i| (r.key(i).unwrap().to_vec(), r.value(i).unwrap().to_vec())),
                );
                assert_eq!((both, l.len()), (model, mid), "a split of sized values");
            }
        }
        // Four entries of the largest size fit an empty leaf.
        let mut p = vec![0u8; 4096];
        init(&mut p, 3, 0, LeafValues::Sized);
        let most = max_sized_entry(4096);
        for i in 0..4u8 {
            let key = [i; 8];
            assert!(insert_at(&mut p, usize::from(i), &key, &vec![i; most - key.len()]), "{i}");
        }
        let mut bad = p.clone();
        bad[LEAF_VALUES_OFFSET] = 2;
        assert!(Node::new(&bad, 3, 1).is_err(), "an unknown kind of leaf values");
        // A value length that runs past the page.
        let mut bad = p;
        let off = u16_at(&bad, SLOTS_OFFSET);
        put_u16(&mut bad, off + KEY_LEN_BYTES + 8, 4000);
        let n = Node::new(&bad, 3, 1).unwrap();
        assert!(n.value(0).is_err() && n.check_entries().is_err());
    }

    /// A spilled entry keeps its mark through compactions and a split, its value length reads
    /// without the mark, and a leaf that took one says it may hold them (the other half of a
    /// split only if one moved there).
    #[test]
    fn spilled_entries_keep_their_mark() {
        let mut p = vec![0u8; 4096];
        init(&mut p, 3, 0, LeafValues::Sized);
        assert!(!may_spill(&p));
        let mut model = Vec::new();
        for i in 0..200u16 {
            let key = i.to_be_bytes();
            let spilled = i % 7 == 3;
            let value = if spilled { vec![9; 12] } else { vec![i as u8; 20] };
            if !insert_entry(&mut p, model.len(), &key, &value, spilled) {
                break;
            }
            model.push((key.to_vec(), value, spilled));
            if i % 5 == 0 {
                remove_at(&mut p, model.len() - 1);
                model.pop();
            }
        }
        assert!(may_spill(&p) && model.len() > 40);
        let mut right = vec![0u8; 4096];
        init(&mut right, 3, 0, LeafValues::Sized);
        let mid = split(&mut p, &mut right).unwrap();
        let mut both = Vec::new();
        for (bytes, id) in [(&p, 1), (&right, 2)] {
            let n = Node::new(bytes, 3, id).unwrap();
            n.check_entries().unwrap();
            for i in 0..n.len() {
                let (key, at) = n.entry_at(i).unwrap();
                let value = n.value(i).unwrap().to_vec();
                assert_eq!((at.len, at.spilled), (value.len(), n.spilled(i).unwrap()));
                both.push((key.to_vec(), value, at.spilled));
            }
        }
        assert_eq!(both, model);
        let moved = model[mid..].iter().any(|e| e.2);
        assert_eq!(may_spill(&right), moved, "the right half's flags");
        // A leaf that never took one stays unmarked.
        let mut plain = vec![0u8; 4096];
        init(&mut plain, 3, 0, LeafValues::Sized);
        assert!(insert_at(&mut plain, 0, b"k", b"row") && !may_spill(&plain));
    }

    #[test]
    fn entries_stay_in_key_order_and_split_keeps_them_all() {
        let mut p = node(0);
        let rid = [7u8; ROW_ID_LEN];
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut k = 0u32;
        loop {
            let key = (k.wrapping_mul(2_654_435_761)).to_be_bytes().to_vec();
            let n = Node::new(&p, 3, 1).unwrap();
            let pos = n.search(&key).unwrap().unwrap_err();
            if !insert_at(&mut p, pos, &key, &rid) {
                break;
            }
            keys.push(key);
            k += 1;
        }
        keys.sort();
        let n = Node::new(&p, 3, 1).unwrap();
        assert_eq!((0..n.len()).map(|i| n.key(i).unwrap().to_vec()).collect::<Vec<_>>(), keys);
        assert!(n.free_space().unwrap() < entry_cost(4, 0));
        let mut right = node(0);
        assert!(split(&mut p, &mut right).is_some());
        let (l, r) = (Node::new(&p, 3, 1).unwrap(), Node::new(&right, 3, 2).unwrap());
        assert!(l.len() >= 2 && r.len() >= 2);
        let mut both: Vec<Vec<u8>> = (0..l.len()).map(|i| l.key(i).unwrap().to_vec()).collect();
        both.extend((0..r.len()).map(|i| r.key(i).unwrap().to_vec()));
        assert_eq!(both, keys, "a split loses and reorders nothing");
        // Removing entries frees their room for the next insert.
        let before = l.free_space().unwrap();
        remove_at(&mut p, 0);
        assert_eq!(Node::new(&p, 3, 1).unwrap().free_space().unwrap(), before + entry_cost(4, 0));
    }

    /// Keys that share long prefixes (heads equal past 16 bytes), are prefixes of each other, or
    /// are shorter than a node's prefix.
    fn awkward_key(rng: &mut impl rand::Rng) -> Vec<u8> {
        let stem: &[u8] = match rng.random_range(0..4) {
            0 => b"",
            1 => b"\x01\x80",
            2 => b"\x01\x80\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
            _ => b"\x01\x81\x07",
        };
        let mut k = stem.to_vec();
        let tail = rng.random_range(0..7);
        k.extend((0..tail).map(|_| [0u8, 1, 0x7f, 0xff][rng.random_range(0..4)]));
        k
    }

    #[test]
    fn searches_by_heads_find_what_a_linear_search_finds() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(18);
        for round in 0..200 {
            let mut p = node(0);
            let mut keys: Vec<Vec<u8>> = Vec::new();
            for _ in 0..rng.random_range(1..120) {
                let key = awkward_key(&mut rng);
                let n = Node::new(&p, 3, 1).unwrap();
                match n.search(&key).unwrap() {
                    Ok(i) => assert_eq!(keys[i], key),
                    Err(pos) => {
                        assert_eq!(pos, keys.partition_point(|k| k < &key));
                        if insert_at(&mut p, pos, &key, &[1; ROW_ID_LEN]) {
                            keys.insert(pos, key);
                        }
                    }
                }
                if rng.random_bool(0.2) && !keys.is_empty() {
                    let i = rng.random_range(0..keys.len());
                    remove_at(&mut p, i);
                    keys.remove(i);
                }
            }
            if round % 2 == 0 && keys.len() >= 2 {
                let mut right = node(0);
                let mid = split(&mut p, &mut right).unwrap();
                let r = Node::new(&right, 3, 2).unwrap();
                assert_eq!(r.head_damage().unwrap(), None);
                for (i, k) in keys[mid..].iter().enumerate() {
                    assert_eq!(r.search(k).unwrap(), Ok(i));
                }
                keys.truncate(mid);
            }
            let n = Node::new(&p, 3, 1).unwrap();
            assert_eq!(n.head_damage().unwrap(), None);
            for _ in 0..50 {
                let probe = awkward_key(&mut rng);
                let want = keys.binary_search(&probe);
                assert_eq!(n.search(&probe).unwrap(), want, "{probe:?} in {keys:?}");
            }
        }
    }

    #[test]
    fn damaged_heads_and_prefixes_are_found() {
        let mut p = node(0);
        for (i, k) in [&b"\x01ab"[..], b"\x01ac", b"\x01b"].iter().enumerate() {
            assert!(insert_at(&mut p, i, k, &[1; ROW_ID_LEN]));
        }
        assert_eq!(p[PREFIX_LEN_OFFSET], 1, "the keys share one byte");
        assert_eq!(Node::new(&p, 3, 1).unwrap().head_damage().unwrap(), None);
        let mut bad = p.clone();
        bad[SLOTS_OFFSET + SLOT_BYTES + 2] ^= 1;
        assert!(Node::new(&bad, 3, 1).unwrap().head_damage().unwrap().is_some(), "a head");
        let mut bad = p.clone();
        bad[PREFIX_OFFSET] = 2;
        assert!(Node::new(&bad, 3, 1).unwrap().head_damage().unwrap().is_some(), "a prefix");
        let mut bad = p;
        bad[PREFIX_LEN_OFFSET] = MAX_PREFIX as u8 + 1;
        assert!(Node::new(&bad, 3, 1).is_err(), "a prefix longer than a node keeps");
    }

    #[test]
    fn inner_nodes_route_every_key() {
        let mut p = node(1);
        for (i, k) in [&b""[..], b"m", b"t"].iter().enumerate() {
            assert!(insert_at(&mut p, i, k, &(100 + i as u64).to_le_bytes()));
        }
        let n = Node::new(&p, 3, 1).unwrap();
        for (key, child) in [(&b"a"[..], 100), (b"m", 101), (b"s", 101), (b"t", 102), (b"z", 102)] {
            assert_eq!(n.child(n.child_for(key).unwrap()).unwrap(), child, "{key:?}");
        }
    }

    #[test]
    fn damaged_nodes_are_errors_not_panics() {
        let mut p = node(0);
        assert!(insert_at(&mut p, 0, b"key", &[1; ROW_ID_LEN]));
        assert!(Node::new(&p, 4, 1).is_err(), "another index's page");
        let mut bad = p.clone();
        put_u16(&mut bad, COUNT_OFFSET, 3000);
        assert!(Node::new(&bad, 3, 1).is_err(), "more slots than the page has room for");
        let mut bad = p.clone();
        bad[COUNT_OFFSET] = 200;
        let n = Node::new(&bad, 3, 1).unwrap();
        assert!(n.check_entries().is_err() && n.key(199).is_err(), "slots of no entry");
        let mut bad = p.clone();
        put_u16(&mut bad, SLOTS_OFFSET, 4094);
        let n = Node::new(&bad, 3, 1).unwrap();
        assert!(n.key(0).is_err() && n.check_entries().is_err(), "an entry past the page");
        assert!(n.search(b"key").is_err() && n.key(1).is_err());
        let mut bad = p.clone();
        bad[TYPE_OFFSET] = b'H';
        assert!(Node::new(&bad, 3, 1).is_err(), "a heap page");
        // Every slot on the one entry: each lies in the entry area, but together they claim
        // more bytes than the page has, and an insert's free-space sum would underflow.
        let mut bad = p;
        let count = 600;
        let off = u16_at(&bad, SLOTS_OFFSET);
        for i in 0..count {
            put_u16(&mut bad, SLOTS_OFFSET + i * SLOT_BYTES, off);
        }
        put_u16(&mut bad, COUNT_OFFSET, count);
        let n = Node::new(&bad, 3, 1).unwrap();
        assert!(n.key(599).is_ok() && n.check_entries().is_err(), "slots sharing one entry");
    }
}
