//! Goal: damaged files never make the log panic or hand out a damaged record. A small record log
//! is cut at every byte offset (the file shortened there, and separately the bytes from there on
//! zeroed, as a lost tail would leave them), and every bit of its header page and data is flipped
//! in turn (in the unused rest of the header page, one byte in 64): `open` either returns the log with a clean prefix of the original records, or a typed
//! error (a damaged record below the tail names its offset).

use crate::common;

use std::os::unix::fs::FileExt;
use std::path::Path;

use common::model::contents;
use nvpage_storage::PersistRequest;
use nvpage_wal::layout::{DATA_OFFSET, LINE_RECORD_ALIGN};
use nvpage_wal::{Framing, Log, WalError};

const CAPACITY: u64 = 512;

/// Thousands of small files are written and opened: on tmpfs where there is one.
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() }.unwrap()
}

fn original(dir: &Path) -> (Vec<u8>, Vec<Vec<u8>>, u64) {
    let p = dir.join("orig.log");
    let log =
        common::create(&p, DATA_OFFSET as u64 + CAPACITY, Framing::Records, PersistRequest::Auto);
    let recs: Vec<Vec<u8>> =
        [0usize, 5, 33, 64, 100].iter().map(|&n| common::payload(n as u64, n)).collect();
    for r in &recs {
        log.append(r).unwrap();
    }
    let tail = log.tell();
    drop(log);
    (std::fs::read(&p).unwrap(), recs, tail)
}

/// Opens `bytes` as a log; checks the outcome is a clean prefix or a typed error.
fn check(path: &Path, bytes: &[u8], recs: &[Vec<u8>], ctx: &str) -> Result<usize, WalError> {
    std::fs::write(path, bytes).unwrap();
    match Log::open(path) {
        Ok(log) => {
            let got = contents(&log);
            assert!(got.len() <= recs.len() && got[..] == recs[..got.len()], "{ctx}: not a prefix");
            Ok(got.len())
        }
        Err(e) => Err(e),
    }
}

#[test]
fn cut_at_every_offset() {
    let dir = scratch();
    let (bytes, recs, tail) = original(dir.path());
    let p = dir.path().join("cut.log");
    for cut in 0..bytes.len() {
        let e = check(&p, &bytes[..cut], &recs, &format!("cut {cut}")).unwrap_err();
        assert!(
            matches!(e, WalError::Truncated { .. } | WalError::NotALog { .. }),
            "cut {cut}: {e}"
        );
    }
    let data_end = DATA_OFFSET + tail as usize;
    for zero_from in DATA_OFFSET..(data_end + 64).min(bytes.len()) {
        let mut b = bytes.clone();
        b[zero_from..].fill(0);
        match check(&p, &b, &recs, &format!("zeroed from {zero_from}")) {
            Ok(n) => assert_eq!(n, recs.len(), "zeroed from {zero_from}: bytes past the tail only"),
            Err(WalError::CorruptRecord { offset, .. }) => {
                // The damaged record holds the first zeroed byte, or follows padding (up to a line)
                // that did.
                let first = (zero_from - DATA_OFFSET) as u64;
                assert!(
                    zero_from < data_end && offset < tail && offset <= first + LINE_RECORD_ALIGN,
                    "{offset}"
                );
            }
            Err(e) => panic!("zeroed from {zero_from}: {e}"),
        }
    }
    std::fs::write(&p, &bytes).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.write_all_at(&[0xFF; 8], 64).unwrap();
    assert!(matches!(Log::open(&p), Err(WalError::CorruptState { .. })));
}

#[test]
fn flip_every_bit() {
    let dir =
        tempfile::tempdir_in(if Path::new("/dev/shm").is_dir() { "/dev/shm" } else { "/tmp" })
            .unwrap();
    let (bytes, recs, tail) = original(dir.path());
    let p = dir.path().join("flip.log");
    let end = DATA_OFFSET + tail as usize + 16;
    let (mut clean, mut errors) = (0, 0);
    // Every bit of the header line, the state line and the data up to past the tail; in the unused
    // rest of the header page (zeros no one reads), every bit of one byte in 64.
    let bytes_to_flip = (0..128).chain((128..DATA_OFFSET).step_by(64)).chain(DATA_OFFSET..end);
    for byte in bytes_to_flip {
        for bit in 0..8 {
            let mut b = bytes.clone();
            b[byte] ^= 1 << bit;
            match check(&p, &b, &recs, &format!("byte {byte} bit {bit}")) {
                Ok(_) => clean += 1,
                Err(_) => errors += 1,
            }
        }
    }
    // Flips in the header, its checksum, the state word and every record are all caught somewhere.
    assert!(errors >= (64 + 8) * 8, "{errors} errors, {clean} clean");
}
