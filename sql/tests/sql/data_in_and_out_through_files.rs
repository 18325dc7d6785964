//! Goal: data comes in from CSV and Parquet files and goes out to them, as a user of SQL over a
//! store expects: `CREATE EXTERNAL TABLE … STORED AS CSV | PARQUET LOCATION …` reads a file in
//! the session (it is not stored in the database), `CREATE TABLE x AS SELECT * FROM ext` makes a
//! persistent nvpage table of it, and `COPY (query) TO 'f.parquet'` writes a query's rows that
//! read back equal; `SHOW TABLES` lists both kinds.

use nvpage::Layer;

use crate::common::{rows, run_all, runtime, session};

#[test]
fn csv_in_parquet_out_and_back() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("people.csv");
    std::fs::write(
        &csv,
        "id,name,born,score\n1,Ada,1815-12-10,9.5\n2,Alan,1912-06-23,8.25\n3,Grace,1906-12-09,\n",
    )
    .unwrap();
    let parquet = dir.path().join("out.parquet");
    let s = session(dir.path(), Layer::best_compiled());
    rt.block_on(async {
        run_all(
            &s,
            &format!(
                "CREATE EXTERNAL TABLE ext (id BIGINT NOT NULL, name VARCHAR, born DATE, score DECIMAL(5, 2))
                   STORED AS CSV LOCATION '{}' OPTIONS ('format.has_header' 'true');
                 CREATE TABLE people AS SELECT * FROM ext;",
                csv.display()
            ),
        )
        .await;
        let want = [
            ["1", "Ada", "1815-12-10", "9.50"],
            ["2", "Alan", "1912-06-23", "8.25"],
            ["3", "Grace", "1906-12-09", "NULL"],
        ];
        assert_eq!(rows(&s, "SELECT * FROM people ORDER BY id").await, want);
        let tables = rows(&s, "SHOW TABLES").await;
        let names: Vec<&str> = tables.iter().filter(|r| r[1] == "public").map(|r| r[2].as_str()).collect();
        assert!(names.contains(&"people") && names.contains(&"ext"), "{tables:?}");
        run_all(
            &s,
            &format!(
                "COPY (SELECT * FROM people WHERE score IS NOT NULL ORDER BY id) TO '{}';
                 CREATE EXTERNAL TABLE back STORED AS PARQUET LOCATION '{}';",
                parquet.display(),
                parquet.display()
            ),
        )
        .await;
        assert_eq!(rows(&s, "SELECT * FROM back ORDER BY id").await, want[..2]);
    });
    // The nvpage table is in the database; the external ones were the session's only.
    let db = s.database().clone();
    s.close();
    let again = nvpage_sql::Session::new(db).unwrap();
    rt.block_on(async {
        assert_eq!(rows(&again, "SELECT count(*) FROM people").await, [["3"]]);
        assert!(crate::common::try_rows(&again, "SELECT * FROM ext").await.is_err());
    });
}
