//! Goal: a parallel scan's worker threads carry their transaction's protection against waiting
//! for themselves: a fold closure that calls `begin_read` inside the write
//! transaction gets `WriteTxnHeld`, and one that calls `begin_write` inside a read transaction
//! gets `ReadTxnHeld`, on every worker — as on the calling thread — instead of hanging; while a
//! fold inside a read transaction may begin another read transaction (it never waits for the
//! writer).

use crate::common;

use common::{Row, commit_table};
use nvpage::{Error, Layer, ReadOps};

#[test]
fn workers_refuse_what_their_parent_thread_refuses() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = common::open_4k(dir.path(), layer);
        commit_table(&db, 2000, |k| Row { qty: k as i32, note: None });

        let tx = db.begin_write().unwrap();
        let t = tx.table("t").unwrap();
        let refused = tx
            .par_fold(
                &t,
                4,
                || 0u64,
                |n, _| match db.begin_read() {
                    Err(Error::WriteTxnHeld { .. }) => Ok(n + 1),
                    other => panic!("{layer}: begin_read in the writer's fold: {:?}", other.err()),
                },
                |a, b| a + b,
            )
            .unwrap();
        assert_eq!(refused, 2000, "{layer}");
        tx.commit().unwrap();

        let rx = db.begin_read().unwrap();
        let snapshot = rx.snapshot();
        let refused = rx
            .par_fold(
                &t,
                4,
                || 0u64,
                |n, _| {
                    assert!(matches!(db.begin_write(), Err(Error::ReadTxnHeld { .. })), "{layer}");
                    // Another snapshot, in a worker: returns at once.
                    let inner = db.begin_read().unwrap();
                    assert_eq!(inner.snapshot(), snapshot);
                    Ok(n + 1)
                },
                |a, b| a + b,
            )
            .unwrap();
        assert_eq!(refused, 2000, "{layer}");
    }
}
