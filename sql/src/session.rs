//! A SQL session over one database: DataFusion's context with the database as its default
//! catalog, the session's writer, and the statements DataFusion does not carry out itself for
//! a store of its own (`BEGIN`/`COMMIT`/`ROLLBACK`, `CREATE TABLE` with nvpage's types and
//! storage, `CREATE [UNIQUE] INDEX`, `DROP TABLE`, `DROP INDEX`).

use std::sync::Arc;

use datafusion::catalog::{CatalogProvider, MemoryCatalogProvider};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::dataframe::DataFrame;
use datafusion::execution::{SessionState, SessionStateBuilder};
use datafusion::logical_expr::{Expr, LogicalPlan, WriteOp};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::{DFParser, Statement};
use datafusion::sql::sqlparser::ast::{
    ColumnOption, CreateIndex, CreateTable, CreateTableOptions, Expr as SqlExpr, Ident,
    IndexOption, IndexType, ObjectName, ObjectNamePart, ObjectType, SqlOption,
    Statement as SqlStatement, TableConstraint, TransactionAccessMode, TransactionMode,
    TransactionModifier, Value as SqlValue,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use futures::StreamExt;
use nvpage::{Column, Database, ReadOps, Schema, Snapshot, Storage};

use crate::catalog::NvpageSchema;
use crate::error::{Error, Result};
use crate::types::{arrow_type, declared_type, schema_of};
use crate::values::{cast_columns, insert_batch};
use crate::writer::Writer;

/// The snapshot a statement reads (a session config extension): one commit for every table and
/// partition of the statement.
#[derive(Debug)]
pub(crate) struct StatementSnapshot(pub(crate) Snapshot);

/// The catalog and schema an nvpage session's tables live in: `nvpage.public.t`, or just `t`.
pub const CATALOG: &str = "nvpage";
/// See [`CATALOG`].
pub const SCHEMA: &str = "public";

/// A SQL session over an nvpage database (see the crate's docs).
pub struct Session {
    ctx: SessionContext,
    writer: Writer,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("database", &self.writer.db().path())
            .field("in_transaction", &self.writer.in_transaction())
            .finish_non_exhaustive()
    }
}

/// The most keys a hash join of a session hands its probe side's scan as a list, unless the
/// session's configuration says otherwise ([`Session::with_config`]). DataFusion's default is
/// 150; far more (measured with 131,072 at SF 1) costs more than it saves: DataFusion builds a
/// literal per key, and a join whose build side holds 75,000 keys spent longer making the list
/// than its scan saved.
pub const RUNTIME_LIST_KEYS: usize = 4096;

impl Session {
    /// A session over `db`, with DataFusion's default settings and its information schema on
    /// (`SHOW TABLES`, `DESCRIBE t`).
    pub fn new(db: Arc<Database>) -> Result<Self> {
        Self::with_config(db, SessionConfig::new())
    }

    /// A session over `db` with `config` (batch size, target partitions, …); its default
    /// catalog and schema become the database's, and numeric literals with a point are exact
    /// decimals (`sql_parser.parse_float_as_decimal`). Where `config` leaves them at
    /// DataFusion's defaults, a hash join hands its probe side's scan the build side's keys as
    /// a list for up to [`RUNTIME_LIST_KEYS`] of them
    /// (`hash_join_inlist_pushdown_max_distinct_values`, and
    /// `hash_join_inlist_pushdown_max_size` to match): the scan filters pages by such a list,
    /// where a larger build side gives it only the keys' bounds.
    pub fn with_config(db: Arc<Database>, config: SessionConfig) -> Result<Self> {
        let writer = Writer::start(db)?;
        let mut config = config;
        // `1.5` is an exact decimal, as in PostgreSQL, not a float: nvpage's numbers are
        // integers and decimals, and a float's rounding would change the value stored or
        // compared (99999999999999.9999 as a float is 10^14).
        config.options_mut().sql_parser.parse_float_as_decimal = true;
        let defaults = datafusion::config::OptimizerOptions::default();
        let opt = &mut config.options_mut().optimizer;
        if opt.hash_join_inlist_pushdown_max_distinct_values
            == defaults.hash_join_inlist_pushdown_max_distinct_values
        {
            opt.hash_join_inlist_pushdown_max_distinct_values = RUNTIME_LIST_KEYS;
        }
        if opt.hash_join_inlist_pushdown_max_size == defaults.hash_join_inlist_pushdown_max_size {
            // The build side's key arrays as Arrow counts them, whole buffers even where the
            // arrays are slices of a larger batch: 64 bytes a key lets a partitioned join's
            // build side of a few thousand keys through.
            opt.hash_join_inlist_pushdown_max_size = RUNTIME_LIST_KEYS * 64;
        }
        let config = config
            .with_information_schema(true)
            .with_create_default_catalog_and_schema(false)
            .with_default_catalog_and_schema(CATALOG, SCHEMA);
        let mut state =
            SessionStateBuilder::new().with_config(config).with_default_features().build();
        crate::checked::install_checked_arithmetic(&mut state)?;
        crate::column_values::install_column_value_checks(&mut state);
        let ctx = SessionContext::new_with_state(state);
        let catalog = MemoryCatalogProvider::new();
        catalog.register_schema(SCHEMA, Arc::new(NvpageSchema::new(writer.clone())))?;
        ctx.register_catalog(CATALOG, Arc::new(catalog));
        Ok(Self { ctx, writer })
    }

    /// DataFusion's context: its default catalog is the database, so `ctx.sql(…)` reads and
    /// writes nvpage tables too (each table then reads a snapshot of its own: a statement
    /// through [`Session::sql`] reads one for all its tables).
    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// A DataFusion session state whose nvpage tables all read `snapshot` (a snapshot of this
    /// session's database): plans made from it (`TableProvider::scan` included) see the
    /// database as of that snapshot, whichever thread runs them. For callers that plan scans
    /// themselves and want to know the commit they read ([`nvpage::Snapshot::commit_seq`]).
    pub fn state_at(&self, snapshot: Snapshot) -> SessionState {
        let mut state = self.ctx.state();
        state.config_mut().set_extension(Arc::new(StatementSnapshot(snapshot)));
        state
    }

    /// The database.
    pub fn database(&self) -> &Arc<Database> {
        self.writer.db()
    }

    /// Ends the session: a transaction left open is rolled back, and the session lets go of
    /// the database (dropping the session does the same, without waiting for its writer
    /// thread to end).
    pub fn close(self) {
        let writer = self.writer.clone();
        drop(self);
        writer.stop();
    }

    /// Whether `BEGIN` has opened a transaction that `COMMIT` or `ROLLBACK` has not ended.
    pub fn in_transaction(&self) -> bool {
        self.writer.in_transaction()
    }

    /// The statements of `sql`, parsed with DataFusion's parser (for [`Session::run`]).
    pub fn parse(sql: &str) -> Result<Vec<Statement>> {
        Ok(DFParser::parse_sql_with_dialect(sql, &GenericDialect {})?.into_iter().collect())
    }

    /// Runs the one statement in `sql`. Queries and `INSERT`/`UPDATE`/`DELETE` return a
    /// [`DataFrame`] that runs when collected; every other statement has run when this
    /// returns.
    pub async fn sql(&self, sql: &str) -> Result<DataFrame> {
        let mut statements = Self::parse(sql)?;
        if statements.len() != 1 {
            return Err(Error::Plan(format!(
                "{} statements in one call: Session::sql runs one (Session::parse splits a script)",
                statements.len()
            )));
        }
        self.run(statements.remove(0)).await
    }

    /// Runs one parsed statement (see [`Session::sql`]).
    pub async fn run(&self, statement: Statement) -> Result<DataFrame> {
        let Statement::Statement(s) = &statement else { return self.datafusion(statement).await };
        match s.as_ref() {
            SqlStatement::StartTransaction { .. }
            | SqlStatement::Commit { .. }
            | SqlStatement::Rollback { .. }
            | SqlStatement::Savepoint { .. }
            | SqlStatement::ReleaseSavepoint { .. } => {
                match transaction_control(s)? {
                    Control::Begin => self.writer.begin().await?,
                    Control::Commit => self.writer.end(false).await?,
                    Control::Rollback => self.writer.end(true).await?,
                }
                self.empty()
            }
            SqlStatement::CreateTable(ct) if ct.query.is_none() && !ct.external => {
                self.refuse_if_doomed().await?;
                self.create_table(ct).await?;
                self.empty()
            }
            SqlStatement::CreateTable(ct) if !ct.external => {
                self.refuse_if_doomed().await?;
                self.create_table_as(ct).await?;
                self.empty()
            }
            SqlStatement::CreateIndex(ci) => {
                self.refuse_if_doomed().await?;
                self.create_index(ci).await?;
                self.empty()
            }
            SqlStatement::Drop { object_type, if_exists, names, .. }
                if matches!(object_type, ObjectType::Table | ObjectType::Index) =>
            {
                self.refuse_if_doomed().await?;
                self.drop(*object_type, *if_exists, names).await?;
                self.empty()
            }
            _ => self.datafusion(statement).await,
        }
    }

    /// The result of a statement that returns no rows: no columns, no rows.
    fn empty(&self) -> Result<DataFrame> {
        let none = datafusion::arrow::datatypes::Schema::empty();
        Ok(self.ctx.read_batch(datafusion::arrow::array::RecordBatch::new_empty(Arc::new(none)))?)
    }

    /// Inside a doomed transaction nothing runs but `COMMIT` and `ROLLBACK`.
    async fn refuse_if_doomed(&self) -> Result<()> {
        if self.writer.in_transaction() {
            self.writer.begin_statement().await?;
        }
        Ok(())
    }

    /// A statement DataFusion plans: read at one snapshot taken now, unless a transaction is
    /// open (then its own changes are read).
    async fn datafusion(&self, statement: Statement) -> Result<DataFrame> {
        self.refuse_if_doomed().await?;
        let mut state = self.ctx.state();
        if !self.writer.in_transaction() {
            let snap = self.writer.db().snapshot()?;
            state.config_mut().set_extension(Arc::new(StatementSnapshot(snap)));
        }
        let plan = state.statement_to_plan(statement).await?;
        refuse_lossy_change(&plan)?;
        match plan {
            // Statements that change the session itself (external tables, views, settings).
            LogicalPlan::Ddl(_) | LogicalPlan::Statement(_) => {
                Ok(self.ctx.execute_logical_plan(plan).await?)
            }
            plan => Ok(DataFrame::new(state, plan)),
        }
    }

    async fn create_table(&self, ct: &CreateTable) -> Result<()> {
        let name = table_name(&ct.name)?;
        let schema = declared_schema(ct)?;
        let storage = storage_for(declared_storage(ct)?, &name, &schema)?;
        let if_not_exists = ct.if_not_exists;
        self.writer
            .statement(move |slot| {
                let txn = slot.txn()?;
                if if_not_exists && txn.table(&name).is_ok() {
                    return Ok(());
                }
                txn.create_table_with(&name, schema, storage)?;
                Ok(())
            })
            .await
    }

    /// `CREATE TABLE t AS SELECT …`: the query read at one snapshot, its rows stored in a new
    /// table of the query's columns, in one statement.
    async fn create_table_as(&self, ct: &CreateTable) -> Result<()> {
        let name = table_name(&ct.name)?;
        let storage = declared_storage(ct)?;
        let query = Statement::Statement(Box::new(SqlStatement::Query(
            ct.query
                .clone()
                .ok_or_else(|| Error::Plan("CREATE TABLE … AS without a query".into()))?,
        )));
        let df = self.datafusion(query).await?;
        let schema = if ct.columns.is_empty() {
            schema_of(df.schema().as_arrow())?
        } else {
            declared_schema(ct)?
        };
        let storage = storage_for(storage, &name, &schema)?;
        // Declared columns take the query's values as an INSERT would, cast to their types.
        let casts: Option<Vec<_>> = (!ct.columns.is_empty())
            .then(|| schema.columns().iter().map(|c| arrow_type(c.ty)).collect());
        let if_not_exists = ct.if_not_exists;
        let mut stream = df.execute_stream().await?;
        self.writer.begin_statement().await?;
        let outcome: Result<()> = async {
            let owned = name.clone();
            let made = self
                .writer
                .call(move |slot| -> Result<bool> {
                    let txn = slot.txn()?;
                    if if_not_exists && txn.table(&owned).is_ok() {
                        return Ok(false);
                    }
                    txn.create_table_with(&owned, schema, storage)?;
                    Ok(true)
                })
                .await??;
            if !made {
                return Ok(());
            }
            while let Some(batch) = stream.next().await {
                let batch = match &casts {
                    Some(types) => cast_columns(&batch?, types)?,
                    None => batch?,
                };
                let owned = name.clone();
                self.writer
                    .call(move |slot| -> Result<u64> {
                        let txn = slot.txn()?;
                        let t = txn.table(&owned)?;
                        insert_batch(txn, &t, &batch)
                    })
                    .await??;
            }
            Ok(())
        }
        .await;
        self.writer.end_statement(outcome.as_ref().err().map(ToString::to_string)).await?;
        outcome
    }

    async fn create_index(&self, ci: &CreateIndex) -> Result<()> {
        index_form(ci)?;
        let table = table_name(&ci.table_name)?;
        let cols = ci
            .columns
            .iter()
            .map(|c| match &c.column.expr {
                SqlExpr::Identifier(id) => Ok(ident(id)),
                SqlExpr::CompoundIdentifier(ids) if !ids.is_empty() => {
                    Ok(ident(&ids[ids.len() - 1]))
                }
                other => {
                    Err(Error::Plan(format!("an index is over columns, not expressions ({other})")))
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let name = match &ci.name {
            Some(n) => table_name(n)?,
            None => format!("{table}_{}_idx", cols.join("_")),
        };
        let (unique, if_not_exists) = (ci.unique, ci.if_not_exists);
        self.writer
            .statement(move |slot| {
                let txn = slot.txn()?;
                if if_not_exists && txn.index(&name).is_ok() {
                    return Ok(());
                }
                let t = txn.table(&table)?;
                let cols: Vec<&str> = cols.iter().map(String::as_str).collect();
                if unique {
                    txn.create_unique_index(&name, &t, &cols)?;
                } else {
                    txn.create_index(&name, &t, &cols)?;
                }
                Ok(())
            })
            .await
    }

    async fn drop(&self, what: ObjectType, if_exists: bool, names: &[ObjectName]) -> Result<()> {
        let names = names.iter().map(table_name).collect::<Result<Vec<_>>>()?;
        self.writer
            .statement(move |slot| {
                let txn = slot.txn()?;
                for name in &names {
                    let r = match what {
                        ObjectType::Table => txn.drop_table(name),
                        _ => txn.drop_index(name),
                    };
                    match r {
                        Err(nvpage::Error::UnknownTable(_) | nvpage::Error::UnknownIndex(_))
                            if if_exists => {}
                        r => r?,
                    }
                }
                Ok(())
            })
            .await
    }
}

/// Refuses an `UPDATE` or `DELETE` that reads anything but its own table's rows, before anything
/// changes. DataFusion hands a table's `update` and `delete_from` only the parts of the `WHERE`
/// that name the table alone: a subquery (`WHERE id IN (SELECT x FROM t2)`, `EXISTS`, `= ANY`,
/// a scalar subquery) or another table (`UPDATE … FROM`) would be dropped, and the statement
/// would change every row.
fn refuse_lossy_change(plan: &LogicalPlan) -> Result<()> {
    let LogicalPlan::Dml(dml) = plan else { return Ok(()) };
    let verb = match dml.op {
        WriteOp::Update => "UPDATE",
        WriteOp::Delete => "DELETE",
        _ => return Ok(()),
    };
    let subquery = |e: &Expr| {
        Ok(matches!(
            e,
            Expr::Exists(_)
                | Expr::InSubquery(_)
                | Expr::SetComparison(_)
                | Expr::ScalarSubquery(_)
        ))
    };
    let mut refused = None;
    dml.input.apply(|node| {
        let own = matches!(
            node,
            LogicalPlan::Projection(_)
                | LogicalPlan::Filter(_)
                | LogicalPlan::TableScan(_)
                | LogicalPlan::SubqueryAlias(_)
        );
        if !own {
            refused = Some("another table");
        } else if node.expressions().iter().any(|e| e.exists(subquery).unwrap_or(true)) {
            refused = Some("a subquery");
        }
        Ok(if refused.is_some() { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
    })?;
    match refused {
        None => Ok(()),
        Some(what) => Err(Error::Plan(format!(
            "{verb} that reads {what} is not supported: it may pick its table's rows by their \
             own columns only (run the query first, then {verb} … WHERE key IN (…))"
        ))),
    }
}

/// Refuses, before anything changes, what a `CREATE INDEX` may ask that an nvpage index cannot
/// honour: an index is a B+tree over whole columns, every row's entry in it, each `NULL` distinct.
/// A partial index (`WHERE`), `NULLS NOT DISTINCT`, another access method (`USING hash`), an
/// operator class, `INCLUDE` columns and storage parameters (`WITH (…)`) would each be an index
/// other than the one asked for (a unique one refusing rows it should take, or one read in a way
/// it was not made for), so each is an error rather than dropped. The order asked of a column
/// (`ASC`, `DESC`, `NULLS FIRST`) and `CONCURRENTLY` are accepted: the B+tree is read in either
/// direction, and readers never wait for nvpage's writer, whatever it builds.
fn index_form(ci: &CreateIndex) -> Result<()> {
    let refuse = |what: String| {
        Err(Error::Plan(format!(
            "CREATE INDEX: {what} is not supported (an nvpage index is a B+tree over whole columns)"
        )))
    };
    if let Some(p) = &ci.predicate {
        return refuse(format!("a partial index (WHERE {p})"));
    }
    if !ci.include.is_empty() {
        return refuse("INCLUDE".into());
    }
    if ci.nulls_distinct == Some(false) {
        return refuse("NULLS NOT DISTINCT".into());
    }
    if !ci.with.is_empty() || !ci.alter_options.is_empty() {
        return refuse("an index's storage parameters or options".into());
    }
    let using = ci.using.iter().chain(ci.index_options.iter().filter_map(|o| match o {
        IndexOption::Using(u) => Some(u),
        IndexOption::Comment(_) => None,
    }));
    for u in using {
        if *u != IndexType::BTree {
            return refuse(format!("USING {u}"));
        }
    }
    for c in &ci.columns {
        if let Some(class) = &c.operator_class {
            return refuse(format!("an operator class ({class})"));
        }
        if c.column.with_fill.is_some() {
            return refuse("WITH FILL".into());
        }
    }
    Ok(())
}

/// What a transaction-control statement does.
enum Control {
    Begin,
    Commit,
    Rollback,
}

/// What `BEGIN`, `START TRANSACTION`, `COMMIT` or `ROLLBACK` (`s`) does; a form the session
/// cannot carry out as written is refused before anything changes, so a transaction stays open
/// and usable: savepoints (`ROLLBACK TO` would otherwise have rolled back the whole
/// transaction), `AND CHAIN`, `READ ONLY` (which writes would otherwise ignore), and procedural
/// blocks. Any isolation level is taken: the one writer's transactions run one after another,
/// serializable, which every level allows.
fn transaction_control(s: &SqlStatement) -> Result<Control> {
    let refuse = |what: &str| Err(Error::Transaction(format!("{what} is not supported")));
    match s {
        SqlStatement::StartTransaction { modes, modifier, statements, exception, .. } => {
            if modes.contains(&TransactionMode::AccessMode(TransactionAccessMode::ReadOnly)) {
                return refuse(
                    "a READ ONLY transaction (a query outside BEGIN reads one snapshot)",
                );
            }
            let plain = matches!(
                modifier,
                None | Some(
                    TransactionModifier::Deferred
                        | TransactionModifier::Immediate
                        | TransactionModifier::Exclusive
                )
            );
            if !plain || !statements.is_empty() || exception.is_some() {
                return refuse("a procedural BEGIN block");
            }
            Ok(Control::Begin)
        }
        SqlStatement::Commit { chain: true, .. } | SqlStatement::Rollback { chain: true, .. } => {
            refuse("AND CHAIN")
        }
        SqlStatement::Commit { modifier: None, .. } => Ok(Control::Commit),
        SqlStatement::Commit { .. } => refuse("a procedural block's end"),
        SqlStatement::Rollback { savepoint: None, .. } => Ok(Control::Rollback),
        _ => refuse("a savepoint"),
    }
}

/// An identifier as DataFusion names it: folded to lower case unless quoted.
fn ident(id: &Ident) -> String {
    if id.quote_style.is_some() { id.value.clone() } else { id.value.to_lowercase() }
}

/// The table (or index) an object name names: `t`, `public.t` or `nvpage.public.t`.
fn table_name(name: &ObjectName) -> Result<String> {
    let parts = name
        .0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(id) => Ok(ident(id)),
            other => Err(Error::Plan(format!("{other} is not a name"))),
        })
        .collect::<Result<Vec<_>>>()?;
    match parts.as_slice() {
        [t] => Ok(t.clone()),
        [s, t] if s == SCHEMA => Ok(t.clone()),
        [c, s, t] if c == CATALOG && s == SCHEMA => Ok(t.clone()),
        _ => Err(Error::Plan(format!(
            "{name}: nvpage tables live in {CATALOG}.{SCHEMA}, named by one name"
        ))),
    }
}

/// The schema a `CREATE TABLE` declares, with its primary key if it names one (the engine's:
/// its columns NOT NULL, with a unique index `<table>_pkey` made and dropped with the table).
fn declared_schema(ct: &CreateTable) -> Result<Schema> {
    let mut key: Option<Vec<String>> = None;
    let mut set_key = |cols: Vec<String>| {
        if key.replace(cols).is_some() {
            return Err(Error::Plan("a table has one primary key".into()));
        }
        Ok(())
    };
    let mut columns = Vec::new();
    for c in &ct.columns {
        let name = ident(&c.name);
        let ty = declared_type(&name, &c.data_type)?;
        let mut nullable = true;
        for o in &c.options {
            match &o.option {
                ColumnOption::NotNull => nullable = false,
                ColumnOption::Null => nullable = true,
                ColumnOption::PrimaryKey(_) => set_key(vec![name.clone()])?,
                other => {
                    return Err(Error::Plan(format!(
                        "column {name}: {other} is not supported (NOT NULL, NULL and PRIMARY KEY \
                         are)"
                    )));
                }
            }
        }
        columns.push(Column { name, ty, nullable });
    }
    for tc in &ct.constraints {
        match tc {
            TableConstraint::PrimaryKey(pk) => {
                let cols = pk
                    .columns
                    .iter()
                    .map(|c| match &c.column.expr {
                        SqlExpr::Identifier(id) => Ok(ident(id)),
                        other => Err(Error::Plan(format!("a primary key column, not {other}"))),
                    })
                    .collect::<Result<Vec<_>>>()?;
                set_key(cols)?;
            }
            other => {
                return Err(Error::Plan(format!(
                    "{other} is not supported (PRIMARY KEY is; CREATE UNIQUE INDEX makes a \
                     unique key)"
                )));
            }
        }
    }
    let schema = Schema::new(columns)?;
    let Some(cols) = key else { return Ok(schema) };
    if let Some(k) = cols.iter().find(|k| schema.index_of(k).is_err()) {
        return Err(Error::Plan(format!("primary key column {k} is not a column")));
    }
    let cols: Vec<&str> = cols.iter().map(String::as_str).collect();
    Ok(schema.with_primary_key(&cols)?)
}

/// What `WITH (storage = …)` names, and the values it takes.
const STORAGE_OPTION: &str = "storage";
const STORAGE_VALUES: &str = "'heap' (the default) or 'clustered'";

/// Where a `CREATE TABLE` asks for its rows to live: `WITH (storage = 'heap' | 'clustered')`,
/// heap pages when it says nothing. Any other table option is refused, naming the one nvpage
/// takes, rather than ignored: a setting that silently did nothing would mislead.
fn declared_storage(ct: &CreateTable) -> Result<Storage> {
    let options = match &ct.table_options {
        CreateTableOptions::None => return Ok(Storage::Heap),
        CreateTableOptions::With(options) => options,
        other => {
            return Err(Error::Plan(format!(
                "table options {other} are not supported: nvpage takes WITH ({STORAGE_OPTION} = \
                 {STORAGE_VALUES})"
            )));
        }
    };
    let mut storage = None;
    for o in options {
        let value = match o {
            SqlOption::KeyValue { key, value } if ident(key) == STORAGE_OPTION => value,
            other => {
                return Err(Error::Plan(format!(
                    "unknown table option {other}: nvpage takes WITH ({STORAGE_OPTION} = \
                     {STORAGE_VALUES})"
                )));
            }
        };
        let word = match value {
            SqlExpr::Value(v) => match &v.value {
                SqlValue::SingleQuotedString(s) => Some(s.to_lowercase()),
                _ => None,
            },
            SqlExpr::Identifier(id) => Some(id.value.to_lowercase()),
            _ => None,
        };
        let chosen = match word.as_deref() {
            Some("heap") => Storage::Heap,
            Some("clustered") => Storage::Clustered,
            _ => {
                return Err(Error::Plan(format!(
                    "{STORAGE_OPTION} = {value} is not a storage: it is {STORAGE_VALUES}"
                )));
            }
        };
        if storage.replace(chosen).is_some() {
            return Err(Error::Plan(format!("{STORAGE_OPTION} is given twice")));
        }
    }
    Ok(storage.unwrap_or(Storage::Heap))
}

/// `storage` for table `name` of `schema`, refused where the schema cannot have it: a clustered
/// table keeps its rows in its primary key's B+tree, so it must declare one. Checked before the
/// statement creates anything.
fn storage_for(storage: Storage, name: &str, schema: &Schema) -> Result<Storage> {
    if storage == Storage::Clustered && schema.primary_key().is_none() {
        return Err(Error::Plan(format!(
            "table {name}: {STORAGE_OPTION} = 'clustered' keeps the rows in the primary key's \
             order, and the table declares no PRIMARY KEY"
        )));
    }
    Ok(storage)
}
