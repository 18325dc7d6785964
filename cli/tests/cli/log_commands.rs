//! Goal: the built `nvpage` binary's `log info|dump|check` exit 0 on a sound log and print what
//! it holds — `dump` of an empty log says it is empty rather than print nothing — and exit 1
//! with a message (never a panic) on a corrupted log, a file that is not a log, and a missing
//! file.

use std::path::Path;
use std::process::{Command, Output};

use nvpage_wal::layout::{DATA_OFFSET, HEADER_LEN, LogHeader};
use nvpage_wal::{CreateOptions, Framing, Log, Uuid};

fn nvpage(args: &[&str], path: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nvpage")).args(args).arg(path).output().expect("run nvpage")
}

fn assert_fails_cleanly(out: &Output, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
    assert!(stderr.starts_with("nvpage: "), "{what}: {stderr}");
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
}

#[test]
fn log_commands_on_good_corrupt_and_missing_logs() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.log");
    let log =
        Log::create(&good, DATA_OFFSET as u64 + 8192, &CreateOptions::new(Uuid::nil())).unwrap();
    log.append(b"This is the first string appended\n").unwrap();
    log.append(b"second").unwrap();
    drop(log);

    let out = nvpage(&["log", "info"], &good);
    assert!(out.status.success());
    let info = String::from_utf8(out.stdout).unwrap();
    assert!(info.contains("records:     2") && info.contains("capacity:    8192"), "{info}");
    assert!(info.contains("durability:"), "{info}");
    assert!(info.contains("format:      nvpage log v6"), "{info}");

    // A format-3 log (an empty one: only its header's version differs) says it is one.
    let v3 = dir.path().join("v3.log");
    let opts = CreateOptions::new(Uuid::nil());
    drop(Log::create(&v3, DATA_OFFSET as u64 + 8192, &opts).unwrap());
    let mut bytes = std::fs::read(&v3).unwrap();
    let head: &mut [u8; HEADER_LEN] = (&mut bytes[..HEADER_LEN]).try_into().unwrap();
    *head = LogHeader { version: 3, ..LogHeader::decode(head).unwrap() }.encode();
    std::fs::write(&v3, &bytes).unwrap();
    let out = nvpage(&["log", "info"], &v3);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let info = String::from_utf8(out.stdout).unwrap();
    assert!(info.contains("format:      nvpage log v3"), "{info}");

    let out = nvpage(&["log", "dump"], &good);
    assert!(out.status.success());
    let dump = String::from_utf8(out.stdout).unwrap();
    assert!(dump.contains("record 1 at offset 64 (6 bytes)"), "{dump}");
    assert!(dump.contains("|This is the firs|"), "{dump}");

    // An empty log, framed and raw: dump says so.
    for framing in [Framing::Records, Framing::Raw] {
        let empty = dir.path().join(format!("empty-{framing}.log"));
        let opts = CreateOptions { framing, ..CreateOptions::new(Uuid::nil()) };
        drop(Log::create(&empty, DATA_OFFSET as u64 + 8192, &opts).unwrap());
        let out = nvpage(&["log", "dump"], &empty);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let dump = String::from_utf8(out.stdout).unwrap();
        assert!(dump.contains("the log is empty"), "{framing}: {dump:?}");
    }

    let out = nvpage(&["log", "check"], &good);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8(out.stdout).unwrap().contains("sound"));

    // Damage one payload byte of the second record.
    let bad = dir.path().join("bad.log");
    let mut bytes = std::fs::read(&good).unwrap();
    bytes[DATA_OFFSET + 64 + 16] ^= 0x01;
    std::fs::write(&bad, &bytes).unwrap();
    for cmd in ["check", "info", "dump"] {
        let out = nvpage(&["log", cmd], &bad);
        assert_fails_cleanly(&out, cmd);
        assert!(String::from_utf8_lossy(&out.stderr).contains("offset 64"), "{cmd}");
    }

    let junk = dir.path().join("junk");
    std::fs::write(&junk, vec![0x42u8; 9000]).unwrap();
    let out = nvpage(&["log", "check"], &junk);
    assert_fails_cleanly(&out, "not a log");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an nvpage log"));

    let out = nvpage(&["log", "check"], &dir.path().join("missing.log"));
    assert_fails_cleanly(&out, "missing");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("missing.log: no such database directory or log file"), "{stderr}");
}
