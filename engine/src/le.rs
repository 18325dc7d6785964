//! Little-endian fields of the engine's page formats (heap pages and index nodes): reads and
//! writes at a byte offset the caller has checked lies inside the page.

#[inline]
pub(crate) fn u16_at(p: &[u8], at: usize) -> usize {
    usize::from(u16::from_le_bytes([p[at], p[at + 1]]))
}

#[inline]
pub(crate) fn u32_at(p: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([p[at], p[at + 1], p[at + 2], p[at + 3]])
}

#[inline]
pub(crate) fn u64_at(p: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(p[at..at + 8].try_into().expect("8 bytes"))
}

#[inline]
pub(crate) fn put_u16(p: &mut [u8], at: usize, v: usize) {
    p[at..at + 2].copy_from_slice(&(v as u16).to_le_bytes());
}

#[inline]
pub(crate) fn put_u32(p: &mut [u8], at: usize, v: u32) {
    p[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
