//! Goal: `NVPAGE_EMULATE_NVM=1` puts mapped files on tmpfs on the cache-line path (emulated NVM)
//! and is ignored for disk files, which keep `msync` rather than failing; the pread layer keeps
//! `fdatasync` either way. The variable is process-global, so this scenario has a binary of its
//! own with a single test that sets it before any file is opened.

mod common;

use common::{disk, opts, shm};
use nvpage_storage::persist::{EMULATE_NVM_ENV, FlushInstr};
use nvpage_storage::{Layer, Medium, PersistMode};

#[test]
fn env_var_is_honoured_on_tmpfs_and_ignored_on_disk() {
    // SAFETY: this is the only test in this binary, so no other thread of ours reads or writes
    // the environment while it is changed; it is set before any file is opened.
    unsafe { std::env::set_var(EMULATE_NVM_ENV, "1") };

    let d = disk();
    for layer in Layer::ALL {
        let l = opts(layer, 4096).create(&d.path(&format!("{layer}.db"))).unwrap();
        let dur = l.file().durability();
        let want = if layer.is_mapped() { PersistMode::Msync } else { PersistMode::Fdatasync };
        assert_eq!((dur.mode, dur.medium), (want, Medium::Disk), "{layer} on disk: {dur}");
        assert!(dur.survives_power_loss());
    }

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
    // SAFETY: as above.
    unsafe { std::env::set_var(EMULATE_NVM_ENV, "0") };
    let l = opts(Layer::Se2, 4096).create(&s.path("off.db")).unwrap();
    assert_eq!(l.file().durability().mode, PersistMode::Msync);
}
