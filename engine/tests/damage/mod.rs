//! What the damage tests share: a closed database's data file read as pages of 4 KiB, a page
//! rewritten with a valid checksum (damage the storage layer cannot see), and whether `check`'s
//! report names an index and a page.

#![allow(dead_code)]

use nvpage_storage::{PageId, page};

/// The page size the damage tests create their databases with.
pub const PS: usize = 4096;

pub fn u16_at(p: &[u8], at: usize) -> usize {
    usize::from(u16::from_le_bytes([p[at], p[at + 1]]))
}

pub fn u32_at(p: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(p[at..at + 4].try_into().unwrap())
}

pub fn u64_at(p: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(p[at..at + 8].try_into().unwrap())
}

pub fn page_of(file: &[u8], p: u64) -> &[u8] {
    &file[p as usize * PS..(p as usize + 1) * PS]
}

pub fn page_mut(file: &mut [u8], p: u64) -> &mut [u8] {
    &mut file[p as usize * PS..(p as usize + 1) * PS]
}

/// Recomputes page `p`'s checksum: damage the storage layer cannot see.
pub fn reseal(file: &mut [u8], p: u64) {
    page::seal(page_mut(file, p), PageId(p));
}

/// Whether a line of `damage` names index `index` and page `p` (not a page whose number
/// starts with `p`'s digits).
pub fn names(damage: &[String], index: &str, p: u64) -> bool {
    let page = format!("page {p}");
    damage.iter().any(|d| {
        d.contains(&format!("index {index}"))
            && d.match_indices(&page)
                .any(|(at, _)| !d[at + page.len()..].starts_with(|c: char| c.is_ascii_digit()))
    })
}
