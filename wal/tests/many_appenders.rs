//! Goal: many threads appending at once (durable, vectored and buffered appends of random sizes)
//! leave every record present exactly once, intact, and each thread's records in its own order.

mod common;

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
