//! The 22 queries through SQL (`--sql`, feature `sql`): the specification's text run by
//! `nvpage-sql` over the database the plans read, and by DataFusion over its own in-memory copy
//! of the same tables with the same session settings, so that a run shows what the storage
//! costs a SQL engine.
//!
//! The text is `pg_sql`'s (the specification's SQL with its validation parameters and our
//! tie-breaking), except Q2, Q17 and Q20, which run in the specification's correlated form:
//! DataFusion decorrelates their scalar subqueries itself, where PostgreSQL runs them once per
//! row. Answers are checked against the plans' as PostgreSQL's are (`postgres::compare`:
//! averages and ratios, which SQL prints with more places, equal once rounded).

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::datasource::MemTable;
use datafusion::prelude::{SessionConfig, SessionContext};
use nvpage::Database;
use nvpage_sql::Session;

use super::pg_sql;
use super::queries::Query;
use crate::BoxError;

/// The eight tables, as `CREATE TABLE` named them.
pub(crate) const TABLES: [&str; 8] =
    ["region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"];

/// Query `q`'s SQL at scale factor `sf`, as the SQL engines run it.
pub fn text(q: Query, sf: f64) -> String {
    match q {
        Query::Q02 => Q02.into(),
        Query::Q17 => Q17.into(),
        Query::Q20 => Q20.into(),
        q => pg_sql::query(q, sf),
    }
}

const Q02: &str =
    "select s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment
from part, supplier, partsupp, nation, region
where p_partkey = ps_partkey and s_suppkey = ps_suppkey and p_size = 15
  and p_type like '%BRASS' and s_nationkey = n_nationkey and n_regionkey = r_regionkey
  and r_name = 'EUROPE'
  and ps_supplycost = (
    select min(ps_supplycost) from partsupp, supplier, nation, region
    where p_partkey = ps_partkey and s_suppkey = ps_suppkey and s_nationkey = n_nationkey
      and n_regionkey = r_regionkey and r_name = 'EUROPE')
order by s_acctbal desc, n_name, s_name, p_partkey limit 100";

const Q17: &str = "select sum(l_extendedprice) / 7.0 as avg_yearly
from lineitem, part
where p_partkey = l_partkey and p_brand = 'Brand#23' and p_container = 'MED BOX'
  and l_quantity < (select 0.2 * avg(l_quantity) from lineitem where l_partkey = p_partkey)";

const Q20: &str = "select s_name, s_address from supplier, nation
where s_suppkey in (
    select ps_suppkey from partsupp
    where ps_partkey in (select p_partkey from part where p_name like 'forest%')
      and ps_availqty > (
        select 0.5 * sum(l_quantity) from lineitem
        where l_partkey = ps_partkey and l_suppkey = ps_suppkey
          and l_shipdate >= date '1994-01-01'
          and l_shipdate < date '1994-01-01' + interval '1' year))
  and s_nationkey = n_nationkey and n_name = 'CANADA'
order by s_name";

/// The session settings both SQL engines run with: `threads` partitions per scan.
fn config(threads: usize) -> SessionConfig {
    SessionConfig::new().with_target_partitions(threads.max(1))
}

/// A runtime for the engines' queries: `threads` workers, as the plans' scan threads.
fn runtime(threads: usize) -> Result<tokio::runtime::Runtime, BoxError> {
    Ok(tokio::runtime::Builder::new_multi_thread().worker_threads(threads.max(1)).build()?)
}

/// `nvpage-sql` over one open database.
#[derive(Debug)]
pub struct NvpageSql {
    rt: tokio::runtime::Runtime,
    session: Session,
}

impl NvpageSql {
    /// A session over `db` with `threads` partitions per scan.
    pub fn new(db: Arc<Database>, threads: usize) -> Result<Self, BoxError> {
        Ok(Self { rt: runtime(threads)?, session: Session::with_config(db, config(threads))? })
    }

    /// Runs `q`; its rows as text (NULL empty, as psql prints it).
    pub fn run(&self, q: Query, sf: f64) -> Result<Vec<Vec<String>>, BoxError> {
        let sql = text(q, sf);
        self.rt.block_on(async {
            let batches = self.session.sql(&sql).await?.collect().await?;
            rows(&batches)
        })
    }

    /// Ends the session: its writer thread stops and lets the database go.
    pub fn close(self) {
        self.session.close();
    }
}

/// DataFusion over its own in-memory copy of the tables.
pub struct InMemory {
    rt: tokio::runtime::Runtime,
    ctx: SessionContext,
}

impl std::fmt::Debug for InMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemory").field("session", &self.ctx.session_id()).finish()
    }
}

impl InMemory {
    /// Copies the eight tables of `db` into memory (each split into `threads` partitions, as
    /// the nvpage scans are), in a context with the same settings as [`NvpageSql`]'s.
    pub fn copy_of(db: Arc<Database>, threads: usize) -> Result<Self, BoxError> {
        let rt = runtime(threads)?;
        let ctx = SessionContext::new_with_config(config(threads));
        let session = Session::with_config(db, config(threads))?;
        rt.block_on(async {
            for t in TABLES {
                let df = session.sql(&format!("select * from {t}")).await?;
                let schema = Arc::new(df.schema().as_arrow().clone());
                let batches = df.collect().await?;
                let n = threads.max(1);
                let mut parts: Vec<Vec<RecordBatch>> = vec![Vec::new(); n];
                for (i, b) in batches.into_iter().enumerate() {
                    parts[i % n].push(b);
                }
                ctx.register_table(t, Arc::new(MemTable::try_new(schema, parts)?))?;
            }
            Ok::<_, BoxError>(())
        })?;
        session.close();
        Ok(Self { rt, ctx })
    }

    /// Runs `q`; its rows as text.
    pub fn run(&self, q: Query, sf: f64) -> Result<Vec<Vec<String>>, BoxError> {
        let sql = text(q, sf);
        self.rt.block_on(async {
            // The same parsing of literals as the nvpage session's: exact decimals.
            let mut state = self.ctx.state();
            state.config_mut().options_mut().sql_parser.parse_float_as_decimal = true;
            let plan = state.create_logical_plan(&sql).await?;
            let batches = datafusion::dataframe::DataFrame::new(state, plan).collect().await?;
            rows(&batches)
        })
    }
}

/// Record batches as rows of text, NULL empty.
pub(crate) fn rows(batches: &[RecordBatch]) -> Result<Vec<Vec<String>>, BoxError> {
    let opts = FormatOptions::default().with_null("");
    let mut out = Vec::new();
    for b in batches {
        let fmts = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts))
            .collect::<Result<Vec<_>, _>>()?;
        for i in 0..b.num_rows() {
            out.push(fmts.iter().map(|f| f.value(i).to_string()).collect());
        }
    }
    Ok(out)
}

/// The tables `q`'s SQL names (each once, however often the text reads it).
pub fn tables_read(q: Query, sf: f64) -> Vec<&'static str> {
    let sql = text(q, sf);
    let words: Vec<&str> = sql.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).collect();
    TABLES.into_iter().filter(|t| words.contains(t)).collect()
}

/// The detail's SQL section: for each medium and pool size of the warm runs, per query, the
/// hand-written plan on SE2, the SQL on SE2, DataFusion over in-memory tables, what the storage
/// costs the SQL engine (SQL on SE2 minus DataFusion in memory) and the floor under it (one pass
/// over the heaps the query reads at the measured bandwidth); then the geometric means.
pub fn write_section(
    report: &super::Report,
    lines: &[super::output::Line],
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    use super::output::{medium_label, pool_label};
    use super::summary::geo_mean;
    let c = &report.config.options;
    let bytes = match report.config.loads.iter().find(|l| !l.layer.starts_with("postgres")) {
        Some(l) => &l.table_bytes,
        None => return Ok(()),
    };
    let rate = report.config.mem_read_gb_per_s * 1e9 * c.threads as f64;
    let in_memory: Vec<&super::output::Line> =
        lines.iter().filter(|l| l.layer == super::runner::IN_MEMORY).collect();
    let mut groups: Vec<(String, f64)> = Vec::new();
    for l in lines.iter().filter(|l| !l.cold && l.layer.ends_with("+sql")) {
        if !groups.contains(&(l.medium.clone(), l.pool_fraction)) {
            groups.push((l.medium.clone(), l.pool_fraction));
        }
    }
    writeln!(
        out,
        "\nThe queries' SQL (nvpage-sql, warm), beside the hand-written plans and DataFusion over \
         in-memory copies of the tables (warm, one run set): storage cost = SQL on SE2 minus \
         DataFusion in memory; floor = one pass over the heaps the query reads on {} threads at \
         {:.1} GB/s per thread; times are medians in ms.",
        c.threads, report.config.mem_read_gb_per_s
    )?;
    for (medium, fraction) in groups {
        let at = |layer: &str, q: &str| {
            lines
                .iter()
                .find(|l| {
                    !l.cold
                        && l.medium == medium
                        && l.pool_fraction == fraction
                        && l.layer == layer
                        && l.query == q
                })
                .map(|l| l.median_ms)
        };
        let df = |q: &str| in_memory.iter().find(|l| l.query == q).map(|l| l.median_ms);
        let mut t = comfy_table::Table::new();
        t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
        t.set_header(vec![
            "query",
            "plan se2",
            "SQL pread",
            "SQL se2",
            "DataFusion",
            "storage cost",
            "floor",
            "cost / floor",
        ]);
        let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
        let (mut se2_vs_df, mut se2_vs_pread) = (Vec::new(), Vec::new());
        for &q in &c.queries {
            let name = q.name();
            let (sql_se2, sql_pread, mem) =
                (at("se2+sql", &name), at("pread+sql", &name), df(&name));
            let floor: u64 = tables_read(q, c.sf).iter().filter_map(|t| bytes.get(*t)).sum();
            let floor_ms = floor as f64 / rate * 1e3;
            let cost = sql_se2.zip(mem).map(|(a, b)| a - b);
            if let Some((a, b)) = sql_se2.zip(mem) {
                se2_vs_df.push(a / b);
            }
            if let Some((a, b)) = sql_se2.zip(sql_pread) {
                se2_vs_pread.push(a / b);
            }
            t.add_row(vec![
                name.clone(),
                ms(at("se2", &name)),
                ms(sql_pread),
                ms(sql_se2),
                ms(mem),
                ms(cost),
                format!("{floor_ms:.1}"),
                cost.map_or("-".into(), |c| format!("{:.2}", c / floor_ms)),
            ]);
        }
        writeln!(out, "\n{}, pool holds {}:", medium_label(&medium), pool_label(fraction))?;
        writeln!(out, "{t}")?;
        let geo = |v: &[f64]| geo_mean(v).map_or("-".to_string(), |g| format!("{g:.2}×"));
        writeln!(
            out,
            "Geometric means: SQL on SE2 / DataFusion in memory {}; SQL on SE2 / SQL on pread {}.",
            geo(&se2_vs_df),
            geo(&se2_vs_pread)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_reads_the_tables_its_text_names_each_once() {
        assert_eq!(tables_read(Query::Q06, 1.0), ["lineitem"]);
        assert_eq!(
            tables_read(Query::Q02, 1.0),
            ["region", "nation", "supplier", "part", "partsupp"]
        );
        // Column names share the tables' prefixes but are not tables.
        assert_eq!(tables_read(Query::Q14, 1.0), ["part", "lineitem"]);
    }
}
