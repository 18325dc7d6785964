//! Goal: the basic life of a page through the pool on every layer — new, write, evict, read back,
//! flush, reopen — and the SE2 specifics: reads in place, copy-on-write keeps the mapping's old
//! bytes until write-back.

use std::sync::Arc;

use nvpage_buffer::{BufferPool, NoUndo, View};
use nvpage_storage::page::PAGE_HEADER_LEN;
use nvpage_storage::{Layer, OpenOptions, PageId};

fn pool(dir: &std::path::Path, layer: Layer, create: bool, frames: usize) -> BufferPool {
    let opts = OpenOptions { max_bytes: 1 << 30, ..OpenOptions::new(layer) };
    let path = dir.join("data");
    let file = if create { opts.create(&path).unwrap() } else { opts.open(&path).unwrap() };
    BufferPool::new(file, frames, Arc::new(NoUndo)).unwrap()
}

#[test]
fn pages_survive_eviction_flush_and_reopen() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        {
            let p = pool(dir.path(), layer, true, 8);
            p.grow(65).unwrap();
            for i in 1..65u64 {
                let mut g = p.new_page(PageId(i)).unwrap();
                g[PAGE_HEADER_LEN..].fill(i as u8);
            }
            // 64 pages through 8 frames: most were evicted (written back) already.
            assert!(p.counters().evictions >= 56, "{layer}: {:?}", p.counters());
            for i in 1..65u64 {
                let g = p.read(PageId(i), View::Writer).unwrap();
                assert!(g[PAGE_HEADER_LEN..].iter().all(|&b| b == i as u8), "{layer} page {i}");
            }
            p.flush_all().unwrap();
            p.write_header().unwrap();
            p.sync().unwrap();
        }
        let p = pool(dir.path(), layer, false, 8);
        for i in 1..65u64 {
            let g = p.read(PageId(i), View::Writer).unwrap();
            assert!(
                g[PAGE_HEADER_LEN..].iter().all(|&b| b == i as u8),
                "{layer} page {i} after reopen"
            );
            assert_eq!(g.is_redirected(), layer == Layer::Se2);
        }
    }
}

#[test]
fn se2_copy_on_write_keeps_the_mapping_until_write_back() {
    let dir = tempfile::tempdir().unwrap();
    let p = pool(dir.path(), Layer::Se2, true, 8);
    p.grow(2).unwrap();
    {
        let mut g = p.new_page(PageId(1)).unwrap();
        g[PAGE_HEADER_LEN..].fill(1);
    }
    p.flush_all().unwrap();
    p.evict_page(PageId(1)).unwrap();
    {
        let r = p.read(PageId(1), View::Writer).unwrap();
        assert!(r.is_redirected());
        // Dirtying a page this thread reads in place does not deadlock: the change goes to a
        // private copy, and the reader keeps seeing the mapping.
        let mut w = p.write(PageId(1)).unwrap();
        w[PAGE_HEADER_LEN..].fill(2);
        assert!(r[PAGE_HEADER_LEN..].iter().all(|&b| b == 1));
        drop(w);
        // Writing it back while this thread still reads it in place would wait on itself.
        assert!(matches!(
            p.flush_page(PageId(1)),
            Err(nvpage_buffer::BufferError::LatchHeld { .. })
        ));
        // Eviction never waits: the page is busy, so it is skipped.
        assert!(!p.evict_page(PageId(1)).unwrap());
    }
    // Inside the writer, reads see the private copy.
    assert!(!p.read(PageId(1), View::Writer).unwrap().is_redirected());
    assert!(p.read(PageId(1), View::Writer).unwrap()[PAGE_HEADER_LEN..].iter().all(|&b| b == 2));
    p.with_file_page(PageId(1), &mut |b| assert!(b[PAGE_HEADER_LEN..].iter().all(|&x| x == 1)))
        .unwrap();
    p.flush_page(PageId(1)).unwrap();
    p.with_file_page(PageId(1), &mut |b| assert!(b[PAGE_HEADER_LEN..].iter().all(|&x| x == 2)))
        .unwrap();
    assert_eq!(p.counters().cow_copies, 1);
}

#[test]
fn a_full_pool_is_an_error_not_a_hang() {
    for layer in Layer::compiled() {
        let dir = tempfile::tempdir().unwrap();
        let p = pool(dir.path(), layer, true, 4);
        p.grow(10).unwrap();
        let guards: Vec<_> = (1..5).map(|i| p.new_page(PageId(i)).unwrap()).collect();
        assert!(matches!(
            p.new_page(PageId(5)),
            Err(nvpage_buffer::BufferError::PoolExhausted { page: PageId(5), frames: 4 })
        ));
        drop(guards);
        p.new_page(PageId(5)).unwrap();
    }
}
