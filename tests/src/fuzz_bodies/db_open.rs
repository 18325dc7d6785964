//! `db_open`: arbitrary bytes as the data file of an otherwise valid database directory.

use std::path::Path;
use std::sync::OnceLock;

use nvpage::{ColumnType, Database, Date, Decimal, Layer, ReadOps, Value};
use nvpage_storage::PageId;
use nvpage_storage::page::{self, MAX_PAGE_SIZE, MIN_PAGE_SIZE};

use super::log::set_log_uuid;
use super::page::reseal_file_header;
use super::row::read_row;
use super::{Input, scratch_dir};

/// Where the data file's header keeps the page size and the database UUID (storage's header.rs).
const PAGE_SIZE_AT: usize = 28;
const UUID_AT: std::ops::Range<usize> = 40..56;

/// The options every fuzzed open uses: small pool (evictions), small reservation.
pub fn builder(layer: Layer) -> nvpage::Builder {
    Database::builder()
        .layer(layer)
        .page_size(MIN_PAGE_SIZE as u64)
        .pool_bytes(32 << 10)
        .log_bytes(256 << 10)
        .max_file_bytes(1 << 30)
}

/// The bytes of an empty log made by a real create (the UUID is patched per input).
fn template_log() -> &'static [u8] {
    static LOG: OnceLock<Vec<u8>> = OnceLock::new();
    LOG.get_or_init(|| {
        let dir = super::scratch_tempdir();
        drop(builder(Layer::Pread).open(dir.path()).expect("create the template database"));
        std::fs::read(dir.path().join(nvpage::LOG_FILE)).expect("read the template log")
    })
}

/// Repairs every checksum of a data file: the header's own and each non-zero page's envelope
/// (the page size is the header's if it is valid, else 4 KiB), so mutations reach the catalog,
/// heap pages and rows behind them.
pub(crate) fn reseal_data_file(file: &mut [u8]) {
    if file.len() >= 60 {
        reseal_file_header(file);
    }
    let ps = file
        .get(PAGE_SIZE_AT..PAGE_SIZE_AT + 4)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()) as usize)
        .filter(|s| s.is_power_of_two() && (MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(s))
        .unwrap_or(MIN_PAGE_SIZE);
    for (i, p) in file.chunks_exact_mut(ps).enumerate() {
        if p.iter().any(|&b| b != 0) {
            page::seal(p, PageId(i as u64));
        }
    }
}

/// A value of each column's type, for an insert into any table.
fn default_values(schema: &nvpage::Schema) -> Vec<Value<'static>> {
    schema
        .columns()
        .iter()
        .map(|c| match c.ty {
            ColumnType::I32 => Value::I32(1),
            ColumnType::I64 => Value::I64(1),
            ColumnType::Decimal { scale } => Value::Decimal(Decimal::new(1, scale)),
            ColumnType::Date => Value::Date(Date(1)),
            ColumnType::Char { .. } | ColumnType::VarChar { .. } => Value::Str(""),
            ColumnType::Bool => Value::Bool(true),
            ColumnType::I16 => Value::I16(1),
            ColumnType::F64 => Value::F64(1.0),
            ColumnType::Timestamp => Value::Timestamp(nvpage::Timestamp(1)),
            ColumnType::Binary { .. } => Value::Bytes(&[]),
        })
        .collect()
}

/// Reads everything an opened database lends, then writes to every table; nothing may panic.
fn exercise(db: &Database, commit: bool) {
    if let Ok(rx) = db.begin_read() {
        for t in rx.tables() {
            let Ok(scan) = rx.scan(&t) else { continue };
            for page in scan.flatten() {
                for row in page.rows().flatten() {
                    read_row(&row);
                    if let Ok(g) = rx.get(&t, row.id()) {
                        let _ = g.row().map(|r| read_row(&r));
                    }
                }
            }
            let _ = rx.row_count(&t);
            let _ = rx.par_fold(&t, 2, || 0u64, |n, _| Ok(n + 1), |a, b| a + b);
        }
    }
    let _ = db.check().map(|r| r.is_sound());
    let Ok(mut tx) = db.begin_write() else { return };
    for t in tx.tables() {
        let values = default_values(t.schema());
        if let Ok(id) = tx.insert(&t, &values) {
            let _ = tx.update(&t, id, &values);
            let _ = tx.delete(&t, id);
        }
    }
    let _ = if commit { tx.commit() } else { tx.abort() };
}

/// Target `db_open`. Input: mode u8 (bit 0 repair every checksum; bits 1-2 the layer; bit 3
/// commit rather than abort the write), then the data file. The log is a real, empty log of the
/// database the data file's header names.
///
/// Property: `Database::builder().create(false).open` never panics, and neither does reading
/// every row of an opened database, `check`, or a write transaction on it.
pub fn db_open(data: &[u8]) {
    let mut input = Input::new(data);
    let mode = input.u8();
    let mut file = input.rest().to_vec();
    if mode & 1 == 1 {
        reseal_data_file(&mut file);
    }
    let layer = Layer::ALL[usize::from(mode >> 1) % 3];
    with_data_file(&file, layer, |db| match db {
        Ok(db) => exercise(&db, mode & 8 == 8),
        Err(e) => {
            let _ = e.to_string();
        }
    });
}

/// Writes `file` as the data file of a database directory whose log is a real, empty log of the
/// database the file's header names, opens it with `create(false)` and hands the result to `f`.
pub fn with_data_file<R>(
    file: &[u8],
    layer: Layer,
    f: impl FnOnce(nvpage::Result<Database>) -> R,
) -> R {
    let dir = scratch_dir().join("db_open");
    std::fs::create_dir_all(&dir).expect("create the database directory");
    let mut log = template_log().to_vec();
    if let Some(uuid) = file.get(UUID_AT) {
        set_log_uuid(&mut log, uuid);
    }
    write(&dir, nvpage::DATA_FILE, file);
    write(&dir, nvpage::LOG_FILE, &log);
    let r = f(builder(layer).create(false).open(&dir));
    let _ = std::fs::remove_dir_all(&dir);
    r
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).expect("write a database file");
}
