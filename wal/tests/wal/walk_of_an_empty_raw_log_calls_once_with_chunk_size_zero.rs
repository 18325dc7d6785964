//! Goal: `walk` with chunk size 0 ("everything at once") calls its callback exactly once on a
//! raw log, with the whole stream, even when the stream is empty (a new log, or one just
//! rewound), as `pmemlog_walk` does (the first thing PMDK's `log_basic` test checks); with a
//! nonzero chunk size an empty raw log gets no call, as there. A record log keeps its own rule:
//! its chunks are its records' payloads, so with no records there is no call (an empty chunk
//! would mean one empty record), on both persistence paths.

use crate::common;

use common::{create, media};
use nvpage_wal::layout::DATA_OFFSET;
use nvpage_wal::{Framing, Log};

/// The chunks `walk(chunk_size)` hands its callback, in order.
fn chunks(log: &Log, chunk_size: usize) -> Vec<Vec<u8>> {
    let mut seen = Vec::new();
    log.walk(chunk_size, |c| {
        seen.push(c.to_vec());
        true
    })
    .unwrap();
    seen
}

#[test]
fn walk_of_an_empty_raw_log_calls_once_with_chunk_size_zero() {
    for m in media() {
        let mut raw =
            create(&m.path("raw.log"), DATA_OFFSET as u64 + 4096, Framing::Raw, m.persistence);
        for when in ["new", "rewound"] {
            let ctx = format!("{} raw log, {when}", m.name);
            assert_eq!(chunks(&raw, 0), vec![Vec::<u8>::new()], "{ctx}: chunk size 0");
            for size in [1, 16, 4096] {
                assert!(chunks(&raw, size).is_empty(), "{ctx}: chunk size {size}");
            }
            raw.append(b"abc").unwrap();
            assert_eq!(chunks(&raw, 0), vec![b"abc".to_vec()], "{ctx}: one append");
            raw.rewind().unwrap();
        }

        let records = create(
            &m.path("records.log"),
            DATA_OFFSET as u64 + 4096,
            Framing::Records,
            m.persistence,
        );
        for size in [0, 1, 16] {
            let ctx = format!("{} record log, chunk size {size}", m.name);
            assert!(chunks(&records, size).is_empty(), "{ctx}: no records, no call");
        }
        records.append(b"").unwrap();
        assert_eq!(chunks(&records, 0), vec![Vec::<u8>::new()], "{}: one empty record", m.name);
    }
}
