//! Table handles, row ids, and the free-space map.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::catalog::{Stamp, TableMeta};
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

impl RowId {
    /// The id of every row of a clustered table ([`Storage::Clustered`]): rows there move as
    /// their leaves split and merge, so they are found and changed by key, and no call that
    /// takes a row id accepts one of them ([`Error::KeyedRows`](crate::Error::KeyedRows)).
    pub const KEYED: RowId = RowId { page: 0, slot: u16::MAX };
}

impl fmt::Display for RowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == RowId::KEYED {
            return f.write_str("keyed");
        }
        write!(f, "{}:{}", self.page, self.slot)
    }
}

/// Where a table keeps its rows ([`WriteTxn::create_table_with`](crate::WriteTxn::create_table_with)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Storage {
    /// On heap pages in the order they came, each row at a stable [`RowId`]; indexes point at
    /// rows by id. Scans of whole tables read the fewest pages.
    #[default]
    Heap,
    /// In the leaves of the primary key's B+tree, whole, in key order: a range of keys is read
    /// from the few leaves that hold it, and a lookup ends in the leaf. Rows are found and
    /// changed by key ([`ReadOps::get_by`](crate::ReadOps::get_by),
    /// [`WriteTxn::update_by`](crate::WriteTxn::update_by), `delete_by`, `upsert` with
    /// [`ReadOps::primary_key`](crate::ReadOps::primary_key)); scans walk the leaves in key
    /// order. The schema must have a primary key.
    Clustered,
}

/// A handle on a table, from [`crate::ReadOps::table`] or [`crate::WriteTxn::create_table`].
/// Cheap to clone.
///
/// A handle names one table for its whole life (docs/design.md, "Handles"): the table it was
/// made for, as the [`Database`](crate::Database) value that made it knows it. Wherever that
/// table does not exist in the transaction's view, every operation given the handle is
/// [`Error::UnknownTable`](crate::Error::UnknownTable): in a read transaction whose snapshot
/// predates its create's commit, after a drop (even where a table of the same name was created
/// since), after its create was rolled back (even where a later create took its id), in another
/// database, and after the database is closed and opened again — take handles again from the
/// new open's transactions ([`crate::ReadOps::table`]). No operation given a handle reaches
/// another table. Its column handles ([`Table::col`]) read only its schema, and keep working.
///
/// A handle from an earlier open is refused even where its table still exists. What a handle
/// carries is a stamp unique in the process, given to the table by the open that read it or the
/// transaction that created it, and never written to disk. A stamp that later opens could trust
/// would have to be durable before `create_table` returns (its handle exists before the
/// transaction commits, and outlives a rollback), and a byte copy of the database, which has its
/// UUID and its stamps, would take the original's handles; taking handles again after an open
/// is one [`crate::ReadOps::table`] call.
#[derive(Clone, Debug)]
pub struct Table {
    pub(crate) id: u32,
    pub(crate) stamp: Stamp,
    name: Arc<str>,
    schema: Schema,
    storage: Storage,
}

impl Table {
    pub(crate) fn from_meta(m: &TableMeta) -> Self {
        Self {
            id: m.id,
            stamp: m.stamp,
            name: m.name.as_str().into(),
            schema: m.schema.clone(),
            storage: m.storage,
        }
    }

    /// Where the table keeps its rows.
    pub fn storage(&self) -> Storage {
        self.storage
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

/// What [`WriteTxn::drop_table`](crate::WriteTxn::drop_table) and
/// [`WriteTxn::drop_index`](crate::WriteTxn::drop_index) drop: by name (from `&str` or
/// `&String`), whatever table or index holds that name in the transaction; by handle (from
/// `&Table` or [`&Index`](crate::Index)), the one the handle was made for, and nothing if that one does not exist
/// in the transaction ([`Error::UnknownTable`](crate::Error::UnknownTable) /
/// [`Error::UnknownIndex`](crate::Error::UnknownIndex)), even if another holds its name now.
#[derive(Clone, Copy, Debug)]
pub enum DropTarget<'a, H> {
    /// The table or index named so.
    Name(&'a str),
    /// The table or index the handle names.
    Handle(&'a H),
}

impl<'a, H> From<&'a str> for DropTarget<'a, H> {
    fn from(name: &'a str) -> Self {
        DropTarget::Name(name)
    }
}

impl<'a, H> From<&'a String> for DropTarget<'a, H> {
    fn from(name: &'a String) -> Self {
        DropTarget::Name(name)
    }
}

impl<'a> From<&'a Table> for DropTarget<'a, Table> {
    fn from(handle: &'a Table) -> Self {
        DropTarget::Handle(handle)
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
