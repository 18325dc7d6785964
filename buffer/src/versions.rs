//! Old versions of pages, kept in memory for readers whose snapshot predates a change (DESIGN.md
//! R2, R4): `(page, c) → bytes`, the before-image the writer of commit `c` logged before its
//! first in-place store of the page, which is the page as of commit `c − 1`.
//!
//! A version `(P, c)` is needed by readers with snapshot `s < c`. [`Versions::collect`] frees
//! those no live reader can need, then, past the byte limit, whole commits in commit order,
//! raising the **horizon**: every version with `c ≤ horizon` is gone, and a reader with
//! `s < horizon` that needs one is told its snapshot is too old rather than given other bytes.
//! The running writer's versions (`c` = the pending commit) are never collected: abort drops
//! them ([`Versions::drop_commit`]), the commit makes them ordinary.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::idhash::IdMap;
use crate::sync::Mutex;

/// A page's bytes held in memory: a before-image kept as a version, or a reader's private copy.
/// Cheap to clone (an `Arc`); immutable.
#[derive(Clone, Debug)]
pub struct PageImage {
    bytes: Arc<[u8]>,
    offset: usize,
    len: usize,
    /// Made from an [`ImageBuffer`]: its buffer may be handed out again once freed.
    spare: bool,
}

impl PageImage {
    /// The page is `bytes[offset..]` (a log record's buffer, say, with the record's header
    /// before the page: no copy is made).
    ///
    /// # Panics
    /// If `offset` is past the end of `bytes` (a caller's bug, not data).
    pub fn new(bytes: Arc<[u8]>, offset: usize) -> Self {
        assert!(offset <= bytes.len(), "a page image's offset lies inside its buffer");
        Self { len: bytes.len() - offset, bytes, offset, spare: false }
    }

    /// The page's bytes.
    pub fn page(&self) -> &[u8] {
        &self.bytes[self.offset..self.offset + self.len]
    }

    /// A buffer of `len` zero bytes to fill and then wrap with [`PageImage::new`]: allocated
    /// zeroed in one step (collecting `repeat_n(0, len)` stores byte by byte, and was a third
    /// of a single-row commit's time).
    pub fn zeroed(len: usize) -> Arc<[u8]> {
        let bytes = Arc::<[u8]>::new_zeroed_slice(len);
        // SAFETY: the allocation is zeroed, and zero is a valid `u8`: every element is
        // initialised.
        unsafe { bytes.assume_init() }
    }

    /// Bytes of memory this image holds (its whole buffer).
    pub fn held_bytes(&self) -> u64 {
        self.bytes.len() as u64
    }
}

/// A buffer of one page whose first byte starts a cache line, that no one else holds: to fill
/// with a page's old bytes ([`Versions::buffer`]) and keep as a version
/// ([`ImageBuffer::into_image`]). Aligned because the write-back copies a page into it and
/// compares the page with it: both ran about a third slower into a buffer 16 bytes off a line
/// (an `Arc<[u8]>`'s bytes start 16 bytes into its allocation), 3% of a single-row commit.
#[derive(Debug)]
pub struct ImageBuffer(PageImage);

/// The alignment of an [`ImageBuffer`]'s page: a cache line.
const ALIGN: usize = 64;

impl ImageBuffer {
    /// A new buffer of `len` bytes (zeroed).
    pub fn new(len: usize) -> Self {
        // A line starts within the first ALIGN - 1 bytes, wherever the allocation lies.
        let bytes = PageImage::zeroed(len + ALIGN - 1);
        let offset = (ALIGN - bytes.as_ptr() as usize % ALIGN) % ALIGN;
        Self(PageImage { bytes, offset, len, spare: true })
    }

    /// The page's bytes, to overwrite (what they hold is whatever the buffer last held).
    pub fn page_mut(&mut self) -> &mut [u8] {
        let PageImage { bytes, offset, len, .. } = &mut self.0;
        let bytes = Arc::get_mut(bytes).expect("an image buffer has one owner");
        &mut bytes[*offset..*offset + *len]
    }

    /// The page's bytes.
    pub fn page(&self) -> &[u8] {
        self.0.page()
    }

    /// The buffer as an image, to keep as a version.
    pub fn into_image(self) -> PageImage {
        self.0
    }
}

/// What [`Versions`] holds right now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VersionStats {
    /// Versions held.
    pub versions: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Every version of a commit at or below this was freed by the byte limit (0: none).
    pub horizon: u64,
}

/// One commit's versions.
#[derive(Debug, Default)]
struct CommitVersions {
    pages: Vec<u64>,
    bytes: u64,
}

#[derive(Debug, Default)]
struct Inner {
    /// Each page's versions, by ascending commit.
    pages: IdMap<u64, Vec<(u64, PageImage)>>,
    /// Each commit's pages, to free a commit's versions together.
    commits: BTreeMap<u64, CommitVersions>,
    bytes: u64,
    horizon: u64,
    limit: u64,
}

impl Inner {
    /// Frees every version of commit `c`, moving their images to `freed`.
    fn free_commit(&mut self, c: u64, freed: &mut Vec<PageImage>) {
        let Some(cv) = self.commits.remove(&c) else { return };
        for page in cv.pages {
            if let Some(v) = self.pages.get_mut(&page) {
                if let Some(at) = v.iter().position(|(vc, _)| *vc == c) {
                    freed.push(v.remove(at).1);
                }
                if v.is_empty() {
                    self.pages.remove(&page);
                }
            }
        }
        self.bytes -= cv.bytes;
    }
}

/// Buffers of freed versions kept for the write-back hook to fill again
/// ([`Versions::buffer`]), up to this many bytes (and at least [`SPARE_MIN`] buffers): a commit
/// allocated a buffer for every page it wrote back and freed them all at the next, and a
/// transaction of a thousand 8 KiB pages spent a tenth of its time in the allocator and in the
/// kernel zeroing the memory it had just given back. They are not versions, so the byte limit
/// does not count them: what they hold while the database is idle is at most this.
const SPARE_BYTES: usize = 8 << 20;
/// Buffers kept whatever their size (16 pages: 1 MiB with 64 KiB pages).
const SPARE_MIN: usize = 16;

/// The version store (see the module's notes).
#[derive(Debug)]
pub struct Versions {
    inner: Mutex<Inner>,
    /// Buffers of freed versions that nothing else holds.
    spare: Mutex<Vec<ImageBuffer>>,
}

impl Default for Versions {
    fn default() -> Self {
        Self::new(u64::MAX)
    }
}

/// Why a snapshot finds no version of a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoVersion {
    /// Freed by the byte limit: the snapshot is below the horizon.
    TooOld {
        /// The horizon when the version was looked for.
        horizon: u64,
    },
    /// Never kept, though the snapshot is at or above the horizon: a bug, never a read of other
    /// bytes.
    Missing,
}

impl Versions {
    /// An empty store whose committed versions are bounded by `limit_bytes`.
    pub fn new(limit_bytes: u64) -> Self {
        Self {
            inner: Mutex::new(Inner { limit: limit_bytes, ..Inner::default() }),
            spare: Mutex::new(Vec::new()),
        }
    }

    /// A buffer of `len` bytes that no one else holds, for a page's old bytes that may become a
    /// version: the buffer of a version freed since, or a new one (zeroed). Its bytes are
    /// whatever it held: the caller overwrites them.
    pub fn buffer(&self, len: usize) -> ImageBuffer {
        let mut spare = self.spare.lock();
        while let Some(b) = spare.pop() {
            if b.0.len == len {
                return b;
            }
        }
        drop(spare);
        ImageBuffer::new(len)
    }

    /// Keeps the unshared buffers of `freed` that came from [`Self::buffer`] for it to hand out
    /// again, up to a few; drops the rest. A buffer a reader still holds (an `Arc` clone) is
    /// left to it.
    fn recycle(&self, freed: Vec<PageImage>) {
        if freed.is_empty() {
            return;
        }
        let mut spare = self.spare.lock();
        for mut image in freed {
            let unshared = Arc::get_mut(&mut image.bytes).is_some();
            let room = spare.len() < SPARE_MIN || (spare.len() + 1) * image.len <= SPARE_BYTES;
            if image.spare && unshared && room {
                spare.push(ImageBuffer(image));
            }
        }
    }

    /// Sets the bound on committed versions' bytes (applied at the next [`Self::collect`]).
    pub fn set_limit(&self, limit_bytes: u64) {
        self.inner.lock().limit = limit_bytes;
    }

    /// Keeps `image` as the version of `page` superseded by commit `c` (the pending commit:
    /// greater than every commit of a version already held).
    pub fn insert(&self, page: u64, c: u64, image: PageImage) {
        let mut g = self.inner.lock();
        let bytes = image.held_bytes();
        g.bytes += bytes;
        let v = g.pages.entry(page).or_default();
        debug_assert!(
            v.last().is_none_or(|(last, _)| *last < c),
            "one version per page and commit"
        );
        v.push((c, image));
        let cv = g.commits.entry(c).or_default();
        cv.pages.push(page);
        cv.bytes += bytes;
    }

    /// `page` as of commit `s`: the version with the smallest commit above `s`.
    pub fn find(&self, page: u64, s: u64) -> Result<PageImage, NoVersion> {
        let g = self.inner.lock();
        let horizon = g.horizon;
        if s < horizon {
            return Err(NoVersion::TooOld { horizon });
        }
        let found = g.pages.get(&page).and_then(|v| v.iter().find(|(c, _)| *c > s));
        found.map(|(_, img)| img.clone()).ok_or(NoVersion::Missing)
    }

    /// Drops every version of commit `c` (an aborted transaction's).
    pub fn drop_commit(&self, c: u64) {
        let mut freed = Vec::new();
        self.inner.lock().free_commit(c, &mut freed);
        self.recycle(freed);
    }

    /// Frees what no reader can need — every version of a commit at or below `needed_above`
    /// (the oldest live snapshot, or the last commit if no reader is live) — then, while the
    /// versions of commits at or below `committed` pass the byte limit, whole commits oldest
    /// first, raising the horizon. The pending commit's versions (above `committed`) stay.
    pub fn collect(&self, needed_above: u64, committed: u64) {
        let mut freed = Vec::new();
        let mut g = self.inner.lock();
        let unneeded = needed_above.min(committed);
        while let Some((&c, _)) = g.commits.first_key_value()
            && c <= unneeded
        {
            g.free_commit(c, &mut freed);
        }
        loop {
            let committed_bytes: u64 = g.commits.range(..=committed).map(|(_, v)| v.bytes).sum();
            if committed_bytes <= g.limit {
                break;
            }
            let Some((&c, _)) = g.commits.first_key_value() else { break };
            g.free_commit(c, &mut freed);
            g.horizon = g.horizon.max(c);
        }
        drop(g);
        self.recycle(freed);
    }

    /// What the store holds.
    pub fn stats(&self) -> VersionStats {
        let g = self.inner.lock();
        VersionStats {
            versions: g.pages.values().map(|v| v.len() as u64).sum(),
            bytes: g.bytes,
            horizon: g.horizon,
        }
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use std::sync::Arc;

    use super::{ImageBuffer, NoVersion, PageImage, Versions};

    /// A "page" of `len` bytes holding `v`, in a buffer of exactly its bytes.
    fn image(v: u8, len: usize) -> PageImage {
        PageImage::new(Arc::from(vec![v; len]), 0)
    }

    /// A "page" of `len` bytes holding `v`, in a buffer the store may hand out again.
    fn spare_image(v: u8, len: usize) -> PageImage {
        let mut b = ImageBuffer::new(len);
        b.page_mut().fill(v);
        b.into_image()
    }

    fn value(v: &Versions, page: u64, s: u64) -> Result<u8, NoVersion> {
        v.find(page, s).map(|i| i.page()[0])
    }

    #[test]
    fn a_snapshot_reads_the_version_of_the_smallest_later_commit() {
        let v = Versions::default();
        // Page 7 was 10 before commit 3, 30 before commit 5; page 8 was 80 before commit 5.
        v.insert(7, 3, image(10, 1));
        v.insert(7, 5, image(30, 1));
        v.insert(8, 5, image(80, 1));
        assert_eq!(value(&v, 7, 0), Ok(10));
        assert_eq!(value(&v, 7, 2), Ok(10));
        assert_eq!(value(&v, 7, 3), Ok(30), "commit 3's own change is older than the version");
        assert_eq!(value(&v, 7, 4), Ok(30));
        assert_eq!(value(&v, 8, 1), Ok(80));
        assert!(v.find(7, 5).is_err(), "no version for a snapshot that sees the last change");
        assert_eq!(v.stats().versions, 3);
    }

    #[test]
    fn collect_frees_what_no_snapshot_needs_and_the_bound_raises_the_horizon() {
        let v = Versions::new(250);
        for c in 1..=4 {
            v.insert(1, c, image(c as u8, 100));
        }
        // A reader at snapshot 1 needs commits 2.. (1's version is for snapshots below 1).
        v.collect(1, 3);
        assert_eq!((v.stats().versions, v.stats().bytes), (3, 300), "{:?}", v.stats());
        assert_eq!(value(&v, 1, 1), Ok(2));
        // Commits 2 and 3 (200 bytes) are within the bound; commit 4 is pending and exempt.
        assert_eq!(v.stats().horizon, 0);
        // Commit 4 done: 300 committed bytes pass the bound, so commit 2's go first.
        v.collect(1, 4);
        assert_eq!(v.stats().horizon, 2);
        assert_eq!(
            value(&v, 1, 1),
            Err(NoVersion::TooOld { horizon: 2 }),
            "never commit 3's bytes instead"
        );
        assert_eq!(value(&v, 1, 2), Ok(3), "a snapshot at the horizon keeps its versions");
        // The reader ends: nothing is needed.
        v.collect(4, 4);
        assert_eq!((v.stats().versions, v.stats().bytes), (0, 0));
    }

    #[test]
    fn image_buffers_start_on_a_cache_line() {
        for len in [64, 4096, 8192, 65536] {
            let mut b = ImageBuffer::new(len);
            assert_eq!(b.page().as_ptr() as usize % 64, 0, "{len}");
            assert_eq!(b.page_mut().len(), len);
            assert_eq!(b.into_image().page().len(), len);
        }
    }

    #[test]
    fn freed_buffers_are_handed_out_again_unless_a_reader_holds_them() {
        let v = Versions::default();
        let (a, b) = (spare_image(1, 64), spare_image(2, 64));
        let (addr_a, addr_b) = (a.page().as_ptr(), b.page().as_ptr());
        v.insert(1, 2, a);
        v.insert(2, 2, b);
        // A reader holds page 2's version past its collection.
        let held = v.find(2, 1).unwrap();
        v.collect(2, 2);
        assert_eq!(v.stats().versions, 0);
        let mut again = v.buffer(64);
        assert_eq!(again.page().as_ptr(), addr_a, "the freed, unshared buffer is reused");
        assert_eq!(again.page_mut().len(), 64, "and no one else holds it");
        let fresh = v.buffer(64);
        assert_ne!(fresh.page().as_ptr(), addr_b, "the reader's buffer is not handed out");
        assert_eq!(held.page()[0], 2);
        // Another length is never handed out for this one.
        drop(again);
        v.insert(3, 3, spare_image(3, 32));
        v.drop_commit(3);
        assert_eq!(v.buffer(64).page().len(), 64);
        // An image of another buffer (a log record's, say) is never handed out.
        v.insert(4, 4, image(9, 64));
        v.drop_commit(4);
        assert_ne!(v.buffer(64).page()[0], 9);
    }

    #[test]
    fn an_aborted_commits_versions_are_dropped() {
        let v = Versions::default();
        v.insert(1, 2, image(1, 10));
        v.insert(2, 3, image(2, 10));
        v.drop_commit(3);
        assert_eq!(v.stats().versions, 1);
        assert!(v.find(2, 1).is_err());
        // Pending versions survive a collect that passes them.
        v.insert(2, 3, image(9, 10));
        v.collect(10, 2);
        assert_eq!(value(&v, 2, 2), Ok(9));
    }
}
