//! Goal: a read that verifies a page while `restore_parts` replaces it never vouches for the
//! restored bytes, on every layer. The reader copies the page's old bytes, the restore stores
//! bytes that fail their checksum (as undo may: it writes a before-image back as given) and
//! finishes, and only then does the reader check its copy. The reader gets the old bytes, which
//! were the file's when it copied them; the page is not marked verified, and every later read
//! checks the file's bytes again and is `ChecksumMismatch`, never the restored bytes returned
//! `Ok` unchecked. The simulator's pause holds the reader between its copy and its check: the
//! losing order, every run, with no sleep.

#![forbid(unsafe_code)]

use crate::common;

use common::{fill, media, opts, read, reads_not_refused};
use nvpage_storage::page::PAGE_HEADER_LEN;
use nvpage_storage::sim::{PausePoint, Sim};
use nvpage_storage::{Layer, PageId};

const PS: usize = 4096;
const P: PageId = PageId(2);

/// What went wrong with `layer` on `medium`.
fn run(layer: Layer, medium: &common::Medium) -> Vec<String> {
    let sim = Sim::attach(medium.dir.path(), 7);
    let path = medium.path(&format!("{layer}.db"));
    let written = fill(&*opts(layer, PS).create(&path).unwrap(), 4, 100);
    // Reopened: no page is verified yet, so the read below checks what it copies.
    let l = opts(layer, PS).open(&path).unwrap();
    let pause = sim.pause(PausePoint::BeforeCheck, P);
    let old = std::thread::scope(|s| {
        let reader = s.spawn(|| read(&*l, P));
        pause.wait_reached();
        l.restore_parts(P, &[(PAGE_HEADER_LEN, &[0xA5; 64])]).unwrap();
        pause.resume();
        reader.join().unwrap()
    });
    let mut wrong = Vec::new();
    if old.as_ref().ok() != Some(&written[P.0 as usize]) {
        wrong.push(format!("the racing read did not return the old page: {old:?}"));
    }
    if l.file().is_verified(P) {
        wrong.push("the restored page is marked verified".to_owned());
    }
    wrong.extend(reads_not_refused(&*l, P));
    wrong.into_iter().map(|w| format!("{layer} on {}: {w}", medium.name)).collect()
}

#[test]
fn a_read_racing_a_restore_leaves_the_restored_bytes_unverified() {
    let mut wrong = Vec::new();
    for medium in media() {
        for layer in Layer::compiled() {
            wrong.extend(run(layer, &medium));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
