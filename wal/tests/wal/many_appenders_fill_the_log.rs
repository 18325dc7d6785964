//! Goal: threads racing to fill the log get `LogFull` without harming anyone: every append that
//! succeeded is in the log, intact, and the log is full to within one record's size.

use crate::common;

use common::{create, media, open};
use nvpage_wal::layout::{DATA_OFFSET, record_size};
use nvpage_wal::{Framing, WalError};

#[test]
fn racing_appenders_fill_the_log_cleanly() {
    for m in media() {
        let p = m.path("fill.log");
        let log = create(&p, DATA_OFFSET as u64 + 200_000, Framing::Records, m.persistence);
        let done: Vec<Vec<Vec<u8>>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..3u64)
                .map(|t| {
                    let log = &log;
                    s.spawn(move || {
                        let mut ok = Vec::new();
                        for i in 0.. {
                            let rec = common::payload(t << 20 | i, 100 + (i as usize * 13) % 900);
                            match log.append(&rec) {
                                Ok(_) => ok.push(rec),
                                Err(WalError::LogFull { needed, available, .. }) => {
                                    assert!(needed > available);
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
        assert!(log.nbyte() - log.tell() < record_size(1000));
        drop(log);
        let log = open(&p, m.persistence).unwrap();
        let mut got = common::payloads(&log);
        let mut want: Vec<Vec<u8>> = done.into_iter().flatten().collect();
        got.sort();
        want.sort();
        assert_eq!(got, want, "{}", m.name);
    }
}
