//! CRC32C arithmetic for updating a page's checksum from the lines that change, instead of a pass
//! over the whole page ([`crate::page::checksum_from`]).
//!
//! CRC32C is linear over GF(2). Write `R(D)` for the CRC register after `D` from a zero start,
//! with no final inversion: `R(D) = D(x) · x^32 mod P`. Then:
//! - for `A` and `B` of one length, `crc32c(A) ^ crc32c(B) = R(A ^ B)` (the start and final
//!   inversions depend only on the length, and cancel);
//! - zero bytes before `D` add nothing to `R`, and `k` zero bytes after it multiply it by
//!   `x^(8k) mod P`.
//!
//! So when two equal-length inputs differ only in `[a, b)`, their CRCs differ by
//! `R(A[a..b] ^ B[a..b]) · x^(8·(len − b))`: a CRC over the changed bytes and one multiplication
//! in `GF(2)[x] mod P`, by a power of `x` from a table built at compile time.
//!
//! Polynomials are in CRC32C's bit-reflected form throughout: bit 31 holds the coefficient of
//! `x^0`, bit 0 that of `x^31`.

/// CRC32C's polynomial (Castagnoli), bit-reflected, without its `x^32` term.
const POLY: u32 = 0x82F6_3B78;
/// The polynomial 1.
const ONE: u32 = 1 << 31;
/// Bytes per step of the coarse table.
const STEP: usize = 64;
/// The longest shift the tables cover, in bytes (the largest page).
const MAX_SHIFT: usize = 1 << 16;

/// `p · x mod P`.
const fn times_x(p: u32) -> u32 {
    (p >> 1) ^ (POLY & (p & 1).wrapping_neg())
}

/// `p · x^bits mod P`, one factor of `x` at a time (for the tables, at compile time).
const fn times_x_pow(mut p: u32, bits: usize) -> u32 {
    let mut i = 0;
    while i < bits {
        p = times_x(p);
        i += 1;
    }
    p
}

/// `a · b mod P`.
const fn mul(a: u32, mut b: u32) -> u32 {
    let mut product = 0u32;
    let mut i = 0;
    while i < 32 {
        // The coefficient of x^i in `a`; `b` holds `b · x^i mod P` by now.
        let bit = (a >> (31 - i)) & 1;
        product ^= b & bit.wrapping_neg();
        b = times_x(b);
        i += 1;
    }
    product
}

/// `x^(8 · n) mod P` for `n` in `0..STEP`.
const fn fine_table() -> [u32; STEP] {
    let mut t = [0u32; STEP];
    let mut p = ONE;
    let mut n = 0;
    while n < STEP {
        t[n] = p;
        p = times_x_pow(p, 8);
        n += 1;
    }
    t
}

/// `x^(8 · STEP · q) mod P` for `q` in `0..MAX_SHIFT / STEP`.
const fn coarse_table(step: u32) -> [u32; MAX_SHIFT / STEP] {
    let mut t = [0u32; MAX_SHIFT / STEP];
    let mut p = ONE;
    let mut q = 0;
    while q < MAX_SHIFT / STEP {
        t[q] = p;
        p = mul(p, step);
        q += 1;
    }
    t
}

/// `x^(8 · STEP) mod P`: one step of the coarse table.
const STEP_SHIFT: u32 = times_x_pow(ONE, 8 * STEP);

static FINE: [u32; STEP] = fine_table();
static COARSE: [u32; MAX_SHIFT / STEP] = coarse_table(STEP_SHIFT);

/// `r · x^(8 · bytes) mod P`: the register `r` as `bytes` zero bytes more would leave it.
///
/// # Panics
/// If `bytes` is [`MAX_SHIFT`] or more (past the largest page: a caller's bug).
pub(crate) fn shift(r: u32, bytes: usize) -> u32 {
    assert!(bytes < MAX_SHIFT, "a CRC shift of {bytes} bytes is past the largest page");
    let (q, n) = (bytes / STEP, bytes % STEP);
    let r = if q == 0 { r } else { mul(r, COARSE[q]) };
    if n == 0 { r } else { mul(r, FINE[n]) }
}

/// `R(a ^ b)`, for `a` and `b` of one length: one pass of the CRC over their difference (two
/// passes, one over each, cost twice the CRC's latency-bound chain). `crc32c_append` starts
/// from the inverse of the CRC it is given and inverts at the end: given `!r`, it continues the
/// register `r`.
pub(crate) fn register_of_difference(a: &[u8], b: &[u8]) -> u32 {
    assert_eq!(a.len(), b.len(), "two ranges of one length");
    let mut buf = [0u8; 256];
    a.chunks(buf.len()).zip(b.chunks(buf.len())).fold(0, |r, (a, b)| {
        let x = &mut buf[..a.len()];
        for ((x, a), b) in x.iter_mut().zip(a).zip(b) {
            *x = a ^ b;
        }
        !crc32c::crc32c_append(!r, x)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `R(data)`: the register after `data` from a zero start.
    fn register(data: &[u8]) -> u32 {
        !crc32c::crc32c_append(u32::MAX, data)
    }

    /// `r` shifted one zero byte at a time, by the CRC itself.
    fn shift_by_zeros(r: u32, bytes: usize) -> u32 {
        // R(D || zeros) from R(D): the register continues over the zeros.
        !crc32c::crc32c_append(!r, &vec![0u8; bytes])
    }

    #[test]
    fn shifts_match_the_crc_over_zeros() {
        for r in [ONE, 0x1234_5678, 0xffff_ffff, 1] {
            for bytes in [0, 1, 7, 63, 64, 65, 127, 4092, 8124, 8188, 65_535] {
                assert_eq!(shift(r, bytes), shift_by_zeros(r, bytes), "{r:#x} by {bytes}");
            }
        }
    }

    #[test]
    fn a_difference_in_a_range_is_its_register_shifted() {
        let a: Vec<u8> = (0..1000u32).map(|i| (i * 31 + 7) as u8).collect();
        let mut b = a.clone();
        for (i, byte) in b[300..420].iter_mut().enumerate() {
            *byte ^= (i as u8).wrapping_mul(13) | 1;
        }
        let delta = register(&a[300..420]) ^ register(&b[300..420]);
        assert_eq!(crc32c::crc32c(&a) ^ crc32c::crc32c(&b), shift(delta, 1000 - 420));
        for range in [300..420, 0..1000, 299..301, 500..500] {
            let (x, y) = (&a[range.clone()], &b[range.clone()]);
            assert_eq!(register_of_difference(x, y), register(x) ^ register(y), "{range:?}");
        }
    }

    #[test]
    #[should_panic(expected = "past the largest page")]
    fn a_shift_past_the_largest_page_is_refused() {
        shift(1, MAX_SHIFT);
    }
}
