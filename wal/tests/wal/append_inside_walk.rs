//! Goal: appending from inside a walk or a record iteration — libpmemlog's documented deadlock —
//! cannot deadlock: the readers hold no lock, see a snapshot, and the appends land after it.

use crate::common;

use common::{create, media, payloads};
use nvpage_wal::Framing;
use nvpage_wal::layout::DATA_OFFSET;

#[test]
fn append_inside_walk_and_iteration() {
    for m in media() {
        for framing in [Framing::Raw, Framing::Records] {
            let p = m.path(&format!("walk-{framing}.log"));
            let log = create(&p, DATA_OFFSET as u64 + 4096, framing, m.persistence);
            log.append(b"first").unwrap();
            let mut calls = 0;
            log.walk(0, |c| {
                calls += 1;
                assert_eq!(c, b"first");
                log.append(b"from inside").unwrap();
                true
            })
            .unwrap();
            assert_eq!(calls, 1, "the walk sees its snapshot only");
            if framing == Framing::Records {
                for r in log.records().unwrap() {
                    r.unwrap();
                    // Also from another thread while this one iterates.
                    std::thread::scope(|s| {
                        s.spawn(|| log.append(b"other thread").unwrap());
                    });
                }
                assert_eq!(payloads(&log).len(), 4);
            }
        }
    }
}
