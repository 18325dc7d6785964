//! Old versions of pages, kept in memory for readers whose snapshot predates a change (DESIGN.md
//! R2, R4): `(page, c) → bytes`, the page as of commit `c − 1`, which the writer of commit `c`
//! hands over before its first in-place store of the page.
//!
//! A version is kept as the writer hands it: a whole page ([`Version::Page`]), or only the lines
//! its stores changed, with their old bytes ([`Version::Lines`]: the lines the undo log holds,
//! so a commit copies what it changes, not every page it touches). Lines are made whole when a
//! reader first needs them ([`Versions::find`]): the page as the file holds it now, with the
//! lines of every later version laid over it, newest first, then the version's own. Each store
//! of a page since then has its version (a commit's later stores add their lines to its
//! version), so the file's bytes and those lines give exactly the page as of `c − 1`; the whole
//! page replaces the lines for the readers after.
//!
//! A version `(P, c)` is needed by readers with snapshot `s < c`. [`Versions::collect`] frees
//! those no live reader can need, then, past the byte limit, whole commits in commit order,
//! raising the **horizon**: every version with `c ≤ horizon` is gone, and a reader with
//! `s < horizon` that needs one is told its snapshot is too old rather than given other bytes.
//! The running writer's versions (`c` = the pending commit) are never collected: abort drops
//! them ([`Versions::drop_commit`]), the commit makes them ordinary.

use std::collections::BTreeMap;
use std::ops::Range;
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

/// A page's old bytes in some of its lines: what a write-back changed, as the file held it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinesImage {
    /// Ascending, disjoint ranges of the page.
    ranges: Vec<Range<usize>>,
    /// Their bytes, one range after another.
    bytes: Vec<u8>,
    /// The page's length.
    page_len: usize,
}

impl LinesImage {
    /// No lines yet, of a page of `page_len` bytes.
    pub fn new(page_len: usize) -> Self {
        Self { ranges: Vec::new(), bytes: Vec::new(), page_len }
    }

    /// Adds `range`'s bytes, taken from `page` (the whole old page). Ranges are added in
    /// ascending order, none overlapping another.
    ///
    /// # Panics
    /// If `range` lies outside `page`, or `page` is not this image's length (a caller's bug).
    pub fn push(&mut self, page: &[u8], range: Range<usize>) {
        assert_eq!(page.len(), self.page_len, "lines of a page of this image's length");
        debug_assert!(self.ranges.last().is_none_or(|r| r.end <= range.start), "ascending");
        self.bytes.extend_from_slice(&page[range.clone()]);
        self.ranges.push(range);
    }

    /// Makes room for `bytes` more bytes of lines.
    pub fn reserve(&mut self, bytes: usize) {
        self.bytes.reserve(bytes);
    }

    /// The page's length.
    pub fn page_len(&self) -> usize {
        self.page_len
    }

    /// The ranges, ascending.
    pub fn ranges(&self) -> &[Range<usize>] {
        &self.ranges
    }

    /// Their bytes, one range after another (the layout of an undo record's images).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Each range with its bytes.
    fn parts(&self) -> impl Iterator<Item = (Range<usize>, &[u8])> {
        let mut at = 0;
        self.ranges.iter().map(move |r| {
            let part = &self.bytes[at..at + r.len()];
            at += r.len();
            (r.clone(), part)
        })
    }

    /// Lays the lines over `page`.
    fn apply(&self, page: &mut [u8]) {
        for (r, part) in self.parts() {
            page[r].copy_from_slice(part);
        }
    }

    /// These lines and those of `later` (a later store's, in the same commit) that these do not
    /// cover: the page as the commit found it, in every line its stores changed. Where both
    /// hold a line, this one's bytes are the older.
    fn merged(&self, later: &LinesImage) -> LinesImage {
        let mut parts: Vec<(Range<usize>, &[u8])> = self.parts().collect();
        for (r, bytes) in later.parts() {
            let mut at = r.start;
            for (mine, _) in self.parts() {
                if mine.end <= at || mine.start >= r.end {
                    continue;
                }
                if mine.start > at {
                    parts.push((at..mine.start, &bytes[at - r.start..mine.start - r.start]));
                }
                at = at.max(mine.end);
            }
            if at < r.end {
                parts.push((at..r.end, &bytes[at - r.start..]));
            }
        }
        parts.sort_unstable_by_key(|(r, _)| r.start);
        let mut out = LinesImage::new(self.page_len);
        for (r, bytes) in parts {
            out.bytes.extend_from_slice(bytes);
            out.ranges.push(r);
        }
        out
    }

    /// Bytes of memory the image has room for.
    fn capacity(&self) -> usize {
        self.bytes.capacity() + self.ranges.capacity() * size_of::<Range<usize>>()
    }

    /// Bytes of memory the image holds: its room, not only its lines (lines handed out again
    /// keep the room of their last use, and the bound on versions bounds memory).
    fn held_bytes(&self) -> u64 {
        self.capacity() as u64
    }
}

/// A version, as the writer hands it to [`Versions::insert`] and as the store holds it.
#[derive(Debug)]
pub enum Version {
    /// The whole page.
    Page(PageImage),
    /// The lines the commit's stores change, with their old bytes.
    Lines(LinesImage),
}

impl From<PageImage> for Version {
    fn from(image: PageImage) -> Self {
        Self::Page(image)
    }
}

impl Version {
    fn held_bytes(&self) -> u64 {
        match self {
            Version::Page(image) => image.held_bytes(),
            Version::Lines(lines) => lines.held_bytes(),
        }
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
    pages: IdMap<u64, Vec<(u64, Version)>>,
    /// Each commit's pages, to free a commit's versions together.
    commits: BTreeMap<u64, CommitVersions>,
    bytes: u64,
    horizon: u64,
    limit: u64,
}

impl Inner {
    /// Commit `c`'s version of a page, counted as `before` bytes, now holds `after`.
    fn resized(&mut self, c: u64, before: u64, after: u64) {
        self.bytes = self.bytes + after - before;
        if let Some(cv) = self.commits.get_mut(&c) {
            cv.bytes = cv.bytes + after - before;
        }
    }

    /// Frees every version of commit `c`, moving them to `freed`.
    fn free_commit(&mut self, c: u64, freed: &mut Vec<Version>) {
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
    /// Freed versions' lines, emptied, for the write-back hook to fill again ([`Self::lines`]):
    /// a commit's hook fills one per page it writes back, and allocating them anew cost a
    /// single-row commit a few per cent of its time.
    spare_lines: Mutex<Vec<LinesImage>>,
}

impl Default for Versions {
    fn default() -> Self {
        Self::new(u64::MAX)
    }
}

/// Why [`Versions::find`] gives no page.
#[derive(Debug)]
pub enum FindError<E> {
    /// There is no version to give.
    NoVersion(NoVersion),
    /// Reading the page as the file holds it failed.
    Current(E),
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
            spare_lines: Mutex::new(Vec::new()),
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

    /// Empty lines of a page of `page_len` bytes, for a write-back's old lines that may become
    /// a version: a freed version's (their room kept), or new ones.
    pub fn lines(&self, page_len: usize) -> LinesImage {
        let mut lines = self.spare_lines.lock().pop().unwrap_or_default();
        lines.page_len = page_len;
        lines
    }

    /// Keeps the unshared buffers of `freed` that came from [`Self::buffer`], and the lines,
    /// for [`Self::buffer`] and [`Self::lines`] to hand out again, up to a few; drops the rest.
    /// A buffer a reader still holds (an `Arc` clone) is left to it.
    fn recycle(&self, freed: Vec<Version>) {
        if freed.is_empty() {
            return;
        }
        let mut pages = Vec::new();
        {
            let mut spare = self.spare_lines.lock();
            let mut room = SPARE_BYTES.saturating_sub(spare.iter().map(LinesImage::capacity).sum());
            for held in freed {
                match held {
                    Version::Page(image) => pages.push(image),
                    Version::Lines(mut l) if spare.len() < SPARE_MIN || l.capacity() <= room => {
                        room = room.saturating_sub(l.capacity());
                        l.ranges.clear();
                        l.bytes.clear();
                        spare.push(l);
                    }
                    Version::Lines(_) => {}
                }
            }
        }
        if pages.is_empty() {
            return;
        }
        let mut spare = self.spare.lock();
        for mut image in pages {
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

    /// Keeps `version` as the version of `page` superseded by commit `c` (the pending commit:
    /// greater than every commit of a version already held), at the page's first store in the
    /// commit (`first`). At a later store of the page in the same commit, the version held gains
    /// the lines it lacks (their bytes are still the ones the commit found); a whole page held
    /// already stays as it is, and so does no version at all.
    pub fn insert(&self, page: u64, c: u64, version: Version, first: bool) {
        let mut g = self.inner.lock();
        if !first {
            let kept = g.pages.get_mut(&page).and_then(|v| v.last_mut());
            let Some((_, kept)) = kept.filter(|(last, _)| *last == c) else { return };
            let before = kept.held_bytes();
            match (&*kept, version) {
                (Version::Page(_), _) => return,
                (Version::Lines(mine), Version::Lines(later)) => {
                    *kept = Version::Lines(mine.merged(&later));
                }
                (Version::Lines(mine), Version::Page(later)) => {
                    let mut whole = ImageBuffer::new(later.page().len());
                    whole.page_mut().copy_from_slice(later.page());
                    mine.apply(whole.page_mut());
                    *kept = Version::Page(whole.into_image());
                }
            }
            let after = kept.held_bytes();
            g.resized(c, before, after);
            return;
        }
        let v = g.pages.entry(page).or_default();
        debug_assert!(
            v.last().is_none_or(|(last, _)| *last < c),
            "one version per page and commit"
        );
        let bytes = version.held_bytes();
        v.push((c, version));
        g.bytes += bytes;
        let cv = g.commits.entry(c).or_default();
        cv.pages.push(page);
        cv.bytes += bytes;
    }

    /// `page` as of commit `s`: the version with the smallest commit above `s`, made whole if it
    /// is lines. `current` reads the page as the file holds it now into a buffer, and is called
    /// only if no whole version above `s` can serve as the base: the caller keeps the page's
    /// stores out (and with them this page's [`Self::insert`]s) until this returns. The page
    /// made whole replaces the lines for the readers after.
    pub fn find<E>(
        &self,
        page: u64,
        s: u64,
        current: impl FnOnce(&mut [u8]) -> Result<(), E>,
    ) -> Result<PageImage, FindError<E>> {
        let (c, lines, base) = {
            let g = self.inner.lock();
            let horizon = g.horizon;
            if s < horizon {
                return Err(FindError::NoVersion(NoVersion::TooOld { horizon }));
            }
            let above = g.pages.get(&page).map_or(&[][..], |v| {
                let at = v.partition_point(|(vc, _)| *vc <= s);
                &v[at..]
            });
            let Some((c, first)) = above.first() else {
                return Err(FindError::NoVersion(NoVersion::Missing));
            };
            let mut lines = Vec::new();
            let mut base = None;
            for (_, held) in above {
                match held {
                    Version::Page(image) if lines.is_empty() => return Ok(image.clone()),
                    Version::Page(image) => {
                        base = Some(image.clone());
                        break;
                    }
                    Version::Lines(l) => lines.push(l.clone()),
                }
            }
            debug_assert!(matches!(first, Version::Lines(_)));
            (*c, lines, base)
        };
        let len = lines[0].page_len;
        let mut whole = self.buffer(len);
        match &base {
            Some(image) => whole.page_mut().copy_from_slice(image.page()),
            None => current(whole.page_mut()).map_err(FindError::Current)?,
        }
        for l in lines.iter().rev() {
            l.apply(whole.page_mut());
        }
        let image = whole.into_image();
        let mut g = self.inner.lock();
        let kept = g.pages.get_mut(&page).and_then(|v| v.iter_mut().find(|(vc, _)| *vc == c));
        if let Some((_, held)) = kept
            && matches!(held, Version::Lines(_))
        {
            let before = held.held_bytes();
            *held = Version::Page(image.clone());
            g.resized(c, before, image.held_bytes());
        }
        Ok(image)
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

    use super::{FindError, ImageBuffer, LinesImage, NoVersion, PageImage, Version, Versions};

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

    /// A version kept whole: the file's bytes are never read.
    fn whole(v: &Versions, page: u64, s: u64) -> Result<PageImage, NoVersion> {
        v.find(page, s, |_| -> Result<(), ()> { panic!("page {page} read from the file") }).map_err(
            |e| match e {
                FindError::NoVersion(n) => n,
                FindError::Current(()) => unreachable!(),
            },
        )
    }

    fn value(v: &Versions, page: u64, s: u64) -> Result<u8, NoVersion> {
        whole(v, page, s).map(|i| i.page()[0])
    }

    #[test]
    fn a_snapshot_reads_the_version_of_the_smallest_later_commit() {
        let v = Versions::default();
        // Page 7 was 10 before commit 3, 30 before commit 5; page 8 was 80 before commit 5.
        v.insert(7, 3, image(10, 1).into(), true);
        v.insert(7, 5, image(30, 1).into(), true);
        v.insert(8, 5, image(80, 1).into(), true);
        assert_eq!(value(&v, 7, 0), Ok(10));
        assert_eq!(value(&v, 7, 2), Ok(10));
        assert_eq!(value(&v, 7, 3), Ok(30), "commit 3's own change is older than the version");
        assert_eq!(value(&v, 7, 4), Ok(30));
        assert_eq!(value(&v, 8, 1), Ok(80));
        assert!(whole(&v, 7, 5).is_err(), "no version for a snapshot that sees the last change");
        assert_eq!(v.stats().versions, 3);
    }

    #[test]
    fn collect_frees_what_no_snapshot_needs_and_the_bound_raises_the_horizon() {
        let v = Versions::new(250);
        for c in 1..=4 {
            v.insert(1, c, image(c as u8, 100).into(), true);
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
        v.insert(1, 2, a.into(), true);
        v.insert(2, 2, b.into(), true);
        // A reader holds page 2's version past its collection.
        let held = whole(&v, 2, 1).unwrap();
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
        v.insert(3, 3, spare_image(3, 32).into(), true);
        v.drop_commit(3);
        assert_eq!(v.buffer(64).page().len(), 64);
        // An image of another buffer (a log record's, say) is never handed out.
        v.insert(4, 4, image(9, 64).into(), true);
        v.drop_commit(4);
        assert_ne!(v.buffer(64).page()[0], 9);
    }

    #[test]
    fn an_aborted_commits_versions_are_dropped() {
        let v = Versions::default();
        v.insert(1, 2, image(1, 10).into(), true);
        v.insert(2, 3, image(2, 10).into(), true);
        v.drop_commit(3);
        assert_eq!(v.stats().versions, 1);
        assert!(whole(&v, 2, 1).is_err());
        // Pending versions survive a collect that passes them.
        v.insert(2, 3, image(9, 10).into(), true);
        v.collect(10, 2);
        assert_eq!(value(&v, 2, 2), Ok(9));
    }

    /// Stores `value` into the lines `lines` (64 bytes each) of `file`, and returns the old
    /// bytes of those lines, as a write-back hands them over.
    fn store(file: &mut [u8], lines: &[usize], value: u8) -> Version {
        let mut old = LinesImage::new(file.len());
        let before = file.to_vec();
        for &l in lines {
            old.push(&before, l * 64..(l + 1) * 64);
            file[l * 64..(l + 1) * 64].fill(value);
        }
        Version::Lines(old)
    }

    /// `page` as of `s`, reading the file's bytes from `file` where it must; whether it read them.
    fn made_whole(v: &Versions, page: u64, s: u64, file: &[u8]) -> (Vec<u8>, bool) {
        let mut read = false;
        let image = v
            .find(page, s, |buf| -> Result<(), ()> {
                read = true;
                buf.copy_from_slice(file);
                Ok(())
            })
            .unwrap();
        (image.page().to_vec(), read)
    }

    #[test]
    fn versions_kept_as_lines_are_made_whole_from_the_file_and_every_later_version() {
        let v = Versions::default();
        let mut file = vec![0u8; 256];
        let states = |f: &[u8]| f.to_vec();
        let s0 = states(&file);
        v.insert(1, 1, store(&mut file, &[0, 2], 1), true);
        let s1 = states(&file);
        v.insert(1, 2, store(&mut file, &[2, 3], 2), true);
        let s2 = states(&file);
        // Commit 3 stores the page twice: its version keeps what the page held before it.
        v.insert(1, 3, store(&mut file, &[1], 3), true);
        v.insert(1, 3, store(&mut file, &[1, 3], 4), false);
        assert_eq!(made_whole(&v, 1, 0, &file), (s0.clone(), true));
        // Made whole once: the next reader gets the page without reading the file.
        assert_eq!(made_whole(&v, 1, 0, &file), (s0, false));
        assert_eq!(made_whole(&v, 1, 2, &file), (s2.clone(), true));
        // Commit 3's version, whole now, is the base of commit 2's lines.
        assert_eq!(made_whole(&v, 1, 1, &file), (s1, false));
        assert_eq!(made_whole(&v, 1, 2, &file), (s2, false));
        // A whole version above serves as the base of the lines below it.
        let v = Versions::default();
        let mut file = vec![0u8; 256];
        v.insert(2, 1, store(&mut file, &[1], 1), true);
        v.insert(2, 2, PageImage::new(Arc::from(file.clone()), 0).into(), true);
        file.fill(9);
        assert_eq!(made_whole(&v, 2, 0, &file), (vec![0u8; 256], false));
    }

    #[test]
    fn a_later_store_in_a_commit_adds_only_the_lines_its_version_lacks() {
        let page = |bytes: &[(std::ops::Range<usize>, u8)]| {
            let mut p = vec![0u8; 256];
            for (r, b) in bytes {
                p[r.clone()].fill(*b);
            }
            p
        };
        let lines = |p: &[u8], ranges: &[std::ops::Range<usize>]| {
            let mut l = LinesImage::new(256);
            for r in ranges {
                l.push(p, r.clone());
            }
            l
        };
        // The commit found 1s in 0..100 and 2s in 150..200; it then stored 7s over part of them.
        let first = lines(&page(&[(0..100, 1)]), std::slice::from_ref(&(0..100)));
        let later = lines(&page(&[(0..256, 7), (150..200, 2)]), &[50..120, 150..200, 250..256]);
        let merged = first.merged(&later);
        assert_eq!(merged.ranges(), &[0..100, 100..120, 150..200, 250..256]);
        let mut p = vec![5u8; 256];
        merged.apply(&mut p);
        assert_eq!(&p[..100], &[1u8; 100][..], "the first store's old bytes win");
        assert_eq!(&p[100..120], &[7u8; 20][..]);
        assert_eq!(&p[120..150], &[5u8; 30][..], "a line no store changed is the file's");
        assert_eq!(&p[150..200], &[2u8; 50][..]);
        assert_eq!(&p[250..], &[7u8; 6][..]);
    }

    #[test]
    fn a_later_store_with_no_version_held_leaves_no_entry() {
        let v = Versions::default();
        let mut file = vec![0u8; 256];
        for page in 0..1000 {
            v.insert(page, 0, store(&mut file, &[1], 1), false);
        }
        assert_eq!(v.stats().versions, 0);
        assert_eq!(v.inner.lock().pages.len(), 0, "no empty entry is left per page");
    }

    #[test]
    fn lines_of_an_aborted_commit_go_and_collected_lines_free_their_bytes() {
        let v = Versions::default();
        let mut file = vec![0u8; 256];
        v.insert(1, 1, store(&mut file, &[0], 1), true);
        v.insert(1, 2, store(&mut file, &[1], 2), true);
        assert_eq!(v.stats().versions, 2);
        v.drop_commit(2);
        assert_eq!(v.stats().versions, 1);
        assert!(v.stats().bytes >= 64);
        v.collect(1, 1);
        assert_eq!(v.stats(), super::VersionStats::default());
        // The freed lines are handed out again, empty, their room kept.
        let again = v.lines(512);
        assert!(again.ranges().is_empty() && again.bytes().is_empty());
        assert!(again.bytes.capacity() >= 64 && again.page_len() == 512);
    }
}
