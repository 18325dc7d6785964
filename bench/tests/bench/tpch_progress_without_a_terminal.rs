//! Goal: a `tpch` run whose stderr is not a terminal (CI, `nohup`) still reports progress there:
//! a line per finished load with its rate in rows/s, and a line per finished configuration
//! saying what ran, how long it took and how many configurations are left; `--quiet` silences
//! them.

use std::process::Command;

fn run(quiet: bool) -> String {
    let (medium, dir) = if std::path::Path::new("/dev/shm").is_dir() {
        ("tmpfs", "/dev/shm".to_string())
    } else {
        ("disk", std::env::temp_dir().display().to_string())
    };
    let cwd = tempfile::tempdir().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_nvpage-bench"));
    // The detail file goes to the working directory.
    c.current_dir(cwd.path());
    c.args(["tpch", "--sf", "0.002", "--layers", "se2", "--media", medium, "--pool-fraction"]);
    c.args(["1", "--runs", "1", "--queries", "6", "--dir-tmpfs", &dir, "--dir-disk", &dir]);
    if quiet {
        c.arg("--quiet");
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn each_finished_load_and_configuration_is_a_line_on_stderr() {
    let err = run(false);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines[0].starts_with("[load 1/1] se2 on ") && lines[0].contains("rows/s"), "{err}");
    assert!(lines[1].starts_with("[1/2] se2 on ") && lines[1].contains("cold"), "{err}");
    assert!(lines[1].contains("1 configuration left"), "{err}");
    assert!(lines[2].starts_with("[2/2] se2 on ") && lines[2].contains("warm"), "{err}");
    assert!(lines[2].contains("0 configurations left"), "{err}");
    assert!(run(true).is_empty());
}
