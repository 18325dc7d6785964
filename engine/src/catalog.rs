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
//! ```
//!
//! A table's pages are all the pages of its extents but the last, then the first `used_in_last`
//! pages of the last. Extents double in size (8 pages up to 1024), so a table's pages are few
//! contiguous runs: scans read sequentially and a parallel scan splits runs among workers.

use nvpage_storage::PageId;
use nvpage_storage::page::PAGE_HEADER_LEN;

use crate::error::{Error, Result};
use crate::schema::{Column, ColumnType, Schema};

/// The catalog's first page.
pub const CATALOG_ROOT: PageId = PageId(1);
/// The type byte of a catalog page.
pub const CATALOG_PAGE: u8 = b'C';
const CATALOG_VERSION: u32 = 1;
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

/// One table's entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableMeta {
    /// The table's id (never reused).
    pub id: u32,
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

    /// The table's pages as runs `(first, count)`.
    pub fn runs(&self) -> Vec<(u64, u64)> {
        let n = self.extents.len();
        self.extents
            .iter()
            .enumerate()
            .map(|(i, e)| (e.start, u64::from(if i + 1 == n { self.used_in_last } else { e.len })))
            .filter(|r| r.1 > 0)
            .collect()
    }

    /// Number of pages in use.
    pub fn page_count(&self) -> u64 {
        self.runs().iter().map(|r| r.1).sum()
    }
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
    /// The catalog's own pages, root first (not serialized: read off the chain when loading).
    pub chain: Vec<u64>,
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
    /// The catalog as one blob.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&CATALOG_VERSION.to_le_bytes());
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
        out
    }

    /// Decodes a blob; any inconsistency is [`Error::CorruptCatalog`].
    pub fn decode(b: &[u8], page_count: u64, chain: Vec<u64>) -> Result<Self> {
        let mut r = Reader { b, at: 0 };
        if r.u32()? != CATALOG_VERSION {
            return Err(corrupt("unknown catalog version"));
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
                    .ok_or_else(|| corrupt("unknown column type"))?;
                let nullable = r.u8()? != 0;
                cols.push(Column { name: cname, ty, nullable });
            }
            let schema = Schema::new(cols).map_err(|e| corrupt(&e.to_string()))?;
            let rows = r.u64()?;
            let extents = r.extents()?;
            let used_in_last = r.u32()?;
            tables.push(TableMeta { id, name, schema, rows, extents, used_in_last });
        }
        let cat = Catalog { next_table_id, free, pending_free: Vec::new(), tables, chain };
        cat.check(page_count)?;
        Ok(cat)
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

    /// The table named `name`.
    pub fn table(&self, name: &str) -> Option<&TableMeta> {
        self.tables.iter().find(|t| t.name == name)
    }

    /// The table with id `id`.
    pub fn table_mut(&mut self, id: u32) -> Option<&mut TableMeta> {
        self.tables.iter_mut().find(|t| t.id == id)
    }

    /// Makes the runs freed by commits at or below `oldest` (the oldest live snapshot, or the
    /// last commit with no reader) free to reuse: no live snapshot reads them any more.
    pub fn release_free(&mut self, oldest: u64) {
        let (ready, waiting): (Vec<_>, Vec<_>) =
            self.pending_free.drain(..).partition(|&(k, _)| k <= oldest);
        self.pending_free = waiting;
        self.free.extend(ready.into_iter().map(|(_, e)| e));
    }

    /// Takes `len` pages from the free runs, if one is long enough.
    pub fn take_free(&mut self, len: u32) -> Option<u64> {
        let i = self.free.iter().position(|e| e.len >= len)?;
        let e = &mut self.free[i];
        let start = e.start;
        e.start += u64::from(len);
        e.len -= len;
        if e.len == 0 {
            self.free.remove(i);
        }
        Some(start)
    }
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

    #[test]
    fn round_trip_and_damage() {
        let schema = Schema::new(vec![
            Column::new("a", ColumnType::I64),
            Column::nullable("b", ColumnType::VarChar { max_len: 40 }),
            Column::new("c", ColumnType::Decimal { scale: 2 }),
        ])
        .unwrap();
        let cat = Catalog {
            next_table_id: 3,
            free: vec![Extent { start: 100, len: 8 }],
            pending_free: Vec::new(),
            tables: vec![TableMeta {
                id: 2,
                name: "t".into(),
                schema,
                rows: 5,
                extents: vec![Extent { start: 2, len: 8 }, Extent { start: 10, len: 16 }],
                used_in_last: 3,
            }],
            chain: vec![1],
        };
        let blob = cat.encode();
        assert_eq!(Catalog::decode(&blob, 200, vec![1]).unwrap(), cat);
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
}
