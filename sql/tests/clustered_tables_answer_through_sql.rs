//! Goal: SQL reads a clustered table (rows in its primary key's B+tree) as it reads a heap
//! table: every row once, filters and limits pushed into the scan, the same answers as a heap
//! table of the same rows; `INSERT` adds rows to it; `UPDATE` and `DELETE` change its rows by
//! key.

mod common;

use common::{rows, run_all, runtime, session, try_rows};
use nvpage::{Column, ColumnType, Layer, ReadOps, Schema, Storage, Value};

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
