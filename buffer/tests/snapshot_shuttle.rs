//! Goal: the synchronisation between `begin_read`, the commit step and the freeing of versions
//! (`nvpage_buffer::Snapshots` over `nvpage_buffer::Versions`, DESIGN.md R5) is checked on
//! shuttle's schedulers (random, PCT, and exhaustive DFS on the smallest configuration).
//!
//! A writer runs commits: for each page it changes it takes the page's latch, keeps the old bytes
//! as the version of the pending commit, stamps the page and stores the new bytes, then runs the
//! commit step. Readers take a snapshot, read every page as `view(P, s)` does under the page's
//! latch — the "file" when the stamp is at most `s`, else the version of the smallest later
//! commit — and end. Invariants: the state a reader gets with its snapshot is the commit it
//! names; every page reads exactly as it was at that commit (so no version a live reader needs
//! is ever freed, and none it reads is a later one); when everyone is done, every version is
//! freed. Run with `cargo test -p nvpage-buffer --features shuttle --test snapshot_shuttle`.

#![cfg(feature = "shuttle")]

use std::sync::Arc;

use nvpage_buffer::{PageImage, Snapshots, Versions};
use shuttle::sync::Mutex;
use shuttle::thread;

/// One page: its latch guards its stamp and its bytes (one value stands for the whole page).
#[derive(Default)]
struct Page {
    stamp: u64,
    value: u64,
}

struct World {
    pages: Vec<Mutex<Page>>,
    snapshots: Snapshots<u64>,
    versions: Versions,
}

fn image(value: u64) -> PageImage {
    PageImage::new(Arc::from(value.to_le_bytes().as_slice()), 0)
}

fn value_of(image: &PageImage) -> u64 {
    u64::from_le_bytes(image.page().try_into().unwrap())
}

/// Which pages commit `c` changes, and the value each holds after it: every commit changes
/// page `c % pages`, and every other commit page 0 as well.
fn changes(c: u64, pages: usize) -> Vec<usize> {
    let mut v = vec![(c as usize) % pages];
    if c % 2 == 0 && !v.contains(&0) {
        v.push(0);
    }
    v
}

/// Page `p` as of commit `s`: the last commit at or below `s` that changed it (0: never).
fn expected(p: usize, s: u64, pages: usize) -> u64 {
    (1..=s).rev().find(|&c| changes(c, pages).contains(&p)).unwrap_or(0)
}

fn scenario(readers: usize, commits: u64, pages: usize, reads_each: usize) {
    let w = Arc::new(World {
        pages: (0..pages).map(|_| Mutex::new(Page::default())).collect(),
        snapshots: Snapshots::new(0),
        versions: Versions::default(),
    });
    let writer = {
        let w = w.clone();
        thread::spawn(move || {
            for c in 1..=commits {
                let pending = w.snapshots.seq() + 1;
                assert_eq!(pending, c);
                for p in changes(c, pages) {
                    let mut page = w.pages[p].lock().unwrap();
                    w.versions.insert(p as u64, pending, image(page.value));
                    page.stamp = pending;
                    page.value = c;
                }
                w.snapshots.commit(c, &w.versions);
            }
        })
    };
    let handles: Vec<_> = (0..readers)
        .map(|_| {
            let w = w.clone();
            thread::spawn(move || {
                for _ in 0..reads_each {
                    let (s, state) = w.snapshots.begin();
                    assert_eq!(*state, s, "the state published with snapshot {s}");
                    for (p, latch) in w.pages.iter().enumerate() {
                        let page = latch.lock().unwrap();
                        let seen = if page.stamp <= s {
                            page.value
                        } else {
                            let v = w.versions.find(p as u64, s);
                            value_of(&v.unwrap_or_else(|e| {
                                panic!("snapshot {s} lost page {p}'s version: {e:?}")
                            }))
                        };
                        drop(page);
                        assert_eq!(seen, expected(p, s, pages), "page {p} at snapshot {s}");
                    }
                    w.snapshots.end(s, &w.versions);
                }
            })
        })
        .collect();
    writer.join().unwrap();
    handles.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(w.snapshots.stats().readers, 0);
    assert_eq!(w.versions.stats().versions, 0, "with no reader left, every version is freed");
}

#[test]
fn random_schedules_two_readers() {
    shuttle::check_random(|| scenario(2, 4, 3, 2), 2_000);
}

#[test]
fn pct_schedules_three_readers() {
    shuttle::check_pct(|| scenario(3, 3, 2, 2), 2_000, 3);
}

#[test]
fn every_schedule_of_one_reader() {
    shuttle::check_dfs(|| scenario(1, 2, 2, 1), Some(200_000));
}
