//! Goal: after an application is killed inside a write transaction, `nvpage check` and `nvpage
//! info` say the log holds an unfinished transaction and to run `nvpage recover DIR`, and change
//! no byte of either file; `nvpage recover DIR` rolls it back and prints what it did; the
//! database then checks sound with the last commit's rows, and a second `recover` says there is
//! nothing to recover. The application is this test binary re-executed as a child: it commits
//! rows, updates them all through a small pool (so pages are written back mid-transaction),
//! prints `stolen`, and waits on its stdin until the test kills it with SIGKILL.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use nvpage::{Column, ColumnType, Database, ReadOps, Schema, Value};

const CHILD_DB: &str = "NVPAGE_KILLED_APP_DB";

/// The application: leaves its transaction open with stolen pages, and waits to be killed.
#[test]
fn app() {
    let Some(dir) = std::env::var_os(CHILD_DB) else { return };
    let db = Database::builder().page_size(4096).pool_bytes(8 * 4096).log_bytes(4 << 20).open(dir);
    let db = db.unwrap();
    let mut tx = db.begin_write().unwrap();
    let t = tx.create_table("t", Schema::new(vec![Column::new("v", ColumnType::I64)]).unwrap());
    let t = t.unwrap();
    for _ in 0..3000 {
        tx.insert(&t, &[Value::I64(1)]).unwrap();
    }
    tx.commit().unwrap();
    let mut tx = db.begin_write().unwrap();
    let mut ids = Vec::new();
    tx.for_each_row(&t, |r| {
        ids.push(r.id());
        Ok(())
    })
    .unwrap();
    for id in ids {
        tx.update(&t, id, &[Value::I64(2)]).unwrap();
    }
    assert!(db.stats().log_bytes > 0, "before-images were logged");
    println!("stolen");
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {}
    unreachable!("killed before its stdin closes");
}

fn nvpage(args: &[&str], path: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nvpage")).args(args).arg(path).output().expect("run nvpage")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn recover_rolls_back_what_a_killed_app_left() {
    if std::env::var_os(CHILD_DB).is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "app", "--nocapture", "--test-threads=1"])
        .env(CHILD_DB, &path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    // The test harness may print "test app ... " on the same line first.
    while !line.trim_end().ends_with("stolen") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the app ended: {:?}", child.wait());
    }
    child.kill().unwrap();
    assert!(!child.wait().unwrap().success());

    let (data, log) = (path.join(nvpage::DATA_FILE), path.join(nvpage::LOG_FILE));
    let before = (std::fs::read(&data).unwrap(), std::fs::read(&log).unwrap());
    for cmd in ["check", "info"] {
        let out = nvpage(&[cmd], &path);
        assert_eq!(out.status.code(), Some(1), "{cmd}");
        assert_eq!(
            text(&out.stderr),
            format!(
                "nvpage: {}: its log {} holds an unfinished transaction (a crash or a killed \
                 process left it), which a read-only open cannot roll back; nothing was changed: \
                 run `nvpage recover {}` to roll it back, then run this again\n",
                path.display(),
                log.display(),
                path.display()
            ),
            "{cmd}"
        );
        let after = (std::fs::read(&data).unwrap(), std::fs::read(&log).unwrap());
        assert!(after == before, "{cmd} changed the files");
    }

    let out = nvpage(&["recover"], &path);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    let prefix = format!("{}: recovered: rolled back 1 unfinished transaction: ", path.display());
    assert!(said.starts_with(&prefix), "{said}");
    assert!(said.contains(" pages restored from ") && said.ends_with(" bytes of log read)\n"));

    let out = nvpage(&["check"], &path);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("1 tables, 3000 rows"), "{}", text(&out.stdout));
    {
        let db = Database::builder().read_only(true).open(&path).unwrap();
        let rx = db.begin_read().unwrap();
        let t = rx.table("t").unwrap();
        let v = t.col::<nvpage::kind::I64>("v").unwrap();
        let mut sum = 0;
        rx.for_each_row(&t, |r| {
            sum += r.get(v)?;
            Ok(())
        })
        .unwrap();
        assert_eq!(sum, 3000, "the last commit's rows, none updated");
    }

    let out = nvpage(&["recover"], &path);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!(
            "{}: nothing to recover: the log holds no unfinished transaction\n",
            path.display()
        )
    );
}
