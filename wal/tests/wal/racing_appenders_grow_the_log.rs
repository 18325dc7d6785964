//! Goal: threads racing past the end of a log that may grow get it grown for them, once per
//! step, without harming one another: every append that succeeded is in the log, intact and in
//! its thread's order, after a reopen; the log grew to its limit and no further, and only then
//! did appends get `LogFull`, naming the file and the limit.

use crate::common;

use common::{media, open, open_growing};
use nvpage_wal::layout::{DATA_OFFSET, record_size};
use nvpage_wal::{CreateOptions, Log, WalError};
use uuid::Uuid;

const START_BYTES: u64 = DATA_OFFSET as u64 + 4096;
const MAX_BYTES: u64 = DATA_OFFSET as u64 + 400_000;

#[test]
fn racing_appenders_grow_the_log_to_its_limit() {
    for m in media() {
        let p = m.path("grow.log");
        let opts = CreateOptions { persistence: m.persistence, ..CreateOptions::new(Uuid::nil()) };
        drop(Log::create(&p, START_BYTES, &opts).unwrap());
        let log = open_growing(&p, m.persistence, MAX_BYTES).unwrap();
        assert_eq!(log.max_bytes(), MAX_BYTES);
        let done: Vec<Vec<Vec<u8>>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..3u64)
                .map(|t| {
                    let (log, p) = (&log, &p);
                    s.spawn(move || {
                        let mut ok = Vec::new();
                        for i in 0.. {
                            let rec = common::payload(t << 20 | i, 100 + (i as usize * 13) % 900);
                            match log.append(&rec) {
                                Ok(_) => ok.push(rec),
                                Err(WalError::LogFull { path, needed, available, max_bytes }) => {
                                    assert!(needed > available, "{needed} > {available}");
                                    assert_eq!((&path, max_bytes), (p, MAX_BYTES));
                                    break;
                                }
                                Err(e) => panic!("{e}"),
                            }
                        }
                        ok
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(log.nbyte(), MAX_BYTES - DATA_OFFSET as u64, "{}: grown to the limit", m.name);
        assert!(log.nbyte() - log.tell() < record_size(1000), "{}: full", m.name);
        drop(log);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), MAX_BYTES, "{}", m.name);
        let log = open(&p, m.persistence).unwrap();
        let got = common::payloads(&log);
        for (t, mine) in done.iter().enumerate() {
            let theirs: Vec<&Vec<u8>> = got
                .iter()
                .filter(|r| u64::from_le_bytes(r[..8].try_into().unwrap()) >> 20 == t as u64)
                .collect();
            assert!(theirs.iter().copied().eq(mine.iter()), "{}: thread {t}'s appends", m.name);
        }
        assert_eq!(got.len(), done.iter().map(Vec::len).sum::<usize>(), "{}", m.name);
    }
}
