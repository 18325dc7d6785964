//! The buffer pool's costs, per layer: the hit path (read + drop of a resident page) with 1 and 2
//! threads, a miss (evict, then read), and a full scan of a file ten times the pool's size through
//! a scan ring, on tmpfs and on disk (page cache warm after the first pass), in GB/s. After each
//! scan group it prints, from the pool's counters, how many bytes each layer copied and how many
//! reads it redirected for one scan. Run: `cargo bench -p nvpage-buffer`.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use nvpage_buffer::{BufferPool, NoUndo, View};
use nvpage_storage::page::PAGE_HEADER_LEN;
use nvpage_storage::{Layer, OpenOptions, PageId};

/// Frames in the scan benchmark's pool; the file is ten times this.
const SCAN_FRAMES: usize = 1024;
const SCAN_PAGES: u64 = 10 * SCAN_FRAMES as u64;
/// Pages the hit and miss benchmarks use.
const SMALL_PAGES: u64 = 16;

fn options(layer: Layer) -> OpenOptions {
    OpenOptions { max_bytes: 4 << 30, ..OpenOptions::new(layer) }
}

/// Creates `dir/data` with `pages` written pages (page `i` filled with `i as u8`).
fn make_file(dir: &Path, pages: u64) {
    let file = options(Layer::Pread).create(&dir.join("data")).unwrap();
    let pool = BufferPool::new(file, 64, Arc::new(NoUndo)).unwrap();
    pool.grow(pages + 1).unwrap();
    for i in 1..=pages {
        pool.new_page(PageId(i)).unwrap()[PAGE_HEADER_LEN..].fill(i as u8);
    }
    pool.flush_all().unwrap();
    pool.write_header().unwrap();
    pool.sync().unwrap();
}

fn open(dir: &Path, layer: Layer, frames: usize) -> BufferPool {
    let file = options(layer).open(&dir.join("data")).unwrap();
    BufferPool::new(file, frames, Arc::new(NoUndo)).unwrap()
}

fn shm_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm").expect("the tmpfs benchmarks need /dev/shm")
}

/// Reads one word per cache line, as a reader of every row would.
fn touch(page: &[u8]) -> u64 {
    page.chunks_exact(64).fold(0, |a, line| a ^ u64::from_le_bytes(line[..8].try_into().unwrap()))
}

fn hit(c: &mut Criterion) {
    let dir = shm_dir();
    make_file(dir.path(), SMALL_PAGES);
    let mut g = c.benchmark_group("hit");
    g.sample_size(20).measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_secs(1));
    for layer in Layer::compiled() {
        let pool = open(dir.path(), layer, 64);
        for i in 1..=SMALL_PAGES {
            drop(pool.read(PageId(i), View::Writer).unwrap());
        }
        g.bench_function(BenchmarkId::new("1 thread", layer), |b| {
            b.iter(|| {
                black_box(pool.read(black_box(PageId(1)), View::Writer).unwrap()[PAGE_HEADER_LEN])
            })
        });
        // Two threads, each on its own resident page; time per operation of one thread.
        g.bench_function(BenchmarkId::new("2 threads", layer), |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                std::thread::scope(|s| {
                    for t in 0..2u64 {
                        let pool = &pool;
                        s.spawn(move || {
                            for _ in 0..iters {
                                let g = pool.read(black_box(PageId(1 + t)), View::Writer).unwrap();
                                black_box(g[PAGE_HEADER_LEN]);
                            }
                        });
                    }
                });
                start.elapsed()
            })
        });
        let c = pool.counters();
        println!(
            "hit {layer}: hits {} redirected {} misses {}",
            c.hits, c.redirected_reads, c.misses
        );
    }
    g.finish();
}

fn miss(c: &mut Criterion) {
    let dir = shm_dir();
    make_file(dir.path(), SMALL_PAGES);
    let mut g = c.benchmark_group("miss (tmpfs)");
    g.sample_size(20).measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_secs(1));
    for layer in Layer::compiled() {
        let pool = open(dir.path(), layer, 64);
        g.bench_function(BenchmarkId::from_parameter(layer), |b| {
            b.iter(|| {
                pool.evict_page(PageId(1)).unwrap();
                black_box(pool.read(PageId(1), View::Writer).unwrap()[PAGE_HEADER_LEN])
            })
        });
        let c = pool.counters();
        println!(
            "miss {layer}: misses {} redirected {} evictions {} bytes copied in {}",
            c.misses, c.redirected_reads, c.evictions, c.bytes_copied_in
        );
    }
    g.finish();
}

fn scan_once(pool: &BufferPool) -> u64 {
    let mut ring = pool.scan_ring();
    let mut acc = 0;
    for i in 1..=SCAN_PAGES {
        acc ^= touch(&pool.read_scan(PageId(i), View::Writer, &mut ring).unwrap());
    }
    acc
}

fn scan_on(c: &mut Criterion, medium: &str, dir: &Path) {
    make_file(dir, SCAN_PAGES);
    let mut g = c.benchmark_group(format!("scan 10x pool ({medium})"));
    g.sample_size(10).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    for layer in Layer::compiled() {
        let pool = open(dir, layer, SCAN_FRAMES);
        let bytes = SCAN_PAGES * pool.page_size() as u64;
        g.throughput(Throughput::Bytes(bytes));
        black_box(scan_once(&pool));
        let before = pool.counters();
        black_box(scan_once(&pool));
        let after = pool.counters();
        println!(
            "scan {medium} {layer} ({}): one scan of {} MiB copied {} MiB in, {} reads redirected, \
             {} misses, {} hits",
            pool.file().durability().mode,
            bytes >> 20,
            (after.bytes_copied_in - before.bytes_copied_in) >> 20,
            after.redirected_reads - before.redirected_reads,
            after.misses - before.misses,
            after.hits - before.hits,
        );
        g.bench_function(BenchmarkId::from_parameter(layer), |b| {
            b.iter(|| black_box(scan_once(&pool)))
        });
    }
    g.finish();
}

fn scan(c: &mut Criterion) {
    let shm = shm_dir();
    scan_on(c, "tmpfs", shm.path());
    drop(shm);
    let disk = tempfile::tempdir().unwrap();
    scan_on(c, "disk", disk.path());
}

criterion_group!(benches, hit, miss, scan);
criterion_main!(benches);
