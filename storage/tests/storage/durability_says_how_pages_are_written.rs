//! Goal: a file's durability text says how its bytes are written and made durable, as the code
//! does it, so that no report contradicts the layers' description: on a disk the mapped layers
//! read through the mapping but write pages back with `pwrite` and make them durable with
//! `msync` (a log's records with `fdatasync`), and pread writes with `pwrite` and syncs with
//! `fdatasync`; on tmpfs the text says a process crash is all it survives.

use crate::common;

use common::{disk, opts, shm};
use nvpage_storage::Layer;

#[test]
fn the_text_names_the_write_and_the_sync() {
    let mut media = vec![(disk(), "disk", "survives power loss, as far as the file system keeps")];
    media.extend(shm().map(|m| (m, "tmpfs", "survives a process crash only: the medium is DRAM")));
    for (medium, name, survives) in media {
        for layer in Layer::ALL {
            let path = medium.path(&format!("{layer}.db"));
            let f = opts(layer, 4096).create(&path).unwrap();
            let text = f.file().durability().to_string();
            let how = match (layer.is_mapped(), name) {
                (false, _) => "fdatasync on {m} (pwrite, then fdatasync): ",
                (true, "disk") => "msync on {m} (pwrite, then msync or fdatasync): ",
                (true, _) => "msync on {m} (pwrite or a copy, then msync or fdatasync): ",
            };
            let want = how.replace("{m}", name) + survives;
            assert!(text.starts_with(&want), "{layer} on {name}: {text:?}, want {want:?}");
        }
    }
}
