//! Goal: the power-loss simulator does, on real files opened through `RawFile` and the layers,
//! exactly what it promises: a crash with nothing unpersisted changes no byte; an unpersisted
//! `pwrite` is kept, dropped or torn (each 8-byte word old or new) by seed, with all three
//! outcomes over enough seeds (an 8-byte word is kept or dropped, never torn), and the same seed
//! from the same state gives the same file; an `msync` of a range persists the whole OS pages it
//! touches and nothing else, and a cache-line flush the whole 64-byte lines; a sync through an
//! open file description of the caller's own persists everything; a file removed and
//! created again under the same name does not inherit the old file's durable bytes; and files
//! outside the simulated directory are neither followed nor counted.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{fill, media, opts};
use nvpage_storage::persist::os_page_size;
use nvpage_storage::sim::{CrashReport, Sim, Tear};
use nvpage_storage::{FileOptions, Layer, PersistMode, RawFile};

fn raw_opts(mapped: bool) -> FileOptions {
    FileOptions { mapped, ..FileOptions::default() }
}

/// `pwrite` into `f`, mapped or not: what the persists under test must carry to the medium.
fn pwrite(f: &RawFile, buf: &[u8], at: u64) {
    // SAFETY: these tests never read a file through its mapping, so no reference into it exists.
    unsafe { f.write_at_mapped(buf, at) }.unwrap();
}

#[test]
fn crash_with_nothing_unpersisted_changes_nothing() {
    for medium in media() {
        for layer in Layer::ALL {
            let path = medium.path(&format!("{layer}.db"));
            let sim = Sim::attach(medium.dir.path(), 3);
            fill(&*opts(layer, 8192).create(&path).unwrap(), 20, 1);
            let before = std::fs::read(&path).unwrap();
            assert_eq!(sim.durable_image(&path).as_deref(), Some(&before[..]), "{layer}");
            for tear in Tear::ALL {
                let r = sim.crash(tear);
                assert_eq!(r.files, 1, "{} {layer}: {r:?}", medium.name);
                assert_eq!(r.differing_units, 0, "{} {layer}: {r:?}", medium.name);
                assert_eq!(std::fs::read(&path).unwrap(), before, "{} {layer}", medium.name);
            }
        }
    }
}

/// What became of an unpersisted overwrite of one tear unit of bytes `0xAA` with bytes `0x55`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Fate {
    Kept,
    Dropped,
    Torn,
}

const AT: u64 = 1024;

/// On a fresh directory: one synced tear unit of 0xAA, overwritten with 0x55 but not synced,
/// then a crash with `seed`. Returns the surviving file and the report.
fn overwrite_and_crash(dir: &Path, seed: u64, tear: Tear) -> (Vec<u8>, CrashReport) {
    let len = tear.bytes();
    let path = dir.join("raw");
    let sim = Sim::attach(dir, seed);
    let f = RawFile::create(&path, &raw_opts(false)).unwrap();
    f.grow_to(4096).unwrap();
    pwrite(&f, &vec![0xAA; len], AT);
    f.sync().unwrap();
    pwrite(&f, &vec![0x55; len], AT);
    drop(f);
    let report = sim.crash(tear);
    (std::fs::read(&path).unwrap(), report)
}

fn fate(file: &[u8], tear: Tear, report: &CrashReport) -> Fate {
    assert_eq!(file.len(), 4096);
    let (at, len) = (AT as usize, tear.bytes());
    let (before, range, after) = (&file[..at], &file[at..at + len], &file[at + len..]);
    assert!(before.iter().chain(after).all(|&b| b == 0), "bytes outside the write changed");
    assert_eq!(report.differing_units, 1);
    for word in range.chunks(8) {
        assert!(
            word.iter().all(|&b| b == 0xAA) || word.iter().all(|&b| b == 0x55),
            "an 8-byte word mixes old and new: {word:?}"
        );
    }
    let fate = if range.iter().all(|&b| b == 0x55) {
        Fate::Kept
    } else if range.iter().all(|&b| b == 0xAA) {
        Fate::Dropped
    } else {
        Fate::Torn
    };
    // One unit: the report names the same fate.
    let counted = [report.took_new, report.kept_old, report.torn];
    assert_eq!(counted, [Fate::Kept, Fate::Dropped, Fate::Torn].map(|f| u64::from(f == fate)));
    fate
}

#[test]
fn unpersisted_pwrite_is_kept_dropped_or_torn_by_seed() {
    for medium in media() {
        for tear in Tear::ALL {
            let mut fates = BTreeSet::new();
            for seed in 0..24 {
                let a = tempfile::tempdir_in(medium.dir.path()).unwrap();
                let b = tempfile::tempdir_in(medium.dir.path()).unwrap();
                let (file_a, report_a) = overwrite_and_crash(a.path(), seed, tear);
                let (file_b, report_b) = overwrite_and_crash(b.path(), seed, tear);
                assert!(
                    file_a == file_b,
                    "{} {tear:?} seed {seed}: not deterministic",
                    medium.name
                );
                assert_eq!(report_a, report_b);
                fates.insert(fate(&file_a, tear, &report_a));
            }
            // An aligned 8-byte word is failure-atomic: it never tears.
            let want: &[Fate] = if tear == Tear::Word {
                &[Fate::Kept, Fate::Dropped]
            } else {
                &[Fate::Kept, Fate::Dropped, Fate::Torn]
            };
            assert_eq!(
                fates.into_iter().collect::<Vec<_>>(),
                want,
                "{} {tear:?}: every fate occurs over the seeds",
                medium.name
            );
        }
    }
}

#[test]
fn different_seeds_give_different_survivors() {
    let m = common::disk();
    let survivors: BTreeSet<Vec<u8>> = (0..8)
        .map(|seed| {
            let d = tempfile::tempdir_in(m.dir.path()).unwrap();
            overwrite_and_crash(d.path(), seed, Tear::Line).0
        })
        .collect();
    assert!(survivors.len() > 4, "only {} distinct survivors from 8 seeds", survivors.len());
}

/// `sync_own` (a sync through an open file description of the caller's own) makes everything
/// written so far durable, from several threads at once, like `sync`.
#[test]
fn sync_own_persists_every_write_from_every_thread() {
    for medium in media() {
        let dir = tempfile::tempdir_in(medium.dir.path()).unwrap();
        let path = dir.path().join("own");
        let sim = Sim::attach(dir.path(), 5);
        let f = RawFile::create(&path, &raw_opts(true)).unwrap();
        f.grow_to(1 << 20).unwrap();
        // Two descriptions for three threads: the third waits for one to come free.
        f.open_sync_handles(2).unwrap();
        f.sync_own().unwrap();
        pwrite(&f, &[9; 300], 100);
        assert!(sim.durable_image(&path).unwrap()[100..400] != [9; 300], "{}", medium.name);
        f.sync_own().unwrap();
        assert!(sim.durable_image(&path).unwrap()[100..400] == [9; 300], "{}", medium.name);
        std::thread::scope(|s| {
            for t in 0..3u64 {
                let f = &f;
                s.spawn(move || {
                    for i in 0..20u64 {
                        let at = (t * 20 + i + 1) * 4096 + 7;
                        pwrite(f, &[t as u8 + 1; 300], at);
                        f.sync_own().unwrap();
                    }
                });
            }
        });
        let live = std::fs::read(&path).unwrap();
        assert!(sim.durable_image(&path).unwrap() == live, "{}: all durable", medium.name);
        drop(f);
        sim.crash(Tear::Line);
        assert!(std::fs::read(&path).unwrap() == live, "{}: survives the crash", medium.name);
    }
}

#[test]
fn msync_persists_whole_os_pages() {
    let page = os_page_size() as u64;
    for medium in media() {
        for seed in 0..6 {
            let ctx = format!("{} seed {seed}", medium.name);
            let dir = tempfile::tempdir_in(medium.dir.path()).unwrap();
            let path = dir.path().join("mapped");
            let sim = Sim::attach(dir.path(), seed);
            let f = RawFile::create(&path, &raw_opts(true)).unwrap();
            assert_eq!(f.mode(), PersistMode::Msync, "{ctx}");
            f.grow_to(4 * page).unwrap();
            // Writes in OS pages 1, 2 and 3; the persisted range is 20 bytes straddling 1 and 2.
            let writes =
                [(page + 10, 100), (page + 3000, 10), (2 * page + 500, 10), (3 * page, 10)];
            for (i, &(at, len)) in writes.iter().enumerate() {
                pwrite(&f, &vec![i as u8 + 1; len], at);
            }
            f.persist_range(2 * page - 10, 20).unwrap();
            let live = std::fs::read(&path).unwrap();
            let durable = sim.durable_image(&path).unwrap();
            let p = page as usize;
            assert_eq!(durable.len(), live.len(), "{ctx}");
            assert!(durable[..2 * p] == live[..2 * p], "{ctx}: OS pages 0-1 are durable");
            assert!(durable[2 * p..3 * p] == live[2 * p..3 * p], "{ctx}: all of OS page 2 is");
            assert!(durable[3 * p..].iter().all(|&b| b == 0), "{ctx}: OS page 3 is not");
            drop(f);
            sim.crash(Tear::ALL[(seed % 3) as usize]);
            let after = std::fs::read(&path).unwrap();
            assert!(after[..3 * p] == live[..3 * p], "{ctx}: persisted pages survive the crash");
        }
    }
}

#[test]
fn a_file_created_again_starts_from_its_own_bytes() {
    for medium in media() {
        for seed in 0..12 {
            let dir = tempfile::tempdir_in(medium.dir.path()).unwrap();
            let path = dir.path().join("again");
            let sim = Sim::attach(dir.path(), seed);
            let f = RawFile::create(&path, &raw_opts(false)).unwrap();
            f.grow_to(8192).unwrap();
            pwrite(&f, &[0x11; 8192], 0);
            f.sync().unwrap();
            drop(f);
            std::fs::remove_file(&path).unwrap();
            // The new file's only durable state is empty: nothing of the old one may reappear.
            let f = RawFile::create(&path, &raw_opts(false)).unwrap();
            pwrite(&f, &[0x22; 4096], 0);
            drop(f);
            sim.crash(Tear::Sector);
            let after = std::fs::read(&path).unwrap();
            assert!(after.len() <= 4096, "{} seed {seed}: {} bytes", medium.name, after.len());
            assert!(!after.contains(&0x11), "{} seed {seed}: the old file came back", medium.name);
        }
    }
}

#[test]
fn files_outside_the_directory_are_not_followed() {
    let followed = common::disk();
    let other = common::disk();
    let sim = Sim::attach(followed.dir.path(), 1);
    let path = other.path("free.db");
    drop(opts(Layer::Pread, 4096).create(&path).unwrap());
    assert_eq!(sim.durable_image(&path), None);
    assert_eq!(sim.counts(), Default::default(), "calls on other files are not counted");
    assert_eq!(sim.crash(Tear::Sector).files, 0);
}

#[test]
fn cache_line_flush_persists_whole_lines() {
    let Some(m) = common::shm() else { return };
    if nvpage_storage::persist::FlushInstr::detect().is_none() {
        return;
    }
    let opts =
        FileOptions { persistence: nvpage_storage::PersistRequest::CacheLine, ..raw_opts(true) };
    let path = m.path("lines");
    let sim = Sim::attach(m.dir.path(), 5);
    let f = RawFile::create(&path, &opts).unwrap();
    assert_eq!(f.mode(), PersistMode::EmulatedNvm);
    f.grow_to(4096).unwrap();
    // Line 1 gets two writes, line 2 one; only a few bytes of line 1 are persisted.
    pwrite(&f, &[0x11; 5], 64 + 10);
    pwrite(&f, &[0x22; 5], 64 + 50);
    pwrite(&f, &[0x33; 5], 128 + 1);
    f.persist_range(64 + 10, 5).unwrap();
    let live = std::fs::read(&path).unwrap();
    let durable = sim.durable_image(&path).unwrap();
    assert!(durable[64..128] == live[64..128], "the whole of line 1 is durable");
    assert!(durable[128..].iter().all(|&b| b == 0), "line 2 is not");
}
