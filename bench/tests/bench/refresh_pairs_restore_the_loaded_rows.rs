//! Goal: the refresh functions, driven directly on a small loaded database, change exactly the
//! rows of their refresh set — two RF1s add their orders and lineitems, the matching RF2s find
//! them again by key (by a scan, then through the loader's primary-key indexes) and delete
//! them — so after matching pairs the row counts, by the catalog and by a scan, are the loaded
//! ones again, and no row with a refresh key is left.

use indicatif::ProgressBar;
use nvpage::{Database, Layer, ReadOps, kind};
use nvpage_bench::refresh::functions::{Lookup, rf1, rf2};
use nvpage_bench::refresh::sets::RefreshSets;
use nvpage_bench::tpch::Medium;
use nvpage_bench::tpch::load::load_all;
use nvpage_bench::tpch::runner::builder;

const SF: f64 = 0.005;

/// (orders, lineitems) by the catalog and by a scan, which must agree; and the rows whose order
/// key is at least `min_key`.
fn counts(db: &Database, min_key: i64) -> ((u64, u64), u64) {
    let rx = db.begin_read().unwrap();
    let mut by_catalog = [0u64; 2];
    let mut above = 0u64;
    for (i, (t, key)) in [("orders", "o_orderkey"), ("lineitem", "l_orderkey")].iter().enumerate() {
        let table = rx.table(t).unwrap();
        let k = table.col::<kind::I64>(key).unwrap();
        let mut scanned = 0u64;
        rx.for_each_row(&table, |r| {
            scanned += 1;
            above += u64::from(r.get(k)? >= min_key);
            Ok(())
        })
        .unwrap();
        by_catalog[i] = rx.row_count(&table).unwrap();
        assert_eq!(scanned, by_catalog[i], "{t}: the scan and the catalog disagree");
    }
    ((by_catalog[0], by_catalog[1]), above)
}

#[test]
fn matching_rf1_and_rf2_pairs_return_to_the_loaded_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let layer = Layer::best_compiled();
    let db = builder(layer, Medium::Disk).open(tmp.path().join("db")).unwrap();
    load_all(&db, SF, false, &ProgressBar::hidden()).unwrap();
    let sets = RefreshSets::new(SF).unwrap();
    let min_key = sets.set(0).unwrap().orders.iter().map(|o| o.o_orderkey).min().unwrap();
    let (loaded, above) = counts(&db, min_key);
    assert_eq!(above, 0, "refresh keys lie above every loaded key");
    two_pairs(&db, &sets, 0, Lookup::Scan, loaded, min_key);
    two_pairs(&db, &sets, 2, Lookup::Index, loaded, min_key);
    // The loader's primary-key indexes were kept by both pairs: they and the tables agree.
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.damage);
    assert_eq!(report.indexes.len(), 8);
    for ix in &report.indexes {
        let t = report.tables.iter().find(|t| t.name == ix.table).unwrap();
        assert_eq!(ix.entries_found, t.rows_scanned, "{}", ix.name);
    }
}

/// RF1 of sets `first` and `first + 1`, then their RF2s, finding rows as `lookup` says.
fn two_pairs(
    db: &Database,
    sets: &RefreshSets,
    first: u64,
    lookup: Lookup,
    loaded: (u64, u64),
    min_key: i64,
) {
    let (a, b) = (sets.set(first).unwrap(), sets.set(first + 1).unwrap());
    for s in [&a, &b] {
        let changed = rf1(db, s).unwrap();
        assert_eq!(
            (changed.orders, changed.lineitems),
            (s.orders.len() as u64, s.lines.len() as u64)
        );
    }
    let both = (a.orders.len() + b.orders.len()) as u64;
    let both_lines = (a.lines.len() + b.lines.len()) as u64;
    let (grown, above) = counts(db, min_key);
    assert_eq!(grown, (loaded.0 + both, loaded.1 + both_lines));
    assert_eq!(above, both + both_lines);

    // Deleted by key, in the order they were inserted: each RF2 finds only its own set.
    let changed = rf2(db, &a, lookup).unwrap();
    assert_eq!((changed.orders, changed.lineitems), (a.orders.len() as u64, a.lines.len() as u64));
    let (half, _) = counts(db, min_key);
    assert_eq!(half, (loaded.0 + b.orders.len() as u64, loaded.1 + b.lines.len() as u64));
    rf2(db, &b, lookup).unwrap();
    assert_eq!(counts(db, min_key), (loaded, 0));

    // A set already deleted is not there to delete: RF2 says so instead of deleting nothing.
    let err = rf2(db, &a, lookup).unwrap_err().to_string();
    assert!(err.contains("found 0 orders"), "{err}");
    assert_eq!(counts(db, min_key), (loaded, 0));
}
