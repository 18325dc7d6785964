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
