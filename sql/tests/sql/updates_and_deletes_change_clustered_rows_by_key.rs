//! Goal: `UPDATE` and `DELETE` on a clustered table change its rows by key and answer as the
//! same statements on a heap table with the same primary key do: updates of other columns,
//! updates that move every key (`SET k = k + 1`, a mirror of a key range onto itself), deletes
//! with a `WHERE`; an update whose new key another row keeps, or two rows take, fails with the
//! key's unique violation and changes nothing, outside a transaction and inside one (where it
//! dooms the transaction, as any failed change does).

use std::collections::BTreeMap;

use nvpage::Layer;

use crate::common::{rows, run_all, runtime, session, try_rows};

/// The rows a model of the table holds: key → (group, note).
type Model = BTreeMap<i64, (i64, String)>;

/// Every row of `table` in key order, as text.
async fn all(s: &nvpage_sql::Session, table: &str) -> Vec<Vec<String>> {
    rows(s, &format!("SELECT k, grp, note FROM {table} ORDER BY k")).await
}

fn text(model: &Model) -> Vec<Vec<String>> {
    model.iter().map(|(k, (g, n))| vec![k.to_string(), g.to_string(), n.clone()]).collect()
}

/// Moves the keys of the model's rows that `pick` selects to `to(k)`, all at once; returns how
/// many moved.
fn move_keys(model: &mut Model, pick: impl Fn(i64) -> bool, to: impl Fn(i64) -> i64) -> usize {
    let moved: Vec<(i64, (i64, String))> =
        model.iter().filter(|(k, _)| pick(**k)).map(|(k, v)| (to(*k), v.clone())).collect();
    model.retain(|k, _| !pick(*k));
    let n = moved.len();
    for (k, v) in moved {
        assert!(model.insert(k, v).is_none(), "the model's move collides at {k}");
    }
    n
}

#[test]
fn updates_and_deletes_on_a_clustered_table_answer_as_on_a_heap_table() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Layer::best_compiled());
    // Keys out of insertion order, so that the heap's order is not the key's.
    let mut model: Model = (0..3000i64)
        .map(|i| ((i * 7) % 3000, ((i * 7) % 3000 % 13, format!("n{}", i % 97))))
        .collect();
    rt.block_on(async {
        run_all(
            &s,
            "CREATE TABLE c (k BIGINT PRIMARY KEY, grp BIGINT, note VARCHAR(20))
                 WITH (storage = 'clustered');
             CREATE TABLE h (k BIGINT PRIMARY KEY, grp BIGINT, note VARCHAR(20));
             INSERT INTO c SELECT (value * 7) % 3000, (value * 7) % 3000 % 13,
                                  concat('n', value % 97)
                           FROM generate_series(0, 2999);
             INSERT INTO h SELECT * FROM c;",
        )
        .await;
        assert_eq!(all(&s, "c").await, text(&model));
        // (statement, the model's change, which returns how many rows it changes)
        type Step = (&'static str, Box<dyn Fn(&mut Model) -> usize>);
        let steps: Vec<Step> = vec![
            (
                "UPDATE {t} SET note = concat(note, '!'), grp = grp + 100 WHERE grp = 3",
                Box::new(|m: &mut Model| {
                    let mut n = 0;
                    for (g, note) in m.values_mut().filter(|(g, _)| *g == 3) {
                        *g += 100;
                        note.push('!');
                        n += 1;
                    }
                    n
                }),
            ),
            (
                "UPDATE {t} SET k = k + 1",
                Box::new(|m: &mut Model| move_keys(m, |_| true, |k| k + 1)),
            ),
            (
                "DELETE FROM {t} WHERE k BETWEEN 100 AND 199 OR note LIKE '%!'",
                Box::new(|m: &mut Model| {
                    let before = m.len();
                    m.retain(|k, (_, n)| !((100..=199).contains(k) || n.ends_with('!')));
                    before - m.len()
                }),
            ),
            (
                "UPDATE {t} SET k = 40 - k, note = concat('m', note) WHERE k BETWEEN 10 AND 30",
                Box::new(|m: &mut Model| {
                    for (_, n) in m.range_mut(10..=30) {
                        n.1.insert(0, 'm');
                    }
                    move_keys(m, |k| (10..=30).contains(&k), |k| 40 - k)
                }),
            ),
            (
                "UPDATE {t} SET k = k * 2 WHERE k > 2990",
                Box::new(|m: &mut Model| move_keys(m, |k| k > 2990, |k| k * 2)),
            ),
        ];
        for (stmt, apply) in &steps {
            let (c, h) = (stmt.replace("{t}", "c"), stmt.replace("{t}", "h"));
            let changed = apply(&mut model).to_string();
            assert_ne!(changed, "0", "{stmt} changes no row of the model");
            assert_eq!(rows(&s, &c).await, [[changed.as_str()]], "{c}");
            assert_eq!(rows(&s, &h).await, [[changed.as_str()]], "{h}");
            assert_eq!(all(&s, "c").await, text(&model), "{c}");
            assert_eq!(all(&s, "h").await, all(&s, "c").await, "{h}");
        }

        // New keys that collide: with a row the statement leaves, with each other, and with
        // a row the statement leaves once others have moved. Each fails on both tables.
        let before = all(&s, "c").await;
        // Keys of the model's rows: `a` and `b` held, `free` held by none, `mid` held with
        // both its neighbours.
        let held = |k: &i64| model.contains_key(k);
        let mut keys = model.keys().copied().filter(|k| *k > 50);
        let (a, b) = (keys.next().unwrap(), keys.next().unwrap());
        let free = model.keys().last().unwrap() + 1;
        let mid = *model.keys().find(|k| **k > 50 && held(&(*k - 1)) && held(&(*k + 1))).unwrap();
        for stmt in [
            format!("UPDATE {{t}} SET k = {a} WHERE k = {b}"),
            format!("UPDATE {{t}} SET k = {free} WHERE k IN ({a}, {b})"),
            format!("UPDATE {{t}} SET k = k + 1 WHERE k BETWEEN {} AND {}", mid - 20, mid - 1),
            format!("UPDATE {{t}} SET k = k - 1, note = 'x' WHERE k >= {}", mid + 1),
        ] {
            for t in ["c", "h"] {
                let sql = stmt.replace("{t}", t);
                let e = try_rows(&s, &sql).await.unwrap_err();
                assert!(
                    e.contains(&format!("unique index {t}_pkey already holds the key")),
                    "{sql}: {e}"
                );
                assert_eq!(all(&s, t).await, before, "{sql} changed something");
            }
        }

        // Inside a transaction the failed update dooms it; nothing of the transaction stays.
        for t in ["c", "h"] {
            run_all(&s, &format!("BEGIN; DELETE FROM {t} WHERE k < 5")).await;
            let sql = format!("UPDATE {t} SET k = {a} WHERE k = {b}");
            assert!(try_rows(&s, &sql).await.unwrap_err().contains("already holds"), "{sql}");
            let e = try_rows(&s, "COMMIT").await.unwrap_err();
            assert!(e.contains("rolled back"), "{e}");
            assert_eq!(all(&s, t).await, before, "{t}");
        }
    });
}
