//! Goal: files of the wrong shape are refused at open by every layer with a typed error, never a
//! panic: a file cut shorter than its header's page count is `Truncated` (with both sizes), a
//! zero-length file is `Truncated`, a file shorter than a header page is `Truncated`, and files of
//! random bytes of any length are refused (`NotOurs` once they are long enough to hold a magic).

#![forbid(unsafe_code)]

use crate::common;

use std::path::Path;

use common::{fill, media, opts};
use nvpage_storage::{Layer, OpenOptions, StorageError};
use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};

const PS: usize = 16384;

fn open_errors(path: &Path) -> Vec<(Layer, StorageError)> {
    Layer::ALL
        .into_iter()
        .map(|layer| match OpenOptions::new(layer).open(path) {
            Ok(l) => panic!("{layer} opened a damaged file: {l:?}"),
            Err(e) => (layer, e),
        })
        .collect()
}

#[test]
fn file_shorter_than_its_page_count_is_truncated() {
    for medium in media() {
        let path = medium.path("short.db");
        fill(&*opts(Layer::Se1, PS).create(&path).unwrap(), 10, 3);
        let full = std::fs::read(&path).unwrap();
        // Whole pages missing, part of the last page missing, all but the header page.
        for len in [5 * PS, 10 * PS - 1, PS] {
            std::fs::write(&path, &full[..len]).unwrap();
            for (layer, e) in open_errors(&path) {
                assert!(
                    matches!(e, StorageError::Truncated { expected_bytes, found_bytes, .. }
                        if expected_bytes == 10 * PS as u64 && found_bytes == len as u64),
                    "{} {layer} cut to {len}: {e:?}",
                    medium.name
                );
            }
        }
        // Part of the header page missing: too short to hold a header page at all.
        for len in [4095, PS - 1, 100] {
            std::fs::write(&path, &full[..len]).unwrap();
            for (layer, e) in open_errors(&path) {
                assert!(
                    matches!(e, StorageError::Truncated { .. }),
                    "{} {layer} cut to {len}: {e:?}",
                    medium.name
                );
            }
        }
        // Exactly the pages the header counts is enough.
        std::fs::write(&path, &full[..10 * PS]).unwrap();
        for layer in Layer::ALL {
            let l = OpenOptions::new(layer).open(&path).expect("a file of exactly its pages");
            assert_eq!(l.file().page_count(), 10);
        }
    }
}

#[test]
fn zero_length_file_is_truncated() {
    for medium in media() {
        let path = medium.path("empty.db");
        std::fs::write(&path, b"").unwrap();
        for (layer, e) in open_errors(&path) {
            assert!(
                matches!(e, StorageError::Truncated { found_bytes: 0, .. }),
                "{} {layer}: {e:?}",
                medium.name
            );
        }
    }
}

#[test]
fn random_bytes_are_refused() {
    for medium in media() {
        let path = medium.path("noise.db");
        for (seed, len) in
            [1usize, 7, 23, 24, 100, 4095, 4096, 4097, 8192, 65536, 200_000].into_iter().enumerate()
        {
            let mut bytes = vec![0u8; len];
            StdRng::seed_from_u64(seed as u64).fill_bytes(&mut bytes);
            std::fs::write(&path, &bytes).unwrap();
            for (layer, e) in open_errors(&path) {
                // 24 bytes hold the magic; random bytes there are not ours.
                let ok = if len >= 24 {
                    matches!(e, StorageError::NotOurs { .. })
                } else {
                    matches!(e, StorageError::Truncated { .. })
                };
                assert!(ok, "{} {layer} {len} random bytes: {e:?}", medium.name);
            }
            // The file was left as it was.
            assert_eq!(std::fs::read(&path).unwrap(), bytes);
        }
    }
}
