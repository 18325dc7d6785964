//! Goal: `nvpage sql DIR` runs statements from `-c` and `-f` in the order given, in one session
//! (so `BEGIN` … `ROLLBACK` spans them), and from standard input; prints each result as a table,
//! CSV (one header line, then rows, the header also for an empty result) or JSON; and ends at
//! the first failing statement with its error — DataFusion's message for bad SQL, an unknown
//! table or column, a type mismatch — on stderr, exit status 1, no panic, and nothing of that
//! statement on stdout.

#![cfg(feature = "sql")]

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn nvpage(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nvpage"))
        .arg("sql")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run nvpage")
}

fn ok(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn fails(out: &Output, names: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with("nvpage: "), "{stderr}");
    assert!(stderr.contains(names), "{names}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn statements_run_in_order_in_one_session_in_every_format() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let script = tmp.path().join("load.sql");
    std::fs::write(&script, "INSERT INTO t VALUES (2, 'two'), (3, NULL);\n").unwrap();
    let out = nvpage(
        &dir,
        &[
            "-c",
            "CREATE TABLE t (k BIGINT PRIMARY KEY, v VARCHAR(10)); INSERT INTO t VALUES (1, 'one')",
            "-f",
            script.to_str().unwrap(),
            "-c",
            "BEGIN",
            "-c",
            "DELETE FROM t",
            "-c",
            "ROLLBACK",
            "--format",
            "csv",
            "-c",
            "SELECT k, v FROM t ORDER BY k",
            "-c",
            "SELECT k FROM t WHERE k > 10",
        ],
    );
    let stdout = ok(&out);
    // The INSERTs and the DELETE print their counts; the SELECTs their rows; the empty result
    // its header.
    assert!(stdout.ends_with("k,v\n1,one\n2,two\n3,\nk\n"), "{stdout}");

    let json = ok(&nvpage(
        &dir,
        &[
            "--format",
            "json",
            "-c",
            "SELECT k, v FROM t WHERE k < 3 ORDER BY k",
            "-c",
            "SELECT k FROM t WHERE k > 10",
        ],
    ));
    assert_eq!(json, "[{\"k\":1,\"v\":\"one\"},{\"k\":2,\"v\":\"two\"}]\n[]\n");

    let table = ok(&nvpage(&dir, &["-c", "SELECT count(*) AS n FROM t"]));
    assert!(table.contains("| n |") && table.contains("| 3 |"), "{table}");

    // Statements from standard input when there is no -c or -f.
    let mut child = Command::new(env!("CARGO_BIN_EXE_nvpage"))
        .args(["sql", dir.to_str().unwrap(), "--format", "csv"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"SELECT max(k) AS top FROM t;\n").unwrap();
    assert_eq!(ok(&child.wait_with_output().unwrap()), "top\n3\n");
}

#[test]
fn the_first_failing_statement_ends_the_run_with_its_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    ok(&nvpage(&dir, &["-c", "CREATE TABLE t (k BIGINT NOT NULL, d DATE)"]));
    for (sql, names) in [
        ("SELEC 1", "SELEC"),
        ("SELECT * FROM nope", "nope"),
        ("SELECT nope FROM t", "nope"),
        ("INSERT INTO t VALUES ('x', DATE '2020-01-01')", "Cannot cast string 'x'"),
        ("SELECT d + d FROM t", "Date32 + Date32"),
    ] {
        let out =
            nvpage(&dir, &["--format", "csv", "-c", sql, "-c", "INSERT INTO t VALUES (1, NULL)"]);
        fails(&out, names);
        assert!(out.stdout.is_empty(), "{sql}: {}", String::from_utf8_lossy(&out.stdout));
    }
    // Nothing after a failure ran: the table is still empty.
    assert_eq!(
        ok(&nvpage(&dir, &["--format", "csv", "-c", "SELECT count(*) AS n FROM t"])),
        "n\n0\n"
    );
    // A missing database with --read-only is an error, not a new database.
    let out = nvpage(&tmp.path().join("none"), &["--read-only", "-c", "SELECT 1"]);
    fails(&out, "none");
    assert!(!tmp.path().join("none").exists());
}

/// Goal: a statement cut by SIGKILL leaves nothing. An `UPDATE` of a table larger than the
/// buffer pool (so that changed pages reach the file, their before-images in the log) runs in a
/// transaction; the process is killed while it is open; the next open rolls it back, and every
/// row reads as before.
#[test]
fn a_statement_cut_by_sigkill_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    // About 90 MiB of rows: more than the default pool's 64 MiB.
    ok(&nvpage(
        &db,
        &[
            "-c",
            "CREATE TABLE t (k BIGINT PRIMARY KEY, v VARCHAR(200))",
            "-c",
            "INSERT INTO t SELECT value, repeat('k', 150) FROM generate_series(1, 500000)",
        ],
    ));
    // The child reads its last script from a FIFO only after the UPDATE before it has run: once
    // this process can open the FIFO for writing, the UPDATE is done and its transaction open.
    let fifo = dir.path().join("next.sql");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let mut child = Command::new(env!("CARGO_BIN_EXE_nvpage"))
        .arg("sql")
        .arg(&db)
        .args(["-c", "BEGIN", "-c", "UPDATE t SET v = repeat('c', 150)", "-f"])
        .arg(&fifo)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _writer = loop {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            panic!("nvpage sql ended early: {}", String::from_utf8_lossy(&out.stderr));
        }
        // Without a reader, a non-blocking open for writing fails (ENXIO).
        match std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(&fifo) {
            Ok(f) => break f,
            Err(_) => std::thread::yield_now(),
        }
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_nvpage")).arg("recover").arg(&db).output().unwrap();
    let said = ok(&out);
    assert!(said.contains("rolled back 1 unfinished transaction"), "{said}");
    let counted = ok(&nvpage(
        &db,
        &[
            "--format",
            "csv",
            "-c",
            "SELECT count(*) AS n, min(v) = max(v) AS same, min(v) AS v FROM t",
        ],
    ));
    assert_eq!(counted, format!("n,same,v\n500000,true,{}\n", "k".repeat(150)));
}
