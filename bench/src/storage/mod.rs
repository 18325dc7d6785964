//! `nvpage-bench storage`: the file layers measured against each other and against the machine.
//!
//! Per layer and medium: a sequential pass over a large file that reads every byte (cold, then
//! warm in the same open), reported in GB/s with the process's system-CPU share; random
//! single-page reads, writes, and durable writes, in ns per operation. Beside them, memory read
//! and `memcpy` bandwidth measured in the same run. Every row names its durability.

pub mod args;
pub mod fixture;
pub mod random;
pub mod seq;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nvpage_storage::file::evict_os_cache;
use nvpage_storage::{Durability, FileLayer, Layer};

pub use self::args::{Config, MediumKind, Prefault, StorageArgs};
use self::fixture::Scratch;
use crate::BoxError;
use crate::cputime::{CpuTimes, timed};
use crate::dirs::check_dir;
use crate::machine::Machine;
use crate::memory::MemBuffers;
use crate::report::{MEM_READ, Report, Sample, Subject, Unit, summarize_rows, table};

/// The files of one medium.
#[derive(Debug)]
struct Site {
    scratch: Scratch,
    seq_path: PathBuf,
    seq_pages: u64,
    seq_sum: u64,
    rand_path: PathBuf,
}

/// Runs the benchmark, prints the table, and writes the JSON file if asked.
pub fn run(args: &StorageArgs) -> Result<(), BoxError> {
    let cfg = Config::from_args(args)?;
    let machine = Machine::detect();
    println!("{}", machine.summary());
    let mut notes = Vec::new();
    let sites = prepare(&cfg, &mut notes)?;
    let mut b = Bench { cfg: &cfg, samples: Vec::new(), durabilities: Vec::new() };
    let mut mem = MemBuffers::new(cfg.seq_bytes as usize, cfg.page_size.bytes());
    for run in 0..cfg.runs {
        eprintln!("run {}/{}: memory baselines and sequential passes", run + 1, cfg.runs);
        b.memory(&mut mem, run)?;
        for site in &sites {
            for &layer in &cfg.layers {
                b.sequential(&mem, site, layer, run)?;
            }
        }
    }
    drop(mem);
    for run in 0..cfg.runs {
        eprintln!("run {}/{}: random single-page reads and writes", run + 1, cfg.runs);
        for site in &sites {
            for &layer in &cfg.layers {
                b.random(site, layer, run)?;
            }
        }
    }
    let rows = summarize_rows(&b.samples);
    println!("{}", table(&rows));
    notes.extend(standard_notes(&cfg));
    println!("durability modes seen:");
    for d in &b.durabilities {
        println!("  - {d}");
    }
    println!("notes:");
    for n in &notes {
        println!("  - {n}");
    }
    if let Some(path) = &cfg.json {
        let report = Report {
            machine,
            config: &cfg,
            durabilities: b.durabilities.clone(),
            notes,
            rows,
            runs: b.samples,
        };
        report.write_json(path)?;
        println!("JSON written to {}", path.display());
    }
    Ok(())
}

/// Picks the directories, checks their media, and builds the files.
fn prepare(cfg: &Config, notes: &mut Vec<String>) -> Result<Vec<Site>, BoxError> {
    let mut sites = Vec::new();
    for &kind in &cfg.media {
        let scratch = match kind {
            MediumKind::Disk => disk_scratch(cfg)?,
            MediumKind::Tmpfs if !cfg.dir_tmpfs.is_dir() => {
                notes.push(format!(
                    "tmpfs runs skipped: {} does not exist (give one with --dir-tmpfs)",
                    cfg.dir_tmpfs.display()
                ));
                continue;
            }
            MediumKind::Tmpfs => Scratch::new(kind, &cfg.dir_tmpfs)?,
        };
        let seq_path = scratch.path("seq.nvp");
        let rand_path = scratch.path("random.nvp");
        let t0 = Instant::now();
        let (seq_pages, seq_sum) = fixture::build(&seq_path, cfg.seq_bytes, cfg.page_size)?;
        fixture::build(&rand_path, cfg.random_bytes, cfg.page_size)?;
        eprintln!(
            "built {} MiB + {} MiB of pages in {} on {} in {:.1} s",
            cfg.seq_bytes >> 20,
            cfg.random_bytes >> 20,
            seq_path.parent().map_or(Path::new("?"), |p| p).display(),
            kind.name(),
            t0.elapsed().as_secs_f64()
        );
        sites.push(Site { scratch, seq_path, seq_pages, seq_sum, rand_path });
    }
    Ok(sites)
}

/// The disk directory (`--dir-disk`, by default `/var/tmp`), checked to be on a disk.
fn disk_scratch(cfg: &Config) -> Result<Scratch, BoxError> {
    check_dir(&cfg.dir_disk, "--dir-disk")?;
    Scratch::new(MediumKind::Disk, &cfg.dir_disk)
}

struct Bench<'a> {
    cfg: &'a Config,
    samples: Vec<Sample>,
    durabilities: Vec<String>,
}

impl Bench<'_> {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        subject: Subject,
        run: usize,
        value: f64,
        unit: Unit,
        wall: Duration,
        cpu: CpuTimes,
        ops: u64,
    ) {
        let wall_ms = wall.as_secs_f64() * 1000.0;
        let (user_ms, sys_ms) = (cpu.user_ms(), cpu.sys_ms());
        let of_mem_read = None;
        let sample =
            Sample { subject, run, value, unit, wall_ms, user_ms, sys_ms, ops, of_mem_read, cpu };
        self.samples.push(sample);
    }

    fn open(
        &mut self,
        site: &Site,
        layer: Layer,
        path: &Path,
    ) -> Result<Box<dyn FileLayer>, BoxError> {
        let f = site.scratch.options(layer).open(path)?;
        let d = f.file().durability().to_string();
        if !self.durabilities.contains(&d) {
            self.durabilities.push(d);
        }
        Ok(f)
    }

    /// Memory read bandwidth over a touched buffer, measured right before each sequential pair so
    /// that passes are compared with the memory as it performed at that moment. Returns GB/s.
    fn mem_read(&mut self, mem: &MemBuffers, run: usize) -> Result<f64, BoxError> {
        let bytes = mem.len() as f64;
        let pages = (mem.len() / self.cfg.page_size.bytes()) as u64;
        let (_, wall, cpu) = timed(|| Ok::<_, std::convert::Infallible>(mem.read_pass()))?;
        let v = gbps(bytes, wall);
        self.push(memory_subject(MEM_READ), run, v, Unit::GbPerSec, wall, cpu, pages);
        Ok(v)
    }

    /// Memory read, `memcpy`, and `memcpy` + read bandwidth over a touched buffer; the copies are
    /// compared with the memory read measured right before them.
    fn memory(&mut self, mem: &mut MemBuffers, run: usize) -> Result<(), BoxError> {
        let baseline = self.mem_read(mem, run)?;
        let bytes = mem.len() as f64;
        let pages = (mem.len() / self.cfg.page_size.bytes()) as u64;
        let (_, wall, cpu) = timed(|| {
            mem.copy_pass();
            Ok::<_, std::convert::Infallible>(())
        })?;
        self.push_gbps(memory_subject("memcpy"), run, bytes, wall, cpu, pages, baseline);
        let (_, wall, cpu) = timed(|| Ok::<_, std::convert::Infallible>(mem.copy_sum_pass()))?;
        self.push_gbps(memory_subject("memcpy+read"), run, bytes, wall, cpu, pages, baseline);
        Ok(())
    }

    /// Records a throughput and its ratio to the memory read bandwidth measured beside it.
    #[allow(clippy::too_many_arguments)]
    fn push_gbps(
        &mut self,
        subject: Subject,
        run: usize,
        bytes: f64,
        wall: Duration,
        cpu: CpuTimes,
        pages: u64,
        baseline_gbps: f64,
    ) {
        let v = gbps(bytes, wall);
        self.push(subject, run, v, Unit::GbPerSec, wall, cpu, pages);
        self.samples.last_mut().expect("just pushed").of_mem_read = Some(v / baseline_gbps);
    }

    /// A cold pass over a freshly opened file (its pages evicted from the OS cache first, where
    /// the medium allows), then a warm pass in the same open.
    fn sequential(
        &mut self,
        mem: &MemBuffers,
        site: &Site,
        layer: Layer,
        run: usize,
    ) -> Result<(), BoxError> {
        evict_os_cache(&site.seq_path)?;
        let baseline = self.mem_read(mem, run)?;
        let f = self.open(site, layer, &site.seq_path)?;
        let d = f.file().durability();
        let bytes = ((site.seq_pages - 1) * self.cfg.page_size.bytes() as u64) as f64;
        for pass in ["cold", "warm"] {
            let prefault = match self.cfg.prefault {
                Prefault::FirstPass => pass == "cold",
                Prefault::EveryPass => true,
                Prefault::Off => false,
            };
            let (sum, wall, cpu) = timed(|| seq::pass(&*f, prefault, self.cfg.window_pages))?;
            if sum != site.seq_sum {
                return Err(format!(
                    "{layer} on {}: the {pass} pass read different bytes than were written",
                    site.scratch.kind.name()
                )
                .into());
            }
            let subject = Subject {
                test: "seq-read".into(),
                pass: pass.into(),
                layer: layer.name().into(),
                medium: site.scratch.kind.name().into(),
                durability: mode_label(d),
                survives: "-".into(),
            };
            self.push_gbps(subject, run, bytes, wall, cpu, site.seq_pages - 1, baseline);
        }
        Ok(())
    }

    /// Random page reads, writes, and durable writes on the small file, after one untimed pass
    /// that verifies every page and (mapped layers) fills the page tables.
    fn random(&mut self, site: &Site, layer: Layer, run: usize) -> Result<(), BoxError> {
        let f = self.open(site, layer, &site.rand_path)?;
        let d = f.file().durability();
        seq::pass(&*f, self.cfg.prefault != Prefault::Off, self.cfg.window_pages)?;
        let seed = 0x5eed_0000 + run as u64;
        let ops = self.cfg.random_ops;
        let subject = |test: &str, (durability, survives): (String, &str)| Subject {
            test: test.into(),
            pass: String::new(),
            layer: layer.name().into(),
            medium: site.scratch.kind.name().into(),
            durability,
            survives: survives.into(),
        };
        let (ns, wall, cpu) = timed(|| random::reads(&*f, ops, seed))?;
        let s = subject("rand-read", (mode_label(d), "-"));
        self.push(s, run, ns, Unit::NsPerOp, wall, cpu, ops);
        let (ns, wall, cpu) = timed(|| random::writes(&*f, ops, seed))?;
        self.push(
            subject("rand-write", write_label(d, false)),
            run,
            ns,
            Unit::NsPerOp,
            wall,
            cpu,
            ops,
        );
        f.sync()?;
        let ((ns, n), wall, cpu) = timed(|| random::synced_writes(&*f, self.cfg.sync_ops, seed))?;
        self.push(
            subject("rand-write+sync", write_label(d, true)),
            run,
            ns,
            Unit::NsPerOp,
            wall,
            cpu,
            n,
        );
        Ok(())
    }
}

fn memory_subject(test: &str) -> Subject {
    Subject {
        test: test.into(),
        pass: String::new(),
        layer: "-".into(),
        medium: "dram".into(),
        durability: "none (process memory)".into(),
        survives: "-".into(),
    }
}

fn gbps(bytes: f64, wall: Duration) -> f64 {
    bytes / wall.as_secs_f64() / 1e9
}

/// `<mode> on <medium>[, <flush instruction>]`.
fn mode_label(d: Durability) -> String {
    match d.flush {
        Some(instr) => format!("{} on {}, {}", d.mode, d.medium.name(), instr.name()),
        None => format!("{} on {}", d.mode, d.medium.name()),
    }
}

/// The durability of a written page, and what it survives. Without a sync a page is persisted
/// only in the cache-line modes (where `write_page` flushes); otherwise it is buffered in the page
/// cache, which survives a process crash but not a power loss.
fn write_label(d: Durability, synced: bool) -> (String, &'static str) {
    if synced || d.mode.uses_cache_lines() {
        let survives = if d.survives_power_loss() { "power loss" } else { "process crash" };
        (format!("persisted ({})", mode_label(d)), survives)
    } else {
        (format!("buffered ({})", mode_label(d)), "process crash")
    }
}

fn standard_notes(cfg: &Config) -> Vec<String> {
    vec![
        format!(
            "GB = 10^9 bytes. Median over {} runs, min–max across runs; sys CPU = sys/(user+sys) \
             from getrusage (microseconds), pooled over runs.",
            cfg.runs
        ),
        format!(
            "seq-read: every byte of every data page of a {} MiB file, summed as u64 words. pread \
             and se1 copy each page into one frame; se2 reads in place. Mapped layers: \
             MADV_SEQUENTIAL, and will_need {} pages ahead ({}; tmpfs: MADV_POPULATE_READ, \
             disk: MADV_WILLNEED); pread: \
             POSIX_FADV_SEQUENTIAL and the kernel's read-ahead.",
            cfg.seq_bytes >> 20,
            cfg.window_pages,
            match cfg.prefault {
                Prefault::FirstPass => "in the first pass after open only: the warm pass runs \
                                        over the page tables it filled",
                Prefault::EveryPass => "in every pass",
                Prefault::Off => "never: --prefault off",
            }
        ),
        "cold on disk: file closed, its pages evicted (POSIX_FADV_DONTNEED), fresh open, checksums \
         verified during the pass. cold on tmpfs: the file is memory and cannot be evicted, so \
         cold means a fresh open and fresh mapping only (empty page tables, checksums verified). \
         warm: a second pass in the same open (no checksums, page tables filled)."
            .into(),
        "tmpfs: the mapped layers use the cache-line path (emulated NVM), which models NVM's cost \
         and survives a process crash only; pread on tmpfs uses fdatasync, equally memory."
            .into(),
        format!(
            "rand-*: random pages of a {} MiB file already read once in this open. rand-read \
             fetches a page and reads every byte; rand-write is write_page (seal with CRC32C, then \
             pwrite, copy, or copy + flush); rand-write+sync adds sync() per page (in the \
             cache-line modes a fence: nothing is left for fdatasync) ({} ops or 2 s per run, \
             whichever ends first).",
            cfg.random_bytes >> 20,
            cfg.sync_ops
        ),
    ]
}
