//! The baseline layer (the paper's File Layer): `pread` into a frame, `pwrite` from it.

use std::ops::Range;
use std::ptr::NonNull;

use super::{FileLayer, Layer};
use crate::error::Result;
use crate::page::{self, PageId};
use crate::pagefile::PageFile;

/// Every read and write is a system call; durability is `fdatasync`.
#[derive(Debug)]
pub(super) struct PreadLayer {
    file: PageFile,
}

impl PreadLayer {
    pub(super) fn new(file: PageFile) -> Self {
        Self { file }
    }
}

impl FileLayer for PreadLayer {
    fn layer(&self) -> Layer {
        Layer::Pread
    }

    fn file(&self) -> &PageFile {
        &self.file
    }

    fn read_page(&self, id: PageId, frame: &mut [u8]) -> Result<()> {
        self.file.check_id(id)?;
        self.file.check_buf(frame.len())?;
        let at = self.file.offset(id);
        self.file.read_checked(id, || {
            self.file.raw().read_at(frame, at)?;
            Ok(frame)
        })?;
        Ok(())
    }

    fn read_raw(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        self.file.check_id(id)?;
        self.file.check_buf(buf.len())?;
        self.file.raw().read_at(buf, self.file.offset(id))
    }

    fn write_page(&self, id: PageId, frame: &mut [u8]) -> Result<()> {
        self.file.check_id(id)?;
        self.file.check_buf(frame.len())?;
        self.file.raw().check_writable()?;
        page::seal(frame, id);
        let at = self.file.offset(id);
        self.file.store_sealed_with(id, || self.file.raw().write_at(frame, at))
    }

    fn store_sealed(&self, id: PageId, frame: &[u8], lines: &[Range<usize>]) -> Result<()> {
        self.file.check_id(id)?;
        self.file.check_buf(frame.len())?;
        self.file.raw().check_writable()?;
        let span = super::span_part(frame, lines)?;
        let base = self.file.offset(id);
        // No lines: the file holds the sealed page already (the caller vouches for every byte).
        self.file.store_sealed_with(id, || match span {
            Some((off, bytes)) => self.file.raw().write_at(bytes, base + off as u64),
            None => Ok(()),
        })
    }

    fn restore_parts(&self, id: PageId, parts: &[(usize, &[u8])]) -> Result<()> {
        self.file.check_id(id)?;
        self.file.check_parts(parts)?;
        let base = self.file.offset(id);
        self.file.restore_with(id, || {
            parts
                .iter()
                .try_for_each(|&(off, bytes)| self.file.raw().write_at(bytes, base + off as u64))
        })
    }

    fn mapped_page(&self, id: PageId) -> Result<Option<NonNull<u8>>> {
        self.file.check_id(id)?;
        Ok(None)
    }

    fn with_page(&self, id: PageId, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        let mut scratch = vec![0u8; self.file.page_size().bytes()];
        self.read_page(id, &mut scratch)?;
        f(&scratch);
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.file.raw().sync()
    }
}
