//! Loading: the `tpchgen` generator's rows (the same rows as the reference `dbgen`) inserted into
//! nvpage tables with exact types, in write transactions of [`BATCH_ROWS`] rows; then each
//! table's primary-key index, built from the loaded rows (a sorted bottom-up build), as
//! PostgreSQL's primary keys are added after its `COPY`. Asked for, lineitem and orders are
//! clustered tables instead ([`CLUSTERED`]): their rows go into their primary keys' trees, in
//! the key order the generator makes them in.
//!
//! Pages a transaction allocates need no before-images (DESIGN.md rule 1 counts only pages below
//! the page count at its start), so a batch costs the log little more than its catalog and header
//! pages; each commit forces the batch's pages in place (rule 2).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use nvpage::{Database, Date, Decimal, Storage, Table, Value, WriteTxn};
use tpchgen::dates::TPCHDate;
use tpchgen::decimal::TPCHDecimal;
use tpchgen::generators::{
    CustomerGenerator, LineItem, LineItemGenerator, NationGenerator, Order, OrderGenerator,
    PartGenerator, PartSuppGenerator, RegionGenerator, SupplierGenerator,
};

use super::schema;
use crate::cputime::CpuTimes;

/// Rows per write transaction.
pub const BATCH_ROWS: u64 = 100_000;

/// How long one table took to load.
#[derive(Clone, Debug)]
pub struct TableLoad {
    /// The table.
    pub table: &'static str,
    /// Rows inserted.
    pub rows: u64,
    /// Wall time, generation and the primary-key index's build included.
    pub wall: Duration,
    /// CPU time of the process over the load.
    pub cpu: CpuTimes,
}

/// An exact decimal from the generator's cents.
pub fn dec(d: TPCHDecimal) -> Decimal {
    Decimal::new(d.0, 2)
}

/// A date from the generator's.
pub fn date(d: TPCHDate) -> Date {
    Date(d.to_unix_epoch())
}

/// The rows the generator makes at scale factor `sf` in all eight tables, exactly: a load bar's
/// length. Lineitem's count is drawn at random (one to seven lines per order), so it is drawn
/// here the same way, from the generator's own stream of line counts, one value per order.
pub fn row_count(sf: f64) -> u64 {
    let orders = OrderGenerator::calculate_row_count(sf, 1, 1);
    let mut line_counts = OrderGenerator::create_line_count_random();
    let mut lineitems = 0u64;
    for _ in 0..orders {
        lineitems += line_counts.next_value() as u64;
        line_counts.row_finished();
    }
    let parts = PartGenerator::calculate_row_count(sf, 1, 1) as u64;
    // Region's 5 rows and nation's 25 are fixed; partsupp has four rows per part.
    30 + SupplierGenerator::calculate_row_count(sf, 1, 1) as u64
        + CustomerGenerator::calculate_row_count(sf, 1, 1) as u64
        + parts
        + 4 * parts
        + orders as u64
        + lineitems
}

/// The tables `load_all` makes clustered when asked: the two largest, whose keys the
/// generator makes in ascending order.
pub const CLUSTERED: [&str; 2] = ["lineitem", "orders"];

/// Inserts rows of one table, committing every [`BATCH_ROWS`].
struct Sink<'d> {
    db: &'d Database,
    tx: Option<WriteTxn<'d>>,
    table: Table,
    rows: u64,
    progress: &'d ProgressBar,
}

impl<'d> Sink<'d> {
    fn new(
        db: &'d Database,
        name: &str,
        clustered: bool,
        progress: &'d ProgressBar,
    ) -> nvpage::Result<Self> {
        let mut tx = db.begin_write()?;
        let table = if clustered {
            let schema = schema::schema(name)?.with_primary_key(schema::primary_key(name))?;
            tx.create_table_with(name, schema, Storage::Clustered)?
        } else {
            tx.create_table(name, schema::schema(name)?)?
        };
        Ok(Self { db, tx: Some(tx), table, rows: 0, progress })
    }

    fn insert(&mut self, values: &[Value<'_>]) -> nvpage::Result<()> {
        let tx = self.tx.as_mut().expect("open until finish");
        tx.insert(&self.table, values)?;
        self.rows += 1;
        if self.rows.is_multiple_of(BATCH_ROWS) {
            self.tx.take().expect("open until finish").commit()?;
            self.tx = Some(self.db.begin_write()?);
        }
        if self.rows.is_multiple_of(4096) {
            self.progress.inc(4096);
        }
        Ok(())
    }

    /// Commits the last rows, then builds the table's primary-key index (sorted, bottom up) in
    /// a transaction of its own: unique, except where the generator repeats a key — partsupp's
    /// supplier formula (clause 4.2.3) repeats pairs when there are very few suppliers (below
    /// SF 0.01) — where the same index is built without the constraint (a unique violation
    /// leaves the transaction usable).
    fn finish(mut self) -> nvpage::Result<u64> {
        self.tx.take().expect("open until finish").commit()?;
        if self.table.storage() == Storage::Clustered {
            // Its primary key is the tree its rows went into.
            self.progress.inc(self.rows % 4096);
            return Ok(self.rows);
        }
        let mut tx = self.db.begin_write()?;
        let name = self.table.name();
        let (index, key) = (schema::primary_key_index(name), schema::primary_key(name));
        match tx.create_unique_index(&index, &self.table, key) {
            Err(nvpage::Error::UniqueViolation { .. }) => {
                tx.create_index(&index, &self.table, key)?;
            }
            r => {
                r?;
            }
        }
        tx.commit()?;
        self.progress.inc(self.rows % 4096);
        Ok(self.rows)
    }
}

/// Writes `v` into `buf` (cleared first) and lends it.
fn text(buf: &mut String, v: impl std::fmt::Display) -> &str {
    buf.clear();
    write!(buf, "{v}").expect("writing to a String");
    buf
}

/// An `orders` row's values from the generator's order; `clerk` lends the clerk's name.
pub fn order_values<'a>(o: &'a Order<'_>, clerk: &'a mut String) -> [Value<'a>; 9] {
    [
        Value::I64(o.o_orderkey),
        Value::I64(o.o_custkey),
        Value::Str(o.o_orderstatus.as_str()),
        Value::Decimal(dec(o.o_totalprice)),
        Value::Date(date(o.o_orderdate)),
        Value::Str(o.o_orderpriority),
        Value::Str(text(clerk, o.o_clerk)),
        Value::I32(o.o_shippriority),
        Value::Str(o.o_comment),
    ]
}

/// A `lineitem` row's values from the generator's lineitem.
pub fn lineitem_values<'a>(l: &'a LineItem<'_>) -> [Value<'a>; 16] {
    [
        Value::I64(l.l_orderkey),
        Value::I64(l.l_partkey),
        Value::I64(l.l_suppkey),
        Value::I32(l.l_linenumber),
        Value::Decimal(Decimal::new(l.l_quantity * 100, 2)),
        Value::Decimal(dec(l.l_extendedprice)),
        Value::Decimal(dec(l.l_discount)),
        Value::Decimal(dec(l.l_tax)),
        Value::Str(l.l_returnflag),
        Value::Str(l.l_linestatus),
        Value::Date(date(l.l_shipdate)),
        Value::Date(date(l.l_commitdate)),
        Value::Date(date(l.l_receiptdate)),
        Value::Str(l.l_shipinstruct),
        Value::Str(l.l_shipmode),
        Value::Str(l.l_comment),
    ]
}

/// Generates and loads all eight tables at scale factor `sf` into the (empty) database; with
/// `clustered`, the tables of [`CLUSTERED`] as clustered tables.
pub fn load_all(
    db: &Database,
    sf: f64,
    clustered: bool,
    progress: &ProgressBar,
) -> nvpage::Result<Vec<TableLoad>> {
    let mut out = Vec::new();
    for name in schema::TABLES {
        let cpu0 = CpuTimes::now().unwrap_or_default();
        let t0 = Instant::now();
        progress.set_message(name);
        let mut sink = Sink::new(db, name, clustered && CLUSTERED.contains(&name), progress)?;
        load_table(&mut sink, name, sf)?;
        let rows = sink.finish()?;
        let cpu = CpuTimes::now().unwrap_or_default().since(cpu0);
        out.push(TableLoad { table: name, rows, wall: t0.elapsed(), cpu });
    }
    Ok(out)
}

fn load_table(sink: &mut Sink<'_>, name: &str, sf: f64) -> nvpage::Result<()> {
    let (mut a, mut b, mut c, mut d) = (String::new(), String::new(), String::new(), String::new());
    match name {
        "region" => {
            for r in RegionGenerator::new(sf, 1, 1).iter() {
                sink.insert(&[
                    Value::I32(r.r_regionkey as i32),
                    Value::Str(r.r_name),
                    Value::Str(r.r_comment),
                ])?;
            }
        }
        "nation" => {
            for n in NationGenerator::new(sf, 1, 1).iter() {
                sink.insert(&[
                    Value::I32(n.n_nationkey as i32),
                    Value::Str(n.n_name),
                    Value::I32(n.n_regionkey as i32),
                    Value::Str(n.n_comment),
                ])?;
            }
        }
        "supplier" => {
            for s in SupplierGenerator::new(sf, 1, 1).iter() {
                sink.insert(&[
                    Value::I64(s.s_suppkey),
                    Value::Str(text(&mut a, s.s_name)),
                    Value::Str(text(&mut b, &s.s_address)),
                    Value::I32(s.s_nationkey as i32),
                    Value::Str(text(&mut c, &s.s_phone)),
                    Value::Decimal(dec(s.s_acctbal)),
                    Value::Str(&s.s_comment),
                ])?;
            }
        }
        "customer" => {
            for r in CustomerGenerator::new(sf, 1, 1).iter() {
                sink.insert(&[
                    Value::I64(r.c_custkey),
                    Value::Str(text(&mut a, r.c_name)),
                    Value::Str(text(&mut b, &r.c_address)),
                    Value::I32(r.c_nationkey as i32),
                    Value::Str(text(&mut c, &r.c_phone)),
                    Value::Decimal(dec(r.c_acctbal)),
                    Value::Str(r.c_mktsegment),
                    Value::Str(r.c_comment),
                ])?;
            }
        }
        "part" => {
            for p in PartGenerator::new(sf, 1, 1).iter() {
                sink.insert(&[
                    Value::I64(p.p_partkey),
                    Value::Str(text(&mut a, &p.p_name)),
                    Value::Str(text(&mut b, p.p_mfgr)),
                    Value::Str(text(&mut c, p.p_brand)),
                    Value::Str(p.p_type),
                    Value::I32(p.p_size),
                    Value::Str(p.p_container),
                    Value::Decimal(dec(p.p_retailprice)),
                    Value::Str(p.p_comment),
                ])?;
            }
        }
        "partsupp" => {
            for p in PartSuppGenerator::new(sf, 1, 1).iter() {
                sink.insert(&[
                    Value::I64(p.ps_partkey),
                    Value::I64(p.ps_suppkey),
                    Value::I32(p.ps_availqty),
                    Value::Decimal(dec(p.ps_supplycost)),
                    Value::Str(p.ps_comment),
                ])?;
            }
        }
        "orders" => {
            for o in OrderGenerator::new(sf, 1, 1).iter() {
                sink.insert(&order_values(&o, &mut d))?;
            }
        }
        "lineitem" => {
            for l in LineItemGenerator::new(sf, 1, 1).iter() {
                sink.insert(&lineitem_values(&l))?;
            }
        }
        other => unreachable!("unknown table {other}"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use nvpage::Layer;

    use super::*;

    #[test]
    fn a_load_bar_ends_exactly_at_its_length() {
        let sf = 0.002;
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder().layer(Layer::compiled()[0]).open(dir.path()).unwrap();
        let bar = ProgressBar::hidden();
        bar.set_length(row_count(sf));
        let loaded: u64 = load_all(&db, sf, false, &bar).unwrap().iter().map(|t| t.rows).sum();
        assert_eq!(bar.position(), loaded);
        assert_eq!(bar.length(), Some(loaded), "the bar's length is not the rows loaded");
    }

    #[test]
    fn the_row_count_is_what_the_generators_make() {
        for sf in [0.001, 0.01, 0.03] {
            let made = RegionGenerator::new(sf, 1, 1).iter().count()
                + NationGenerator::new(sf, 1, 1).iter().count()
                + SupplierGenerator::new(sf, 1, 1).iter().count()
                + CustomerGenerator::new(sf, 1, 1).iter().count()
                + PartGenerator::new(sf, 1, 1).iter().count()
                + PartSuppGenerator::new(sf, 1, 1).iter().count()
                + OrderGenerator::new(sf, 1, 1).iter().count()
                + LineItemGenerator::new(sf, 1, 1).iter().count();
            assert_eq!(row_count(sf), made as u64, "SF {sf}");
        }
    }
}
