//! Goal: a filter pushed into the nvpage scan (evaluated in the page fold, reported `Exact`)
//! keeps exactly the rows DataFusion keeps evaluating it itself (DESIGN S2): random predicates —
//! comparisons with literals of other widths and scales and of two columns, `BETWEEN`, `IN`
//! lists with NULLs,
//! `IS [NOT] NULL`, `LIKE 'prefix%'`, `AND`, `OR`, `NOT` — over columns with NULLs (small
//! integers, booleans, timestamps, and floats with both NaNs, infinities and both zeros among
//! them), answered by the nvpage table and by the same rows in DataFusion's memory table, must
//! agree; and the predicates this module pushes are pushed (the scan says so in `EXPLAIN`).

use std::sync::Arc;

use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use nvpage::Layer;
use proptest::prelude::*;

use crate::common::{rows, run_all, runtime, session, text};

const ROWS: i64 = 400;

fn atom() -> impl Strategy<Value = String> {
    let int = prop_oneof![Just("NULL".to_string()), (-60i64..60).prop_map(|v| v.to_string())];
    let dec = prop_oneof![
        Just("NULL".to_string()),
        (-300i64..300).prop_map(|v| format!("{}.{:02}", v / 100, (v % 100).abs())),
        (-5i64..5).prop_map(|v| v.to_string()),
        (-3000i64..3000).prop_map(|v| format!("{}.{:03}", v / 1000, (v % 1000).abs())),
    ];
    let date = (0i64..60).prop_map(|d| format!("DATE '2020-01-{:02}' + INTERVAL '{d}' DAY", 1));
    let text = prop_oneof![Just("NULL".to_string()), "[a-d]{0,3}".prop_map(|s| format!("'{s}'"))];
    let prefix = "[a-d]{0,2}".prop_map(|s| format!("'{s}%'"));
    let op = prop_oneof![Just("="), Just("<>"), Just("<"), Just("<="), Just(">"), Just(">=")];
    let num_col = prop_oneof![Just("a"), Just("b")];
    let str_col = prop_oneof![Just("s"), Just("c")];
    let any_col = prop_oneof![
        Just("a"),
        Just("b"),
        Just("d"),
        Just("e"),
        Just("s"),
        Just("c"),
        Just("h"),
        Just("f"),
        Just("ts"),
        Just("x"),
    ];
    let small = prop_oneof![Just("NULL".to_string()), (-25i64..25).prop_map(|v| v.to_string())];
    let boolean = prop_oneof![Just("NULL"), Just("true"), Just("false")];
    // Hours after 2020-01-01 and a quarter second: the column holds whole and quarter seconds.
    let stamp = (0i64..52, 0i64..4, any::<bool>()).prop_map(|(h, q, exact)| {
        let frac = if exact { format!("{}", q * 25) } else { format!("{}0001", q * 25) };
        format!("TIMESTAMP '2020-01-{:02} {:02}:00:00.{frac}'", 1 + h / 24, h % 24)
    });
    let float = prop_oneof![
        Just("NULL".to_string()),
        Just("CAST('NaN' AS DOUBLE)".to_string()),
        Just("CAST('-inf' AS DOUBLE)".to_string()),
        Just("-CAST('NaN' AS DOUBLE)".to_string()),
        Just("CAST('-0' AS DOUBLE)".to_string()),
        Just("CAST('0' AS DOUBLE)".to_string()),
        // The session reads `1.5` as a decimal, and compares a float column with a decimal
        // by casting the column (left to DataFusion): floats are written as floats.
        (-80i64..80).prop_map(|v| format!("CAST('{}' AS DOUBLE)", v as f64 / 8.0)),
    ];
    prop_oneof![
        (num_col.clone(), op.clone(), int.clone()).prop_map(|(c, o, v)| format!("{c} {o} {v}")),
        (int.clone(), op.clone(), num_col.clone()).prop_map(|(v, o, c)| format!("{v} {o} {c}")),
        (op.clone(), dec.clone()).prop_map(|(o, v)| format!("d {o} {v}")),
        (op.clone(), date).prop_map(|(o, v)| format!("e {o} {v}")),
        (str_col.clone(), op.clone(), text.clone()).prop_map(|(c, o, v)| format!("{c} {o} {v}")),
        (num_col.clone(), int.clone(), int.clone(), any::<bool>()).prop_map(|(c, l, h, n)| {
            format!("{c} {}BETWEEN {l} AND {h}", if n { "NOT " } else { "" })
        }),
        (num_col, prop::collection::vec(int, 1..4), any::<bool>()).prop_map(|(c, l, n)| {
            format!("{c} {}IN ({})", if n { "NOT " } else { "" }, l.join(", "))
        }),
        (str_col.clone(), prop::collection::vec(text, 1..3), any::<bool>()).prop_map(
            |(c, l, n)| { format!("{c} {}IN ({})", if n { "NOT " } else { "" }, l.join(", ")) }
        ),
        (op.clone(), small.clone()).prop_map(|(o, v)| format!("h {o} {v}")),
        (small.clone(), small.clone(), any::<bool>()).prop_map(|(l, h, n)| {
            format!("h {}BETWEEN {l} AND {h}", if n { "NOT " } else { "" })
        }),
        (prop::collection::vec(small, 1..4), any::<bool>()).prop_map(|(l, n)| {
            format!("h {}IN ({})", if n { "NOT " } else { "" }, l.join(", "))
        }),
        Just("f".to_string()),
        (op.clone(), boolean).prop_map(|(o, v)| format!("f {o} {v}")),
        (op.clone(), stamp).prop_map(|(o, v)| format!("ts {o} {v}")),
        (op.clone(), float.clone()).prop_map(|(o, v)| format!("x {o} {v}")),
        // Two columns: of one type (pushed), or of two (left to DataFusion).
        (
            prop_oneof![Just("d d2"), Just("e e2"), Just("h h"), Just("ts ts"), Just("a b")],
            op.clone()
        )
            .prop_map(|(pair, o)| pair.replace(' ', &format!(" {o} "))),
        (prop::collection::vec(float, 1..4), any::<bool>()).prop_map(|(l, n)| {
            format!("x {}IN ({})", if n { "NOT " } else { "" }, l.join(", "))
        }),
        (any_col, any::<bool>())
            .prop_map(|(c, n)| format!("{c} IS {}NULL", if n { "NOT " } else { "" })),
        (str_col, prefix, any::<bool>())
            .prop_map(|(c, p, n)| format!("{c} {}LIKE {p}", if n { "NOT " } else { "" })),
    ]
}

fn predicate() -> impl Strategy<Value = String> {
    atom().prop_recursive(2, 8, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} AND {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} OR {b})")),
            inner.prop_map(|a| format!("NOT ({a})")),
        ]
    })
}

#[test]
fn pushed_and_unpushed_filters_keep_the_same_rows() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    let mem = SessionContext::new();
    rt.block_on(async {
        run_all(
            &s,
            &format!(
                "CREATE TABLE t (k BIGINT NOT NULL, a INT, b BIGINT, d DECIMAL(10, 2), e DATE,
                   s VARCHAR(8), c CHAR(4), h SMALLINT, f BOOLEAN, ts TIMESTAMP, x DOUBLE,
                   d2 DECIMAL(10, 2), e2 DATE);
                 INSERT INTO t SELECT value,
                   CASE WHEN value % 11 = 0 THEN NULL ELSE CAST(value % 97 - 48 AS INT) END,
                   value % 53 - 26,
                   CASE WHEN value % 13 = 0 THEN NULL
                        ELSE CAST((value * 37) % 600 - 300 AS DECIMAL(10, 2)) / 100 END,
                   CASE WHEN value % 17 = 0 THEN NULL ELSE DATE '2020-01-01' + CAST(value % 60 AS INT) END,
                   CASE WHEN value % 7 = 0 THEN NULL
                        ELSE substr('abcdabcaddcb', CAST(value % 9 + 1 AS INT), CAST(value % 4 AS INT)) END,
                   CASE WHEN value % 5 = 0 THEN NULL
                        ELSE substr('dcbaabcd', CAST(value % 6 + 1 AS INT), CAST(value % 3 + 1 AS INT)) END,
                   CASE WHEN value % 19 = 0 THEN NULL ELSE CAST(value % 41 - 20 AS SMALLINT) END,
                   CASE WHEN value % 23 = 0 THEN NULL ELSE value % 3 = 0 END,
                   CASE WHEN value % 29 = 0 THEN NULL
                        ELSE to_timestamp_micros(1577836800000000 + (value % 50) * 3600000000
                                                 + (value % 4) * 250000) END,
                   CASE value % 31 WHEN 0 THEN NULL WHEN 1 THEN CAST('NaN' AS DOUBLE)
                        WHEN 2 THEN CAST('-0' AS DOUBLE) WHEN 3 THEN CAST('0' AS DOUBLE)
                        WHEN 4 THEN CAST('-inf' AS DOUBLE) WHEN 5 THEN CAST('inf' AS DOUBLE)
                        WHEN 6 THEN -CAST('NaN' AS DOUBLE)
                        ELSE CAST(value % 37 - 18 AS DOUBLE) / 4 END,
                   CASE WHEN value % 41 = 0 THEN NULL
                        ELSE CAST((value * 13) % 600 - 300 AS DECIMAL(10, 2)) / 100 END,
                   CASE WHEN value % 43 = 0 THEN NULL ELSE DATE '2020-01-01' + CAST(value % 47 AS INT) END
                 FROM generate_series(1, {ROWS})"
            ),
        )
        .await;
        // The same rows in DataFusion's memory.
        let df = s.sql("SELECT * FROM t").await.unwrap();
        let schema = Arc::new(df.schema().as_arrow().clone());
        let batches = df.collect().await.unwrap();
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), ROWS as usize);
        mem.register_table("t", Arc::new(MemTable::try_new(schema, vec![batches]).unwrap())).unwrap();
    });
    let config = ProptestConfig { cases: 256, ..ProptestConfig::default() };
    proptest!(config, |(p in predicate())| {
        let sql = format!("SELECT k FROM t WHERE {p} ORDER BY k");
        let (ours, theirs) = rt.block_on(async {
            let ours = s.sql(&sql).await.map_err(|e| e.to_string());
            let ours = match ours {
                Ok(df) => df.collect().await.map(|b| text(&b)).map_err(|e| e.to_string()),
                Err(e) => Err(e),
            };
            let theirs = match mem.sql(&sql).await {
                Ok(df) => df.collect().await.map(|b| text(&b)).map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            (ours, theirs)
        });
        match (&ours, &theirs) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b, "{}", sql),
            // A predicate DataFusion refuses to plan is refused on both sides.
            (Err(_), Err(_)) => {}
            _ => prop_assert!(false, "{}: ours {:?}, DataFusion's {:?}", sql, ours, theirs),
        }
    });
}

#[test]
fn the_predicates_it_evaluates_are_pushed_into_the_scan() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(
            &s,
            "CREATE TABLE t (k BIGINT NOT NULL, d DECIMAL(10, 2), s VARCHAR(8), e DATE,
               h SMALLINT, f BOOLEAN, ts TIMESTAMP, x DOUBLE, e2 DATE)",
        )
        .await;
        for p in [
            "k < 5",
            "d BETWEEN 1.5 AND 3",
            "s LIKE 'ab%' AND e >= DATE '2020-01-01'",
            "k IN (1, 2, NULL) OR s IS NULL",
            "NOT (d > 2.001)",
            "h BETWEEN -3 AND 7 AND f",
            "NOT f OR f IS NULL",
            "ts >= TIMESTAMP '2020-01-02 00:00:00' AND ts < TIMESTAMP '2020-01-02 12:00:00.5'",
            "x > CAST('1.5' AS DOUBLE) OR x IN (CAST('0' AS DOUBLE), CAST('-2.25' AS DOUBLE))",
            "e < e2 AND k > 3",
        ] {
            let plan = rows(&s, &format!("EXPLAIN SELECT k FROM t WHERE {p}")).await;
            let physical = &plan.iter().find(|r| r[0] == "physical_plan").unwrap()[1];
            assert!(physical.contains("filter=pushed"), "{p}:\n{physical}");
            assert!(!physical.contains("FilterExec"), "{p} is evaluated again:\n{physical}");
        }
        // One it cannot evaluate exactly is left to DataFusion.
        let plan = rows(&s, "EXPLAIN SELECT k FROM t WHERE k + 1 < 5").await;
        let physical = &plan.iter().find(|r| r[0] == "physical_plan").unwrap()[1];
        assert!(physical.contains("FilterExec"), "{physical}");
    });
}
