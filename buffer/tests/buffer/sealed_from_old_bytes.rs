//! Goal: a hook that seals pages from their old bytes (`WriteBackPage::read_old_and_seal`, the
//! checksum updated from the lines that change) gets exactly the lines in which the sealed page
//! differs from the file — the checksum's line among them whenever the checksum changes, and no
//! line at all for a page written back unchanged — and every page it stores verifies when the
//! file is opened again. Pages first written over zeros, pages read back (verified) and changed,
//! changes in the checksum's line only, in one line far from it, at the page's last byte, on
//! every layer. The old bytes the hook reads — from the page's shared frame where the pool holds
//! one at the page's current stamp, else from the file — are the file's bytes at every call.

#![allow(clippy::single_range_in_vec_init)] // lines of a page, not a Vec of their indices

use crate::common;

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use nvpage_buffer::{
    BufferPool, HookError, View, WriteBack, WriteBackHook, WriteBackPage, changed_lines,
};
use nvpage_storage::page::PAGE_HEADER_LEN;
use nvpage_storage::{Layer, PageId};

use common::{open_layer, open_pool, scratch_dir};

const PAGE: usize = nvpage_storage::page::DEFAULT_PAGE_SIZE;

/// A write-back the hook saw: the page, the lines it reported, whether they were exact.
type Seen = (PageId, Vec<Range<usize>>, bool);
/// A case: what it changes, the bytes it flips, the lines expected.
type Case = (&'static str, Vec<usize>, Vec<Range<usize>>);

/// Seals every page from its old bytes and has the pool store only the lines it reports;
/// records each call's lines and whether they were exactly the lines that differ.
#[derive(Debug, Default)]
struct SealingHook {
    calls: AtomicU64,
    seen: Mutex<Vec<Seen>>,
}

impl WriteBackHook for SealingHook {
    fn before_write_back(&self, page: &mut WriteBackPage<'_>) -> Result<WriteBack, HookError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut old = vec![0u8; page.file().page_size().bytes()];
        let changed = page.read_old_and_seal(&mut old)?;
        let mut file = vec![0u8; old.len()];
        page.file().raw().read_at(&mut file, page.file().offset(page.id()))?;
        assert!(old == file, "page {:?}: the old bytes read are not the file's", page.id());
        let exact = changed == changed_lines(&old, page.sealed());
        self.seen.lock().unwrap().push((page.id(), changed.clone(), exact));
        Ok(WriteBack { version: None, changed: Some(changed) })
    }

    fn persist(&self) -> Result<(), HookError> {
        Ok(())
    }
}

impl SealingHook {
    /// The lines the last call reported, checking that they were exact.
    fn last(&self, id: PageId) -> Vec<Range<usize>> {
        let seen = self.seen.lock().unwrap();
        let (page, lines, exact) = seen.last().expect("a write-back").clone();
        assert_eq!(page, id);
        assert!(exact, "page {id:?}: {lines:?} are not the lines that differ");
        lines
    }
}

/// A page pattern: byte `i` of the payload is `(i * 7 + seed) as u8`.
fn pattern(seed: u8) -> impl Fn(usize) -> u8 {
    move |i| (i as u8).wrapping_mul(7).wrapping_add(seed)
}

/// A new data file on `layer` in a scratch directory, and a pool of 8 frames over it with a
/// [`SealingHook`].
fn sealing_pool(layer: Layer) -> (tempfile::TempDir, Arc<SealingHook>, BufferPool) {
    let dir = scratch_dir();
    let hook = Arc::new(SealingHook::default());
    let pool = open_pool(dir.path(), layer, true, 8, hook.clone());
    (dir, hook, pool)
}

#[test]
fn lines_from_the_old_bytes_are_exact_and_pages_verify() {
    for layer in [Layer::Pread, Layer::Se1, Layer::Se2] {
        let (dir, hook, pool) = sealing_pool(layer);
        pool.grow(4).unwrap();
        let mut model = vec![vec![0u8; PAGE]; 4];
        let (p1, p2) = (PageId(1), PageId(2));

        // Over zeros (never verified: sealed whole): every line of a full payload differs.
        {
            let mut g = pool.new_page(p1).unwrap();
            let f = pattern(1);
            for (i, b) in g[PAGE_HEADER_LEN..].iter_mut().enumerate() {
                *b = f(i);
            }
        }
        pool.flush_page(p1).unwrap();
        assert_eq!(hook.last(p1), vec![0..PAGE], "{layer:?}");

        // Read back through a fresh frame (verified), then each kind of change.
        assert_eq!(pool.evict_page(p1).unwrap(), layer != Layer::Se2, "SE2 keeps no frame");
        let cases: [Case; 4] = [
            ("the checksum's line only", vec![20, 63], vec![0..64]),
            ("one line far from it", vec![4000], vec![0..64, 3968..4032]),
            ("the last byte", vec![PAGE - 1], vec![0..64, PAGE - 64..PAGE]),
            ("two adjacent lines", vec![64, 130], vec![0..192]),
        ];
        for (what, bytes, want) in cases {
            {
                let mut g = pool.write(p1).unwrap();
                for &at in &bytes {
                    g[at] ^= 0x5a;
                }
            }
            pool.flush_page(p1).unwrap();
            assert_eq!(hook.last(p1), want, "{layer:?}: {what}");
        }

        // A page written back unchanged: no line at all, not even the checksum's.
        {
            let mut g = pool.write(p1).unwrap();
            g[100] ^= 1;
            g[100] ^= 1;
        }
        pool.flush_page(p1).unwrap();
        assert_eq!(hook.last(p1), Vec::new(), "{layer:?}: unchanged");

        // A second page, changed twice before one write-back.
        {
            let mut g = pool.new_page(p2).unwrap();
            g[PAGE_HEADER_LEN..].fill(9);
        }
        pool.flush_page(p2).unwrap();
        {
            let mut g = pool.write(p2).unwrap();
            g[PAGE / 2] = 1;
            g[PAGE / 2 + 1] = 2;
        }
        pool.flush_page(p2).unwrap();
        assert_eq!(hook.last(p2), vec![0..64, PAGE / 2..PAGE / 2 + 64], "{layer:?}");

        for id in [p1, p2] {
            pool.with_file_page(id, &mut |b| model[id.0 as usize] = b.to_vec()).unwrap();
        }
        assert!(hook.calls.load(Ordering::SeqCst) >= 8);
        pool.write_header().unwrap();
        pool.sync().unwrap();
        drop(pool);

        // Reopened: each page read verifies (checksum and id) and holds what was stored.
        let file = open_layer(dir.path(), layer, false);
        for id in [p1, p2] {
            let mut buf = vec![0u8; PAGE];
            file.read_page(id, &mut buf).unwrap_or_else(|e| panic!("{layer:?} {id:?}: {e}"));
            assert_eq!(buf, model[id.0 as usize], "{layer:?} {id:?}");
        }
    }
}

/// The header page written in place by `BufferPool::write_header` while a shared frame of it is
/// published: the writer's copy and the write-back's old bytes are the file's new bytes, not the
/// frame's (the frame is unpublished first), and the page verifies after a reopen.
#[test]
fn a_header_written_in_place_is_never_read_from_a_stale_frame() {
    for layer in [Layer::Pread, Layer::Se1, Layer::Se2] {
        let (dir, hook, pool) = sealing_pool(layer);
        pool.grow(2).unwrap();
        pool.write_header().unwrap();
        // A shared frame of page 0, then page 0 changed in place (the page count).
        drop(pool.read(PageId::HEADER, View::Writer).unwrap());
        pool.grow(3).unwrap();
        pool.write_header().unwrap();
        let mut file = Vec::new();
        pool.with_file_page(PageId::HEADER, &mut |b| file = b.to_vec()).unwrap();
        {
            let g = pool.write(PageId::HEADER).unwrap();
            assert!(g[..] == file[..], "{layer:?}: the writer's copy is the file's page 0");
        }
        // The hook checks that the old bytes it reads are the file's.
        pool.flush_page(PageId::HEADER).unwrap();
        assert_eq!(hook.calls.load(Ordering::SeqCst), 1, "{layer:?}");
        pool.sync().unwrap();
        drop(pool);
        let file = open_layer(dir.path(), layer, false);
        assert_eq!(file.file().page_count(), 3, "{layer:?}");
        let mut buf = vec![0u8; PAGE];
        file.read_page(PageId::HEADER, &mut buf).unwrap_or_else(|e| panic!("{layer:?}: {e}"));
    }
}
