//! Goal: a failed persist (injected by the simulator at every persist point of a short run) makes
//! the append return an error and poisons the log — later appends, syncs and rewinds fail
//! instead of pretending — and after a crash and reopen every acknowledged record is intact.

use crate::common;

use common::model::{Model, contents};
use common::{media, open};
use nvpage_storage::sim::{Fault, Sim, Tear};
use nvpage_storage::{SimOp, StorageError};
use nvpage_wal::layout::DATA_OFFSET;
use nvpage_wal::{CreateOptions, Framing, Log, WalError};
use uuid::Uuid;

#[test]
fn failed_persist_poisons_and_keeps_acknowledged_records() {
    for m in media() {
        for fail_at in 0..24u64 {
            let dir = tempfile::tempdir_in(m.dir.path()).unwrap();
            let path = dir.path().join("p.log");
            let opts =
                CreateOptions { persistence: m.persistence, ..CreateOptions::new(Uuid::nil()) };
            drop(Log::create(&path, DATA_OFFSET as u64 + 65536, &opts).unwrap());
            let sim = Sim::attach(dir.path(), fail_at);
            let mut log = open(&path, m.persistence).unwrap();
            sim.fail(Fault::once(Some(SimOp::Persist), fail_at));
            let mut model = Model::default();
            let mut failed = false;
            for i in 0..12u64 {
                let rec = common::payload(i, 40 + i as usize * 37);
                match log.append(&rec) {
                    Ok(_) => model.acked.push(rec),
                    Err(e) => {
                        assert!(matches!(e, WalError::Storage(_)), "{}: {e}", m.name);
                        model.pending.push(rec);
                        failed = true;
                        break;
                    }
                }
            }
            if failed {
                assert!(log.is_poisoned());
                assert!(matches!(
                    log.append(b"after"),
                    Err(WalError::Storage(StorageError::Poisoned { .. }))
                ));
                assert!(log.sync().is_err());
                assert!(log.rewind().is_err());
            }
            drop(log);
            sim.crash(Tear::Line);
            let log = open(&path, m.persistence).unwrap();
            assert!(!log.is_poisoned(), "reopening clears the poison");
            model.check(
                Framing::Records,
                &contents(&log),
                &format!("{} fail at {fail_at}", m.name),
            );
        }
    }
}
