//! Goal: a log written in format 3 (before records were checked with a seeded hash) still opens
//! with every record, takes appends in its own format, and survives a reopen and a rewind; new
//! logs are format 4. Format 3's records are made here from format 4's by rewriting the header's
//! version and each record's check, computed with another XXH3 implementation than the log's.

mod common;

use common::{create, media, open, payload, payloads};
use nvpage_wal::layout::{DATA_OFFSET, FORMAT_VERSION, RECORD_HEADER_LEN, record_size};
use nvpage_wal::{Framing, Log};

/// Format 3's check of the record at data offset `pos`: XXH3-64 (seed 0) over its length and
/// generation (the header's first 8 bytes), `pos` and its payload.
fn check_v3(head: &[u8], pos: u64, payload: &[u8]) -> u64 {
    let mut all = head[..8].to_vec();
    all.extend_from_slice(&pos.to_le_bytes());
    all.extend_from_slice(payload);
    xxhash_rust::xxh3::xxh3_64(&all)
}

/// Format 4's: XXH3-64 of the payload seeded with `pos | generation << 36`.
fn check_v4(head: &[u8], pos: u64, payload: &[u8]) -> u64 {
    let generation = u32::from_le_bytes(head[4..8].try_into().unwrap());
    xxhash_rust::xxh3::xxh3_64_with_seed(payload, pos | u64::from(generation) << 36)
}

/// The records of a record log file's bytes from data offset 0 up to `end`: (position, header,
/// payload).
fn records_in(file: &[u8], end: u64) -> Vec<(u64, Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = 0u64;
    while at < end {
        let s = DATA_OFFSET + at as usize;
        let len = u32::from_le_bytes(file[s..s + 4].try_into().unwrap()) as usize;
        let head = file[s..s + RECORD_HEADER_LEN].to_vec();
        let body = file[s + RECORD_HEADER_LEN..s + RECORD_HEADER_LEN + len].to_vec();
        out.push((at, head, body));
        at += record_size(len as u64);
    }
    out
}

#[test]
fn a_format_3_log_opens_appends_and_rewinds_in_its_own_format() {
    for m in media() {
        let path = m.path("v3.log");
        let written: Vec<Vec<u8>> = [0usize, 10, 300, 4096, 5000]
            .iter()
            .enumerate()
            .map(|(i, &n)| payload(i as u64, n))
            .collect();
        let log = create(&path, 1 << 20, Framing::Records, m.persistence);
        assert_eq!(log.header().version, FORMAT_VERSION);
        for p in &written {
            log.append(p).unwrap();
        }
        let end = log.tell();
        drop(log);

        // What this build wrote carries format 4's checks.
        let mut file = std::fs::read(&path).unwrap();
        for (pos, head, body) in records_in(&file, end) {
            let stored = u64::from_le_bytes(head[8..16].try_into().unwrap());
            assert_eq!(stored, check_v4(&head, pos, &body), "{}: record at {pos}", m.name);
        }
        // Rewrite it as format 3: the header's version (and its checksum), each record's check.
        common::set_version(&mut file, 3);
        for (pos, head, body) in records_in(&file, end) {
            let s = DATA_OFFSET + pos as usize;
            file[s + 8..s + 16].copy_from_slice(&check_v3(&head, pos, &body).to_le_bytes());
        }
        std::fs::write(&path, &file).unwrap();

        let log = open(&path, m.persistence).expect("a format 3 log opens");
        assert_eq!(log.header().version, 3, "{}", m.name);
        assert_eq!(payloads(&log), written, "{}: every record read", m.name);
        let more = payload(9, 700);
        log.append(&more).unwrap();
        log.append_vectored(&[std::io::IoSlice::new(b"two "), std::io::IoSlice::new(b"parts")])
            .unwrap();
        let end = log.tell();
        drop(log);

        let file = std::fs::read(&path).unwrap();
        assert_eq!(u32::from_le_bytes(file[8..12].try_into().unwrap()), 3, "still format 3");
        for (pos, head, body) in records_in(&file, end) {
            let stored = u64::from_le_bytes(head[8..16].try_into().unwrap());
            assert_eq!(stored, check_v3(&head, pos, &body), "{}: record at {pos}", m.name);
        }
        let mut log: Log = open(&path, m.persistence).expect("reopen");
        let mut expected = written.clone();
        expected.push(more);
        expected.push(b"two parts".to_vec());
        assert_eq!(payloads(&log), expected, "{}: the appends found again", m.name);

        log.rewind().unwrap();
        log.append(b"after the rewind").unwrap();
        drop(log);
        let log = open(&path, m.persistence).expect("reopen after a rewind");
        assert_eq!(log.header().version, 3);
        assert_eq!(payloads(&log), vec![b"after the rewind".to_vec()], "{}", m.name);
    }
}
