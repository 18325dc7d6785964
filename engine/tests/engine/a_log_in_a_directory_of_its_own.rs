//! Goal: the log in a directory of its own, as PostgreSQL's `pg_wal` on a device of
//! its own: data on the disk, the log on tmpfs (emulated NVM, cache-line persistence), on every
//! layer. Each file reports its own durability and the database the weaker of the two; a commit
//! costs one device flush on the data file's side (the log's persists are cache-line fences);
//! the pair is checked (an open that forgets the log directory finds the database incomplete and
//! creates nothing; a log of another database is refused); both files are locked; and a power
//! loss in the middle of a transaction that stole pages is rolled back from the log in its own
//! directory.

use crate::common;

use std::path::Path;

use common::{Row, commit_table, compare, contents, values};
use nvpage::{Database, Error, Layer, PersistMode, PersistRequest, ReadOps, kind};
use nvpage_storage::sim::{Sim, Tear};

fn builder(layer: Layer, log_dir: &Path) -> nvpage::Builder {
    Database::builder()
        .layer(layer)
        .page_size(4096)
        .pool_bytes(8 * 4096)
        .log_dir(log_dir)
        .log_persistence(PersistRequest::CacheLine)
}

#[test]
fn data_on_disk_and_the_log_on_emulated_nvm() {
    if nvpage_storage::persist::FlushInstr::detect().is_none() {
        eprintln!("no cache-line flush on this CPU: nothing to test");
        return;
    }
    for layer in Layer::compiled() {
        let disk = tempfile::tempdir().unwrap();
        // The simulator follows the disk's files only: it counts the data file's flushes.
        let sim = Sim::attach(disk.path(), 1);
        let nvm = tempfile::tempdir_in("/dev/shm").unwrap();
        let (data, logs) = (disk.path().join("db"), nvm.path().join("wal"));
        let db = builder(layer, &logs).open(&data).unwrap();
        assert_eq!(db.log_path(), logs.join(nvpage::LOG_FILE), "{layer}");
        assert!(!data.join(nvpage::LOG_FILE).exists(), "{layer}: no log beside the data");
        assert_eq!(db.log_durability().mode, PersistMode::EmulatedNvm, "{layer}");
        assert!(db.durability().survives_power_loss(), "{layer}: the data is on a disk");
        assert_eq!(db.guarantee(), db.log_durability().guarantee(), "{layer}: the weaker");
        let ids = commit_table(&db, 500, |k| Row { qty: k as i32, note: Some("n".repeat(30)) });
        let committed = contents(&db).unwrap();

        // Both files are locked: a second open is refused, with or without the log directory.
        assert!(builder(layer, &logs).open(&data).is_err(), "{layer}");
        drop(db);

        // An open that forgets the log directory finds no log and creates nothing.
        let r = Database::builder().layer(layer).open(&data);
        assert!(matches!(r, Err(Error::Incomplete { .. })), "{layer}: {:?}", r.err());
        assert!(!data.join(nvpage::LOG_FILE).exists(), "{layer}");
        // Another database's log is refused.
        let other_data = disk.path().join("other");
        drop(builder(layer, &nvm.path().join("other-wal")).open(&other_data).unwrap());
        let r = builder(layer, &nvm.path().join("other-wal")).open(&data);
        assert!(r.is_err(), "{layer}: a foreign log");

        let db = builder(layer, &logs).open(&data).unwrap();
        compare(&db, &committed).unwrap();
        let before = sim.counts().persists;
        let mut tx = db.begin_write().unwrap();
        let t = tx.table("t").unwrap();
        tx.update(&t, ids[3], &values(3, &Row { qty: -3, note: None })).unwrap();
        tx.commit().unwrap();
        assert_eq!(sim.counts().persists - before, 1, "{layer}: one flush on the data disk");
        let rx = db.begin_read().unwrap();
        let t = rx.table("t").unwrap();
        let qty = t.col::<kind::I32>("qty").unwrap();
        assert_eq!(rx.get(&t, ids[3]).unwrap().row().unwrap().get(qty).unwrap(), -3, "{layer}");
    }
}

#[test]
fn a_power_loss_mid_transaction_rolls_back_from_the_log_in_its_own_directory() {
    if nvpage_storage::persist::FlushInstr::detect().is_none() {
        return;
    }
    for layer in Layer::compiled() {
        // One simulated machine: both directories under one root on tmpfs.
        let root = tempfile::tempdir_in("/dev/shm").unwrap();
        let sim = Sim::attach(root.path(), 9);
        let (data, logs) = (root.path().join("db"), root.path().join("wal"));
        let db = builder(layer, &logs).persistence(PersistRequest::CacheLine).open(&data).unwrap();
        let ids = commit_table(&db, 500, |k| Row { qty: k as i32, note: Some("n".repeat(30)) });
        let committed = contents(&db).unwrap();
        let mut tx = db.begin_write().unwrap();
        let t = tx.table("t").unwrap();
        for (k, &id) in ids.iter().enumerate() {
            tx.update(&t, id, &values(k as i64, &Row { qty: -1, note: Some("w".repeat(60)) }))
                .unwrap();
        }
        assert!(db.counters().write_backs > 0, "{layer}: pages were stolen");
        // The power goes with the transaction open: no rollback runs in this process.
        std::mem::forget(tx);
        drop(db);
        sim.crash(Tear::Word);
        let db = builder(layer, &logs).persistence(PersistRequest::CacheLine).open(&data).unwrap();
        compare(&db, &committed).unwrap_or_else(|e| panic!("{layer}: {e}"));
        assert!(db.check().unwrap().is_sound(), "{layer}");
    }
}
