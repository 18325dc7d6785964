//! The sequential pass: read every byte of every data page of a file, in order, through a layer.
//!
//! pread and SE1 copy each page into one reused frame (`read_page`); SE2 reads it in place
//! (`with_page`, no copy). Before the pass the file is advised sequential (`MADV_SEQUENTIAL` over
//! the mapping, `POSIX_FADV_SEQUENTIAL` for pread); during it the mapped layers advise a window
//! of pages ahead (`will_need`: on tmpfs `MADV_POPULATE_READ`, each 2 MiB window once per open,
//! so the pass does not take a page fault per few pages; on a disk `MADV_WILLNEED`, read-ahead in
//! the background). pread needs no such hint: the kernel's read-ahead follows sequential
//! `pread`s.
//!
//! Pre-faulting pages that are already mapped is not free: `MADV_POPULATE_READ` walks every page
//! through `get_user_pages` and marks it accessed, which on tmpfs cost about a third of a warm
//! pass's CPU time here (the storage layer now skips windows it populated). By default only the
//! first pass after open advises ([`Prefault::FirstPass`](super::args::Prefault)).

use nvpage_storage::{FileLayer, Layer, PageId, Result};

use crate::memory::sum_words;

/// Reads pages `1..page_count` of `layer`'s file, summing every word; returns the sum (which is
/// the same for every layer over the same file). With `prefault` (mapped layers only), keeps one
/// to two windows of `window_pages` pages pre-faulted ahead of the reader.
pub fn pass(layer: &dyn FileLayer, prefault: bool, window_pages: u64) -> Result<u64> {
    let count = layer.file().page_count();
    let mapped = prefault && layer.layer().is_mapped();
    let mut frame = vec![0u8; layer.file().page_size().bytes()];
    let mut acc = 0u64;
    // Pages below `hinted` have been pre-faulted; keep one to two windows ahead of the reader.
    let mut hinted = 1u64;
    layer.sequential(true);
    for id in 1..count {
        while mapped && hinted < (id + 2 * window_pages).min(count) {
            layer.will_need(PageId(hinted), window_pages);
            hinted += window_pages;
        }
        match layer.layer() {
            Layer::Se2 => {
                layer.with_page(PageId(id), &mut |b| acc = acc.wrapping_add(sum_words(b)))?
            }
            _ => {
                layer.read_page(PageId(id), &mut frame)?;
                acc = acc.wrapping_add(sum_words(&frame));
            }
        }
    }
    layer.sequential(false);
    Ok(std::hint::black_box(acc))
}
