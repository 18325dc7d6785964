//! Goal: opening a log reads what recovery needs — the header, the state word and the records up
//! to the end it finds — and leaves the rest of the mapping untouched: an open of a 64 MiB log
//! that holds three small records, read-only or writable, of either framing, on disk (`msync`)
//! and on tmpfs (emulated NVM), grows the process's resident memory by far less than the log
//! (LMDB and SQLite open in well under a millisecond; an open that faulted in the whole log cost
//! tens of milliseconds and its size in memory). Resident size is read from `/proc/self/status`;
//! this binary holds this one test, so no other test's memory moves it.

mod common;

use common::{media, opts};
use nvpage_wal::layout::record_size;
use nvpage_wal::{Framing, Log, OpenOptions};

/// The log's size: the default a database gets.
const LOG_BYTES: u64 = 64 << 20;
/// The growth an open may cause: its own bookkeeping and a few pages of the log, nothing near
/// the log's 64 MiB.
const MAX_GROWTH_BYTES: u64 = 8 << 20;

/// The process's resident set, in bytes.
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("a VmRSS line");
    let kib: u64 = line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("VmRSS kB");
    kib * 1024
}

#[test]
fn an_open_faults_in_only_what_recovery_reads() {
    for m in media() {
        for framing in [Framing::Records, Framing::Raw] {
            let path = m.path(&format!("{framing}.log"));
            {
                let log = Log::create(&path, LOG_BYTES, &opts(framing, m.persistence)).unwrap();
                for payload in [&b"one"[..], b"two", b"three"] {
                    log.append(payload).unwrap();
                }
            }
            for read_only in [true, false] {
                let o = OpenOptions { read_only, persistence: m.persistence, ..Default::default() };
                let before = resident_bytes();
                let log = Log::open_with(&path, &o).unwrap();
                let grown = resident_bytes().saturating_sub(before);
                let ctx = format!("{} {framing} read-only {read_only}", m.name);
                assert!(
                    grown < MAX_GROWTH_BYTES,
                    "{ctx}: the open made {grown} bytes resident for a {LOG_BYTES}-byte log"
                );
                // What recovery needs was read: the log holds what was appended.
                let records: u64 = [3, 3, 5].into_iter().map(record_size).sum();
                assert_eq!(log.tell(), if framing == Framing::Raw { 11 } else { records }, "{ctx}");
                if framing == Framing::Records {
                    assert_eq!(log.record_count(), 3, "{ctx}");
                }
            }
        }
    }
}
