//! What [`Database::check`](crate::Database::check) verifies of an index: every node readable
//! and of the index, one level below its parent, its prefix and key heads its keys', keys
//! strictly ascending within each node (an inner node's entry 0 aside: see `tree.rs`) and inside
//! the range its parent's separators give it,
//! every leaf at one depth and linked to its neighbours both ways, a spilled row's chain of
//! overflow pages whole and of the index, every page of the index either in the tree (or a
//! chain) once or free, the entry count the catalog keeps, and that index and table
//! agree both ways (every row indexed once under its key, every entry a live row with that key).
//! A clustered table's other indexes are held to the rows of its tree: each entry's value a
//! primary key the tree holds, of a row whose columns encode to the entry's key.

use std::collections::HashSet;

use super::key;
use super::node::Node;
use super::row_key;
use super::spill::{self, Chain};
use super::tree::entry_row;
use crate::catalog::IndexMeta;
use crate::error::Result;
use crate::row::RowRef;
use crate::schema::Schema;
use crate::table::RowId;

/// One index in a [`CheckReport`](crate::CheckReport).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexReport {
    /// The index's name.
    pub name: String,
    /// The table it indexes.
    pub table: String,
    /// Entries according to the catalog.
    pub entries_in_catalog: u64,
    /// Entries found in its leaves.
    pub entries_found: u64,
    /// Levels, the leaves' included (0 if the root could not be read).
    pub depth: u32,
    /// Pages in its tree.
    pub pages: u64,
}

/// `bytes` as a sound row of `schema`, as `check` holds every row, a heap table's or a clustered
/// table's: long enough, every value inside the row (`check_values`), and every value readable
/// as its getter reads it (`check_values` looks at where a string lies, not at what it holds: a
/// string that is not UTF-8 passed it, and then every read of the row failed).
pub(crate) fn sound_row<'r>(schema: &'r Schema, bytes: &'r [u8], id: RowId) -> Result<RowRef<'r>> {
    let row = RowRef::new(schema, bytes, id)?;
    row.check_values()?;
    for i in 0..schema.columns().len() {
        row.value(i)?;
    }
    Ok(row)
}

/// The row an index entry names: by id (a heap table's), or by its encoded primary key (a
/// clustered table's, in its indexes beside the primary key).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Named {
    Row(RowId),
    Key(Vec<u8>),
}

impl std::fmt::Display for Named {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Named::Row(id) => write!(f, "row {id}"),
            Named::Key(k) => {
                f.write_str("the row of primary key ")?;
                k.iter().try_for_each(|b| write!(f, "{b:02x}"))
            }
        }
    }
}

/// A row's key in an index, and the row.
pub(crate) type KeyedRow = (Vec<u8>, Named);

/// A clustered table's indexes beside its primary key, each with the keys of the rows found in
/// the table's tree so far.
pub(crate) type Secondaries<'s, 'x> = &'s mut [(&'x IndexMeta, Vec<KeyedRow>)];

/// Reads a page for the check: its bytes if they verify (checksum, id), else `None` (the
/// reader reported it).
pub(crate) type ReadPage<'r> = dyn FnMut(u64) -> Result<Option<Vec<u8>>> + 'r;

struct Walk<'a, 'r, 'x> {
    x: &'a IndexMeta,
    /// A clustered table's schema: its leaves hold rows, each checked and held to its key.
    rows: Option<&'a Schema>,
    /// The table's other indexes, given each row's key in them.
    secondaries: Secondaries<'a, 'x>,
    read: &'a mut ReadPage<'r>,
    damage: &'a mut Vec<String>,
    runs: Vec<(u64, u64)>,
    seen: HashSet<u64>,
    /// Leaves in key order: (page, prev, next).
    leaves: Vec<(u64, u64, u64)>,
    entries: Vec<KeyedRow>,
    /// Sound rows found in a clustered table's leaves (they are its entries, and no table apart
    /// from them has rows to agree with, so only their count is kept).
    rows_found: u64,
    depth: Option<u32>,
}

impl Walk<'_, '_, '_> {
    /// Entry `i` of leaf `page` of a clustered table's tree: its value a sound row of `schema`
    /// whose key is the entry's key `k`.
    fn leaf_row(&mut self, schema: &Schema, page: u64, i: usize, k: &[u8], v: &[u8]) {
        let mut key = Vec::new();
        let row = sound_row(schema, v, RowId::KEYED)
            .and_then(|r| key::encode_row(schema, &self.x.columns, &r, &mut key).map(|()| r));
        match row {
            Ok(r) if key == k => {
                self.rows_found += 1;
                for (x, keys) in self.secondaries.iter_mut() {
                    let mut sk = Vec::new();
                    match row_key(x, schema, &r, &mut sk) {
                        Ok(()) => keys.push((sk, Named::Key(k.to_vec()))),
                        Err(e) => self.damage.push(format!(
                            "index {}, page {page}: entry {i}: no key for index {}: {e}",
                            self.x.name, x.name
                        )),
                    }
                }
            }
            Ok(_) => self.damaged(page, format!("entry {i} holds a row of another key")),
            Err(e) => self.damaged(page, format!("entry {i}: {e}")),
        }
    }

    /// The row that spilled entry `i` of leaf `page` (its value `v`) names, read from its chain,
    /// each of whose pages must be the tree's and in it once; `None` where the chain is
    /// damaged (reported) or a page unreadable (reported by the reader).
    fn chain(&mut self, page: u64, i: usize, v: &[u8]) -> Result<Option<Vec<u8>>> {
        let chain = match Chain::decode(v, page) {
            Ok(c) => c,
            Err(e) => {
                self.damaged(page, format!("entry {i}: {e}"));
                return Ok(None);
            }
        };
        let (mut at, mut row) = (chain.first, Vec::new());
        while row.len() < chain.len {
            if !self.runs.iter().any(|&(s, n)| at >= s && at < s + n) {
                self.damaged(page, format!("entry {i}'s chain leads outside the index's pages"));
                return Ok(None);
            }
            if !self.seen.insert(at) {
                self.damaged(page, format!("entry {i}'s chain reaches page {at}, reached before"));
                return Ok(None);
            }
            let Some(bytes) = (self.read)(at)? else { return Ok(None) };
            match spill::piece(&bytes, self.x.id, at, chain.len - row.len()) {
                Ok((piece, next)) => {
                    row.extend_from_slice(piece);
                    at = next;
                }
                Err(e) => {
                    self.damaged(page, format!("entry {i}'s chain: {e}"));
                    return Ok(None);
                }
            }
        }
        Ok(Some(row))
    }

    fn damaged(&mut self, page: u64, what: impl std::fmt::Display) {
        self.damage.push(format!("index {}, page {page}: {what}", self.x.name));
    }

    fn node(
        &mut self,
        page: u64,
        level: Option<u8>,
        lo: &[u8],
        hi: Option<&[u8]>,
        depth: u32,
    ) -> Result<()> {
        if !self.runs.iter().any(|&(s, n)| page >= s && page < s + n) {
            self.damaged(page, "a node outside the index's pages");
            return Ok(());
        }
        if !self.seen.insert(page) {
            self.damaged(page, "a node reached twice");
            return Ok(());
        }
        let Some(bytes) = (self.read)(page)? else { return Ok(()) };
        let n = match Node::new(&bytes, self.x.id, page) {
            Ok(n) => n,
            Err(e) => {
                self.damage.push(format!("index {}: {e}", self.x.name));
                return Ok(());
            }
        };
        if level.is_some_and(|l| l != n.level()) {
            self.damaged(
                page,
                format!("level {} below a node of level {}", n.level(), level.unwrap_or(0) + 1),
            );
            return Ok(());
        }
        // Every entry inside the page, then (key, value, spilled) to hold to the rules.
        let entries: Vec<(&[u8], &[u8], bool)> = match (0..n.len())
            .map(|i| Ok((n.key(i)?, n.value(i)?, n.spilled(i)?)))
            .collect::<Result<_>>()
        {
            Ok(e) => e,
            Err(e) => {
                self.damage.push(format!("index {}: {e}", self.x.name));
                return Ok(());
            }
        };
        match n.head_damage() {
            Ok(None) => {}
            Ok(Some(what)) => self.damaged(page, what),
            Err(e) => self.damage.push(format!("index {}: {e}", self.x.name)),
        }
        // An inner node's entry 0 routes every key below entry 1's whatever its own key (the
        // tree's one irregularity: after the entry before it was removed, a split below it puts
        // its separator at entry 1 by position), so its order is not held against the rest.
        let first = if n.level() == 0 { 1 } else { 2 };
        for i in first..entries.len() {
            if entries[i - 1].0 >= entries[i].0 {
                self.damaged(page, format!("entry {i}'s key is not above entry {}'s", i - 1));
            }
        }
        let outside = |k: &[u8]| k < lo || hi.is_some_and(|h| k >= h);
        if n.level() == 0 {
            if *self.depth.get_or_insert(depth) != depth {
                self.damaged(
                    page,
                    format!("a leaf at depth {depth}, others at {}", self.depth.unwrap_or(0)),
                );
            }
            if entries.iter().any(|e| e.2) && !n.may_spill() {
                self.damaged(page, "a spilled row in a leaf whose flags say it holds none");
            }
            for (i, &(k, v, spilled)) in entries.iter().enumerate() {
                if outside(k) {
                    self.damaged(page, format!("entry {i} outside its parent's separators"));
                }
                match (self.rows, spilled) {
                    (Some(schema), false) => {
                        self.leaf_row(schema, page, i, k, v);
                        continue;
                    }
                    (Some(schema), true) => {
                        if let Some(row) = self.chain(page, i, v)? {
                            self.leaf_row(schema, page, i, k, &row);
                        }
                        continue;
                    }
                    (None, true) => {
                        self.damaged(page, format!("entry {i} is spilled in a tree of no rows"));
                        continue;
                    }
                    (None, false) => {}
                }
                if self.x.keyed {
                    self.entries.push((k.to_vec(), Named::Key(v.to_vec())));
                    continue;
                }
                match entry_row(v, page) {
                    Ok(id) => self.entries.push((k.to_vec(), Named::Row(id))),
                    Err(e) => self.damage.push(e.to_string()),
                }
            }
            self.leaves.push((page, n.prev(), n.next()));
            return Ok(());
        }
        if entries.is_empty() {
            self.damaged(page, "an inner node without entries");
            return Ok(());
        }
        // Entry 0 routes everything below entry 1, whatever its own key.
        for (i, &(k, _, _)) in entries.iter().enumerate().skip(1) {
            if outside(k) {
                self.damaged(page, format!("separator {i} outside its parent's separators"));
            }
        }
        for (i, &(k, v, _)) in entries.iter().enumerate() {
            let child_lo = if i == 0 { lo.to_vec() } else { k.to_vec() };
            let child_hi = match entries.get(i + 1) {
                Some(next) => Some(next.0.to_vec()),
                None => hi.map(<[u8]>::to_vec),
            };
            let child = u64::from_le_bytes(v.try_into().unwrap_or([0; 8]));
            self.node(child, Some(n.level() - 1), &child_lo, child_hi.as_deref(), depth + 1)?;
        }
        Ok(())
    }
}

/// Verifies index `x` against `expected`, the (key, row) of every row of its table, reading
/// pages with `read`; adds what is wrong to `damage`, and the pages of its tree to `in_use`.
/// A clustered table's tree (`rows`: its schema) holds the rows themselves: each is checked
/// and held to its entry's key instead, and gives `secondaries` (the table's other indexes)
/// its key in each.
#[allow(clippy::too_many_arguments)]
pub(crate) fn verify(
    x: &IndexMeta,
    table: &str,
    rows: Option<&Schema>,
    secondaries: Secondaries<'_, '_>,
    mut expected: Vec<KeyedRow>,
    read: &mut ReadPage<'_>,
    damage: &mut Vec<String>,
    in_use: &mut HashSet<u64>,
) -> Result<IndexReport> {
    let mut w = Walk {
        x,
        rows,
        secondaries,
        read,
        damage,
        runs: x.runs(),
        seen: HashSet::new(),
        leaves: Vec::new(),
        entries: Vec::new(),
        rows_found: 0,
        depth: None,
    };
    w.node(x.root, None, &[], None, 1)?;
    let name = &x.name;
    for (i, &(page, prev, next)) in w.leaves.iter().enumerate() {
        let want_prev = if i == 0 { 0 } else { w.leaves[i - 1].0 };
        let want_next = w.leaves.get(i + 1).map_or(0, |l| l.0);
        if (prev, next) != (want_prev, want_next) {
            w.damage.push(format!(
                "index {name}, page {page}: leaf links {prev} and {next}, its neighbours are {want_prev} and {want_next}"
            ));
        }
    }
    let mut free: HashSet<u64> = HashSet::new();
    for &p in x.free_pages.iter().chain(x.pending_free_pages.iter().map(|(_, p)| p)) {
        // Freed twice (a chain two entries named, both removed): two allocations would take it.
        if !free.insert(p) {
            w.damage.push(format!("index {name}, page {p}: free twice"));
        }
    }
    for &(s, n) in &w.runs {
        for p in s..s + n {
            match (w.seen.contains(&p), free.contains(&p)) {
                (true, true) => {
                    w.damage.push(format!("index {name}, page {p}: free and in the tree"))
                }
                (false, false) => {
                    w.damage.push(format!("index {name}, page {p}: neither in the tree nor free"))
                }
                _ => {}
            }
        }
    }
    let found = w.entries.len() as u64 + w.rows_found;
    if found != x.entries {
        w.damage.push(format!(
            "index {name}: the catalog counts {} entries, its leaves hold {found}",
            x.entries
        ));
    }
    let mut entries = std::mem::take(&mut w.entries);
    entries.sort();
    expected.sort();
    let (mut i, mut j, mut shown) = (0, 0, 0);
    while i < entries.len() || j < expected.len() {
        let (e, r) = (entries.get(i), expected.get(j));
        let missing = match (e, r) {
            (Some(e), Some(r)) if e == r => {
                i += 1;
                j += 1;
                continue;
            }
            (Some(e), Some(r)) => r < e,
            (None, _) => true,
            (Some(_), None) => false,
        };
        if shown < 10 {
            w.damage.push(if missing {
                format!("index {name}: {} of {table} has no entry under its key", expected[j].1)
            } else {
                format!(
                    "index {name}: an entry for {}, which is no live row of {table} with that key",
                    entries[i].1
                )
            });
        }
        shown += 1;
        if missing { j += 1 } else { i += 1 }
    }
    if shown > 10 {
        w.damage.push(format!("index {name}: {} more disagreements with its table", shown - 10));
    }
    in_use.extend(w.seen.iter().copied());
    Ok(IndexReport {
        name: x.name.clone(),
        table: table.into(),
        entries_in_catalog: x.entries,
        entries_found: found,
        depth: w.depth.unwrap_or(0),
        pages: w.seen.len() as u64,
    })
}
