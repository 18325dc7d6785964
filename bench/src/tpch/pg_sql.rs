//! The specification's SQL for PostgreSQL: the schema (clause 1.4) and the implemented queries
//! with their validation parameters (clause 2.4), as `--with-postgres` runs them.

use super::queries::Query;

/// `CREATE TABLE` statements for the eight tables.
pub const SCHEMA: &str = "
CREATE TABLE region (r_regionkey integer NOT NULL, r_name char(25) NOT NULL,
  r_comment varchar(152) NOT NULL);
CREATE TABLE nation (n_nationkey integer NOT NULL, n_name char(25) NOT NULL,
  n_regionkey integer NOT NULL, n_comment varchar(152) NOT NULL);
CREATE TABLE supplier (s_suppkey bigint NOT NULL, s_name char(25) NOT NULL,
  s_address varchar(40) NOT NULL, s_nationkey integer NOT NULL, s_phone char(15) NOT NULL,
  s_acctbal numeric(15,2) NOT NULL, s_comment varchar(101) NOT NULL);
CREATE TABLE customer (c_custkey bigint NOT NULL, c_name varchar(25) NOT NULL,
  c_address varchar(40) NOT NULL, c_nationkey integer NOT NULL, c_phone char(15) NOT NULL,
  c_acctbal numeric(15,2) NOT NULL, c_mktsegment char(10) NOT NULL,
  c_comment varchar(117) NOT NULL);
CREATE TABLE part (p_partkey bigint NOT NULL, p_name varchar(55) NOT NULL,
  p_mfgr char(25) NOT NULL, p_brand char(10) NOT NULL, p_type varchar(25) NOT NULL,
  p_size integer NOT NULL, p_container char(10) NOT NULL, p_retailprice numeric(15,2) NOT NULL,
  p_comment varchar(23) NOT NULL);
CREATE TABLE partsupp (ps_partkey bigint NOT NULL, ps_suppkey bigint NOT NULL,
  ps_availqty integer NOT NULL, ps_supplycost numeric(15,2) NOT NULL,
  ps_comment varchar(199) NOT NULL);
CREATE TABLE orders (o_orderkey bigint NOT NULL, o_custkey bigint NOT NULL,
  o_orderstatus char(1) NOT NULL, o_totalprice numeric(15,2) NOT NULL, o_orderdate date NOT NULL,
  o_orderpriority char(15) NOT NULL, o_clerk char(15) NOT NULL, o_shippriority integer NOT NULL,
  o_comment varchar(79) NOT NULL);
CREATE TABLE lineitem (l_orderkey bigint NOT NULL, l_partkey bigint NOT NULL,
  l_suppkey bigint NOT NULL, l_linenumber integer NOT NULL, l_quantity numeric(15,2) NOT NULL,
  l_extendedprice numeric(15,2) NOT NULL, l_discount numeric(15,2) NOT NULL,
  l_tax numeric(15,2) NOT NULL, l_returnflag char(1) NOT NULL, l_linestatus char(1) NOT NULL,
  l_shipdate date NOT NULL, l_commitdate date NOT NULL, l_receiptdate date NOT NULL,
  l_shipinstruct char(25) NOT NULL, l_shipmode char(10) NOT NULL, l_comment varchar(44) NOT NULL);
";

/// Query `q`'s SQL, with the same parameters and the same tie-breaking as our plans.
pub fn query(q: Query) -> &'static str {
    match q {
        Query::Q01 => {
            "select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty,
  sum(l_extendedprice) as sum_base_price, sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
  sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, avg(l_quantity) as avg_qty,
  avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc, count(*) as count_order
from lineitem where l_shipdate <= date '1998-12-01' - interval '90' day
group by l_returnflag, l_linestatus order by l_returnflag, l_linestatus"
        }
        Query::Q03 => {
            "select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate,
  o_shippriority
from customer, orders, lineitem
where c_mktsegment = 'BUILDING' and c_custkey = o_custkey and l_orderkey = o_orderkey
  and o_orderdate < date '1995-03-15' and l_shipdate > date '1995-03-15'
group by l_orderkey, o_orderdate, o_shippriority
order by revenue desc, o_orderdate, l_orderkey limit 10"
        }
        Query::Q05 => {
            "select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue
from customer, orders, lineitem, supplier, nation, region
where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey
  and c_nationkey = s_nationkey and s_nationkey = n_nationkey and n_regionkey = r_regionkey
  and r_name = 'ASIA' and o_orderdate >= date '1994-01-01'
  and o_orderdate < date '1994-01-01' + interval '1' year
group by n_name order by revenue desc, n_name"
        }
        Query::Q06 => {
            "select sum(l_extendedprice * l_discount) as revenue from lineitem
where l_shipdate >= date '1994-01-01' and l_shipdate < date '1994-01-01' + interval '1' year
  and l_discount between 0.06 - 0.01 and 0.06 + 0.01 and l_quantity < 24"
        }
        Query::Q10 => {
            "select c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) as revenue, c_acctbal,
  n_name, c_address, c_phone, c_comment
from customer, orders, lineitem, nation
where c_custkey = o_custkey and l_orderkey = o_orderkey and o_orderdate >= date '1993-10-01'
  and o_orderdate < date '1993-10-01' + interval '3' month and l_returnflag = 'R'
  and c_nationkey = n_nationkey
group by c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
order by revenue desc, c_custkey limit 20"
        }
        Query::Q12 => {
            "select l_shipmode,
  sum(case when o_orderpriority = '1-URGENT' or o_orderpriority = '2-HIGH' then 1 else 0 end)
    as high_line_count,
  sum(case when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH' then 1 else 0 end)
    as low_line_count
from orders, lineitem
where o_orderkey = l_orderkey and l_shipmode in ('MAIL', 'SHIP') and l_commitdate < l_receiptdate
  and l_shipdate < l_commitdate and l_receiptdate >= date '1994-01-01'
  and l_receiptdate < date '1994-01-01' + interval '1' year
group by l_shipmode order by l_shipmode"
        }
        Query::Q14 => {
            "select 100.00 * sum(case when p_type like 'PROMO%' then l_extendedprice * (1 - l_discount)
  else 0 end) / sum(l_extendedprice * (1 - l_discount)) as promo_revenue
from lineitem, part
where l_partkey = p_partkey and l_shipdate >= date '1995-09-01'
  and l_shipdate < date '1995-09-01' + interval '1' month"
        }
        Query::Q19 => {
            "select sum(l_extendedprice * (1 - l_discount)) as revenue from lineitem, part
where (p_partkey = l_partkey and p_brand = 'Brand#12'
    and p_container in ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG') and l_quantity >= 1
    and l_quantity <= 1 + 10 and p_size between 1 and 5 and l_shipmode in ('AIR', 'AIR REG')
    and l_shipinstruct = 'DELIVER IN PERSON')
  or (p_partkey = l_partkey and p_brand = 'Brand#23'
    and p_container in ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK') and l_quantity >= 10
    and l_quantity <= 10 + 10 and p_size between 1 and 10 and l_shipmode in ('AIR', 'AIR REG')
    and l_shipinstruct = 'DELIVER IN PERSON')
  or (p_partkey = l_partkey and p_brand = 'Brand#34'
    and p_container in ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG') and l_quantity >= 20
    and l_quantity <= 20 + 10 and p_size between 1 and 15 and l_shipmode in ('AIR', 'AIR REG')
    and l_shipinstruct = 'DELIVER IN PERSON')"
        }
    }
}
