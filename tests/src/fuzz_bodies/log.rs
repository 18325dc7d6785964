//! `log_records` and `log_recovery`: the log's record decoder and its recovery at open, on
//! arbitrary bytes.
//!
//! Whatever the bytes, `Log::open` returns a typed error or a log whose records are exactly a
//! clean run of valid records from the start of the data area: through the state word's
//! watermark with generations that never decrease and never pass the state word's, then on past
//! it with the state word's generation only. That is checked here against the file's bytes,
//! independently of the record decoder: each record's length, generation and XXH3-64 check
//! (format 4: of the payload, seeded with the offset and generation; format 3: over its first
//! 8 bytes, its offset and its payload, as `wal/src/layout.rs` draws them; computed here with
//! another crate, `xxhash-rust`, than the log's `twox-hash`) and the tiling of `[0, end)`. The
//! state word itself is decoded with the crate's `State`.

use std::path::Path;

use nvpage_wal::Uuid;
use nvpage_wal::layout::{
    CAPACITY_WORD_OFFSET, DATA_OFFSET, Decoded, FIRST_GENERATION, FORMAT_VERSION, GENERATION_MASK,
    GROWABLE_VERSION, HeaderFault, LogFault, LogHeader, MAGIC, MAX_CAPACITY, RECORD_HEADER_LEN,
    RecordCheck, STATE_OFFSET, Scan, State, decode_capacity, decode_log, encode_capacity,
    scan_records,
};
use nvpage_wal::{Framing, Log, OpenOptions, WalError};

use super::{Input, scratch_dir};

// The log header's fields (wal/src/layout.rs draws them; its offset constants are crate-private).
const VERSION_OFFSET: usize = 8;
const FRAMING_OFFSET: usize = 12;
const UUID_OFFSET: usize = 16;
const DATA_OFFSET_OFFSET: usize = 32;
const CAPACITY_OFFSET: usize = 40;
const HEADER_CRC_OFFSET: usize = 60;
/// Bytes of the log header.
pub(crate) const HEADER_LEN: usize = 64;
const FRAMING_RAW: u32 = 1;
const FRAMING_RECORDS: u32 = 2;

/// A valid log header of format `version`: `framing` is 1 (raw) or 2 (records).
pub(crate) fn log_header(
    version: u32,
    framing: u32,
    uuid: [u8; 16],
    capacity: u64,
) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&nvpage_wal::layout::MAGIC);
    h[VERSION_OFFSET..FRAMING_OFFSET].copy_from_slice(&version.to_le_bytes());
    h[FRAMING_OFFSET..UUID_OFFSET].copy_from_slice(&framing.to_le_bytes());
    h[UUID_OFFSET..DATA_OFFSET_OFFSET].copy_from_slice(&uuid);
    h[DATA_OFFSET_OFFSET..CAPACITY_OFFSET].copy_from_slice(&(DATA_OFFSET as u64).to_le_bytes());
    h[CAPACITY_OFFSET..CAPACITY_OFFSET + 8].copy_from_slice(&capacity.to_le_bytes());
    reseal_log_header(&mut h);
    h
}

/// Recomputes the header checksum of a log file (or header) of at least 64 bytes.
pub(crate) fn reseal_log_header(file: &mut [u8]) {
    let crc = crc32c::crc32c(&file[..HEADER_CRC_OFFSET]);
    file[HEADER_CRC_OFFSET..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
}

/// Puts database `uuid` into a log file's header and reseals it.
pub(crate) fn set_log_uuid(file: &mut [u8], uuid: &[u8]) {
    file[UUID_OFFSET..DATA_OFFSET_OFFSET].copy_from_slice(uuid);
    reseal_log_header(file);
}

/// The check a record at data offset `pos` with header `h` (length, generation) and `payload`
/// carries in a log of format `version`: from 4 on, XXH3-64 of the payload seeded with
/// `pos | generation << 36`; in 3, XXH3-64 over the header's first 8 bytes, `pos` and the
/// payload, in one buffer.
fn record_check(version: u32, h: &[u8], pos: u64, payload: &[u8]) -> u64 {
    if version >= 4 {
        let seed = pos | u64::from(u32_at(h, 4)) << 36;
        return xxhash_rust::xxh3::xxh3_64_with_seed(payload, seed);
    }
    let mut all = h[..8].to_vec();
    all.extend_from_slice(&pos.to_le_bytes());
    all.extend_from_slice(payload);
    xxhash_rust::xxh3::xxh3_64(&all)
}

/// Bytes a record of `len` payload bytes occupies in a log of format `version`.
fn record_size(version: u32, len: u64) -> u64 {
    RecordCheck::of_version(version).record_size(len)
}

/// The format version in a log file's header bytes (the current one if the file is too short
/// to hold it: such a file never opens).
fn file_version(file: &[u8]) -> u32 {
    if file.len() < FRAMING_OFFSET { FORMAT_VERSION } else { u32_at(file, VERSION_OFFSET) }
}

/// The format version a fuzz input's flags ask for: 3 if bit 5 is set, else 4 if bit 6 is, else
/// the current one (6): every record check this build reads is fuzzed (3: the prefixed check;
/// 4: the seeded check with 8-byte alignment; 5 and 6: records on whole lines, 6 with its
/// capacity word).
fn version_of_flags(flags: u8) -> u32 {
    if flags & 32 == 32 {
        3
    } else if flags & 64 == 64 {
        4
    } else {
        FORMAT_VERSION
    }
}

/// The capacity an open of `file` must find (its header is whole and sound): from format 6 the
/// capacity word's, if it decodes, else the header's.
fn capacity_of(file: &[u8]) -> u64 {
    let header = u64_at(file, CAPACITY_OFFSET);
    if file_version(file) < GROWABLE_VERSION {
        return header;
    }
    decode_capacity(u64_at(file, CAPACITY_WORD_OFFSET)).unwrap_or(header)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// Writes `bytes` as a file in the scratch directory, runs `f` on its path, removes it.
fn with_file<R>(name: &str, bytes: &[u8], f: impl FnOnce(&Path) -> R) -> R {
    let path = scratch_dir().join(name);
    std::fs::write(&path, bytes).expect("write the scratch file");
    let r = f(&path);
    let _ = std::fs::remove_file(&path);
    r
}

/// What an opened log must satisfy, checked against the file's bytes as they were before the
/// open (`read_only`: how it was opened); returns the record count.
fn check_open_log(log: &Log, file: &[u8], chunk: usize, read_only: bool) -> u64 {
    let capacity = log.nbyte();
    let tail = log.tell();
    assert!(tail <= capacity, "tail {tail} past capacity {capacity}");
    assert!(file.len() as u64 >= DATA_OFFSET as u64 + capacity, "a truncated log opened");
    assert_eq!(log.durable_tell(), tail, "a freshly opened log is durable up to its end");
    let word = u64::from_le_bytes(file[STATE_OFFSET..STATE_OFFSET + 8].try_into().unwrap());
    let state = State::decode(word).expect("a log with a damaged state word opened");
    let records_log = log.framing() == Framing::Records;
    let expected_generation = match (records_log && !read_only, state.generation) {
        (false, g) => g,
        (true, 0) => FIRST_GENERATION,
        (true, GENERATION_MASK) => GENERATION_MASK,
        (true, g) => g + 1,
    };
    assert_eq!(log.generation(), expected_generation, "the generation after open");
    if records_log && state.generation == 0 {
        assert_eq!(tail, 0, "a log waiting to be zeroed is empty");
    } else if records_log {
        assert!(tail >= state.tail, "the end {tail} is below the watermark {}", state.tail);
    } else {
        assert_eq!(tail, state.tail, "a raw log ends at its tail");
    }
    let data = &data_area(file, capacity)[..tail as usize];
    let mut walked = Vec::new();
    log.walk(chunk, |c| {
        assert!(chunk == 0 || c.len() <= chunk, "a chunk of {} bytes > {chunk}", c.len());
        walked.extend_from_slice(c);
        true
    })
    .expect("walk of an opened log");
    if log.framing() == Framing::Raw {
        assert!(matches!(log.records(), Err(WalError::WrongFraming { .. })));
        assert_eq!(walked, data, "a raw log's walk is its bytes below the tail");
        return 0;
    }
    let records: Vec<_> =
        log.records().expect("records").collect::<Result<_, _>>().expect("open checked them");
    let mut at = 0u64;
    let mut payloads = Vec::new();
    let mut min_generation = FIRST_GENERATION;
    for r in &records {
        assert_eq!(r.pos.0, at, "records tile the data area");
        let s = at as usize;
        let h = &data[s..s + RECORD_HEADER_LEN];
        assert_eq!(u32_at(h, 0) as usize, r.payload.len());
        let g = u32_at(h, 4);
        if at >= state.tail {
            assert_eq!(g, state.generation, "a record past the watermark of another generation");
        }
        assert!((min_generation..=state.generation).contains(&g), "generation {g} out of order");
        min_generation = g;
        assert_eq!(
            &data[s + RECORD_HEADER_LEN..s + RECORD_HEADER_LEN + r.payload.len()],
            r.payload
        );
        assert_eq!(
            u64_at(h, 8),
            record_check(log.header().version, h, at, r.payload),
            "payload not what its check covers"
        );
        payloads.extend_from_slice(r.payload);
        at += record_size(log.header().version, r.payload.len() as u64);
    }
    assert_eq!(at, tail, "the records end exactly at the end");
    if tail < capacity && state.generation != 0 {
        // The open stopped at the first record that is not whole and of the current generation.
        let next = &data_area(file, capacity)[tail as usize..];
        let version = log.header().version;
        assert!(!is_valid_record(next, tail, state.generation, version), "stopped too early");
    }
    assert_eq!(walked, payloads, "walk visits the records' payloads in order");
    assert_eq!(log.record_count(), records.len() as u64);
    let newest: Vec<_> = log.records_newest_first().expect("newest first");
    assert!(newest.iter().rev().eq(records.iter()), "newest first is oldest first reversed");
    records.len() as u64
}

fn data_area(file: &[u8], capacity: u64) -> &[u8] {
    &file[DATA_OFFSET..DATA_OFFSET + capacity as usize]
}

/// Whether `rest` (the data area from relative offset `at`) starts with a whole, valid record of
/// generation `generation`, checked as format `version` does.
fn is_valid_record(rest: &[u8], at: u64, generation: u32, version: u32) -> bool {
    if rest.len() < RECORD_HEADER_LEN {
        return false;
    }
    let len = u64::from(u32_at(rest, 0));
    if record_size(version, len) > rest.len() as u64 || u32_at(rest, 4) != generation {
        return false;
    }
    let payload = &rest[RECORD_HEADER_LEN..RECORD_HEADER_LEN + len as usize];
    u64_at(rest, 8) == record_check(version, rest, at, payload)
}

/// Repairs the checks of a log file's bytes as the mode byte of `log_records` and `log_decode`
/// asks, so that mutations reach what lies behind them: bit 4 reseals the records found from
/// the start of the data area to the state word's generation, bit 3 the state word's check byte
/// and (format 6 on) the capacity word's, bit 0 the header's checksum (in that order: the
/// header's checksum covers none of them).
fn reseal_file(file: &mut [u8], mode: u8) {
    if file.len() >= DATA_OFFSET {
        let word = u64_at(file, STATE_OFFSET);
        let generation = (word >> 36) as u32 & GENERATION_MASK;
        let state = State { tail: word & MAX_CAPACITY, generation };
        if mode & 16 == 16 {
            let capacity = u64_at(file, CAPACITY_OFFSET).min((file.len() - DATA_OFFSET) as u64);
            let version = file_version(file);
            let area = &mut file[DATA_OFFSET..DATA_OFFSET + capacity as usize];
            reseal_records(area, generation, version);
        }
        if mode & 8 == 8 {
            file[STATE_OFFSET..STATE_OFFSET + 8].copy_from_slice(&state.encode().to_le_bytes());
            if file_version(file) >= GROWABLE_VERSION {
                let capacity = u64_at(file, CAPACITY_WORD_OFFSET) & MAX_CAPACITY;
                let sealed = encode_capacity(capacity).to_le_bytes();
                file[CAPACITY_WORD_OFFSET..CAPACITY_WORD_OFFSET + 8].copy_from_slice(&sealed);
            }
        }
    }
    if mode & 1 == 1 && file.len() >= HEADER_LEN {
        reseal_log_header(file);
    }
}

/// Target `log_records`: arbitrary bytes as a log file. Input byte 0: bit 0 repairs the header
/// checksum, bit 3 the state and capacity words' check bytes, bit 4 reseals the records (so
/// mutations reach those words and the records; see `reseal_file`), bit 1 opens read-only; byte 1 is walk's
/// chunk size; the rest is the file.
pub fn log_records(data: &[u8]) {
    let mut input = Input::new(data);
    let mode = input.u8();
    let chunk = usize::from(input.u8());
    let mut file = input.rest().to_vec();
    reseal_file(&mut file, mode);
    let opts = OpenOptions { read_only: mode & 2 == 2, ..OpenOptions::default() };
    with_file("log_records.nvpage", &file, |path| match Log::open_with(path, &opts) {
        Ok(log) => {
            check_open_log(&log, &file, chunk, opts.read_only);
        }
        Err(e) => {
            let _ = e.to_string();
        }
    });
}

/// Walks `area` from offset 0, rewriting every record it finds (a length that fits) to
/// generation `generation` with a valid check of format `version`; returns where the run of
/// records ends and how many there are.
fn reseal_records(area: &mut [u8], generation: u32, version: u32) -> (u64, u64) {
    let (mut at, mut n) = (0usize, 0u64);
    while at + RECORD_HEADER_LEN <= area.len() {
        let len = u32_at(area, at) as u64;
        let size = record_size(version, len);
        if at as u64 + size > area.len() as u64 {
            break;
        }
        area[at + 4..at + 8].copy_from_slice(&generation.to_le_bytes());
        let payload_end = at + RECORD_HEADER_LEN + len as usize;
        let (h, payload) = (&area[at..at + 8], &area[at + RECORD_HEADER_LEN..payload_end]);
        let check = record_check(version, h, at as u64, payload);
        area[at + 8..at + 16].copy_from_slice(&check.to_le_bytes());
        at += size as usize;
        n += 1;
    }
    (at as u64, n)
}

/// Target `log_recovery`: a valid header, a state word from the input and an arbitrary data
/// area. Input: flags u8 (bit 0 raw framing; bit 1 reseal the records found from offset 0 to the
/// state word's generation; bit 2 set the tail to the end of that clean run; bit 3 cut the file
/// short; bit 4 store the state word as given, check byte and all, instead of sealing it; bit 5
/// a log of format 3, the oldest this build reads, instead of the current one), the state word
/// (tail, generation, check byte), a cut length u16, walk's chunk size u8; then the data area
/// (its length is the capacity, at least 64 bytes).
///
/// Properties: open returns a typed error or a clean run of records; a clean run whose tail is
/// its exact end always opens, with every record (none if the generation is 0, "zeroing
/// pending"); an opened log takes an append that a reopen finds after the others, and a rewind
/// empties it.
pub fn log_recovery(data: &[u8]) {
    let mut input = Input::new(data);
    let flags = input.u8();
    let word = input.u64();
    let cut = u64::from(input.u16());
    let chunk = usize::from(input.u8());
    let mut area = input.rest().to_vec();
    if area.len() < 64 {
        area.resize(64, 0);
    }
    let capacity = area.len() as u64;
    let generation = (word >> 36) as u32 & GENERATION_MASK;
    let mut tail = word & MAX_CAPACITY;
    let raw = flags & 1 == 1;
    let version = version_of_flags(flags);
    let mut clean = None;
    if flags & 2 == 2 && !raw {
        let (end, n) = reseal_records(&mut area, generation, version);
        if flags & 4 == 4 {
            tail = end;
            clean = Some(if generation == 0 { 0 } else { n });
        }
    }
    let framing = if raw { FRAMING_RAW } else { FRAMING_RECORDS };
    let mut file = vec![0u8; DATA_OFFSET];
    file[..HEADER_LEN].copy_from_slice(&log_header(version, framing, [7; 16], capacity));
    let sealed = flags & 16 == 0;
    let state = if sealed { State { tail, generation }.encode() } else { word };
    file[STATE_OFFSET..STATE_OFFSET + 8].copy_from_slice(&state.to_le_bytes());
    if version >= GROWABLE_VERSION {
        let word = encode_capacity(capacity).to_le_bytes();
        file[CAPACITY_WORD_OFFSET..CAPACITY_WORD_OFFSET + 8].copy_from_slice(&word);
    }
    file.extend_from_slice(&area);
    let cut_short = flags & 8 == 8 && cut > 0;
    if cut_short {
        let keep = file.len().saturating_sub(cut as usize);
        file.truncate(keep);
    }
    with_file("log_recovery.nvpage", &file, |path| {
        let opened = Log::open(path);
        if let (Some(n), false, true) = (clean, cut_short, sealed) {
            let log = match &opened {
                Ok(log) => log,
                Err(e) => panic!("a clean run of {n} records to the tail did not open: {e}"),
            };
            assert_eq!(log.record_count(), n);
        }
        let log = match opened {
            Ok(log) => log,
            Err(e) => {
                let _ = e.to_string();
                return;
            }
        };
        let n = check_open_log(&log, &file, chunk, false);
        let end = log.tell();
        if raw || end + record_size(log.header().version, 3) > log.nbyte() {
            return;
        }
        let pos = log.append_record(&[1, 2, 3]).expect("append to an opened log with room");
        assert_eq!(pos.0, end);
        drop(log);
        let after = std::fs::read(path).expect("read the log back");
        let log = Log::open(path).expect("reopen after an append");
        assert_eq!(check_open_log(&log, &after, 0, false), n + 1);
        let last = log.records_newest_first().expect("records")[0];
        assert_eq!((last.pos.0, last.payload), (end, &[1u8, 2, 3][..]));
        let mut log = log;
        log.rewind().expect("rewind");
        assert_eq!((log.tell(), log.record_count()), (0, 0));
        assert_eq!(log.records().expect("records").count(), 0);
    });
}

/// The scan an open must run, written independently of the crate (see `scan_records` in
/// `wal/src/layout.rs` for the rules), records checked as format `version` does:
/// `Ok((end, records))`, or `Err(offset)` of the damaged record below the watermark.
fn reference_scan(area: &[u8], state: State, version: u32) -> Result<(u64, u64), u64> {
    if state.generation == 0 {
        return Ok((0, 0));
    }
    let mark = state.tail;
    if mark > area.len() as u64 {
        return Err(mark);
    }
    let below = &area[..mark as usize];
    let (mut at, mut n, mut oldest) = (0u64, 0u64, FIRST_GENERATION);
    while at < mark {
        let rest = &below[at as usize..];
        let whole = rest.len() >= RECORD_HEADER_LEN
            && record_size(version, u64::from(u32_at(rest, 0))) <= rest.len() as u64;
        if !whole {
            return Err(at);
        }
        let g = u32_at(rest, 4);
        let len = u64::from(u32_at(rest, 0));
        let payload = &rest[RECORD_HEADER_LEN..RECORD_HEADER_LEN + len as usize];
        if !(oldest..=state.generation).contains(&g)
            || u64_at(rest, 8) != record_check(version, rest, at, payload)
        {
            return Err(at);
        }
        oldest = g;
        at += record_size(version, len);
        n += 1;
    }
    while is_valid_record(&area[at as usize..], at, state.generation, version) {
        at += record_size(version, u64::from(u32_at(&area[at as usize..], 0)));
        n += 1;
    }
    Ok((at, n))
}

/// Target `log_scan`: the log's decoders and its recovery scan on arbitrary bytes, with no file
/// (so it runs many times faster than `log_recovery`, which opens real files): the state word's
/// decoder, the header's decoder and `scan_records`, the function `Log::open` runs over the
/// data area, checked against [`reference_scan`]. Input: `log_recovery`'s format, so either
/// corpus seeds the other — flags u8 (bit 0 also decode the area's first 64 bytes as a log
/// header, its checksum resealed; bit 1 reseal the records found from offset 0 to the state
/// word's generation; bit 2 set the tail to the end of that clean run; bit 3 cut the area short
/// by the cut length; bit 4 take the state word as given, check byte and all; bit 5 check
/// records as format 3 does, instead of the current format), the state word (tail, generation,
/// check byte), the cut length u16, one unused byte, then the data area.
///
/// Properties: no decoder panics; a decoded state word or header encodes back to itself; the
/// scan agrees with the reference exactly (where the records end and how many, or which record
/// below the watermark is damaged); a clean run whose tail is its exact end scans whole.
pub fn log_scan(data: &[u8]) {
    let mut input = Input::new(data);
    let flags = input.u8();
    let word = input.u64();
    let cut = usize::from(input.u16());
    let _ = input.u8();
    let mut area = input.rest().to_vec();
    if flags & 1 == 1 && area.len() >= HEADER_LEN {
        let mut h = [0u8; HEADER_LEN];
        h.copy_from_slice(&area[..HEADER_LEN]);
        reseal_log_header(&mut h);
        if let Ok(header) = LogHeader::decode(&h) {
            assert_eq!(LogHeader::decode(&header.encode()), Ok(header), "header round trip");
        }
    }
    let generation = (word >> 36) as u32 & GENERATION_MASK;
    let mut tail = word & MAX_CAPACITY;
    let version = version_of_flags(flags);
    let mut clean = None;
    if flags & 2 == 2 {
        let (end, n) = reseal_records(&mut area, generation, version);
        if flags & 4 == 4 {
            tail = end;
            clean = Some(if generation == 0 { 0 } else { n });
        }
    }
    let cut_short = flags & 8 == 8 && cut > 0;
    if cut_short {
        area.truncate(area.len().saturating_sub(cut));
    }
    let state = if flags & 16 == 0 {
        let state = State { tail, generation };
        assert_eq!(State::decode(state.encode()), Ok(state), "state word round trip");
        state
    } else {
        match State::decode(word) {
            Ok(state) => {
                assert_eq!(state.encode(), word, "a decoded state word encodes back to itself");
                state
            }
            Err(e) => {
                let _ = e.to_string();
                return;
            }
        }
    };
    let got = scan_records(&area, state, RecordCheck::of_version(version));
    let want = reference_scan(&area, state, version);
    match (&got, want) {
        (Ok(Scan { end, records }), Ok((e, n))) => {
            assert_eq!((*end, *records), (e, n), "the scan and the reference disagree");
        }
        (Err(fault), Err(offset)) => {
            assert_eq!(fault.offset, offset, "damage found at another record: {}", fault.reason);
        }
        (got, want) => panic!("the scan found {got:?}, the reference {want:?}"),
    }
    if let (Some(n), false, 0) = (clean, cut_short, flags & 16) {
        // Generation 0 ("zeroing pending") holds nothing, whatever the tail says.
        let end = if generation == 0 { 0 } else { tail };
        assert_eq!(got.map(|s| (s.end, s.records)), Ok((end, n)), "a clean run to the tail");
    }
}

/// Target `log_decode`: arbitrary bytes as a whole log file, decoded as an open decodes them
/// (`decode_log`, which `Log::open` runs over the mapped file) but with no file, so it runs
/// many times faster than `log_records`, whose input format it extends (its corpus started
/// from `log_records`'s): byte 0 — bit 0 repairs the header checksum, bit 2 expects the
/// database UUID 07070707-…, bit 3 repairs the state and capacity words' check bytes, bit 4 reseals the
/// records found from the start of the data area to the state word's generation (so that
/// mutations reach the records behind the checks); byte 1 is unused; the rest is the file.
///
/// Properties: no panic; every outcome is checked against the bytes independently — a decoded
/// log has a header that encodes back to itself, the capacity of its format (from format 6
/// the capacity word's, never below the header's), the length its capacity needs, the state word
/// found at its offset with its tail within the capacity, and (a record log) exactly the
/// records `reference_scan` finds; each error names a fault the bytes really have.
pub fn log_decode(data: &[u8]) {
    let mut input = Input::new(data);
    let mode = input.u8();
    let _ = input.u8();
    let mut file = input.rest().to_vec();
    reseal_file(&mut file, mode);
    let expect = (mode & 4 == 4).then(|| Uuid::from_bytes([7; 16]));
    let word = (file.len() >= STATE_OFFSET + 8).then(|| u64_at(&file, STATE_OFFSET));
    match decode_log(&file, expect) {
        Ok(Decoded { header, capacity, state, scan }) => {
            let mut head = [0u8; HEADER_LEN];
            head.copy_from_slice(&file[..HEADER_LEN]);
            assert_eq!(LogHeader::decode(&head), Ok(header), "the header decodes alone");
            assert_eq!(LogHeader::decode(&header.encode()), Ok(header), "header round trip");
            assert_eq!(capacity, capacity_of(&file), "the capacity of the file's format");
            assert!(capacity >= header.capacity, "a capacity below the one at create decoded");
            assert!(file.len() as u64 >= DATA_OFFSET as u64 + capacity, "a truncated log decoded");
            assert!(expect.is_none_or(|u| u == header.uuid), "a foreign log decoded");
            assert_eq!(word.map(State::decode), Some(Ok(state)), "the state word at its offset");
            assert!(state.tail <= capacity, "a tail past the capacity decoded");
            let area = data_area(&file, capacity);
            match (header.framing, scan) {
                (Framing::Raw, None) => {}
                (Framing::Records, Some(Scan { end, records })) => {
                    let want = reference_scan(area, state, header.version);
                    assert_eq!(want, Ok((end, records)), "the records");
                }
                (framing, scan) => panic!("a {framing} log decoded with records {scan:?}"),
            }
        }
        Err(LogFault::Header(f)) if file.len() < DATA_OFFSET => {
            assert_eq!(f, HeaderFault::NotALog, "a short file's only header fault is its magic");
            assert!(file.len() >= MAGIC.len() && file[..MAGIC.len()] != MAGIC, "magic is right");
        }
        Err(LogFault::Header(f)) => {
            let mut head = [0u8; HEADER_LEN];
            head.copy_from_slice(&file[..HEADER_LEN]);
            assert_eq!(LogHeader::decode(&head), Err(f), "the header decodes alone the same");
        }
        Err(LogFault::Truncated { expected_bytes, found_bytes }) => {
            assert_eq!(found_bytes, file.len() as u64);
            assert!(found_bytes < expected_bytes, "{found_bytes} bytes called short");
        }
        Err(LogFault::Foreign { expected, found }) => {
            assert_eq!(Some(expected), expect);
            assert_ne!(expected, found);
            assert_eq!(&file[UUID_OFFSET..DATA_OFFSET_OFFSET], found.as_bytes());
        }
        Err(LogFault::Capacity { word: w, reason }) => {
            assert!(file_version(&file) >= GROWABLE_VERSION, "a capacity word in format < 6");
            assert_eq!(w, u64_at(&file, CAPACITY_WORD_OFFSET), "another word than the capacity's");
            let bad = decode_capacity(w).map_or(true, |c| c < u64_at(&file, CAPACITY_OFFSET));
            assert!(bad, "a sound capacity word reported damaged: {reason}");
        }
        Err(LogFault::State { word: w, reason }) => {
            assert_eq!(Some(w), word, "another word than the one at the state offset");
            let capacity = capacity_of(&file);
            let bad = State::decode(w).map_or(true, |s| s.tail > capacity);
            assert!(bad, "a sound state word reported damaged: {reason}");
        }
        Err(LogFault::Record(fault)) => {
            let capacity = capacity_of(&file);
            let state = word.map(State::decode).expect("a word").expect("a sound word");
            let got = reference_scan(data_area(&file, capacity), state, file_version(&file));
            assert_eq!(got, Err(fault.offset), "damage at another record: {}", fault.reason);
        }
    }
}
