//! Goal: the synchronisation between `begin_read`, the commit step and the freeing of versions
//! (`nvpage_buffer::Snapshots` over `nvpage_buffer::Versions`, DESIGN.md R5) is checked on
//! shuttle's schedulers (random, PCT, and exhaustive DFS on the smallest configuration).
//!
//! A writer runs commits: for each page it changes it takes the page's latch, keeps the old bytes
//! as the version of the pending commit, stamps the page and stores the new bytes, then runs the
//! commit step. Readers take a snapshot, read every page as `view(P, s)` does under the page's
//! latch — the "file" when the stamp is at most `s`, else the version of the smallest later
//! commit, made whole from the "file" and the later versions where it is kept as lines (every
//! other commit keeps lines, the others whole pages) — and end. Invariants: the state a reader gets with its snapshot is the commit it
//! names; every page reads exactly as it was at that commit (so no version a live reader needs
//! is ever freed, and none it reads is a later one); when everyone is done, every version is
//! freed. Owned snapshots (`owned_scenario`) are registered once and shared by clones on several
//! threads, the last clone's drop ending the registration, as the engine's `Snapshot` does
//! (`engine/src/snapshot.rs`: one registration in an `Arc`, ended in its `Drop`); every clone
//! reads the commit the registration names, beside the commit step. Run with `cargo test -p nvpage-buffer --features shuttle --test snapshot_shuttle`.

#![cfg(feature = "shuttle")]

use std::sync::Arc;

use nvpage_buffer::{FindError, LinesImage, PageImage, Snapshots, Version, Versions};
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

/// A page's bytes: its value, then bytes no commit changes.
fn bytes(value: u64) -> [u8; 16] {
    let mut b = [7u8; 16];
    b[..8].copy_from_slice(&value.to_le_bytes());
    b
}

/// The version commit `c` keeps of a page that held `value`: the whole page at even commits,
/// the line the commit changes at odd ones (made whole from the page when a reader needs it).
fn version(c: u64, value: u64) -> Version {
    if c.is_multiple_of(2) {
        PageImage::new(Arc::from(bytes(value).as_slice()), 0).into()
    } else {
        let mut lines = LinesImage::new(16);
        lines.push(&bytes(value), 0..8);
        Version::Lines(lines)
    }
}

fn value_of(image: &PageImage) -> u64 {
    assert_eq!(image.page()[8..], [7u8; 8], "the bytes no commit changes");
    u64::from_le_bytes(image.page()[..8].try_into().unwrap())
}

/// Page `p` as of `s` from its versions, `page` (its latch held) being what the file holds.
fn from_versions(w: &World, p: usize, s: u64, page: &Page) -> u64 {
    let current = |buf: &mut [u8]| -> Result<(), ()> {
        buf.copy_from_slice(&bytes(page.value));
        Ok(())
    };
    match w.versions.find(p as u64, s, current) {
        Ok(image) => value_of(&image),
        Err(FindError::NoVersion(e)) => panic!("snapshot {s} lost page {p}'s version: {e:?}"),
        Err(FindError::Current(())) => unreachable!(),
    }
}

/// Which pages commit `c` changes, and the value each holds after it: every commit changes
/// page `c % pages`, and every other commit page 0 as well.
fn changes(c: u64, pages: usize) -> Vec<usize> {
    let mut v = vec![(c as usize) % pages];
    if c.is_multiple_of(2) && !v.contains(&0) {
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
                    w.versions.insert(p as u64, pending, version(pending, page.value), true);
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
                            from_versions(&w, p, s, &page)
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

/// The engine's owned snapshot, reduced to what the registry sees: one registration, shared.
struct Registration {
    world: Arc<World>,
    seq: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.world.snapshots.end(self.seq, &self.world.versions);
    }
}

/// Every page as `view(P, s)` reads it, checked against the model.
fn read_all(w: &World, s: u64, pages: usize) {
    for (p, latch) in w.pages.iter().enumerate() {
        let page = latch.lock().unwrap();
        let seen = if page.stamp <= s { page.value } else { from_versions(w, p, s, &page) };
        drop(page);
        assert_eq!(seen, expected(p, s, pages), "page {p} at snapshot {s}");
    }
}

/// A writer runs `commits` commits while one owned snapshot, taken first, is read by `clones`
/// threads that each hold a clone and drop it when done, in whatever order they finish; a
/// second owned snapshot is taken mid-way and read the same way.
fn owned_scenario(clones: usize, commits: u64, pages: usize) {
    let w = Arc::new(World {
        pages: (0..pages).map(|_| Mutex::new(Page::default())).collect(),
        snapshots: Snapshots::new(0),
        versions: Versions::default(),
    });
    let take = |w: &Arc<World>| {
        let (seq, state) = w.snapshots.begin();
        assert_eq!(*state, seq);
        Arc::new(Registration { world: w.clone(), seq })
    };
    let first = take(&w);
    let writer = {
        let w = w.clone();
        thread::spawn(move || {
            for c in 1..=commits {
                for p in changes(c, pages) {
                    let mut page = w.pages[p].lock().unwrap();
                    w.versions.insert(p as u64, c, version(c, page.value), true);
                    page.stamp = c;
                    page.value = c;
                }
                w.snapshots.commit(c, &w.versions);
            }
        })
    };
    let second = take(&w);
    let readers: Vec<_> = [first, second]
        .into_iter()
        .flat_map(|reg| {
            let handles: Vec<_> = (0..clones)
                .map(|_| {
                    let reg = reg.clone();
                    thread::spawn(move || read_all(&reg.world, reg.seq, pages))
                })
                .collect();
            // The taker's own clone goes first: the registration lives on in the readers'.
            drop(reg);
            handles
        })
        .collect();
    writer.join().unwrap();
    readers.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(w.snapshots.stats().readers, 0, "the last clone ended each registration");
    assert_eq!(w.versions.stats().versions, 0, "with no reader left, every version is freed");
}

#[test]
fn random_schedules_of_owned_snapshots_read_by_clones() {
    shuttle::check_random(|| owned_scenario(2, 3, 2), 2_000);
}

#[test]
fn pct_schedules_of_owned_snapshots_read_by_clones() {
    shuttle::check_pct(|| owned_scenario(2, 3, 3), 2_000, 3);
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
