//! Goal: `Log::create` gives the file it makes the permission bits `CreateOptions::mode` asks
//! for (0600 by default), less the process's umask as creat(2) applies them — libpmemlog's
//! `pmemlog_create` takes the mode as an argument too — on both persistence paths; bits outside
//! 0o7777 are a typed error that creates nothing; and a create with size 0, which builds the log
//! in an existing file, leaves that file's bits as they were.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::media;
use nvpage_wal::layout::DATA_OFFSET;
use nvpage_wal::{CreateOptions, Log, Uuid, WalError};

const SIZE: u64 = DATA_OFFSET as u64 + 4096;

/// The process's umask, read without changing it (`umask(2)` can only set it).
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Umask:")).expect("a kernel that shows it");
    u32::from_str_radix(line["Umask:".len()..].trim(), 8).unwrap()
}

fn bits(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn create_gives_the_file_the_mode_asked_for() {
    let umask = umask();
    for m in media() {
        let base = CreateOptions { persistence: m.persistence, ..CreateOptions::new(Uuid::nil()) };
        let p = m.path("default.log");
        drop(Log::create(&p, SIZE, &base).unwrap());
        assert_eq!(bits(&p), 0o600 & !umask, "{}: the default", m.name);

        for mode in [0o400, 0o640, 0o644, 0o660, 0o666] {
            let p = m.path(&format!("{mode:o}.log"));
            drop(Log::create(&p, SIZE, &CreateOptions { mode, ..base.clone() }).unwrap());
            assert_eq!(bits(&p), mode & !umask, "{}: mode {mode:o}", m.name);
            // A file the owner may only read is still a whole log (root reopens it writable).
            if mode & 0o200 != 0 {
                assert_eq!(Log::open(&p).unwrap().nbyte(), SIZE - DATA_OFFSET as u64);
            }
        }

        let p = m.path("bad.log");
        let bad = CreateOptions { mode: 0o10600, ..base.clone() };
        assert!(matches!(
            Log::create(&p, SIZE, &bad),
            Err(WalError::InvalidMode { mode: 0o10600 })
        ));
        assert!(!p.exists(), "{}: a refused create makes no file", m.name);

        let p = m.path("existing");
        std::fs::File::create(&p).unwrap().set_len(SIZE).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        drop(Log::create(&p, 0, &CreateOptions { mode: 0o600, ..base.clone() }).unwrap());
        assert_eq!(bits(&p), 0o640, "{}: a size-0 create keeps the file's bits", m.name);
    }
}
