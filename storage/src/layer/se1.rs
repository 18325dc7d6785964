//! SE1 (the paper's MemMapped Layer): `memcpy` between the mapping and buffer frames.

use std::ops::Range;
use std::ptr::NonNull;

use super::mapped::MappedPages;
use super::{FileLayer, Layer};
use crate::error::Result;
use crate::page::PageId;
use crate::pagefile::PageFile;

/// Reads copy from the mapping into the frame; write-back copies the frame into the mapping
/// (cache-line modes) or `pwrite`s it (`msync` mode: see `mapped.rs`).
#[derive(Debug)]
pub(super) struct Se1Layer(MappedPages);

impl Se1Layer {
    pub(super) fn new(file: PageFile) -> Self {
        Self(MappedPages::new(file))
    }
}

impl FileLayer for Se1Layer {
    fn layer(&self) -> Layer {
        Layer::Se1
    }

    fn file(&self) -> &PageFile {
        &self.0.file
    }

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
        self.0.file.check_id(id)?;
        Ok(None)
    }

    fn with_page(&self, id: PageId, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        let mut scratch = vec![0u8; self.0.file.page_size().bytes()];
        self.0.copy_out(id, &mut scratch)?;
        f(&scratch);
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.0.sync()
    }
}
