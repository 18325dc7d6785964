//! Shared helpers for the cross-crate scenarios in `tests/tests/`, and the bodies of the
//! cargo-fuzz targets in `fuzz/` ([`fuzz_bodies`]), kept here so that the ordinary stable test
//! run replays the fuzz corpus (`tests/tests/fuzz_corpus_replay.rs`) and CI never needs nightly.
#![forbid(unsafe_code)]

pub mod fuzz_bodies;
pub mod fuzz_seeds;
pub mod model;
pub mod survivor;
