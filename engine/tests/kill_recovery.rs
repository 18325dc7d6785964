//! Goal: durability against a real process kill, landing while a commit is in flight. The test
//! re-executes its own binary as a child that commits one transaction after another — each
//! inserts the next key (and every tenth also a batch of rows through a small pool, so pages are
//! stolen mid-transaction) — and prints `ACK n` once `commit` returned for key `n`. Around each
//! `commit` the child stores a mark in a small file: "in the commit of key n" before the call,
//! "returned" after it. The parent reads a seeded random number of `ACK` lines (a thread keeps
//! reading them after that, so the child never blocks on a full pipe), then watches the mark
//! until the child is inside a commit, waits a random delay of up to one commit's duration (the
//! child reports how long its last commit took), and SIGKILLs it. After the kill the mark tells
//! whether the commit was still in flight; the parent reopens the database (recovery runs) and
//! checks that every acknowledged key is present, no key past the one being attempted exists,
//! every row and batch is whole, and every page verifies. Then the next child continues on the
//! same database. The delay only spreads the kills over the commit; nothing is asserted on time.
//! (When the machine is busy the parent may see few commit windows: it waits until it sees one.)
//!
//! It prints the kills, how many landed with a commit in flight, and how many of those the
//! reopened database holds as committed (the kill came after the commit point) or rolled back.
//!
//! `NVPAGE_KILL_CYCLES` (default 120 per layer) sets the number of kills; `scripts/soak-kill`
//! runs many more.

mod common;

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{Row, contents, insert_row, rng, schema};
use nvpage::{Database, Layer, PersistRequest, ReadOps};
use rand::Rng;

const CHILD_ENV: &str = "NVPAGE_KILL_CHILD_DIR";
const LAYER_ENV: &str = "NVPAGE_KILL_CHILD_LAYER";
const NVM_ENV: &str = "NVPAGE_KILL_CHILD_NVM";
const MARK_ENV: &str = "NVPAGE_KILL_CHILD_MARK";
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

/// The child's mark around the commit of key `n`: odd while in the call, even after it.
fn in_commit(n: i64) -> u64 {
    2 * n as u64 + 1
}

fn returned(n: i64) -> u64 {
    2 * n as u64 + 2
}

/// The mark the child stored last (0: none yet).
fn read_mark(f: &File) -> u64 {
    let mut b = [0u8; 8];
    f.read_exact_at(&mut b, 0).expect("read the mark");
    u64::from_le_bytes(b)
}

/// The child: commits forever, acknowledging each commit on stdout with its duration.
fn child(path: &Path, layer: Layer, nvm: bool, mark: &Path) -> ! {
    let mark = std::fs::OpenOptions::new().write(true).open(mark).expect("the mark file");
    let set_mark = |v: u64| mark.write_all_at(&v.to_le_bytes(), 0).expect("store the mark");
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
        set_mark(in_commit(n));
        let started = Instant::now();
        tx.commit().unwrap();
        let took = started.elapsed();
        set_mark(returned(n));
        writeln!(out, "ACK {n} {}", took.as_nanos()).unwrap();
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

/// The key and the commit's duration in an `ACK n ns` line (libtest may print `test NAME ... `
/// before it on the same line).
fn ack(line: &str) -> Option<(i64, Duration)> {
    let at = line.find("ACK ")?;
    let mut words = line[at + 4..].split_whitespace().map(|w| w.parse::<u64>());
    match (words.next(), words.next()) {
        (Some(Ok(n)), Some(Ok(ns))) => Some((n as i64, Duration::from_nanos(ns))),
        _ => panic!("an ACK line holds a key and a duration: {line:?}"),
    }
}

/// Kills counted by a campaign.
#[derive(Clone, Copy, Debug, Default)]
struct Kills {
    kills: u64,
    /// Kills that landed between the child's marks around `commit`.
    in_commit: u64,
    /// Of those, kills after which the reopened database held the commit.
    in_commit_committed: u64,
}

impl std::ops::AddAssign for Kills {
    fn add_assign(&mut self, o: Kills) {
        self.kills += o.kills;
        self.in_commit += o.in_commit;
        self.in_commit_committed += o.in_commit_committed;
    }
}

/// Whether `mark` says the child is inside `commit`.
fn is_in_commit(mark: u64) -> bool {
    mark % 2 == 1
}

/// Waits until the child is inside a commit (its mark odd), then `delay` more, and kills it.
fn kill_in_commit(c: &mut Child, mark: &File, delay: Duration, ctx: &str) {
    let mut polls = 0u64;
    while !is_in_commit(read_mark(mark)) {
        polls += 1;
        if polls.is_multiple_of(1024)
            && let Some(status) = c.try_wait().unwrap()
        {
            panic!("{ctx}: the child ended before a commit: {status}");
        }
        std::hint::spin_loop();
    }
    // The delay is not an assertion: it spreads the kills over the commit.
    let entered = Instant::now();
    while entered.elapsed() < delay {
        std::hint::spin_loop();
    }
    c.kill().unwrap();
}

fn campaign(layer: Layer, nvm: bool, cycles: u64, seed: u64) -> Kills {
    let dir = if nvm { tempfile::tempdir_in("/dev/shm") } else { tempfile::tempdir() }.unwrap();
    let path = dir.path().join("db");
    let mark_path = dir.path().join("commit-mark");
    let mark = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&mark_path)
        .unwrap();
    let mut r = rng(seed);
    let mut acked: Option<i64> = None;
    let mut k = Kills::default();
    // The last commit's duration, as the child measured it (a first guess until one is read).
    let mut commit_time = Duration::from_micros(50);
    for cycle in 0..cycles {
        let ctx = format!("seed {seed}, {layer}, nvm {nvm}, cycle {cycle}");
        mark.write_all_at(&0u64.to_le_bytes(), 0).unwrap();
        let mut c = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, &path)
            .env(LAYER_ENV, layer.name())
            .env(NVM_ENV, if nvm { "1" } else { "0" })
            .env(MARK_ENV, &mark_path)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        // A thread reads the child's lines for as long as it lives, so that it never blocks on
        // a full pipe while the parent watches the mark.
        let stdout = c.stdout.take().unwrap();
        let (tx, acks) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(a) = ack(&line) {
                    let _ = tx.send(a);
                }
            }
        });
        for _ in 0..r.random_range(0..12) {
            let Ok((n, took)) = acks.recv() else {
                panic!("{ctx}: the child ended early: {:?}", c.wait())
            };
            assert!(acked.is_none_or(|a| n == a + 1), "{ctx}: ack {n} after {acked:?}");
            acked = Some(n);
            commit_time = took;
        }
        let delay = commit_time.mul_f64(r.random::<f64>());
        kill_in_commit(&mut c, &mark, delay, &ctx);
        let status = c.wait().unwrap();
        assert!(!status.success(), "{ctx}: the child was killed");
        k.kills += 1;
        let last = read_mark(&mark);
        reader.join().unwrap();
        // Lines the child wrote before the kill landed are acknowledged too.
        for (n, _) in acks.try_iter() {
            acked = Some(n);
        }
        let n = check(&path, layer, nvm, acked, &ctx);
        if is_in_commit(last) {
            // Killed inside the commit of key `(last - 1) / 2`: it is there or not, atomically
            // (`check` saw whole keys and batches); which one, the commit point decided.
            let key = ((last - 1) / 2) as i64;
            k.in_commit += 1;
            k.in_commit_committed += u64::from(n > key);
        }
        // A commit that returned but whose line was not read yet counts now.
        if n > 0 {
            acked = Some(acked.map_or(n - 1, |a| a.max(n - 1)));
        }
    }
    k
}

#[test]
fn killed_children_lose_no_acknowledged_commit() {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        let layer: Layer = std::env::var(LAYER_ENV).unwrap().parse().unwrap();
        let nvm = std::env::var(NVM_ENV).is_ok_and(|v| v == "1");
        let mark = std::env::var(MARK_ENV).unwrap();
        child(Path::new(&dir), layer, nvm, Path::new(&mark));
    }
    let cycles: u64 =
        std::env::var("NVPAGE_KILL_CYCLES").ok().and_then(|s| s.parse().ok()).unwrap_or(120);
    let started = std::time::Instant::now();
    let mut all = Kills::default();
    for (i, layer) in Layer::compiled().into_iter().enumerate() {
        // Two thirds on /dev/shm with cache-line persistence, a third on disk.
        let disk = cycles / 3;
        let shm = campaign(layer, true, cycles - disk, 0xC1D + i as u64);
        let on_disk = campaign(layer, false, disk, 0xD15C + i as u64);
        eprintln!(
            "kill_recovery: {layer}: {} kills on /dev/shm, {} in a commit; {} on disk, {} in a \
             commit",
            shm.kills, shm.in_commit, on_disk.kills, on_disk.in_commit
        );
        all += shm;
        all += on_disk;
    }
    eprintln!(
        "kill_recovery: {} kills, {} of them with a commit in flight ({} found committed after \
         recovery, {} rolled back), 0 acknowledged commits lost; {:.1} s",
        all.kills,
        all.in_commit,
        all.in_commit_committed,
        all.in_commit - all.in_commit_committed,
        started.elapsed().as_secs_f64()
    );
}
