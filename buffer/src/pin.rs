//! A frame's pin count and claim bit: the protocol that lets lookups pin frames without a lock
//! while eviction takes frames for other pages.
//!
//! ```text
//! state = CLAIMED bit | pin count
//!
//!   unpinned (0) --try_claim (CAS 0 -> CLAIMED)--> claimed (evictor owns the frame)
//!   claimed --claim_to_pin--> pinned once by the claimer      (reuse for a new page)
//!   claimed --release_claim--> unpinned                       (eviction gave up)
//!   n --try_pin (+1)--> n + 1                                 (lookup)
//!   CLAIMED | n --try_pin (+1, sees CLAIMED, -1)--> CLAIMED | n   (lookup backs off)
//! ```
//!
//! Every transition is a read-modify-write, never a plain store, so a lookup's transient
//! increment and decrement on a claimed frame can interleave with any claimer transition without
//! losing a count. A pinner re-checks the frame's page id after pinning: the frame may have been
//! reused between its lookup and its pin.

#[cfg(feature = "shuttle")]
use shuttle::sync::atomic::{AtomicU32, Ordering};
#[cfg(not(feature = "shuttle"))]
use std::sync::atomic::{AtomicU32, Ordering};

const CLAIMED: u32 = 1 << 31;

/// Pin count plus claim bit of one frame.
#[derive(Debug, Default)]
pub struct PinState(AtomicU32);

impl PinState {
    /// An unpinned, unclaimed frame.
    pub fn new() -> Self {
        Self(AtomicU32::new(0))
    }

    /// Pins the frame unless a claimer owns it; `false` means back off and look up again.
    pub fn try_pin(&self) -> bool {
        let prev = self.0.fetch_add(1, Ordering::AcqRel);
        if prev & CLAIMED != 0 {
            self.0.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        true
    }

    /// Drops one pin.
    pub fn unpin(&self) {
        let prev = self.0.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(prev & !CLAIMED > 0, "unpin of an unpinned frame");
    }

    /// Takes the frame for exclusive use if nobody pins or claims it.
    pub fn try_claim(&self) -> bool {
        self.0.compare_exchange(0, CLAIMED, Ordering::AcqRel, Ordering::Relaxed).is_ok()
    }

    /// Turns the caller's claim into one pin held by the caller, opening the frame to lookups.
    pub fn claim_to_pin(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
        self.0.fetch_and(!CLAIMED, Ordering::AcqRel);
    }

    /// Gives up the caller's claim, leaving the frame unpinned.
    pub fn release_claim(&self) {
        self.0.fetch_and(!CLAIMED, Ordering::AcqRel);
    }

    /// Pins held right now (a snapshot).
    pub fn pins(&self) -> u32 {
        self.0.load(Ordering::Acquire) & !CLAIMED
    }

    /// Whether a claimer owns the frame right now (a snapshot).
    pub fn is_claimed(&self) -> bool {
        self.0.load(Ordering::Acquire) & CLAIMED != 0
    }
}

// Built against std's atomics: with the `shuttle` feature `PinState` runs only on shuttle's
// scheduler (`tests/pin_protocol_shuttle.rs`).
#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering as O};
    use std::thread;

    use super::PinState;

    const ITERS: usize = if cfg!(miri) { 50 } else { 10_000 };

    #[test]
    fn transitions() {
        let s = PinState::new();
        assert!(s.try_pin() && s.try_pin());
        assert_eq!(s.pins(), 2);
        assert!(!s.try_claim(), "a pinned frame cannot be claimed");
        s.unpin();
        s.unpin();
        assert!(s.try_claim());
        assert!(s.is_claimed() && !s.try_claim());
        assert!(!s.try_pin(), "a lookup backs off a claimed frame");
        assert_eq!(s.pins(), 0, "and leaves no count behind");
        s.claim_to_pin();
        assert!(!s.is_claimed());
        assert_eq!(s.pins(), 1);
        s.unpin();
        assert!(s.try_claim());
        s.release_claim();
        assert!(!s.is_claimed());
        assert_eq!(s.pins(), 0);
    }

    /// Two pinners and a claimer race on one frame. While the claimer holds its claim no pinner
    /// is inside; every pin is dropped; at the end the frame is unpinned and unclaimed.
    #[test]
    fn a_claim_excludes_pinners() {
        let s = Arc::new(PinState::new());
        // Pinners between a successful `try_pin` and their `unpin`.
        let inside = Arc::new(AtomicUsize::new(0));
        let pinners: Vec<_> = (0..2)
            .map(|_| {
                let (s, inside) = (Arc::clone(&s), Arc::clone(&inside));
                thread::spawn(move || {
                    let mut pinned = 0;
                    for _ in 0..ITERS {
                        if s.try_pin() {
                            inside.fetch_add(1, O::Relaxed);
                            pinned += 1;
                            inside.fetch_sub(1, O::Relaxed);
                            s.unpin();
                        }
                    }
                    pinned
                })
            })
            .collect();
        let claimer = {
            let (s, inside) = (Arc::clone(&s), Arc::clone(&inside));
            thread::spawn(move || {
                let mut claims = 0;
                for i in 0..ITERS {
                    if s.try_claim() {
                        assert_eq!(inside.load(O::Relaxed), 0, "a pinner inside a claim");
                        claims += 1;
                        // Half the claims are given up (eviction skipped), half reused.
                        if i % 2 == 0 {
                            s.release_claim();
                        } else {
                            s.claim_to_pin();
                            s.unpin();
                        }
                    }
                }
                claims
            })
        };
        let pinned: usize = pinners.into_iter().map(|t| t.join().unwrap()).sum();
        let claims = claimer.join().unwrap();
        assert!(pinned + claims > 0);
        assert_eq!((s.pins(), s.is_claimed()), (0, false));
    }
}
