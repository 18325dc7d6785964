//! Goal: the page-at-a-time fold (`ReadOps::par_fold_pages`, a scan that hands the fold whole
//! pages) reads what the row-at-a-time API reads — every committed row once, a write transaction's
//! own changes, NULLs as NULLs — on every layer, with the pool holding all of the table or a few
//! pages of it, with several workers each taking several chunks of pages; and a handle made for
//! another table whose column there is not laid out as this one's is the typed `ColumnMismatch` (a
//! row-at-a-time getter compares only the fixed areas' lengths), a NULL read with `get` `Null`.

use crate::common;

use std::collections::BTreeMap;

use common::{Row, commit_table, insert_row};
use nvpage::{Column, ColumnType, Database, Error, Layer, ReadOps, Schema, kind};

/// Each row's (qty, note length or None), by key, through the page-at-a-time fold.
fn by_pages(
    rx: &impl ReadOps,
    threads: usize,
) -> nvpage::Result<BTreeMap<i64, (i32, Option<usize>)>> {
    let t = rx.table("t")?;
    let (key, qty) = (t.col::<kind::I64>("key")?, t.col::<kind::I32>("qty")?);
    let note = t.col::<kind::Str>("note")?;
    rx.par_fold_pages(
        &t,
        threads,
        BTreeMap::new,
        |acc, page| {
            let (key, qty, note) = (page.col(key)?, page.col(qty)?, page.col(note)?);
            page.fold(acc, |mut acc, r| {
                let k = r.get(key)?;
                // The row's own getters agree with the page's.
                assert_eq!(r.row().get(t.col::<kind::I64>("key")?)?, k);
                let prev = acc.insert(k, (r.get(qty)?, r.get_opt(note)?.map(str::len)));
                assert!(prev.is_none(), "key {k} folded twice");
                Ok(acc)
            })
        },
        |mut a, b| {
            for (k, v) in b {
                assert!(a.insert(k, v).is_none(), "key {k} folded by two workers");
            }
            a
        },
    )
}

/// The same, row at a time.
fn by_rows(rx: &impl ReadOps) -> BTreeMap<i64, (i32, Option<usize>)> {
    let t = rx.table("t").unwrap();
    let (key, qty) = (t.col::<kind::I64>("key").unwrap(), t.col::<kind::I32>("qty").unwrap());
    let note = t.col::<kind::Str>("note").unwrap();
    let mut out = BTreeMap::new();
    rx.for_each_row(&t, |r| {
        out.insert(r.get(key)?, (r.get(qty)?, r.get_opt(note)?.map(str::len)));
        Ok(())
    })
    .unwrap();
    out
}

fn note(k: i64) -> Option<String> {
    (k % 3 != 0).then(|| "n".repeat((k % 50) as usize))
}

#[test]
fn pages_fold_every_row_once_as_rows_do() {
    for layer in Layer::compiled() {
        for pool_bytes in [64 << 20, 8 * 4096] {
            let dir = tempfile::tempdir().unwrap();
            let db = Database::builder()
                .layer(layer)
                .page_size(4096)
                .pool_bytes(pool_bytes)
                .open(dir.path().join("db"))
                .unwrap();
            // About 130 pages of 4 KiB: four chunks of 32 pages for the workers to share.
            commit_table(&db, 10_000, |k| Row { qty: k as i32 * 2, note: note(k) });
            let rx = db.begin_read().unwrap();
            let want: BTreeMap<_, _> =
                (0..10_000).map(|k| (k, (k as i32 * 2, note(k).map(|n| n.len())))).collect();
            assert_eq!(by_rows(&rx), want, "{layer}, pool {pool_bytes}");
            for threads in [1, 3] {
                assert_eq!(by_pages(&rx, threads).unwrap(), want, "{layer}, {threads} threads");
            }
            drop(rx);

            // A write transaction's fold sees its own insert and delete.
            let mut tx = db.begin_write().unwrap();
            insert_row(&mut tx, "t", 50_000, &Row { qty: 7, note: None }).unwrap();
            let t = tx.table("t").unwrap();
            let first = common::contents_in(&tx).unwrap()["t"][&0].0;
            tx.delete(&t, first).unwrap();
            let mut mine = want.clone();
            mine.insert(50_000, (7, None));
            mine.remove(&0);
            assert_eq!(by_pages(&tx, 2).unwrap(), mine, "{layer}: the writer's own changes");
            // A reader (on a thread of its own: this one holds the writer) does not.
            std::thread::scope(|s| {
                s.spawn(|| {
                    assert_eq!(by_pages(&db.begin_read().unwrap(), 2).unwrap(), want, "{layer}")
                });
            });
            tx.commit().unwrap();
            assert_eq!(by_pages(&db.begin_read().unwrap(), 2).unwrap(), mine, "{layer}");
        }
    }
}

#[test]
fn nulls_and_foreign_handles_are_typed_errors() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let db = common::open_4k(dir.path(), layer);
        // Many pages, so that several workers meet the error.
        commit_table(&db, 10_000, |k| Row { qty: k as i32, note: note(k) });
        let mut tx = db.begin_write().unwrap();
        // `t` is (key I64, qty I32, price Decimal, note VarChar NULL): a one-byte null bitmap
        // and fixed slots of 8, 4, 8 and 4 bytes. `other` has a fixed area as long, laid out
        // differently past its first two columns, and `wide` a longer one.
        let other = tx
            .create_table(
                "other",
                Schema::new(vec![
                    Column::new("a", ColumnType::I64),
                    Column::new("b", ColumnType::I32),
                    Column::new("c", ColumnType::I64),
                    Column::new("d", ColumnType::I32),
                ])
                .unwrap(),
            )
            .unwrap();
        tx.create_table(
            "wide",
            Schema::new(vec![Column::new("a", ColumnType::I64), Column::new("z", ColumnType::I64)])
                .unwrap(),
        )
        .unwrap();
        tx.commit().unwrap();

        let rx = db.begin_read().unwrap();
        let t = rx.table("t").unwrap();
        // Reading a NULL with `get` is `Null`, naming the column; `get_opt` gives `None`.
        let note = t.col::<kind::Str>("note").unwrap();
        let r = rx.par_fold_pages(
            &t,
            2,
            || (),
            |acc, page| {
                let note = page.col(note)?;
                page.fold(acc, |acc, r| r.get(note).map(|_| acc))
            },
            |_, _| (),
        );
        assert!(matches!(&r, Err(Error::Null(c)) if c == "note"), "{layer}: {r:?}");

        // A handle of `other` on `t`'s pages: `c` (an I64 where `t` has its Decimal price) is
        // refused at the page although the fixed areas are as long (the row getter's check
        // lets it through); `b` is laid out as `t`'s `qty` and reads it.
        let c = other.col::<kind::I64>("c").unwrap();
        let row_path = rx.par_fold(&t, 2, || 0i64, |acc, r| Ok(acc + r.get(c)?), |a, b| a + b);
        assert!(row_path.is_ok(), "{layer}: the fixed areas are as long: {row_path:?}");
        let r = rx.par_fold_pages(&t, 2, || 0, |acc, page| page.col(c).map(|_| acc), |a, _| a);
        assert!(matches!(r, Err(Error::ColumnMismatch)), "{layer}: {r:?}");
        let b = other.col::<kind::I32>("b").unwrap();
        let sum = rx
            .par_fold_pages(
                &t,
                2,
                || 0i64,
                |acc, page| {
                    let b = page.col(b)?;
                    page.fold(acc, |acc, r| Ok(acc + i64::from(r.get(b)?)))
                },
                |a, b| a + b,
            )
            .unwrap();
        assert_eq!(sum, (0..10_000).sum::<i64>(), "{layer}: `b` reads `qty`");
        // A handle of a table with a longer fixed area: refused.
        let z = rx.table("wide").unwrap().col::<kind::I64>("z").unwrap();
        let r = rx.par_fold_pages(&t, 2, || 0, |acc, page| page.col(z).map(|_| acc), |a, _| a);
        assert!(matches!(r, Err(Error::ColumnMismatch)), "{layer}: {r:?}");
    }
}
