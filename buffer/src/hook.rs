//! The write-back hook: how the engine gets to persist a page's before-image before the page is
//! overwritten in place (DESIGN.md rule 1), and hands the pool that image to keep as an old
//! version for readers.

use std::ops::Range;

use nvpage_storage::{FileLayer, PageFile, PageId, StorageError, page};

use crate::error::HookError;
use crate::versions::{ImageBuffer, LinesImage, Version, Versions};

/// The bytes of a cache line: the granule [`changed_lines`] compares in.
pub const LINE: usize = 64;

/// The page being written back: its new bytes (the writer frame, sealed on the way) and the
/// page as its file still holds it, for the hook to read: the old bytes and the page file, and
/// no layer (a layer's stores beside the pool's read guards would change bytes a reader's `&[u8]`
/// points at: docs/mmap-soundness.md). The page file's `RawFile` refuses writes to a mapped
/// file; an unmapped one (pread) it lets a hook `pwrite`, which a hook must not do.
///
/// The pool stores the new bytes sealed (their checksum set). A hook that reads the old bytes
/// with [`WriteBackPage::read_old_and_seal`] has the page sealed from them: the checksum is
/// updated from the lines that change, not computed over the whole page, where the file's
/// checksum is known good. Otherwise the pool seals the page whole after the hook returns.
#[derive(Debug)]
pub struct WriteBackPage<'a> {
    layer: &'a dyn FileLayer,
    versions: &'a Versions,
    page: PageId,
    new: &'a mut [u8],
    /// The page's shared frame, pinned by the pool, where one is published at the page's current
    /// stamp: the file's bytes exactly (see [`Self::read_old`]).
    current: Option<&'a [u8]>,
    sealed: bool,
}

impl<'a> WriteBackPage<'a> {
    pub(crate) fn new(
        layer: &'a dyn FileLayer,
        versions: &'a Versions,
        page: PageId,
        new: &'a mut [u8],
        current: Option<&'a [u8]>,
    ) -> Self {
        Self { layer, versions, page, new, current, sealed: false }
    }

    /// A buffer of a page's bytes for the old page, to read with [`Self::read_old_and_seal`]
    /// and hand back as [`WriteBack::version`]: the buffer of a version the pool has freed (its
    /// bytes an old page's, to be overwritten), or a new one; its page starts on a cache line
    /// and no one else holds it.
    pub fn image_buffer(&self) -> ImageBuffer {
        self.versions.buffer(self.new.len())
    }

    /// The page's id.
    pub fn id(&self) -> PageId {
        self.page
    }

    /// The page file (its `RawFile` refuses writes to a mapped file).
    pub fn file(&self) -> &PageFile {
        self.layer.file()
    }

    /// Copies the page's bytes as the file holds them into `buf` (a whole page): from the
    /// page's shared frame where the pool has one at the page's current stamp — bytes read from
    /// the file or stored into it since, and unchanged while published (docs/design.md, "Readers
    /// beside the writer"): the file's bytes exactly, with no system call for pread — else from
    /// the file, unverified ([`FileLayer::read_raw`]: from the mapping for SE1/SE2).
    pub fn read_old(&self, buf: &mut [u8]) -> Result<(), StorageError> {
        match self.current {
            Some(bytes) if bytes.len() == buf.len() => {
                buf.copy_from_slice(bytes);
                Ok(())
            }
            _ => self.layer.read_raw(self.page, buf),
        }
    }

    /// [`Self::read_old`], then seals the new bytes from the old ones; returns the lines in
    /// which the sealed page differs from the file ([`changed_lines`]). The checksum is updated
    /// from the lines that change ([`page::checksum_from`]) where the file's page is verified
    /// and carries a checksum; computed whole otherwise (a page of zeros, one replaced by
    /// undo since it was last read). Line 0 holds the checksum, so it is among the changed
    /// lines whenever the checksum changes.
    pub fn read_old_and_seal(&mut self, buf: &mut [u8]) -> Result<Vec<Range<usize>>, StorageError> {
        // The file's page holds still between this question and the read: every store into it
        // in place (write-back, undo's restore) is made by the thread allowed to write back,
        // which is this one.
        let verified = self.layer.file().is_verified(self.page);
        self.read_old(buf)?;
        let changed = seal_from(self.page, buf, self.new, verified);
        self.sealed = true;
        Ok(changed)
    }

    /// [`Self::read_old_and_seal`] without a copy of the old page: compares the new bytes with
    /// the old ones where they lie (the page's shared frame, the mapping; pread reads them into
    /// `scratch`), and returns the changed lines ([`changed_lines`]) and the same lines with
    /// their old bytes — the undo log's image of the write-back and, where readers may need it,
    /// the version ([`Version::Lines`]).
    pub fn seal_from_old_lines(
        &mut self,
        scratch: &mut Vec<u8>,
    ) -> Result<(Vec<Range<usize>>, LinesImage), StorageError> {
        let verified = self.layer.file().is_verified(self.page);
        let (page, new) = (self.page, &mut *self.new);
        let len = new.len();
        let mut lines = self.versions.lines(len);
        let mut changed = Vec::new();
        let mut take = |old: &[u8]| {
            changed = seal_from(page, old, new, verified);
            lines.reserve(changed.iter().map(|r| r.len()).sum());
            for r in &changed {
                lines.push(old, r.clone());
            }
        };
        match self.current {
            Some(old) if old.len() == len => take(old),
            // The file's page holds still while it is read: as in `read_old_and_seal`.
            _ => self.layer.with_raw(page, scratch, &mut take)?,
        }
        self.sealed = true;
        Ok((changed, lines))
    }

    /// The new bytes, sealed (whole, here, unless [`Self::read_old_and_seal`] sealed them).
    pub fn sealed(&mut self) -> &[u8] {
        if !self.sealed {
            page::seal(self.new, self.page);
            self.sealed = true;
        }
        self.new
    }
}

/// Seals `new` (page `id`'s new bytes) from `old` (the file's): the checksum updated from the
/// lines that change where the file's page is `verified` and carries one, computed whole
/// otherwise. Returns the lines in which the sealed page differs from `old`
/// ([`changed_lines`]); line 0 holds the checksum, so it is among them whenever the checksum
/// changes.
fn seal_from(id: PageId, old: &[u8], new: &mut [u8], verified: bool) -> Vec<Range<usize>> {
    page::set_envelope(new, id);
    let mut changed = changed_lines(old, new);
    let crc = verified
        .then(|| page::checksum_from(old, new, &changed))
        .flatten()
        .unwrap_or_else(|| page::compute_checksum(new));
    page::set_checksum(new, crc);
    // The comparison above saw the old checksum in the new bytes: take line 0 out, then put it
    // back if it differs now (merged with the range after it where that one is adjacent).
    let first = LINE.min(new.len());
    if let Some(r) = changed.first_mut().filter(|r| r.start == 0) {
        r.start = first;
        if r.start == r.end {
            changed.remove(0);
        }
    }
    if !same_bytes::<LINE>(&old[..first], &new[..first]) {
        match changed.first_mut() {
            Some(r) if r.start == first => r.start = 0,
            _ => changed.insert(0, 0..first),
        }
    }
    changed
}

/// What the hook tells the pool about a page it is to write back.
#[derive(Debug, Default)]
pub struct WriteBack {
    /// The page's old bytes — whole, or the lines that change — for the pool to keep as the
    /// version readers of older snapshots read (at the page's first store in the transaction;
    /// a later store's lines are added to it); `None` when no reader can need one.
    pub version: Option<Version>,
    /// The byte ranges in which the page differs from the file (ascending, whole lines, from
    /// [`changed_lines`]): the pool stores only those. `None`: store the whole page.
    pub changed: Option<Vec<Range<usize>>>,
}

/// The ranges, in whole [`LINE`]s (the last one cut at the page's end), in which `new` differs
/// from `old`, adjacent lines merged. Both are one page.
pub fn changed_lines(old: &[u8], new: &[u8]) -> Vec<Range<usize>> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above), all `changed_lines_avx2` requires.
        return unsafe { changed_lines_avx2(old, new) };
    }
    changed_lines_in(old, new)
}

/// [`changed_lines`] compiled for AVX2: the comparison is bound by loads, and AVX2's are twice
/// SSE2's width (a single-row commit on an 8 KiB page: 6% of its time in the comparison with
/// SSE2).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn changed_lines_avx2(old: &[u8], new: &[u8]) -> Vec<Range<usize>> {
    changed_lines_in(old, new)
}

/// [`changed_lines`]' body, inlined into each caller so that it is compiled for the caller's
/// instruction set.
#[inline(always)]
fn changed_lines_in(old: &[u8], new: &[u8]) -> Vec<Range<usize>> {
    debug_assert_eq!(old.len(), new.len());
    let len = old.len().min(new.len());
    let mut out: Vec<Range<usize>> = Vec::new();
    let mut push = |start: usize, end: usize| match out.last_mut() {
        Some(r) if r.end == start => r.end = end,
        _ => out.push(start..end),
    };
    let mut at = 0;
    while at < len {
        // Most of a page is unchanged: a block of lines compared at once, skipped when equal.
        if let (Some(a), Some(b)) = (old.get(at..at + BLOCK), new.get(at..at + BLOCK))
            && same_bytes::<BLOCK>(a, b)
        {
            at += BLOCK;
            continue;
        }
        let end = (at + LINE).min(len);
        let (a, b) = (&old[at..end], &new[at..end]);
        let same = if end - at == LINE { same_bytes::<LINE>(a, b) } else { a == b };
        if !same {
            push(at, end);
        }
        at = end;
    }
    out
}

/// Bytes compared at once before [`changed_lines`] looks line by line: four lines.
const BLOCK: usize = 4 * LINE;

/// Whether `a` and `b`, each `N` bytes, hold the same bytes: compared as words folded into one,
/// inline (a `memcmp` call per line cost more than the comparison), which the compiler turns
/// into vector instructions.
#[inline(always)]
fn same_bytes<const N: usize>(a: &[u8], b: &[u8]) -> bool {
    let (Ok(a), Ok(b)) = (<&[u8; N]>::try_from(a), <&[u8; N]>::try_from(b)) else {
        return a == b;
    };
    // A plain loop, not an iterator's fold: a fold is a function of its own, which the AVX2
    // caller did not inline (it ran as SSE2 code, out of line).
    let mut acc = 0u64;
    let mut i = 0;
    while i < N {
        let (mut x, mut y) = ([0u8; 8], [0u8; 8]);
        x.copy_from_slice(&a[i..i + 8]);
        y.copy_from_slice(&b[i..i + 8]);
        acc |= u64::from_ne_bytes(x) ^ u64::from_ne_bytes(y);
        i += 8;
    }
    acc == 0
}

/// Called by the pool before it stores the first byte of a page into the file, its mapping or the
/// page cache.
pub trait WriteBackHook: Send + Sync + std::fmt::Debug {
    /// `page.id()` is about to be written back; its file still holds the page's old bytes. To
    /// log a before-image, read them with [`WriteBackPage::read_old_and_seal`], which seals the
    /// new bytes from them and returns the lines that change: log those, and have the pool
    /// store only those. (Or read them with [`WriteBackPage::read_old`] and compare them with
    /// [`WriteBackPage::sealed`] yourself.) The image need not be durable when this returns: the
    /// pool calls [`WriteBackHook::persist`] before it stores the first byte of any page it
    /// called this for, so a commit that writes back k pages pays one persist for their k
    /// images, not k. An `Err` leaves the page dirty and is returned to the caller as
    /// [`BufferError::Hook`](crate::BufferError::Hook).
    ///
    /// [`WriteBack::version`]: the page's old bytes for the pool to keep as the version readers
    /// of older snapshots read (the buffer the hook filled: no extra copy; the pool keeps it only
    /// at the page's first store in the transaction), or `None` when no reader can need one (a
    /// page the transaction allocated, or one readers never read through the pool).
    /// [`WriteBack::changed`]: the lines the pool stores; a hook that names them vouches that
    /// every other byte of the sealed page equals the file's.
    ///
    /// The hook runs on the writer's thread; it must not call back into the pool.
    fn before_write_back(&self, page: &mut WriteBackPage<'_>) -> Result<WriteBack, HookError>;

    /// Makes every image logged by [`WriteBackHook::before_write_back`] so far durable. The pool
    /// calls it before the first in-place store of the pages those calls were for, and proceeds
    /// only after it returns `Ok` (DESIGN.md rule 1). Cheap when nothing is pending.
    fn persist(&self) -> Result<(), HookError>;
}

/// A hook that logs nothing: for users who keep no undo log (bulk loads into a file that is thrown
/// away on failure, benchmarks, tests). With it, a crash during write-back can leave a mix of old
/// and new pages, and no old versions are kept.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoUndo;

impl WriteBackHook for NoUndo {
    fn before_write_back(&self, _page: &mut WriteBackPage<'_>) -> Result<WriteBack, HookError> {
        Ok(WriteBack::default())
    }

    fn persist(&self) -> Result<(), HookError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{LINE, changed_lines};

    /// The lines where the pages differ, found byte by byte, merged.
    fn naive(old: &[u8], new: &[u8]) -> Vec<std::ops::Range<usize>> {
        let mut out: Vec<std::ops::Range<usize>> = Vec::new();
        for start in (0..old.len()).step_by(LINE) {
            let end = (start + LINE).min(old.len());
            if (start..end).any(|i| old[i] != new[i]) {
                match out.last_mut() {
                    Some(r) if r.end == start => r.end = end,
                    _ => out.push(start..end),
                }
            }
        }
        out
    }

    #[test]
    fn changed_lines_are_exactly_the_lines_that_differ() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for len in [4096usize, 8192, 100, 64, 1] {
            let old: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            for changes in [0usize, 1, 2, 5, 40] {
                let mut new = old.clone();
                for _ in 0..changes {
                    let i = (next() as usize) % len;
                    new[i] = new[i].wrapping_add(1 + (next() % 255) as u8);
                }
                let got = changed_lines(&old, &new);
                assert_eq!(got, naive(&old, &new), "{len} bytes, {changes} changes");
                assert_eq!(got.is_empty(), old == new);
            }
        }
        // The first and the last byte of a line each count.
        let old = vec![0u8; 256];
        let mut new = old.clone();
        new[63] = 1;
        new[128] = 1;
        new[255] = 1;
        assert_eq!(changed_lines(&old, &new), vec![0..64, 128..256]);
    }
}
