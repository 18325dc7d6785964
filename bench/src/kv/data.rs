//! The data set: item `i`'s key, the value a version of it holds, and the checksum a read adds.
//!
//! Keys are 8 bytes: item `i`'s key is [`key`]`(i)`, a bijection of `[0, 2^63)`, so `n` items
//! have `n` distinct keys scattered over the key space (item order is not key order: the
//! Zipfian generator's hot items, the first ranks, land all over the tree). Every engine orders
//! keys the same way: nvpage's `I64` column and redb's `u64` by value, LMDB and SQLite by the
//! key's 8 big-endian bytes, which for keys below 2^63 is the same order.
//!
//! Values are 100 ASCII bytes (nvpage's strings are UTF-8): the key in hex, the version in hex,
//! and letters drawn from both, so a value read can be told from any other key's or version's.

/// Bytes of a key.
pub const KEY_BYTES: usize = 8;
/// Bytes of a value.
pub const VALUE_BYTES: usize = 100;

const KEY_MASK: u64 = (1 << 63) - 1;

/// Item `i`'s key, in `[0, 2^63)`. Each step is a bijection of `[0, 2^63)`: multiplying by an
/// odd constant modulo 2^63, and `x ^ (x >> s)` on 63-bit values.
pub fn key(i: u64) -> u64 {
    let mut x = i & KEY_MASK;
    x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15) & KEY_MASK;
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9) & KEY_MASK;
    x ^= x >> 32;
    x
}

/// The keys of items `0..n`, in item order.
pub fn keys(n: u64) -> Vec<u64> {
    (0..n).map(key).collect()
}

/// The value version `version` of `key` holds (version 0 is the loaded one).
pub fn value(key: u64, version: u32) -> [u8; VALUE_BYTES] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut v = [0u8; VALUE_BYTES];
    for (i, b) in v[..16].iter_mut().enumerate() {
        *b = HEX[((key >> (60 - 4 * i)) & 0xf) as usize];
    }
    v[16] = b'.';
    for (i, b) in v[17..25].iter_mut().enumerate() {
        *b = HEX[((version >> (28 - 4 * i)) & 0xf) as usize];
    }
    v[25] = b'.';
    // Letters from a xorshift seeded by both, one per byte of each step's output.
    let mut s = key ^ (u64::from(version) << 32 | u64::from(version)) ^ 0x2545_F491_4F6C_DD1D;
    for chunk in v[26..].chunks_mut(8) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        for (j, b) in chunk.iter_mut().enumerate() {
            *b = b'a' + ((s >> (8 * j)) as u8 % 26);
        }
    }
    v
}

/// What reading `value` adds to a run's checksum: a 64-bit hash, summed (so the sum does not
/// depend on which thread read what, nor in which order).
pub fn digest(value: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(value)
}

/// The key as LMDB and SQLite store it: 8 big-endian bytes.
pub fn key_bytes(key: u64) -> [u8; KEY_BYTES] {
    key.to_be_bytes()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn keys_are_distinct_below_2_63_and_not_in_item_order() {
        let n = 1 << 20;
        let ks = keys(n);
        assert!(ks.iter().all(|&k| k <= KEY_MASK));
        assert_eq!(ks.iter().collect::<HashSet<_>>().len(), n as usize);
        let ascending = ks.windows(2).filter(|w| w[0] < w[1]).count() as f64 / n as f64;
        assert!((0.4..0.6).contains(&ascending), "scattered, not sorted: {ascending}");
        // Big-endian bytes sort as the numbers do.
        let (a, b) = (ks[0].min(ks[1]), ks[0].max(ks[1]));
        assert!(key_bytes(a) < key_bytes(b));
    }

    #[test]
    fn values_are_ascii_and_name_their_key_and_version() {
        let v = value(0x0123_4567_89ab_cdef, 7);
        assert_eq!(&v[..26], b"0123456789abcdef.00000007.");
        assert!(v[26..].iter().all(u8::is_ascii_lowercase));
        assert_ne!(value(1, 0), value(1, 1));
        assert_ne!(value(1, 0)[26..], value(2, 0)[26..]);
        assert_ne!(digest(&value(1, 0)), digest(&value(1, 1)));
    }
}
