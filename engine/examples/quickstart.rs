//! Create a table, insert rows, commit, and scan them back — serially and in parallel.
//!
//! Run with `cargo run --release -p nvpage --example quickstart [DIR]`. With a `DIR`, the
//! database is kept there (and a second run adds to it); without one, it is made in
//! `nvpage-quickstart-PID` in the temp directory and removed when the example ends, with an error
//! or without.

use std::path::{Path, PathBuf};

use nvpage::{Column, ColumnType, Database, Date, Decimal, ReadOps, Schema, Value, kind};

/// A directory removed when dropped: the example's database (about 9 MB, most of it the 100,000
/// rows) must not pile up in the temp directory run after run.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        match std::fs::remove_dir_all(&self.0) {
            Ok(()) => println!("removed {}", self.0.display()),
            Err(e) => eprintln!("could not remove {}: {e}", self.0.display()),
        }
    }
}

fn main() -> nvpage::Result<()> {
    let _scratch;
    let dir = match std::env::args().nth(1) {
        Some(d) => PathBuf::from(d),
        None => {
            let d = std::env::temp_dir().join(format!("nvpage-quickstart-{}", std::process::id()));
            _scratch = Scratch(d.clone());
            d
        }
    };
    run(&dir)
}

fn run(dir: &Path) -> nvpage::Result<()> {
    let db = Database::open(dir)?;
    println!("opened {} with layer {} ({})", dir.display(), db.layer(), db.durability());

    let mut tx = db.begin_write()?;
    let orders = match tx.table("orders") {
        Ok(t) => t,
        Err(_) => tx.create_table(
            "orders",
            Schema::new(vec![
                Column::new("id", ColumnType::I64),
                Column::new("price", ColumnType::Decimal { scale: 2 }),
                Column::new("day", ColumnType::Date),
                Column::nullable("note", ColumnType::VarChar { max_len: 64 }),
            ])?,
        )?,
    };
    let start = std::time::Instant::now();
    let day = Date::parse("2026-11-29").expect("a valid date");
    for i in 0..100_000i64 {
        let note = format!("order {i}");
        tx.insert(
            &orders,
            &[
                Value::I64(i),
                Value::Decimal(Decimal::new(1000 + i % 5000, 2)),
                Value::Date(day),
                if i % 10 == 0 { Value::Null } else { Value::Str(&note) },
            ],
        )?;
    }
    tx.commit()?;
    println!("inserted and committed 100000 rows in {:?}", start.elapsed());

    let rx = db.begin_read()?;
    let price = orders.col::<kind::Units>("price")?;
    let mut serial = 0i128;
    rx.for_each_row(&orders, |row| {
        serial += i128::from(row.get(price)?);
        Ok(())
    })?;
    let parallel = rx.par_fold(
        &orders,
        2,
        || 0i128,
        |acc, row| Ok(acc + i128::from(row.get(price)?)),
        |a, b| a + b,
    )?;
    assert_eq!(serial, parallel);
    let mut total = String::new();
    nvpage::format_scaled(&mut total, serial, 2).expect("writing to a String");
    println!("{} rows, total price {total}", rx.row_count(&orders)?);
    Ok(())
}
