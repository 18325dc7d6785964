//! # nvpage
//!
//! The engine people embed. Tables, transactions and recovery arrive with issue 5; today this
//! crate re-exports the storage layer so that the layer features chosen here decide what the
//! whole build compiles.

#![forbid(unsafe_code)]

pub use nvpage_storage as storage;
pub use nvpage_storage::Layer;
