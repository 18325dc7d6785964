//! Goal: a store of a sealed page (`write_page`, `store_sealed`) that `restore_parts` overtakes
//! never vouches for the restored bytes, on every layer. The store puts its sealed page into the
//! file, the restore then stores bytes that fail their checksum (as undo may: it writes a
//! before-image back as given) and finishes, and only then does the store record its outcome.
//! The page must not be marked verified: every later read checks the file's bytes and is
//! `ChecksumMismatch`, never the restored bytes returned `Ok` unchecked. The simulator's pause
//! holds the store between its bytes and its record: the losing order, every run, with no sleep.

#![forbid(unsafe_code)]

use crate::common;

use common::{fill, frame, media, opts, reads_not_refused, sealed};
use nvpage_storage::page::PAGE_HEADER_LEN;
use nvpage_storage::sim::{PausePoint, Sim};
use nvpage_storage::{FileLayer, Layer, PageId, Result};

const PS: usize = 4096;
const P: PageId = PageId(2);

/// The two ways a layer stores a sealed page.
#[derive(Clone, Copy, Debug)]
enum Store {
    WritePage,
    StoreSealed,
}

fn store(l: &dyn FileLayer, how: Store) -> Result<()> {
    let mut f = frame(PS, 900);
    match how {
        Store::WritePage => l.write_page(P, &mut f),
        Store::StoreSealed => l.store_sealed(P, &sealed(&f, P), &[0..64, 64..PS]),
    }
}

/// What went wrong with `layer` on `medium`, storing `how`.
fn run(layer: Layer, medium: &common::Medium, how: Store) -> Vec<String> {
    let sim = Sim::attach(medium.dir.path(), 11);
    let path = medium.path(&format!("{layer}-{how:?}.db"));
    let l = opts(layer, PS).create(&path).unwrap();
    fill(&*l, 4, 100);
    let pause = sim.pause(PausePoint::BeforeRecord, P);
    let stored = std::thread::scope(|s| {
        let writer = s.spawn(|| store(&*l, how));
        pause.wait_reached();
        l.restore_parts(P, &[(PAGE_HEADER_LEN, &[0x5A; 64])]).unwrap();
        pause.resume();
        writer.join().unwrap()
    });
    let mut wrong = Vec::new();
    if let Err(e) = stored {
        wrong.push(format!("the racing store failed: {e}"));
    }
    if l.file().is_verified(P) {
        wrong.push("the restored page is marked verified".to_owned());
    }
    wrong.extend(reads_not_refused(&*l, P));
    wrong.into_iter().map(|w| format!("{layer} on {}, {how:?}: {w}", medium.name)).collect()
}

#[test]
fn a_store_racing_a_restore_leaves_the_restored_bytes_unverified() {
    let mut wrong = Vec::new();
    for medium in media() {
        for layer in Layer::compiled() {
            for how in [Store::WritePage, Store::StoreSealed] {
                wrong.extend(run(layer, &medium, how));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
