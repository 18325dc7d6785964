//! A guard-less reader-writer latch (parking_lot's raw lock): guards in `pool.rs` own the release.

use parking_lot::RawRwLock;
use parking_lot::lock_api::{RawRwLock as _, RawRwLockRecursive as _};

/// A reader-writer latch released explicitly by its holder.
pub(crate) struct Latch(RawRwLock);

impl std::fmt::Debug for Latch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Latch")
    }
}

impl Latch {
    pub(crate) const fn new() -> Self {
        Latch(RawRwLock::INIT)
    }

    /// Shared, recursively: granted even while a writer waits, so a thread that already reads can
    /// read again (a self-join) without deadlocking behind that writer.
    #[inline]
    pub(crate) fn lock_shared(&self) {
        self.0.lock_shared_recursive();
    }

    /// Shared, fairly: queues behind a waiting writer, so a stream of readers cannot starve it.
    /// Only for a thread that does not hold the latch already (it would wait for itself).
    #[inline]
    pub(crate) fn lock_shared_fair(&self) {
        self.0.lock_shared();
    }

    /// Shared if it can be had at once (no holder or waiter in exclusive mode).
    #[inline]
    pub(crate) fn try_lock_shared(&self) -> bool {
        self.0.try_lock_shared()
    }

    #[inline]
    pub(crate) fn lock_exclusive(&self) {
        self.0.lock_exclusive();
    }

    #[inline]
    pub(crate) fn try_lock_exclusive(&self) -> bool {
        self.0.try_lock_exclusive()
    }

    /// # Safety
    /// The caller holds the latch shared.
    #[inline]
    pub(crate) unsafe fn unlock_shared(&self) {
        // SAFETY: forwarded from the caller.
        unsafe { self.0.unlock_shared() }
    }

    /// # Safety
    /// The caller holds the latch exclusively.
    #[inline]
    pub(crate) unsafe fn unlock_exclusive(&self) {
        // SAFETY: forwarded from the caller.
        unsafe { self.0.unlock_exclusive() }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::UnsafeCell;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Barrier};
    use std::thread;

    use super::Latch;

    const ITERS: usize = if cfg!(miri) { 50 } else { 10_000 };

    /// Words written only under the latch exclusively and read only under it shared, as a frame's
    /// bytes are: if the latch ever let a writer in beside anyone else, Miri reports a data race
    /// and a reader sees a torn row.
    struct Guarded {
        latch: Latch,
        /// Set while a writer is inside: a second writer finding it set means no exclusion.
        writing: AtomicBool,
        words: UnsafeCell<[u64; 8]>,
    }

    // SAFETY: `words` is written only with `latch` held exclusively and read only with it held.
    unsafe impl Sync for Guarded {}

    impl Guarded {
        fn new() -> Self {
            Guarded {
                latch: Latch::new(),
                writing: AtomicBool::new(false),
                words: UnsafeCell::new([0; 8]),
            }
        }

        /// Adds one to every word under the exclusive latch.
        fn bump(&self) {
            self.latch.lock_exclusive();
            assert!(!self.writing.swap(true, Ordering::Relaxed), "two writers inside");
            // SAFETY: the latch is held exclusively, so nobody else reads or writes the words.
            let w = unsafe { &mut *self.words.get() };
            for x in w.iter_mut() {
                *x += 1;
            }
            self.writing.store(false, Ordering::Relaxed);
            // SAFETY: locked exclusively above by this thread.
            unsafe { self.latch.unlock_exclusive() };
        }

        /// The words, read under the shared latch; every word must be equal.
        fn read(&self) -> u64 {
            self.latch.lock_shared();
            // SAFETY: the latch is held shared, so no writer is inside.
            let w = unsafe { *self.words.get() };
            // SAFETY: locked shared above by this thread.
            unsafe { self.latch.unlock_shared() };
            assert!(w.iter().all(|&x| x == w[0]), "torn read: {w:?}");
            w[0]
        }
    }

    #[test]
    fn writers_exclude_each_other() {
        let g = Arc::new(Guarded::new());
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let g = Arc::clone(&g);
                thread::spawn(move || (0..ITERS).for_each(|_| g.bump()))
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(g.read(), 3 * ITERS as u64);
    }

    #[test]
    fn readers_never_see_a_writer_half_done() {
        let g = Arc::new(Guarded::new());
        let writer = {
            let g = Arc::clone(&g);
            thread::spawn(move || (0..ITERS).for_each(|_| g.bump()))
        };
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let g = Arc::clone(&g);
                thread::spawn(move || {
                    let mut last = 0;
                    for _ in 0..ITERS {
                        let now = g.read();
                        assert!(now >= last, "went back from {last} to {now}");
                        last = now;
                    }
                })
            })
            .collect();
        writer.join().unwrap();
        readers.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(g.read(), ITERS as u64);
    }

    #[test]
    fn shared_is_recursive_even_with_a_writer_waiting() {
        let g = Arc::new(Guarded::new());
        g.latch.lock_shared();
        let started = Arc::new(Barrier::new(2));
        let writer = {
            let (g, started) = (Arc::clone(&g), Arc::clone(&started));
            thread::spawn(move || {
                started.wait();
                g.bump();
            })
        };
        started.wait();
        // The writer is queued (or about to be): a second shared hold must still be granted.
        g.latch.lock_shared();
        // SAFETY: both shared holds were taken above by this thread; the words are only read.
        let w = unsafe { *g.words.get() };
        assert_eq!(w, [0; 8], "the writer got in while the latch was held shared");
        // SAFETY: two shared holds taken above by this thread, released once each.
        unsafe {
            g.latch.unlock_shared();
            g.latch.unlock_shared();
        }
        writer.join().unwrap();
        assert_eq!(g.read(), 1);
    }

    #[test]
    fn try_locks_fail_while_the_other_mode_is_held() {
        let g = Guarded::new();
        assert!(g.latch.try_lock_exclusive());
        assert!(!g.latch.try_lock_exclusive(), "exclusive excludes exclusive");
        assert!(!g.latch.try_lock_shared(), "exclusive excludes shared");
        // SAFETY: the latch is held exclusively by this thread.
        unsafe { g.latch.unlock_exclusive() };
        assert!(g.latch.try_lock_shared());
        assert!(g.latch.try_lock_shared(), "shared admits shared");
        assert!(!g.latch.try_lock_exclusive(), "a shared hold keeps writers out");
        // SAFETY: two shared holds taken above by this thread, released once each.
        unsafe {
            g.latch.unlock_shared();
            g.latch.unlock_shared();
        }
        assert!(g.latch.try_lock_exclusive());
        // SAFETY: taken just above.
        unsafe { g.latch.unlock_exclusive() };
    }
}
