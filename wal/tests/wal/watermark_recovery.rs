//! Goal: a record log's watermark protocol never loses an acknowledged record and never brings
//! back one that was not. Records past the watermark are found by reading on; a record left
//! behind a torn one must stay dead even when later appends line up exactly with it; the rewind
//! that wraps the 20-bit generation zeroes the data area first, and an open finishes a zeroing
//! that was cut short. The crashes here are written into the file directly (the state word as a
//! crash before a watermark store leaves it), on both persistence paths.

use crate::common;

use std::path::Path;

use common::{create, media, open, payload, payloads};
use nvpage_storage::sim::{Fault, Sim, Tear};
use nvpage_storage::{PersistRequest, SimOp, StorageError};
use nvpage_wal::layout::{
    DATA_OFFSET, FIRST_GENERATION, GENERATION_MASK, RECORD_HEADER_LEN, STATE_OFFSET, State,
    record_size,
};
use nvpage_wal::{Framing, Log, MARK_INTERVAL, OpenOptions, WalError};

const SIZE: u64 = DATA_OFFSET as u64 + 16 * 1024;

fn read_state(path: &Path) -> (u64, u32) {
    let f = std::fs::read(path).unwrap();
    let w = u64::from_le_bytes(f[STATE_OFFSET..STATE_OFFSET + 8].try_into().unwrap());
    let s = State::decode(w).unwrap();
    (s.tail, s.generation)
}

/// Overwrites the state word, as a crash before a later store of it would have left it.
fn write_state(path: &Path, tail: u64, generation: u32) {
    let mut f = std::fs::read(path).unwrap();
    let w = State { tail, generation }.encode();
    f[STATE_OFFSET..STATE_OFFSET + 8].copy_from_slice(&w.to_le_bytes());
    std::fs::write(path, f).unwrap();
}

fn flip_byte(path: &Path, data_offset: u64) {
    let mut f = std::fs::read(path).unwrap();
    f[DATA_OFFSET + data_offset as usize] ^= 0x40;
    std::fs::write(path, f).unwrap();
}

#[test]
fn records_past_the_watermark_are_found_and_a_record_behind_a_torn_one_stays_dead() {
    for m in media() {
        let p = m.path("wm.log");
        let log = create(&p, SIZE, Framing::Records, m.persistence);
        let (mark0, _) = read_state(&p);
        let recs: Vec<Vec<u8>> = (0..4).map(|i| payload(i, 200)).collect();
        let pos: Vec<u64> = recs.iter().map(|r| log.append(r).unwrap().0).collect();
        let generation = log.generation();
        drop(log);

        // A crash before any watermark store: the four records are past it, and all are found.
        write_state(&p, mark0, generation);
        let log = open(&p, m.persistence).unwrap();
        assert_eq!(payloads(&log), recs, "{}: records past the watermark", m.name);
        assert_eq!(read_state(&p).0, log.tell(), "{}: open stores the end it found", m.name);
        drop(log);

        // Record 2 torn (never acknowledged, say): the log ends before it, record 3 is not read.
        write_state(&p, mark0, generation);
        flip_byte(&p, pos[2] + RECORD_HEADER_LEN as u64 + 5);
        let log = open(&p, m.persistence).unwrap();
        assert_eq!(payloads(&log), recs[..2], "{}: the log ends at the torn record", m.name);
        assert_eq!(read_state(&p), (pos[2], log.generation()), "{}: stored at open", m.name);
        // An append of the same size lands exactly where record 2 was, so record 3 follows it
        // byte for byte as before. It carries an older generation and must stay dead.
        let again = payload(9, 200);
        assert_eq!(log.append(&again).unwrap().0, pos[2]);
        let after = log.generation();
        drop(log);
        // A crash before the close's watermark store leaves the one the open stored.
        write_state(&p, pos[2], after);
        let log = open(&p, m.persistence).unwrap();
        let want = vec![recs[0].clone(), recs[1].clone(), again.clone()];
        assert_eq!(payloads(&log), want, "{}: the stale record came back", m.name);
        assert_eq!(log.tell(), pos[3], "{}", m.name);
    }
}

#[test]
fn damage_below_the_watermark_is_an_error_naming_the_offset() {
    for m in media() {
        let p = m.path("below.log");
        let log = create(&p, SIZE, Framing::Records, m.persistence);
        let pos: Vec<u64> = (0..3).map(|i| log.append(&payload(i, 100)).unwrap().0).collect();
        log.sync().unwrap();
        assert_eq!(read_state(&p).0, log.tell(), "{}: sync stores the watermark", m.name);
        drop(log);
        flip_byte(&p, pos[1] + RECORD_HEADER_LEN as u64);
        match open(&p, m.persistence) {
            Err(WalError::CorruptRecord { offset, .. }) => assert_eq!(offset, pos[1]),
            other => panic!("{}: expected CorruptRecord, got {other:?}", m.name),
        }
    }
}

#[test]
fn the_rewind_that_wraps_the_generation_zeroes_the_log_first() {
    for m in media() {
        let p = m.path("wrap.log");
        drop(create(&p, SIZE, Framing::Records, m.persistence));
        // Jump to the generation before the last; the open takes the last.
        write_state(&p, 0, GENERATION_MASK - 1);
        let mut log = open(&p, m.persistence).unwrap();
        assert_eq!(log.generation(), GENERATION_MASK);
        let old: Vec<Vec<u8>> = (0..5).map(|i| payload(i, 300)).collect();
        for r in &old {
            log.append(r).unwrap();
        }
        log.rewind().unwrap();
        assert_eq!(log.generation(), FIRST_GENERATION);
        assert_eq!((log.tell(), log.record_count()), (0, 0));
        drop(log);
        let f = std::fs::read(&p).unwrap();
        assert!(f[DATA_OFFSET..].iter().all(|&b| b == 0), "{}: the data area is zeroed", m.name);
        let log = open(&p, m.persistence).unwrap();
        assert!(payloads(&log).is_empty());
        assert_eq!(log.generation(), FIRST_GENERATION + 1);
    }
}

#[test]
fn an_open_at_the_last_generation_erases_what_lies_past_the_end() {
    for m in media() {
        let p = m.path("last.log");
        drop(create(&p, SIZE, Framing::Records, m.persistence));
        write_state(&p, 0, GENERATION_MASK);
        let log = open(&p, m.persistence).unwrap();
        let recs: Vec<Vec<u8>> = (0..3).map(|i| payload(i, 64)).collect();
        let pos: Vec<u64> = recs.iter().map(|r| log.append(r).unwrap().0).collect();
        drop(log);
        write_state(&p, 0, GENERATION_MASK);
        flip_byte(&p, pos[1] + RECORD_HEADER_LEN as u64);
        let log = open(&p, m.persistence).unwrap();
        assert_eq!(log.generation(), GENERATION_MASK, "no new generation without wrapping");
        assert_eq!(payloads(&log), recs[..1]);
        drop(log);
        let f = std::fs::read(&p).unwrap();
        let end = DATA_OFFSET + record_size(64) as usize;
        assert!(f[end..].iter().all(|&b| b == 0), "{}: past the end is zeroed", m.name);
    }
}

#[test]
fn an_interrupted_wrap_is_finished_by_the_next_open() {
    for m in media() {
        let p = m.path("pending.log");
        let log = create(&p, SIZE, Framing::Records, m.persistence);
        for i in 0..4 {
            log.append(&payload(i, 500)).unwrap();
        }
        drop(log);
        // The wrapping rewind stored (0, generation 0) and crashed before zeroing.
        write_state(&p, 0, 0);
        let ro = OpenOptions { read_only: true, persistence: m.persistence, ..Default::default() };
        let log = Log::open_with(&p, &ro).unwrap();
        assert!(payloads(&log).is_empty(), "{}: a log waiting to be zeroed is empty", m.name);
        drop(log);
        let log = open(&p, m.persistence).unwrap();
        assert!(payloads(&log).is_empty());
        assert_eq!(log.generation(), FIRST_GENERATION);
        drop(log);
        let f = std::fs::read(&p).unwrap();
        assert!(f[DATA_OFFSET..].iter().all(|&b| b == 0), "{}: zeroed", m.name);
        assert_eq!(read_state(&p), (0, FIRST_GENERATION));
    }
}

/// An open that finds records past the watermark persists them before it stores a watermark
/// above them. A process that died with buffered appends (or before its sync) left them in the
/// page cache; moved below the watermark unpersisted, a power cut after the open would leave
/// damage there, and the log would not open again.
#[test]
fn an_open_persists_the_records_it_finds_before_storing_a_watermark_over_them() {
    for m in media() {
        for seed in 0..8u64 {
            let dir = tempfile::tempdir_in(m.dir.path()).unwrap();
            let sim = Sim::attach(dir.path(), seed);
            let p = dir.path().join("found.log");
            let log = create(&p, SIZE, Framing::Records, m.persistence);
            log.append(&payload(999, 100)).unwrap();
            for i in 0..20 {
                log.append_buffered(&payload(i, 300)).unwrap();
            }
            // The process dies: what it wrote stays in the page cache.
            drop(log);
            let log = open(&p, m.persistence).unwrap();
            let found = payloads(&log);
            assert_eq!(found.len(), 21, "{}: seed {seed}", m.name);
            drop(log);
            // A power cut after the recovery.
            sim.crash(Tear::Sector);
            let log = open(&p, m.persistence).unwrap_or_else(|e| {
                panic!("{}: seed {seed}: the log no longer opens: {e}", m.name)
            });
            assert_eq!(payloads(&log), found, "{}: seed {seed}", m.name);
        }
    }
}

/// On the cache-line path a watermark that is due is stored with the next append and made
/// durable by that append's own fence: appends past the interval cost one persist each, the
/// watermark's included, and the durable image holds the watermark as soon as the append that
/// carried it returns. It covers exactly the appends before that one, and a power cut after it
/// loses nothing.
#[test]
fn a_due_watermark_is_persisted_by_the_next_appends_own_fence() {
    let Some(m) = media().into_iter().find(|m| m.persistence == PersistRequest::CacheLine) else {
        return;
    };
    let dir = tempfile::tempdir_in(m.dir.path()).unwrap();
    let sim = Sim::attach(dir.path(), 5);
    let p = dir.path().join("ride.log");
    let log = create(&p, DATA_OFFSET as u64 + (1 << 20), Framing::Records, m.persistence);
    let persists = sim.counts().persists;
    let n = MARK_INTERVAL / record_size(4096) + 3;
    let mut appended = Vec::new();
    let mut carried = None;
    for i in 0..n {
        appended.push(payload(i, 4096));
        let pos = log.append(&appended[i as usize]).unwrap().0;
        if carried.is_none() && log.stored_mark() > 0 {
            carried = Some((pos, log.stored_mark()));
        }
    }
    assert_eq!(sim.counts().persists - persists, n, "one persist per append, the mark's included");
    let (pos, mark) = carried.expect("the appends passed the interval, so a watermark was stored");
    assert_eq!(mark, pos, "the watermark covers exactly the appends before its carrier");
    assert!(mark >= MARK_INTERVAL && mark < MARK_INTERVAL + record_size(4096));
    let image = sim.durable_image(&p).expect("followed");
    let word = u64::from_le_bytes(image[STATE_OFFSET..STATE_OFFSET + 8].try_into().unwrap());
    assert_eq!(State::decode(word).unwrap().tail, mark, "durable with its carrier's fence");
    drop(log);
    sim.crash(Tear::Sector);
    let log = open(&p, m.persistence).unwrap();
    assert_eq!(payloads(&log), appended, "every acknowledged record survives the power cut");
}

/// The rewind that wraps the generation stores "zeroing pending" (generation 0), then zeroes
/// the data area. If the zeroing fails the log is poisoned: an append now would be written in
/// a generation the next open erases. The next open finishes the zeroing.
#[test]
fn a_wrapping_rewind_whose_zeroing_fails_poisons_the_log() {
    for m in media() {
        let dir = tempfile::tempdir_in(m.dir.path()).unwrap();
        let p = dir.path().join("wrap.log");
        drop(create(&p, SIZE, Framing::Records, m.persistence));
        write_state(&p, 0, GENERATION_MASK);
        let sim = Sim::attach(dir.path(), 1);
        let mut log = open(&p, m.persistence).unwrap();
        assert_eq!(log.generation(), GENERATION_MASK);
        sim.fail(Fault::once(Some(SimOp::Write), 0));
        assert!(log.rewind().is_err(), "{}", m.name);
        assert!(log.is_poisoned(), "{}: a failed zeroing poisons", m.name);
        assert!(matches!(
            log.append(b"after"),
            Err(WalError::Storage(StorageError::Poisoned { .. }))
        ));
        drop(log);
        let log = open(&p, m.persistence).unwrap();
        assert_eq!(log.generation(), FIRST_GENERATION, "{}: the open finished the zeroing", m.name);
        assert!(payloads(&log).is_empty());
        log.append(&payload(7, 64)).unwrap();
        drop(log);
        let log = open(&p, m.persistence).unwrap();
        assert_eq!(payloads(&log), vec![payload(7, 64)], "{}", m.name);
    }
}
