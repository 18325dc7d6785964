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

use std::cell::RefCell;

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

thread_local! {
    /// This thread's own holds: (latch, exclusive), one entry per hold.
    static HELD: RefCell<Vec<(LatchKey, bool)>> = const { RefCell::new(Vec::new()) };
    /// Holds of the thread this one works for (a parallel scan's parent), adopted for a while.
    static INHERITED: RefCell<Vec<(LatchKey, bool)>> = const { RefCell::new(Vec::new()) };
}

fn any(f: impl Fn(&(LatchKey, bool)) -> bool) -> bool {
    HELD.with(|h| h.borrow().iter().any(&f)) || INHERITED.with(|h| h.borrow().iter().any(&f))
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

/// Records that the current thread took `key`.
pub(crate) fn push(key: LatchKey, exclusive: bool) {
    HELD.with(|h| h.borrow_mut().push((key, exclusive)));
}

/// Records that the current thread released one hold of `key`.
pub(crate) fn pop(key: LatchKey, exclusive: bool) {
    HELD.with(|h| {
        let mut h = h.borrow_mut();
        if let Some(i) = h.iter().rposition(|&e| e == (key, exclusive)) {
            h.swap_remove(i);
        }
    });
}

/// The latches a thread holds (its own and those it inherited), to hand to threads that work for
/// it while it waits for them.
#[derive(Clone, Debug, Default)]
pub struct Holds(Vec<(LatchKey, bool)>);

/// The calling thread's holds, own and inherited.
pub fn current_holds() -> Holds {
    let mut v = HELD.with(|h| h.borrow().clone());
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
