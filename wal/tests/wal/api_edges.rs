//! Goal: every API call at each edge — empty log, exactly full, one byte over, zero-length
//! append, rewind then append, vectored and buffered appends — on both framings and both
//! persistence paths, reopening after each step to see that what was acknowledged is what is
//! there.

use crate::common;

use std::io::IoSlice;

use common::{create, media, open, payloads};
use nvpage_storage::StorageError;
use nvpage_wal::layout::{
    DATA_OFFSET, FIRST_GENERATION, MIN_FILE_BYTES, RECORD_HEADER_LEN, record_size,
};
use nvpage_wal::{Framing, Log, RecordPos, WalError};

const SIZE: u64 = DATA_OFFSET as u64 + 1024;

#[test]
fn record_log_edges() {
    for m in media() {
        let p = m.path("records.log");
        let log = create(&p, SIZE, Framing::Records, m.persistence);
        assert_eq!(log.nbyte(), 1024);
        assert_eq!((log.tell(), log.record_count(), log.generation()), (0, 0, FIRST_GENERATION));
        assert!(payloads(&log).is_empty());
        let mut chunks = 0;
        log.walk(0, |_| {
            chunks += 1;
            true
        })
        .unwrap();
        assert_eq!(chunks, 0, "{}: an empty log has nothing to walk", m.name);
        drop(log);

        // Zero-length record, then a vectored one.
        let log = open(&p, m.persistence).unwrap();
        assert_eq!(log.append_record(b"").unwrap(), RecordPos(0));
        let pos = log.append_vectored(&[IoSlice::new(b"ab"), IoSlice::new(b"cde")]).unwrap();
        // Each record takes whole cache lines (format 5): the empty one its header's line.
        assert_eq!(pos, RecordPos(record_size(0)));
        assert_eq!(record_size(0), 64);
        assert_eq!(log.tell(), record_size(0) + record_size(5));
        drop(log);
        let log = open(&p, m.persistence).unwrap();
        assert_eq!(payloads(&log), vec![b"".to_vec(), b"abcde".to_vec()]);
        assert_eq!(log.record_count(), 2);

        // Fill exactly, then one byte over.
        let free = log.nbyte() - log.tell();
        let exact = vec![7u8; (free - RECORD_HEADER_LEN as u64) as usize];
        let over = vec![7u8; exact.len() + 1];
        match log.append(&over) {
            Err(WalError::LogFull { needed, available, .. }) => {
                assert_eq!(available, free);
                assert_eq!(needed, record_size(over.len() as u64));
            }
            other => panic!("{}: expected LogFull, got {other:?}", m.name),
        }
        log.append(&exact).unwrap();
        assert_eq!(log.tell(), log.nbyte());
        assert!(matches!(log.append(b""), Err(WalError::LogFull { needed: 64, available: 0, .. })));
        drop(log);
        let mut log = open(&p, m.persistence).unwrap();
        assert_eq!(payloads(&log).len(), 3);
        assert_eq!(payloads(&log)[2], exact);

        // Rewind, then append. Each writable open of a record log starts a generation too.
        let g = log.generation();
        log.rewind().unwrap();
        assert_eq!((log.tell(), log.record_count(), log.generation()), (0, 0, g + 1));
        drop(log);
        let log = open(&p, m.persistence).unwrap();
        assert!(payloads(&log).is_empty(), "{}: a rewound log is empty", m.name);
        assert_eq!(log.generation(), g + 2);
        log.append(b"after rewind").unwrap();
        drop(log);
        let log = open(&p, m.persistence).unwrap();
        assert_eq!(payloads(&log), vec![b"after rewind".to_vec()]);
        let newest: Vec<_> =
            log.records_newest_first().unwrap().iter().map(|r| r.payload.to_vec()).collect();
        assert_eq!(newest, vec![b"after rewind".to_vec()]);
    }
}

#[test]
fn raw_log_edges() {
    for m in media() {
        let p = m.path("raw.log");
        let log = create(&p, SIZE, Framing::Raw, m.persistence);
        assert!(matches!(log.records(), Err(WalError::WrongFraming { .. })));
        assert!(matches!(log.append_record(b"x"), Err(WalError::WrongFraming { .. })));
        assert_eq!(log.append(b"").unwrap(), RecordPos(0));
        assert_eq!(log.tell(), 0);
        log.append(b"This is the first string appended\n").unwrap();
        log.append_vectored(&[IoSlice::new(b"This is the "), IoSlice::new(b"second\n")]).unwrap();
        drop(log);
        let log = open(&p, m.persistence).unwrap();
        let want = b"This is the first string appended\nThis is the second\n".to_vec();
        assert_eq!(log.tell(), want.len() as u64);
        for chunk in [0usize, 1, 5, 16, 1000] {
            let mut got = Vec::new();
            log.walk(chunk, |c| {
                assert!(chunk == 0 || c.len() <= chunk);
                got.extend_from_slice(c);
                true
            })
            .unwrap();
            assert_eq!(got, want, "{}: chunk size {chunk}", m.name);
        }
        // Stopping early: the callback sees exactly one chunk.
        let mut calls = 0;
        log.walk(4, |_| {
            calls += 1;
            false
        })
        .unwrap();
        assert_eq!(calls, 1);
        // Exactly full, then one byte over.
        let free = log.nbyte() - log.tell();
        assert!(matches!(
            log.append(&vec![1u8; free as usize + 1]),
            Err(WalError::LogFull { needed, available, .. }) if needed == free + 1 && available == free
        ));
        log.append(&vec![1u8; free as usize]).unwrap();
        assert_eq!(log.tell(), log.nbyte());
        drop(log);
        let mut log = open(&p, m.persistence).unwrap();
        assert_eq!(log.tell(), log.nbyte());
        log.rewind().unwrap();
        log.append(b"new").unwrap();
        drop(log);
        let log = open(&p, m.persistence).unwrap();
        let mut got = Vec::new();
        log.walk(0, |c| {
            got.extend_from_slice(c);
            true
        })
        .unwrap();
        assert_eq!(got, b"new");
    }
}

#[test]
fn record_walk_chunks_never_span_records() {
    for m in media() {
        let p = m.path("walk.log");
        let log = create(&p, SIZE, Framing::Records, m.persistence);
        log.append(b"0123456789").unwrap();
        log.append(b"").unwrap();
        log.append(b"abc").unwrap();
        let mut seen = Vec::new();
        log.walk(4, |c| {
            seen.push(c.to_vec());
            true
        })
        .unwrap();
        let want: Vec<&[u8]> = vec![b"0123", b"4567", b"89", b"", b"abc"];
        assert_eq!(seen, want);
        let mut n = 0;
        log.walk(0, |_| {
            n += 1;
            n < 2
        })
        .unwrap();
        assert_eq!(n, 2, "walking stops when the callback says so");
    }
}

#[test]
fn buffered_appends_are_visible_and_sync_makes_them_durable() {
    for m in media() {
        let p = m.path("buffered.log");
        let log = create(&p, SIZE, Framing::Records, m.persistence);
        log.append_buffered(b"one").unwrap();
        log.append_buffered_vectored(&[IoSlice::new(b"t"), IoSlice::new(b"wo")]).unwrap();
        if log.durability().mode.uses_cache_lines() {
            // A record written with streaming stores and fenced is durable once it completes.
            assert_eq!(log.durable_tell(), log.tell());
        } else {
            assert_eq!(log.durable_tell(), 0, "{}: msync mode persists on sync", m.name);
        }
        assert_eq!(payloads(&log), vec![b"one".to_vec(), b"two".to_vec()]);
        log.sync().unwrap();
        assert_eq!(log.durable_tell(), log.tell());
        log.append_buffered(b"three").unwrap();
        log.append(b"four").unwrap(); // a durable append covers the buffered ones before it
        assert_eq!(log.durable_tell(), log.tell());
        drop(log);
        let log = open(&p, m.persistence).unwrap();
        assert_eq!(payloads(&log).len(), 4);
    }
}

#[test]
fn create_refuses_existing_files_and_bad_sizes_and_reports_durability() {
    for m in media() {
        let p = m.path("c.log");
        let log = create(&p, SIZE, Framing::Records, m.persistence);
        assert!(!log.durability().to_string().is_empty());
        if m.name == "emulated-nvm" {
            assert!(log.durability().mode.uses_cache_lines());
        }
        // A second open while the first holds the lock.
        assert!(matches!(Log::open(&p), Err(WalError::Storage(StorageError::AlreadyOpen { .. }))));
        drop(log);
        let o = common::opts(Framing::Records, m.persistence);
        assert!(matches!(
            Log::create(&p, SIZE, &o),
            Err(WalError::Storage(StorageError::AlreadyExists { .. }))
        ));
        let q = m.path("small.log");
        assert!(matches!(
            Log::create(&q, MIN_FILE_BYTES - 1, &o),
            Err(WalError::SizeOutOfRange { .. })
        ));
        assert!(!q.exists());
        Log::create(&q, MIN_FILE_BYTES, &o).unwrap();
    }
}

#[test]
fn read_only_logs_refuse_writes() {
    let m = &media()[0];
    let p = m.path("ro.log");
    drop(create(&p, SIZE, Framing::Records, m.persistence));
    let mut log =
        Log::open_with(&p, &nvpage_wal::OpenOptions { read_only: true, ..Default::default() })
            .unwrap();
    assert!(matches!(log.append(b"x"), Err(WalError::Storage(StorageError::ReadOnly { .. }))));
    assert!(log.rewind().is_err());
}

#[test]
fn zero_filled_logs_fill_to_the_edge_and_reopen_as_allocated_ones_do() {
    use nvpage_storage::file::unwritten_bytes;
    use nvpage_wal::{CreateOptions, Prefill};
    for m in media() {
        for framing in [Framing::Records, Framing::Raw] {
            let mut files = Vec::new();
            for prefill in [Prefill::Allocate, Prefill::Zeros] {
                let ctx = format!("{} {framing} {prefill:?}", m.name);
                let p = m.path(&format!("{framing}-{prefill:?}.log"));
                let opts =
                    CreateOptions { framing, prefill, ..common::opts(framing, m.persistence) };
                let log = Log::create(&p, SIZE, &opts).unwrap();
                assert_eq!((log.nbyte(), log.tell()), (1024, 0), "{ctx}");
                // What the option is for: on a file system that reports extents (ext4 here,
                // not tmpfs), a zero-filled log has no unwritten block left for an append to
                // pay a journal commit on; an allocated one has (where the file system keeps
                // unwritten extents at all).
                let unwritten = unwritten_bytes(&p).unwrap();
                eprintln!("{ctx}: unwritten bytes after create: {unwritten:?}");
                if prefill == Prefill::Zeros {
                    assert!(matches!(unwritten, None | Some(0)), "{ctx}: {unwritten:?}");
                }
                let mut n = 0u64;
                loop {
                    match log.append(&common::payload(n, 100)) {
                        Ok(_) => n += 1,
                        Err(WalError::LogFull { .. }) => break,
                        Err(e) => panic!("{ctx}: {e}"),
                    }
                }
                drop(log);
                let log = open(&p, m.persistence).unwrap();
                let per = if framing == Framing::Records { record_size(100) } else { 100 };
                assert_eq!(n, 1024 / per, "{ctx}: appends until full");
                assert_eq!(log.tell(), n * per, "{ctx}: reopened");
                if framing == Framing::Records {
                    let want: Vec<_> = (0..n).map(|i| common::payload(i, 100)).collect();
                    assert_eq!(payloads(&log), want, "{ctx}");
                }
                drop(log);
                let bytes = std::fs::read(&p).unwrap();
                assert_eq!(bytes.len() as u64, SIZE, "{ctx}: the file's length");
                files.push(bytes);
            }
            assert!(
                files[0] == files[1],
                "{} {framing}: both prefills hold the same bytes",
                m.name
            );
        }
    }
}
