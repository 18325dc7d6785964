//! Goal: `Log::create` with size 0 builds the log inside an existing file, taking the file's
//! size, as `pmemlog_create(path, 0, mode)` does (PMDK's own tests create their pools so, in
//! sparse files): the log is whole, its data area is the file less the header page, and the
//! file is no longer sparse; it reopens with what was appended. It refuses, with a typed error
//! and leaving the file's bytes as they were: a missing file, a file too small for a log, and a
//! file whose first page (where the header goes) is not all zeros — a log among them. Bytes
//! past the first page do not matter, and whatever they held never reads as a record. Both
//! framings, both persistence paths.

use crate::common;

use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use common::{media, open};
use nvpage_storage::StorageError;
use nvpage_wal::layout::{DATA_OFFSET, MIN_FILE_BYTES};
use nvpage_wal::{CreateOptions, Framing, Log, Uuid, WalError};

const FILE_BYTES: u64 = 2 << 20;

fn holey_file(p: &Path, len: u64) {
    std::fs::File::create(p).unwrap().set_len(len).unwrap();
}

/// Every payload of the log: its records, or its byte stream as one.
fn contents(log: &Log) -> Vec<Vec<u8>> {
    common::model::contents(log)
}

#[test]
fn create_with_size_zero_builds_the_log_in_an_existing_file() {
    for m in media() {
        for framing in [Framing::Raw, Framing::Records] {
            let ctx = format!("{} {framing}", m.name);
            let opts = CreateOptions {
                framing,
                persistence: m.persistence,
                ..CreateOptions::new(Uuid::from_u128(5))
            };

            // A sparse file: the log takes its size and fills its holes.
            let p = m.path(&format!("holey-{framing}"));
            holey_file(&p, FILE_BYTES);
            let log = Log::create(&p, 0, &opts).unwrap();
            assert_eq!((log.nbyte(), log.tell()), (FILE_BYTES - DATA_OFFSET as u64, 0), "{ctx}");
            let meta = std::fs::metadata(&p).unwrap();
            assert_eq!(meta.len(), FILE_BYTES, "{ctx}: the file keeps its size");
            assert!(meta.blocks() * 512 >= FILE_BYTES, "{ctx}: still sparse: {meta:?}");
            log.append(b"first").unwrap();
            log.append(b"second").unwrap();
            drop(log);
            let log = open(&p, m.persistence).unwrap();
            let want: Vec<Vec<u8>> = match framing {
                Framing::Records => vec![b"first".to_vec(), b"second".to_vec()],
                _ => vec![b"firstsecond".to_vec()],
            };
            assert_eq!(contents(&log), want, "{ctx}: reopened");
            drop(log);

            // Refused, the file untouched: the log just made (its header page is written).
            let before = std::fs::read(&p).unwrap();
            let r = Log::create(&p, 0, &opts);
            assert!(matches!(&r, Err(WalError::NotBlank { path }) if path == &p), "{ctx}: {r:?}");
            assert!(std::fs::read(&p).unwrap() == before, "{ctx}: a refusal changes nothing");
            // ... and while it is open, the lock says so first.
            let held = open(&p, m.persistence).unwrap();
            assert!(matches!(
                Log::create(&p, 0, &opts),
                Err(WalError::Storage(StorageError::AlreadyOpen { .. }))
            ));
            drop(held);

            // One byte in the header page is enough to refuse; bytes past it are overwritten.
            for (at, refused) in
                [(0, true), (DATA_OFFSET as u64 - 1, true), (DATA_OFFSET as u64, false)]
            {
                let p = m.path(&format!("byte-at-{at}-{framing}"));
                holey_file(&p, FILE_BYTES);
                let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
                f.write_all_at(&[0x5A], at).unwrap();
                drop(f);
                let r = Log::create(&p, 0, &opts);
                if refused {
                    assert!(matches!(r, Err(WalError::NotBlank { .. })), "{ctx}: byte at {at}");
                } else {
                    let log = r.unwrap();
                    assert!(contents(&log).is_empty(), "{ctx}: byte at {at}: a new log is empty");
                }
            }

            // Whatever the file held past its first page never reads as a record: here, the
            // records of a log of the same framing whose header page was zeroed.
            let p = m.path(&format!("old-log-{framing}"));
            let old = Log::create(&p, FILE_BYTES, &opts).unwrap();
            old.append(b"stale").unwrap();
            drop(old);
            let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
            f.write_all_at(&[0; DATA_OFFSET], 0).unwrap();
            drop(f);
            drop(Log::create(&p, 0, &opts).unwrap());
            let log = open(&p, m.persistence).unwrap();
            assert!(contents(&log).is_empty(), "{ctx}: an old record read as new");
            drop(log);
        }

        // No file, or one too small for a log.
        let opts = CreateOptions { persistence: m.persistence, ..CreateOptions::new(Uuid::nil()) };
        let p = m.path("missing");
        assert!(matches!(Log::create(&p, 0, &opts), Err(WalError::Missing { path }) if path == p));
        assert!(!p.exists());
        for len in [0, 1, MIN_FILE_BYTES - 1] {
            let p = m.path(&format!("small-{len}"));
            holey_file(&p, len);
            let r = Log::create(&p, 0, &opts);
            assert!(
                matches!(r, Err(WalError::SizeOutOfRange { size_bytes, .. }) if size_bytes == len),
                "{}: {len} bytes: {r:?}",
                m.name
            );
            assert_eq!(std::fs::metadata(&p).unwrap().len(), len, "{}: untouched", m.name);
        }
        let p = m.path("smallest");
        holey_file(&p, MIN_FILE_BYTES);
        assert_eq!(Log::create(&p, 0, &opts).unwrap().nbyte(), MIN_FILE_BYTES - DATA_OFFSET as u64);
    }
}
