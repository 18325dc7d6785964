//! Goal: SQL reads a clustered table (rows in its primary key's B+tree) as it reads a heap
//! table: every row once, filters and limits pushed into the scan, the same answers as a heap
//! table of the same rows; `INSERT` adds rows to it; `UPDATE` and `DELETE` change its rows by
//! key.

use nvpage::{Column, ColumnType, Layer, ReadOps, Schema, Storage, Value};

use crate::common::{rows, run_all, runtime, session, try_rows};

#[test]
fn a_clustered_table_answers_as_a_heap_table_does() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    {
        let schema = || {
            Schema::new(vec![
                Column::new("k", ColumnType::I64),
                Column::new("grp", ColumnType::I32),
                Column::new("note", ColumnType::VarChar { max_len: 40 }),
            ])
            .unwrap()
        };
        let mut w = s.database().begin_write().unwrap();
        let keyed = schema().with_primary_key(&["k"]).unwrap();
        let c = w.create_table_with("c", keyed, Storage::Clustered).unwrap();
        let h = w.create_table("h", schema()).unwrap();
        // Keys out of order, so the leaves split in the middle as well as at the end.
        for i in 0..20_000i64 {
            let k = (i * 7_919) % 20_000;
            let note = format!("note {}", k % 97);
            let values = [Value::I64(k), Value::I32((k % 13) as i32), Value::Str(&note)];
            w.insert(&c, &values).unwrap();
            w.insert(&h, &values).unwrap();
        }
        w.commit().unwrap();
    }
    rt.block_on(async {
        for q in [
            "SELECT count(*), sum(k), min(note), max(grp) FROM {t}",
            "SELECT grp, count(*), sum(k) FROM {t} WHERE k BETWEEN 100 AND 5000 GROUP BY grp ORDER BY grp",
            "SELECT k, note FROM {t} WHERE note LIKE 'note 9%' AND grp = 3 ORDER BY k LIMIT 5",
            "SELECT count(*) FROM {t} WHERE k IN (1, 2, 3, 19999, 20000)",
        ] {
            let (c, h) = (q.replace("{t}", "c"), q.replace("{t}", "h"));
            assert_eq!(rows(&s, &c).await, rows(&s, &h).await, "{q}");
        }
        assert_eq!(rows(&s, "SELECT count(*) FROM c").await, [["20000"]]);
        run_all(&s, "INSERT INTO c VALUES (20000, 1, 'new'), (-1, 2, 'first')").await;
        assert_eq!(rows(&s, "SELECT k FROM c ORDER BY k LIMIT 1").await, [["-1"]]);
        let e = try_rows(&s, "INSERT INTO c VALUES (5, 1, 'again')").await.unwrap_err();
        assert!(e.contains("c_pkey"), "{e}");
        assert_eq!(rows(&s, "UPDATE c SET note = 'x' WHERE k = 5").await, [["1"]]);
        assert_eq!(rows(&s, "DELETE FROM c WHERE k < 10 AND k <> 5").await, [["10"]]);
        assert_eq!(rows(&s, "SELECT k, note FROM c WHERE k < 10").await, [["5", "x"]]);
    });
    let rx = s.database().begin_read().unwrap();
    assert_eq!(rx.row_count(&rx.table("c").unwrap()).unwrap(), 19_992);
}

/// `CREATE INDEX` and `CREATE UNIQUE INDEX` on a clustered table index its rows by primary key:
/// made over the rows it holds, kept by `INSERT`, `UPDATE` (of an indexed column, and of a
/// unique one, checked once every row has moved) and `DELETE`, a duplicate refused by name, and
/// every query answers as a heap table's with the same indexes does. The planner reads a
/// clustered table's key ranges only, never these indexes (`EXPLAIN` names none).
#[test]
fn indexes_beside_a_clustered_tables_key_are_kept_and_answer_right() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(
            &s,
            "CREATE TABLE c (k BIGINT PRIMARY KEY, code BIGINT, grp INT, note VARCHAR(40))
                 WITH (storage = 'clustered');
             CREATE TABLE h (k BIGINT PRIMARY KEY, code BIGINT, grp INT, note VARCHAR(40));",
        )
        .await;
    });
    {
        let mut w = s.database().begin_write().unwrap();
        let (c, h) = (w.table("c").unwrap(), w.table("h").unwrap());
        for i in 0..5_000i64 {
            let k = (i * 7_919) % 5_000;
            let note = format!("note {}", k % 97);
            let code = if k % 11 == 0 { Value::Null } else { Value::I64(3 * k) };
            let values = [Value::I64(k), code, Value::I32((k % 13) as i32), Value::Str(&note)];
            w.insert(&c, &values).unwrap();
            w.insert(&h, &values).unwrap();
        }
        w.commit().unwrap();
    }
    rt.block_on(async {
        for t in ["c", "h"] {
            run_all(
                &s,
                &format!(
                    "CREATE UNIQUE INDEX {t}_code ON {t} (code); CREATE INDEX {t}_grp ON {t} (grp, note);"
                ),
            )
            .await;
        }
        let same = |q: &'static str| {
            let s = &s;
            async move {
                let (c, h) = (q.replace("{t}", "c"), q.replace("{t}", "h"));
                assert_eq!(rows(s, &c).await, rows(s, &h).await, "{q}");
            }
        };
        let queries = [
            "SELECT k, note FROM {t} WHERE code = 42",
            "SELECT count(*), sum(k) FROM {t} WHERE code BETWEEN 300 AND 330",
            "SELECT k FROM {t} WHERE grp = 3 AND note = 'note 5' ORDER BY k",
            "SELECT count(*) FROM {t} WHERE code IS NULL",
        ];
        for q in queries {
            same(q).await;
        }
        let plan = rows(&s, "EXPLAIN SELECT k FROM c WHERE code = 42").await;
        let plan = format!("{plan:?}");
        assert!(!plan.contains("c_code"), "{plan}");
        let e = try_rows(&s, "INSERT INTO c VALUES (9000, 42, 1, 'dup')").await.unwrap_err();
        assert!(e.contains("c_code"), "{e}");
        for t in ["c", "h"] {
            assert_eq!(rows(&s, &format!("UPDATE {t} SET code = code + 3")).await, [["5000"]]);
            run_all(&s, &format!("UPDATE {t} SET grp = grp + 1, note = 'moved' WHERE k < 100")).await;
            run_all(&s, &format!("UPDATE {t} SET k = k + 10000 WHERE grp = 4")).await;
            run_all(&s, &format!("DELETE FROM {t} WHERE code BETWEEN 1000 AND 2000")).await;
            run_all(&s, &format!("INSERT INTO {t} VALUES (-1, 43, 1, 'new')")).await;
        }
        for q in queries {
            same(q).await;
        }
        same("SELECT k, code, grp, note FROM {t} ORDER BY k").await;
    });
    let report = s.database().check().unwrap();
    assert!(report.damage.is_empty(), "{:?}", report.damage);
    let rx = s.database().begin_read().unwrap();
    let (c, code) = (rx.table("c").unwrap(), rx.index("c_code").unwrap());
    assert_eq!(rx.index_len(&code).unwrap(), rx.row_count(&c).unwrap());
    let g = rx.get_by(&code, &[Value::I64(43)]).unwrap().expect("the row with code 43");
    assert_eq!(g.row().unwrap().get_named::<nvpage::kind::I64>("k").unwrap(), -1);
}
