//! Table handles, row ids, and the free-space map.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::catalog::TableMeta;
use crate::error::Result;
use crate::row::{Col, Kind};
use crate::schema::Schema;

/// Where a row lives: its page and its slot there. Stable while the row lives, except that an
/// update that no longer fits its page moves the row and returns its new id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RowId {
    /// The heap page.
    pub page: u64,
    /// The slot in the page.
    pub slot: u16,
}

impl fmt::Display for RowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.page, self.slot)
    }
}

/// A handle on a table, from [`crate::ReadOps::table`]. Cheap to clone; valid across
/// transactions for as long as the table exists.
#[derive(Clone, Debug)]
pub struct Table {
    pub(crate) id: u32,
    name: Arc<str>,
    schema: Schema,
}

impl Table {
    pub(crate) fn from_meta(m: &TableMeta) -> Self {
        Self { id: m.id, name: m.name.as_str().into(), schema: m.schema.clone() }
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// A typed handle on column `name` (checked once here; see [`Col`]).
    pub fn col<K: Kind>(&self, name: &str) -> Result<Col<K>> {
        Col::new(&self.schema, name)
    }
}

/// Pages are kept in the map only while at least this fraction of them is free. A load leaves
/// each page with less than that, so the map stays small and an insert's search ends at the last
/// page; space freed by deletes is reused once a page has this much room.
const FSM_MIN_FREE_FRACTION: usize = 8;

/// A table's free space, in memory: which pages have room for how many bytes. Complete when it
/// was built from every page of the table (or the table was created in this process); else only
/// the last page is tried before it is built. Dropped with every other cached value on abort.
#[derive(Debug, Default)]
pub(crate) struct Fsm {
    pub(crate) complete: bool,
    pub(crate) free: BTreeMap<u64, usize>,
}

impl Fsm {
    pub(crate) fn complete() -> Self {
        Self { complete: true, free: BTreeMap::new() }
    }

    /// Records page `page`'s free bytes (`page_size` bytes a page).
    pub(crate) fn set(&mut self, page: u64, free: usize, page_size: usize) {
        if free >= page_size / FSM_MIN_FREE_FRACTION {
            self.free.insert(page, free);
        } else {
            self.free.remove(&page);
        }
    }

    /// A page that may hold `need` bytes, the newest first: during a load the last page is the
    /// one with room, so the search ends at once.
    pub(crate) fn find(&self, need: usize) -> Option<u64> {
        self.free.iter().rev().find(|(_, f)| **f >= need).map(|(p, _)| *p)
    }
}
