//! Goal: what `nvpage-bench tpch` prints for its default matrix — every layer, disk and tmpfs, a
//! pool holding all or a tenth of the data, cold and warm, 22 queries, 3 runs — fits one screen:
//! at most 50 lines of at most 120 columns, the load table within 100, with the summary, the
//! verdict (the fastest layer where, and that every answer was checked) and the detail file's
//! name; PostgreSQL's terms appear only when it ran, and with it the screen still fits. The
//! report code runs on a made-up record set of the default run's shape, not on a benchmark run.

use std::collections::BTreeMap;

use nvpage::Layer;
use nvpage_bench::machine::Machine;
use nvpage_bench::tpch::runner::{AnswerRecord, ConfigOut, LoadRecord, Report, RunRecord};
use nvpage_bench::tpch::screen::{self, LOAD_TABLE_WIDTH, SCREEN_LINES, SCREEN_WIDTH};
use nvpage_bench::tpch::{Config, Medium, Query, check_answers};
use nvpage_storage::persist::FlushInstr;
use nvpage_storage::{Durability, Medium as StorageMedium, PersistMode};

/// The durability string nvpage's data file reports for `layer` on `medium`.
fn durability(layer: Layer, medium: Medium) -> String {
    let (mode, flush, on) = match (layer, medium) {
        (Layer::Pread, Medium::Disk) => (PersistMode::Fdatasync, None, StorageMedium::Disk),
        (Layer::Pread, Medium::Tmpfs) => (PersistMode::Fdatasync, None, StorageMedium::Tmpfs),
        (_, Medium::Disk) => (PersistMode::Msync, None, StorageMedium::Disk),
        (_, Medium::Tmpfs) => {
            (PersistMode::EmulatedNvm, Some(FlushInstr::Clwb), StorageMedium::Tmpfs)
        }
    };
    Durability { mode, flush, medium: on }.to_string()
}

fn postgres_durability(medium: Medium) -> String {
    let name = "PostgreSQL 15.14 (Debian 15.14-0+deb12u1) on x86_64-pc-linux-gnu";
    match medium {
        Medium::Disk => {
            format!("{name}: fsync on, WAL flushed at commit on disk: survives power loss")
        }
        Medium::Tmpfs => {
            format!("{name}: fsync on, on tmpfs: survives a process crash only: the medium is DRAM")
        }
    }
}

fn load(layer: &str, medium: Medium, durability: String, seconds: f64) -> LoadRecord {
    let rows = 866_602;
    LoadRecord {
        layer: layer.into(),
        medium: medium.name().into(),
        durability,
        rows,
        seconds,
        rows_per_s: rows as f64 / seconds,
        user_ms: Some(seconds * 800.0),
        sys_ms: Some(seconds * 150.0),
        data_bytes: 185_827_328,
        tables: BTreeMap::new(),
        table_bytes: BTreeMap::from([("lineitem".to_string(), 98_304_000)]),
    }
}

/// The default run's records, with times that differ by layer, medium, pool, pass and query.
fn report(with_postgres: bool) -> Report {
    let media = [Medium::Disk, Medium::Tmpfs];
    let pools = [1.0, 0.1];
    let mut loads = Vec::new();
    let mut runs = Vec::new();
    let mut layers: Vec<(String, String, f64)> = Vec::new();
    for medium in media {
        for (i, layer) in [Layer::Pread, Layer::Se1, Layer::Se2].into_iter().enumerate() {
            let d = durability(layer, medium);
            loads.push(load(layer.name(), medium, d.clone(), 11.0 + i as f64));
            layers.push((layer.name().into(), d, 1.0 - 0.15 * i as f64));
        }
    }
    if with_postgres {
        for medium in media {
            loads.push(load("postgres", medium, postgres_durability(medium), 41.0));
        }
    }
    for medium in media {
        let mut all = layers.clone();
        if with_postgres {
            let d = postgres_durability(medium);
            all.push(("postgres".into(), d.clone(), 3.0));
            all.push(("postgres-1w".into(), d, 4.0));
        }
        for (layer, durability, factor) in &all {
            for pool in pools {
                for cold in [true, false] {
                    for (q, query) in Query::ALL.iter().enumerate() {
                        for run in 0..3 {
                            let base = if cold { 120.0 } else { 9.0 } * (1.0 + q as f64 / 7.0);
                            let medium_factor = if medium == Medium::Tmpfs { 0.4 } else { 1.0 };
                            // pread is fastest on disk with the pool holding all the data.
                            let lead = if medium == Medium::Disk && pool == 1.0 && layer == "pread"
                            {
                                0.5
                            } else {
                                1.0
                            };
                            runs.push(RunRecord {
                                query: query.name(),
                                layer: layer.clone(),
                                medium: medium.name().into(),
                                durability: durability.clone(),
                                pool_fraction: pool,
                                cold,
                                run,
                                wall_ms: base
                                    * factor
                                    * medium_factor
                                    * lead
                                    * (1.0 + run as f64 / 50.0)
                                    / pool.sqrt(),
                                user_ms: base * 0.6,
                                sys_ms: base * 0.3,
                                pages_read: 22_000,
                                bytes_copied: 180_000_000,
                                redirected_reads: 0,
                            });
                        }
                    }
                }
            }
        }
    }
    let options = Config {
        sf: 0.1,
        layers: vec![Layer::Pread, Layer::Se1, Layer::Se2],
        media: media.to_vec(),
        dir_disk: "/var/tmp".into(),
        dir_tmpfs: "/dev/shm".into(),
        pool_fractions: pools.to_vec(),
        runs: 3,
        threads: 2,
        queries: Query::ALL.to_vec(),
        cold: true,
        warm: true,
        with_postgres,
        sql: false,
        reduced: false,
        clustered: false,
        quiet: false,
    };
    Report {
        machine: Machine {
            cpu_model: "AMD EPYC 7B13 64-Core Processor".into(),
            cores: 2,
            kernel: "6.1.0-28-cloud-amd64".into(),
            memory_gib: 23.5,
            clocksource: "tsc".into(),
            load_average_1min: 0.98,
        },
        config: ConfigOut {
            options,
            loads,
            mem_read_gb_per_s: 9.6,
            memory: vec![
                "Memory: 23.5 GiB of RAM, no cgroup memory limit; the 0.17 GiB data file fits, \
                 so runs on disk that are not cold read it from the page cache."
                    .into(),
            ],
            notes: vec!["warm: a warm-up run, then the measured runs, without reopening".into()],
        },
        runs,
        results: Query::ALL
            .iter()
            .map(|q| AnswerRecord { query: q.name(), columns: Vec::new(), rows: Vec::new() })
            .collect(),
    }
}

/// The screen of `report`, as the command prints it with the detail in `tpch-detail.txt`.
fn screen_text(report: &Report) -> String {
    let checked = check_answers(report).unwrap();
    let mut out = Vec::new();
    screen::write_screen(report, &checked, Some("tpch-detail.txt"), &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// `text`'s words, one space apart: what it says, however it is wrapped.
fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn width(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

fn assert_fits(text: &str) {
    let lines = text.lines().count();
    assert!(lines <= SCREEN_LINES, "{lines} lines, more than {SCREEN_LINES}:\n{text}");
    assert!(width(text) <= SCREEN_WIDTH, "a line wider than {SCREEN_WIDTH}:\n{text}");
    assert_eq!((SCREEN_LINES, SCREEN_WIDTH, LOAD_TABLE_WIDTH), (50, 120, 100));
}

#[test]
fn the_default_report_fits_one_screen_with_its_answer() {
    let report = report(false);
    let text = screen_text(&report);
    assert_fits(&text);
    let loads = screen::load_table(&report.config.loads).to_string();
    assert!(text.contains(&loads), "the load table is not on the screen:\n{text}");
    assert!(width(&loads) <= LOAD_TABLE_WIDTH, "the load table is wider than 100:\n{loads}");
    let flat = words(&text);
    for part in [
        "ms (geo)",
        "/ pread",
        "Fastest layer, by the geometric mean of its median times over the 22 queries, cold and \
         warm: on disk, pread with the pool holding 100% (",
        "Every answer of the 22 queries was checked: equal in all 24 configurations",
        "Per-query tables, system CPU shares, the durability of every file and the notes: \
         tpch-detail.txt",
    ] {
        assert!(flat.contains(&words(part)), "no {part:?} on the screen:\n{text}");
    }
    // PostgreSQL did not run: none of its terms.
    for term in ["postgres", "PostgreSQL", "shared_buffers"] {
        assert!(!text.contains(term), "{term:?} on the screen without PostgreSQL:\n{text}");
    }
}

#[test]
fn with_postgres_the_screen_still_fits_and_explains_its_terms() {
    let report = report(true);
    let text = screen_text(&report);
    assert_fits(&text);
    assert!(width(&screen::load_table(&report.config.loads).to_string()) <= LOAD_TABLE_WIDTH);
    for term in ["postgres-1w", "shared_buffers", "PostgreSQL (the faster of its two settings)"] {
        assert!(words(&text).contains(term), "no {term:?} on the screen:\n{text}");
    }
}
