//! Goal: the pool is indistinguishable from a plain array of page payloads. Random sequences of
//! read, write, new_page, evict, flush, flush_all, ring scans, self-joins and reopens (with any
//! layer) run over a pool of 4–8 frames and a file of 40 pages, against a `Vec` of payloads; every
//! read, on every layer, agrees with the model, and so does the file after a reopen.

use crate::common;

use std::sync::Arc;

use nvpage_buffer::{BufferPool, NoUndo, View};
use nvpage_storage::page::PAGE_HEADER_LEN;
use nvpage_storage::{Layer, PageId};
use proptest::prelude::*;

use common::{open_pool, payload, scratch_dir};

const PAGES: u64 = 40;
/// Write offsets are drawn below this (the payload of the smallest page size); the model holds
/// whole payloads of the file's page size.
const PAYLOAD: usize = 4096 - PAGE_HEADER_LEN;

#[derive(Clone, Debug)]
enum Op {
    Read(u64),
    /// Writes `len` bytes of `byte` at payload offset `at` (clipped to the page).
    Write {
        page: u64,
        at: usize,
        len: usize,
        byte: u8,
    },
    /// Zeroes the page, then writes one byte so the page is not all zeros.
    NewPage {
        page: u64,
        byte: u8,
    },
    Evict(u64),
    Flush(u64),
    FlushAll,
    /// Reads `count` pages from `first` (wrapping) through a scan ring.
    Scan {
        first: u64,
        count: u64,
    },
    /// Holds a guard on `a` while reading `b` (maybe the same page: a self-join).
    ReadTwo(u64, u64),
    /// flush_all, write the header, sync, drop, and reopen with `layer` and `frames`.
    Reopen {
        layer: usize,
        frames: usize,
    },
}

fn page() -> impl Strategy<Value = u64> {
    1..=PAGES
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => page().prop_map(Op::Read),
        6 => (page(), 0..PAYLOAD, 1..600usize, any::<u8>())
            .prop_map(|(page, at, len, byte)| Op::Write { page, at, len, byte }),
        2 => (page(), any::<u8>()).prop_map(|(page, byte)| Op::NewPage { page, byte }),
        2 => page().prop_map(Op::Evict),
        2 => page().prop_map(Op::Flush),
        1 => Just(Op::FlushAll),
        1 => (page(), 1..=PAGES).prop_map(|(first, count)| Op::Scan { first, count }),
        2 => (page(), page()).prop_map(|(a, b)| Op::ReadTwo(a, b)),
        1 => (0..3usize, 4..=8usize).prop_map(|(layer, frames)| Op::Reopen { layer, frames }),
    ]
}

struct Run {
    dir: tempfile::TempDir,
    pool: Option<BufferPool>,
    model: Vec<Vec<u8>>,
    layers: Vec<Layer>,
}

impl Run {
    fn new(layer: Layer, frames: usize) -> Self {
        let dir = scratch_dir();
        let pool = open_pool(dir.path(), layer, true, frames, Arc::new(NoUndo));
        pool.grow(PAGES + 1).unwrap();
        let payload_len = pool.page_size() - PAGE_HEADER_LEN;
        Self {
            dir,
            pool: Some(pool),
            model: vec![vec![0; payload_len]; PAGES as usize + 1],
            layers: Layer::compiled(),
        }
    }

    fn pool(&self) -> &BufferPool {
        self.pool.as_ref().unwrap()
    }

    fn check(&self, id: u64, bytes: &[u8], what: &str) {
        let layer = self.pool().layer_kind();
        assert!(
            payload(bytes) == &self.model[id as usize][..],
            "{layer}: page {id} differs from the model ({what})"
        );
    }

    fn apply(&mut self, op: &Op) {
        let p = self.pool();
        match *op {
            Op::Read(id) => {
                let g = p.read(PageId(id), View::Writer).unwrap();
                self.check(id, &g, "read");
            }
            Op::Write { page, at, len, byte } => {
                let end = (at + len).min(PAYLOAD);
                let mut g = p.write(PageId(page)).unwrap();
                self.check(page, &g, "write guard");
                g[PAGE_HEADER_LEN + at..PAGE_HEADER_LEN + end].fill(byte);
                drop(g);
                self.model[page as usize][at..end].fill(byte);
            }
            Op::NewPage { page, byte } => {
                let mut g = p.new_page(PageId(page)).unwrap();
                assert!(g.iter().all(|&b| b == 0), "new_page hands out a zeroed page");
                g[PAGE_HEADER_LEN] = byte;
                drop(g);
                let m = &mut self.model[page as usize];
                m.fill(0);
                m[0] = byte;
            }
            Op::Evict(id) => {
                // Nothing is held, so a resident page must go.
                p.evict_page(PageId(id)).unwrap();
                assert!(!p.dirty_pages().contains(&PageId(id)), "evicted page {id} still dirty");
            }
            Op::Flush(id) => {
                p.flush_page(PageId(id)).unwrap();
                assert!(!p.dirty_pages().contains(&PageId(id)), "flushed page {id} still dirty");
            }
            Op::FlushAll => {
                p.flush_all().unwrap();
                assert!(p.dirty_pages().is_empty());
            }
            Op::Scan { first, count } => {
                let mut ring = p.scan_ring();
                for k in 0..count {
                    let id = (first - 1 + k) % PAGES + 1;
                    let g = p.read_scan(PageId(id), View::Writer, &mut ring).unwrap();
                    self.check(id, &g, "scan");
                }
            }
            Op::ReadTwo(a, b) => {
                let ga = p.read(PageId(a), View::Writer).unwrap();
                let gb = p.read(PageId(b), View::Writer).unwrap();
                self.check(a, &ga, "first of two guards");
                self.check(b, &gb, "second of two guards");
            }
            Op::Reopen { layer, frames } => {
                let layer = self.layers[layer % self.layers.len()];
                self.reopen(layer, frames);
            }
        }
    }

    fn reopen(&mut self, layer: Layer, frames: usize) {
        {
            let p = self.pool.take().unwrap();
            p.flush_all().unwrap();
            p.write_header().unwrap();
            p.sync().unwrap();
        }
        self.pool = Some(open_pool(self.dir.path(), layer, false, frames, Arc::new(NoUndo)));
        assert_eq!(self.pool().file().page_count(), PAGES + 1);
    }

    /// Reopens and compares every page with the model.
    fn check_all_after_reopen(&mut self, layer: Layer) {
        self.reopen(layer, 4);
        for id in 1..=PAGES {
            let g = self.pool().read(PageId(id), View::Writer).unwrap();
            self.check(id, &g, "after the final reopen");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn pool_matches_a_vec_of_payloads(
        layer in 0..3usize,
        last_layer in 0..3usize,
        frames in 4..=8usize,
        ops in prop::collection::vec(op(), 1..150),
    ) {
        let layers = Layer::compiled();
        let mut run = Run::new(layers[layer % layers.len()], frames);
        for op in &ops {
            run.apply(op);
        }
        run.check_all_after_reopen(layers[last_layer % layers.len()]);
    }
}

/// Every layer, explicitly, on one fixed sequence that forces evictions of dirty pages (more
/// pages written than frames) and a reopen with each other layer.
#[test]
fn every_layer_round_trips_through_every_other() {
    for first in Layer::compiled() {
        for second in Layer::compiled() {
            let mut run = Run::new(first, 4);
            for id in 1..=PAGES {
                run.apply(&Op::Write {
                    page: id,
                    at: (id as usize * 37) % PAYLOAD,
                    len: 300,
                    byte: id as u8,
                });
            }
            run.apply(&Op::Scan { first: 1, count: PAGES });
            run.check_all_after_reopen(second);
            for id in 1..=PAGES {
                run.apply(&Op::Write { page: id, at: 0, len: 8, byte: !(id as u8) });
            }
            run.check_all_after_reopen(first);
        }
    }
}
