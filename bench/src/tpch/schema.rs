//! The eight TPC-H tables as nvpage schemas, with the specification's column types (clause 1.4):
//! identifiers as `I64` (`I32` for the tiny nation and region keys), `DECIMAL` as exact
//! `Decimal { scale: 2 }`, dates as `Date`, `CHAR(n)` as `Char { len: n }` and `VARCHAR(n)` as
//! `VarChar { max_len: n }`. `L_QUANTITY` is a decimal in the specification and here, although
//! the generator only makes whole numbers.

use nvpage::{Column, ColumnType, Schema};

const ID: ColumnType = ColumnType::I64;
const KEY32: ColumnType = ColumnType::I32;
const INT: ColumnType = ColumnType::I32;
const DEC: ColumnType = ColumnType::Decimal { scale: 2 };
const DATE: ColumnType = ColumnType::Date;

/// The table names, in load order (small tables first, so a failure shows early).
pub const TABLES: [&str; 8] =
    ["region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"];

/// Column names and types of table `name` (one of [`TABLES`]).
pub fn columns(name: &str) -> &'static [(&'static str, ColumnType)] {
    match name {
        "region" => &[
            ("r_regionkey", KEY32),
            ("r_name", ColumnType::Char { len: 25 }),
            ("r_comment", ColumnType::VarChar { max_len: 152 }),
        ],
        "nation" => &[
            ("n_nationkey", KEY32),
            ("n_name", ColumnType::Char { len: 25 }),
            ("n_regionkey", KEY32),
            ("n_comment", ColumnType::VarChar { max_len: 152 }),
        ],
        "supplier" => &[
            ("s_suppkey", ID),
            ("s_name", ColumnType::Char { len: 25 }),
            ("s_address", ColumnType::VarChar { max_len: 40 }),
            ("s_nationkey", KEY32),
            ("s_phone", ColumnType::Char { len: 15 }),
            ("s_acctbal", DEC),
            ("s_comment", ColumnType::VarChar { max_len: 101 }),
        ],
        "customer" => &[
            ("c_custkey", ID),
            ("c_name", ColumnType::VarChar { max_len: 25 }),
            ("c_address", ColumnType::VarChar { max_len: 40 }),
            ("c_nationkey", KEY32),
            ("c_phone", ColumnType::Char { len: 15 }),
            ("c_acctbal", DEC),
            ("c_mktsegment", ColumnType::Char { len: 10 }),
            ("c_comment", ColumnType::VarChar { max_len: 117 }),
        ],
        "part" => &[
            ("p_partkey", ID),
            ("p_name", ColumnType::VarChar { max_len: 55 }),
            ("p_mfgr", ColumnType::Char { len: 25 }),
            ("p_brand", ColumnType::Char { len: 10 }),
            ("p_type", ColumnType::VarChar { max_len: 25 }),
            ("p_size", INT),
            ("p_container", ColumnType::Char { len: 10 }),
            ("p_retailprice", DEC),
            ("p_comment", ColumnType::VarChar { max_len: 23 }),
        ],
        "partsupp" => &[
            ("ps_partkey", ID),
            ("ps_suppkey", ID),
            ("ps_availqty", INT),
            ("ps_supplycost", DEC),
            ("ps_comment", ColumnType::VarChar { max_len: 199 }),
        ],
        "orders" => &[
            ("o_orderkey", ID),
            ("o_custkey", ID),
            ("o_orderstatus", ColumnType::Char { len: 1 }),
            ("o_totalprice", DEC),
            ("o_orderdate", DATE),
            ("o_orderpriority", ColumnType::Char { len: 15 }),
            ("o_clerk", ColumnType::Char { len: 15 }),
            ("o_shippriority", INT),
            ("o_comment", ColumnType::VarChar { max_len: 79 }),
        ],
        "lineitem" => &[
            ("l_orderkey", ID),
            ("l_partkey", ID),
            ("l_suppkey", ID),
            ("l_linenumber", INT),
            ("l_quantity", DEC),
            ("l_extendedprice", DEC),
            ("l_discount", DEC),
            ("l_tax", DEC),
            ("l_returnflag", ColumnType::Char { len: 1 }),
            ("l_linestatus", ColumnType::Char { len: 1 }),
            ("l_shipdate", DATE),
            ("l_commitdate", DATE),
            ("l_receiptdate", DATE),
            ("l_shipinstruct", ColumnType::Char { len: 25 }),
            ("l_shipmode", ColumnType::Char { len: 10 }),
            ("l_comment", ColumnType::VarChar { max_len: 44 }),
        ],
        _ => &[],
    }
}

/// The primary key of table `name` (clause 1.4.2.2), which the loader indexes (a unique index
/// named [`primary_key_index`]) in nvpage and PostgreSQL alike.
pub fn primary_key(name: &str) -> &'static [&'static str] {
    match name {
        "region" => &["r_regionkey"],
        "nation" => &["n_nationkey"],
        "supplier" => &["s_suppkey"],
        "customer" => &["c_custkey"],
        "part" => &["p_partkey"],
        "partsupp" => &["ps_partkey", "ps_suppkey"],
        "orders" => &["o_orderkey"],
        "lineitem" => &["l_orderkey", "l_linenumber"],
        _ => &[],
    }
}

/// The name of table `name`'s primary-key index.
pub fn primary_key_index(name: &str) -> String {
    format!("{name}_pkey")
}

/// The nvpage schema of table `name` (one of [`TABLES`]).
pub fn schema(name: &str) -> nvpage::Result<Schema> {
    Schema::new(columns(name).iter().map(|&(n, ty)| Column::new(n, ty)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_has_a_valid_schema() {
        for t in TABLES {
            let s = schema(t).unwrap();
            for c in primary_key(t) {
                assert!(s.index_of(c).is_ok(), "{t}: key column {c}");
            }
            assert!(!primary_key(t).is_empty(), "{t}");
            assert!(s.columns().len() >= 3, "{t}");
        }
        assert!(schema("nope").is_err());
    }
}
