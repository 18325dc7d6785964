//! Which latches the current thread holds, so that a request that would wait on the thread itself
//! is a typed error ([`BufferError::LatchHeld`](crate::BufferError::LatchHeld)) instead of a hang,
//! and so that a shared latch the thread already holds is taken again recursively while one it
//! does not hold is taken fairly.
//!
//! Shared latches a thread already holds are re-entered recursively (a waiting writer does not
//! block a thread that already reads), so a self-join that takes the same page twice never
//! deadlocks against a waiting write-back. The two cases left are caught here: asking for a latch
//! exclusively while holding it in any mode, and asking for it shared while holding it
//! exclusively.
//!
//! A parallel scan's workers act for the thread that started them, which waits for them: they
//! adopt its holds ([`Holds`], [`inherit`]), so a worker re-enters a latch its parent holds
//! shared instead of queueing behind a writer that waits for the parent, and refuses one its
//! parent holds exclusively.

use std::cell::{Cell, RefCell};

/// A latch's identity: the pool it belongs to, and which latch in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LatchKey {
    pub(crate) pool: usize,
    pub(crate) kind: LatchKind,
    pub(crate) index: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LatchKind {
    /// A frame's latch.
    Frame,
    /// A page id's latch (every layer): in-place stores hold it exclusively.
    Page,
}

/// Holds kept inline before the list spills into [`SPILLED`]: a thread rarely holds more at once
/// (a guard or two, a scan's page, a descent's two nodes).
const INLINE: usize = 8;

/// A thread's first [`INLINE`] holds, each packed into one `u128` ([`pack`]): cells of plain
/// integers, so the thread-local needs no destructor and its access no liveness check, and a
/// push or pop is a few loads and stores (SE2's hit takes and releases one per page read; with
/// the `Vec` in a `RefCell` this replaced, the bookkeeping was 6–7 ns of a 33 ns hit, measured
/// by leaving it out, and this layout took back 4–5 of them).
struct Inline {
    len: Cell<usize>,
    slots: [Cell<u128>; INLINE],
}

thread_local! {
    /// This thread's own holds, the first [`INLINE`] of them.
    static HELD: Inline = const {
        Inline { len: Cell::new(0), slots: [const { Cell::new(0) }; INLINE] }
    };
    /// This thread's own holds past the inline ones: (latch, exclusive), one entry per hold.
    static SPILLED: RefCell<Vec<(LatchKey, bool)>> = const { RefCell::new(Vec::new()) };
    /// Holds of the thread this one works for (a parallel scan's parent), adopted for a while.
    static INHERITED: RefCell<Vec<(LatchKey, bool)>> = const { RefCell::new(Vec::new()) };
}

/// Whether this thread's hold lists can still be used: `false` while the thread's
/// thread-locals are being torn down (a value dropped from another thread-local's destructor
/// must not start work that takes latches then: it would panic, and a panic there aborts).
pub fn thread_state_alive() -> bool {
    SPILLED.try_with(|_| ()).is_ok() && INHERITED.try_with(|_| ()).is_ok()
}

/// One hold as one integer: the pool from bit 66 up, the kind at 65, exclusive at 64, the index
/// below (pool ids are counters from 1, one per pool built: far below 2^62).
fn pack((key, exclusive): (LatchKey, bool)) -> u128 {
    debug_assert!(key.pool < 1 << 62, "pool id {} does not fit the packing", key.pool);
    let kind = match key.kind {
        LatchKind::Frame => 0u128,
        LatchKind::Page => 1,
    };
    (key.pool as u128) << 66 | kind << 65 | u128::from(exclusive) << 64 | u128::from(key.index)
}

fn unpack(p: u128) -> (LatchKey, bool) {
    let kind = if p >> 65 & 1 == 0 { LatchKind::Frame } else { LatchKind::Page };
    let key = LatchKey { pool: (p >> 66) as usize, kind, index: p as u64 };
    (key, p >> 64 & 1 == 1)
}

impl Inline {
    /// The holds kept inline, unpacked.
    fn holds(&self) -> impl Iterator<Item = (LatchKey, bool)> + '_ {
        self.slots[..self.len.get()].iter().map(|c| unpack(c.get()))
    }
}

fn any(f: impl Fn(&(LatchKey, bool)) -> bool) -> bool {
    HELD.with(|h| h.holds().any(|e| f(&e)))
        || SPILLED.with(|h| h.borrow().iter().any(&f))
        || INHERITED.with(|h| h.borrow().iter().any(&f))
}

/// Whether the current thread may take `key` (`exclusive` or shared) without waiting on itself
/// (or on the thread whose holds it inherited).
pub(crate) fn may_take(key: LatchKey, exclusive: bool) -> bool {
    !any(|&(k, held_excl)| k == key && (exclusive || held_excl))
}

/// Whether the current thread (or the thread it works for) holds `key` shared: taking it again
/// must be recursive, never queued behind a waiting writer.
pub(crate) fn holds_shared(key: LatchKey) -> bool {
    any(|&(k, excl)| k == key && !excl)
}

/// Whether the current thread (or the thread it works for) holds any latch of pool `pool`.
pub(crate) fn holds_any_of(pool: usize) -> bool {
    any(|&(k, _)| k.pool == pool)
}

/// Records that the current thread took `key`.
#[inline]
pub(crate) fn push(key: LatchKey, exclusive: bool) {
    let inline = HELD.with(|h| {
        let n = h.len.get();
        let slot = h.slots.get(n)?;
        slot.set(pack((key, exclusive)));
        h.len.set(n + 1);
        Some(())
    });
    if inline.is_none() {
        SPILLED.with(|h| h.borrow_mut().push((key, exclusive)));
    }
}

/// Records that the current thread released one hold of `key`.
#[inline]
pub(crate) fn pop(key: LatchKey, exclusive: bool) {
    let p = pack((key, exclusive));
    let found = HELD.with(|h| {
        let n = h.len.get();
        let i = h.slots[..n].iter().rposition(|c| c.get() == p)?;
        // The last hold takes the released one's place (the list is a multiset).
        h.slots[i].set(h.slots[n - 1].get());
        h.len.set(n - 1);
        Some(())
    });
    if found.is_none() {
        SPILLED.with(|h| {
            let mut h = h.borrow_mut();
            if let Some(i) = h.iter().rposition(|&e| e == (key, exclusive)) {
                h.swap_remove(i);
            }
        });
    }
}

/// The latches a thread holds (its own and those it inherited), to hand to threads that work for
/// it while it waits for them.
#[derive(Clone, Debug, Default)]
pub struct Holds(Vec<(LatchKey, bool)>);

/// The calling thread's holds, own and inherited.
pub fn current_holds() -> Holds {
    let mut v: Vec<_> = HELD.with(|h| h.holds().collect());
    SPILLED.with(|h| v.extend(h.borrow().iter().copied()));
    INHERITED.with(|h| v.extend(h.borrow().iter().copied()));
    Holds(v)
}

/// Makes the calling thread act with `holds` (another thread's, which waits for this one) until
/// the returned guard is dropped. The caller must not outlive the holds' owner's wait.
pub fn inherit(holds: Holds) -> Inherited {
    INHERITED.with(|h| *h.borrow_mut() = holds.0);
    Inherited(std::marker::PhantomData)
}

/// Holds adopted by [`inherit`], given up on drop. Not `Send`: it belongs to the adopting thread.
#[derive(Debug)]
pub struct Inherited(std::marker::PhantomData<*const ()>);

impl Drop for Inherited {
    fn drop(&mut self) {
        INHERITED.with(|h| h.borrow_mut().clear());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_waits_on_oneself_are_refused() {
        let a = LatchKey { pool: 1, kind: LatchKind::Frame, index: 3 };
        let b = LatchKey { kind: LatchKind::Page, ..a };
        assert!(may_take(a, true));
        push(a, false);
        assert!(may_take(a, false), "shared twice: a self-join");
        assert!(!may_take(a, true), "exclusive over one's own shared hold");
        assert!(may_take(b, true), "another latch");
        push(a, false);
        pop(a, false);
        assert!(!may_take(a, true), "one shared hold left");
        pop(a, false);
        push(a, true);
        assert!(!may_take(a, false) && !may_take(a, true));
        // Another thread holds nothing.
        std::thread::spawn(move || assert!(may_take(a, true))).join().unwrap();
        pop(a, true);
        assert!(may_take(a, true));
    }

    #[test]
    fn holds_past_the_inline_ones_spill_and_are_all_seen() {
        let key = |i: u64| LatchKey {
            pool: 5 + (i as usize % 2),
            kind: if i.is_multiple_of(3) { LatchKind::Frame } else { LatchKind::Page },
            index: u64::MAX - i,
        };
        for i in 0..40 {
            let e = (key(i), i.is_multiple_of(4));
            assert_eq!(unpack(pack(e)), e, "{i}");
        }
        let n = INLINE as u64 * 3;
        for i in 0..n {
            push(key(i), i.is_multiple_of(4));
        }
        // One more hold of the first: a multiset.
        push(key(0), true);
        assert_eq!(current_holds().0.len(), n as usize + 1);
        for i in 0..n {
            assert!(!may_take(key(i), true), "{i}");
            assert_eq!(holds_shared(key(i)), !i.is_multiple_of(4), "{i}");
        }
        // Released in an order unlike the pushes': each release frees exactly one hold. Half
        // way, with inline slots free and holds still spilled, new holds go inline and are seen.
        let odd = (0..n).filter(|i| !i.is_multiple_of(2));
        let even = (0..n).filter(|i| i.is_multiple_of(2));
        for (step, i) in odd.chain(even).enumerate() {
            pop(key(i), i.is_multiple_of(4));
            assert_eq!(may_take(key(i), true), i != 0, "{i}");
            if step == n as usize / 2 {
                let fresh = |j: u64| LatchKey { pool: 9, kind: LatchKind::Page, index: j };
                (0..3).for_each(|j| push(fresh(j), false));
                assert!((0..3).all(|j| holds_shared(fresh(j))));
                // The even keys are all still held, spilled ones included.
                assert!((0..n).filter(|i| i.is_multiple_of(2)).all(|i| !may_take(key(i), true)));
                (0..3).for_each(|j| pop(fresh(j), false));
                assert!((0..3).all(|j| may_take(fresh(j), true)));
            }
        }
        assert!(!may_take(key(0), false), "the second hold of key 0 is still there");
        pop(key(0), true);
        assert!(current_holds().0.is_empty());
        for i in 0..n {
            assert!(may_take(key(i), true), "{i}");
        }
    }

    #[test]
    fn a_worker_acts_with_its_parents_holds() {
        let shared = LatchKey { pool: 2, kind: LatchKind::Page, index: 7 };
        let excl = LatchKey { pool: 2, kind: LatchKind::Frame, index: 1 };
        push(shared, false);
        push(excl, true);
        let holds = current_holds();
        std::thread::spawn(move || {
            assert!(!holds_shared(shared) && may_take(excl, false), "nothing held yet");
            let g = inherit(holds);
            assert!(holds_shared(shared), "re-enters the parent's shared latch");
            assert!(!may_take(shared, true), "refuses exclusive over the parent's shared hold");
            assert!(!may_take(excl, false), "refuses the parent's exclusive latch");
            drop(g);
            assert!(!holds_shared(shared) && may_take(excl, true), "given up with the guard");
        })
        .join()
        .unwrap();
        pop(excl, true);
        pop(shared, false);
    }
}
