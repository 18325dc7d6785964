//! Q19, discounted revenue: lineitems delivered in person by air whose part matches one of three
//! brand/container/size classes with that class's quantity range. Plan: part → dense array of
//! each part's class (0 for none); one pass over lineitem.

use nvpage::{ReadOps, ReadTxn, kind};

use super::{QueryResult, at, disc_price, put, scaled};

/// One class: brand, containers, largest size, quantity range (in hundredths).
type Class = (&'static [u8], [&'static [u8]; 4], i32, (i64, i64));

/// Classes 1..=3.
const CLASSES: [Class; 3] = [
    (b"Brand#12", [b"SM CASE", b"SM BOX", b"SM PACK", b"SM PKG"], 5, (100, 1100)),
    (b"Brand#23", [b"MED BAG", b"MED BOX", b"MED PKG", b"MED PACK"], 10, (1000, 2000)),
    (b"Brand#34", [b"LG CASE", b"LG BOX", b"LG PACK", b"LG PKG"], 15, (2000, 3000)),
];

pub fn run(rx: &ReadTxn<'_>, threads: usize) -> nvpage::Result<QueryResult> {
    let pt = rx.table("part")?;
    let p_key = pt.col::<kind::I64>("p_partkey")?;
    let p_brand = pt.col::<kind::Bytes>("p_brand")?;
    let p_cont = pt.col::<kind::Bytes>("p_container")?;
    let p_size = pt.col::<kind::I32>("p_size")?;
    let mut class: Vec<u8> = Vec::new();
    rx.for_each_row(&pt, |r| {
        let (brand, cont, size) = (r.get(p_brand)?, r.get(p_cont)?, r.get(p_size)?);
        for (i, (b, conts, max, _)) in CLASSES.iter().enumerate() {
            if brand == *b && conts.contains(&cont) && (1..=*max).contains(&size) {
                put(&mut class, r.get(p_key)?, i as u8 + 1, 0);
            }
        }
        Ok(())
    })?;

    let lt = rx.table("lineitem")?;
    let l_part = lt.col::<kind::I64>("l_partkey")?;
    let l_qty = lt.col::<kind::Units>("l_quantity")?;
    let l_instr = lt.col::<kind::Bytes>("l_shipinstruct")?;
    let l_mode = lt.col::<kind::Bytes>("l_shipmode")?;
    let l_price = lt.col::<kind::Units>("l_extendedprice")?;
    let l_disc = lt.col::<kind::Units>("l_discount")?;
    let revenue = rx.par_fold(
        &lt,
        threads,
        || 0i128,
        |acc, r| {
            let Some(c) = at(&class, r.get(l_part)?).filter(|&c| c > 0) else { return Ok(acc) };
            let mode = r.get(l_mode)?;
            if (mode != b"AIR" && mode != b"AIR REG") || r.get(l_instr)? != b"DELIVER IN PERSON" {
                return Ok(acc);
            }
            let (lo, hi) = CLASSES[usize::from(c - 1)].3;
            let q = r.get(l_qty)?;
            if q < lo || q > hi {
                return Ok(acc);
            }
            Ok(acc + disc_price(r.get(l_price)?, r.get(l_disc)?))
        },
        |a, b| a + b,
    )?;
    let mut out = QueryResult::new(&["revenue"]);
    out.rows.push(vec![scaled(revenue, 4)]);
    Ok(out)
}
