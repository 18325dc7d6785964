//! Q10, returned item reporting: the 20 customers who lost the most revenue to returned items
//! ordered in 1993Q4. Plan: orders of the quarter → hash map to their customer; lineitem with
//! flag R probes it and sums per customer; the top 20 are then looked up in customer and nation.

use nvpage::{ReadOps, ReadTxn, kind};

use super::{KeyMap, QueryResult, disc_price, merge_sums, scaled, ymd};

/// What the answer shows of a customer.
struct Cust {
    name: String,
    acctbal: i64,
    nation: i32,
    address: String,
    phone: String,
    comment: String,
}

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let (from, to) = (ymd(1993, 10, 1), ymd(1994, 1, 1));
    let ot = rx.table("orders")?;
    let o_key = ot.col::<kind::I64>("o_orderkey")?;
    let o_cust = ot.col::<kind::I64>("o_custkey")?;
    let o_date = ot.col::<kind::Date>("o_orderdate")?;
    let orders = rx.par_fold(
        &ot,
        threads,
        Vec::new,
        |mut v, r| {
            let d = r.get(o_date)?;
            if d >= from && d < to {
                v.push((r.get(o_key)?, r.get(o_cust)?));
            }
            Ok(v)
        },
        |mut a, mut b| {
            a.append(&mut b);
            a
        },
    )?;
    let orders: KeyMap<i64, i64> = orders.into_iter().collect();

    let lt = rx.table("lineitem")?;
    let l_key = lt.col::<kind::I64>("l_orderkey")?;
    let l_flag = lt.col::<kind::Bytes>("l_returnflag")?;
    let l_price = lt.col::<kind::Units>("l_extendedprice")?;
    let l_disc = lt.col::<kind::Units>("l_discount")?;
    let revenue = rx.par_fold(
        &lt,
        threads,
        KeyMap::<i64, i128>::default,
        |mut m, r| {
            if r.get(l_flag)? == b"R"
                && let Some(&c) = orders.get(&r.get(l_key)?)
            {
                *m.entry(c).or_default() += disc_price(r.get(l_price)?, r.get(l_disc)?);
            }
            Ok(m)
        },
        merge_sums,
    )?;
    let mut top: Vec<(i64, i128)> = revenue.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    top.truncate(20);

    let ct = rx.table("customer")?;
    let c_key = ct.col::<kind::I64>("c_custkey")?;
    let c_name = ct.col::<kind::Str>("c_name")?;
    let c_acct = ct.col::<kind::Units>("c_acctbal")?;
    let c_nation = ct.col::<kind::I32>("c_nationkey")?;
    let c_addr = ct.col::<kind::Str>("c_address")?;
    let c_phone = ct.col::<kind::Str>("c_phone")?;
    let c_comment = ct.col::<kind::Str>("c_comment")?;
    let mut custs: KeyMap<i64, Option<Cust>> = top.iter().map(|&(k, _)| (k, None)).collect();
    rx.for_each_row(&ct, |r| {
        if let Some(slot) = custs.get_mut(&r.get(c_key)?) {
            *slot = Some(Cust {
                name: r.get(c_name)?.to_string(),
                acctbal: r.get(c_acct)?,
                nation: r.get(c_nation)?,
                address: r.get(c_addr)?.to_string(),
                phone: r.get(c_phone)?.to_string(),
                comment: r.get(c_comment)?.to_string(),
            });
        }
        Ok(())
    })?;

    let nt = rx.table("nation")?;
    let (n_key, n_name) = (nt.col::<kind::I32>("n_nationkey")?, nt.col::<kind::Str>("n_name")?);
    let mut nations: KeyMap<i32, String> = KeyMap::default();
    rx.for_each_row(&nt, |r| {
        nations.insert(r.get(n_key)?, r.get(n_name)?.to_string());
        Ok(())
    })?;

    let mut out = QueryResult::new(&[
        "c_custkey",
        "c_name",
        "revenue",
        "c_acctbal",
        "n_name",
        "c_address",
        "c_phone",
        "c_comment",
    ]);
    for (k, rev) in top {
        // An order's customer is always in customer (a foreign key); skip defensively if not,
        // as the inner join would.
        let Some(Some(c)) = custs.remove(&k) else { continue };
        let Some(n) = nations.get(&c.nation) else { continue };
        out.rows.push(vec![
            k.to_string(),
            c.name,
            scaled(rev, 4),
            scaled(i128::from(c.acctbal), 2),
            n.clone(),
            c.address,
            c.phone,
            c.comment,
        ]);
    }
    Ok(out)
}
