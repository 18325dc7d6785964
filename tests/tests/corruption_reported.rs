//! Goal: every corruption of the bytes the engine reads is reported — as a typed error at open,
//! on a read or scan, or as damage by `Database::check` (`nvpage check`) — never a wrong answer,
//! never a panic. Issue 7's campaign: one corruption per run, chosen by seed, into a closed
//! database, which is then reopened and read in full on each of the three layers:
//!
//! - a bit flip in a page in use (the header, the catalog, every page of every table): the page
//!   CRC32C covers every byte but the checksum itself, which is compared, so there is no unused
//!   byte in a page in use;
//! - a 512 B sector zeroed in a page in use (only sectors that were not zero already);
//! - two pages in use swapped (each carries its own id);
//! - a bit flip in the log of an unfinished transaction: its header (checksummed), its state
//!   word (sealed by a CRC-8 check byte), or its records below the watermark (closing the
//!   database stored the watermark at the end of its records).
//!
//! Bytes nobody reads are not targets: pages not in use (free, or the unused tail of an
//! extent), the log header page's padding, and log bytes past the end of its records.
//!
//! `NVPAGE_CORRUPTION_SEEDS` (default 25) sets the runs per kind and layer.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use nvpage::{Database, Layer, ReadOps, RowId, fuzzing};
use nvpage_tests::model::{Row, Tables, contents, schema};
use nvpage_wal::layout::{DATA_OFFSET, STATE_OFFSET, State};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

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

/// Injects one corruption of `kind` into a copy of the right image; describes it.
fn inject(kind: Kind, seed: u64, clean: &Image, unfinished: &Image) -> (Image, String) {
    let mut r = StdRng::seed_from_u64(seed);
    let pages = pages_in_use(&clean.data);
    let mut img = if kind == Kind::LogBitFlip { unfinished.clone() } else { clean.clone() };
    let what = match kind {
        Kind::BitFlip => {
            let p = pages[r.random_range(0..pages.len())] as usize;
            let bit = r.random_range(0..PS * 8);
            img.data[p * PS + bit / 8] ^= 1 << (bit % 8);
            format!("bit {bit} of page {p}")
        }
        Kind::ZeroSector => loop {
            let p = pages[r.random_range(0..pages.len())] as usize;
            let s = r.random_range(0..PS / 512);
            let sector = &mut img.data[p * PS + s * 512..p * PS + (s + 1) * 512];
            if sector.iter().any(|&b| b != 0) {
                sector.fill(0);
                break format!("sector {s} of page {p}");
            }
        },
        Kind::SwapPages => loop {
            let a = pages[r.random_range(0..pages.len())] as usize;
            let b = pages[r.random_range(0..pages.len())] as usize;
            if a != b {
                let pa = img.data[a * PS..(a + 1) * PS].to_vec();
                img.data.copy_within(b * PS..(b + 1) * PS, a * PS);
                img.data[b * PS..(b + 1) * PS].copy_from_slice(&pa);
                break format!("pages {a} and {b} swapped");
            }
        },
        Kind::LogBitFlip => {
            let end = log_end(&img.log) as usize;
            // The header's 64 bytes, the state word's 8, the records' `end`, weighted so each
            // region is hit often.
            let (region, at) = match r.random_range(0..4) {
                0 => ("header", r.random_range(0..64)),
                1 => ("state word", STATE_OFFSET + r.random_range(0..8)),
                _ => ("records", DATA_OFFSET + r.random_range(0..end)),
            };
            let bit = r.random_range(0..8);
            img.log[at] ^= 1 << bit;
            format!("log {region}: bit {bit} of byte {at}")
        }
    };
    (img, what)
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

#[test]
fn every_injected_corruption_is_reported() {
    let seeds =
        std::env::var("NVPAGE_CORRUPTION_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(25u64);
    let (clean, want, unfinished) = build();
    let scratch = tempfile::tempdir().unwrap();
    let mut injected = 0u64;
    let mut tally: std::collections::BTreeMap<String, u64> = Default::default();
    let mut failures = Vec::new();
    for kind in [Kind::BitFlip, Kind::ZeroSector, Kind::SwapPages, Kind::LogBitFlip] {
        for layer in Layer::ALL {
            for seed in 0..seeds {
                let (img, what) = inject(kind, seed, &clean, &unfinished);
                let dir = scratch.path().join(format!("{kind:?}-{layer}-{seed}"));
                write_image(&dir, &img);
                injected += 1;
                let seen = catch_unwind(AssertUnwindSafe(|| read_all(&dir, layer, &want)));
                let label = match &seen {
                    Ok(s) => format!("{kind:?} {s:?}"),
                    Err(_) => format!("{kind:?} panic"),
                };
                *tally.entry(label).or_default() += 1;
                match seen {
                    Ok(Seen::AtOpen | Seen::OnRead | Seen::ByCheck) => {}
                    other => {
                        failures.push(format!("{kind:?} {layer} seed {seed} ({what}): {other:?}"))
                    }
                }
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }
    let reported = injected - failures.len() as u64;
    println!(
        "corruption_reported: {injected} corruptions injected, {reported} reported ({:.1}%); {tally:?}",
        100.0 * reported as f64 / injected as f64
    );
    assert!(failures.is_empty(), "not reported: {failures:#?}");
}
