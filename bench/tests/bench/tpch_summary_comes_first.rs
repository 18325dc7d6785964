//! Goal: `nvpage-bench tpch` answers the paper's question in its first screen — the loads, each
//! layer relative to pread, and a verdict that names the fastest layer and says what the answers
//! were checked against — and writes the detail (every query in every configuration, each column
//! with its unit, the system shares of CPU time) to a file: the one `--detail` names, or
//! `tpch-detail.txt` in the working directory.

use std::path::Path;
use std::process::Command;

fn tmpfs_or_disk() -> (&'static str, String) {
    if Path::new("/dev/shm").is_dir() {
        ("tmpfs", "/dev/shm".into())
    } else {
        ("disk", std::env::temp_dir().display().to_string())
    }
}

/// A small matrix run in `cwd`, with `extra` options; its stdout.
fn run(cwd: &Path, extra: &[&str]) -> String {
    let (medium, dir) = tmpfs_or_disk();
    let out = Command::new(env!("CARGO_BIN_EXE_nvpage-bench"))
        .current_dir(cwd)
        .args(["tpch", "--sf", "0.002", "--layers", "pread,se2", "--media", medium])
        .args(["--pool-fraction", "1,0.1", "--runs", "1", "--queries", "1,6,13", "--quiet"])
        .args(["--dir-tmpfs", &dir, "--dir-disk", &dir])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `text`'s words, one space apart: what it says, however it is wrapped.
fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn the_summary_is_one_screen_and_the_detail_goes_to_its_file() {
    let out_dir = tempfile::tempdir().unwrap();
    let detail = out_dir.path().join("detail.txt");
    let stdout = run(out_dir.path(), &["--detail", detail.to_str().unwrap()]);
    let flat = words(&stdout);

    // The verdict: the fastest layer, and what the answers were checked against.
    assert!(flat.contains("Fastest layer, by the geometric mean of its median times"), "{stdout}");
    assert!(flat.contains("Every answer of the 3 queries was checked"), "{stdout}");
    assert!(flat.contains("equal in all 8 configurations"), "{stdout}");
    assert!(flat.contains("TPC-H's answer set") && flat.contains("reference"), "{stdout}");
    // The paper's table: SE2 relative to pread, as a geometric mean.
    assert!(flat.contains("geometric mean") && flat.contains("/ pread"), "{stdout}");
    assert!(flat.contains("pool holds") && flat.contains("10%"), "{stdout}");
    // A screen, not a page: no per-query table on the terminal, and the file named.
    assert!(!stdout.contains("min–max ms"), "the detail went to the terminal:\n{stdout}");
    assert!(stdout.lines().count() <= 50, "{} lines:\n{stdout}", stdout.lines().count());
    assert!(flat.contains(&format!("the notes: {}", detail.display())), "{stdout}");

    let d = std::fs::read_to_string(&detail).unwrap();
    for unit in ["median ms", "min–max ms", "user ms", "sys ms", "sys CPU %", "copied MiB"] {
        assert!(d.contains(unit), "no {unit:?} column in the detail:\n{d}");
    }
    for q in ["q01", "q06", "q13"] {
        assert!(d.contains(q), "{q} missing from the detail");
    }
    assert!(d.contains("geo. mean") && d.contains("sys CPU"), "{d}");
}

#[test]
fn without_detail_the_file_is_written_in_the_working_directory() {
    let cwd = tempfile::tempdir().unwrap();
    let stdout = run(cwd.path(), &[]);
    assert!(words(&stdout).contains("the notes: tpch-detail.txt"), "{stdout}");
    let d = std::fs::read_to_string(cwd.path().join("tpch-detail.txt")).unwrap();
    assert!(d.contains("min–max ms"), "{d}");
}
