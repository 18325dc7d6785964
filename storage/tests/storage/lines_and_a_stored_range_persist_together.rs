//! Goal: `RawFile::store_persist_lines_with` makes a range the caller stored elsewhere durable
//! in the same step as the lines (the log's watermark beside a record): in the cache-line modes
//! with the lines' one fence and no persist of its own, in `msync` mode with a second `msync`.
//! The simulator's durable image holds both when the call returns (the lines stored by
//! `LineStreamer::store`, and by `store_avx2` where the CPU has AVX2), and a range that overlaps
//! the lines or passes the file's end is refused before anything is stored.

use crate::common;

use common::{disk, shm_with_flush};
use nvpage_storage::sim::Sim;
use nvpage_storage::{FileOptions, PersistRequest, RawFile};

const LINES_AT: u64 = 4096;
const WORD_AT: u64 = 128;

/// A new mapped file of 16 KiB at `path`, its length durable.
fn mapped_file(path: &std::path::Path, persistence: PersistRequest) -> RawFile {
    let opts = FileOptions { mapped: true, max_bytes: 1 << 20, persistence, ..Default::default() };
    let f = RawFile::create(path, &opts).unwrap();
    f.grow_to(16 << 10).unwrap();
    f.sync().unwrap();
    f
}

/// Stores a word at `WORD_AT` through the mapping, then three lines at `LINES_AT` with the word
/// beside them (with `store_avx2` if `wide`); returns the persists the call counted and the
/// durable image after it.
fn store_both(
    dir: &std::path::Path,
    persistence: PersistRequest,
    wide: bool,
) -> (u64, Vec<u8>, RawFile) {
    let sim = Sim::attach(dir, 7);
    let path = dir.join(format!("{persistence:?}-{wide}.f"));
    let f = mapped_file(&path, persistence);
    let base = f.map_base().expect("mapped");
    // SAFETY: `WORD_AT + 8` lies below the file's length; this thread is the file's only user.
    unsafe { base.as_ptr().add(WORD_AT as usize).cast::<u64>().write(0x0123_4567_89AB_CDEF) };
    let before = sim.counts().persists;
    // SAFETY: both ranges lie below the file's length, apart, and this thread is their only user.
    unsafe {
        f.store_persist_lines_with(LINES_AT, 3, Some((WORD_AT, 8)), |out| {
            for i in 0..3 {
                let line = [0x40 + i as u8; 64];
                #[cfg(target_arch = "x86_64")]
                if wide {
                    // SAFETY: `wide` only where AVX2 was detected (`widths`).
                    out.store_avx2(i, &line);
                    continue;
                }
                out.store(i, &line);
            }
        })
    }
    .unwrap();
    let persists = sim.counts().persists - before;
    let image = sim.durable_image(&path).expect("followed");
    (persists, image, f)
}

fn assert_both_durable(image: &[u8], what: &str) {
    let word = u64::from_le_bytes(image[WORD_AT as usize..][..8].try_into().unwrap());
    assert_eq!(word, 0x0123_4567_89AB_CDEF, "{what}: the stored word is durable");
    for i in 0..3 {
        let at = LINES_AT as usize + 64 * i;
        assert!(image[at..at + 64].iter().all(|&b| b == 0x40 + i as u8), "{what}: line {i}");
    }
}

/// The line stores to try: the baseline one, and the AVX2 one where the CPU has it.
fn widths() -> Vec<bool> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        return vec![false, true];
    }
    vec![false]
}

#[test]
fn the_word_costs_no_persist_of_its_own_on_the_cache_line_path() {
    let Some(m) = shm_with_flush() else { return };
    for req in [PersistRequest::CacheLine, PersistRequest::Eadr] {
        for wide in widths() {
            let (persists, image, _f) = store_both(m.dir.path(), req, wide);
            assert_eq!(persists, 1, "{req:?}: one fence for the lines and the word");
            assert_both_durable(&image, &format!("{req:?} wide {wide}"));
        }
    }
}

#[test]
fn in_msync_mode_both_ranges_are_synced() {
    let m = disk();
    for wide in widths() {
        let (persists, image, _f) = store_both(m.dir.path(), PersistRequest::Auto, wide);
        assert_eq!(persists, 2, "an msync of the lines and one of the word");
        assert_both_durable(&image, &format!("msync wide {wide}"));
    }
}

#[test]
fn a_range_over_the_lines_or_past_the_end_is_refused() {
    let m = disk();
    let (_, _, f) = store_both(m.dir.path(), PersistRequest::Auto, false);
    for stored in [(LINES_AT + 64, 8), (LINES_AT - 4, 8), ((16 << 10) - 4, 8), (u64::MAX - 2, 8)] {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: a refused range is refused before anything is stored.
            unsafe { f.store_persist_lines_with(LINES_AT, 3, Some(stored), |_| ()) }
        }));
        assert!(r.is_err(), "{stored:?} should be refused");
    }
}

#[test]
fn a_fill_that_panics_leaves_the_file_usable() {
    // The lines stored before the panic are fenced on the way out (not observable here); what
    // a caller sees is the panic, and a file that takes the next store and makes it durable.
    let Some(m) = shm_with_flush() else { return };
    let sim = Sim::attach(m.dir.path(), 9);
    let path = m.dir.path().join("panics.f");
    let f = mapped_file(&path, PersistRequest::CacheLine);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the range lies below the file's length; this thread is its only user.
        unsafe {
            f.store_persist_lines(LINES_AT, 2, |out| {
                out.store(0, &[0x11; 64]);
                panic!("the caller's fill fails");
            })
        }
    }));
    assert!(r.is_err(), "the panic reaches the caller");
    // SAFETY: as above.
    unsafe {
        f.store_persist_lines(LINES_AT, 2, |out| (0..2).for_each(|i| out.store(i, &[0x22; 64])))
    }
    .unwrap();
    let image = sim.durable_image(&path).expect("followed");
    let at = LINES_AT as usize;
    assert!(image[at..at + 128].iter().all(|&b| b == 0x22), "the next store is durable");
}
