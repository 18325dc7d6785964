//! What the SQL scenario tests share: a session over a fresh database on a chosen layer, and
//! results as plain text rows to compare.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use nvpage::{Database, Layer};
use nvpage_sql::Session;

/// A multi-threaded runtime of two workers, as a server or the CLI runs queries on.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// A session over a new database of 4 KiB pages (tables span many pages) on `layer`.
pub fn session(dir: &std::path::Path, layer: Layer) -> Session {
    let db = Database::builder().layer(layer).page_size(4096).open(dir.join("db")).unwrap();
    Session::new(Arc::new(db)).unwrap()
}

/// Runs `sql` (one statement) and collects its rows as text, NULL as `NULL`.
pub async fn rows(s: &Session, sql: &str) -> Vec<Vec<String>> {
    match try_rows(s, sql).await {
        Ok(r) => r,
        Err(e) => panic!("{sql}: {e}"),
    }
}

/// Runs `sql` (one statement); its rows as text, or its error's text.
pub async fn try_rows(s: &Session, sql: &str) -> Result<Vec<Vec<String>>, String> {
    let df = s.sql(sql).await.map_err(|e| e.to_string())?;
    let batches = df.collect().await.map_err(|e| e.to_string())?;
    Ok(text(&batches))
}

/// Record batches as rows of text.
pub fn text(batches: &[RecordBatch]) -> Vec<Vec<String>> {
    let opts = FormatOptions::default().with_null("NULL");
    let mut out = Vec::new();
    for b in batches {
        let fmts: Vec<_> = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).unwrap())
            .collect();
        for i in 0..b.num_rows() {
            out.push(fmts.iter().map(|f| f.value(i).to_string()).collect());
        }
    }
    out
}

/// Runs each statement of `script` in order, collecting each (panics on an error).
pub async fn run_all(s: &Session, script: &str) {
    for st in Session::parse(script).unwrap() {
        let text = st.to_string();
        let df = s.run(st).await.unwrap_or_else(|e| panic!("{text}: {e}"));
        df.collect().await.unwrap_or_else(|e| panic!("{text}: {e}"));
    }
}
