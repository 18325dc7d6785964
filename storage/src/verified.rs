//! Which pages' bytes in the file have been checked since open, so that each page is checked the
//! first time it is read and never again (SE2's zero-copy reads must not pay a CRC per fetch).
//!
//! "Verified" means that **the bytes the file holds now** were checked (or were stored sealed by
//! this handle), not that some copy of the page once was. A check and a store of the same page
//! may run at once on different threads, so each page has one word, changed only by
//! read-modify-writes:
//!
//! ```text
//!  63                                16 15                       1   0
//! +------------------------------------+--------------------------+---+
//! | generation                         | stores in flight         | V |
//! +------------------------------------+--------------------------+---+
//! ```
//!
//! - A store into the page (a sealed write, or a restore of bytes as given) **begins** before its
//!   first byte reaches the file: generation + 1, in flight + 1, V cleared. It **ends** after its
//!   last byte: generation + 1, in flight − 1, and V set only if it stored a sealed page and the
//!   word is still the one its beginning left (no other store began or ended meanwhile).
//! - A verifier takes the word ([`Stamp`]) **before** it reads the page's bytes, checks what it
//!   read, and sets V by compare-and-set from that word, and only if no store was in flight
//!   then. Any store that began or ended between its stamp and its set changed the word, so the
//!   set fails and the page stays unverified (checked again at its next read): V is never set
//!   for bytes nobody checked.
//! - Bytes replaced outside the layer (abort, recovery) bump the generation and clear V.
//!
//! Reading V is one load (SE2's hit). A generation of 48 bits cannot come round to the same
//! word inside one verifier's window. Words live in chunks allocated on first use, so a
//! reservation for a very large file costs nothing until its pages are read or written (a
//! chunk is 256 KiB, for 32,768 pages).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

const PAGES_PER_CHUNK: u64 = 1 << 15;

/// The page's bytes were checked (or stored sealed by this handle) and are the file's now.
const VERIFIED: u64 = 1;
/// One store in flight (bits 1..16).
const IN_FLIGHT_ONE: u64 = 1 << 1;
const IN_FLIGHT_MASK: u64 = 0x7fff << 1;
/// One generation (bits 16..64; it wraps at the top).
const GENERATION_ONE: u64 = 1 << 16;

const _: () = assert!(IN_FLIGHT_MASK & VERIFIED == 0);
const _: () = assert!(IN_FLIGHT_MASK + IN_FLIGHT_ONE == GENERATION_ONE);

/// A page's word, taken before its bytes are read (by a verifier) or stored (by a store).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp(u64);

impl Stamp {
    /// Whether the page was verified when the stamp was taken.
    #[cfg(any(feature = "pread", feature = "se1", feature = "se2"))]
    pub(crate) fn is_verified(self) -> bool {
        self.0 & VERIFIED != 0
    }

    fn in_flight(self) -> u64 {
        (self.0 & IN_FLIGHT_MASK) / IN_FLIGHT_ONE
    }
}

/// Per page below a fixed maximum: verified or not, and whether it changed since a [`Stamp`].
#[derive(Debug)]
pub(crate) struct VerifiedPages {
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
}

impl VerifiedPages {
    /// A set able to hold page ids below `max_pages`.
    pub(crate) fn new(max_pages: u64) -> Self {
        let n = max_pages.div_ceil(PAGES_PER_CHUNK).max(1) as usize;
        Self { chunks: std::iter::repeat_with(OnceLock::new).take(n).collect() }
    }

    fn locate(page: u64) -> (usize, usize) {
        ((page / PAGES_PER_CHUNK) as usize, (page % PAGES_PER_CHUNK) as usize)
    }

    /// Page `page`'s word if its chunk exists; `None` for a chunk never used (every word 0).
    fn word(&self, page: u64) -> Option<&AtomicU64> {
        let (c, i) = Self::locate(page);
        self.chunks.get(c).and_then(OnceLock::get).map(|words| &words[i])
    }

    /// Page `page`'s word, allocating its chunk; `None` past the maximum.
    fn word_or_alloc(&self, page: u64) -> Option<&AtomicU64> {
        let (c, i) = Self::locate(page);
        let words = self.chunks.get(c)?.get_or_init(|| {
            std::iter::repeat_with(|| AtomicU64::new(0)).take(PAGES_PER_CHUNK as usize).collect()
        });
        Some(&words[i])
    }

    /// Whether `page` is verified. Pages past the maximum never are.
    #[inline]
    pub(crate) fn contains(&self, page: u64) -> bool {
        self.word(page).is_some_and(|w| w.load(Ordering::Acquire) & VERIFIED != 0)
    }

    /// `page`'s word now: a verifier takes it before it reads the page's bytes.
    pub(crate) fn stamp(&self, page: u64) -> Stamp {
        // A chunk not yet allocated reads as 0: a store or a forget allocates it before it
        // changes a word, so a set from this stamp fails after either.
        Stamp(self.word(page).map_or(0, |w| w.load(Ordering::Acquire)))
    }

    /// Records that the bytes read after `before` was taken are checked: sets V if no store was
    /// in flight at `before` and none began or ended since. Returns whether V is set now.
    pub(crate) fn insert_if_unchanged(&self, page: u64, before: Stamp) -> bool {
        if before.in_flight() > 0 {
            return false;
        }
        let Some(w) = self.word_or_alloc(page) else { return false };
        match w.compare_exchange(before.0, before.0 | VERIFIED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            // Another verifier of the same bytes set it first.
            Err(now) => now == before.0 | VERIFIED,
        }
    }

    /// Forgets `page` (its bytes were replaced behind the handle's back, by recovery or abort):
    /// a verifier that read it before cannot set V from its stamp.
    pub(crate) fn remove(&self, page: u64) {
        if let Some(w) = self.word_or_alloc(page) {
            update(w, |x| (x & !VERIFIED).wrapping_add(GENERATION_ONE));
        }
    }
}

/// Stores: only the layers store (a build with none, the log's, has no use for them).
#[cfg(any(feature = "pread", feature = "se1", feature = "se2"))]
impl VerifiedPages {
    /// A store into `page` begins (before its first byte reaches the file): returns the word it
    /// leaves, for [`Self::end_store`].
    pub(crate) fn begin_store(&self, page: u64) -> Stamp {
        let Some(w) = self.word_or_alloc(page) else { return Stamp(IN_FLIGHT_ONE) };
        let next = |x: u64| {
            debug_assert!(x & IN_FLIGHT_MASK != IN_FLIGHT_MASK, "stores in flight overflow");
            (x & !VERIFIED).wrapping_add(IN_FLIGHT_ONE).wrapping_add(GENERATION_ONE)
        };
        Stamp(next(update(w, next)))
    }

    /// The store that began with `begun` ended (after its last byte): `sealed` if it succeeded
    /// in storing a page sealed for its id (whole, or the lines in which it differs from the
    /// file's), whose checksum is then its bytes'. V is set only then, and only if nothing else
    /// touched the word since the store began.
    pub(crate) fn end_store(&self, page: u64, begun: Stamp, sealed: bool) {
        let Some(w) = self.word_or_alloc(page) else { return };
        let ended = |x: u64| {
            debug_assert!(x & IN_FLIGHT_MASK != 0, "a store ends that never began");
            (x & !VERIFIED).wrapping_sub(IN_FLIGHT_ONE).wrapping_add(GENERATION_ONE)
        };
        if sealed
            && w.compare_exchange(
                begun.0,
                ended(begun.0) | VERIFIED,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
        {
            return;
        }
        update(w, ended);
    }
}

/// Replaces `w` by `f(w)` atomically; returns the value it replaced.
fn update(w: &AtomicU64, f: impl Fn(u64) -> u64) -> u64 {
    let mut cur = w.load(Ordering::Acquire);
    loop {
        match w.compare_exchange_weak(cur, f(cur), Ordering::AcqRel, Ordering::Acquire) {
            Ok(prev) => return prev,
            Err(now) => cur = now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A check whose page is stamped, read, and then set, with nothing in between.
    fn check(v: &VerifiedPages, p: u64) -> bool {
        let s = v.stamp(p);
        v.insert_if_unchanged(p, s)
    }

    #[test]
    fn a_check_with_nothing_between_is_recorded_and_forgotten() {
        let v = VerifiedPages::new(3 * PAGES_PER_CHUNK);
        for p in [0, 1, 63, 64, PAGES_PER_CHUNK - 1, PAGES_PER_CHUNK, 3 * PAGES_PER_CHUNK - 1] {
            assert!(!v.contains(p));
            assert!(check(&v, p));
            assert!(v.contains(p) && v.stamp(p).is_verified());
        }
        v.remove(64);
        assert!(!v.contains(64) && v.contains(63));
        // Past the maximum: never recorded, never reported.
        assert!(!check(&v, 10 * PAGES_PER_CHUNK));
        assert!(!v.contains(10 * PAGES_PER_CHUNK));
    }

    #[test]
    fn a_check_that_a_store_or_a_forget_overlaps_is_not_recorded() {
        let v = VerifiedPages::new(PAGES_PER_CHUNK);
        // A whole store between the stamp and the set (sealed or not), a forget, and a store
        // in flight at the stamp: none may leave the page verified by the check.
        for sealed in [false, true] {
            let s = v.stamp(5);
            let b = v.begin_store(5);
            v.end_store(5, b, sealed);
            assert_eq!(v.contains(5), sealed, "a sealed store alone is recorded");
            v.remove(5);
            assert!(!v.insert_if_unchanged(5, s) && !v.contains(5), "sealed: {sealed}");
        }
        let s = v.stamp(5);
        v.remove(5);
        assert!(!v.insert_if_unchanged(5, s) && !v.contains(5));
        let b = v.begin_store(5);
        let s = v.stamp(5);
        assert!(!v.insert_if_unchanged(5, s), "a store in flight at the stamp");
        v.end_store(5, b, false);
        assert!(!v.contains(5));
        assert!(check(&v, 5), "checked again with nothing between");
    }

    #[test]
    fn a_store_is_recorded_only_if_no_other_overlaps_it() {
        let v = VerifiedPages::new(PAGES_PER_CHUNK);
        // A restore inside a sealed store's window.
        let sealed = v.begin_store(9);
        let restore = v.begin_store(9);
        v.end_store(9, restore, false);
        v.end_store(9, sealed, true);
        assert!(!v.contains(9));
        // Two sealed stores overlapping: neither vouches for the other's bytes.
        let a = v.begin_store(9);
        let b = v.begin_store(9);
        v.end_store(9, a, true);
        assert!(!v.contains(9));
        v.end_store(9, b, true);
        assert!(!v.contains(9));
        // A set from a stamp taken before a begin fails once the store has begun.
        let s = v.stamp(9);
        let c = v.begin_store(9);
        assert!(!v.insert_if_unchanged(9, s));
        v.end_store(9, c, true);
        assert!(v.contains(9), "alone, a sealed store is recorded");
        assert_eq!(v.stamp(9).in_flight(), 0);
    }
}
