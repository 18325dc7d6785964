//! Which latches the current thread holds, so that a request that would wait on the thread itself
//! is a typed error ([`BufferError::LatchHeld`](crate::BufferError::LatchHeld)) instead of a hang.
//!
//! Shared latches are taken recursively (a waiting writer does not block a thread that already
//! reads), so a self-join that takes the same page twice never deadlocks against a waiting
//! write-back. The two cases left are caught here: asking for a latch exclusively while holding it
//! in any mode, and asking for it shared while holding it exclusively.

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
    /// The latch of a page read in place from the mapping (SE2).
    Mapped,
}

thread_local! {
    static HELD: RefCell<Vec<(LatchKey, bool)>> = const { RefCell::new(Vec::new()) };
}

/// Whether the current thread may take `key` (`exclusive` or shared) without waiting on itself.
pub(crate) fn may_take(key: LatchKey, exclusive: bool) -> bool {
    HELD.with(|h| h.borrow().iter().all(|&(k, held_excl)| k != key || !(exclusive || held_excl)))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_waits_on_oneself_are_refused() {
        let a = LatchKey { pool: 1, kind: LatchKind::Frame, index: 3 };
        let b = LatchKey { kind: LatchKind::Mapped, ..a };
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
}
