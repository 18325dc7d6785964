//! Goal: each file gets the persistence mode its medium and request call for, and says honestly
//! what that mode guarantees. On this machine `MAP_SYNC` is refused (no DAX), so a mapped file
//! falls back to `msync`; pread always uses `fdatasync`; forcing cache-line flushes is honoured on
//! tmpfs (emulated NVM, with the CPU's flush instruction) and refused for a disk file, at create
//! and at open, without leaving a file behind; and tmpfs never claims to survive a power loss.

#![forbid(unsafe_code)]

use crate::common;

use common::{disk, opts, shm};
use nvpage_storage::mapping::Mapping;
use nvpage_storage::persist::{EMULATE_NVM_ENV, FlushInstr};
use nvpage_storage::{
    Durability, FileLayer, Layer, Medium, OpenOptions, PersistMode, PersistRequest, StorageError,
};

fn with_request(layer: Layer, persistence: PersistRequest) -> OpenOptions {
    OpenOptions { persistence, ..opts(layer, 4096) }
}

fn durability(l: &dyn FileLayer) -> Durability {
    l.file().durability()
}

/// Whoever runs the suite could have set the variable; `persist_mode_env_var.rs` tests it.
fn env_forces_emulation() -> bool {
    std::env::var_os(EMULATE_NVM_ENV).is_some()
}

#[test]
fn map_sync_is_refused_here_and_the_mapping_falls_back() {
    let m = disk();
    let path = m.path("raw");
    let file = std::fs::OpenOptions::new().create_new(true).read(true).write(true).open(&path);
    let file = file.unwrap();
    file.set_len(1 << 16).unwrap();
    let mapping = Mapping::map(&file, 1 << 20, true, true).expect("MAP_SYNC falls back");
    assert!(!mapping.is_sync(), "ext4 without DAX grants no MAP_SYNC");
}

#[test]
fn disk_files_get_msync_or_fdatasync() {
    let m = disk();
    for layer in Layer::ALL {
        let path = m.path(&format!("{layer}.db"));
        let want = if layer.is_mapped() { PersistMode::Msync } else { PersistMode::Fdatasync };
        for create in [true, false] {
            let o = with_request(layer, PersistRequest::Auto);
            let l = if create { o.create(&path) } else { o.open(&path) }.unwrap();
            let d = durability(&*l);
            assert_eq!(d.mode, want, "{layer}");
            assert_eq!(d.medium, Medium::Disk, "{layer}");
            assert_eq!(d.flush, None, "{layer}: no cache-line instruction outside those modes");
            assert!(d.survives_power_loss(), "{layer}");
            assert!(d.guarantee().starts_with("power loss"), "{layer}: {}", d.guarantee());
            let how = d.write_path().expect("the sync modes say how they write");
            assert_eq!(
                d.to_string(),
                format!("{want} on disk ({how}): survives {}", d.guarantee())
            );
        }
    }
}

#[test]
fn forcing_cache_lines_on_a_disk_file_is_refused() {
    let m = disk();
    for layer in [Layer::Se1, Layer::Se2] {
        let path = m.path(&format!("{layer}.db"));
        let r = with_request(layer, PersistRequest::Eadr).create(&path);
        assert!(matches!(&r, Err(StorageError::EmulationRefused { .. })), "{layer} eADR: {r:?}");
        let r = with_request(layer, PersistRequest::CacheLine).create(&path);
        assert!(
            matches!(&r, Err(StorageError::EmulationRefused { path: p, by_env_var: false }) if *p == path),
            "{layer} create: {r:?}"
        );
        assert!(!path.exists(), "{layer}: a refused create leaves no file behind");
        // An existing disk file is refused too, and stays usable in msync mode.
        drop(with_request(layer, PersistRequest::Auto).create(&path).unwrap());
        let r = with_request(layer, PersistRequest::CacheLine).open(&path);
        assert!(matches!(r, Err(StorageError::EmulationRefused { .. })), "{layer} open: {r:?}");
        let l = with_request(layer, PersistRequest::Auto).open(&path).unwrap();
        assert_eq!(durability(&*l).mode, PersistMode::Msync);
    }
    // The pread layer has no mapping to flush: it keeps fdatasync rather than failing.
    let l = with_request(Layer::Pread, PersistRequest::CacheLine).create(&m.path("p.db")).unwrap();
    assert_eq!(durability(&*l).mode, PersistMode::Fdatasync);
}

#[test]
fn tmpfs_files_get_the_mode_asked_for_and_survive_a_process_crash_only() {
    let Some(m) = shm() else { return };
    let flush = FlushInstr::detect();
    for layer in Layer::ALL {
        for req in [PersistRequest::Auto, PersistRequest::CacheLine, PersistRequest::Eadr] {
            let path = m.path(&format!("{layer}-{req:?}.db"));
            let want = match (layer.is_mapped(), req) {
                (false, _) => PersistMode::Fdatasync,
                (true, PersistRequest::CacheLine) if flush.is_some() => PersistMode::EmulatedNvm,
                (true, PersistRequest::Eadr) => PersistMode::EmulatedNvm,
                (true, PersistRequest::Auto) if env_forces_emulation() => continue,
                (true, _) => PersistMode::Msync,
            };
            for create in [true, false] {
                let o = with_request(layer, req);
                let l = if create { o.create(&path) } else { o.open(&path) }.unwrap();
                let d = durability(&*l);
                let ctx = format!("{layer} {req:?}: {d}");
                assert_eq!(d.mode, want, "{ctx}");
                assert_eq!(d.medium, Medium::Tmpfs, "{ctx}");
                assert!(!d.survives_power_loss(), "{ctx}");
                assert!(d.guarantee().starts_with("a process crash only"), "{ctx}");
                assert!(d.to_string().contains("survives a process crash only"), "{ctx}");
                assert!(!d.to_string().contains("power loss"), "{ctx}");
                if want == PersistMode::EmulatedNvm {
                    // eADR is never detected: only the request gives it, and reports name it.
                    let asked =
                        if req == PersistRequest::Eadr { Some(FlushInstr::Eadr) } else { flush };
                    assert_eq!(d.flush, asked, "{ctx}");
                    let name = asked.unwrap().name();
                    assert!(d.to_string().starts_with(&format!("emulated-nvm on tmpfs ({name})")));
                } else {
                    assert_eq!(d.flush, None, "{ctx}");
                }
            }
        }
    }
}

#[test]
fn emulated_nvm_pages_read_back_like_any_other() {
    // The cache-line path (stores and flushes) writes the same bytes the other modes do.
    let Some(m) = shm() else { return };
    for layer in [Layer::Se1, Layer::Se2] {
        let path = m.path(&format!("{layer}.db"));
        let written = {
            let l = with_request(layer, PersistRequest::CacheLine).create(&path).unwrap();
            common::fill(&*l, 6, 40)
        };
        for reader in Layer::ALL {
            let l = OpenOptions::new(reader).open(&path).unwrap();
            for id in 1..6 {
                let got = common::read(&*l, nvpage_storage::PageId(id)).unwrap();
                assert_eq!(got, written[id as usize], "{layer} written, {reader} read, page {id}");
            }
        }
    }
}
