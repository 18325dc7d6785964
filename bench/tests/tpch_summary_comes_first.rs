//! Goal: `nvpage-bench tpch` answers the paper's question in its first screen — the answers'
//! check in one line, then each layer relative to pread and each layer's system share of CPU —
//! and, with `--detail`, writes the per-query tables (every column with its unit) to a file
//! instead of the terminal.

use std::process::Command;

fn tmpfs_or_disk() -> (&'static str, String) {
    if std::path::Path::new("/dev/shm").is_dir() {
        ("tmpfs", "/dev/shm".into())
    } else {
        ("disk", std::env::temp_dir().display().to_string())
    }
}

#[test]
fn the_summary_is_one_screen_and_the_detail_goes_to_its_file() {
    let (medium, dir) = tmpfs_or_disk();
    let out_dir = tempfile::tempdir().unwrap();
    let detail = out_dir.path().join("detail.txt");
    let out = Command::new(env!("CARGO_BIN_EXE_nvpage-bench"))
        .args(["tpch", "--sf", "0.002", "--layers", "pread,se2", "--media", medium])
        .args(["--pool-fraction", "1,0.1", "--runs", "1", "--queries", "1,6,13", "--quiet"])
        .args(["--dir-tmpfs", &dir, "--dir-disk", &dir, "--detail"])
        .arg(&detail)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();

    // One line says what the answers were checked against, at any scale factor.
    let checked = lines.iter().find(|l| l.starts_with("Answers of the 3 queries")).unwrap();
    assert!(checked.contains("equal in all 8 configurations"), "{checked}");
    assert!(checked.contains("TPC-H's answer set") && checked.contains("reference"), "{checked}");
    // The paper's table: SE2 relative to pread, as a geometric mean, and the system shares.
    assert!(stdout.contains("geometric mean over the 3 queries"), "{stdout}");
    assert!(stdout.contains("/ pread") && stdout.contains("sys CPU"), "{stdout}");
    assert!(stdout.contains("pool holds") && stdout.contains("10%"), "{stdout}");
    // A screen, not a page: no per-query table on the terminal.
    assert!(!stdout.contains("min–max ms"), "the detail went to the terminal:\n{stdout}");
    assert!(lines.len() <= 60, "{} lines:\n{stdout}", lines.len());
    assert!(stdout.contains(&format!("Detailed tables written to {}", detail.display())));

    let d = std::fs::read_to_string(&detail).unwrap();
    for unit in ["median ms", "min–max ms", "user ms", "sys ms", "sys CPU %", "copied MiB"] {
        assert!(d.contains(unit), "no {unit:?} column in the detail:\n{d}");
    }
    for q in ["q01", "q06", "q13"] {
        assert!(d.contains(q), "{q} missing from the detail");
    }
    assert!(d.contains("geo. mean"), "{d}");
}
