//! Shared helpers for the cross-crate scenarios in `tests/tests/`.
#![forbid(unsafe_code)]
