//! Criterion benches of the file layers: read a page, write a page back, and write a page back
//! durably, per layer, on a disk directory (`/var/tmp`, the benchmarks' one default:
//! see `nvpage_bench::dirs`) and on tmpfs (`/dev/shm`, emulated NVM for the mapped layers), over
//! a small file of random pages.
//!
//! Every benchmark id names the layer, the medium and the persistence mode, e.g.
//! `write_page/se1/tmpfs/emulated-nvm`. The sequential-pass comparison with memory bandwidth is
//! `nvpage-bench storage`.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use nvpage_bench::dirs::{DEFAULT_DIR_DISK, DEFAULT_DIR_TMPFS};
use nvpage_bench::storage::MediumKind;
use nvpage_bench::storage::fixture::{Scratch, build, fill_page};
use nvpage_bench::storage::random::{PageIds, read_one};
use nvpage_bench::storage::seq;
use nvpage_storage::{FileLayer, Layer, PageSize};

/// Size of the file under test: small, so every page stays in the page cache.
const FILE_BYTES: u64 = 16 << 20;

fn media() -> Vec<(MediumKind, PathBuf)> {
    let mut m = vec![(MediumKind::Disk, PathBuf::from(DEFAULT_DIR_DISK))];
    let shm = Path::new(DEFAULT_DIR_TMPFS);
    if shm.is_dir() {
        m.push((MediumKind::Tmpfs, shm.to_path_buf()));
    }
    m
}

fn open(scratch: &Scratch, layer: Layer, path: &Path) -> Box<dyn FileLayer> {
    let f = scratch.options(layer).open(path).expect("open the bench file");
    // One untimed pass verifies every checksum and fills the mapped layers' page tables.
    seq::pass(&*f, true, 256).expect("read the bench file");
    f
}

fn layers(c: &mut Criterion) {
    let page_size = PageSize::default();
    for (kind, dir) in media() {
        let scratch = match Scratch::new(kind, &dir) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("skipping {}: {e}", kind.name());
                continue;
            }
        };
        let path = scratch.path("bench.nvp");
        build(&path, FILE_BYTES, page_size).expect("build the bench file");
        for layer in Layer::compiled() {
            let f = open(&scratch, layer, &path);
            let mode = f.file().durability().mode;
            let id = format!("{layer}/{}/{mode}", kind.name());
            let mut frame = vec![0u8; page_size.bytes()];
            let mut ids = PageIds::new(1, f.file().page_count());

            let mut g = c.benchmark_group("read_page");
            configure(&mut g, page_size);
            g.bench_function(&id, |b| {
                b.iter(|| black_box(read_one(&*f, ids.next_id(), &mut frame).unwrap()))
            });
            g.finish();

            let mut g = c.benchmark_group("write_page");
            configure(&mut g, page_size);
            g.bench_function(&id, |b| {
                b.iter(|| {
                    let id = ids.next_id();
                    fill_page(&mut frame, id.0);
                    f.write_page(id, &mut frame).unwrap();
                })
            });
            g.finish();
            f.sync().unwrap();

            let mut g = c.benchmark_group("write_page+sync");
            configure(&mut g, page_size);
            g.bench_function(&id, |b| {
                b.iter(|| {
                    let id = ids.next_id();
                    fill_page(&mut frame, id.0);
                    f.write_page(id, &mut frame).unwrap();
                    f.sync().unwrap();
                })
            });
            g.finish();
        }
    }
}

fn configure(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    page_size: PageSize,
) {
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Bytes(page_size.bytes() as u64));
}

criterion_group!(benches, layers);
criterion_main!(benches);
