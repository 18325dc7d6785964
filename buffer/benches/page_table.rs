//! Why the pool's page table is a dense array and not `dashmap`: a lookup of a
//! page's entry by page id, the first step of every fetch, in the two shapes — a chunked array
//! indexed by page id (what `pool/mod.rs` keeps: chunks of 65,536 entries allocated on first
//! use, an entry found with two dependent loads) and a `DashMap<u64, u32>` (sharded hash map,
//! a read lock per lookup) — on 1 and 2 threads, over 1 M resident pages looked up in a random
//! order. Run: `cargo bench -p nvpage-buffer --bench page_table`.

use std::hint::black_box;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use dashmap::DashMap;

const PAGES: u64 = 1 << 20;
const CHUNK: u64 = 1 << 16;
const LOOKUPS: usize = 1 << 16;

/// The pool's shape: chunks allocated on first use, indexed by page id.
struct Chunked {
    chunks: Box<[OnceLock<Box<[AtomicU32]>>]>,
}

impl Chunked {
    fn new(max: u64) -> Self {
        Self { chunks: (0..max.div_ceil(CHUNK)).map(|_| OnceLock::new()).collect() }
    }

    fn insert(&self, page: u64, v: u32) {
        let c = self.chunks[(page / CHUNK) as usize]
            .get_or_init(|| (0..CHUNK).map(|_| AtomicU32::new(0)).collect());
        c[(page % CHUNK) as usize].store(v, Ordering::Release);
    }

    #[inline]
    fn get(&self, page: u64) -> u32 {
        self.chunks
            .get((page / CHUNK) as usize)
            .and_then(OnceLock::get)
            .map_or(0, |c| c[(page % CHUNK) as usize].load(Ordering::Acquire))
    }
}

/// Page ids in a random order (xorshift), the same for both shapes.
fn order() -> Vec<u64> {
    let mut x = 0x9E37_79B9_7F4A_7C15_u64;
    (0..LOOKUPS)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % PAGES
        })
        .collect()
}

/// Time for `iters` rounds of `LOOKUPS` lookups on each of `threads` threads, per lookup.
fn timed(
    iters: u64,
    threads: usize,
    lookup: &(dyn Fn(u64) -> u32 + Sync),
    ids: &[u64],
) -> Duration {
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut acc = 0u32;
                for _ in 0..iters {
                    for &id in ids {
                        acc = acc.wrapping_add(lookup(black_box(id)));
                    }
                }
                black_box(acc)
            });
        }
    });
    start.elapsed() / LOOKUPS as u32
}

fn lookups(c: &mut Criterion) {
    let chunked = Chunked::new(PAGES);
    let map: DashMap<u64, u32> = DashMap::new();
    for p in 0..PAGES {
        chunked.insert(p, p as u32 + 1);
        map.insert(p, p as u32 + 1);
    }
    let ids = order();
    let mut g = c.benchmark_group("page table lookup");
    g.sample_size(20).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    for threads in [1, 2] {
        g.bench_function(BenchmarkId::new("chunked array", threads), |b| {
            b.iter_custom(|iters| timed(iters, threads, &|id| chunked.get(id), &ids))
        });
        g.bench_function(BenchmarkId::new("dashmap", threads), |b| {
            b.iter_custom(|iters| timed(iters, threads, &|id| map.get(&id).map_or(0, |v| *v), &ids))
        });
    }
    g.finish();
}

criterion_group!(benches, lookups);
criterion_main!(benches);
