//! Goal: loading streams — the generator's rows go through write transactions of a bounded size
//! into a bounded pool — so the memory a `tpch` run needs does not grow with the scale factor:
//! a run at five times the data (115 MiB more of data file) peaks at about the same resident
//! memory. pread on disk, so the file's pages stay in the page cache, outside the process.

use std::process::Command;

use nix::sys::resource::{UsageWho, getrusage};

/// The largest resident set of any child waited for so far, in bytes (Linux: KiB in ru_maxrss).
fn children_peak_rss() -> u64 {
    getrusage(UsageWho::RUSAGE_CHILDREN).unwrap().max_rss() as u64 * 1024
}

fn run(sf: &str, dir: &std::path::Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_nvpage-bench"))
        .args(["tpch", "--sf", sf, "--layers", "pread", "--media", "disk", "--pool-fraction"])
        .args(["0.01", "--runs", "1", "--queries", "6", "--warm", "--quiet", "--dir-disk"])
        .arg(dir)
        .arg("--detail")
        .arg(dir.join("tpch-detail.txt"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn five_times_the_data_needs_no_more_memory() {
    let dir = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
    run("0.02", dir.path());
    let small = children_peak_rss();
    run("0.1", dir.path());
    let large = children_peak_rss();
    // The high-water mark over both runs: equal to the first's unless the second went higher.
    assert!(
        large < small + (48 << 20),
        "SF 0.02 peaked at {} MiB, SF 0.1 at {} MiB",
        small >> 20,
        large >> 20
    );
}
