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
        .find(|w| w % 3 == kind && (w >> 2) % 4 == schema && (w & 0x80 != 0) == big_page)
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
        other => panic!("no fuzz target named {other}"),
    }
}

fn row_seeds(file: &[u8]) -> Vec<Vec<u8>> {
    const PS: usize = 4096;
    let mut out = Vec::new();
    let schemas = crate::fuzz_bodies::row_schemas();
    let rows: [(u8, Vec<Value<'_>>); 4] = [
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
