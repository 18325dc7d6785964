//! The catalog: tables, their schemas and pages, and the free extents, serialized into a chain
//! of catalog pages starting at page 1.
//!
//! ```text
//! catalog page: | envelope 16 | 'C' | 3 unused | chunk len u32 | next page u64 | chunk ... |
//!                 0             16    17         20              24              32
//!
//! blob (the chunks concatenated):
//!   version u32 | next table id u32 | free extent count u32 | (start u64, len u32)* |
//!   table count u32 | table*
//! table:
//!   id u32 | name len u8 | name | column count u16 | column* | row count u64 |
//!   extent count u32 | (start u64, len u32)* | pages used in the last extent u32
//! column:
//!   name len u8 | name | type tag u8 | type param u16 | nullable u8
//! index (version 2 on):
//!   id u32 | name len u8 | name | table id u32 | column count u16 | column u16* |
//!   kind u8 (0 non-unique, 1 unique, 2 primary key, 3 a clustered table's primary key,
//!            4 non-unique and 5 unique of a clustered table) |
//!   root u64 | entries u64 |
//!   extent count u32 | (start u64, len u32)* | pages used in the last extent u32 |
//!   free page count u32 | page u64*
//! ```
//!
//! A table's primary key is not written with its schema: it is its index of kind 2 or 3, whose
//! columns the schema takes back when the catalog is read. A table whose key is of kind 3 is
//! clustered: its rows are that tree's leaf values, and it has no extents of its own. Its other
//! indexes are of kind 4 or 5 (and a heap table's never are): their leaf values are the rows'
//! encoded primary keys, which their keys end with where a heap table's index keys end with a
//! row id (see `index/mod.rs`).
//!
//! A table's pages are all the pages of its extents but the last, then the first `used_in_last`
//! pages of the last. Extents double in size (8 pages up to 1024), so a table's pages are few
//! contiguous runs: scans read sequentially and a parallel scan splits runs among workers.

use std::sync::atomic::{AtomicU64, Ordering};

use nvpage_storage::PageId;
use nvpage_storage::page::PAGE_HEADER_LEN;

use crate::error::{Error, Result};
use crate::index::node::LeafValues;
use crate::schema::{Column, ColumnType, Schema};
use crate::table::Storage;

/// The catalog's first page.
pub const CATALOG_ROOT: PageId = PageId(1);
/// The type byte of a catalog page.
pub const CATALOG_PAGE: u8 = b'C';
/// Version 2 added the indexes; version 3 changed their pages (a prefix and key heads in the
/// slot array, `index/node.rs`); version 4 added the flags word (`FLAG_COUNTS_STALE`). Catalogs
/// of versions 1 and 2 without indexes are still read, and those before 4 have exact counts; a
/// version-2 catalog with indexes is [`Error::IncompatibleFormat`] (its index pages are in the
/// old format). Version 5 added the column types `Bool`, `I16`, `F64`, `Timestamp` and `Binary`
/// (type tags 7 to 11): a catalog is written as version 5 only while a table has a column of one
/// of them, and as version 4 otherwise, so that a database that uses none of them still opens
/// with builds from before them (which refuse version 5 as an unknown version). Version 6 added
/// primary keys: an index's kind byte is 2 for a table's primary key (0 and 1 as before). A
/// catalog is written as version 6 only while a table has a primary key, by the same rule.
/// Version 7 added the kind bytes 4 and 5, indexes of a clustered table beside its primary key,
/// whose leaves hold primary keys instead of row ids: a catalog is written as version 7 only
/// while such an index exists, so that builds from before them refuse it as an unknown version
/// rather than read those leaves as row ids.
const CATALOG_VERSION: u32 = 7;
/// The version a catalog without indexes of kind 4 or 5 is written as, where a table has a
/// primary key.
const CATALOG_VERSION_WITHOUT_KEYED_INDEXES: u32 = 6;
/// The version a catalog with the types of version 5 and no primary key is written as.
const CATALOG_VERSION_WITHOUT_PRIMARY_KEYS: u32 = 5;
/// The version a catalog without the types of version 5 is written as.
const CATALOG_VERSION_WITHOUT_NEW_TYPES: u32 = 4;
/// An index's kind byte: a table's primary key (version 6 on).
const KIND_PRIMARY: u8 = 2;
/// An index's kind byte: a clustered table's primary key, whose leaves hold its rows (version 6
/// on).
const KIND_CLUSTERED: u8 = 3;
/// An index's kind byte: a non-unique index of a clustered table, whose leaf values are primary
/// keys (version 7 on); the unique one is `KIND_KEYED + 1`.
const KIND_KEYED: u8 = 4;
/// The largest column type tag of catalogs before version 5.
const LAST_TAG_BEFORE_5: u8 = 6;
/// The flag of a catalog whose counts (rows, index entries) may be behind the data: see
/// [`Catalog::counts_stale`].
const FLAG_COUNTS_STALE: u32 = 1;
const CHUNK_LEN_OFFSET: usize = PAGE_HEADER_LEN + 4;
const NEXT_OFFSET: usize = CHUNK_LEN_OFFSET + 4;
const DATA_OFFSET: usize = NEXT_OFFSET + 8;
const _: () = assert!(DATA_OFFSET == 32);

/// The first extent of a table, in pages.
pub const FIRST_EXTENT: u32 = 8;
/// The largest extent, in pages.
pub const MAX_EXTENT: u32 = 1024;

/// A run of contiguous pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// The first page.
    pub start: u64,
    /// Pages in the run.
    pub len: u32,
}

/// What a [`Table`](crate::Table) or [`Index`](crate::Index) handle names (DESIGN.md R9): one
/// table or index as one open of one database knows it. In memory only. Every entry an open
/// reads from the file, and every one a transaction creates, takes a stamp no entry has had in
/// this process (a process-wide counter, so never twice whatever commits, aborts, drops or opens
/// come after); a handle carries its entry's stamp, and finds the entry with that stamp in its
/// transaction's catalog or none. Ids cannot serve: the writer hands out the next id from its
/// private catalog, which an abort throws away, so the next create takes the same id again;
/// and two databases, or two opens of one, number their entries alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp(u64);

impl Stamp {
    /// A stamp no entry has had in this process.
    pub fn fresh() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Stamp(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// One table's entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableMeta {
    /// The table's id: never reused by a committed table (ids of creates that were rolled back
    /// are handed out again).
    pub id: u32,
    /// What its handles carry (in memory only).
    pub stamp: Stamp,
    /// Its name.
    pub name: String,
    /// Its schema.
    pub schema: Schema,
    /// Live rows.
    pub rows: u64,
    /// Its pages, in allocation order.
    pub extents: Vec<Extent>,
    /// Pages taken from the last extent.
    pub used_in_last: u32,
    /// Where its rows live (not written: a clustered table is one whose primary key is of kind
    /// 3, and it has no extents of its own).
    pub storage: Storage,
}

impl TableMeta {
    /// The table's pages, in order.
    pub fn pages(&self) -> impl Iterator<Item = PageId> + '_ {
        let n = self.extents.len();
        self.extents.iter().enumerate().flat_map(move |(i, e)| {
            let len = if i + 1 == n { self.used_in_last } else { e.len };
            (e.start..e.start + u64::from(len)).map(PageId)
        })
    }

    /// Whether page `p` is one of the table's pages in use (no allocation: a row read's check).
    pub fn holds(&self, p: u64) -> bool {
        holds(&self.extents, self.used_in_last, p)
    }

    /// The table's pages as runs `(first, count)`.
    pub fn runs(&self) -> Vec<(u64, u64)> {
        runs(&self.extents, self.used_in_last)
    }

    /// Number of pages in use.
    pub fn page_count(&self) -> u64 {
        self.runs().iter().map(|r| r.1).sum()
    }
}

/// One index's entry: a B+tree over some of a table's columns (see `index/`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexMeta {
    /// The index's id, from the same counter as tables' (never reused by a committed table or
    /// index).
    pub id: u32,
    /// What its handles carry (in memory only).
    pub stamp: Stamp,
    /// Its name (unique among indexes).
    pub name: String,
    /// The table it indexes.
    pub table_id: u32,
    /// The key's columns, by position in the table's schema.
    pub columns: Vec<u16>,
    /// Whether a key may appear once only.
    pub unique: bool,
    /// Whether it is its table's primary key (unique too): made and dropped with the table.
    pub primary: bool,
    /// Whether it is a clustered table's primary key, whose leaves hold the table's rows.
    pub clustered: bool,
    /// Whether it is another index of a clustered table (kind 4 or 5), whose rows have no ids:
    /// each leaf entry's value is its row's encoded primary key, which the entry's key ends with
    /// where a heap table's index key ends with a row id.
    pub keyed: bool,
    /// The root page (a leaf while the tree has one level).
    pub root: u64,
    /// Entries (one per row of the table).
    pub entries: u64,
    /// Its pages, in allocation order (as a table's).
    pub extents: Vec<Extent>,
    /// Pages taken from the last extent.
    pub used_in_last: u32,
    /// Pages of its extents that the tree let go, free to reuse.
    pub free_pages: Vec<u64>,
    /// Pages let go by commit `k` that a snapshot older than `k` may still read (R6): free on
    /// disk, reused only once the oldest live snapshot is at least `k`. In memory only.
    pub pending_free_pages: Vec<(u64, u64)>,
}

impl IndexMeta {
    /// What its leaves hold beside the keys: a clustered table's rows, or (its other indexes)
    /// primary keys, else row ids.
    pub fn leaf_values(&self) -> LeafValues {
        if self.clustered || self.keyed { LeafValues::Sized } else { LeafValues::RowIds }
    }

    /// Pages taken from its extents (in the tree or free).
    pub fn page_count(&self) -> u64 {
        let n = self.extents.len();
        self.extents
            .iter()
            .enumerate()
            .map(|(i, e)| u64::from(if i + 1 == n { self.used_in_last } else { e.len }))
            .sum()
    }

    /// Its pages' runs `(first, count)`, as a table's (pages in use and free ones).
    pub fn runs(&self) -> Vec<(u64, u64)> {
        runs(&self.extents, self.used_in_last)
    }

    /// Whether page `p` is one it has taken from its extents (in its tree, or free).
    pub fn holds(&self, p: u64) -> bool {
        holds(&self.extents, self.used_in_last, p)
    }
}

fn holds(extents: &[Extent], used_in_last: u32, p: u64) -> bool {
    let n = extents.len();
    extents.iter().enumerate().any(|(i, e)| {
        let len = if i + 1 == n { used_in_last } else { e.len };
        p >= e.start && p < e.start + u64::from(len)
    })
}

fn runs(extents: &[Extent], used_in_last: u32) -> Vec<(u64, u64)> {
    let n = extents.len();
    extents
        .iter()
        .enumerate()
        .map(|(i, e)| (e.start, u64::from(if i + 1 == n { used_in_last } else { e.len })))
        .filter(|r| r.1 > 0)
        .collect()
}

/// The whole catalog, in memory.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Catalog {
    /// The next table id to hand out.
    pub next_table_id: u32,
    /// Runs of pages freed by dropped tables, free to reuse.
    pub free: Vec<Extent>,
    /// Runs freed by commit `k` that a live snapshot older than `k` may still read (DESIGN.md
    /// R6): free on disk, reused only once the oldest live snapshot is at least `k`. In memory
    /// only; a catalog read from the file has none.
    pub pending_free: Vec<(u64, Extent)>,
    /// The tables, in creation order.
    pub tables: Vec<TableMeta>,
    /// The indexes, in creation order.
    pub indexes: Vec<IndexMeta>,
    /// The catalog's own pages, root first (not serialized: read off the chain when loading).
    pub chain: Vec<u64>,
    /// Whether the counts the file holds (each table's rows, each index's entries) may be
    /// behind the data. A commit that changes only counts does not write the catalog once the
    /// file says so (a catalog page per small transaction was about a third of a single-row
    /// insert's commit); the first commit to change a count after the file said they were exact
    /// writes the catalog with this flag, atomically with its rows. A clean close
    /// ([`Database::close`](crate::Database::close), or dropping the handle) writes them exact,
    /// and an open that finds the flag counts the rows again (`db.rs`). In memory the counts are
    /// always exact; the flag is the file's state as of the published catalog.
    pub counts_stale: bool,
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let s = self.b.get(self.at..self.at + n).ok_or_else(|| corrupt("blob ends early"))?;
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes")))
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    fn name(&mut self) -> Result<String> {
        let n = usize::from(self.u8()?);
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| corrupt("a name is not UTF-8"))
    }
    fn indexes(&mut self, version: u32) -> Result<Vec<IndexMeta>> {
        let n = self.u32()? as usize;
        let mut out = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            let id = self.u32()?;
            let name = self.name()?;
            let table_id = self.u32()?;
            let ncols = usize::from(self.u16()?);
            let columns = (0..ncols).map(|_| self.u16()).collect::<Result<Vec<_>>>()?;
            let kind = self.u8()?;
            let last = if version >= 7 { KIND_KEYED + 1 } else { KIND_CLUSTERED };
            if version >= 6 && kind > last {
                return Err(corrupt("unknown index kind"));
            }
            let clustered = version >= 6 && kind == KIND_CLUSTERED;
            let primary = version >= 6 && (kind == KIND_PRIMARY || clustered);
            let keyed = version >= 7 && kind >= KIND_KEYED;
            let unique = kind != 0 && kind != KIND_KEYED;
            let root = self.u64()?;
            let entries = self.u64()?;
            let extents = self.extents()?;
            let used_in_last = self.u32()?;
            let nfree = self.u32()? as usize;
            if nfree > self.b.len() / 8 {
                return Err(corrupt("free page count larger than the blob"));
            }
            let free_pages = (0..nfree).map(|_| self.u64()).collect::<Result<Vec<_>>>()?;
            out.push(IndexMeta {
                id,
                stamp: Stamp::fresh(),
                name,
                table_id,
                columns,
                unique,
                primary,
                clustered,
                keyed,
                root,
                entries,
                extents,
                used_in_last,
                free_pages,
                pending_free_pages: Vec::new(),
            });
        }
        Ok(out)
    }

    fn extents(&mut self) -> Result<Vec<Extent>> {
        let n = self.u32()? as usize;
        if n > self.b.len() / 12 {
            return Err(corrupt("extent count larger than the blob"));
        }
        (0..n).map(|_| Ok(Extent { start: self.u64()?, len: self.u32()? })).collect()
    }
}

fn corrupt(why: &str) -> Error {
    Error::CorruptCatalog(why.to_string())
}

fn put_extents(out: &mut Vec<u8>, ex: &[Extent]) {
    out.extend_from_slice(&(ex.len() as u32).to_le_bytes());
    for e in ex {
        out.extend_from_slice(&e.start.to_le_bytes());
        out.extend_from_slice(&e.len.to_le_bytes());
    }
}

impl Catalog {
    /// Whether `self` differs from `other` in more than its counts (rows, index entries) and
    /// their flag: whether a commit must write it whatever the flag says. Every field is named
    /// (no `..`), so a field added to a catalog entry must be placed here to compile.
    pub fn differs_beyond_counts(&self, other: &Catalog) -> bool {
        let Catalog { next_table_id, free, pending_free, tables, indexes, chain, counts_stale: _ } =
            self;
        let same_table = |a: &TableMeta, b: &TableMeta| {
            // Stamps are not written: an entry created again differs in its id too.
            let TableMeta { id, stamp: _, name, schema, rows: _, extents, used_in_last, storage } =
                a;
            *id == b.id
                && *name == b.name
                && *schema == b.schema
                && *extents == b.extents
                && *used_in_last == b.used_in_last
                && *storage == b.storage
        };
        let same_index = |a: &IndexMeta, b: &IndexMeta| {
            let IndexMeta {
                id,
                stamp: _,
                name,
                table_id,
                columns,
                unique,
                primary,
                clustered,
                keyed,
                root,
                entries: _,
                extents,
                used_in_last,
                free_pages,
                pending_free_pages,
            } = a;
            *id == b.id
                && *name == b.name
                && *table_id == b.table_id
                && *columns == b.columns
                && *unique == b.unique
                && *primary == b.primary
                && *clustered == b.clustered
                && *keyed == b.keyed
                && *root == b.root
                && *extents == b.extents
                && *used_in_last == b.used_in_last
                && *free_pages == b.free_pages
                && *pending_free_pages == b.pending_free_pages
        };
        !(*next_table_id == other.next_table_id
            && *free == other.free
            && *pending_free == other.pending_free
            && *chain == other.chain
            && tables.len() == other.tables.len()
            && tables.iter().zip(&other.tables).all(|(a, b)| same_table(a, b))
            && indexes.len() == other.indexes.len()
            && indexes.iter().zip(&other.indexes).all(|(a, b)| same_index(a, b)))
    }

    /// Whether any table's row count or index's entry count differs from `other`'s.
    pub fn counts_differ(&self, other: &Catalog) -> bool {
        self.tables.len() != other.tables.len()
            || self.indexes.len() != other.indexes.len()
            || self.tables.iter().zip(&other.tables).any(|(a, b)| a.rows != b.rows)
            || self.indexes.iter().zip(&other.indexes).any(|(a, b)| a.entries != b.entries)
    }

    /// The catalog as one blob.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let new_types = self
            .tables
            .iter()
            .flat_map(|t| t.schema.columns())
            .any(|c| c.ty.tag() > LAST_TAG_BEFORE_5);
        let version = if self.indexes.iter().any(|x| x.keyed) {
            CATALOG_VERSION
        } else if self.indexes.iter().any(|x| x.primary) {
            CATALOG_VERSION_WITHOUT_KEYED_INDEXES
        } else if new_types {
            CATALOG_VERSION_WITHOUT_PRIMARY_KEYS
        } else {
            CATALOG_VERSION_WITHOUT_NEW_TYPES
        };
        out.extend_from_slice(&version.to_le_bytes());
        let flags = if self.counts_stale { FLAG_COUNTS_STALE } else { 0 };
        out.extend_from_slice(&flags.to_le_bytes());
        out.extend_from_slice(&self.next_table_id.to_le_bytes());
        let free: Vec<Extent> =
            self.free.iter().copied().chain(self.pending_free.iter().map(|&(_, e)| e)).collect();
        put_extents(&mut out, &free);
        out.extend_from_slice(&(self.tables.len() as u32).to_le_bytes());
        for t in &self.tables {
            out.extend_from_slice(&t.id.to_le_bytes());
            out.push(t.name.len() as u8);
            out.extend_from_slice(t.name.as_bytes());
            out.extend_from_slice(&(t.schema.columns().len() as u16).to_le_bytes());
            for c in t.schema.columns() {
                out.push(c.name.len() as u8);
                out.extend_from_slice(c.name.as_bytes());
                out.push(c.ty.tag());
                out.extend_from_slice(&c.ty.param().to_le_bytes());
                out.push(u8::from(c.nullable));
            }
            out.extend_from_slice(&t.rows.to_le_bytes());
            put_extents(&mut out, &t.extents);
            out.extend_from_slice(&t.used_in_last.to_le_bytes());
        }
        out.extend_from_slice(&(self.indexes.len() as u32).to_le_bytes());
        for x in &self.indexes {
            out.extend_from_slice(&x.id.to_le_bytes());
            out.push(x.name.len() as u8);
            out.extend_from_slice(x.name.as_bytes());
            out.extend_from_slice(&x.table_id.to_le_bytes());
            out.extend_from_slice(&(x.columns.len() as u16).to_le_bytes());
            for c in &x.columns {
                out.extend_from_slice(&c.to_le_bytes());
            }
            out.push(match (x.clustered, x.primary, x.keyed) {
                (true, _, _) => KIND_CLUSTERED,
                (false, true, _) => KIND_PRIMARY,
                (false, false, true) => KIND_KEYED + u8::from(x.unique),
                (false, false, false) => u8::from(x.unique),
            });
            out.extend_from_slice(&x.root.to_le_bytes());
            out.extend_from_slice(&x.entries.to_le_bytes());
            put_extents(&mut out, &x.extents);
            out.extend_from_slice(&x.used_in_last.to_le_bytes());
            let free: Vec<u64> = x
                .free_pages
                .iter()
                .copied()
                .chain(x.pending_free_pages.iter().map(|&(_, p)| p))
                .collect();
            out.extend_from_slice(&(free.len() as u32).to_le_bytes());
            for p in free {
                out.extend_from_slice(&p.to_le_bytes());
            }
        }
        out
    }

    /// Decodes a blob; any inconsistency is [`Error::CorruptCatalog`].
    pub fn decode(b: &[u8], page_count: u64, chain: Vec<u64>) -> Result<Self> {
        let mut r = Reader { b, at: 0 };
        let version = r.u32()?;
        if version > CATALOG_VERSION && version < 1 << 16 {
            return Err(Error::IncompatibleFormat(format!(
                "its catalog is version {version}, written by a newer nvpage; this build reads \
                 versions up to {CATALOG_VERSION}"
            )));
        }
        if version == 0 || version > CATALOG_VERSION {
            return Err(corrupt("unknown catalog version"));
        }
        let flags = if version >= 4 { r.u32()? } else { 0 };
        if flags & !FLAG_COUNTS_STALE != 0 {
            return Err(corrupt("unknown catalog flags"));
        }
        let next_table_id = r.u32()?;
        let free = r.extents()?;
        let n = r.u32()? as usize;
        let mut tables = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            let id = r.u32()?;
            let name = r.name()?;
            let ncols = usize::from(r.u16()?);
            let mut cols = Vec::with_capacity(ncols);
            for _ in 0..ncols {
                let cname = r.name()?;
                let (tag, param) = (r.u8()?, r.u16()?);
                let ty = ColumnType::from_tag(tag, param)
                    .filter(|_| version >= 5 || tag <= LAST_TAG_BEFORE_5)
                    .ok_or_else(|| corrupt("unknown column type"))?;
                let nullable = r.u8()? != 0;
                cols.push(Column { name: cname, ty, nullable });
            }
            let schema = Schema::new(cols).map_err(|e| corrupt(&e.to_string()))?;
            let rows = r.u64()?;
            let extents = r.extents()?;
            let used_in_last = r.u32()?;
            tables.push(TableMeta {
                id,
                stamp: Stamp::fresh(),
                name,
                schema,
                rows,
                extents,
                used_in_last,
                storage: Storage::Heap,
            });
        }
        let indexes = if version >= 2 { r.indexes(version)? } else { Vec::new() };
        if version == 2 && !indexes.is_empty() {
            return Err(Error::IncompatibleFormat(format!(
                "its {} index(es) have pages in the format of catalog version 2, and this nvpage \
                 reads version {CATALOG_VERSION} (index pages with key heads): drop the indexes \
                 with the nvpage that wrote the file, then create them again with this one",
                indexes.len()
            )));
        }
        let counts_stale = flags & FLAG_COUNTS_STALE != 0;
        let mut cat = Catalog {
            next_table_id,
            free,
            pending_free: Vec::new(),
            tables,
            indexes,
            chain,
            counts_stale,
        };
        cat.check(page_count)?;
        cat.attach_primary_keys()?;
        Ok(cat)
    }

    /// Gives each table with a primary-key index that key in its schema: one such index at
    /// most per table, its columns NOT NULL as the schema was written. Then holds every other
    /// index to its table's storage: those of a clustered table hold primary keys (kind 4 or 5),
    /// those of a heap table row ids.
    fn attach_primary_keys(&mut self) -> Result<()> {
        for x in self.indexes.iter().filter(|x| x.primary) {
            let t = self
                .tables
                .iter_mut()
                .find(|t| t.id == x.table_id)
                .expect("check found every index's table");
            let columns = t.schema.columns();
            if t.schema.primary_key().is_some()
                || x.columns.iter().any(|&c| columns[usize::from(c)].nullable)
            {
                return Err(corrupt("a second primary key, or one over a nullable column"));
            }
            if x.clustered && !t.extents.is_empty() {
                return Err(corrupt("a clustered table with heap pages"));
            }
            let key = x.columns.iter().map(|&c| usize::from(c)).collect();
            t.schema = t.schema.with_key_positions(key).map_err(|e| corrupt(&e.to_string()))?;
            if x.clustered {
                t.storage = Storage::Clustered;
            }
        }
        for x in self.indexes.iter().filter(|x| !x.primary) {
            let clustered = self.clustered_tree_ix(x.table_id).is_some();
            if x.keyed != clustered {
                return Err(corrupt(if x.keyed {
                    "an index of primary keys on a heap table"
                } else {
                    "an index of row ids on a clustered table"
                }));
            }
        }
        Ok(())
    }

    /// Every extent inside the file, none overlapping, ids below the next id, names unique.
    fn check(&self, page_count: u64) -> Result<()> {
        let mut all: Vec<Extent> = self.free.clone();
        all.extend(self.pending_free.iter().map(|&(_, e)| e));
        all.extend(self.chain.iter().skip(1).map(|&p| Extent { start: p, len: 1 }));
        for (i, t) in self.tables.iter().enumerate() {
            if t.id >= self.next_table_id
                || self.tables[..i].iter().any(|u| u.id == t.id || u.name == t.name)
            {
                return Err(corrupt("duplicate or out-of-range table"));
            }
            if t.extents.last().is_some_and(|e| t.used_in_last > e.len) {
                return Err(corrupt("more pages used than the last extent has"));
            }
            all.extend_from_slice(&t.extents);
        }
        for (i, x) in self.indexes.iter().enumerate() {
            let table = self.table_by_id(x.table_id);
            let columns_ok = table.is_some_and(|t| {
                !x.columns.is_empty()
                    && x.columns.iter().all(|&c| usize::from(c) < t.schema.columns().len())
            });
            if !columns_ok
                || x.id >= self.next_table_id
                || self.tables.iter().any(|t| t.id == x.id)
                || self.indexes[..i].iter().any(|y| y.id == x.id || y.name == x.name)
            {
                return Err(corrupt(
                    "an index of no table, a column past its schema, or a duplicate",
                ));
            }
            if x.extents.last().is_some_and(|e| x.used_in_last > e.len) {
                return Err(corrupt("more index pages used than the last extent has"));
            }
            let inside = |p: u64| x.runs().iter().any(|&(s, n)| p >= s && p < s + n);
            if !inside(x.root) || !x.free_pages.iter().all(|&p| inside(p) && p != x.root) {
                return Err(corrupt("an index's root or free page outside its extents"));
            }
            all.extend_from_slice(&x.extents);
        }
        all.sort_by_key(|e| e.start);
        let mut end = CATALOG_ROOT.0 + 1;
        for e in &all {
            let e_end = e.start.checked_add(u64::from(e.len)).filter(|&x| x <= page_count);
            let Some(e_end) = e_end.filter(|_| e.start >= end) else {
                return Err(corrupt("extents overlap or pass the page count"));
            };
            end = e_end;
        }
        Ok(())
    }

    /// The position among the indexes of the tree that holds clustered table `table_id`'s rows.
    pub fn clustered_tree_ix(&self, table_id: u32) -> Option<usize> {
        self.indexes.iter().position(|x| x.table_id == table_id && x.clustered)
    }

    /// The tree that holds clustered table `table_id`'s rows (none for a heap table).
    pub fn clustered_tree(&self, table_id: u32) -> Option<&IndexMeta> {
        self.clustered_tree_ix(table_id).map(|i| &self.indexes[i])
    }

    /// The table named `name`.
    pub fn table(&self, name: &str) -> Option<&TableMeta> {
        self.tables.iter().find(|t| t.name == name)
    }

    /// The index named `name`.
    pub fn index(&self, name: &str) -> Option<&IndexMeta> {
        self.indexes.iter().find(|x| x.name == name)
    }

    /// The table with id `id`.
    pub fn table_by_id(&self, id: u32) -> Option<&TableMeta> {
        self.tables.iter().find(|t| t.id == id)
    }

    /// The table a handle stamped `stamp` names, if this catalog has it.
    pub fn table_by_stamp(&self, stamp: Stamp) -> Option<&TableMeta> {
        self.tables.iter().find(|t| t.stamp == stamp)
    }

    /// The index a handle stamped `stamp` names, if this catalog has it.
    pub fn index_by_stamp(&self, stamp: Stamp) -> Option<&IndexMeta> {
        self.indexes.iter().find(|x| x.stamp == stamp)
    }

    /// The table a handle stamped `stamp` names, to change.
    pub fn table_by_stamp_mut(&mut self, stamp: Stamp) -> Option<&mut TableMeta> {
        self.tables.iter_mut().find(|t| t.stamp == stamp)
    }

    /// Makes the runs freed by commits at or below `oldest` (the oldest live snapshot, or the
    /// last commit with no reader) free to reuse: no live snapshot reads them any more.
    pub fn release_free(&mut self, oldest: u64) {
        let (ready, waiting): (Vec<_>, Vec<_>) =
            self.pending_free.drain(..).partition(|&(k, _)| k <= oldest);
        self.pending_free = waiting;
        self.free.extend(ready.into_iter().map(|(_, e)| e));
        for x in &mut self.indexes {
            let (ready, waiting): (Vec<_>, Vec<_>) =
                x.pending_free_pages.drain(..).partition(|&(k, _)| k <= oldest);
            x.pending_free_pages = waiting;
            x.free_pages.extend(ready.into_iter().map(|(_, p)| p));
        }
    }

    /// Takes `len` pages from the free runs, if one is long enough.
    pub fn take_free(&mut self, len: u32) -> Option<u64> {
        take_run(&mut self.free, len)
    }
}

fn take_run(free: &mut Vec<Extent>, len: u32) -> Option<u64> {
    let i = free.iter().position(|e| e.len >= len)?;
    let e = &mut free[i];
    let start = e.start;
    e.start += u64::from(len);
    e.len -= len;
    if e.len == 0 {
        free.remove(i);
    }
    Some(start)
}

/// The next page for a table or an index whose pages are `extents` (`used_in_last` of the last
/// taken): the next page of its last extent, else the first of a new extent twice as long as
/// the last (from `FIRST_EXTENT` to `MAX_EXTENT` pages), taken from the free runs `free`, else
/// from `grow(len)`, which grows the file by `len` pages and returns the first new one.
pub fn next_page(
    extents: &mut Vec<Extent>,
    used_in_last: &mut u32,
    free: &mut Vec<Extent>,
    grow: impl FnOnce(u32) -> Result<u64>,
) -> Result<u64> {
    if let Some(e) = extents.last()
        && *used_in_last < e.len
    {
        let p = e.start + u64::from(*used_in_last);
        *used_in_last += 1;
        return Ok(p);
    }
    let len = (FIRST_EXTENT << extents.len().min(7)).min(MAX_EXTENT);
    let start = match take_run(free, len) {
        Some(s) => s,
        None => grow(len)?,
    };
    extents.push(Extent { start, len });
    *used_in_last = 1;
    Ok(start)
}

/// Writes a blob chunk into a catalog page.
pub fn write_chunk(page: &mut [u8], chunk: &[u8], next: u64) {
    page[PAGE_HEADER_LEN..].fill(0);
    page[PAGE_HEADER_LEN] = CATALOG_PAGE;
    page[CHUNK_LEN_OFFSET..NEXT_OFFSET].copy_from_slice(&(chunk.len() as u32).to_le_bytes());
    page[NEXT_OFFSET..DATA_OFFSET].copy_from_slice(&next.to_le_bytes());
    page[DATA_OFFSET..DATA_OFFSET + chunk.len()].copy_from_slice(chunk);
}

/// Bytes of blob one catalog page holds.
pub fn chunk_capacity(page_size: usize) -> usize {
    page_size - DATA_OFFSET
}

/// Reads a catalog page: its chunk and the next page (0: none).
pub fn read_chunk(page: &[u8], id: PageId) -> Result<(&[u8], u64)> {
    if page[PAGE_HEADER_LEN] != CATALOG_PAGE {
        return Err(Error::CorruptPage { page: id.0, reason: "not a catalog page".into() });
    }
    let len =
        u32::from_le_bytes(page[CHUNK_LEN_OFFSET..NEXT_OFFSET].try_into().expect("4")) as usize;
    let next = u64::from_le_bytes(page[NEXT_OFFSET..DATA_OFFSET].try_into().expect("8"));
    let chunk = page.get(DATA_OFFSET..DATA_OFFSET + len).ok_or_else(|| Error::CorruptPage {
        page: id.0,
        reason: "chunk longer than the page".into(),
    })?;
    Ok((chunk, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cat` with every stamp 0, to compare a decoded catalog with the one encoded.
    fn unstamped(mut cat: Catalog) -> Catalog {
        cat.tables.iter_mut().for_each(|t| t.stamp = Stamp(0));
        cat.indexes.iter_mut().for_each(|x| x.stamp = Stamp(0));
        cat
    }

    #[test]
    fn round_trip_and_damage() {
        let schema = Schema::new(vec![
            Column::new("a", ColumnType::I64),
            Column::nullable("b", ColumnType::VarChar { max_len: 40 }),
            Column::new("c", ColumnType::Decimal { scale: 2 }),
        ])
        .unwrap();
        let cat = Catalog {
            next_table_id: 5,
            free: vec![Extent { start: 100, len: 8 }],
            pending_free: Vec::new(),
            indexes: vec![IndexMeta {
                id: 4,
                stamp: Stamp(0),
                name: "t_a".into(),
                table_id: 2,
                columns: vec![0, 2],
                unique: true,
                primary: false,
                clustered: false,
                keyed: false,
                root: 121,
                entries: 5,
                extents: vec![Extent { start: 120, len: 8 }],
                used_in_last: 3,
                free_pages: vec![122],
                pending_free_pages: Vec::new(),
            }],
            tables: vec![TableMeta {
                id: 2,
                stamp: Stamp(0),
                name: "t".into(),
                schema,
                rows: 5,
                extents: vec![Extent { start: 2, len: 8 }, Extent { start: 10, len: 16 }],
                used_in_last: 3,
                storage: Storage::Heap,
            }],
            chain: vec![1],
            counts_stale: false,
        };
        let blob = cat.encode();
        // Stamps are not written: each decode gives its entries stamps never seen before.
        let (a, b) = (Catalog::decode(&blob, 200, vec![1]), Catalog::decode(&blob, 200, vec![1]));
        let (a, b) = (a.unwrap(), b.unwrap());
        assert!(a.tables[0].stamp != b.tables[0].stamp && a.indexes[0].stamp != b.indexes[0].stamp);
        assert_ne!(a.tables[0].stamp, a.indexes[0].stamp);
        assert_eq!(unstamped(a), cat);
        // The counts' flag round-trips; a version-3 catalog (no flags word) has exact counts;
        // an unknown flag is an error.
        let stale = Catalog { counts_stale: true, ..cat.clone() };
        assert_eq!(unstamped(Catalog::decode(&stale.encode(), 200, vec![1]).unwrap()), stale);
        let v3: Vec<u8> =
            3u32.to_le_bytes().into_iter().chain(stale.encode()[8..].to_vec()).collect();
        assert_eq!(unstamped(Catalog::decode(&v3, 200, vec![1]).unwrap()), cat);
        let mut odd = blob.clone();
        odd[4] = 2;
        assert!(Catalog::decode(&odd, 200, vec![1]).is_err());
        // Counts alone are not a change of structure; an extent is.
        let mut counted = cat.clone();
        counted.tables[0].rows = 6;
        counted.indexes[0].entries = 6;
        counted.counts_stale = true;
        assert!(!counted.differs_beyond_counts(&cat) && counted.counts_differ(&cat));
        let mut grown = cat.clone();
        grown.tables[0].used_in_last = 4;
        assert!(grown.differs_beyond_counts(&cat) && !grown.counts_differ(&cat));
        assert_eq!(cat.tables[0].pages().count(), 11);
        // Extents past the page count, truncated blobs: errors, never panics.
        assert!(Catalog::decode(&blob, 50, vec![1]).is_err());
        // A chain page inside a table's extent is an overlap.
        assert!(Catalog::decode(&blob, 200, vec![1, 12]).is_err());
        // An extent whose end overflows a u64 is an error, not a panic.
        let mut far = cat.clone();
        far.free = vec![Extent { start: u64::MAX - 1, len: 8 }];
        assert!(Catalog::decode(&far.encode(), 200, vec![1]).is_err());
        for cut in 0..blob.len() {
            assert!(Catalog::decode(&blob[..cut], 200, vec![1]).is_err());
        }
    }

    /// A catalog is version 5 only while a column has a type version 5 added; a version-4
    /// catalog naming such a type is damage; a version past this build's is refused as newer.
    #[test]
    fn version_5_only_for_the_types_it_added() {
        let table = |ty| TableMeta {
            id: 1,
            stamp: Stamp(0),
            name: "t".into(),
            schema: Schema::new(vec![Column::new("a", ColumnType::I64), Column::new("b", ty)])
                .unwrap(),
            rows: 0,
            extents: Vec::new(),
            used_in_last: 0,
            storage: Storage::Heap,
        };
        let cat = |ty| Catalog {
            next_table_id: 2,
            free: Vec::new(),
            pending_free: Vec::new(),
            indexes: Vec::new(),
            tables: vec![table(ty)],
            chain: vec![1],
            counts_stale: false,
        };
        let version = |b: &[u8]| u32::from_le_bytes(b[..4].try_into().unwrap());
        assert_eq!(version(&cat(ColumnType::Date).encode()), 4);
        let new_types = [
            ColumnType::Bool,
            ColumnType::I16,
            ColumnType::F64,
            ColumnType::Timestamp,
            ColumnType::Binary { max_len: 9 },
        ];
        for ty in new_types {
            let blob = cat(ty).encode();
            assert_eq!(version(&blob), 5, "{ty}");
            assert_eq!(unstamped(Catalog::decode(&blob, 10, vec![1]).unwrap()), cat(ty));
            let mut as_4 = blob.clone();
            as_4[..4].copy_from_slice(&4u32.to_le_bytes());
            assert!(matches!(Catalog::decode(&as_4, 10, vec![1]), Err(Error::CorruptCatalog(_))));
        }
        let mut newer = cat(ColumnType::Bool).encode();
        newer[..4].copy_from_slice(&8u32.to_le_bytes());
        let e = Catalog::decode(&newer, 10, vec![1]).unwrap_err();
        assert!(matches!(e, Error::IncompatibleFormat(_)), "{e}");
        assert!(e.to_string().contains("newer nvpage"), "{e}");
    }

    /// A catalog is version 6 only while a table has a primary key, written as its index's kind
    /// byte 2: the schema read back has the key (its columns NOT NULL); a kind 2 in an earlier
    /// version is an ordinary unique index, a second primary key of one table or one over a
    /// nullable column is damage.
    #[test]
    fn version_6_only_for_primary_keys() {
        let plain = Schema::new(vec![
            Column::new("a", ColumnType::I64),
            Column::nullable("b", ColumnType::VarChar { max_len: 9 }),
        ])
        .unwrap();
        let keyed = plain.with_primary_key(&["a"]).unwrap();
        let index = |id, name: &str, columns, primary| IndexMeta {
            id,
            stamp: Stamp(0),
            name: name.into(),
            table_id: 1,
            columns,
            unique: true,
            primary,
            clustered: false,
            keyed: false,
            root: 20,
            entries: 0,
            extents: vec![Extent { start: 20 + u64::from(id) * 8, len: 8 }],
            used_in_last: 1,
            free_pages: Vec::new(),
            pending_free_pages: Vec::new(),
        };
        let cat = |schema: &Schema, indexes: Vec<IndexMeta>| {
            let mut indexes = indexes;
            for x in &mut indexes {
                x.root = x.extents[0].start;
            }
            Catalog {
                next_table_id: 9,
                free: Vec::new(),
                pending_free: Vec::new(),
                indexes,
                tables: vec![TableMeta {
                    id: 1,
                    stamp: Stamp(0),
                    name: "t".into(),
                    schema: schema.clone(),
                    rows: 0,
                    extents: Vec::new(),
                    used_in_last: 0,
                    storage: Storage::Heap,
                }],
                chain: vec![1],
                counts_stale: false,
            }
        };
        let version = |b: &[u8]| u32::from_le_bytes(b[..4].try_into().unwrap());
        let with_key = cat(&keyed, vec![index(2, "t_pkey", vec![0], true)]);
        let blob = with_key.encode();
        assert_eq!(version(&blob), 6);
        let read = Catalog::decode(&blob, 100, vec![1]).unwrap();
        assert_eq!(read.tables[0].schema.primary_key(), Some(&[0][..]));
        assert_eq!(unstamped(read), with_key);
        // Without a primary key, the version is as before.
        let unique = cat(&keyed, vec![index(2, "t_a", vec![0], false)]);
        assert_eq!(version(&unique.encode()), 4);
        let read = Catalog::decode(&unique.encode(), 100, vec![1]).unwrap();
        assert_eq!(read.tables[0].schema.primary_key(), None);
        // Kind 2 read as version 5: a unique index, no primary key.
        let mut as_5 = blob.clone();
        as_5[..4].copy_from_slice(&5u32.to_le_bytes());
        let read = Catalog::decode(&as_5, 100, vec![1]).unwrap();
        assert!(read.indexes[0].unique && !read.indexes[0].primary);
        assert_eq!(read.tables[0].schema.primary_key(), None);
        // Two primary keys of one table; one over a nullable column.
        let two = cat(
            &keyed,
            vec![index(2, "t_pkey", vec![0], true), index(3, "t_other", vec![0], true)],
        );
        let e = Catalog::decode(&two.encode(), 100, vec![1]).unwrap_err();
        assert!(matches!(e, Error::CorruptCatalog(_)), "{e}");
        let nullable = cat(&plain, vec![index(2, "t_pkey", vec![1], true)]);
        let e = Catalog::decode(&nullable.encode(), 100, vec![1]).unwrap_err();
        assert!(matches!(e, Error::CorruptCatalog(_)), "{e}");
    }

    /// A catalog is version 7 only while a clustered table has an index beside its primary key
    /// (kind 4 or 5, read back as `keyed`); such a kind on a heap table, or a row-id index on a
    /// clustered table, is damage.
    #[test]
    fn version_7_only_for_indexes_of_clustered_tables() {
        let schema = Schema::new(vec![
            Column::new("a", ColumnType::I64),
            Column::nullable("b", ColumnType::VarChar { max_len: 9 }),
        ])
        .unwrap()
        .with_primary_key(&["a"])
        .unwrap();
        let index = |id: u32, name: &str, columns, unique, clustered, keyed| IndexMeta {
            id,
            stamp: Stamp(0),
            name: name.into(),
            table_id: 1,
            columns,
            unique,
            primary: clustered,
            clustered,
            keyed,
            root: 20 + u64::from(id) * 8,
            entries: 0,
            extents: vec![Extent { start: 20 + u64::from(id) * 8, len: 8 }],
            used_in_last: 1,
            free_pages: Vec::new(),
            pending_free_pages: Vec::new(),
        };
        let cat = |indexes: Vec<IndexMeta>| Catalog {
            next_table_id: 9,
            free: Vec::new(),
            pending_free: Vec::new(),
            indexes,
            tables: vec![TableMeta {
                id: 1,
                stamp: Stamp(0),
                name: "t".into(),
                schema: schema.clone(),
                rows: 0,
                extents: Vec::new(),
                used_in_last: 0,
                storage: Storage::Clustered,
            }],
            chain: vec![1],
            counts_stale: false,
        };
        let version = |b: &[u8]| u32::from_le_bytes(b[..4].try_into().unwrap());
        let pkey = || index(2, "t_pkey", vec![0], true, true, false);
        let alone = cat(vec![pkey()]);
        assert_eq!(version(&alone.encode()), 6);
        for unique in [false, true] {
            let both = cat(vec![pkey(), index(3, "t_b", vec![1], unique, false, true)]);
            let blob = both.encode();
            assert_eq!(version(&blob), 7);
            let read = Catalog::decode(&blob, 100, vec![1]).unwrap();
            assert_eq!(read.indexes[1].leaf_values(), LeafValues::Sized);
            assert_eq!(unstamped(read), both);
        }
        // A row-id index on a clustered table; an index of primary keys on a heap table.
        let row_ids = cat(vec![pkey(), index(3, "t_b", vec![1], false, false, false)]);
        let e = Catalog::decode(&row_ids.encode(), 100, vec![1]).unwrap_err();
        assert!(matches!(e, Error::CorruptCatalog(_)), "{e}");
        let mut heap = cat(vec![index(3, "t_b", vec![1], false, false, true)]);
        heap.tables[0].storage = Storage::Heap;
        let e = Catalog::decode(&heap.encode(), 100, vec![1]).unwrap_err();
        assert!(matches!(e, Error::CorruptCatalog(_)), "{e}");
    }
}
