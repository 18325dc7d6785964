//! # nvpage-storage
//!
//! The bottom of nvpage: page files, the three interchangeable file layers, and the one module
//! that decides how bytes become durable.
//!
//! - [`page`]: page ids, page sizes, and the envelope every page carries (its id and a CRC32C).
//! - [`header`]: the data file's header page (magic, version, page size, page count, UUID).
//! - [`FileLayer`]: the seam the buffer manager works through, with [`Layer::Pread`],
//!   [`Layer::Se1`] and [`Layer::Se2`] behind it, chosen at run time by [`OpenOptions`] among those
//!   compiled in by the Cargo features `pread`, `se1`, `se2` (all default).
//! - [`persist`]: DAX, emulated NVM, `msync`, `fdatasync` — chosen per file at open.
//! - [`RawFile`]: a locked, optionally mapped file, shared by the data file and the log.
//! - `sim` (feature `sim`): the power-loss and fault simulator.
//!
//! Everything but the three layers builds without a layer feature: the log (`nvpage-wal`) uses
//! only [`RawFile`] and persistence, so it turns no layer on and the layers stay the choice of
//! whoever builds the engine. With no layer compiled in, [`OpenOptions`] refuses every layer with
//! [`StorageError::LayerNotCompiled`]; the engine, `nvpage`, is what refuses to build without one.
//!
//! What it is not: it has no cache, no transactions and no log. It does not order writes for
//! callers: a page handed to [`FileLayer::write_page`] may reach the medium at any moment, so
//! whatever must be durable first (a before-image) is the caller's to persist before the call.
//!
//! Invariants:
//! - A mapping never moves: address space for the largest size is reserved at open and mapped
//!   once; no pointer is formed at or past the file's length.
//! - The page count in the header page is the only truth about how many pages exist; the file may
//!   be longer, never shorter.
//! - Every page read is verified (checksum and id) the first time after open, and a page is
//!   marked verified only for the bytes the file holds now: a store into the page that overlaps
//!   a check keeps the check from marking it (`verified.rs`).
//! - A failed persist poisons the file until it is reopened; nothing pretends data is safe.

#[cfg(not(unix))]
compile_error!("nvpage-storage supports Unix (Linux on x86_64 is the target)");
#[cfg(not(target_pointer_width = "64"))]
compile_error!("nvpage-storage's mapped layers need a 64-bit address space");

mod bits;
mod crc;
pub mod error;
pub mod file;
pub mod header;
mod layer;
mod lock;
pub mod mapping;
pub mod page;
mod pagefile;
pub mod persist;
pub mod prefetch;
#[cfg(feature = "sim")]
pub mod sim;
mod sim_tag;
mod verified;

pub use error::{Result, StorageError};
pub use file::{FileOptions, LineStreamer, RawFile};
pub use header::FileHeader;
pub use layer::{FileLayer, Layer, OpenOptions};
pub use lock::Holders;
pub use mapping::Advice;
pub use page::{PageId, PageSize};
pub use pagefile::PageFile;
pub use persist::{Durability, Medium, PersistMode, PersistRequest};
pub use sim_tag::SimOp;
