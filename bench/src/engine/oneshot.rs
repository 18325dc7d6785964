//! The engine benchmark's nvpage-only parts: a bulk load and recovery time.

use std::time::Instant;

use nvpage::{Database, Decimal, Layer, ReadOps, Value, kind};

use super::Medium;
use super::nvpage_db::{Place, Sizes, check_medium, durability, insert_row, open, schema};
use crate::BoxError;

fn open_checked(
    place: &Place,
    layer: Layer,
    medium: Medium,
    sizes: Sizes,
) -> Result<Database, BoxError> {
    let db = open(place, layer, medium, sizes)?;
    check_medium(&db, medium)?;
    Ok(db)
}

/// One transaction inserting `rows` rows into a new table, and its commit: rows per second, and
/// the database's durability.
pub fn load(
    place: &Place,
    layer: Layer,
    medium: Medium,
    sizes: Sizes,
    rows: usize,
) -> Result<(f64, String), BoxError> {
    let db = open_checked(place, layer, medium, sizes)?;
    let start = Instant::now();
    let mut tx = db.begin_write()?;
    let t = tx.create_table("l", schema()?)?;
    for i in 0..rows {
        insert_row(&mut tx, &t, i as i64)?;
    }
    tx.commit()?;
    Ok((rows as f64 / start.elapsed().as_secs_f64(), durability(&db)))
}

/// Open time of a database whose log holds `mib` MiB of before-images of an unfinished
/// transaction (0: an empty log; otherwise at least `mib`, and about a page's image more),
/// in ms. The transaction rewrites every row of pages already in the file through a pool of a
/// few pages, pass after pass, so their before-images are stolen into the log, and is never
/// ended (the process "crashes": the handle is dropped with the transaction open); the next open
/// rolls it back. Returns the time and the database's durability.
pub fn recovery(
    place: &Place,
    layer: Layer,
    medium: Medium,
    sizes: Sizes,
    mib: u64,
) -> Result<(f64, String), BoxError> {
    let page = sizes.page_bytes;
    let pages = (mib << 20) / (page + 64);
    let rows_per_page = 40;
    let log_bytes = (mib + 8) << 20;
    {
        let db = open_checked(place, layer, medium, Sizes { log_bytes, ..sizes })?;
        let mut tx = db.begin_write()?;
        let t = tx.create_table("r", schema()?)?;
        for i in 0..(pages.max(1) * rows_per_page) as i64 {
            insert_row(&mut tx, &t, i)?;
        }
        tx.commit()?;
    }
    if mib > 0 {
        // Reopen with a pool of a few pages, so changing every page steals (and logs) them.
        let small = Sizes { pool_bytes: 32 * page, log_bytes, ..sizes };
        let db = open_checked(place, layer, medium, small)?;
        let mut tx = db.begin_write()?;
        let t = tx.table("r")?;
        let id = t.col::<kind::I64>("id")?;
        let mut rows = Vec::new();
        for p in tx.scan(&t)? {
            for r in p?.rows() {
                let row = r?;
                rows.push((row.id(), row.get(id)?));
            }
        }
        // Images hold the lines a write-back changes: every row of every page is rewritten,
        // pass after pass (each pass's bytes differ from the last), until the log holds `mib`
        // (checked every page's worth of rows, so it overshoots by about a page's image).
        let target = mib << 20;
        'fill: for pass in 0.. {
            for (n, (rid, i)) in rows.iter_mut().enumerate() {
                let i = *i;
                // One length every pass: after the first, rows change in place.
                let note = format!("{:<28}", format!("changed {i} in pass {pass}"));
                let values =
                    [Value::I64(i), Value::Decimal(Decimal::new(pass, 2)), Value::Str(&note)];
                // A row that grows may move (the first pass): keep where it is now.
                *rid = tx.update(&t, *rid, &values)?;
                if n % rows_per_page as usize == 0 && db.stats().log_bytes >= target {
                    break 'fill;
                }
            }
        }
        // The process dies here: the transaction never commits or aborts.
        std::mem::forget(tx);
    }
    let start = Instant::now();
    let db = open_checked(place, layer, medium, sizes)?;
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    let d = durability(&db);
    drop(db);
    Ok((ms, d))
}
