//! Goal: across processes, any number of read-only opens share a database while no writable one
//! holds it, and the two exclude each other with an error naming the other process's id. The
//! test re-executes its own binary as a child that opens the database (read-only or writable),
//! prints `holding` and keeps it open until its stdin closes (no sleeps: the pipe is the
//! barrier). Beside a read-only child this
//! process opens it read-only too, and a writable open is refused naming the child's pid as a
//! read-only holder; beside a writable child a read-only open is refused naming the child's pid as
//! the writer, saying that readers beside a live writer in another process are not offered yet.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

use nvpage::{Database, Error, ReadOps, StorageError};

const CHILD_DB: &str = "NVPAGE_HOLDER_DB";
const CHILD_READ_ONLY: &str = "NVPAGE_HOLDER_READ_ONLY";

/// The child: opens the database named by the environment and holds it until stdin closes.
#[test]
fn holder() {
    let Some(dir) = std::env::var_os(CHILD_DB) else { return };
    let read_only = std::env::var(CHILD_READ_ONLY).is_ok_and(|v| v == "1");
    let db = Database::builder().read_only(read_only).open(dir).expect("the child's open");
    println!("holding");
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {}
    drop(db);
}

/// A child holding the database, and its output still to be read.
struct Holder {
    child: Child,
    out: BufReader<ChildStdout>,
}

/// Starts a child holding the database at `path`; returns once it holds it.
fn hold(path: &Path, read_only: bool) -> Holder {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "holder", "--nocapture", "--test-threads=1"])
        .env(CHILD_DB, path)
        .env(CHILD_READ_ONLY, if read_only { "1" } else { "0" })
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while out.read_line(&mut line).unwrap() > 0 {
        // The test harness may print "test holder ... " on the same line first.
        if line.trim_end().ends_with("holding") {
            return Holder { child, out };
        }
        line.clear();
    }
    panic!("the child ended without holding the database: {:?}", child.wait());
}

/// Lets the child close the database and end; reads its output to the end so that it never
/// writes into a closed pipe.
fn release(mut h: Holder) {
    drop(h.child.stdin.take());
    std::io::copy(&mut h.out, &mut std::io::sink()).unwrap();
    assert!(h.child.wait().unwrap().success());
}

fn already_open(r: nvpage::Result<Database>) -> String {
    match r {
        Err(e @ Error::Storage(StorageError::AlreadyOpen { .. })) => e.to_string(),
        Err(e) => panic!("expected AlreadyOpen, got {e}"),
        Ok(_) => panic!("expected AlreadyOpen, the open succeeded"),
    }
}

#[test]
fn readers_share_across_processes_and_a_writer_excludes_them() {
    if std::env::var_os(CHILD_DB).is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    drop(Database::builder().log_bytes(1 << 20).open(&path).unwrap());
    let log = path.join(nvpage::LOG_FILE).display().to_string();

    let reader = hold(&path, true);
    let pid = reader.child.id();
    {
        let db = Database::builder().read_only(true).open(&path).expect("a second reader");
        assert!(db.begin_read().unwrap().tables().is_empty());
    }
    let text = already_open(Database::open(&path));
    assert_eq!(
        text,
        format!(
            "{log} is already open read-only by process {pid}; a writable open needs every \
             read-only handle closed first"
        )
    );
    release(reader);

    let writer = hold(&path, false);
    let pid = writer.child.id();
    let text = already_open(Database::builder().read_only(true).open(&path));
    assert_eq!(
        text,
        format!(
            "{log} is already open for writing by process {pid}; a read-only open needs no \
             writer: close the database there first (readers in other processes beside a live \
             writer are not offered yet)"
        )
    );
    let text = already_open(Database::open(&path));
    assert!(
        text.starts_with(&format!("{log} is already open for writing by process {pid}; one")),
        "{text}"
    );
    release(writer);
    drop(Database::open(&path).expect("the database opens once the child is gone"));
}
