//! # nvpage-sql
//!
//! SQL over nvpage: a DataFusion session whose default catalog is an nvpage database, so that
//! `session.sql("…")` reads and writes nvpage tables with DataFusion's planner and engine. What
//! it is not: a server, or a store of its own (tables outside the database — `CREATE EXTERNAL
//! TABLE` over CSV or Parquet, views — live in the session only).
//!
//! ```
//! use std::sync::Arc;
//! use nvpage::Database;
//! use nvpage_sql::Session;
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> nvpage_sql::Result<()> {
//! # let dir = tempfile::tempdir().unwrap();
//! let db = Arc::new(Database::open(dir.path().join("shop"))?);
//! let session = Session::new(db)?;
//! session.sql("CREATE TABLE items (id BIGINT PRIMARY KEY, name VARCHAR(40), price DECIMAL(10, 2))").await?;
//! session.sql("INSERT INTO items VALUES (1, 'apple', 2.50), (2, 'pear', 19.99)").await?.collect().await?;
//! let rows = session.sql("SELECT sum(price) AS total FROM items WHERE name LIKE 'p%'").await?.collect().await?;
//! let total = datafusion::arrow::util::pretty::pretty_format_batches(&rows).unwrap().to_string();
//! assert!(total.contains("19.99"), "{total}");
//! # Ok(())
//! # }
//! ```
//!
//! ## How statements run
//!
//! - **Queries** read one snapshot of the database for every table and partition
//!   ([`nvpage::Snapshot`]), taken when the statement starts: they never wait for a writer and
//!   never see a change made after they began. Scans run partition by partition on tokio's
//!   blocking threads ([`nvpage::Partition`]), with the columns a query names, the filters it
//!   can evaluate exactly and its `LIMIT` pushed into the page fold.
//! - **Writes** go through the session's writer thread, which owns its write transaction.
//!   Outside `BEGIN`, each statement is one transaction: durable when it returns, nothing of it
//!   kept if it fails. Inside `BEGIN … COMMIT`, statements read the transaction's own changes,
//!   and one that fails after changing something dooms the transaction: every later statement
//!   is refused, and `COMMIT` rolls back and says why (as PostgreSQL does). Savepoints,
//!   `AND CHAIN` and `READ ONLY` transactions are refused before anything changes; any isolation
//!   level is accepted (the one writer's transactions run one after another).
//! - **Types** map as [`types`] says; `CREATE TABLE` takes `BOOLEAN`, `SMALLINT`, `INT`,
//!   `BIGINT`, `DOUBLE`, `DECIMAL(p, s)` (p ≤ 18), `DATE`, `TIMESTAMP`, `CHAR(n)`,
//!   `VARCHAR(n)`, `TEXT`, `VARBINARY(n)`, `BYTEA`, `NOT NULL` and a `PRIMARY KEY`: the
//!   engine's ([`nvpage::Schema::with_primary_key`]), its columns NOT NULL and a unique index
//!   `<table>_pkey` dropped only with the table; DataFusion is told of it, so a `GROUP BY` of
//!   the key may select the table's other columns.
//! - **Storage**: `CREATE TABLE t (…) WITH (storage = 'clustered')` (also before `AS SELECT`)
//!   keeps the rows in the leaves of the primary key's B+tree, in key order
//!   ([`nvpage::Storage::Clustered`]), and needs a `PRIMARY KEY`; `'heap'`, the default, keeps
//!   them on heap pages. Any other table option is refused with [`Error::Plan`].
//!   `DELETE` and `UPDATE` change a clustered table's rows by key (its rows have no ids), and a
//!   filter that bounds the key's leading column reads only the leaves of that key range
//!   (`EXPLAIN` shows `index=t_pkey (clustered, k >= 100 AND k <= 140)`). Its scans yield each
//!   partition in key order, and say so to DataFusion: `ORDER BY` the key merges partitions
//!   instead of sorting. `CREATE [UNIQUE] INDEX` on a clustered table makes an index of primary
//!   keys that every write keeps; the planner does not read a clustered table through it (a
//!   filter on its columns scans the table: see `access.rs`).
//! - **`UPDATE` of a unique key** (a column of any unique index, a clustered table's primary
//!   key included) is statement-level, as the SQL standard has it: every row the
//!   statement finds is removed, then every new row inserted, so `SET k = k + 1` succeeds. A new
//!   key that a row the statement leaves still holds, or that two new rows share, is the
//!   engine's [`nvpage::Error::UniqueViolation`], and nothing of the statement is kept (inside
//!   `BEGIN` it dooms the transaction, as any failure after a change does). An `UPDATE` that sets
//!   no such column changes each row where it is.
//!
//! - **`CREATE [UNIQUE] INDEX`** makes a B+tree over whole columns, or refuses: a partial index
//!   (`WHERE`), `NULLS NOT DISTINCT`, `USING` another method than `btree`, an operator class,
//!   `INCLUDE` and `WITH (…)` are errors before anything changes; a column's `ASC`/`DESC` and
//!   `CONCURRENTLY` are accepted (the tree is read both ways). `DECIMAL(p, s)` keeps `s`; `p` (1
//!   to 18) is checked when the table is made and not kept: the column holds any 18 digits.
//! - **Integer arithmetic** fails on overflow, as in PostgreSQL: `+`, `-`, `*` and unary `-` of
//!   integers whose result does not fit their type end the statement with an error naming the
//!   type and the values, where DataFusion alone would wrap ([`install_checked_arithmetic`]);
//!   so does a `sum` of integers whose result does not fit a `BIGINT`. `sum(DISTINCT …)` and
//!   arithmetic in an aggregate's or window function's `FILTER` or `ORDER BY` are not checked.
//! - **A literal its column cannot hold** (`40000` for a `SMALLINT`, `'x'` for an `INT`) in an
//!   `INSERT … VALUES` or an `UPDATE … SET` is refused before anything changes, naming the
//!   column, its type and the value ([`install_column_value_checks`]); a computed value that
//!   does not fit fails its cast with Arrow's message.
//! - **`UPDATE` and `DELETE`** pick rows by their own table's columns: one whose `WHERE` or
//!   `SET` reads a subquery is refused before anything changes ([`Error::Plan`]).
//!
//! A `DataFrame` of a query or of an `INSERT`, `UPDATE` or `DELETE` runs when it is collected
//! (or streamed); other statements have run when [`Session::sql`] returns.

#![forbid(unsafe_code)]

mod access;
mod batch;
mod catalog;
mod checked;
mod column_values;
mod error;
mod filter;
mod modify;
mod provider;
mod runtime;
mod scan;
mod session;
pub mod types;
mod values;
mod writer;

pub use checked::install_checked_arithmetic;
pub use column_values::install_column_value_checks;
pub use error::{Error, Result};
pub use provider::NvpageTable;
pub use session::{CATALOG, RUNTIME_LIST_KEYS, SCHEMA, Session};

/// The README's examples (the engine's and SQL's), compiled and run as doctests here, where both
/// crates are in reach.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
