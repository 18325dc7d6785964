//! Goal: durability against a real process kill. The test re-executes its own binary as a child
//! that commits one transaction after another — each inserts the next key (and every tenth also
//! a batch of rows through a small pool, so pages are stolen mid-transaction) — and prints
//! `ACK n` once `commit` returned for key `n`. The parent reads those lines and SIGKILLs the
//! child after a seeded random number of them (no sleeps: the kill follows the k-th line), then
//! reopens the database (recovery runs) and checks that every acknowledged key is present, no key
//! past the one being attempted exists, every row and batch is whole, and every page verifies.
//! Then the next child continues on the same database.
//!
//! `NVPAGE_KILL_CYCLES` (default 120 per layer) sets the number of kills; `scripts/soak-kill`
//! runs many more.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use common::{Row, contents, insert_row, rng, schema};
use nvpage::{Database, Layer, PersistRequest, ReadOps};
use rand::Rng;

const CHILD_ENV: &str = "NVPAGE_KILL_CHILD_DIR";
const LAYER_ENV: &str = "NVPAGE_KILL_CHILD_LAYER";
const NVM_ENV: &str = "NVPAGE_KILL_CHILD_NVM";
const TEST_NAME: &str = "killed_children_lose_no_acknowledged_commit";
/// Rows of the batch every tenth transaction adds to table `bulk`.
const BATCH: i64 = 40;

fn open(path: &Path, layer: Layer, nvm: bool) -> nvpage::Result<Database> {
    let b = Database::builder().layer(layer).pool_bytes(64 << 10).log_bytes(4 << 20);
    if nvm { b.persistence(PersistRequest::CacheLine) } else { b }.open(path)
}

fn note(n: i64) -> Option<String> {
    (n % 7 != 0).then(|| format!("{n}-").repeat((n % 40) as usize))
}

/// The child: commits forever, acknowledging each commit on stdout.
fn child(path: &Path, layer: Layer, nvm: bool) -> ! {
    let db = open(path, layer, nvm).expect("child open");
    let next = {
        let rx = db.begin_read().unwrap();
        match rx.table("acks") {
            Ok(t) => rx.row_count(&t).unwrap() as i64,
            Err(_) => -1,
        }
    };
    if next < 0 {
        let mut tx = db.begin_write().unwrap();
        tx.create_table("acks", schema()).unwrap();
        tx.create_table("bulk", schema()).unwrap();
        tx.commit().unwrap();
    }
    let mut out = std::io::stdout().lock();
    let mut n = next.max(0);
    loop {
        let mut tx = db.begin_write().unwrap();
        insert_row(&mut tx, "acks", n, &Row { qty: n as i32, note: note(n) }).unwrap();
        if n % 10 == 9 {
            for i in 0..BATCH {
                let row = Row { qty: n as i32, note: Some("b".repeat(200)) };
                insert_row(&mut tx, "bulk", n * BATCH + i, &row).unwrap();
            }
        }
        tx.commit().unwrap();
        writeln!(out, "ACK {n}").unwrap();
        out.flush().unwrap();
        n += 1;
    }
}

/// The parent's check after a kill; returns the number of committed keys.
fn check(path: &Path, layer: Layer, nvm: bool, acked: Option<i64>, ctx: &str) -> i64 {
    let db = open(path, layer, nvm).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
    let all = contents(&db).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    let Some(acks) = all.get("acks") else {
        assert!(acked.is_none(), "{ctx}: acknowledged commits but no table");
        return 0;
    };
    let n = acks.len() as i64;
    for (i, (k, (_, row))) in acks.iter().enumerate() {
        assert_eq!(*k, i as i64, "{ctx}: keys are 0..{n} without gaps");
        assert_eq!(row, &Row { qty: *k as i32, note: note(*k) }, "{ctx}: row {k}");
    }
    if let Some(a) = acked {
        assert!(n > a, "{ctx}: acknowledged key {a} lost ({n} keys)");
        assert!(n <= a + 2, "{ctx}: {n} keys, but only {} was attempted", a + 1);
    }
    let bulk = &all["bulk"];
    let batches = (0..n).filter(|k| k % 10 == 9).count() as i64;
    assert_eq!(bulk.len() as i64, batches * BATCH, "{ctx}: batches are whole");
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{ctx}: {:?}", report.damage);
    n
}

/// The key in an `ACK n` line (libtest may print `test NAME ... ` before it on the same line).
fn ack(line: &str) -> Option<i64> {
    let at = line.find("ACK ")?;
    Some(line[at + 4..].trim().parse().expect("an ACK line ends with its key"))
}

fn campaign(layer: Layer, nvm: bool, cycles: u64, seed: u64) {
    let dir = if nvm { tempfile::tempdir_in("/dev/shm") } else { tempfile::tempdir() }.unwrap();
    let path = dir.path().join("db");
    let mut r = rng(seed);
    let mut acked: Option<i64> = None;
    for cycle in 0..cycles {
        let ctx = format!("seed {seed}, {layer}, nvm {nvm}, cycle {cycle}");
        let mut c = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, &path)
            .env(LAYER_ENV, layer.name())
            .env(NVM_ENV, if nvm { "1" } else { "0" })
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let kill_after = r.random_range(0..12);
        let mut seen = 0;
        let mut lines = BufReader::new(c.stdout.take().unwrap()).lines();
        while seen < kill_after {
            let line = match lines.next() {
                Some(l) => l.unwrap(),
                None => panic!("{ctx}: the child ended early: {:?}", c.wait()),
            };
            if let Some(k) = ack(&line) {
                assert!(acked.is_none_or(|a| k == a + 1), "{ctx}: ack {k} after {acked:?}");
                acked = Some(k);
                seen += 1;
            }
        }
        c.kill().unwrap();
        let status = c.wait().unwrap();
        assert!(!status.success(), "{ctx}: the child was killed");
        // Lines the child wrote before the kill landed are acknowledged too.
        for line in lines.map_while(Result::ok) {
            if let Some(k) = ack(&line) {
                acked = Some(k);
            }
        }
        let n = check(&path, layer, nvm, acked, &ctx);
        // A commit that returned but whose line was not read yet counts now.
        if n > 0 {
            acked = Some(acked.map_or(n - 1, |a| a.max(n - 1)));
        }
    }
}

#[test]
fn killed_children_lose_no_acknowledged_commit() {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        let layer: Layer = std::env::var(LAYER_ENV).unwrap().parse().unwrap();
        let nvm = std::env::var(NVM_ENV).is_ok_and(|v| v == "1");
        child(Path::new(&dir), layer, nvm);
    }
    let cycles: u64 =
        std::env::var("NVPAGE_KILL_CYCLES").ok().and_then(|s| s.parse().ok()).unwrap_or(120);
    let started = std::time::Instant::now();
    for (i, layer) in Layer::compiled().into_iter().enumerate() {
        // Two thirds on /dev/shm with cache-line persistence, a third on disk.
        let disk = cycles / 3;
        campaign(layer, true, cycles - disk, 0xC1D + i as u64);
        campaign(layer, false, disk, 0xD15C + i as u64);
    }
    eprintln!("{} kills in {:.1} s", cycles * 3, started.elapsed().as_secs_f64());
}
