//! Goal: a closure passed to `BufferPool::with_file_page(id, …)` that writes pages back never
//! hangs the thread on a latch it holds itself, on every layer. Writing back page `id` itself is
//! a typed `LatchHeld` where the closure reads the page in place (SE2: a store would change the
//! bytes it holds) and simply succeeds where it reads a copy (pread, SE1); writing back any other
//! page — one of the same lock stripe of the layer (`id + 256`) included — succeeds. The file
//! then holds what was written back. A hang would hang the test itself (no watchdog: the result
//! is asserted, not timed).

use crate::common;

use std::sync::Arc;

use nvpage_buffer::{BufferError, BufferPool, NoUndo};
use nvpage_storage::{Layer, PageId};

use common::{fill_words, open_pool, scratch_dir, uniform_word};

const P: PageId = PageId(3);
/// A page of the same stripe as `P` in the mapped layers (256 stripes, by page id).
const SAME_STRIPE: PageId = PageId(3 + 256);

/// The value every word of page `id` holds in the file.
fn stored(pool: &BufferPool, id: PageId) -> u64 {
    let mut v = 0;
    pool.with_file_page(id, &mut |b| v = uniform_word(b, "stored page")).unwrap();
    v
}

fn run(layer: Layer) {
    let dir = scratch_dir();
    let pool = open_pool(dir.path(), layer, true, 8, Arc::new(NoUndo));
    pool.grow(SAME_STRIPE.0 + 1).unwrap();
    for id in [P, SAME_STRIPE] {
        fill_words(&mut pool.new_page(id).unwrap(), 1);
        pool.flush_page(id).unwrap();
        // Dirty again, with other bytes, for the closure to write back.
        fill_words(&mut pool.write(id).unwrap(), 2);
    }
    let (mut seen, mut same, mut other) = (None, None, None);
    pool.with_file_page(P, &mut |b| {
        seen = Some(uniform_word(b, "the page the closure reads"));
        same = Some(pool.flush_page(P));
        other = Some(pool.flush_page(SAME_STRIPE));
    })
    .unwrap();
    assert_eq!(seen, Some(1), "{layer}: the closure reads the file's bytes");
    match (layer, same.unwrap()) {
        (Layer::Se2, Err(BufferError::LatchHeld { page })) => assert_eq!(page, P, "{layer}"),
        (Layer::Se2, r) => panic!("{layer}: writing back the page read in place: {r:?}"),
        (_, r) => r.unwrap_or_else(|e| panic!("{layer}: writing back the page copied: {e}")),
    }
    other.unwrap().unwrap_or_else(|e| panic!("{layer}: writing back another page: {e}"));
    assert_eq!(stored(&pool, SAME_STRIPE), 2, "{layer}: the other page was written back");
    pool.flush_page(P).unwrap();
    assert_eq!(stored(&pool, P), 2, "{layer}: the page is written back once the closure ends");
}

#[test]
fn storing_from_inside_with_file_page_never_hangs() {
    for layer in Layer::compiled() {
        run(layer);
    }
}
