//! Valid inputs for each fuzz target, made with the real code paths (a real log, a real data
//! file and its pages, real rows), so the fuzzers start from the bytes the engine writes. The
//! corpus in `fuzz/corpus/<target>/seed-*` is written from these by
//! `cargo test -p nvpage-tests --test fuzz_corpus_replay -- --ignored write_seed_corpus`.

use nvpage::fuzzing;
use nvpage::{Date, Decimal, Layer, Value};
use nvpage_storage::PageId;
use nvpage_wal::layout::DATA_OFFSET;
use nvpage_wal::{CreateOptions, Framing, Log, Uuid};

use crate::fuzz_bodies::scratch_tempdir;
use crate::model::{Row, schema};

/// A real record log of 8 KiB with a few records (empty, short, one page-image-sized), and the
/// same log rewound twice with one record of the new generation (stale records behind it).
pub fn real_logs() -> Vec<Vec<u8>> {
    let dir = scratch_tempdir();
    let mut out = Vec::new();
    for (i, framing) in [Framing::Records, Framing::Raw].into_iter().enumerate() {
        let path = dir.path().join(format!("log{i}"));
        let opts = CreateOptions { framing, ..CreateOptions::new(Uuid::from_bytes([3; 16])) };
        let log = Log::create(&path, 8192, &opts).expect("create a log");
        let image: Vec<u8> = (0..700u32).map(|b| b as u8).collect();
        for p in [&b""[..], b"hello", &image, b"the last record"] {
            log.append_record(p).or_else(|_| log.append(p)).expect("append");
        }
        drop(log);
        out.push(std::fs::read(&path).expect("read the log"));
        if framing == Framing::Records {
            let mut log = Log::open(&path).expect("reopen");
            log.rewind().expect("rewind");
            log.rewind().expect("rewind");
            log.append_record(b"new generation").expect("append");
            drop(log);
            out.push(std::fs::read(&path).expect("read the log"));
        }
    }
    out
}

/// A real database's data file (4 KiB pages): a model table with short and long rows, and a
/// wide table of every column type.
pub fn real_data_file() -> Vec<u8> {
    let dir = scratch_tempdir();
    let db = crate::fuzz_bodies::db_open_builder(Layer::Pread).open(dir.path()).expect("create");
    let mut tx = db.begin_write().expect("begin");
    let t = tx.create_table("items", schema()).expect("create table");
    for k in 0..12i64 {
        let note = match k % 3 {
            0 => None,
            1 => Some("short".to_string()),
            _ => Some("L".repeat(300)),
        };
        let row = Row { id: nvpage::RowId { page: 0, slot: 0 }, qty: k as i32 * 3, note };
        tx.insert(&t, &row.values(k)).expect("insert");
    }
    let wide = tx
        .create_table("wide", crate::fuzz_bodies::row_schemas()[1].clone())
        .expect("create the wide table");
    for k in 0..3 {
        tx.insert(&wide, &wide_values(k)).expect("insert a wide row");
    }
    tx.commit().expect("commit");
    drop(db);
    let mut file = std::fs::read(dir.path().join(nvpage::DATA_FILE)).expect("read the data file");
    // The file grows ahead of its page count; the pages past it are never read.
    let page_count = u64::from_le_bytes(file[32..40].try_into().unwrap());
    file.truncate(page_count as usize * 4096);
    file
}

/// The page size of the databases the seeds are read from.
const SEED_PAGE: usize = 4096;

/// A new database in `dir` for seeds: pread, [`SEED_PAGE`]-byte pages, a 1 MiB pool.
fn seed_db(dir: &std::path::Path) -> nvpage::Database {
    nvpage::Database::builder()
        .layer(Layer::Pread)
        .page_size(SEED_PAGE as u64)
        .pool_bytes(1 << 20)
        .open(dir)
        .expect("create")
}

/// The index nodes (page type `X`) of the closed database in `dir`, with their page ids.
fn index_nodes(dir: &std::path::Path) -> Vec<Page> {
    let file = std::fs::read(dir.join(nvpage::DATA_FILE)).expect("read the data file");
    let page_count = u64::from_le_bytes(file[32..40].try_into().unwrap()) as usize;
    (0..page_count)
        .map(|p| (p as u64, file[p * SEED_PAGE..(p + 1) * SEED_PAGE].to_vec()))
        .filter(|(_, page)| page[16] == b'X')
        .collect()
}

/// The index nodes of the closed database in `dir` that hold sized values (byte 29: a
/// clustered table's tree, or an index beside its primary key).
fn sized_nodes(dir: &std::path::Path) -> Vec<Page> {
    index_nodes(dir).into_iter().filter(|(_, page)| page[29] == 1).collect()
}

/// The index pages of a real database (4 KiB pages), with their page ids: a table of long
/// names sharing a 150-byte prefix (so separators are long and the trees have inner nodes)
/// under a unique index on its integer key kept row by row as the rows are inserted, and a
/// non-unique index on the names (keys end with the row id) built bottom up on the loaded
/// table.
pub fn real_index_pages() -> Vec<(u64, Vec<u8>)> {
    let dir = scratch_tempdir();
    let db = seed_db(dir.path());
    let schema = nvpage::Schema::new(vec![
        nvpage::Column::new("id", nvpage::ColumnType::I64),
        nvpage::Column::new("name", nvpage::ColumnType::VarChar { max_len: 200 }),
    ])
    .expect("a schema");
    let mut tx = db.begin_write().expect("begin");
    let t = tx.create_table("t", schema).expect("create table");
    tx.create_unique_index("t_id", &t, &["id"]).expect("create an index");
    for k in 0..400i64 {
        let name = format!("{}{:05}", "n".repeat(150), (k * 7919) % 10_007);
        tx.insert(&t, &[Value::I64(k), Value::Str(&name)]).expect("insert");
    }
    tx.create_index("t_name", &t, &["name"]).expect("create an index");
    tx.commit().expect("commit");
    drop(db);
    index_nodes(dir.path())
}

/// `index_page` inputs: flags, index id, page id, key, page.
fn index_input(flags: u8, index_id: u32, id: u64, key: &[u8], page: &[u8]) -> Vec<u8> {
    let mut v = vec![flags];
    v.extend_from_slice(&index_id.to_le_bytes());
    v.extend_from_slice(&id.to_le_bytes());
    v.push(key.len().min(255) as u8);
    v.extend_from_slice(&key[..key.len().min(255)]);
    v.extend_from_slice(page);
    v
}

/// Seeds for `index_page`: a leaf and an inner node of each index, searched for and added to
/// (a new key, one they hold, an entry removed first, the node filled until the next insert
/// splits it), and damaged copies (an entry count too
/// large, a slot past the page, slots sharing one entry, keys out of order, a leaf's level
/// byte 255, free end below the slots, a heap page's type, another index's id, a key head not
/// its key's).
fn index_seeds() -> Vec<Vec<u8>> {
    const EDIT: u8 = 8;
    const REMOVE: u8 = 16;
    // Index pages' slots: from byte 64, 6 bytes each (entry offset u16, key head).
    const SLOTS: usize = 64;
    const SLOT: usize = 6;
    let u16_at = |p: &[u8], at: usize| usize::from(u16::from_le_bytes([p[at], p[at + 1]]));
    let pages = real_index_pages();
    let owner = |p: &[u8]| u32::from_le_bytes(p[24..28].try_into().unwrap());
    let mut owners: Vec<u32> = pages.iter().map(|(_, p)| owner(p)).collect();
    owners.sort_unstable();
    owners.dedup();
    // One leaf and one inner node of each index.
    let picked = owners.iter().flat_map(|&x| {
        let of = |inner: bool| pages.iter().find(|(_, p)| owner(p) == x && (p[17] > 0) == inner);
        [of(false), of(true)].into_iter().flatten()
    });
    let mut out = Vec::new();
    for (id, page) in picked.filter(|(_, p)| u16_at(p, 18) > 0) {
        let index_id = u32::from_le_bytes(page[24..28].try_into().unwrap());
        let first = u16_at(page, SLOTS);
        let first_key = &page[first + 2..first + 2 + u16_at(page, first)];
        let mut new_key = first_key.to_vec();
        new_key.push(0x7F);
        out.push(index_input(0, index_id, *id, first_key, page));
        out.push(index_input(EDIT, index_id, *id, &new_key, page));
        out.push(index_input(EDIT | REMOVE | 4, 0, *id, &new_key, page));
        out.push(index_input(EDIT, index_id, *id, first_key, page));
        // The node filled by the writer's inserts until one more splits it.
        let (full, key) = fill(page, index_id, *id, first_key);
        out.push(index_input(EDIT, index_id, *id, &key, &full));
        let count = u16_at(page, 18);
        let mut damaged: Vec<Vec<u8>> = Vec::new();
        let mut p = page.clone();
        p[18..20].copy_from_slice(&(count as u16 + 1).to_le_bytes());
        damaged.push(p);
        let mut p = page.clone();
        p[SLOTS..SLOTS + 2].copy_from_slice(&4094u16.to_le_bytes());
        damaged.push(p);
        // As many slots as fit below entry 0, all on it: more bytes than the page holds.
        let mut p = page.clone();
        let shared = (first - SLOTS) / SLOT;
        for i in 1..shared {
            p.copy_within(SLOTS..SLOTS + SLOT, SLOTS + SLOT * i);
        }
        p[18..20].copy_from_slice(&(shared as u16).to_le_bytes());
        p[20..24].copy_from_slice(&((SLOTS + SLOT * shared) as u32).to_le_bytes());
        damaged.push(p);
        let mut p = page.clone();
        for b in 0..SLOT {
            p.swap(SLOTS + b, SLOTS + SLOT + b);
        }
        damaged.push(p);
        let mut p = page.clone();
        p[SLOTS + 2] ^= 0x80;
        damaged.push(p);
        let mut p = page.clone();
        p[17] = 255;
        damaged.push(p);
        let mut p = page.clone();
        p[20..24].copy_from_slice(&40u32.to_le_bytes());
        damaged.push(p);
        let mut p = page.clone();
        p[16] = b'H';
        damaged.push(p);
        for d in damaged {
            out.push(index_input(EDIT, index_id, *id, &new_key, &d));
        }
        out.push(index_input(0, index_id + 1, *id, first_key, page));
    }
    out.extend(sized_leaf_seeds());
    out.extend(keyed_seeds());
    out
}

/// Seeds of a leaf whose values carry their own length (a clustered table's rows): searched,
/// added to, an entry removed, a value's length damaged past the page, an unknown kind.
fn sized_leaf_seeds() -> Vec<Vec<u8>> {
    const EDIT: u8 = 8;
    const REMOVE: u8 = 16;
    let (index_id, id) = (7u32, 9u64);
    // An empty leaf: type, free end, index id, and leaf values of kind 1 (sized).
    let mut leaf = vec![0u8; 4096];
    leaf[16] = b'X';
    leaf[20..24].copy_from_slice(&4096u32.to_le_bytes());
    leaf[24..28].copy_from_slice(&index_id.to_le_bytes());
    leaf[29] = 1;
    let mut right = vec![0u8; 4096];
    for i in 0..40u8 {
        let value = vec![i; usize::from(i) * 3];
        let mut next = leaf.clone();
        match fuzzing::index_insert(&mut next, index_id, id, &[1, i, i], &value, false, &mut right)
        {
            Ok(None) => leaf = next,
            Ok(Some(_)) => break,
            Err(e) => panic!("an insert into a leaf of sized values: {e}"),
        }
    }
    let mut out = vec![
        index_input(0, index_id, id, &[1, 3, 3], &leaf),
        index_input(EDIT, index_id, id, &[1, 5, 0], &leaf),
        index_input(EDIT | REMOVE, index_id, id, &[1, 200], &leaf),
    ];
    let first = usize::from(u16::from_le_bytes([leaf[64], leaf[65]]));
    let mut long = leaf.clone();
    // The first entry's value length (after its 2-byte key length and 3-byte key).
    long[first + 5..first + 7].copy_from_slice(&5000u16.to_le_bytes());
    out.push(index_input(EDIT, index_id, id, &[1, 6], &long));
    let mut unknown = leaf;
    unknown[29] = 9;
    out.push(index_input(EDIT, index_id, id, &[1, 6], &unknown));
    out
}

/// A page's id and its bytes.
pub type Page = (u64, Vec<u8>);

/// A change to a page's bytes.
type Damage = Box<dyn Fn(&mut [u8])>;

/// The nodes of the trees of three clustered tables (4 KiB pages), one database for each schema
/// of [`crate::fuzz_bodies::clustered_schemas`], with their page ids: rows of varying length
/// loaded in key order, then rows inserted between them and some deleted, so that each tree
/// has inner nodes and leaves filled both by a load and by splits; schema 2's, of
/// [`real_keyed_nodes`], with spilled rows. Each as (schema, nodes).
pub fn real_clustered_leaves() -> Vec<(u8, Vec<Page>)> {
    let mut out = Vec::new();
    for (schema, rows) in [(0u8, 900i64), (1, 700)] {
        let dir = scratch_tempdir();
        let db = seed_db(dir.path());
        let mut tx = db.begin_write().expect("begin");
        let s = crate::fuzz_bodies::clustered_schemas()[usize::from(schema)].clone();
        let t = tx.create_table_with("t", s, nvpage::Storage::Clustered).expect("create table");
        let pk = nvpage::ReadOps::primary_key(&tx, &t).expect("a key").expect("the key");
        // Even keys in order, then odd keys among them; every seventh even key deleted.
        let keys = (0..rows).map(|i| 2 * i).chain((rows / 4..rows / 2).map(|i| 2 * i + 1));
        for k in keys {
            let name = clustered_name(k);
            tx.insert(&t, &clustered_values(schema, k, &name)).expect("insert");
        }
        for i in (0..rows).step_by(7) {
            let key = if schema == 0 { Value::I64(2 * i) } else { Value::I32(2 * i as i32) };
            tx.delete_by(&pk, &[key]).expect("delete");
        }
        tx.commit().expect("commit");
        drop(db);
        let nodes = sized_nodes(dir.path());
        out.push((schema, nodes));
    }
    out.push((2, real_keyed_nodes().0));
    out
}

/// Key `k`'s string: 0 to 239 letters (schema 0's name), or 0 to 59 (schema 1's note).
fn clustered_name(k: i64) -> String {
    (0..(k * 37) % 240).map(|j| char::from(b'a' + ((k + j) % 26) as u8)).collect()
}

/// The row of key `k` in a table of clustered schema `schema`, its string `name`.
fn clustered_values(schema: u8, k: i64, name: &str) -> Vec<Value<'_>> {
    if schema == 0 {
        let amount = if k % 5 == 0 { Value::Null } else { Value::Decimal(Decimal::new(k * 3, 2)) };
        return vec![Value::I64(k), Value::Str(name), Value::I32((k % 7) as i32), amount];
    }
    let blob: &'static [u8] = &[0, 0xFF, 7, 0x80, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
    vec![
        Value::I32(k as i32),
        Value::Bool(k % 2 == 0),
        Value::Str(["ab", "abcd", "", "x y"][(k % 4) as usize]),
        if k % 3 == 0 { Value::Null } else { Value::Str(&name[..name.len().min(60)]) },
        if k % 4 == 0 { Value::Null } else { Value::Bytes(&blob[..(k % 16) as usize]) },
        Value::Timestamp(nvpage::Timestamp(k * 1_000_003)),
        if k % 5 == 0 { Value::Null } else { Value::F64(k as f64 / 3.0) },
    ]
}

/// `clustered_leaf` inputs: flags, tree id, page id, page.
fn clustered_input(flags: u8, tree: u32, id: u64, page: &[u8]) -> Vec<u8> {
    let mut v = vec![flags];
    v.extend_from_slice(&tree.to_le_bytes());
    v.extend_from_slice(&id.to_le_bytes());
    v.extend_from_slice(page);
    v
}

/// Seeds for `clustered_leaf`: the first, a middle and the last leaf of each table and an
/// inner node, read with their own tree's id; and the middle leaf read as another tree's, with
/// the other schema, and damaged: two entries swapped, an entry count too large, a value's
/// length past the page and shorter than a row, leaf values of row ids and of an unknown kind,
/// a level of 1, an entry marked spilled (its value cut to a reference's 12 bytes, and to 13),
/// and (schema 0) a string's offset past its row and a string not UTF-8.
fn clustered_seeds() -> Vec<Vec<u8>> {
    const OWN_TREE: u8 = 4;
    const SCHEMA_1: u8 = 8;
    const SCHEMA_2: u8 = 16;
    // Leaf slots: from byte 64, 6 bytes each (entry offset u16, key head); an entry is key
    // length u16, key, value length u16, value.
    const SLOTS: usize = 64;
    const SLOT: usize = 6;
    let u16_at = |p: &[u8], at: usize| usize::from(u16::from_le_bytes([p[at], p[at + 1]]));
    // Where entry `i` keeps its value's length.
    let len_at = |p: &[u8], i: usize| {
        let off = u16_at(p, SLOTS + SLOT * i);
        off + 2 + u16_at(p, off)
    };
    let mut out = Vec::new();
    for (schema, nodes) in real_clustered_leaves() {
        let flags = [0, SCHEMA_1, SCHEMA_2][usize::from(schema)];
        let leaves: Vec<&Page> = nodes.iter().filter(|(_, p)| p[17] == 0).collect();
        let inner = nodes.iter().find(|(_, p)| p[17] > 0).expect("a tree with inner nodes");
        // Schema 2's middle leaf is one of those holding spilled rows.
        let spilling: Vec<&Page> =
            leaves.iter().copied().filter(|(_, p)| !spilled_entries(p).is_empty()).collect();
        let mid = if schema == 2 { spilling[spilling.len() / 2] } else { leaves[leaves.len() / 2] };
        for (id, page) in [leaves[0], mid, leaves[leaves.len() - 1], inner] {
            out.push(clustered_input(flags | OWN_TREE, 0, *id, page));
        }
        let (id, page) = mid;
        let tree = u32::from_le_bytes(page[24..28].try_into().unwrap());
        out.push(clustered_input(flags, tree + 1, *id, page));
        let other = if schema == 0 { SCHEMA_1 } else { 0 };
        out.push(clustered_input(other | OWN_TREE, 0, *id, page));
        // The first entry after entry 0 whose row is longer than any row's fixed area.
        let d = (1..u16_at(page, 18)).find(|&i| u16_at(page, len_at(page, i)) > 40).unwrap();
        let at = len_at(page, d);
        let row = at + 2;
        let mut damaged: Vec<Damage> = vec![
            Box::new(|p| {
                for b in 0..SLOT {
                    p.swap(SLOTS + b, SLOTS + SLOT + b);
                }
            }),
            Box::new(|p| {
                let count = u16::from_le_bytes([p[18], p[19]]);
                p[18..20].copy_from_slice(&(count + 1).to_le_bytes());
            }),
            Box::new(move |p| p[at..at + 2].copy_from_slice(&u16::MAX.to_le_bytes())),
            Box::new(move |p| p[at..at + 2].copy_from_slice(&3u16.to_le_bytes())),
            Box::new(|p| p[29] = 0),
            Box::new(|p| p[29] = 7),
            Box::new(|p| p[17] = 1),
            // The top bit of a value's length marks a spilled row's reference; byte 30's bit 0
            // says the leaf may hold one.
            Box::new(move |p| {
                p[at..at + 2].copy_from_slice(&(0x8000u16 | 12).to_le_bytes());
                p[30] |= 1;
            }),
            Box::new(move |p| p[at..at + 2].copy_from_slice(&(0x8000u16 | 13).to_le_bytes())),
        ];
        if schema == 0 {
            // Schema 0's row: a null bitmap byte, the key (8 bytes), the name's slot (offset
            // from the row's start u16, length u16).
            let slot = row + 9;
            let string = row + u16_at(page, slot);
            damaged.push(Box::new(move |p| {
                p[slot..slot + 2].copy_from_slice(&0xFFF0u16.to_le_bytes())
            }));
            damaged.push(Box::new(move |p| p[string] = 0xFF));
        }
        if schema == 2 {
            // A spilled entry's reference (row length u32, first page u64) cut short, naming no
            // chain, of an empty row; the entry unmarked (its 12 bytes read as a row); the
            // leaf's flag that announces spilled entries cleared.
            let at = len_at(page, spilled_entries(page)[0]);
            let reference = at + 2;
            damaged.push(Box::new(move |p| {
                p[at..at + 2].copy_from_slice(&(0x8000u16 | 11).to_le_bytes())
            }));
            damaged.push(Box::new(move |p| p[reference + 4..reference + 12].fill(0)));
            damaged.push(Box::new(move |p| p[reference..reference + 4].fill(0)));
            damaged.push(Box::new(move |p| p[at + 1] &= 0x7F));
            damaged.push(Box::new(|p| p[30] &= !1));
        }
        for damage in damaged {
            let mut p = page.clone();
            damage(&mut p);
            out.push(clustered_input(flags | OWN_TREE, 0, *id, &p));
        }
    }
    out
}

/// The entries of `page` (a leaf of sized values) marked spilled: the top bit of a value's
/// length (`u16` after the key), and by position.
fn spilled_entries(page: &[u8]) -> Vec<usize> {
    let u16_at = |at: usize| usize::from(u16::from_le_bytes([page[at], page[at + 1]]));
    (0..u16_at(18))
        .filter(|&i| {
            let off = u16_at(64 + 6 * i);
            u16_at(off + 2 + u16_at(off)) & 0x8000 != 0
        })
        .collect()
}

/// The nodes of a clustered table with indexes beside its primary key (4 KiB pages), with their
/// page ids, as (the primary key's nodes, the other indexes' nodes): schema 2 of
/// [`crate::fuzz_bodies::clustered_schemas`], a unique index on the nullable code kept row by
/// row as rows are inserted out of key order, and a non-unique one on group and name (names
/// sharing a 100-byte prefix, so separators are long) built bottom up over the rows; then some
/// rows deleted and some notes changed. One row in four spills to overflow pages, and some
/// grow into or shrink out of them. Every node of the three trees holds sized values: rows
/// (or spilled rows' references) in the primary key's leaves, primary keys in the others'.
pub fn real_keyed_nodes() -> (Vec<Page>, Vec<Page>) {
    let dir = scratch_tempdir();
    let db = seed_db(dir.path());
    let s = crate::fuzz_bodies::clustered_schemas()[2].clone();
    let mut tx = db.begin_write().expect("begin");
    let t = tx.create_table_with("t", s, nvpage::Storage::Clustered).expect("create table");
    tx.create_unique_index("t_code", &t, &["code"]).expect("create an index");
    // Row k's note: 1,000 to 3,799 letters (the row spills) or fewer than 200.
    let note = |k: i64, long: bool| {
        let len = if long { 1000 + (k * 37) % 2800 } else { (k * 13) % 200 };
        (0..len).map(|j| char::from(b'a' + ((k + j) % 26) as u8)).collect::<String>()
    };
    for i in 0..700i64 {
        let k = (i * 389) % 700;
        let name = format!("{}{:04}", "n".repeat(100), (k * 7919) % 701);
        let note = note(k, k % 4 == 1);
        let values = [
            Value::I32((k % 5) as i32),
            if k % 4 == 0 { Value::Null } else { Value::I64(k * 3) },
            Value::I64(k),
            Value::Str(&name),
            if k % 9 == 0 { Value::Null } else { Value::Str(&note) },
        ];
        tx.insert(&t, &values).expect("insert");
    }
    tx.create_index("t_grp_name", &t, &["grp", "name"]).expect("create an index");
    let pk = nvpage::ReadOps::primary_key(&tx, &t).expect("a key").expect("the key");
    for k in (0..700i64).step_by(11) {
        tx.delete_by(&pk, &[Value::I64(k)]).expect("delete");
    }
    // Notes changed across the spill threshold, both ways.
    for k in (3..700i64).step_by(10) {
        let long = note(k, k % 4 != 1);
        tx.update_by(&pk, &[Value::I64(k)], &[("note", Value::Str(&long))]).expect("update");
    }
    tx.commit().expect("commit");
    drop(db);
    let nodes = sized_nodes(dir.path());
    // The primary key's tree is the one whose leaves hold spilled rows.
    let tree = |p: &[u8]| u32::from_le_bytes(p[24..28].try_into().unwrap());
    let primary = nodes
        .iter()
        .find(|(_, p)| p[17] == 0 && !spilled_entries(p).is_empty())
        .map(|(_, p)| tree(p))
        .expect("a leaf with spilled rows");
    nodes.into_iter().partition(|(_, p)| tree(p) == primary)
}

/// Seeds for `index_page` from [`real_keyed_nodes`]: a leaf and an inner node of each of the
/// three trees (the primary key's leaf one that holds spilled rows), searched for and added to
/// as [`index_seeds`] does, with the entry added marked spilled, after a removal, and with the
/// leaf filled until the next insert splits it (spilled entries moving right); and damaged
/// copies: a spilled mark on an entry of another index's leaf, a spilled entry's length past
/// the page, and (the primary key's leaf) the flag announcing its spilled entries cleared.
fn keyed_seeds() -> Vec<Vec<u8>> {
    const OWN_INDEX: u8 = 4;
    const EDIT: u8 = 8;
    const REMOVE: u8 = 16;
    const SPILLED: u8 = 32;
    let u16_at = |p: &[u8], at: usize| usize::from(u16::from_le_bytes([p[at], p[at + 1]]));
    // Where entry `i` keeps its value's length.
    let len_at = |p: &[u8], i: usize| {
        let off = u16_at(p, 64 + 6 * i);
        off + 2 + u16_at(p, off)
    };
    let (primary, others) = real_keyed_nodes();
    let owner = |p: &[u8]| u32::from_le_bytes(p[24..28].try_into().unwrap());
    let mut trees: Vec<u32> = others.iter().map(|(_, p)| owner(p)).collect();
    trees.sort_unstable();
    trees.dedup();
    let leaf = |nodes: &[Page], x: u32, spilling: bool| -> Option<Page> {
        nodes
            .iter()
            .filter(|(_, p)| owner(p) == x && p[17] == 0 && u16_at(p, 18) > 0)
            .find(|(_, p)| !spilling || !spilled_entries(p).is_empty())
            .cloned()
    };
    let inner =
        |nodes: &[Page], x: u32| nodes.iter().find(|(_, p)| owner(p) == x && p[17] > 0).cloned();
    let mut picked: Vec<(Page, bool)> = Vec::new();
    let pk_tree = owner(&primary[0].1);
    picked.extend(leaf(&primary, pk_tree, true).map(|p| (p, true)));
    picked.extend(inner(&primary, pk_tree).map(|p| (p, false)));
    for &x in &trees {
        picked.extend(leaf(&others, x, false).map(|p| (p, false)));
        picked.extend(inner(&others, x).map(|p| (p, false)));
    }
    let mut out = Vec::new();
    for ((id, page), spills) in picked {
        let index_id = owner(&page);
        let first = u16_at(&page, 64);
        let first_key = &page[first + 2..first + 2 + u16_at(&page, first)];
        let mut new_key = first_key.to_vec();
        new_key.push(0x7F);
        out.push(index_input(0, index_id, id, first_key, &page));
        out.push(index_input(EDIT, index_id, id, &new_key, &page));
        out.push(index_input(EDIT | SPILLED, index_id, id, &new_key, &page));
        out.push(index_input(EDIT | REMOVE | OWN_INDEX, 0, id, &new_key, &page));
        let (full, key) = fill(&page, index_id, id, first_key);
        out.push(index_input(EDIT, index_id, id, &key, &full));
        out.push(index_input(EDIT | SPILLED, index_id, id, &key, &full));
        if page[17] > 0 {
            continue;
        }
        // Entry 1's value length marked spilled, then also past the page.
        let at = len_at(&page, 1);
        let mut p = page.clone();
        p[at + 1] |= 0x80;
        out.push(index_input(EDIT, index_id, id, &new_key, &p));
        p[at..at + 2].copy_from_slice(&0xFFF0u16.to_le_bytes());
        out.push(index_input(EDIT, index_id, id, &new_key, &p));
        if spills {
            let mut p = page.clone();
            p[30] &= !1;
            out.push(index_input(EDIT, index_id, id, &new_key, &p));
            out.push(index_input(EDIT | SPILLED, index_id, id, &new_key, &p));
        }
    }
    out
}

/// `page` (a node of index `index_id`) after inserts of keys above `first` until the next one
/// would split it, and that key.
/// The value inserted is the one the target's edit inserts with that key (a sized leaf's as long
/// as the key says).
fn fill(page: &[u8], index_id: u32, id: u64, first: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let len = match (page[29], page[17]) {
        (1, 0) => (first.len() + 3) % 64,
        (_, 0) => 10,
        _ => 8,
    };
    let value = vec![1u8; len];
    let mut full = page.to_vec();
    let mut right = vec![0u8; page.len()];
    for i in 0..=u16::MAX {
        let mut key = first.to_vec();
        key.push(0x7F);
        key.extend_from_slice(&i.to_be_bytes());
        let mut next = full.clone();
        match fuzzing::index_insert(&mut next, index_id, id, &key, &value, false, &mut right) {
            Ok(None) => full = next,
            Ok(Some(_)) => return (full, key),
            Err(e) => panic!("an insert into a real node: {e}"),
        }
    }
    unreachable!("a node of one page splits before 65,536 inserts")
}

/// A row of the wide schema (`row_schemas()[1]`).
fn wide_values(k: i32) -> Vec<Value<'static>> {
    vec![
        Value::I32(k),
        Value::I64(i64::from(k) << 40),
        Value::Decimal(Decimal::new(12345, 2)),
        Value::Decimal(Decimal::new(-7, 0)),
        Value::Date(Date::from_ymd(1998, 12, 1).expect("a date")),
        Value::Str("N"),
        Value::Str("MAIL"),
        Value::Str("carefully final deposits"),
        if k == 0 { Value::Null } else { Value::Date(Date(k)) },
        if k == 1 { Value::Null } else { Value::Str("TAKE BACK RETURN") },
        Value::Null,
    ]
}

/// The first byte of a `row_decode` input choosing `kind` (0 row, 1 heap page, 2 catalog) and
/// schema `schema`.
fn row_selector(kind: u8, schema: u8, big_page: bool) -> u8 {
    (0..=255u8)
        .find(|w| w % 3 == kind && (w >> 2) % 5 == schema && (w & 0x80 != 0) == big_page)
        .expect("a selector exists")
}

fn with_prefix(prefix: &[u8], rest: &[u8]) -> Vec<u8> {
    let mut v = prefix.to_vec();
    v.extend_from_slice(rest);
    v
}

/// Seed inputs for target `name`.
pub fn seeds(name: &str) -> Vec<Vec<u8>> {
    const PS: usize = 4096;
    match name {
        "log_decode" => real_logs()
            .iter()
            .flat_map(|log| [0u8, 3, 25].map(|mode| with_prefix(&[mode, 0], log)))
            .collect(),
        "log_records" => real_logs()
            .iter()
            .flat_map(|log| [with_prefix(&[0, 0], log), with_prefix(&[3, 100], log)])
            .collect(),
        "log_recovery" | "log_scan" => real_logs()
            .iter()
            .enumerate()
            .flat_map(|(i, log)| {
                let raw = i == 2;
                let word = u64::from_le_bytes(log[64..72].try_into().unwrap());
                let area = &log[DATA_OFFSET..];
                let flags: &[u8] = if raw { &[1] } else { &[0, 6] };
                flags
                    .iter()
                    .map(|&f| {
                        let mut v = vec![f];
                        v.extend_from_slice(&word.to_le_bytes());
                        v.extend_from_slice(&[0, 0, 16]);
                        v.extend_from_slice(area);
                        v
                    })
                    .collect::<Vec<_>>()
            })
            .collect(),
        "page_decode" => {
            let file = real_data_file();
            (0..3u64)
                .flat_map(|id| {
                    let page = &file[id as usize * PS..(id as usize + 1) * PS];
                    let mut head = vec![0u8];
                    head.extend_from_slice(&id.to_le_bytes());
                    [(0u8, 0u32), (2, 77)].map(|(flags, flip)| {
                        let mut v = head.clone();
                        v.push(flags);
                        v.extend_from_slice(&flip.to_le_bytes());
                        v.extend_from_slice(page);
                        v
                    })
                })
                .collect()
        }
        "row_decode" => row_seeds(&real_data_file()),
        "db_open" => {
            let file = real_data_file();
            [0u8, 1, 2, 4 | 8].iter().map(|&m| with_prefix(&[m], &file)).collect()
        }
        "api_countdown" => api_seeds(),
        "index_page" => index_seeds(),
        "clustered_leaf" => clustered_seeds(),
        other => panic!("no fuzz target named {other}"),
    }
}

fn row_seeds(file: &[u8]) -> Vec<Vec<u8>> {
    const PS: usize = 4096;
    let mut out = Vec::new();
    let schemas = crate::fuzz_bodies::row_schemas();
    let rows: [(u8, Vec<Value<'_>>); 5] = [
        (
            0,
            vec![
                Value::I64(9),
                Value::I32(5),
                Value::Decimal(Decimal::new(63, 2)),
                Value::Str("a note"),
            ],
        ),
        (1, wide_values(2)),
        (2, vec![Value::Str("ab")]),
        (3, vec![Value::Str("x"), Value::Str("")]),
        (
            4,
            vec![
                Value::Bool(true),
                Value::I16(i16::MIN),
                Value::F64(-0.0),
                Value::Timestamp(nvpage::Timestamp(-1)),
                Value::Bytes(&[0, 0xff, 7]),
                Value::Bool(false),
            ],
        ),
    ];
    for (s, values) in rows {
        let bytes = fuzzing::encode(&schemas[usize::from(s)], &values).expect("encode a row");
        out.push(with_prefix(&[row_selector(0, s, false)], &bytes));
    }
    // Heap pages: the model table's first page (page 2, table id 0), the wide table's (id 1).
    let pages = (2..file.len() / PS).map(|p| &file[p * PS..(p + 1) * PS]);
    let heap: Vec<&[u8]> = pages.filter(|p| p[16] == b'H').take(2).collect();
    for (i, page) in heap.into_iter().enumerate() {
        let table_id = u32::from_le_bytes(page[24..28].try_into().unwrap());
        let mut v = vec![row_selector(1, if i == 0 { 0 } else { 1 }, false)];
        v.extend_from_slice(&table_id.to_le_bytes());
        v.extend_from_slice(page);
        out.push(v);
    }
    // The catalog blob from page 1 (chunk length at 20, data at 32).
    let cat = &file[PS..2 * PS];
    let len = u32::from_le_bytes(cat[20..24].try_into().unwrap()) as usize;
    let page_count = (file.len() / PS) as u16;
    let mut v = vec![row_selector(2, 0, false)];
    v.extend_from_slice(&page_count.to_le_bytes());
    v.extend_from_slice(&cat[32..32 + len]);
    out.push(v);
    let _ = PageId(0);
    out
}

/// Operation sequences: a load, updates and deletes, an abort, a reopen, on each layer, with
/// the countdown past the end (no failure) and early.
fn api_seeds() -> Vec<Vec<u8>> {
    let txn1: &[u8] = &[0, 0, 0, 1, 1, 2, 2, 3, 200, 4, 8, 8, 0];
    let txn2: &[u8] = &[0, 5, 1, 6, 2, 5, 3, 1, 0, 7, 0, 8, 0];
    let aborted: &[u8] = &[0, 1, 5, 2, 6, 9, 0];
    let reopen: &[u8] = &[7];
    let mut out = Vec::new();
    for (setup, countdown) in
        [(0u8, 2000u16), (1 | 4, 2000), (2 | 8, 2000), (0, 40), (2 | 4 | 8, 90)]
    {
        let mut v = vec![setup];
        v.extend_from_slice(&countdown.to_le_bytes());
        for part in [txn1, txn2, aborted, reopen, txn1] {
            v.extend_from_slice(part);
        }
        out.push(v);
    }
    out
}
