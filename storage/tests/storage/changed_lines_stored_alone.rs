//! Goal: storing only the lines of a page that changed (`FileLayer::store_sealed`) leaves the page
//! exactly as storing it whole would, on every layer, medium, persistence path (`pwrite`, `msync`,
//! cache-line stores where the CPU has a flush) and page size, wherever the lines lie (none, one,
//! beside each other, far apart, at both ends of the page, every line), and still after a reopen.

#![forbid(unsafe_code)]

use crate::common;

use common::{fill, media, opts, read, shm_with_flush};
use nvpage_storage::page;
use nvpage_storage::{Layer, OpenOptions, PageId, PersistRequest};

/// Bytes of a line: the granule `store_sealed`'s callers name changes in.
const LINE: usize = 64;

/// The payload lines to change (by index) in a page of `lines` lines, ascending. Line 0, holding
/// the checksum, changes with every one of them when the page is sealed.
fn patterns(lines: usize) -> Vec<Vec<usize>> {
    let last = lines - 1;
    let all = vec![
        vec![],
        vec![1],
        vec![last],
        vec![1, 2, 3],
        vec![5, 20],
        vec![31, 33, 62, 64, 65],
        vec![lines / 2, last],
        vec![2, lines / 4, lines / 2, 3 * lines / 4, last],
        (1..lines).step_by(7).collect(),
        (1..lines).collect(),
    ];
    // Lines past a small page's end are left out of its patterns.
    all.into_iter().map(|p| p.into_iter().filter(|&i| i < lines).collect()).collect()
}

#[test]
fn the_changed_lines_alone_leave_the_page_as_a_whole_store_would() {
    for ps in [4096, 8192, 65536] {
        let on = media().into_iter().map(|m| (m, PersistRequest::Auto));
        for (medium, persistence) in
            on.chain(shm_with_flush().map(|m| (m, PersistRequest::CacheLine)))
        {
            for layer in Layer::ALL {
                let path = medium.path(&format!("{layer}-{ps}.db"));
                let l = OpenOptions { persistence, ..opts(layer, ps) }.create(&path).unwrap();
                let written = fill(&*l, 3, ps as u64);
                // What pages 1 and 2 should hold.
                let mut pages = [written[1].clone(), written[2].clone()];
                for (n, changed) in patterns(ps / LINE).into_iter().enumerate() {
                    let ctx = format!(
                        "{} {persistence:?} {layer} {ps} pattern {n} {changed:?}",
                        medium.name
                    );
                    let at = n % 2;
                    let id = PageId(1 + at as u64);
                    let mut new = pages[at].clone();
                    for &i in &changed {
                        new[i * LINE..(i + 1) * LINE].iter_mut().for_each(|b| *b ^= 0xA5);
                    }
                    page::seal(&mut new, id);
                    // The lines that differ: line 0 (the checksum) and the pattern's.
                    let mut at_lines = vec![0];
                    if n % 3 == 2 {
                        // Line 0 already in the file, so the lines to store start past it:
                        // where they lie in the page is the store's to get right.
                        l.restore_parts(id, &[(0, &new[..LINE])]).unwrap();
                        at_lines.clear();
                    }
                    at_lines.extend(&changed);
                    let lines: Vec<_> =
                        at_lines.iter().map(|&i| i * LINE..(i + 1) * LINE).collect();
                    l.store_sealed(id, &new, &lines).unwrap();
                    pages[at] = new;
                    for (i, page) in pages.iter().enumerate() {
                        assert_eq!(&read(&*l, PageId(1 + i as u64)).unwrap(), page, "{ctx}");
                    }
                }
                l.sync().unwrap();
                drop(l);
                let l = OpenOptions { persistence, ..OpenOptions::new(layer) }.open(&path).unwrap();
                for (i, page) in pages.iter().enumerate() {
                    let ctx = format!(
                        "{} {persistence:?} {layer} {ps} reopened, page {}",
                        medium.name,
                        i + 1
                    );
                    assert_eq!(&read(&*l, PageId(1 + i as u64)).unwrap(), page, "{ctx}");
                }
            }
        }
    }
}
