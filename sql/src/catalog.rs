//! The session's schema: the database's tables, as the last commit has them (or, inside a
//! transaction, as the transaction does), beside tables of the session's own that live outside
//! the database (`CREATE EXTERNAL TABLE` over CSV or Parquet files, views).

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::datasource::MemTable;
use datafusion::error::{DataFusionError, Result as DfResult};
use nvpage::ReadOps;
use parking_lot::Mutex;

use crate::error::df;
use crate::provider::NvpageTable;
use crate::types::schema_of;
use crate::values::insert_batch;
use crate::writer::Writer;

/// The schema `public` of a session's catalog `nvpage`.
#[derive(Debug)]
pub(crate) struct NvpageSchema {
    writer: Writer,
    /// Tables of the session that are not in the database.
    outside: Mutex<BTreeMap<String, Arc<dyn TableProvider>>>,
}

impl NvpageSchema {
    pub(crate) fn new(writer: Writer) -> Self {
        Self { writer, outside: Mutex::new(BTreeMap::new()) }
    }

    /// The database's table `name` as this statement sees it.
    async fn nvpage_table(&self, name: &str) -> crate::error::Result<Option<NvpageTable>> {
        let owned = name.to_string();
        let found = if self.writer.in_transaction() {
            self.writer
                .call(move |slot| match slot.reading() {
                    Some(txn) => lookup(txn, &owned),
                    None => Ok(None),
                })
                .await??
        } else {
            lookup(&self.writer.db().snapshot()?, name)?
        };
        Ok(found.map(|(t, rows)| NvpageTable::new(t, rows, self.writer.clone())))
    }

    /// The database's table names as this statement sees them.
    fn nvpage_names(&self) -> crate::error::Result<Vec<String>> {
        fn names(rx: &impl ReadOps) -> Vec<String> {
            rx.tables().iter().map(|t| t.name().to_string()).collect()
        }
        if self.writer.in_transaction() {
            self.writer.call_blocking(|slot| slot.reading().map(names).unwrap_or_default())
        } else {
            Ok(names(&self.writer.db().snapshot()?))
        }
    }
}

/// Table `name` in `rx`'s catalog, with its row count.
fn lookup(rx: &impl ReadOps, name: &str) -> crate::error::Result<Option<(nvpage::Table, u64)>> {
    match rx.table(name) {
        Ok(t) => {
            let rows = rx.row_count(&t)?;
            Ok(Some((t, rows)))
        }
        Err(nvpage::Error::UnknownTable(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

#[async_trait]
impl SchemaProvider for NvpageSchema {
    fn table_names(&self) -> Vec<String> {
        let mut names = self.nvpage_names().unwrap_or_default();
        names.extend(self.outside.lock().keys().cloned());
        names
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        if let Some(t) = self.outside.lock().get(name) {
            return Ok(Some(t.clone()));
        }
        Ok(self
            .nvpage_table(name)
            .await
            .map_err(df)?
            .map(|t| Arc::new(t) as Arc<dyn TableProvider>))
    }

    /// A table DataFusion made: its own `CREATE TABLE` (an in-memory table, with or without
    /// rows) becomes an nvpage table holding them, in one statement; anything else (a file
    /// table, a view) stays the session's.
    fn register_table(
        &self,
        name: String,
        table: Arc<dyn TableProvider>,
    ) -> DfResult<Option<Arc<dyn TableProvider>>> {
        if self.table_exist(&name) {
            return Err(DataFusionError::Plan(format!("table {name} exists already")));
        }
        let Some(mem) = table.downcast_ref::<MemTable>() else {
            return Ok(self.outside.lock().insert(name, table));
        };
        let schema = schema_of(&mem.schema()).map_err(df)?;
        let batches = mem_rows(mem)?;
        self.writer
            .statement_blocking(move |slot| {
                let txn = slot.txn()?;
                let t = txn.create_table(&name, schema)?;
                for b in &batches {
                    insert_batch(txn, &t, b)?;
                }
                Ok(())
            })
            .map_err(df)?;
        Ok(None)
    }

    fn deregister_table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        if let Some(t) = self.outside.lock().remove(name) {
            return Ok(Some(t));
        }
        let owned = name.to_string();
        self.writer
            .statement_blocking(move |slot| Ok(slot.txn()?.drop_table(&owned)?))
            .map_err(df)?;
        Ok(None)
    }

    fn table_exist(&self, name: &str) -> bool {
        self.outside.lock().contains_key(name)
            || self.nvpage_names().is_ok_and(|n| n.iter().any(|t| t == name))
    }
}

/// The rows of an in-memory table DataFusion just made (nobody else holds its partitions).
fn mem_rows(mem: &MemTable) -> DfResult<Vec<RecordBatch>> {
    let mut rows = Vec::new();
    for part in &mem.batches {
        let part = part
            .try_read()
            .map_err(|_| DataFusionError::Internal("a new table's rows are locked".into()))?;
        rows.extend(part.iter().cloned());
    }
    Ok(rows)
}
