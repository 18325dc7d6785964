//! Goal: logs written in formats 3 (before records were checked with a seeded hash), 4 (before
//! records were padded to whole cache lines) and 5 (before the capacity word let a log grow)
//! still open with every record, take appends in their own format, and survive a reopen and a
//! rewind; they keep their size even when the open allows growth; new logs are format 6. The
//! older logs are made here from a format-6 log by laying its records out again in the older
//! format's alignment, with each record's check computed for its new place by another XXH3
//! implementation than the log's, the capacity word zeroed as older formats left it, and the
//! header's version and the state word's watermark set to match.

use crate::common;

use common::{create, media, open, payload, payloads};
use nvpage_wal::layout::{
    CAPACITY_WORD_OFFSET, DATA_OFFSET, FORMAT_VERSION, LINE_RECORD_ALIGN, RECORD_ALIGN,
    RECORD_HEADER_LEN, STATE_OFFSET, State,
};
use nvpage_wal::{Framing, Log, OpenOptions, WalError};

/// Format 3's check of the record at data offset `pos`: XXH3-64 (seed 0) over its length and
/// generation (the header's first 8 bytes), `pos` and its payload.
fn check_v3(head: &[u8], pos: u64, payload: &[u8]) -> u64 {
    let mut all = head[..8].to_vec();
    all.extend_from_slice(&pos.to_le_bytes());
    all.extend_from_slice(payload);
    xxhash_rust::xxh3::xxh3_64(&all)
}

/// Formats 4 to 6's: XXH3-64 of the payload seeded with `pos | generation << 36`.
fn check_v4(head: &[u8], pos: u64, payload: &[u8]) -> u64 {
    let generation = u32::from_le_bytes(head[4..8].try_into().unwrap());
    xxhash_rust::xxh3::xxh3_64_with_seed(payload, pos | u64::from(generation) << 36)
}

/// The check of format `version`.
fn check_of(version: u32, head: &[u8], pos: u64, payload: &[u8]) -> u64 {
    if version == 3 { check_v3(head, pos, payload) } else { check_v4(head, pos, payload) }
}

/// Where format `version` places records.
fn align_of(version: u32) -> u64 {
    if version >= 5 { LINE_RECORD_ALIGN } else { RECORD_ALIGN }
}

/// The records of a record log file's bytes, placed at multiples of `align`, from data offset 0
/// up to `end`: (position, header, payload).
fn records_in(file: &[u8], end: u64, align: u64) -> Vec<(u64, Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = 0u64;
    while at < end {
        let s = DATA_OFFSET + at as usize;
        let len = u32::from_le_bytes(file[s..s + 4].try_into().unwrap()) as usize;
        let head = file[s..s + RECORD_HEADER_LEN].to_vec();
        let body = file[s + RECORD_HEADER_LEN..s + RECORD_HEADER_LEN + len].to_vec();
        out.push((at, head, body));
        at += (RECORD_HEADER_LEN + len) as u64;
        at = at.next_multiple_of(align);
    }
    out
}

/// Rewrites `file`, a format-6 record log whose records end at `end`, as format `version`
/// wrote it: records in that format's alignment with its check, no capacity word, the header's
/// version, and a watermark at the new end if the old one was at the old end. Returns the new
/// end.
fn as_format(file: &mut [u8], end: u64, version: u32) -> u64 {
    let records = records_in(file, end, LINE_RECORD_ALIGN);
    file[DATA_OFFSET..DATA_OFFSET + end as usize].fill(0);
    let mut at = 0u64;
    for (_, mut head, body) in records {
        let check = check_of(version, &head, at, &body);
        head[8..16].copy_from_slice(&check.to_le_bytes());
        let s = DATA_OFFSET + at as usize;
        file[s..s + RECORD_HEADER_LEN].copy_from_slice(&head);
        file[s + RECORD_HEADER_LEN..s + RECORD_HEADER_LEN + body.len()].copy_from_slice(&body);
        at = (at + (RECORD_HEADER_LEN + body.len()) as u64).next_multiple_of(align_of(version));
    }
    file[CAPACITY_WORD_OFFSET..CAPACITY_WORD_OFFSET + 8].fill(0);
    let word = u64::from_le_bytes(file[STATE_OFFSET..STATE_OFFSET + 8].try_into().unwrap());
    let state = State::decode(word).unwrap();
    if state.tail != 0 {
        assert_eq!(state.tail, end, "a watermark at the end or none");
        let moved = State { tail: at, ..state }.encode();
        file[STATE_OFFSET..STATE_OFFSET + 8].copy_from_slice(&moved.to_le_bytes());
    }
    common::set_version(file, version);
    at
}

#[test]
fn logs_of_formats_3_to_5_open_append_and_rewind_in_their_own_format() {
    for version in [3, 4, 5] {
        for m in media() {
            older_format(m, version);
        }
    }
}

fn older_format(m: common::Medium, version: u32) {
    let path = m.path(&format!("v{version}.log"));
    let _ = std::fs::remove_file(&path);
    let written: Vec<Vec<u8>> = [0usize, 10, 300, 4096, 5000]
        .iter()
        .enumerate()
        .map(|(i, &n)| payload(i as u64, n))
        .collect();
    let log = create(&path, 1 << 20, Framing::Records, m.persistence);
    assert_eq!(log.header().version, FORMAT_VERSION);
    assert_eq!(FORMAT_VERSION, 6);
    for p in &written {
        log.append(p).unwrap();
    }
    let end = log.tell();
    drop(log);

    // What this build wrote carries format 6's checks, its records on whole lines.
    let mut file = std::fs::read(&path).unwrap();
    for (pos, head, body) in records_in(&file, end, LINE_RECORD_ALIGN) {
        assert_eq!(pos % LINE_RECORD_ALIGN, 0);
        let stored = u64::from_le_bytes(head[8..16].try_into().unwrap());
        assert_eq!(stored, check_v4(&head, pos, &body), "{}: record at {pos}", m.name);
    }
    as_format(&mut file, end, version);
    std::fs::write(&path, &file).unwrap();

    let log = open(&path, m.persistence).expect("an older log opens");
    assert_eq!(log.header().version, version, "{}", m.name);
    assert_eq!(payloads(&log), written, "{}: every record read", m.name);
    let more = payload(9, 700);
    log.append(&more).unwrap();
    log.append_vectored(&[std::io::IoSlice::new(b"two "), std::io::IoSlice::new(b"parts")])
        .unwrap();
    let end = log.tell();
    drop(log);

    let file = std::fs::read(&path).unwrap();
    assert_eq!(u32::from_le_bytes(file[8..12].try_into().unwrap()), version, "same format");
    for (pos, head, body) in records_in(&file, end, align_of(version)) {
        let stored = u64::from_le_bytes(head[8..16].try_into().unwrap());
        assert_eq!(stored, check_of(version, &head, pos, &body), "{}: record at {pos}", m.name);
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
    assert_eq!(log.header().version, version);
    assert_eq!(payloads(&log), vec![b"after the rewind".to_vec()], "{}", m.name);
    drop(log);

    // An older format has no capacity word to grow by: it keeps its size and fills up.
    let size = std::fs::metadata(&path).unwrap().len();
    let grow =
        OpenOptions { persistence: m.persistence, max_bytes: Some(4 * size), ..Default::default() };
    let log = Log::open_with(&path, &grow).unwrap();
    assert_eq!(log.max_bytes(), size, "{}: the limit is the file's size", m.name);
    let full = loop {
        if let Err(e) = log.append(&payload(7, 4000)) {
            break e;
        }
    };
    assert!(matches!(full, WalError::LogFull { max_bytes, .. } if max_bytes == size), "{full}");
    drop(log);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), size, "{}: not grown", m.name);
}
