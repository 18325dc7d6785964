//! `api_countdown`: random API operation sequences with I/O failing on a countdown, checked
//! against a model (redb's `fuzz_redb.rs` in spirit).
//!
//! The storage simulator fails every I/O call (read, write, growth, persist) from the `n`-th on,
//! for good. At the first failure the sequence stops: the transaction (if any) is dropped, the
//! database closed, the faults cleared, optionally a power loss simulated, and the database
//! reopened. It must then hold exactly the committed transactions: all of them, and no effect
//! of any other — except that a commit that failed at its commit point (the log's rewind was
//! stored, its persist failed) is committed if the log's state word says so.

use nvpage::{Database, Layer, PersistRequest, ReadOps, WriteTxn};
use nvpage_storage::sim::{Fault, FaultMode, Sim, Tear};

use super::db_open::builder;
use super::{Input, scratch_tempdir};
use crate::model::{Row, Tables, compare, contents, log_generation, schema};

/// Operations in one input, at most.
const MAX_OPS: usize = 256;

#[derive(Clone, Copy)]
struct Setup {
    layer: Layer,
    cache_line: bool,
}

fn open(path: &std::path::Path, s: Setup) -> nvpage::Result<Database> {
    let b = builder(s.layer);
    if s.cache_line { b.persistence(PersistRequest::CacheLine) } else { b }.open(path)
}

/// The committed model and the tables' names handed out so far.
struct Model {
    committed: Tables,
    next_key: i64,
    next_table: u32,
}

/// How a sequence ended: what the database must hold after reopening.
enum Outcome {
    /// No failure, or a failure that left nothing in doubt: the committed model.
    Committed,
    /// A commit failed; the log's generation in the file before and after it, and the model it
    /// would have made.
    CommitInDoubt { before: u64, after_live: u64, after_durable: u64, tentative: Tables },
}

fn note(b: u8) -> Option<String> {
    match b % 8 {
        0 => None,
        1 => Some("G".repeat(usize::from(b) * 10)),
        _ => Some("n".repeat(usize::from(b) % 64)),
    }
}

/// Runs one operation inside `tx`; `Ok(None)` to go on, `Ok(Some(commit?))` to end the
/// transaction.
fn txn_op(
    tx: &mut WriteTxn<'_>,
    input: &mut Input<'_>,
    m: &mut Model,
    tent: &mut Tables,
) -> nvpage::Result<Option<u8>> {
    let op = input.u8();
    let arg = input.u8();
    match op % 10 {
        0 if tent.len() < 4 => {
            let name = format!("t{}", m.next_table);
            m.next_table += 1;
            tx.create_table(&name, schema())?;
            tent.insert(name, Default::default());
        }
        0..=4 => {
            let n = tent.len().max(1);
            let Some((name, rows)) = tent.iter_mut().nth(usize::from(arg) % n) else {
                return Ok(None);
            };
            let t = tx.table(name)?;
            let key = m.next_key;
            m.next_key += 1;
            let mut row = Row {
                id: nvpage::RowId { page: 0, slot: 0 },
                qty: i32::from(arg),
                note: note(arg),
            };
            row.id = tx.insert(&t, &row.values(key))?;
            rows.insert(key, row);
        }
        5 | 6 => {
            let Some((name, rows)) = tent.iter_mut().find(|(_, r)| !r.is_empty()) else {
                return Ok(None);
            };
            let t = tx.table(name)?;
            let key = *rows.keys().nth(usize::from(arg) % rows.len()).expect("nonempty");
            if op % 10 == 5 {
                let mut row =
                    Row { id: rows[&key].id, qty: -i32::from(arg), note: note(arg.rotate_left(3)) };
                row.id = tx.update(&t, row.id, &row.values(key))?;
                rows.insert(key, row);
            } else {
                tx.delete(&t, rows[&key].id)?;
                rows.remove(&key);
            }
        }
        7 => {
            let Some(name) = tent.keys().nth(usize::from(arg) % tent.len().max(1)).cloned() else {
                return Ok(None);
            };
            if tent.len() > 1 && arg.is_multiple_of(4) {
                tx.drop_table(&name)?;
                tent.remove(&name);
            }
        }
        end => return Ok(Some(end - 8)),
    }
    Ok(None)
}

/// Runs the sequence until the input ends or an operation fails.
fn run(
    db: &mut Option<Database>,
    path: &std::path::Path,
    sim: &Sim,
    s: Setup,
    input: &mut Input<'_>,
    m: &mut Model,
) -> Outcome {
    for _ in 0..MAX_OPS {
        if input.is_empty() {
            break;
        }
        let Some(d) = db.as_ref() else { break };
        if input.u8() % 8 == 7 {
            drop(db.take());
            match open(path, s) {
                Ok(d) => {
                    // Reads may fail once the countdown runs out; what they return never differs.
                    match contents(&d) {
                        Ok(got) => assert!(got == m.committed, "after a reopen: {got:?}"),
                        Err(_) if sim.counts().injected_failures > 0 => break,
                        Err(e) => panic!("after a reopen, with no fault injected: {e}"),
                    }
                    *db = Some(d);
                }
                Err(_) => break,
            }
            continue;
        }
        let Ok(mut tx) = d.begin_write() else { break };
        let mut tent = m.committed.clone();
        let end = loop {
            if input.is_empty() {
                break None;
            }
            match txn_op(&mut tx, input, m, &mut tent) {
                Ok(None) => {}
                Ok(Some(end)) => break Some(end),
                Err(_) => return Outcome::Committed,
            }
        };
        match end {
            Some(0) => {
                let log_path = path.join(nvpage::LOG_FILE);
                let before = log_generation(&std::fs::read(&log_path).expect("read the log"));
                if tx.commit().is_ok() {
                    m.committed = tent;
                    continue;
                }
                let after_live = log_generation(&std::fs::read(&log_path).expect("read the log"));
                let durable = sim.durable_image(&log_path).expect("the log is followed");
                let after_durable = log_generation(&durable);
                return Outcome::CommitInDoubt {
                    before,
                    after_live,
                    after_durable,
                    tentative: tent,
                };
            }
            Some(_) => {
                if tx.abort().is_err() {
                    return Outcome::Committed;
                }
            }
            None => {
                drop(tx);
                return Outcome::Committed;
            }
        }
        if d.is_poisoned() {
            return Outcome::Committed;
        }
    }
    Outcome::Committed
}

/// Target `api_countdown`. Input: setup u8 (bits 0-1 layer, bit 2 cache-line persistence, bit 3
/// simulate a power loss after the failure, bits 4-5 its tear), the countdown u16 (I/O calls
/// that succeed before every one fails), then operations: per transaction a byte (7 mod 8:
/// reopen instead), then pairs (op, arg) — create table, insert, update, delete, drop table,
/// commit, abort.
pub fn api_countdown(data: &[u8]) {
    let mut input = Input::new(data);
    let setup = input.u8();
    let s = Setup { layer: Layer::ALL[usize::from(setup & 3) % 3], cache_line: setup & 4 == 4 };
    let power_loss = setup & 8 == 8;
    let tear = Tear::ALL[usize::from(setup >> 4) % 3];
    let countdown = u64::from(input.u16() % 2048);
    let dir = scratch_tempdir();
    let sim = Sim::attach(dir.path(), u64::from(crc32c::crc32c(data)));
    let path = dir.path().join("db");
    drop(open(&path, s).expect("create the database"));
    sim.fail(Fault { op: None, after: countdown, mode: FaultMode::Forever, errno: libc::EIO });
    let mut m = Model { committed: Tables::new(), next_key: 0, next_table: 0 };
    let mut db = open(&path, s).ok();
    let outcome = run(&mut db, &path, &sim, s, &mut input, &mut m);
    drop(db);
    sim.clear_faults();
    let mut want = vec![m.committed.clone()];
    let mut live_decides = true;
    if power_loss {
        if let Outcome::CommitInDoubt { after_live, after_durable, .. } = &outcome {
            // The rewind's store may or may not survive the power loss.
            live_decides = after_live == after_durable;
        }
        sim.crash(tear);
    }
    if let Outcome::CommitInDoubt { before, after_live, tentative, .. } = outcome {
        if !live_decides {
            want.push(tentative);
        } else if after_live != before {
            want = vec![tentative];
        }
    }
    let db = match open(&path, s) {
        Ok(db) => db,
        Err(e) => panic!("reopen after the failure: {e}"),
    };
    let errors: Vec<String> = want.iter().filter_map(|w| compare(&db, w).err()).collect();
    assert!(errors.len() < want.len(), "not the committed state: {errors:?}");
    let report = db.check().expect("check after recovery");
    assert!(report.is_sound(), "damage after recovery: {:?}", report.damage);
    assert_eq!(report.log_used_bytes, 0, "the log is empty after recovery");
    let mut tx = db.begin_write().expect("a write after recovery");
    let t = match tx.tables().into_iter().next() {
        Some(t) => t,
        None => tx.create_table("after", schema()).expect("create a table after recovery"),
    };
    tx.insert(&t, &Row { id: nvpage::RowId { page: 0, slot: 0 }, qty: 1, note: None }.values(-1))
        .expect("insert after recovery");
    tx.commit().expect("commit after recovery");
    drop(db);
    drop(sim);
}
