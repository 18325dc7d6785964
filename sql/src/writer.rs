//! A session's writer: one thread that owns the session's write transaction, since a
//! [`WriteTxn`] borrows its database and stays on the thread that began it. Statements hand it
//! work as closures and wait for the answer, asynchronously.
//!
//! Transactions, as PostgreSQL's (DESIGN S1):
//!
//! | state | entered by | a statement's failure |
//! |---|---|---|
//! | no transaction | open, `COMMIT`, `ROLLBACK` | each statement that writes runs in a transaction of its own, begun at its first write and committed when it ends; a failure rolls it back: nothing of it is kept |
//! | open (`BEGIN`) | `BEGIN` | a failure after the statement changed something dooms the transaction; one before it changed anything leaves it usable |
//! | doomed | a failure, as above | every statement is refused until `COMMIT` (which rolls back and says so) or `ROLLBACK` |

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result as DfResult};
use nvpage::{Database, Partition, ReadOps, WriteTxn};

use crate::error::{Error, Result};
use crate::scan::{ScanMetrics, ScanSpec};

/// What the writer thread keeps between jobs.
pub(crate) struct Slot<'db> {
    pub(crate) db: &'db Database,
    txn: Option<WriteTxn<'db>>,
    /// `BEGIN` opened the transaction (else it belongs to the running statement).
    explicit: bool,
    /// Why the explicit transaction is doomed, if a statement doomed it.
    doomed: Option<String>,
    /// Whether the running statement has changed something.
    changed: bool,
    /// Set by [`Writer::stop`]: the thread ends after this job.
    stopping: bool,
}

impl<'db> Slot<'db> {
    /// The transaction a statement's change goes into: the open one, or one begun for the
    /// statement. Marks the statement as having changed something (callers call this just
    /// before a change).
    pub(crate) fn txn(&mut self) -> Result<&mut WriteTxn<'db>> {
        if let Some(why) = &self.doomed {
            return Err(Error::TransactionAborted(why.clone()));
        }
        if self.txn.is_none() {
            self.txn = Some(self.db.begin_write()?);
        }
        self.changed = true;
        Ok(self.txn.as_mut().expect("begun above"))
    }

    /// Ends the running statement (see [`Writer::end_statement`]).
    fn end_statement(&mut self, failed: Option<String>) -> Result<()> {
        if self.explicit {
            if let (Some(why), true) = (failed, self.changed) {
                self.doomed.get_or_insert(why);
            }
            return Ok(());
        }
        match (self.txn.take(), failed) {
            (Some(txn), None) => Ok(txn.commit()?),
            (Some(txn), Some(_)) => Ok(txn.abort()?),
            (None, _) => Ok(()),
        }
    }

    /// The open transaction, for a read of its own changes.
    pub(crate) fn reading(&self) -> Option<&WriteTxn<'db>> {
        self.txn.as_ref()
    }
}

type Job = Box<dyn for<'db> FnOnce(&mut Slot<'db>) + Send>;

/// A handle on a session's writer thread. Cheap to clone; the thread ends when the last handle
/// is dropped, rolling back a transaction left open.
#[derive(Clone, Debug)]
pub(crate) struct Writer {
    jobs: std::sync::mpsc::Sender<Job>,
    /// The thread, joined by [`Writer::stop`].
    thread: Arc<parking_lot::Mutex<Option<std::thread::JoinHandle<()>>>>,
    /// Whether `BEGIN` has opened a transaction (read without a round trip by the scans and the
    /// catalog, which then read the transaction's own changes).
    explicit: Arc<AtomicBool>,
    db: Arc<Database>,
}

impl Writer {
    /// Starts the writer thread of a session over `db`.
    pub(crate) fn start(db: Arc<Database>) -> Result<Self> {
        let (jobs, rx) = std::sync::mpsc::channel::<Job>();
        let owned = db.clone();
        let thread = std::thread::Builder::new()
            .name("nvpage-sql-writer".into())
            .spawn(move || {
                let mut slot = Slot {
                    db: &owned,
                    txn: None,
                    explicit: false,
                    doomed: None,
                    changed: false,
                    stopping: false,
                };
                for job in rx {
                    job(&mut slot);
                    if slot.stopping {
                        break;
                    }
                }
                // Dropping an open transaction rolls it back.
                drop(slot.txn.take());
            })
            .map_err(|e| Error::Plan(format!("cannot start the session's writer thread: {e}")))?;
        let thread = Arc::new(parking_lot::Mutex::new(Some(thread)));
        Ok(Self { jobs, thread, explicit: Arc::new(AtomicBool::new(false)), db })
    }

    /// Ends the writer thread, rolling back a transaction left open, and waits until it has
    /// let go of the database.
    pub(crate) fn stop(&self) {
        let _ = self.jobs.send(Box::new(|slot: &mut Slot<'_>| slot.stopping = true));
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }

    /// The database.
    pub(crate) fn db(&self) -> &Arc<Database> {
        &self.db
    }

    /// Whether an explicit transaction is open (or doomed and not yet ended).
    pub(crate) fn in_transaction(&self) -> bool {
        self.explicit.load(Ordering::Acquire)
    }

    /// Runs `f` on the writer thread and waits for its answer.
    pub(crate) async fn call<R: Send + 'static>(
        &self,
        f: impl for<'db> FnOnce(&mut Slot<'db>) -> R + Send + 'static,
    ) -> Result<R> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |slot| {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(slot)));
            let _ = tx.send(r);
        });
        self.jobs.send(job).map_err(|_| gone())?;
        match rx.await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(_)) => Err(panicked()),
            Err(_) => Err(gone()),
        }
    }

    /// [`Writer::call`] for callers that cannot wait asynchronously (DataFusion's synchronous
    /// catalog calls). The writer thread is not one of the runtime's, so this never waits for
    /// a task of the caller's runtime.
    pub(crate) fn call_blocking<R: Send + 'static>(
        &self,
        f: impl for<'db> FnOnce(&mut Slot<'db>) -> R + Send + 'static,
    ) -> Result<R> {
        let (tx, rx) = std::sync::mpsc::channel();
        let job: Job = Box::new(move |slot| {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(slot)));
            let _ = tx.send(r);
        });
        self.jobs.send(job).map_err(|_| gone())?;
        match rx.recv() {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(_)) => Err(panicked()),
            Err(_) => Err(gone()),
        }
    }

    /// [`Writer::statement`] for synchronous callers (see [`Writer::call_blocking`]).
    pub(crate) fn statement_blocking<R: Send + 'static>(
        &self,
        work: impl for<'db> FnOnce(&mut Slot<'db>) -> Result<R> + Send + 'static,
    ) -> Result<R> {
        self.call_blocking(move |slot| {
            if let Some(why) = &slot.doomed {
                return Err(Error::TransactionAborted(why.clone()));
            }
            slot.changed = false;
            let r = work(slot);
            let failed = r.as_ref().err().map(ToString::to_string);
            slot.end_statement(failed)?;
            r
        })?
    }

    /// Starts a statement: refused while the transaction is doomed.
    pub(crate) async fn begin_statement(&self) -> Result<()> {
        self.call(|slot| {
            slot.changed = false;
            match &slot.doomed {
                Some(why) => Err(Error::TransactionAborted(why.clone())),
                None => Ok(()),
            }
        })
        .await?
    }

    /// Ends a statement that `failed` (with its error) or not: outside `BEGIN`, commits its
    /// transaction or rolls it back; inside, a failure after a change dooms the transaction.
    pub(crate) async fn end_statement(&self, failed: Option<String>) -> Result<()> {
        self.call(move |slot| slot.end_statement(failed)).await?
    }

    /// Runs `work` as one statement: begun, then ended by its outcome.
    pub(crate) async fn statement<R: Send + 'static>(
        &self,
        work: impl for<'db> FnOnce(&mut Slot<'db>) -> Result<R> + Send + 'static,
    ) -> Result<R> {
        self.begin_statement().await?;
        let r = self.call(work).await.and_then(|r| r);
        self.end_statement(r.as_ref().err().map(ToString::to_string)).await?;
        r
    }

    /// `BEGIN`.
    pub(crate) async fn begin(&self) -> Result<()> {
        let explicit = self.explicit.clone();
        self.call(move |slot| {
            if slot.explicit {
                return Err(Error::Transaction(
                    "BEGIN inside a transaction: COMMIT or ROLLBACK it first".into(),
                ));
            }
            slot.txn = Some(slot.db.begin_write()?);
            slot.explicit = true;
            explicit.store(true, Ordering::Release);
            Ok(())
        })
        .await?
    }

    /// `COMMIT` (`rollback == false`) or `ROLLBACK`. A doomed transaction is rolled back and
    /// its `COMMIT` reports why.
    pub(crate) async fn end(&self, rollback: bool) -> Result<()> {
        let explicit = self.explicit.clone();
        self.call(move |slot| {
            if !slot.explicit {
                let what = if rollback { "ROLLBACK" } else { "COMMIT" };
                return Err(Error::Transaction(format!("{what} outside a transaction (no BEGIN)")));
            }
            slot.explicit = false;
            explicit.store(false, Ordering::Release);
            let doomed = slot.doomed.take();
            let Some(txn) = slot.txn.take() else { return Ok(()) };
            match (rollback, doomed) {
                (false, None) => Ok(txn.commit()?),
                (true, _) => Ok(txn.abort()?),
                (false, Some(why)) => {
                    txn.abort()?;
                    Err(Error::TransactionAborted(why))
                }
            }
        })
        .await?
    }

    /// Reads partition `part` of a table as the open transaction sees it, into `out`: the
    /// partition's pages in chunks, each read on the writer thread and sent from here.
    pub(crate) fn scan(
        &self,
        spec: Arc<ScanSpec>,
        part: Partition,
        batch_rows: usize,
        metrics: ScanMetrics,
        out: tokio::sync::mpsc::Sender<DfResult<RecordBatch>>,
    ) {
        let writer = self.clone();
        tokio::spawn(async move {
            if let Err(e) = writer.scan_chunks(spec, part, batch_rows, metrics, &out).await {
                let _ = out.send(Err(e)).await;
            }
        });
    }

    async fn scan_chunks(
        &self,
        spec: Arc<ScanSpec>,
        part: Partition,
        batch_rows: usize,
        metrics: ScanMetrics,
        out: &tokio::sync::mpsc::Sender<DfResult<RecordBatch>>,
    ) -> DfResult<()> {
        // Partition i of n is partitions i·k .. (i+1)·k of n·k: split it into chunks of about
        // CHUNK_PAGES pages, each read in one job, so that the writer thread answers other
        // work between them and no chunk's batches are large.
        const CHUNK_PAGES: u64 = 64;
        let (s, table) = (spec.clone(), spec.table.clone());
        let pages = self
            .call(move |slot| match slot.reading() {
                Some(txn) => Ok(txn.page_count(&table)?),
                None => Err(no_transaction()),
            })
            .await
            .and_then(|r| r)
            .map_err(DataFusionError::from)?;
        let share = pages.div_ceil(part.count() as u64);
        let k = share.div_ceil(CHUNK_PAGES).max(1) as usize;
        let mut left = s.limit;
        for j in 0..k {
            let chunk =
                Partition::new(part.index() * k + j, part.count() * k).map_err(crate::error::df)?;
            let mut spec = (*s).clone();
            spec.limit = left;
            let metrics = metrics.clone();
            let batches = self
                .call(move |slot| {
                    let txn = slot.reading().ok_or_else(no_transaction)?;
                    let mut v = Vec::new();
                    spec.run(txn, chunk, batch_rows, &metrics, |b| {
                        v.push(b);
                        true
                    })?;
                    Ok::<_, Error>(v)
                })
                .await
                .and_then(|r| r)
                .map_err(DataFusionError::from)?;
            for b in batches {
                if let Some(l) = left.as_mut() {
                    *l = l.saturating_sub(b.num_rows());
                }
                if out.send(Ok(b)).await.is_err() {
                    return Ok(());
                }
            }
            if left == Some(0) {
                break;
            }
        }
        Ok(())
    }
}

fn panicked() -> Error {
    Error::Plan("a statement panicked on the session's writer thread".into())
}

fn gone() -> Error {
    Error::Plan("the session's writer thread has stopped".into())
}

fn no_transaction() -> Error {
    Error::Transaction("the transaction ended while a scan of it was running".into())
}
