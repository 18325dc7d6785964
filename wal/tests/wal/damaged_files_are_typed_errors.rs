//! Goal: a missing file, a file that is not a log, a damaged header, a truncated log, a damaged
//! or zeroed state word, a damaged, zeroed or shrunken capacity word, a format too old or too
//! new and another database's log are each a typed error at open, never a panic.

use crate::common;

use std::os::unix::fs::FileExt;

use common::create;
use nvpage_storage::PersistRequest;
use nvpage_wal::layout::{CAPACITY_WORD_OFFSET, DATA_OFFSET, FORMAT_VERSION, encode_capacity};
use nvpage_wal::{Framing, Log, WalError};
use uuid::Uuid;

#[test]
fn damaged_and_foreign_files() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.log");
    assert!(matches!(Log::open(&missing), Err(WalError::Missing { .. })));

    let empty = dir.path().join("empty.log");
    std::fs::write(&empty, b"").unwrap();
    assert!(matches!(Log::open(&empty), Err(WalError::Truncated { found_bytes: 0, .. })));

    let junk = dir.path().join("junk.log");
    std::fs::write(&junk, vec![0xA5u8; 10_000]).unwrap();
    assert!(matches!(Log::open(&junk), Err(WalError::NotALog { .. })));
    std::fs::write(&junk, b"not a log at all").unwrap();
    assert!(matches!(Log::open(&junk), Err(WalError::NotALog { .. })));

    let good = dir.path().join("good.log");
    drop(create(&good, DATA_OFFSET as u64 + 4096, Framing::Records, PersistRequest::Auto));
    let bytes = std::fs::read(&good).unwrap();

    let uuid = Uuid::from_u128(0x1234);
    assert_eq!(Log::open_for(&good, uuid).unwrap().uuid(), uuid);
    let other = Uuid::from_u128(0x9999);
    match Log::open_for(&good, other) {
        Err(WalError::ForeignLog { expected, found, .. }) => {
            assert_eq!((expected, found), (other, uuid));
        }
        r => panic!("expected ForeignLog, got {r:?}"),
    }

    let hdr = dir.path().join("hdr.log");
    let mut b = bytes.clone();
    b[20] ^= 0x10; // inside the UUID
    std::fs::write(&hdr, &b).unwrap();
    assert!(matches!(Log::open(&hdr), Err(WalError::CorruptHeader { .. })));

    let short = dir.path().join("short.log");
    std::fs::write(&short, &bytes[..DATA_OFFSET + 100]).unwrap();
    assert!(matches!(
        Log::open(&short),
        Err(WalError::Truncated { expected_bytes, found_bytes, .. })
            if expected_bytes == bytes.len() as u64 && found_bytes == DATA_OFFSET as u64 + 100
    ));

    let state = dir.path().join("state.log");
    std::fs::write(&state, &bytes).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&state).unwrap();
    f.write_all_at(&(1u64 << 30).to_le_bytes(), 64).unwrap();
    assert!(matches!(Log::open(&state), Err(WalError::CorruptState { .. })));

    // A zeroed state word is damage, not "tail 0" (which would empty a raw log) nor "zeroing
    // pending" (which would erase a record log's data area), and the file is left as it was.
    for framing in [Framing::Raw, Framing::Records] {
        let zeroed = dir.path().join(format!("zeroed-{framing}.log"));
        let log = create(&zeroed, DATA_OFFSET as u64 + 4096, framing, PersistRequest::Auto);
        log.append(b"acknowledged").unwrap();
        drop(log);
        let f = std::fs::OpenOptions::new().write(true).open(&zeroed).unwrap();
        f.write_all_at(&[0u8; 8], 64).unwrap();
        let before = std::fs::read(&zeroed).unwrap();
        assert!(
            matches!(Log::open(&zeroed), Err(WalError::CorruptState { word: 0, .. })),
            "{framing}"
        );
        assert_eq!(std::fs::read(&zeroed).unwrap(), before, "{framing}: the open changed nothing");
    }

    // A damaged capacity word (a flipped bit, zeros, or a capacity below the one at create) is
    // damage, not a capacity: the log could hold records past any capacity read from it.
    let capacity = dir.path().join("capacity.log");
    let word = encode_capacity(4096);
    for (bad, what) in
        [(word ^ 1 << 13, "a flipped bit"), (0, "zeros"), (encode_capacity(64), "less")]
    {
        let mut b = bytes.clone();
        b[CAPACITY_WORD_OFFSET..CAPACITY_WORD_OFFSET + 8].copy_from_slice(&bad.to_le_bytes());
        std::fs::write(&capacity, &b).unwrap();
        match Log::open(&capacity) {
            Err(e @ WalError::CorruptCapacity { .. }) => {
                assert!(e.to_string().contains(&*capacity.to_string_lossy()), "{what}: {e}")
            }
            r => panic!("{what}: expected CorruptCapacity, got {:?}", r.map(|_| ())),
        }
    }
    // A capacity past the file's end is a truncated log.
    let mut b = bytes.clone();
    b[CAPACITY_WORD_OFFSET..CAPACITY_WORD_OFFSET + 8]
        .copy_from_slice(&encode_capacity(8192).to_le_bytes());
    std::fs::write(&capacity, &b).unwrap();
    let needed = DATA_OFFSET as u64 + 8192;
    assert!(matches!(
        Log::open(&capacity),
        Err(WalError::Truncated { expected_bytes, .. }) if expected_bytes == needed
    ));

    // A log of an older format is named as such.
    let old = dir.path().join("old.log");
    let mut b = bytes.clone();
    common::set_version(&mut b, 2);
    std::fs::write(&old, &b).unwrap();
    assert!(matches!(
        Log::open(&old),
        Err(WalError::VersionMismatch { expected: FORMAT_VERSION, found: 2, .. })
    ));
    // So is one newer than this build.
    let mut b = bytes.clone();
    common::set_version(&mut b, FORMAT_VERSION + 1);
    std::fs::write(&old, &b).unwrap();
    assert!(matches!(
        Log::open(&old),
        Err(WalError::VersionMismatch { expected: FORMAT_VERSION, found, .. })
            if found == FORMAT_VERSION + 1
    ));
}
