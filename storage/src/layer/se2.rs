//! SE2 (the paper's PtrRedirection Layer): reads point straight into the mapping; the buffer
//! manager copies a page into a private frame before its first change, and write-back stores the
//! frame exactly as SE1 does (into the mapping in the cache-line modes, `pwrite` in `msync` mode).

use std::ops::Range;
use std::ptr::NonNull;

use super::mapped::MappedPages;
use super::{FileLayer, Layer};
use crate::error::Result;
use crate::page::PageId;
use crate::pagefile::PageFile;

/// Hands out pointers into the mapping; copies only for copy-on-write and write-back.
#[derive(Debug)]
pub(super) struct Se2Layer(MappedPages);

impl Se2Layer {
    pub(super) fn new(file: PageFile) -> Self {
        Self(MappedPages::new(file))
    }
}

impl FileLayer for Se2Layer {
    fn layer(&self) -> Layer {
        Layer::Se2
    }

    fn file(&self) -> &PageFile {
        &self.0.file
    }

    /// The copy-on-write step: the page's current bytes into a private frame.
    fn read_page(&self, id: PageId, frame: &mut [u8]) -> Result<()> {
        self.0.copy_out(id, frame)
    }

    fn read_raw(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        self.0.copy_raw(id, buf)
    }

    fn with_raw(&self, id: PageId, _: &mut Vec<u8>, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        self.0.raw_in_place(id, f)
    }

    fn write_page(&self, id: PageId, frame: &mut [u8]) -> Result<()> {
        self.0.store(id, frame)
    }

    fn store_sealed(&self, id: PageId, frame: &[u8], lines: &[Range<usize>]) -> Result<()> {
        self.0.store_sealed(id, frame, lines)
    }

    fn restore_parts(&self, id: PageId, parts: &[(usize, &[u8])]) -> Result<()> {
        self.0.restore(id, parts)
    }

    fn mapped_page(&self, id: PageId) -> Result<Option<NonNull<u8>>> {
        self.0.pointer(id).map(Some)
    }

    fn mapped_hint(&self, id: PageId) -> Option<NonNull<u8>> {
        self.0.hint(id)
    }

    fn with_page(&self, id: PageId, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        self.0.in_place(id, f)
    }

    fn sync(&self) -> Result<()> {
        self.0.sync()
    }
}
