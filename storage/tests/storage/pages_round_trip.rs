//! Goal: pages written through any layer, on disk or on tmpfs, with any page size, come back
//! byte for byte after the file is closed and reopened — through every layer, by `read_page` and
//! by `with_page` — and the header keeps the page size and page count.

#![forbid(unsafe_code)]

use crate::common;

use common::{PAGE_SIZES, fill, media, opts, read, read_in_place};
use nvpage_storage::page::PAGE_HEADER_LEN;
use nvpage_storage::{Layer, OpenOptions, PageId};

const PAGES: u64 = 9;

#[test]
fn pages_survive_close_and_reopen() {
    for medium in media() {
        for writer in Layer::ALL {
            for ps in PAGE_SIZES {
                let ctx = format!("{} {writer} page size {ps}", medium.name);
                let path = medium.path(&format!("{writer}-{ps}.db"));
                let seed = ps as u64 * 31 + writer as u64;
                let written = {
                    let l = opts(writer, ps).create(&path).expect("create");
                    fill(&*l, PAGES, seed)
                };
                for reader in Layer::ALL {
                    // The page size comes from the header, not from the options.
                    let l = OpenOptions::new(reader).open(&path).expect("reopen");
                    let ctx = format!("{ctx}, read back by {reader}");
                    assert_eq!(l.file().page_size().bytes(), ps, "{ctx}");
                    assert_eq!(l.file().page_count(), PAGES, "{ctx}");
                    for id in 1..PAGES {
                        let want = &written[id as usize];
                        let got = read(&*l, PageId(id)).expect("read_page");
                        assert_eq!(
                            got[PAGE_HEADER_LEN..],
                            want[PAGE_HEADER_LEN..],
                            "{ctx} page {id}"
                        );
                        assert_eq!(&got, want, "{ctx} page {id}: sealed frame");
                        let in_place = read_in_place(&*l, PageId(id)).expect("with_page");
                        assert_eq!(&in_place, want, "{ctx} page {id}: with_page");
                    }
                }
            }
        }
    }
}

#[test]
fn write_page_seals_the_callers_frame() {
    // The frame passed to write_page is sealed in place: what the caller holds afterwards is
    // exactly what the file holds, envelope included.
    for medium in media() {
        for layer in Layer::ALL {
            let path = medium.path(&format!("{layer}.db"));
            let l = opts(layer, 4096).create(&path).expect("create");
            l.grow(2).expect("grow");
            let mut f = common::frame(4096, 7);
            let payload = f[PAGE_HEADER_LEN..].to_vec();
            l.write_page(PageId(1), &mut f).expect("write_page");
            assert_eq!(
                f[PAGE_HEADER_LEN..],
                payload[..],
                "{} {layer}: payload untouched",
                medium.name
            );
            assert_eq!(f, common::sealed(&f, PageId(1)), "{} {layer}: frame sealed", medium.name);
            assert_eq!(read(&*l, PageId(1)).expect("read"), f, "{} {layer}", medium.name);
        }
    }
}
