//! Goal: many threads appending at once (durable, vectored and buffered appends of random sizes)
//! leave every record present exactly once, intact, and each thread's records in its own order.

use crate::common;

use std::io::IoSlice;

use common::{create, media, open};
use nvpage_wal::Framing;
use nvpage_wal::layout::DATA_OFFSET;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn body(thread: u64, seq: u64) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(thread << 32 | seq);
    let mut v = vec![0u8; rng.random_range(0..600)];
    rng.fill(&mut v[..]);
    v
}

#[test]
fn every_record_once_intact_in_thread_order() {
    for m in media() {
        let (threads, per_thread) = match m.name {
            // Miri checks every access for races, a thousand times slower: a few dozen appends
            // per thread still interleave reservations, copies and group commits.
            _ if cfg!(miri) => (3u64, 25u64),
            "msync" => (3, 300),
            _ => (4, 3000),
        };
        let p = m.path("many.log");
        let size = if cfg!(miri) { 1 << 20 } else { 16 << 20 };
        let log = create(&p, DATA_OFFSET as u64 + size, Framing::Records, m.persistence);
        std::thread::scope(|s| {
            for t in 0..threads {
                let log = &log;
                s.spawn(move || {
                    for seq in 0..per_thread {
                        let id = [t.to_le_bytes(), seq.to_le_bytes()].concat();
                        let b = body(t, seq);
                        let parts = [IoSlice::new(&id), IoSlice::new(&b)];
                        match seq % 5 {
                            0 => log.append_buffered_vectored(&parts).map(|_| ()),
                            1 => log.append_vectored(&parts).map(|_| ()),
                            _ => log.append(&[&id[..], &b[..]].concat()).map(|_| ()),
                        }
                        .unwrap();
                    }
                    log.sync().unwrap();
                });
            }
        });
        drop(log);
        let log = open(&p, m.persistence).unwrap();
        let mut next = vec![0u64; threads as usize];
        for r in log.records().unwrap() {
            let r = r.unwrap();
            let t = u64::from_le_bytes(r.payload[..8].try_into().unwrap());
            let seq = u64::from_le_bytes(r.payload[8..16].try_into().unwrap());
            assert_eq!(seq, next[t as usize], "{}: thread {t} out of order", m.name);
            assert_eq!(&r.payload[16..], body(t, seq), "{}: record damaged", m.name);
            next[t as usize] += 1;
        }
        assert!(next.iter().all(|&n| n == per_thread), "{}: {next:?}", m.name);
        assert_eq!(log.record_count(), threads * per_thread);
    }
}

/// Empty appends (a raw log takes them) beside non-empty ones from other threads: an empty one
/// shares its start with the next append, which may complete first. Every append finds the log
/// at least as long as its own end once it returns, and the log ends as long as all of them.
/// (An empty append that published its end after the next one had moved the log back, and
/// every later appender then waited for a start the log no longer reached.)
#[test]
fn empty_raw_appends_beside_others_never_move_the_tail_back() {
    let (threads, per_thread) = if cfg!(miri) { (3u64, 20u64) } else { (3, 20_000) };
    for m in media() {
        if m.name == "msync" {
            // Every append there syncs the file: the interleaving is the same, and slow.
            continue;
        }
        let p = m.path("empty.log");
        let size = DATA_OFFSET as u64 + (threads * per_thread * 8).next_power_of_two();
        let log = create(&p, size, Framing::Raw, m.persistence);
        std::thread::scope(|s| {
            for t in 0..threads {
                let log = &log;
                s.spawn(move || {
                    let chunk: &[u8] = if t == 0 { b"" } else { b"8 bytes." };
                    for _ in 0..per_thread {
                        let at = log.append(chunk).unwrap().0;
                        let tell = log.tell();
                        assert!(tell >= at + chunk.len() as u64, "thread {t}: {tell} < {at}+");
                    }
                });
            }
        });
        assert_eq!(log.tell(), (threads - 1) * per_thread * 8, "{}", m.name);
    }
}
