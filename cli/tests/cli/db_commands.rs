//! Goal: `nvpage check PATH` exits 0 on a sound database and 1 — with a message naming the
//! damaged page and its file — when a byte of a heap page is flipped; `info`, which does not read
//! the heap pages, says so and says to run `check`; a damaged catalog page fails both commands
//! naming the data file and the page; both exit 1 with a clear message for a missing database
//! and for a log that still needs recovery (saying to run `nvpage recover`); `info` prints the
//! format, page size and count, the durability an open with each compiled layer would get,
//! labelled as such, tables with row counts, and the log's state.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;

use nvpage::{Column, ColumnType, Database, ReadOps, Schema, Value};

/// Held by each test for its whole run. A child `nvpage` forked by one test holds a copy of
/// every descriptor open in this process until it execs (Rust opens files close-on-exec, which
/// takes effect only at the exec), so a database the other test had just closed could still be
/// locked by it for that instant: seen once as "already open" in a loaded run.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn nvpage(args: &[&str], path: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nvpage")).args(args).arg(path).output().expect("run nvpage")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn fails_cleanly(out: &Output, what: &str) -> String {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
    assert!(stderr.contains("nvpage: "), "{what}: {stderr}");
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    stderr
}

/// A database with one table of 3000 rows and a unique index on its ids; returns the first heap
/// page.
fn make(path: &Path) -> u64 {
    let db = Database::builder().pool_bytes(64 << 10).open(path).unwrap();
    let mut tx = db.begin_write().unwrap();
    let schema = Schema::new(vec![
        Column::new("id", ColumnType::I64),
        Column::new("name", ColumnType::VarChar { max_len: 100 }),
    ])
    .unwrap();
    let t = tx.create_table("items", schema).unwrap();
    tx.create_unique_index("items_id", &t, &["id"]).unwrap();
    let mut first = None;
    for i in 0..3000 {
        let id = tx.insert(&t, &[Value::I64(i), Value::Str("some name or other")]).unwrap();
        first.get_or_insert(id.page);
    }
    tx.commit().unwrap();
    first.unwrap()
}

#[test]
fn check_and_info_on_good_damaged_missing_and_unrecovered_databases() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let heap_page = make(&path);

    let out = nvpage(&["check"], &path);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("sound"), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("1 indexes (3000 entries"), "{}", text(&out.stdout));

    let out = nvpage(&["info"], &path);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let info = text(&out.stdout);
    for want in [
        "format:",
        "page size:   8192",
        "page count:",
        "durability:",
        "items",
        "3000 rows",
        "unique index items_id (id): 3000 entries",
        "log:",
    ] {
        assert!(info.contains(want), "info lacks {want:?}:\n{info}");
    }
    assert!(info.contains("generation"), "{info}");
    // No durability is shown as the database's: what an open with each layer would get.
    assert!(info.contains("durability:  none is stored in a database"), "{info}");
    for layer in nvpage::Layer::compiled() {
        let line =
            info.lines().find(|l| l.starts_with(&format!("durability if opened with {layer}:")));
        let line = line.unwrap_or_else(|| panic!("no durability line for {layer}:\n{info}"));
        assert!(line.contains(" data file ") && line.contains(": survives "), "{line}");
    }
    assert!(info.contains("durability of the log, any layer:"), "{info}");

    // A flipped byte in a heap page.
    let data = path.join(nvpage::DATA_FILE);
    let mut bytes = std::fs::read(&data).unwrap();
    bytes[heap_page as usize * 8192 + 5000] ^= 1;
    std::fs::write(&data, &bytes).unwrap();
    let out = nvpage(&["check"], &path);
    let stderr = fails_cleanly(&out, "damaged page");
    assert!(stderr.contains(&format!("{}: page {heap_page} ", data.display())), "{stderr}");
    // Info cannot see the damage (it reads no heap page) and says what would.
    let out = nvpage(&["info"], &path);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let info = text(&out.stdout);
    assert!(info.contains(&format!("run `nvpage check {}`", path.display())), "{info}");
    bytes[heap_page as usize * 8192 + 5000] ^= 1;
    std::fs::write(&data, &bytes).unwrap();
    assert!(nvpage(&["check"], &path).status.success());

    // A flipped byte in the catalog (page 1), which every open reads: both commands fail naming
    // the data file and the page, the path given once.
    bytes[8192 + 3000] ^= 1;
    std::fs::write(&data, &bytes).unwrap();
    for cmd in ["check", "info"] {
        let stderr = fails_cleanly(&nvpage(&[cmd], &path), "damaged catalog");
        assert!(
            stderr.starts_with(&format!("nvpage: {}: page 1 fails its checksum", data.display())),
            "{cmd}: {stderr}"
        );
    }
    bytes[8192 + 3000] ^= 1;
    std::fs::write(&data, &bytes).unwrap();

    // Missing database.
    for cmd in ["check", "info"] {
        let out = nvpage(&[cmd], &dir.path().join("nothing-here"));
        let stderr = fails_cleanly(&out, "missing");
        assert!(stderr.contains("no database"), "{stderr}");
        assert!(!dir.path().join("nothing-here").exists(), "{cmd} created nothing");
    }

    // A transaction left in the log (the process "died" with it open after pages were stolen).
    {
        let db = Database::builder().pool_bytes(64 << 10).open(&path).unwrap();
        let mut tx = db.begin_write().unwrap();
        let t = tx.table("items").unwrap();
        for i in 0..3000 {
            tx.insert(&t, &[Value::I64(10_000 + i), Value::Str("uncommitted")]).unwrap();
        }
        assert!(db.counters().write_backs > 0);
        std::mem::forget(tx);
    }
    for cmd in ["check", "info"] {
        let stderr = fails_cleanly(&nvpage(&[cmd], &path), "needs recovery");
        assert!(stderr.contains("unfinished transaction"), "{stderr}");
        assert!(stderr.contains(&format!("run `nvpage recover {}`", path.display())), "{stderr}");
    }
    // Recovery by a writable open, then the database checks sound again with its 3000 rows.
    {
        let db = Database::open(&path).unwrap();
        let rx = db.begin_read().unwrap();
        assert_eq!(rx.row_count(&rx.table("items").unwrap()).unwrap(), 3000);
    }
    let out = nvpage(&["check"], &path);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// A database whose log lives in a directory of its own (`Builder::log_dir`): without
/// `--log-dir` both commands find it incomplete, naming the log's absence; with it, they work,
/// and `info` names the log file.
#[test]
fn a_log_in_a_directory_of_its_own_is_found_with_log_dir() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let (path, logs) = (dir.path().join("db"), dir.path().join("wal"));
    {
        let db = Database::builder().log_dir(&logs).open(&path).unwrap();
        let mut tx = db.begin_write().unwrap();
        let t =
            tx.create_table("t", Schema::new(vec![Column::new("id", ColumnType::I64)]).unwrap());
        tx.insert(&t.unwrap(), &[Value::I64(1)]).unwrap();
        tx.commit().unwrap();
    }
    for cmd in ["check", "info"] {
        let err = fails_cleanly(&nvpage(&[cmd], &path), cmd);
        assert!(err.contains(nvpage::LOG_FILE) && err.contains("incomplete"), "{cmd}: {err}");
        let ok = Command::new(env!("CARGO_BIN_EXE_nvpage"))
            .args([cmd, "--log-dir"])
            .arg(&logs)
            .arg(&path)
            .output()
            .unwrap();
        assert!(ok.status.success(), "{cmd} --log-dir: {}", text(&ok.stderr));
        if cmd == "info" {
            let out = text(&ok.stdout);
            let log = logs.join(nvpage::LOG_FILE);
            assert!(out.contains(&format!("log file:    {}", log.display())), "{out}");
        }
    }
}
