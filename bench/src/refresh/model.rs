//! What each snapshot must answer. The refresh loop is the database's only writer, and it
//! announces every commit's change before it begins the transaction ([`History`]), so for any
//! snapshot `s` the set of refresh sets present is known: those inserted by a commit `≤ s` and
//! not deleted by one. Q1 and Q6 are sums (Q1's averages are sums over counts), and sums over
//! disjoint rows add: the answer at `s` is the loaded database's sums ([`Partial::of_db`], taken
//! before the loop) plus each present set's, computed in plain Rust from the generator's rows
//! ([`Partial::of_lines`]). A reader that saw part of a transaction, a change committed after its
//! snapshot, or pages of two snapshots would be caught by comparing answers.

use std::collections::HashMap;
use std::sync::Mutex;

use nvpage::ReadTxn;
use tpchgen::generators::LineItem;

use super::sets::RefreshSets;
use crate::BoxError;
use crate::tpch::load::date;
use crate::tpch::queries::{Query, QueryResult, q01, q06};

/// A query's answer before formatting: sums that add over disjoint rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Partial {
    /// Q1's groups.
    Q1(q01::Groups),
    /// Q6's revenue, at scale 4.
    Q6(i128),
}

fn first_byte(s: &str) -> u8 {
    s.as_bytes().first().copied().unwrap_or(b' ')
}

impl Partial {
    /// `q`'s sums over the lineitems of the read transaction's snapshot (one scan thread).
    pub fn of_db(q: Query, rx: &ReadTxn<'_>) -> Result<Partial, BoxError> {
        match q {
            Query::Q01 => Ok(Partial::Q1(q01::aggregate(rx, 1)?)),
            Query::Q06 => Ok(Partial::Q6(q06::revenue(rx, 1)?)),
            q => {
                Err(format!("{q} has no snapshot model: the refresh benchmark runs q01, q06")
                    .into())
            }
        }
    }

    /// `q`'s sums over the generator's lineitems `lines`.
    pub fn of_lines(q: Query, lines: &[LineItem<'_>]) -> Result<Partial, BoxError> {
        match q {
            Query::Q01 => {
                let mut g = q01::Groups::default();
                for l in lines {
                    g.add_line(
                        date(l.l_shipdate),
                        first_byte(l.l_returnflag),
                        first_byte(l.l_linestatus),
                        l.l_quantity * 100,
                        l.l_extendedprice.0,
                        l.l_discount.0,
                        l.l_tax.0,
                    );
                }
                Ok(Partial::Q1(g))
            }
            Query::Q06 => Ok(Partial::Q6(
                lines
                    .iter()
                    .filter_map(|l| {
                        q06::line_revenue(
                            date(l.l_shipdate),
                            l.l_discount.0,
                            l.l_quantity * 100,
                            l.l_extendedprice.0,
                        )
                    })
                    .sum(),
            )),
            q => {
                Err(format!("{q} has no snapshot model: the refresh benchmark runs q01, q06")
                    .into())
            }
        }
    }

    /// The sums of two disjoint sets of rows.
    pub fn plus(&self, other: &Partial) -> Result<Partial, BoxError> {
        match (self, other) {
            (Partial::Q1(a), Partial::Q1(b)) => Ok(Partial::Q1(a.clone().merge(b))),
            (Partial::Q6(a), Partial::Q6(b)) => Ok(Partial::Q6(a + b)),
            _ => Err("sums of two different queries".into()),
        }
    }

    /// The answer these sums make.
    pub fn answer(&self) -> QueryResult {
        match self {
            Partial::Q1(g) => q01::answer(g),
            Partial::Q6(r) => q06::answer(*r),
        }
    }
}

/// A refresh commit's change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// RF1 inserted refresh set `j`.
    Insert(u64),
    /// RF2 deleted refresh set `j`.
    Delete(u64),
}

/// Every refresh commit's change, by commit number, announced before its transaction begins (so
/// a reader whose snapshot includes the commit always finds it).
#[derive(Debug, Default)]
pub struct History {
    changes: Mutex<Vec<(u64, Change)>>,
}

impl History {
    /// Records that commit `commit` will make `change`.
    pub fn announce(&self, commit: u64, change: Change) {
        self.changes.lock().unwrap_or_else(|e| e.into_inner()).push((commit, change));
    }

    /// The refresh sets present in snapshot `s`, in order.
    pub fn sets_at(&self, s: u64) -> Vec<u64> {
        let changes = self.changes.lock().unwrap_or_else(|e| e.into_inner());
        let mut present = Vec::new();
        for &(_, change) in changes.iter().filter(|(c, _)| *c <= s) {
            match change {
                Change::Insert(j) => present.push(j),
                Change::Delete(j) => present.retain(|x| *x != j),
            }
        }
        present
    }
}

/// The loaded database's sums and each refresh set's, for expected answers.
#[derive(Debug)]
pub struct Model {
    sets: RefreshSets,
    base: HashMap<Query, Partial>,
    per_set: HashMap<(Query, u64), Partial>,
}

impl Model {
    /// A model over the refresh sets `sets`, with no loaded sums yet.
    pub fn new(sets: RefreshSets) -> Self {
        Self { sets, base: HashMap::new(), per_set: HashMap::new() }
    }

    /// Records the loaded database's sums for `q`.
    pub fn set_base(&mut self, q: Query, p: Partial) {
        self.base.insert(q, p);
    }

    /// The answer to `q` of the loaded database plus the refresh sets `present`.
    pub fn expected(&mut self, q: Query, present: &[u64]) -> Result<QueryResult, BoxError> {
        let mut sum = self.base.get(&q).ok_or_else(|| format!("no loaded sums for {q}"))?.clone();
        for &j in present {
            if !self.per_set.contains_key(&(q, j)) {
                let set = self.sets.set(j)?;
                self.per_set.insert((q, j), Partial::of_lines(q, &set.lines)?);
            }
            sum = sum.plus(&self.per_set[&(q, j)])?;
        }
        Ok(sum.answer())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_knows_each_snapshots_sets() {
        let h = History::default();
        h.announce(3, Change::Insert(0));
        h.announce(4, Change::Delete(0));
        h.announce(5, Change::Insert(1));
        h.announce(6, Change::Insert(2));
        h.announce(7, Change::Delete(1));
        assert_eq!(h.sets_at(2), Vec::<u64>::new());
        assert_eq!(h.sets_at(3), vec![0]);
        assert_eq!(h.sets_at(4), Vec::<u64>::new());
        assert_eq!(h.sets_at(6), vec![1, 2]);
        assert_eq!(h.sets_at(9), vec![2]);
    }

    #[test]
    fn sums_of_disjoint_rows_add() {
        let sets = RefreshSets::new(0.01).unwrap();
        let (a, b) = (sets.set(0).unwrap(), sets.set(1).unwrap());
        let both: Vec<_> = a.lines.iter().chain(&b.lines).cloned().collect();
        for q in [Query::Q01, Query::Q06] {
            let pa = Partial::of_lines(q, &a.lines).unwrap();
            let pb = Partial::of_lines(q, &b.lines).unwrap();
            let whole = Partial::of_lines(q, &both).unwrap();
            assert_eq!(pa.plus(&pb).unwrap().answer(), whole.answer(), "{q}");
        }
        assert!(Partial::of_lines(Query::Q03, &a.lines).is_err());
    }
}
