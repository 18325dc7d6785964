//! Goal: show that a build of `nvpage` with `default-features = false, features = ["X"]` compiles
//! exactly layer X in and opens databases with it by default, and that asking for any other
//! layer is the typed `LayerNotCompiled` error, from the engine and the storage crate alike,
//! before anything is created on disk.
//!
//! `.ci/run` builds and runs it once per layer: `cargo run -p nvpage-layer-probe --features X`.
//! Built with no feature, it fails to compile with the engine's `compile_error!`, as a user's
//! build with no layer does. A workspace-wide build, where other members turn every layer on,
//! compiles it but does not run it.

#![forbid(unsafe_code)]

use std::path::PathBuf;

use nvpage::{Database, Error, Layer};
use nvpage_storage::{OpenOptions, StorageError};

/// The layers this probe's own Cargo features ask for, in [`Layer::ALL`]'s order.
fn asked() -> Vec<Layer> {
    let named = |l: &Layer| match l {
        Layer::Pread => cfg!(feature = "pread"),
        Layer::Se1 => cfg!(feature = "se1"),
        Layer::Se2 => cfg!(feature = "se2"),
    };
    Layer::ALL.into_iter().filter(named).collect()
}

/// A scratch directory, removed when the probe ends, whether its checks pass or not.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn main() {
    let asked = asked();
    let Some(&best) = asked.last() else {
        panic!("name a layer: cargo run -p nvpage-layer-probe --features pread|se1|se2");
    };
    assert_eq!(Layer::compiled(), asked, "the build compiles in exactly the layers asked for");
    assert_eq!(Layer::best_compiled(), best, "the default layer is the best of those asked for");

    let scratch =
        Scratch(std::env::temp_dir().join(format!("nvpage-layer-probe-{}", std::process::id())));
    std::fs::create_dir_all(&scratch.0).expect("a scratch directory");
    let small = || Database::builder().log_bytes(1 << 20).max_file_bytes(1 << 30);

    let db = small().open(scratch.0.join("default")).expect("a database opens by default");
    assert_eq!(db.layer(), best, "a database opens with the best layer compiled in");
    drop(db);

    for other in Layer::ALL.into_iter().filter(|l| !asked.contains(l)) {
        let dir = scratch.0.join(other.name());
        match small().layer(other).open(&dir) {
            Err(Error::Storage(StorageError::LayerNotCompiled(name))) if name == other.name() => {}
            r => panic!("opening a database with {other} left out: {r:?}, not LayerNotCompiled"),
        }
        assert!(!dir.exists(), "a refused layer creates no database directory");

        let file = scratch.0.join(format!("{other}.pages"));
        match OpenOptions::new(other).create(&file) {
            Err(StorageError::LayerNotCompiled(name)) if name == other.name() => {}
            r => panic!("creating a page file with {other} left out: {r:?}, not LayerNotCompiled"),
        }
        assert!(!file.exists(), "a refused layer creates no page file");
    }
    println!("nvpage with {asked:?}: exactly these compiled in, {best} by default, others refused");
}
