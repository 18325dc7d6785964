//! Goal: opening a database costs memory for what the open reads, not for what the options
//! reserve: with the default 64 MiB buffer pool, a log created at 64 MiB and the default 1 GiB
//! reserved for the log's growth, an open — writable or read-only, with each layer — grows the
//! process's resident memory by a few MiB, not by the pool or the log (an open that zeroed the
//! pool's frames up front made 64 MiB resident and took tens of milliseconds, for an
//! `nvpage info`). Resident size is read from `/proc/self/status`; this
//! binary holds this one test, so no other test's memory moves it.

#![forbid(unsafe_code)]

use nvpage::{Column, ColumnType, Database, Layer, ReadOps, Schema, Value};

/// What an open may make resident: bookkeeping, the catalog and a few pages of each file,
/// nothing near the 64 MiB pool or the 64 MiB log.
const MAX_GROWTH_BYTES: u64 = 16 << 20;

/// The process's resident set, in bytes.
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("a VmRSS line");
    let kib: u64 = line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("VmRSS kB");
    kib * 1024
}

#[test]
fn an_open_with_default_options_makes_little_resident() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let db = Database::builder().log_bytes(64 << 20).open(&path).unwrap();
        let mut tx = db.begin_write().unwrap();
        let schema = Schema::new(vec![Column::new("id", ColumnType::I64)]).unwrap();
        let t = tx.create_table("t", schema).unwrap();
        for i in 0..1000 {
            tx.insert(&t, &[Value::I64(i)]).unwrap();
        }
        tx.commit().unwrap();
    }
    for layer in Layer::compiled().iter().copied() {
        for read_only in [false, true] {
            let before = resident_bytes();
            let db = Database::builder().layer(layer).read_only(read_only).open(&path).unwrap();
            let grown = resident_bytes().saturating_sub(before);
            assert!(
                grown < MAX_GROWTH_BYTES,
                "{layer} read-only {read_only}: the open made {grown} bytes resident"
            );
            let rx = db.begin_read().unwrap();
            assert_eq!(rx.row_count(&rx.table("t").unwrap()).unwrap(), 1000);
        }
    }
}
