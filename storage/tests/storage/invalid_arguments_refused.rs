//! Goal: bad arguments are typed errors and change nothing: page ids at or past the page count
//! (`PageOutOfRange`, for every way of reaching a page), frames that are not one page
//! (`BufferSize`), lines to store or parts to restore that are out of order or past the page
//! (`BufferSize`), page sizes that are not a power of two from 4 KiB to 64 KiB
//! (`InvalidPageSize`), creating over an existing file (`AlreadyExists`), a persist of bytes
//! outside the file (`RangeOutOfFile`), a maximum size past what is supported
//! (`MaxBytesTooLarge`), and a read-ahead hint whose end overflows (ignored).

#![forbid(unsafe_code)]

use crate::common;

use std::path::Path;

use common::{fill, media, opts, read};
use nvpage_storage::file::MAX_SUPPORTED_FILE_BYTES;
use nvpage_storage::{
    FileLayer, FileOptions, Layer, OpenOptions, PageId, PageSize, RawFile, StorageError,
};

const PS: usize = 8192;
const PAGES: u64 = 5;

fn out_of_range<T: std::fmt::Debug>(r: Result<T, StorageError>, id: u64) -> bool {
    matches!(r, Err(StorageError::PageOutOfRange { page, page_count })
        if page == PageId(id) && page_count == PAGES)
}

/// Runs `f` on a new file of every layer on every medium, filled with `PAGES` pages of
/// pattern `seed`: a label for messages, the file's path, the layer, and the pages written.
fn each_filled_layer(seed: u64, mut f: impl FnMut(&str, &Path, Box<dyn FileLayer>, &[Vec<u8>])) {
    for medium in media() {
        for layer in Layer::ALL {
            let ctx = format!("{} {layer}", medium.name);
            let path = medium.path(&format!("{layer}.db"));
            let l = opts(layer, PS).create(&path).unwrap();
            let written = fill(&*l, PAGES, seed);
            f(&ctx, &path, l, &written);
        }
    }
}

#[test]
fn page_ids_past_the_page_count_are_out_of_range() {
    each_filled_layer(1, |ctx, path, l, written| {
        for id in [PAGES, PAGES + 1, 1 << 40, u64::MAX] {
            let mut f = vec![0u8; PS];
            assert!(out_of_range(l.read_page(PageId(id), &mut f), id), "{ctx} read {id}");
            assert!(out_of_range(l.write_page(PageId(id), &mut f), id), "{ctx} write {id}");
            assert!(out_of_range(l.with_page(PageId(id), &mut |_| {}), id), "{ctx} with {id}");
            assert!(out_of_range(l.mapped_page(PageId(id)), id), "{ctx} mapped {id}");
            assert!(f.iter().all(|&b| b == 0), "{ctx}: a refused call touched the frame");
        }
        // Nothing was written past the count, and the file still holds its pages.
        l.sync().unwrap();
        let layer = l.layer();
        drop(l);
        let l = OpenOptions::new(layer).open(path).unwrap();
        assert_eq!(l.file().page_count(), PAGES, "{ctx}");
        for id in 1..PAGES {
            assert_eq!(read(&*l, PageId(id)).unwrap(), written[id as usize], "{ctx}");
        }
    });
}

#[test]
fn frames_that_are_not_one_page_are_refused() {
    each_filled_layer(2, |ctx, _, l, written| {
        for len in [0, 1, 4096, PS - 1, PS + 1, 2 * PS] {
            let mut f = vec![0xEEu8; len];
            let sized = |r: Result<(), StorageError>| {
                matches!(r, Err(StorageError::BufferSize { expected, found })
                    if expected == PS && found == len)
            };
            assert!(sized(l.read_page(PageId(1), &mut f)), "{ctx} read into {len}");
            assert!(sized(l.write_page(PageId(1), &mut f)), "{ctx} write from {len}");
            assert!(f.iter().all(|&b| b == 0xEE), "{ctx}: a refused call touched the frame");
        }
        assert_eq!(read(&*l, PageId(1)).unwrap(), written[1], "{ctx}: page 1 unchanged");
    });
}

#[test]
// Ranges of a page, not Vecs of indices; one of them deliberately reversed.
#[allow(clippy::single_range_in_vec_init, clippy::reversed_empty_ranges)]
fn lines_and_parts_out_of_order_or_past_the_page_are_refused() {
    each_filled_layer(3, |ctx, _, l, written| {
        let frame = vec![0x5Au8; PS];
        let bad_lines: [&[std::ops::Range<usize>]; 4] =
            [&[128..192, 0..64], &[0..128, 64..192], &[PS - 64..PS + 64], &[64..0]];
        for lines in bad_lines {
            let r = l.store_sealed(PageId(1), &frame, lines);
            assert!(matches!(r, Err(StorageError::BufferSize { .. })), "{ctx} {lines:?}: {r:?}");
        }
        let bytes = [0x33u8; 64];
        let r = l.restore_parts(PageId(1), &[(PS - 32, &bytes)]);
        assert!(matches!(r, Err(StorageError::BufferSize { .. })), "{ctx}: {r:?}");
        assert_eq!(read(&*l, PageId(1)).unwrap(), written[1], "{ctx}: page 1 unchanged");
    });
}

#[test]
fn page_sizes_outside_the_rule_are_invalid() {
    for bad in
        [0u64, 1, 512, 2048, 4095, 4097, 6144, 12288, 65535, 65537, 131072, 1 << 40, u64::MAX]
    {
        assert!(
            matches!(PageSize::new(bad), Err(StorageError::InvalidPageSize(b)) if b == bad),
            "{bad}"
        );
    }
    for good in common::PAGE_SIZES {
        assert_eq!(PageSize::new(good as u64).unwrap().bytes(), good);
    }
    assert_eq!(PageSize::default().bytes(), 8192);
}

#[test]
fn creating_over_an_existing_file_is_refused() {
    for medium in media() {
        let ours = medium.path("ours.db");
        let written = fill(&*opts(Layer::Pread, PS).create(&ours).unwrap(), PAGES, 3);
        let foreign = medium.path("foreign.txt");
        std::fs::write(&foreign, b"not a database").unwrap();
        for layer in Layer::ALL {
            for path in [&ours, &foreign] {
                let before = std::fs::read(path).unwrap();
                let r = opts(layer, 4096).create(path);
                assert!(
                    matches!(&r, Err(StorageError::AlreadyExists { path: p }) if p == path),
                    "{} {layer} {}: {r:?}",
                    medium.name,
                    path.display()
                );
                assert_eq!(std::fs::read(path).unwrap(), before, "the existing file is untouched");
            }
        }
        let l = OpenOptions::new(Layer::Se2).open(&ours).unwrap();
        assert_eq!(read(&*l, PageId(4)).unwrap(), written[4]);
    }
}

#[test]
fn persists_outside_the_file_and_unsupported_sizes_are_refused() {
    for medium in media() {
        let path = medium.path("raw");
        let f = RawFile::create(&path, &FileOptions { mapped: true, ..FileOptions::default() })
            .unwrap();
        f.grow_to(8192).unwrap();
        f.persist_range(0, 8192).unwrap();
        for (offset, len) in [(8192, 1), (4096, 8192), (1 << 40, 64), (u64::MAX, 2)] {
            assert!(
                matches!(
                    f.persist_range(offset, len),
                    Err(StorageError::RangeOutOfFile { file_bytes: 8192, .. })
                ),
                "{}: {offset}+{len}",
                medium.name
            );
        }
        assert!(!f.is_poisoned(), "{}: a refused range poisons nothing", medium.name);
        drop(f);
        for mapped in [false, true] {
            let huge = FileOptions { mapped, max_bytes: u64::MAX, ..FileOptions::default() };
            assert!(matches!(
                RawFile::open(&path, &huge),
                Err(StorageError::MaxBytesTooLarge { limit_bytes: MAX_SUPPORTED_FILE_BYTES, .. })
            ));
        }
        for layer in Layer::ALL {
            let path = medium.path(&format!("{layer}-hint.db"));
            let l = opts(layer, PS).create(&path).unwrap();
            fill(&*l, PAGES, 1);
            l.will_need(PageId(1), u64::MAX);
        }
    }
}
