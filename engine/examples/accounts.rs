//! Accounts an application keeps by key: users keyed and upserted by email, transfers that read a balance
//! and set it by key, a count over a range of an index and a prefix scan, all without a row id
//! in sight.
//!
//! Run with `cargo run --release -p nvpage --example accounts`: the database lives in a
//! temporary directory, removed when the example ends.

use std::ops::Bound;

use nvpage::{
    Column, ColumnType, Database, Decimal, Index, ReadOps, Schema, Upserted, Value, WriteTxn, kind,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Database::open(dir.path().join("accounts"))?;

    let mut tx = db.begin_write()?;
    let users = tx.create_table(
        "users",
        Schema::new(vec![
            Column::new("email", ColumnType::VarChar { max_len: 80 }),
            Column::new("city", ColumnType::VarChar { max_len: 40 }),
            Column::new("balance", ColumnType::Decimal { scale: 2 }),
        ])?
        .with_primary_key(&["email"])?,
    )?;
    // The primary key is a unique index made with the table, named `users_pkey`.
    let by_email = tx.primary_key(&users)?.ok_or("a primary key")?;
    let by_balance = tx.create_index("users_balance", &users, &["balance"])?;
    for (email, city, cents) in [
        ("ada@example.com", "London", 10_000),
        ("alan@example.com", "Manchester", 2_500),
        ("grace@example.org", "Arlington", 7_000),
    ] {
        let values = [email.into(), city.into(), Decimal::new(cents, 2).into()];
        let done = tx.upsert(&by_email, &values)?;
        assert!(matches!(done, Upserted::Inserted(_)));
    }
    // The same email again: the row is replaced, not added. An integer fits a Decimal column
    // (25 is 25.00) and an I64 one.
    let moved: [Value<'_>; 3] = ["alan@example.com".into(), "Wilmslow".into(), 25.into()];
    assert!(matches!(tx.upsert(&by_email, &moved)?, Upserted::Updated(_)));
    tx.commit()?;

    let mut tx = db.begin_write()?;
    transfer(&mut tx, &by_email, "ada@example.com", "grace@example.org", Decimal::new(1_250, 2))?;
    match transfer(
        &mut tx,
        &by_email,
        "alan@example.com",
        "ada@example.com",
        Decimal::new(9_900, 2),
    ) {
        Err(e) => println!("refused: {e}"),
        Ok(()) => unreachable!("alan has 25.00"),
    }
    // A refused transfer changed nothing, so the transaction goes on.
    tx.delete_by(&by_email, &["nobody@example.com".into()])?;
    tx.commit()?;

    let rx = db.begin_read()?;
    for email in ["ada@example.com", "alan@example.com", "grace@example.org"] {
        let g = rx.get_by(&by_email, &[email.into()])?.ok_or("a user")?;
        let row = g.row()?;
        let city = row.get_named::<kind::Str>("city")?;
        let balance = row.get_named::<kind::Decimal>("balance")?;
        println!("{email:<20} {city:<11} {balance:>7}");
    }
    let at_least_50 = [Value::from(Decimal::new(5_000, 2))];
    let rich = rx.count_range(&by_balance, Bound::Included(&at_least_50[..]), Bound::Unbounded)?;
    println!("{rich} users hold 50.00 or more (counted from the index alone)");
    let starting_with_a: Vec<String> = rx
        .index_prefix(&by_email, &[], "a")?
        .map(|g| Ok(g?.row()?.get_named::<kind::Str>("email")?.to_owned()))
        .collect::<nvpage::Result<_>>()?;
    println!("emails starting with 'a': {}", starting_with_a.join(", "));
    assert_eq!(rich, 2);
    Ok(())
}

/// Moves `amount` from one user's balance to another's, by email: refused, with nothing changed,
/// if the payer has less.
fn transfer(
    tx: &mut WriteTxn<'_>,
    by_email: &Index,
    from: &str,
    to: &str,
    amount: Decimal,
) -> Result<(), Box<dyn std::error::Error>> {
    let balance = |tx: &WriteTxn<'_>, email: &str| -> Result<i64, Box<dyn std::error::Error>> {
        let g = tx.get_by(by_email, &[email.into()])?.ok_or_else(|| format!("no user {email}"))?;
        Ok(g.row()?.get_named::<kind::Decimal>("balance")?.units)
    };
    let (payer, payee) = (balance(tx, from)?, balance(tx, to)?);
    if payer < amount.units {
        return Err(format!("{from} has {}, less than {amount}", Decimal::new(payer, 2)).into());
    }
    let set = |units| [("balance", Value::from(Decimal::new(units, 2)))];
    tx.update_by(by_email, &[from.into()], &set(payer - amount.units))?;
    tx.update_by(by_email, &[to.into()], &set(payee + amount.units))?;
    Ok(())
}
