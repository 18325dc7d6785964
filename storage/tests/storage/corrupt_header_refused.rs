//! Goal: a data file whose header page is damaged or foreign is refused at open by every layer
//! with the matching typed error — `NotOurs` for a wrong magic, `VersionMismatch` for another
//! format version, `CorruptHeader` for a bad checksum or impossible fields — never a panic and
//! never a handle onto the damaged file.

#![forbid(unsafe_code)]

use crate::common;

use std::path::Path;

use common::{fill, media, opts};
use nvpage_storage::header::{FORMAT_VERSION, HEADER_END};
use nvpage_storage::{FileLayer, Layer, OpenOptions, StorageError};

// The header page's layout, as header.rs draws it.
const MAGIC_OFFSET: usize = 16;
const VERSION_OFFSET: usize = 24;
const PAGE_SIZE_OFFSET: usize = 28;
const PAGE_COUNT_OFFSET: usize = 32;
const HEADER_CRC_OFFSET: usize = 56;
const _: () = assert!(HEADER_CRC_OFFSET + 4 == HEADER_END);

const PS: usize = 4096;

/// A fresh, healthy file with a few pages.
fn healthy(dir: &Path, name: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    fill(&*opts(Layer::Pread, PS).create(&path).unwrap(), 4, 5);
    path
}

fn edit(path: &Path, f: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = std::fs::read(path).unwrap();
    f(&mut bytes);
    std::fs::write(path, bytes).unwrap();
}

/// Rewrites the header's own checksum so that only the field edited before it is wrong.
fn reseal_header_crc(bytes: &mut [u8]) {
    let crc = crc32c::crc32c(&bytes[MAGIC_OFFSET..HEADER_CRC_OFFSET]);
    bytes[HEADER_CRC_OFFSET..HEADER_END].copy_from_slice(&crc.to_le_bytes());
}

fn open_errors(path: &Path) -> Vec<(Layer, StorageError)> {
    Layer::ALL
        .into_iter()
        .map(|layer| match OpenOptions::new(layer).open(path) {
            Ok(l) => panic!("{layer} opened a damaged file: {l:?}"),
            Err(e) => (layer, e),
        })
        .collect()
}

fn opens(path: &Path) -> Box<dyn FileLayer> {
    OpenOptions::new(Layer::Se2).open(path).expect("healthy file opens")
}

#[test]
fn wrong_magic_is_not_ours() {
    for medium in media() {
        let path = healthy(medium.dir.path(), "magic.db");
        edit(&path, |b| b[MAGIC_OFFSET + 3] = b'x');
        for (layer, e) in open_errors(&path) {
            assert!(matches!(e, StorageError::NotOurs { .. }), "{} {layer}: {e:?}", medium.name);
        }
    }
}

#[test]
fn another_format_version_is_a_version_mismatch() {
    for medium in media() {
        let path = healthy(medium.dir.path(), "version.db");
        let other = FORMAT_VERSION + 1;
        edit(&path, |b| {
            b[VERSION_OFFSET..PAGE_SIZE_OFFSET].copy_from_slice(&other.to_le_bytes());
            reseal_header_crc(b);
        });
        for (layer, e) in open_errors(&path) {
            assert!(
                matches!(e, StorageError::VersionMismatch { expected, found, .. }
                    if expected == FORMAT_VERSION && found == other),
                "{} {layer}: {e:?}",
                medium.name
            );
        }
    }
}

#[test]
fn any_flipped_header_byte_is_a_corrupt_header() {
    for medium in media() {
        let path = healthy(medium.dir.path(), "flip.db");
        // Every field after the magic (a flip in the magic is NotOurs, tested above), and bytes of
        // page 0 outside the header fields, which the page envelope covers.
        let offsets =
            (VERSION_OFFSET..HEADER_END).chain([0, 3, 4, 8, 15, HEADER_END, 2000, PS - 1]);
        for at in offsets {
            edit(&path, |b| b[at] ^= 0x10);
            for (layer, e) in open_errors(&path) {
                assert!(
                    matches!(e, StorageError::CorruptHeader { .. }),
                    "{} {layer} byte {at}: {e:?}",
                    medium.name
                );
            }
            edit(&path, |b| b[at] ^= 0x10);
        }
        // And undoing every flip gives back a file that opens.
        assert_eq!(opens(&path).file().page_count(), 4);
    }
}

#[test]
fn impossible_fields_with_a_valid_checksum_are_a_corrupt_header() {
    for medium in media() {
        let path = healthy(medium.dir.path(), "fields.db");
        let original = std::fs::read(&path).unwrap();
        // (what, field offset, the forged field's bytes)
        let forgeries = [
            ("page size 5000", PAGE_SIZE_OFFSET, 5000u32.to_le_bytes().to_vec()),
            ("page size 128 KiB", PAGE_SIZE_OFFSET, (128u32 << 10).to_le_bytes().to_vec()),
            ("page count 0", PAGE_COUNT_OFFSET, 0u64.to_le_bytes().to_vec()),
        ];
        for (what, at, field) in &forgeries {
            edit(&path, |b| {
                b[*at..*at + field.len()].copy_from_slice(field);
                reseal_header_crc(b);
            });
            for (layer, e) in open_errors(&path) {
                assert!(
                    matches!(e, StorageError::CorruptHeader { .. }),
                    "{} {layer} {what}: {e:?}",
                    medium.name
                );
            }
            std::fs::write(&path, &original).unwrap();
        }
        assert_eq!(opens(&path).file().page_count(), 4);
    }
}
