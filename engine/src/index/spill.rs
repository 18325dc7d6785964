//! Spilled rows: a clustered table's row too long for a leaf entry lives whole in a chain of
//! overflow pages of the table's tree, and its leaf entry holds the chain's reference instead
//! ([`Chain`]; the entry's length is marked, see `node.rs`).
//!
//! ```text
//! 0          16     17      20         24     32        36
//! +----------+------+-------+----------+------+---------+-------------------------------+
//! | envelope | type |       | index id | next | len u32 | the row's next `len` bytes     |
//! | (storage)| 'O'  |       | u32      | u64  |         |                               |
//! +----------+------+-------+----------+------+---------+-------------------------------+
//! ```
//!
//! A chain is written once, whole, by the transaction that puts its row, and never changed:
//! replacing or removing the row releases the chain's pages as the tree's own pages are
//! released (free once no snapshot that may read the old leaf is live: DESIGN.md's R6). A
//! reader follows the chain as it sees the leaf, so a snapshot reads the chain its leaf names.
//!
//! Every page but the last is full, so a row's length fixes how many pages its chain has and
//! what each holds: a chain that is longer, shorter, loops, or strays into another tree's pages
//! is damage ([`Error::CorruptPage`]), never a wrong row or an endless walk.

use nvpage_buffer::View;
use nvpage_storage::PageId;
use nvpage_storage::page::PAGE_HEADER_LEN;

use super::put_primary_key;
use crate::db::Database;
use crate::error::{Error, Result};
use crate::le::{put_u32, u32_at, u64_at};
use crate::row::RowRef;
use crate::schema::Schema;
use crate::table::RowId;

/// The type byte of an overflow page.
pub const SPILL_PAGE: u8 = b'O';

const TYPE_OFFSET: usize = PAGE_HEADER_LEN;
const INDEX_ID_OFFSET: usize = TYPE_OFFSET + 4;
const NEXT_OFFSET: usize = INDEX_ID_OFFSET + 4;
const LEN_OFFSET: usize = NEXT_OFFSET + 8;
const DATA_OFFSET: usize = LEN_OFFSET + 4;

/// The bytes of a chain's reference in its leaf entry.
pub const REF_LEN: usize = 12;

/// Row bytes an overflow page of `page_size` holds.
pub fn capacity(page_size: usize) -> usize {
    page_size - DATA_OFFSET
}

/// A spilled row's chain: the row's length and the chain's first page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chain {
    pub len: usize,
    pub first: u64,
}

impl Chain {
    /// The reference a leaf entry holds.
    pub fn encode(self) -> [u8; REF_LEN] {
        let mut out = [0u8; REF_LEN];
        out[..4].copy_from_slice(&(self.len as u32).to_le_bytes());
        out[4..].copy_from_slice(&self.first.to_le_bytes());
        out
    }

    /// The chain a spilled entry of leaf `leaf` names: a reference of any other length, an empty
    /// row or page 0 is damage.
    pub fn decode(value: &[u8], leaf: u64) -> Result<Self> {
        if value.len() != REF_LEN {
            return Err(bad(leaf, format!("a spilled row's reference of {} bytes", value.len())));
        }
        let chain = Chain { len: u32_at(value, 0) as usize, first: u64_at(value, 4) };
        if chain.len == 0 || chain.first == 0 {
            return Err(bad(leaf, "a spilled row's reference names no chain"));
        }
        Ok(chain)
    }

    /// How many pages the chain has, on pages of `page_size`.
    pub fn pages(self, page_size: usize) -> usize {
        self.len.div_ceil(capacity(page_size))
    }
}

#[cold]
fn bad(page: u64, reason: impl Into<String>) -> Error {
    Error::CorruptPage { page, reason: reason.into() }
}

/// Formats `page` (zeroed, of tree `tree`) as an overflow page holding `piece`, followed by
/// page `next` (0: the chain's last).
pub fn init(page: &mut [u8], tree: u32, next: u64, piece: &[u8]) {
    debug_assert!(piece.len() <= capacity(page.len()));
    page[TYPE_OFFSET] = SPILL_PAGE;
    put_u32(page, INDEX_ID_OFFSET, tree);
    page[NEXT_OFFSET..NEXT_OFFSET + 8].copy_from_slice(&next.to_le_bytes());
    put_u32(page, LEN_OFFSET, piece.len() as u32);
    page[DATA_OFFSET..DATA_OFFSET + piece.len()].copy_from_slice(piece);
}

/// Page `page` (`bytes`) as the overflow page of tree `tree` that holds the next `want` bytes of
/// a row (all it has room for, or the rest): its piece and the page after it, which is 0 exactly
/// where `want` is the rest.
pub fn piece(bytes: &[u8], tree: u32, page: u64, want: usize) -> Result<(&[u8], u64)> {
    if bytes.len() <= DATA_OFFSET || bytes[TYPE_OFFSET] != SPILL_PAGE {
        return Err(bad(
            page,
            "a spilled row's chain leads to a page that is not an overflow page",
        ));
    }
    let found = u32_at(bytes, INDEX_ID_OFFSET);
    if found != tree {
        return Err(bad(page, format!("an overflow page of index {found}, not {tree}")));
    }
    let cap = capacity(bytes.len());
    let len = u32_at(bytes, LEN_OFFSET) as usize;
    if len != want.min(cap) {
        return Err(bad(page, format!("an overflow page of {len} bytes where its row has {want}")));
    }
    let next = u64_at(bytes, NEXT_OFFSET);
    if (want <= cap) != (next == 0) {
        return Err(bad(page, "an overflow chain whose length is not its row's"));
    }
    Ok((&bytes[DATA_OFFSET..DATA_OFFSET + len], next))
}

/// Follows `chain` (of tree `tree`), as `view` sees it, calling `visit` with each page's id and
/// piece in order.
pub fn walk(
    db: &Database,
    view: View,
    tree: u32,
    chain: Chain,
    mut visit: impl FnMut(u64, &[u8]),
) -> Result<()> {
    let (mut page, mut left) = (chain.first, chain.len);
    while left > 0 {
        let g = db.pool.read(PageId(page), view)?;
        let (piece, next) = piece(&g, tree, page, left)?;
        visit(page, piece);
        left -= piece.len();
        page = next;
    }
    Ok(())
}

/// The row `chain` (of tree `tree`, named by the entry of leaf `leaf` whose key is `key`) holds,
/// as `view` sees it, into `out` (cleared first): a row of `schema` whose primary key is `key`.
/// A chain two entries share (damage) would otherwise give one entry the other's row.
#[allow(clippy::too_many_arguments)]
pub fn read_row(
    db: &Database,
    view: View,
    tree: u32,
    chain: Chain,
    schema: &Schema,
    key: &[u8],
    leaf: u64,
    out: &mut Vec<u8>,
) -> Result<()> {
    out.clear();
    // A damaged length is found as the chain is walked, before it is trusted with memory.
    out.reserve(chain.len.min(db.page_size()));
    walk(db, view, tree, chain, |_, piece| out.extend_from_slice(piece))?;
    let row = RowRef::new(schema, out, RowId::KEYED)?;
    let mut found = Vec::with_capacity(key.len());
    put_primary_key(schema, &row, &mut found)?;
    if found != key {
        return Err(bad(leaf, "a spilled row's chain holds the row of another key"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chain written piece by piece reads back whole; each kind of damage to a page is an
    /// error, not a wrong or endless read.
    #[test]
    fn pieces_hold_their_row_and_damage_is_found() {
        let size = 4096;
        let cap = capacity(size);
        let row: Vec<u8> = (0..cap + 100).map(|i| i as u8).collect();
        let mut first = vec![0u8; size];
        let mut second = vec![0u8; size];
        init(&mut first, 7, 9, &row[..cap]);
        init(&mut second, 7, 0, &row[cap..]);
        let (a, next) = piece(&first, 7, 8, row.len()).unwrap();
        let (b, last) = piece(&second, 7, next, row.len() - a.len()).unwrap();
        assert_eq!(([a, b].concat(), next, last), (row.clone(), 9, 0));
        assert!(piece(&first, 8, 8, row.len()).is_err(), "another tree's page");
        assert!(piece(&second, 7, 9, 99).is_err(), "a piece longer than its row's rest");
        assert!(piece(&first, 7, 8, cap).is_err(), "a chain that goes on past its row");
        assert!(piece(&second, 7, 9, 100 + cap).is_err(), "a chain that ends early");
        let mut node = second.clone();
        node[TYPE_OFFSET] = b'X';
        assert!(piece(&node, 7, 9, 100).is_err(), "an index node");
        let chain = Chain { len: row.len(), first: 8 };
        assert_eq!(Chain::decode(&chain.encode(), 1).unwrap(), chain);
        assert_eq!(chain.pages(size), 2);
        assert!(Chain::decode(&[0; REF_LEN], 1).is_err() && Chain::decode(&[1; 10], 1).is_err());
    }
}
