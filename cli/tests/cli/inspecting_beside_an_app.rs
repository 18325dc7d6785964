//! Goal: the `nvpage` command can look at a database an application has open read-only, and is
//! refused, with a message naming the application's process and saying what to do, while the
//! application has it open writable. This test process is the application. While it holds a
//! read-only handle, `info`, `check`, `log info` and `file-info` run beside it (two processes
//! share the database), and `recover`, which opens writable, is refused naming this process as a
//! reader. While it holds the database writable, every read-only command is refused naming this
//! process as the writer.

use std::path::Path;
use std::process::{Command, Output};

use nvpage::{Column, ColumnType, Database, Schema, Value};

fn nvpage(args: &[&str], path: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nvpage")).args(args).arg(path).output().expect("run nvpage")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn commands_share_a_read_only_database_and_name_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let db = Database::builder().log_bytes(1 << 20).open(&path).unwrap();
        let mut tx = db.begin_write().unwrap();
        let t = tx.create_table("t", Schema::new(vec![Column::new("k", ColumnType::I64)]).unwrap());
        tx.insert(&t.unwrap(), &[Value::I64(1)]).unwrap();
        tx.commit().unwrap();
    }
    let pid = std::process::id();
    let (data, log) = (path.join(nvpage::DATA_FILE), path.join(nvpage::LOG_FILE));

    let reader = Database::builder().read_only(true).open(&path).unwrap();
    for args in [&["info"][..], &["check"], &["log", "info"], &["log", "check"], &["file-info"]] {
        let out = nvpage(args, &path);
        assert!(out.status.success(), "{args:?} beside a reader: {}", text(&out.stderr));
    }
    let out = nvpage(&["recover"], &path);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "nvpage: {} is already open read-only by process {pid}; a writable open needs every \
             read-only handle closed first\n",
            log.display()
        )
    );
    drop(reader);

    let writer = Database::open(&path).unwrap();
    let refused = |file: &Path| {
        format!(
            "nvpage: {} is already open for writing by process {pid}; a read-only open needs no \
             writer: close the database there first (readers in other processes beside a live \
             writer are not offered yet)\n",
            file.display()
        )
    };
    for (args, file) in [
        (&["info"][..], &log),
        (&["check"], &log),
        (&["log", "dump"], &log),
        (&["file-info"], &data),
    ] {
        let out = nvpage(args, &path);
        assert_eq!(out.status.code(), Some(1), "{args:?} beside a writer");
        assert_eq!(text(&out.stderr), refused(file), "{args:?}");
    }
    drop(writer);
    assert!(nvpage(&["check"], &path).status.success());
}
