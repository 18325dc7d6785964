//! Goal: when `nvpage info` or `nvpage check` cannot open a database, the one line it prints names
//! the path once (not "nvpage: db: db: ...") and says what is wrong with it: a directory missing
//! its log, a regular file given as the database, a path through a regular file, and a database
//! directory the user may not enter — reported with the OS error, never as "no database here".
//!
//! The superuser enters any directory, so when the test runs as root the permission case runs the
//! tool as user `nobody` (uid 65534) through `setpriv`; where that cannot be done it says so and
//! skips that case.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use nvpage::Database;

fn nvpage(args: &[&str], path: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nvpage")).args(args).arg(path).output().expect("run nvpage")
}

/// Exit status 1 and exactly one line on stderr, which is returned.
fn one_line_failure(out: &Output, what: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{what}: {stderr}");
    assert!(stderr.starts_with("nvpage: "), "{what}: {stderr}");
    stderr
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn open_failures_name_the_path_once_with_the_cause() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    drop(Database::builder().log_bytes(1 << 20).open(&db).unwrap());

    // A directory holding the data file but no log.
    let nolog = tmp.path().join("nolog");
    std::fs::create_dir(&nolog).unwrap();
    std::fs::copy(db.join(nvpage::DATA_FILE), nolog.join(nvpage::DATA_FILE)).unwrap();
    for cmd in ["info", "check"] {
        let stderr = one_line_failure(&nvpage(&[cmd], &nolog), "no log");
        let shown = nolog.display().to_string();
        assert_eq!(stderr.matches(&shown).count(), 1, "{cmd}: path once: {stderr}");
        assert!(stderr.contains("log.nvpage is missing"), "{cmd}: {stderr}");
    }

    // A regular file, and a path through one.
    let file = tmp.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let stderr = one_line_failure(&nvpage(&["info"], &file), "regular file");
    assert!(stderr.contains(&format!("{} is not a directory", file.display())), "{stderr}");
    let through = file.join("db");
    let stderr = one_line_failure(&nvpage(&["check"], &through), "through a file");
    assert!(stderr.contains(&through.display().to_string()), "{stderr}");
    assert!(stderr.contains("Not a directory (os error 20)"), "{stderr}");
    assert!(!stderr.contains("no database"), "{stderr}");

    // A database directory the user may not enter.
    chmod(tmp.path(), 0o755);
    chmod(&db, 0o700);
    let probe = tmp.path().join("probe");
    std::fs::create_dir(&probe).unwrap();
    chmod(&probe, 0o000);
    let privileged = std::fs::read_dir(&probe).is_ok();
    let run = |cmd: &str| -> Option<Output> {
        if !privileged {
            chmod(&db, 0o000);
            return Some(nvpage(&[cmd], &db));
        }
        let as_nobody = || {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(env!("CARGO_BIN_EXE_nvpage"));
            c
        };
        match as_nobody().arg("--version").output() {
            Ok(o) if o.status.success() => {
                Some(as_nobody().arg(cmd).arg(&db).output().expect("run setpriv"))
            }
            _ => None,
        }
    };
    for cmd in ["info", "check"] {
        let Some(out) = run(cmd) else {
            eprintln!(
                "running as root without a working `setpriv`: the permission case is skipped"
            );
            break;
        };
        let stderr = one_line_failure(&out, "permission denied");
        assert!(stderr.contains(&db.display().to_string()), "{cmd}: {stderr}");
        assert!(stderr.contains("Permission denied (os error 13)"), "{cmd}: {stderr}");
        assert!(!stderr.contains("no database"), "{cmd}: {stderr}");
    }
    chmod(&db, 0o755);
    chmod(&probe, 0o755);
}
