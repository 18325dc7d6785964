//! Goal: durability against a real process kill, landing while a commit is in flight. The test
//! re-executes its own binary as a child that commits one transaction after another — each
//! inserts the next key (and every tenth also a batch of rows through a small pool, so pages are
//! stolen mid-transaction) — and prints `ACK n` once `commit` returned for key `n`. Parent and
//! child share a small control file. The child stores its state there — "ready to commit key
//! n", "in the commit of n", "returned" — and the duration of its last commit; before each
//! commit it waits (polling and yielding, never sleeping) until the parent lets it go. So the
//! parent never misses a commit, however busy the machine: it lets a seeded random number of
//! commits through, then lets the next one go, waits until the child is inside it, waits a
//! random delay of up to one commit's duration, and SIGKILLs it. After the kill the state tells whether the
//! commit was still in flight; the parent reopens the database (recovery runs) and checks that
//! every acknowledged key is present, no key past the one being attempted exists, every row and
//! batch is whole, and every page verifies. Then the next child continues on the same database.
//! The delay only spreads the kills over the commit; nothing is asserted on time. (A thread
//! reads the child's lines meanwhile, so the child never blocks on a full pipe.)
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
const CONTROL_ENV: &str = "NVPAGE_KILL_CHILD_CONTROL";
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

/// The control file's words (8 bytes each, little-endian): the child's state, the parent's
/// go-ahead, the child's last commit's duration in nanoseconds.
const STATE: u64 = 0;
const GO: u64 = 8;
const TOOK: u64 = 16;

/// The child's states around key `n`: its transaction is built and waits for the go-ahead
/// (`GO > n`), it is inside `commit`, `commit` returned. They only grow.
fn ready(n: i64) -> u64 {
    3 * n as u64 + 1
}

fn in_commit(n: i64) -> u64 {
    3 * n as u64 + 2
}

fn returned(n: i64) -> u64 {
    3 * n as u64 + 3
}

/// The key of a state.
fn key(state: u64) -> i64 {
    ((state - 1) / 3) as i64
}

fn get(f: &File, word: u64) -> u64 {
    let mut b = [0u8; 8];
    f.read_exact_at(&mut b, word).expect("read the control file");
    u64::from_le_bytes(b)
}

fn set(f: &File, word: u64, v: u64) {
    f.write_all_at(&v.to_le_bytes(), word).expect("write the control file");
}

/// The child: commits forever, each commit after the parent's go-ahead, acknowledging each on
/// stdout.
fn child(path: &Path, layer: Layer, nvm: bool, control: &Path) -> ! {
    let control =
        std::fs::OpenOptions::new().read(true).write(true).open(control).expect("the control file");
    let parent = std::os::unix::process::parent_id();
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
        set(&control, STATE, ready(n));
        let mut polls = 0u64;
        while get(&control, GO) <= n as u64 {
            polls += 1;
            if polls.is_multiple_of(1024) && std::os::unix::process::parent_id() != parent {
                // The parent is gone: nobody will let this commit go.
                std::process::exit(2);
            }
            // Give the CPU to the parent if they share one (a yield, not a sleep).
            std::thread::yield_now();
        }
        set(&control, STATE, in_commit(n));
        let started = Instant::now();
        tx.commit().unwrap();
        let took = started.elapsed();
        set(&control, TOOK, took.as_nanos() as u64);
        set(&control, STATE, returned(n));
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

/// Kills counted by a campaign.
#[derive(Clone, Copy, Debug, Default)]
struct Kills {
    kills: u64,
    /// Kills that landed while the child's state said "in the commit".
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

/// Spins until the child's state satisfies `until`; returns it. Panics if the child ends.
fn wait_for(c: &mut Child, control: &File, until: impl Fn(u64) -> bool, ctx: &str) -> u64 {
    let mut polls = 0u64;
    loop {
        let state = get(control, STATE);
        if until(state) {
            return state;
        }
        polls += 1;
        if polls.is_multiple_of(1024)
            && let Some(status) = c.try_wait().unwrap()
        {
            panic!("{ctx}: the child ended early: {status}");
        }
        // Give the CPU to the child if they share one (a yield, not a sleep).
        std::thread::yield_now();
    }
}

/// Lets `through` commits of the child go, then the next one, and kills the child inside it
/// after `fraction` of a commit's duration (`commit_time`, updated from the child's last
/// commit); returns that commit's key.
fn kill_in_commit(
    c: &mut Child,
    control: &File,
    through: u64,
    fraction: f64,
    commit_time: &mut Duration,
    ctx: &str,
) -> i64 {
    let mut go = 0;
    for i in 0..=through {
        // The child waits at `ready(n)` for `GO > n`: no commit passes unseen.
        let state = wait_for(c, control, |s| s % 3 == 1 && key(s) as u64 >= go, ctx);
        let n = key(state);
        go = n as u64 + 1;
        if i < through {
            set(control, GO, go);
            continue;
        }
        let took = get(control, TOOK);
        if took > 0 {
            *commit_time = Duration::from_nanos(took);
        }
        let delay = commit_time.mul_f64(fraction);
        set(control, GO, go);
        // The child has its go-ahead and enters the commit next.
        wait_for(c, control, |s| s >= in_commit(n), ctx);
        // The delay is not an assertion: it spreads the kills over the commit.
        let entered = Instant::now();
        while entered.elapsed() < delay {
            std::hint::spin_loop();
        }
        c.kill().unwrap();
        return n;
    }
    unreachable!("the loop returns at its last turn")
}

fn campaign(layer: Layer, nvm: bool, cycles: u64, seed: u64) -> Kills {
    let dir = if nvm { tempfile::tempdir_in("/dev/shm") } else { tempfile::tempdir() }.unwrap();
    let path = dir.path().join("db");
    let control_path = dir.path().join("control");
    let control = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&control_path)
        .unwrap();
    let mut r = rng(seed);
    let mut acked: Option<i64> = None;
    let mut k = Kills::default();
    // The last commit's duration the child reported (a first guess until it reports one).
    let mut commit_time = Duration::from_micros(50);
    for cycle in 0..cycles {
        let ctx = format!("seed {seed}, {layer}, nvm {nvm}, cycle {cycle}");
        set(&control, STATE, 0);
        set(&control, GO, 0);
        set(&control, TOOK, 0);
        let mut c = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, &path)
            .env(LAYER_ENV, layer.name())
            .env(NVM_ENV, if nvm { "1" } else { "0" })
            .env(CONTROL_ENV, &control_path)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = c.stdout.take().unwrap();
        let (tx, acks) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(n) = ack(&line) {
                    let _ = tx.send(n);
                }
            }
        });
        let through = r.random_range(0..12);
        let fraction = r.random::<f64>();
        let target = kill_in_commit(&mut c, &control, through, fraction, &mut commit_time, &ctx);
        let status = c.wait().unwrap();
        assert!(!status.success(), "{ctx}: the child was killed");
        k.kills += 1;
        let last = get(&control, STATE);
        reader.join().unwrap();
        for n in acks.try_iter() {
            assert!(acked.is_none_or(|a| n == a + 1), "{ctx}: ack {n} after {acked:?}");
            acked = Some(n);
        }
        let n = check(&path, layer, nvm, acked, &ctx);
        if last == in_commit(target) {
            // Killed inside the commit of key `target`: it is there or not, atomically (`check`
            // saw whole keys and batches); which one, the commit point decided.
            k.in_commit += 1;
            k.in_commit_committed += u64::from(n > target);
        }
        // A commit that returned but whose `ACK` the kill cut off counts now.
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
        let control = std::env::var(CONTROL_ENV).unwrap();
        child(Path::new(&dir), layer, nvm, Path::new(&control));
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
