//! Goal: measure the two commit protocols DESIGN.md leaves open, on the raw mapping, before the log
//! is built on one of them (the numbers are quoted in `docs/design.md`, "The log").
//!
//! - `tail`: copy the record with streaming stores, SFENCE, then store the 8-byte tail, flush its
//!   line, SFENCE (two fences; with several threads one tail persist covers every record copied).
//! - `watermark`: copy a self-validating record (header with length and checksum), SFENCE, done (one
//!   fence; recovery scans past a lazily persisted watermark).
//!
//! Run: `cargo bench -p nvpage-wal --bench commit_protocol` (needs /dev/shm and a CPU with a
//! cache-line flush). Prints appends/s for 64 B and 256 B with 1 and 2 threads.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use nvpage_storage::persist::cacheline;
use nvpage_storage::{Advice, FileOptions, PersistRequest, RawFile};

const AREA: u64 = 256 << 20;
const APPENDS_PER_THREAD: u64 = 400_000;

struct Proto {
    file: RawFile,
    reserved: AtomicU64,
    copied: AtomicU64,
    durable: AtomicU64,
    commit: parking_lot::Mutex<()>,
}

impl Proto {
    fn new(path: &Path) -> Self {
        let _ = std::fs::remove_file(path);
        let opts = FileOptions {
            mapped: true,
            max_bytes: AREA + 4096,
            persistence: PersistRequest::CacheLine,
            ..FileOptions::default()
        };
        let file = RawFile::create(path, &opts).expect("create");
        file.grow_to(AREA + 4096).expect("grow");
        // As the log does: no page faults inside the timed appends.
        file.advise(Advice::PopulateWrite, 0, AREA + 4096);
        Self {
            file,
            reserved: AtomicU64::new(4096),
            copied: AtomicU64::new(4096),
            durable: AtomicU64::new(4096),
            commit: parking_lot::Mutex::new(()),
        }
    }

    fn append(&self, rec: &[u8], two_fences: bool) {
        let instr = self.file.durability().flush.expect("cache-line path");
        let len = (rec.len() as u64 + 7) & !7;
        let start = self.reserved.fetch_add(len, Ordering::AcqRel);
        let base = self.file.map_base().expect("mapped").as_ptr();
        // SAFETY: `start..start + len` was reserved by this thread alone and lies inside the
        // file's grown length (the run appends far less than AREA).
        unsafe { cacheline::copy_nontemporal(instr, base.add(start as usize), rec) };
        cacheline::fence();
        while self.copied.load(Ordering::Acquire) != start {
            std::hint::spin_loop();
        }
        self.copied.store(start + len, Ordering::Release);
        if two_fences && self.durable.load(Ordering::Acquire) < start + len {
            let _g = self.commit.lock();
            if self.durable.load(Ordering::Acquire) < start + len {
                let tail = self.copied.load(Ordering::Acquire);
                // SAFETY: offset 64 is the state line, written only under `commit`.
                unsafe {
                    let p = base.add(64).cast::<AtomicU64>();
                    (*p).store(tail, Ordering::Release);
                }
                // SAFETY: as above; the line is inside the mapping, mapped for the bench's life.
                unsafe { cacheline::flush(instr, base.add(64), 8) };
                cacheline::fence();
                self.durable.store(tail, Ordering::Release);
            }
        }
    }
}

fn run(dir: &Path, size: usize, threads: u64, two_fences: bool) -> f64 {
    let proto = Proto::new(&dir.join(format!("proto-{size}-{threads}-{two_fences}")));
    let rec = vec![0x5Au8; size];
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..APPENDS_PER_THREAD {
                    proto.append(&rec, two_fences);
                }
            });
        }
    });
    (threads * APPENDS_PER_THREAD) as f64 / t0.elapsed().as_secs_f64()
}

fn main() {
    let dir = Path::new("/dev/shm").join(format!("nvpage-proto-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    if cacheline::FlushInstr::detect().is_none() {
        eprintln!("no cache-line flush on this CPU: nothing to measure");
        return;
    }
    println!("protocol   size threads  appends/s");
    for size in [64usize, 256] {
        for threads in [1u64, 2] {
            for rep in 0..2 {
                let tail = run(&dir, size, threads, true);
                let wm = run(&dir, size, threads, false);
                if rep == 1 {
                    println!("tail      {size:>5} {threads:>7} {tail:>10.0}");
                    println!("watermark {size:>5} {threads:>7} {wm:>10.0}");
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
