//! Goal: in the cache-line modes a `sync` skips its `fdatasync` when every store since the last
//! one was flushed by its maker, yet never skips one a write needs. Bytes written with `pwrite`
//! or copied into the mapping unflushed (`store_vectored`) before a `sync` survive every
//! simulated power loss, whatever the syncs before them (a sync that found nothing to do must
//! not leave the next write uncovered); the same bytes with no `sync` after them are lost for
//! some seeds, which shows the simulator really drops what the kernel still held.

use crate::common;

use common::shm_with_flush;
use nvpage_storage::sim::{Sim, Tear};
use nvpage_storage::{FileOptions, PersistMode, PersistRequest, RawFile};

const SEEDS: u64 = 12;
const LEN: u64 = 64 << 10;

/// How the bytes under test are written.
#[derive(Clone, Copy, Debug)]
enum Write {
    Pwrite,
    StoreVectored,
}

/// Creates a file, syncs it twice with nothing written between (the second sync has nothing to
/// do), writes `bytes` at 4096 the `how` way, syncs if `sync`, crashes; whether the bytes came
/// back.
fn survives(dir: &std::path::Path, how: Write, sync: bool, seed: u64) -> bool {
    let path = dir.join(format!("{how:?}-{sync}-{seed}"));
    let sim = Sim::attach(dir, seed);
    let opts = FileOptions {
        mapped: true,
        max_bytes: 1 << 20,
        persistence: PersistRequest::CacheLine,
        ..Default::default()
    };
    let f = RawFile::create(&path, &opts).unwrap();
    assert_eq!(f.durability().mode, PersistMode::EmulatedNvm);
    f.grow_to(LEN).unwrap();
    f.sync().unwrap();
    f.sync().unwrap();
    let bytes: Vec<u8> = (0..3000u32).map(|i| (i * 7 + seed as u32) as u8 | 1).collect();
    match how {
        // SAFETY: nothing borrows the mapping.
        Write::Pwrite => unsafe { f.write_at_mapped(&bytes, 4096) }.unwrap(),
        Write::StoreVectored => {
            let parts: [&[u8]; 2] = [&bytes[..1000], &bytes[1000..]];
            // SAFETY: the range lies below the file's length and this thread is its only user.
            unsafe { f.store_vectored(4096, &parts) }.unwrap()
        }
    }
    if sync {
        f.sync().unwrap();
    }
    drop(f);
    sim.crash(Tear::ALL[(seed % 3) as usize]);
    let f = RawFile::open(&path, &FileOptions::default()).unwrap();
    let mut got = vec![0u8; bytes.len()];
    f.read_at(&mut got, 4096).unwrap();
    got == bytes
}

#[test]
fn a_sync_after_an_idle_sync_still_covers_kernel_writes() {
    let Some(m) = shm_with_flush() else { return };
    for how in [Write::Pwrite, Write::StoreVectored] {
        for seed in 0..SEEDS {
            assert!(
                survives(m.dir.path(), how, true, seed),
                "{how:?} seed {seed}: bytes written before a sync were lost"
            );
        }
        let unsynced = (0..SEEDS).filter(|&seed| survives(m.dir.path(), how, false, seed)).count();
        assert!(unsynced < SEEDS as usize, "{how:?}: unsynced bytes survived every crash");
    }
}
