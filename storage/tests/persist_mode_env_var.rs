//! Goal: `NVPAGE_EMULATE_NVM=1` is a request for the cache-line path, answered as
//! `PersistRequest::CacheLine` is: mapped files on tmpfs get it (emulated NVM); a mapped file on
//! disk (not DAX) is refused with `EmulationRefused`, whose message names the variable, at create
//! (leaving no file) and at open, rather than silently kept on `msync`; the pread layer, which
//! has no mapping to flush, keeps `fdatasync` either way. The variable is process-global, so this
//! scenario has a binary of its own with a single test that sets it before any file is opened.

mod common;

use common::{disk, opts, shm};
use nvpage_storage::persist::{EMULATE_NVM_ENV, FlushInstr};
use nvpage_storage::{Layer, Medium, OpenOptions, PersistMode, PersistRequest, StorageError};

/// Sets the variable.
fn set_env(value: &str) {
    // SAFETY: this is the only test in this binary, so no other thread of ours reads or writes
    // the environment while it is changed.
    unsafe { std::env::set_var(EMULATE_NVM_ENV, value) };
}

#[test]
fn env_var_is_honoured_on_tmpfs_and_refused_on_disk() {
    let d = disk();
    // A disk file made without the variable, to be opened with it.
    set_env("0");
    for layer in Layer::ALL {
        drop(opts(layer, 4096).create(&d.path(&format!("{layer}.existing"))).unwrap());
    }
    set_env("1");
    for layer in Layer::ALL {
        let path = d.path(&format!("{layer}.db"));
        let existing = d.path(&format!("{layer}.existing"));
        for r in [opts(layer, 4096).create(&path), opts(layer, 4096).open(&existing)] {
            if !layer.is_mapped() {
                let dur = r.unwrap().file().durability();
                assert_eq!((dur.mode, dur.medium), (PersistMode::Fdatasync, Medium::Disk));
                assert!(dur.survives_power_loss());
                continue;
            }
            let e = r.map(drop).expect_err("a mapped disk file is refused the cache-line path");
            assert!(
                matches!(&e, StorageError::EmulationRefused { by_env_var: true, .. }),
                "{layer}: {e:?}"
            );
            let text = e.to_string();
            assert!(text.contains(EMULATE_NVM_ENV), "the message names the variable: {text}");
        }
        assert_eq!(path.exists(), !layer.is_mapped(), "{layer}: a refused create leaves no file");
    }
    // The option, asked for while the variable is set, is named as the requester.
    let o = OpenOptions { persistence: PersistRequest::CacheLine, ..opts(Layer::Se2, 4096) };
    let r = o.create(&d.path("option.db"));
    assert!(
        matches!(r, Err(StorageError::EmulationRefused { by_env_var: false, .. })),
        "{:?}",
        r.map(drop)
    );

    let Some(s) = shm() else { return };
    let flush = FlushInstr::detect();
    for layer in Layer::ALL {
        let path = s.path(&format!("{layer}.db"));
        for create in [true, false] {
            let o = opts(layer, 4096);
            let l = if create { o.create(&path) } else { o.open(&path) }.unwrap();
            let dur = l.file().durability();
            let want = match (layer.is_mapped(), flush) {
                (true, Some(_)) => PersistMode::EmulatedNvm,
                (true, None) => PersistMode::Msync,
                (false, _) => PersistMode::Fdatasync,
            };
            assert_eq!((dur.mode, dur.medium), (want, Medium::Tmpfs), "{layer} on tmpfs: {dur}");
            assert!(!dur.survives_power_loss(), "{dur}");
            assert!(dur.to_string().contains("a process crash only"), "{dur}");
            // The file works in that mode.
            let pages = common::fill(&*l, 3, 8);
            assert_eq!(common::read(&*l, nvpage_storage::PageId(2)).unwrap(), pages[2]);
        }
    }

    // Any other value asks for nothing.
    set_env("0");
    let l = opts(Layer::Se2, 4096).create(&s.path("off.db")).unwrap();
    assert_eq!(l.file().durability().mode, PersistMode::Msync);
}
