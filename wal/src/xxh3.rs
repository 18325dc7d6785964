//! XXH3-64's long path (inputs of more than 240 bytes) folded one 64-byte stripe at a time, so
//! that a record's payload can be hashed in the same loop that stores its lines
//! ([`hash_long`] calls back beside each stripe, where [`crate::layout::store_record_lines`]
//! stores a line). The value is `twox-hash`'s `XxHash3_64::oneshot_with_seed`, bit for bit (the
//! tests compare them on every length around the algorithm's boundaries, and on random ones).
//!
//! Why a second implementation: `twox-hash` hashes a 4 KiB page in about 100 ns here, before the
//! record's first store; streaming the record out takes about 350 ns more, most of it waiting for
//! the stores to drain. Folded in beside the stores, the hash runs while they drain, and most of
//! its cost is hidden (`docs/design.md`, "Framing is fixed at create"). The accumulators are
//! [`Lanes`]: four SSE2 registers ([`Acc`]: x86_64's baseline, intrinsics that take no pointers),
//! two AVX2 ones where the CPU has AVX2 (`Acc256`, half the instructions per stripe; chosen at run
//! time by `layout::store_record_lines` for payloads hashed in its loop), plain integers off
//! x86_64. A loop of 4 KiB appends on emulated NVM (a scratch program, six invocations of four
//! rounds, alternated with the SSE2 build): 2.00–2.12 M/s with SSE2, 2.06–2.31 with AVX2 (medians
//! 2.08 and 2.26); storing each line as two 32-byte streaming stores as well
//! (`LineStreamer::store_avx2`), six more invocations alternated: 2.07–2.26 → 2.21–2.42 M/s
//! (medians 2.19 → 2.30).
//!
//! The algorithm: eight 64-bit accumulators; each stripe adds, lane by lane, the product of the
//! two 32-bit halves of `data ^ secret word` and the neighbouring lane's data; after every 16
//! stripes (a block) the accumulators are scrambled with the secret's last 64 bytes; the input's
//! last 64 bytes are folded in with the secret from byte 121; the accumulators are merged with
//! the secret from byte 11 and the length, then avalanched. The secret is the one `twox-hash`
//! derives from the seed.

use twox_hash::xxhash3_64::{DEFAULT_SECRET_LENGTH, RawHasher, SecretBuffer};

use crate::layout::u64_at;

/// Bytes of a stripe.
pub(crate) const STRIPE: usize = 64;
/// The shortest input on XXH3's long path; shorter ones take paths this module does not compute.
pub(crate) const LONG_MIN: usize = 241;
const STRIPES_PER_BLOCK: usize = (DEFAULT_SECRET_LENGTH - STRIPE) / 8;
const SCRAMBLE_SECRET: usize = DEFAULT_SECRET_LENGTH - STRIPE;
const LAST_STRIPE_SECRET: usize = DEFAULT_SECRET_LENGTH - STRIPE - 7;
const MERGE_SECRET: usize = 11;
const PRIME32_1: u64 = 0x9E37_79B1;
const PRIME32_2: u64 = 0x85EB_CA77;
const PRIME32_3: u64 = 0xC2B2_AE3D;
const PRIME64_1: u64 = 0x9E37_79B1_85EB_CA87;
const PRIME64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const PRIME64_3: u64 = 0x1656_67B1_9E37_79F9;
const PRIME64_4: u64 = 0x85EB_CA77_C2B2_AE63;
const PRIME64_5: u64 = 0x27D4_EB2F_1656_67C5;

/// XXH3-64 of `input` (at least [`LONG_MIN`] bytes) with `seed`, calling `beside(s)` once for
/// every body stripe `s` (bytes `64 s..64 s + 64`), in order, [`LEAD`] stripes ahead of the
/// hash: the caller's work there (storing a line) interleaves with the hash's. The accumulators
/// are `start`'s lanes ([`Acc`], or `Acc256` where AVX2 was found), in this function's
/// locals, so in registers for the whole loop.
#[inline(always)]
pub(crate) fn hash_long<A: Lanes>(
    start: A,
    seed: u64,
    input: &[u8],
    mut beside: impl FnMut(usize),
) -> u64 {
    let len = input.len();
    assert!(len >= LONG_MIN, "XXH3's long path is for inputs above 240 bytes");
    let secret = seeded_secret(seed);
    let key = |at: usize| -> &[u8; STRIPE] { secret[at..at + STRIPE].try_into().expect("64") };
    let stripe = |at: usize| -> &[u8; STRIPE] { input[at..at + STRIPE].try_into().expect("64") };
    let mut acc = start;
    // Body stripes: every whole stripe that ends before the input's last byte (at least 3).
    let body = (len - 1) / STRIPE;
    // The caller's first `LEAD` calls come before any hashing, then each stripe's hash runs
    // beside the call `LEAD` stripes ahead of it: the first stores go out at once, while the
    // store buffers are empty, and the hash catches up while they are full.
    let lead = LEAD.min(body);
    (0..lead).for_each(&mut beside);
    // The lanes' methods are called here, in this function's body, never from a closure of its
    // own: a closure is compiled with the target features of the function it is written in,
    // not of the one it is inlined into, so inside one the AVX2 intrinsics of `Acc256` would
    // be calls (tried: a loop of 4 KiB appends ran at 0.12 M/s instead of 1.8).
    for s in 0..body {
        if s + lead < body {
            beside(s + lead);
        }
        acc.accumulate(stripe(s * STRIPE), key((s % STRIPES_PER_BLOCK) * 8));
        if (s + 1).is_multiple_of(STRIPES_PER_BLOCK) {
            acc.scramble(key(SCRAMBLE_SECRET));
        }
    }
    acc.accumulate(stripe(len - STRIPE), key(LAST_STRIPE_SECRET));
    merge(acc.words(), &secret, len)
}

/// How many of the caller's calls [`hash_long`] makes before it hashes the first stripe. A loop
/// of 4 KiB appends on emulated NVM (four rounds, alternated): 0 ahead 2.18–2.19 M/s, 2 ahead
/// 2.21–2.25, 4 ahead 2.18–2.27, 8 and 16 ahead no better than 2, 32 ahead 2.10–2.11.
const LEAD: usize = 4;

/// The accumulators' starting values.
const INITIAL_ACC: [u64; 8] =
    [PRIME32_3, PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME32_2, PRIME64_5, PRIME32_1];

/// The hash of `len` bytes from the accumulators: merged with the secret from byte 11 and the
/// length, then avalanched.
fn merge(acc: [u64; 8], secret: &[u8; DEFAULT_SECRET_LENGTH], len: usize) -> u64 {
    let s = &secret[MERGE_SECRET..];
    let mut h = (len as u64).wrapping_mul(PRIME64_1);
    for i in 0..4 {
        let a = acc[2 * i] ^ u64_at(s, 16 * i);
        let b = acc[2 * i + 1] ^ u64_at(s, 16 * i + 8);
        let m = u128::from(a) * u128::from(b);
        h = h.wrapping_add((m as u64) ^ ((m >> 64) as u64));
    }
    h ^= h >> 37;
    h = h.wrapping_mul(0x1656_6791_9E37_79F9);
    h ^ (h >> 32)
}

/// XXH3's secret for `seed`: the default secret with the seed added to its even 8-byte words
/// and taken from its odd ones (what `twox-hash` derives; the tests compare every hash).
#[inline(always)]
fn seeded_secret(seed: u64) -> [u8; DEFAULT_SECRET_LENGTH] {
    static DEFAULT: std::sync::LazyLock<[u8; DEFAULT_SECRET_LENGTH]> =
        std::sync::LazyLock::new(|| {
            // Seed 0 leaves the default secret as it is.
            let Ok(b) = SecretBuffer::with_seed(0, [0u8; DEFAULT_SECRET_LENGTH]) else {
                unreachable!("the secret is exactly DEFAULT_SECRET_LENGTH bytes");
            };
            RawHasher::new(b).into_secret()
        });
    let mut secret = *DEFAULT;
    for (i, word) in secret.chunks_exact_mut(8).enumerate() {
        let w = u64_at(word, 0);
        let w = if i % 2 == 0 { w.wrapping_add(seed) } else { w.wrapping_sub(seed) };
        word.copy_from_slice(&w.to_le_bytes());
    }
    secret
}

/// XXH3's eight 64-bit accumulators, in whatever registers hold them.
pub(crate) trait Lanes: Copy {
    /// The words, in order.
    fn words(self) -> [u64; 8];
    /// Folds one stripe in with the secret's 64 bytes `key`: in each 64-bit lane, the product
    /// of the two 32-bit halves of `data ^ key`, and the neighbouring lane's data.
    fn accumulate(&mut self, stripe: &[u8; STRIPE], key: &[u8; STRIPE]);
    /// Scrambles the accumulators at the end of a block with the secret's last 64 bytes `key`:
    /// `(a ^ a >> 47 ^ key) * PRIME32_1`.
    fn scramble(&mut self, key: &[u8; STRIPE]);
}

/// The eight accumulators: in four SSE2 registers on x86_64 (its baseline, so no run-time
/// check; the intrinsics take no pointers, so their `unsafe` asks only for SSE2), in words
/// elsewhere. Kept in registers, the fold of a stripe is a dozen instructions beside the stores
/// of a line.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(crate) struct Acc([std::arch::x86_64::__m128i; 4]);

#[cfg(target_arch = "x86_64")]
impl Acc {
    /// XXH3's starting accumulators.
    pub(crate) fn new() -> Self {
        use std::arch::x86_64::_mm_set_epi64x;
        let w = INITIAL_ACC;
        // SAFETY: SSE2 is in x86_64's baseline, so every x86_64 CPU runs it; no pointers.
        Self(std::array::from_fn(|j| unsafe {
            _mm_set_epi64x(w[2 * j + 1] as i64, w[2 * j] as i64)
        }))
    }
}

#[cfg(target_arch = "x86_64")]
impl Lanes for Acc {
    fn words(self) -> [u64; 8] {
        use std::arch::x86_64::{_mm_cvtsi128_si64, _mm_unpackhi_epi64};
        let v = self.0;
        std::array::from_fn(|i| {
            let lane = v[i / 2];
            // SAFETY: SSE2 is in x86_64's baseline, so every x86_64 CPU runs it; no pointers.
            unsafe {
                let word = if i % 2 == 0 { lane } else { _mm_unpackhi_epi64(lane, lane) };
                _mm_cvtsi128_si64(word) as u64
            }
        })
    }

    #[inline(always)]
    fn accumulate(&mut self, stripe: &[u8; STRIPE], key: &[u8; STRIPE]) {
        use std::arch::x86_64::{_mm_add_epi64, _mm_mul_epu32, _mm_shuffle_epi32, _mm_xor_si128};
        for (j, acc) in self.0.iter_mut().enumerate() {
            let (data, k) = (lane_at(stripe, 16 * j), lane_at(key, 16 * j));
            // SAFETY: SSE2 is in x86_64's baseline, so every x86_64 CPU runs it; no pointers.
            unsafe {
                let dk = _mm_xor_si128(data, k);
                // Each lane's high half moved down: the product of the two halves.
                let product = _mm_mul_epu32(dk, _mm_shuffle_epi32::<0x31>(dk));
                let swapped = _mm_shuffle_epi32::<0x4E>(data);
                *acc = _mm_add_epi64(product, _mm_add_epi64(*acc, swapped));
            }
        }
    }

    // The product of 64 by 32 bits in two halves.
    // Inlined so the accumulators stay in registers: out of line they were spilled around each
    // call, and a loop of 4 KiB appends ran 8% slower.
    #[inline(always)]
    fn scramble(&mut self, key: &[u8; STRIPE]) {
        use std::arch::x86_64::{
            _mm_add_epi64, _mm_mul_epu32, _mm_set1_epi64x, _mm_slli_epi64, _mm_srli_epi64,
            _mm_xor_si128,
        };
        for (j, acc) in self.0.iter_mut().enumerate() {
            let k = lane_at(key, 16 * j);
            // SAFETY: SSE2 is in x86_64's baseline, so every x86_64 CPU runs it; no pointers.
            unsafe {
                let prime = _mm_set1_epi64x(PRIME32_1 as i64);
                let x = _mm_xor_si128(*acc, _mm_srli_epi64::<47>(*acc));
                let x = _mm_xor_si128(x, k);
                let low = _mm_mul_epu32(x, prime);
                let high = _mm_mul_epu32(_mm_srli_epi64::<32>(x), prime);
                *acc = _mm_add_epi64(low, _mm_slli_epi64::<32>(high));
            }
        }
    }
}

/// The 16 bytes at `at` in `b` as a register (the compiler makes it one unaligned load).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn lane_at(b: &[u8; STRIPE], at: usize) -> std::arch::x86_64::__m128i {
    let (high, low) = (u64_at(b, at + 8) as i64, u64_at(b, at) as i64);
    // SAFETY: SSE2 is in x86_64's baseline, so every x86_64 CPU runs it; no pointers.
    unsafe { std::arch::x86_64::_mm_set_epi64x(high, low) }
}

/// The eight accumulators in two AVX2 registers: the fold of a stripe is half the instructions
/// of [`Acc`]'s. A value holds an [`Avx2`] proof, so its methods may run AVX2 instructions;
/// they are inlined into a caller compiled for AVX2 (`layout::store_record_lines_avx2`), or
/// they would be calls that do not inline.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(crate) struct Acc256([std::arch::x86_64::__m256i; 2], Avx2);

/// Proof that this CPU runs AVX2: only [`Avx2::detect`] makes one, after checking.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(crate) struct Avx2(());

#[cfg(target_arch = "x86_64")]
impl Avx2 {
    /// A proof, if this CPU runs AVX2 (the standard library caches the CPU's answer).
    #[inline(always)]
    pub(crate) fn detect() -> Option<Self> {
        std::arch::is_x86_feature_detected!("avx2").then_some(Self(()))
    }
}

#[cfg(target_arch = "x86_64")]
impl Acc256 {
    /// XXH3's starting accumulators. Inlined into a caller compiled for AVX2, this is two
    /// register loads; elsewhere each lane would be built by a call.
    #[inline(always)]
    pub(crate) fn new(avx2: Avx2) -> Self {
        let w = INITIAL_ACC;
        // SAFETY: `avx2` proves the CPU runs AVX2; no pointers.
        let lanes = std::array::from_fn(|j| unsafe {
            std::arch::x86_64::_mm256_set_epi64x(
                w[4 * j + 3] as i64,
                w[4 * j + 2] as i64,
                w[4 * j + 1] as i64,
                w[4 * j] as i64,
            )
        });
        Self(lanes, avx2)
    }
}

#[cfg(target_arch = "x86_64")]
impl Lanes for Acc256 {
    fn words(self) -> [u64; 8] {
        // SAFETY: a 256-bit register and four 64-bit words have the same size, and every bit
        // pattern is a valid u64 (lane 0 is the first word on little-endian x86).
        let [a, b]: [[u64; 4]; 2] = self.0.map(|v| unsafe { std::mem::transmute(v) });
        [a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]]
    }

    #[inline(always)]
    fn accumulate(&mut self, stripe: &[u8; STRIPE], key: &[u8; STRIPE]) {
        use std::arch::x86_64::{
            _mm256_add_epi64, _mm256_mul_epu32, _mm256_shuffle_epi32, _mm256_xor_si256,
        };
        let avx2 = self.1;
        for (j, acc) in self.0.iter_mut().enumerate() {
            let (data, k) = (lane256_at(avx2, stripe, 32 * j), lane256_at(avx2, key, 32 * j));
            // SAFETY: `avx2` proves the CPU runs AVX2; no pointers. The shuffles work within
            // 128-bit halves, as XXH3's pairs of lanes do.
            unsafe {
                let dk = _mm256_xor_si256(data, k);
                let product = _mm256_mul_epu32(dk, _mm256_shuffle_epi32::<0x31>(dk));
                let swapped = _mm256_shuffle_epi32::<0x4E>(data);
                *acc = _mm256_add_epi64(product, _mm256_add_epi64(*acc, swapped));
            }
        }
    }

    #[inline(always)]
    fn scramble(&mut self, key: &[u8; STRIPE]) {
        use std::arch::x86_64::{
            _mm256_add_epi64, _mm256_mul_epu32, _mm256_set1_epi64x, _mm256_slli_epi64,
            _mm256_srli_epi64, _mm256_xor_si256,
        };
        let avx2 = self.1;
        for (j, acc) in self.0.iter_mut().enumerate() {
            let k = lane256_at(avx2, key, 32 * j);
            // SAFETY: `avx2` proves the CPU runs AVX2; no pointers.
            unsafe {
                let prime = _mm256_set1_epi64x(PRIME32_1 as i64);
                let x = _mm256_xor_si256(*acc, _mm256_srli_epi64::<47>(*acc));
                let x = _mm256_xor_si256(x, k);
                let low = _mm256_mul_epu32(x, prime);
                let high = _mm256_mul_epu32(_mm256_srli_epi64::<32>(x), prime);
                *acc = _mm256_add_epi64(low, _mm256_slli_epi64::<32>(high));
            }
        }
    }
}

/// The 32 bytes at `at` in `b` as a register (the compiler makes it one unaligned load).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn lane256_at(_: Avx2, b: &[u8; STRIPE], at: usize) -> std::arch::x86_64::__m256i {
    let w = |i: usize| u64_at(b, at + 8 * i) as i64;
    // SAFETY: the `Avx2` argument proves the CPU runs AVX2; no pointers.
    unsafe { std::arch::x86_64::_mm256_set_epi64x(w(3), w(2), w(1), w(0)) }
}

#[cfg(not(target_arch = "x86_64"))]
#[derive(Clone, Copy)]
pub(crate) struct Acc([u64; 8]);

#[cfg(not(target_arch = "x86_64"))]
impl Acc {
    /// XXH3's starting accumulators.
    pub(crate) fn new() -> Self {
        Self(INITIAL_ACC)
    }
}

#[cfg(not(target_arch = "x86_64"))]
impl Lanes for Acc {
    fn words(self) -> [u64; 8] {
        self.0
    }

    #[inline(always)]
    fn accumulate(&mut self, stripe: &[u8; STRIPE], key: &[u8; STRIPE]) {
        let acc = &mut self.0;
        for i in 0..8 {
            let data = u64_at(stripe, 8 * i);
            let dk = data ^ u64_at(key, 8 * i);
            acc[i ^ 1] = acc[i ^ 1].wrapping_add(data);
            acc[i] = acc[i].wrapping_add((dk & 0xFFFF_FFFF) * (dk >> 32));
        }
    }

    fn scramble(&mut self, key: &[u8; STRIPE]) {
        for (i, a) in self.0.iter_mut().enumerate() {
            let mut x = *a;
            x ^= x >> 47;
            x ^= u64_at(key, 8 * i);
            *a = x.wrapping_mul(PRIME32_1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The hash, with its callbacks checked: one per body stripe, in order; the same with every
    /// kind of accumulators this CPU runs.
    fn hash(seed: u64, input: &[u8]) -> u64 {
        let h = hash_with(Acc::new(), seed, input);
        #[cfg(target_arch = "x86_64")]
        if let Some(avx2) = Avx2::detect() {
            assert_eq!(hash_with(Acc256::new(avx2), seed, input), h, "AVX2 and SSE2 lanes agree");
        }
        h
    }

    fn hash_with(lanes: impl Lanes, seed: u64, input: &[u8]) -> u64 {
        let mut seen = 0;
        let h = hash_long(lanes, seed, input, |s| {
            assert_eq!(s, seen, "stripes in order");
            seen += 1;
        });
        assert_eq!(seen, (input.len() - 1) / STRIPE, "every body stripe");
        h
    }

    fn input(len: usize, salt: u64) -> Vec<u8> {
        let mut s = salt ^ 0x9E37_79B9_7F4A_7C15;
        (0..len)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s as u8
            })
            .collect()
    }

    #[test]
    fn equals_the_one_shot_around_every_boundary() {
        // Under Miri, which interprets every byte, the lengths stop past four blocks.
        let long: &[usize] = if cfg!(miri) { &[] } else { &[65536, 65537] };
        let lens = [241, 255, 256, 257, 319, 320, 321, 1023, 1024, 1025, 1087, 1088, 1089]
            .into_iter()
            .chain([2047, 2048, 2049, 4095, 4096, 4097, 4144, 4160])
            .chain(long.iter().copied());
        for len in lens {
            for seed in [0, 1, 0x8000_0000_0000_0001, u64::MAX] {
                let b = input(len, len as u64 ^ seed);
                let want = twox_hash::XxHash3_64::oneshot_with_seed(seed, &b);
                assert_eq!(want, xxhash_rust::xxh3::xxh3_64_with_seed(&b, seed));
                assert_eq!(hash(seed, &b), want, "len {len} seed {seed:#x}");
                let mut flipped = b.clone();
                flipped[len / 3] ^= 4;
                assert_ne!(hash(seed, &flipped), want, "len {len} flipped");
            }
        }
    }

    proptest! {
        // Under Miri a handful of cases: each hashes up to 20 KB, with ours and with twox-hash.
        #![proptest_config(ProptestConfig {
            cases: if cfg!(miri) { 4 } else { ProptestConfig::default().cases },
            ..ProptestConfig::default()
        })]
        #[test]
        fn equals_the_one_shot_on_any_long_input(len in LONG_MIN..20_000usize, seed: u64) {
            let b = input(len, seed);
            prop_assert_eq!(hash(seed, &b), twox_hash::XxHash3_64::oneshot_with_seed(seed, &b));
        }
    }
}
