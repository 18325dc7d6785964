//! Goal: every corruption of the bytes the engine reads is reported — as a typed error at open,
//! on a read or scan, or as damage by `Database::check` (`nvpage check`) — never a wrong answer,
//! never a panic. The campaign (`docs/reliability.md`, "Corruption"): one corruption per run,
//! chosen by seed, into a closed database, which is then reopened and read in full on each of
//! the three layers (one corrupted image, three reads):
//!
//! - a bit flip in a page in use (the header, the catalog, every page of every table): the page
//!   CRC32C covers every byte but the checksum itself, which is compared, so there is no unused
//!   byte in a page in use;
//! - a 512 B sector zeroed in a page in use (only sectors that were not zero already);
//! - two pages in use swapped (each carries its own id);
//! - a bit flip in the log of an unfinished transaction: its header (checksummed), its state
//!   word or capacity word (each sealed by a CRC-8 check byte), or its records below the
//!   watermark (closing the database stored the watermark at the end of its records).
//!
//! Bytes nobody reads are not targets: pages not in use (free, or the unused tail of an
//! extent), the log header page's padding, the padding that aligns each log record to 8 bytes,
//! and log bytes past the end of its records.
//!
//! The images of a kind are distinct: the corruptions are drawn without replacement from every
//! one the kind can make (every bit of every page in use, every non-zero sector, every pair of
//! pages, every bit of the log regions), so a kind with few of them (zeroed sectors, swaps) is
//! tried exhaustively. The output counts distinct images and, apart, the reads of them.
//!
//! `NVPAGE_CORRUPTION_IMAGES` (default 25) sets the distinct images per kind (at most as many
//! as the kind has).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use nvpage::{Database, Layer, ReadOps, RowId, fuzzing};
use nvpage_tests::model::{Row, Tables, contents, schema};
use nvpage_wal::layout::{
    CAPACITY_WORD_OFFSET, DATA_OFFSET, RECORD_HEADER_LEN, STATE_OFFSET, State, record_size,
};
use rand::SeedableRng;
use rand::rngs::StdRng;

const PS: usize = 4096;

fn open(path: &Path, layer: Layer) -> nvpage::Result<Database> {
    Database::builder()
        .layer(layer)
        .page_size(PS as u64)
        .pool_bytes(16 << 10)
        .log_bytes(512 << 10)
        .max_file_bytes(1 << 30)
        .open(path)
}

/// A closed database's two files.
#[derive(Clone)]
struct Image {
    data: Vec<u8>,
    log: Vec<u8>,
}

fn read_image(dir: &Path) -> Image {
    Image {
        data: std::fs::read(dir.join(nvpage::DATA_FILE)).unwrap(),
        log: std::fs::read(dir.join(nvpage::LOG_FILE)).unwrap(),
    }
}

fn write_image(dir: &Path, img: &Image) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(nvpage::DATA_FILE), &img.data).unwrap();
    std::fs::write(dir.join(nvpage::LOG_FILE), &img.log).unwrap();
}

/// Two tables over a dozen pages, committed (`clean`, its contents), and the same database with
/// an unfinished transaction whose before-images are in the log (`unfinished`).
fn build() -> (Image, Tables, Image) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = open(&path, Layer::Pread).unwrap();
    let mut tx = db.begin_write().unwrap();
    for name in ["a", "b"] {
        let t = tx.create_table(name, schema()).unwrap();
        for k in 0..60i64 {
            let note = if k % 5 == 0 { Some("L".repeat(900)) } else { Some(format!("row {k}")) };
            let row = Row { id: RowId { page: 0, slot: 0 }, qty: k as i32, note };
            tx.insert(&t, &row.values(k)).unwrap();
        }
    }
    tx.commit().unwrap();
    let want = contents(&db).unwrap();
    drop(db);
    let clean = read_image(&path);
    let db = open(&path, Layer::Pread).unwrap();
    let mut tx = db.begin_write().unwrap();
    // Touch every page through a 4-frame pool: pages are stolen, before-images logged.
    for name in ["a", "b"] {
        let t = tx.table(name).unwrap();
        for (k, row) in &want[name] {
            let new = Row { id: row.id, qty: -1, note: row.note.clone() };
            tx.update(&t, row.id, &new.values(*k)).unwrap();
        }
    }
    std::mem::forget(tx);
    drop(db);
    let unfinished = read_image(&path);
    let end = log_end(&unfinished.log);
    assert!(end > 0, "the unfinished transaction logged before-images");
    (clean, want, unfinished)
}

/// Where a closed log's records end: its state word's watermark (closing stores it at the end).
fn log_end(log: &[u8]) -> u64 {
    let word = u64::from_le_bytes(log[STATE_OFFSET..STATE_OFFSET + 8].try_into().unwrap());
    State::decode(word).expect("a sound state word").tail
}

/// Pages in use: the header, the catalog chain (one page here), every table's pages.
fn pages_in_use(data: &[u8]) -> Vec<u64> {
    let page_count = u64::from_le_bytes(data[32..40].try_into().unwrap());
    let cat = &data[PS..2 * PS];
    assert_eq!(u64::from_le_bytes(cat[24..32].try_into().unwrap()), 0, "one catalog page");
    let len = u32::from_le_bytes(cat[20..24].try_into().unwrap()) as usize;
    let tables = fuzzing::catalog_tables(&cat[32..32 + len], page_count, vec![1]).unwrap();
    let mut pages = vec![0, 1];
    pages.extend(tables.into_iter().flat_map(|(_, p)| p));
    pages
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    BitFlip,
    ZeroSector,
    SwapPages,
    LogBitFlip,
}

/// Log bits a log bit flip may hit: the header's 64 bytes, the state word's 8, the capacity
/// word's 8, the records'.
const LOG_HEADER_BITS: usize = 64 * 8;
const LOG_STATE_BITS: usize = 8 * 8;
const LOG_CAPACITY_BITS: usize = 8 * 8;

/// The bytes of a closed log's records, header and payload, as offsets into the data area: the
/// padding after each record (to the next line, format 5) is read by nobody.
fn record_bytes(log: &[u8]) -> Vec<std::ops::Range<usize>> {
    let (area, end) = (&log[DATA_OFFSET..], log_end(log) as usize);
    let mut at = 0;
    let mut out = Vec::new();
    while at < end {
        let len = u32::from_le_bytes(area[at..at + 4].try_into().unwrap()) as u64;
        out.push(at..at + RECORD_HEADER_LEN + len as usize);
        at += record_size(len) as usize;
    }
    assert_eq!(at, end, "the records tile the log up to its watermark");
    out
}

/// One corruption, by position.
#[derive(Clone, Copy, Debug)]
enum Change {
    /// Flip bit `bit` of the data file.
    DataBit { bit: usize },
    /// Zero the 512 B sector at `offset` of the data file.
    DataSector { offset: usize },
    /// Swap pages `a` and `b`.
    Swap { a: usize, b: usize },
    /// Flip bit `bit` of the log, in `region`.
    LogBit { region: &'static str, bit: usize },
}

impl Change {
    /// A copy of the right image with the change made.
    fn apply(self, clean: &Image, unfinished: &Image) -> Image {
        let mut img =
            if matches!(self, Change::LogBit { .. }) { unfinished } else { clean }.clone();
        match self {
            Change::DataBit { bit } => img.data[bit / 8] ^= 1 << (bit % 8),
            Change::DataSector { offset } => img.data[offset..offset + 512].fill(0),
            Change::Swap { a, b } => {
                let pa = img.data[a * PS..(a + 1) * PS].to_vec();
                img.data.copy_within(b * PS..(b + 1) * PS, a * PS);
                img.data[b * PS..(b + 1) * PS].copy_from_slice(&pa);
            }
            Change::LogBit { bit, .. } => img.log[bit / 8] ^= 1 << (bit % 8),
        }
        img
    }

    fn describe(self) -> String {
        match self {
            Change::DataBit { bit } => {
                format!("bit {} of page {}", bit % (PS * 8), bit / (PS * 8))
            }
            Change::DataSector { offset } => {
                format!("sector {} of page {}", offset % PS / 512, offset / PS)
            }
            Change::Swap { a, b } => format!("pages {a} and {b} swapped"),
            Change::LogBit { region, bit } => {
                format!("log {region}: bit {} of byte {}", bit % 8, bit / 8)
            }
        }
    }
}

/// Up to `n` distinct corruptions of `kind`, drawn by `seed` without replacement from all the
/// kind can make, and the number it can make.
fn corruptions(
    kind: Kind,
    n: usize,
    seed: u64,
    clean: &Image,
    unfinished: &Image,
) -> (Vec<Change>, usize) {
    let mut r = StdRng::seed_from_u64(seed);
    let mut pick = |space: usize, n: usize| -> Vec<usize> {
        rand::seq::index::sample(&mut r, space, n.min(space)).into_vec()
    };
    let pages: Vec<usize> = pages_in_use(&clean.data).into_iter().map(|p| p as usize).collect();
    let all: Vec<Change> = match kind {
        Kind::BitFlip => {
            let bits = PS * 8;
            let space = pages.len() * bits;
            let changes = pick(space, n).into_iter();
            let changes =
                changes.map(|i| Change::DataBit { bit: pages[i / bits] * bits + i % bits });
            return (changes.collect(), space);
        }
        Kind::ZeroSector => pages
            .iter()
            .flat_map(|&p| (0..PS / 512).map(move |s| p * PS + s * 512))
            .filter(|&offset| clean.data[offset..offset + 512].iter().any(|&b| b != 0))
            .map(|offset| Change::DataSector { offset })
            .collect(),
        Kind::SwapPages => (0..pages.len())
            .flat_map(|i| (i + 1..pages.len()).map(move |j| (i, j)))
            .map(|(i, j)| Change::Swap { a: pages[i], b: pages[j] })
            .collect(),
        Kind::LogBitFlip => {
            let records = record_bytes(&unfinished.log);
            let record_bits = records.iter().map(|r| r.len() * 8).sum();
            // The `i`-th bit of the records' bytes, as a bit of the data area.
            let record_bit = |mut i: usize| {
                for r in &records {
                    if i < r.len() * 8 {
                        return r.start * 8 + i;
                    }
                    i -= r.len() * 8;
                }
                panic!("bit {i} is past the records");
            };
            // A fifth of the images in the header, a fifth in each of the state and capacity
            // words (so that each small region is hit often; a word's 64 bits all, from 320
            // images on), the rest in the records.
            let header = pick(LOG_HEADER_BITS, n / 5);
            let state = pick(LOG_STATE_BITS, n / 5);
            let capacity = pick(LOG_CAPACITY_BITS, n / 5);
            let in_records = pick(record_bits, n - header.len() - state.len() - capacity.len());
            let in_records = in_records.into_iter().map(record_bit).collect();
            let region = |region, first, bits: Vec<usize>| {
                bits.into_iter().map(move |b| Change::LogBit { region, bit: first + b })
            };
            let changes = region("header", 0, header)
                .chain(region("state word", STATE_OFFSET * 8, state))
                .chain(region("capacity word", CAPACITY_WORD_OFFSET * 8, capacity))
                .chain(region("records", DATA_OFFSET * 8, in_records));
            let bits = LOG_HEADER_BITS + LOG_STATE_BITS + LOG_CAPACITY_BITS + record_bits;
            return (changes.collect(), bits);
        }
    };
    let space = all.len();
    (pick(space, n).into_iter().map(|i| all[i]).collect(), space)
}

/// How a corrupted database was read.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    AtOpen,
    OnRead,
    ByCheck,
    NotReported,
    WrongAnswer,
}

/// Opens and reads everything: every row of every table, then `check`.
fn read_all(dir: &Path, layer: Layer, want: &Tables) -> Seen {
    let db = match open(dir, layer) {
        Ok(db) => db,
        Err(e) => {
            let _ = e.to_string();
            return Seen::AtOpen;
        }
    };
    let got = match contents(&db) {
        Ok(got) => got,
        Err(_) => return Seen::OnRead,
    };
    // Point reads, too: every row by its id.
    if let Ok(rx) = db.begin_read() {
        for t in rx.tables() {
            for row in got.get(t.name()).into_iter().flat_map(|r| r.values()) {
                if rx.get(&t, row.id).and_then(|g| g.row().map(|_| ())).is_err() {
                    return Seen::OnRead;
                }
            }
        }
    }
    match db.check() {
        Ok(report) if !report.is_sound() => return Seen::ByCheck,
        Err(_) => return Seen::ByCheck,
        Ok(_) => {}
    }
    if &got != want { Seen::WrongAnswer } else { Seen::NotReported }
}

/// A 128-bit hash of an image's two files, to count distinct images.
fn image_hash(img: &Image) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for f in [&img.data, &img.log] {
        h.update(&(f.len() as u64).to_le_bytes());
        h.update(f);
    }
    h.digest128()
}

#[test]
fn every_injected_corruption_is_reported() {
    let per_kind = std::env::var("NVPAGE_CORRUPTION_IMAGES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(25usize);
    let (clean, want, unfinished) = build();
    let scratch = tempfile::tempdir().unwrap();
    let (mut reads, mut images) = (0u64, 0u64);
    let mut distinct = std::collections::HashSet::new();
    let mut per_kind_counts = Vec::new();
    let mut tally: std::collections::BTreeMap<String, u64> = Default::default();
    let mut failures = Vec::new();
    for (k, kind) in
        [Kind::BitFlip, Kind::ZeroSector, Kind::SwapPages, Kind::LogBitFlip].into_iter().enumerate()
    {
        let (changes, space) = corruptions(kind, per_kind, k as u64, &clean, &unfinished);
        per_kind_counts.push(format!("{kind:?} {} of {space}", changes.len()));
        for (i, change) in changes.into_iter().enumerate() {
            let img = change.apply(&clean, &unfinished);
            let what = change.describe();
            images += 1;
            distinct.insert(image_hash(&img));
            for layer in Layer::ALL {
                let dir = scratch.path().join(format!("{kind:?}-{layer}-{i}"));
                write_image(&dir, &img);
                reads += 1;
                let seen = catch_unwind(AssertUnwindSafe(|| read_all(&dir, layer, &want)));
                let label = match &seen {
                    Ok(s) => format!("{kind:?} {s:?}"),
                    Err(_) => format!("{kind:?} panic"),
                };
                *tally.entry(label).or_default() += 1;
                match seen {
                    Ok(Seen::AtOpen | Seen::OnRead | Seen::ByCheck) => {}
                    other => failures.push(format!("{kind:?} {layer} ({what}): {other:?}")),
                }
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }
    let reported = reads - failures.len() as u64;
    println!(
        "corruption_reported: {} distinct corrupted images ({}), each read through the three \
         layers: {reads} reads, {reported} reported ({:.1}%); outcomes per read: {tally:?}",
        distinct.len(),
        per_kind_counts.join(", "),
        100.0 * reported as f64 / reads as f64
    );
    assert_eq!(distinct.len() as u64, images, "every corrupted image differs from the others");
    assert!(failures.is_empty(), "not reported: {failures:#?}");
}
