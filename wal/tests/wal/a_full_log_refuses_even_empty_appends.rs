//! Goal: a full log refuses every append, even one of no bytes, as libpmemlog does (its
//! `pmemlog_append` and `pmemlog_appendv` fail with `ENOSPC` whenever the write offset has
//! reached the end of the pool, whatever the count): a zero-byte `append`, an `append_vectored`
//! of no buffers and one of empty buffers, and their buffered forms, each `LogFull` on a full raw
//! log and changing nothing, on both persistence paths; the same calls succeed one byte short of
//! full. A record log, where an empty append is a record that takes room, refuses them too.

use crate::common;

use std::io::IoSlice;

use common::{create, media, open};
use nvpage_wal::layout::DATA_OFFSET;
use nvpage_wal::{Framing, Log, RecordPos, WalError};

const CAPACITY: u64 = 1024;

/// Every way of appending nothing.
fn empty_appends(log: &Log) -> Vec<(&'static str, nvpage_wal::Result<RecordPos>)> {
    vec![
        ("append of 0 bytes", log.append(b"")),
        ("append_vectored of no buffers", log.append_vectored(&[])),
        (
            "append_vectored of empty buffers",
            log.append_vectored(&[IoSlice::new(b""), IoSlice::new(b"")]),
        ),
        ("append_buffered of 0 bytes", log.append_buffered(b"")),
        ("append_buffered_vectored of no buffers", log.append_buffered_vectored(&[])),
    ]
}

#[test]
fn a_full_log_refuses_even_empty_appends() {
    for m in media() {
        for framing in [Framing::Raw, Framing::Records] {
            let ctx = format!("{} {framing}", m.name);
            let p = m.path(&format!("{framing}.log"));
            let log = create(&p, DATA_OFFSET as u64 + CAPACITY, framing, m.persistence);
            if framing == Framing::Raw {
                // One byte short of full, appending nothing is allowed and changes nothing.
                log.append(&vec![1u8; CAPACITY as usize - 1]).unwrap();
                for (what, r) in empty_appends(&log) {
                    assert_eq!(r.unwrap(), RecordPos(CAPACITY - 1), "{ctx}: {what}");
                }
                log.append(&[2]).unwrap();
            } else {
                while log.append(b"").is_ok() {}
            }
            assert_eq!(log.tell(), CAPACITY, "{ctx}: full");
            for (what, r) in empty_appends(&log) {
                assert!(
                    matches!(r, Err(WalError::LogFull { available: 0, .. })),
                    "{ctx}: {what} into a full log: {r:?}"
                );
            }
            assert_eq!(log.tell(), CAPACITY, "{ctx}: the refusals changed nothing");
            assert!(!log.is_poisoned(), "{ctx}: a refusal does not poison the log");
            drop(log);
            let log = open(&p, m.persistence).unwrap();
            assert_eq!(log.tell(), CAPACITY, "{ctx}: reopened");
            for (what, r) in empty_appends(&log) {
                assert!(
                    matches!(r, Err(WalError::LogFull { available: 0, .. })),
                    "{ctx}: {what} into a full log, reopened: {r:?}"
                );
            }
        }
    }
}
