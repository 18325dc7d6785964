//! Goal: the page-at-a-time fold (`ReadOps::par_fold_pages`, issue 16's scan API) reads what the
//! row-at-a-time API reads — every committed row once, a write transaction's own changes, NULLs
//! as NULLs — on every layer, with the pool holding all of the table or a few pages of it; and a
//! handle made for another table is the typed `ColumnMismatch`, not a wrong value.

mod common;

use std::collections::BTreeMap;

use common::{Row, commit_table, insert_row};
use nvpage::{Column, ColumnType, Database, Error, Layer, ReadOps, Schema, Value, kind};

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
            commit_table(&db, 3000, |k| Row { qty: k as i32 * 2, note: note(k) });
            let rx = db.begin_read().unwrap();
            let want: BTreeMap<_, _> =
                (0..3000).map(|k| (k, (k as i32 * 2, note(k).map(|n| n.len())))).collect();
            assert_eq!(by_rows(&rx), want, "{layer}, pool {pool_bytes}");
            for threads in [1, 3] {
                assert_eq!(by_pages(&rx, threads).unwrap(), want, "{layer}, {threads} threads");
            }
            drop(rx);

            // A write transaction's fold sees its own insert and delete.
            let mut tx = db.begin_write().unwrap();
            insert_row(&mut tx, "t", 5000, &Row { qty: 7, note: None }).unwrap();
            let t = tx.table("t").unwrap();
            let first = common::contents_in(&tx).unwrap()["t"][&0].0;
            tx.delete(&t, first).unwrap();
            let mut mine = want.clone();
            mine.insert(5000, (7, None));
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
        let db = Database::builder().layer(layer).open(dir.path().join("db")).unwrap();
        commit_table(&db, 10, |k| Row { qty: k as i32, note: note(k) });
        let mut tx = db.begin_write().unwrap();
        let other = tx
            .create_table(
                "other",
                Schema::new(vec![
                    Column::new("a", ColumnType::I64),
                    Column::new("b", ColumnType::I64),
                ])
                .unwrap(),
            )
            .unwrap();
        tx.insert(&other, &[Value::I64(1), Value::I64(2)]).unwrap();
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

        // A handle of `other` (whose fixed area differs) on `t`'s pages: refused at the page.
        let b = other.col::<kind::I64>("b").unwrap();
        let r = rx.par_fold_pages(&t, 2, || 0, |acc, page| page.col(b).map(|_| acc), |a, _| a);
        assert!(matches!(r, Err(Error::ColumnMismatch)), "{layer}: {r:?}");
    }
}
