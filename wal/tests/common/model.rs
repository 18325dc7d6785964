//! A model of what a log may hold after a crash, and a seeded workload that drives both.

use nvpage_storage::PersistRequest;
use nvpage_wal::{Framing, Log, WalError};
use rand::rngs::StdRng;
use rand::{Rng, RngCore};

/// What the log may hold: `acked` for sure, then any whole prefix of `pending` (appends that were
/// buffered, or whose call failed). A failed rewind adds the empty new generation as a second
/// possibility.
#[derive(Clone, Debug, Default)]
pub struct Model {
    pub acked: Vec<Vec<u8>>,
    pub pending: Vec<Vec<u8>>,
    pub or_empty: bool,
}

impl Model {
    /// Checks `recovered` (the records, or for a raw log the byte stream as one element).
    pub fn check(&self, framing: Framing, recovered: &[Vec<u8>], ctx: &str) {
        let fits = |acked: &[Vec<u8>], pending: &[Vec<u8>]| -> bool {
            (0..=pending.len()).any(|j| {
                let want: Vec<Vec<u8>> = acked.iter().chain(&pending[..j]).cloned().collect();
                match framing {
                    Framing::Records => recovered == want.as_slice(),
                    _ => recovered.concat() == want.concat(),
                }
            })
        };
        let ok = fits(&self.acked, &self.pending) || (self.or_empty && recovered.is_empty());
        assert!(
            ok,
            "{ctx}: recovered {} items ({} bytes), acked {} ({} bytes), pending {}, or_empty {}",
            recovered.len(),
            recovered.concat().len(),
            self.acked.len(),
            self.acked.concat().len(),
            self.pending.len(),
            self.or_empty
        );
    }

    /// The model after a clean recovery of `recovered`.
    pub fn recovered(recovered: Vec<Vec<u8>>) -> Self {
        Model { acked: recovered, ..Model::default() }
    }
}

/// Reads everything in the log: its records, or its byte stream as one element.
pub fn contents(log: &Log) -> Vec<Vec<u8>> {
    match log.framing() {
        Framing::Records => {
            log.records().unwrap().map(|r| r.expect("a damaged record").payload.to_vec()).collect()
        }
        _ => {
            let mut all = Vec::new();
            log.walk(0, |c| {
                all.extend_from_slice(c);
                true
            })
            .unwrap();
            if all.is_empty() { Vec::new() } else { vec![all] }
        }
    }
}

/// Runs up to `ops` random operations, updating `model`; stops at the first failure (the log is
/// then poisoned). Returns whether a failure stopped it.
pub fn run(log: &mut Log, model: &mut Model, rng: &mut StdRng, ops: usize) -> bool {
    let size = |rng: &mut StdRng| match rng.random_range(0..10) {
        0 => 0,
        1 => rng.random_range(1000..3000),
        _ => rng.random_range(1..300),
    };
    run_sized(log, model, rng, ops, size)
}

/// [`run`] with the appends' lengths drawn by `size`.
pub fn run_sized(
    log: &mut Log,
    model: &mut Model,
    rng: &mut StdRng,
    ops: usize,
    size: impl Fn(&mut StdRng) -> usize,
) -> bool {
    for _ in 0..ops {
        let len = size(rng);
        let mut rec = vec![0u8; len];
        rng.fill_bytes(&mut rec);
        let r = match rng.random_range(0..10) {
            0 => {
                let r = log.rewind();
                match &r {
                    Ok(()) => *model = Model::default(),
                    Err(_) => model.or_empty = true,
                }
                r.map_err(|_| None)
            }
            1 => {
                let r = log.sync();
                if r.is_ok() {
                    let p = std::mem::take(&mut model.pending);
                    model.acked.extend(p);
                }
                r.map_err(|_| None)
            }
            2 | 3 => match log.append_buffered(&rec) {
                Ok(_) => {
                    model.pending.push(rec);
                    Ok(())
                }
                Err(e) => Err(failed(e, model, rec)),
            },
            _ => match log.append(&rec) {
                Ok(_) => {
                    let p = std::mem::take(&mut model.pending);
                    model.acked.extend(p);
                    model.acked.push(rec);
                    Ok(())
                }
                Err(e) => Err(failed(e, model, rec)),
            },
        };
        match r {
            Ok(()) => {}
            Err(Some(())) => {}
            Err(None) => return true,
        }
    }
    false
}

/// A failed append: `LogFull`, and `NoSpace` for a growth, change nothing (Some); anything
/// else leaves the record possibly there and the log poisoned (None).
fn failed(e: WalError, model: &mut Model, rec: Vec<u8>) -> Option<()> {
    match e {
        WalError::LogFull { .. } | WalError::NoSpace { .. } => Some(()),
        _ => {
            model.pending.push(rec);
            None
        }
    }
}

/// Whether this medium's persistence request makes sense here.
pub fn usable(p: PersistRequest) -> bool {
    p == PersistRequest::Auto || std::path::Path::new("/dev/shm").is_dir()
}
