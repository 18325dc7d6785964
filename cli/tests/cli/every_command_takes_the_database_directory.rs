//! Goal: every command takes the database directory, and the file commands (`file-info`, `log
//! info|dump|check`) also the file itself, with `--log-dir` for a log kept apart; a path that is
//! none of these gets one line naming the path and what it is instead: missing, a directory with
//! no log (saying `--log-dir` if the log may be apart), a file where `--log-dir` wants the
//! directory, a device. `info` labels the durability each compiled layer would get, and the help
//! says how to run the command from a checkout.

use std::path::Path;
use std::process::{Command, Output};

use nvpage::Database;

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nvpage")).args(args).output().expect("run nvpage")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn fails(args: &[&str]) -> String {
    let out = run(args);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    stderr.strip_prefix("nvpage: ").expect("nvpage: ").trim_end().to_string()
}

#[test]
fn directories_and_files_are_both_taken_and_anything_else_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, apart, logs) =
        (tmp.path().join("db"), tmp.path().join("apart"), tmp.path().join("wal"));
    drop(Database::builder().log_bytes(1 << 20).open(&db).unwrap());
    drop(Database::builder().log_bytes(1 << 20).log_dir(&logs).open(&apart).unwrap());
    let (log, data) = (db.join(nvpage::LOG_FILE), db.join(nvpage::DATA_FILE));

    for cmd in ["info", "dump", "check"] {
        let by_dir = ok(&["log", cmd, s(&db)]);
        assert_eq!(by_dir, ok(&["log", cmd, s(&log)]), "log {cmd}: the directory is its log");
        ok(&["log", cmd, "--log-dir", s(&logs), s(&apart)]);
    }
    assert!(ok(&["log", "info", s(&db)]).starts_with(&format!("file:        {}\n", s(&log))));
    assert_eq!(ok(&["file-info", s(&db)]), ok(&["file-info", s(&data)]));
    ok(&["file-info", s(&apart)]);

    assert_eq!(
        fails(&["log", "info", s(&apart)]),
        format!(
            "{}: no log.nvpage in this directory: not a database directory, or its database \
             keeps its log apart (give that directory with --log-dir)",
            s(&apart)
        )
    );
    assert_eq!(
        fails(&["file-info", s(&logs)]),
        format!("{}: no data.nvpage in this directory: not a database directory", s(&logs))
    );
    let missing = tmp.path().join("missing");
    assert_eq!(
        fails(&["log", "check", s(&missing)]),
        format!("{}: no such database directory or log file", s(&missing))
    );
    assert_eq!(
        fails(&["file-info", s(&missing)]),
        format!("{}: no such database directory or data file", s(&missing))
    );
    assert_eq!(
        fails(&["log", "dump", "/dev/null"]),
        "/dev/null is a character device, not a database directory or a file of one"
    );
    assert_eq!(
        fails(&["log", "info", "--log-dir", s(&logs), s(&log)]),
        format!(
            "{} is a file: with --log-dir, give the database directory (the log is the one in \
             the --log-dir directory)",
            s(&log)
        )
    );
    assert!(fails(&["log", "info", s(&data)]).contains("is not an nvpage log"));

    let info = ok(&["info", s(&db)]);
    for layer in nvpage::Layer::compiled() {
        let label = format!("durability if opened with {layer}:");
        assert!(info.lines().any(|l| l.starts_with(&label)), "{label:?} in\n{info}");
    }
    let help = ok(&["--help"]);
    assert!(help.contains("cargo run --release -p nvpage-cli -- info DIR"), "{help}");
}
