//! Fuzz target `clustered_leaf`: see `nvpage_tests::fuzz_bodies::clustered_leaf` for the input format and the properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nvpage_tests::fuzz_bodies::clustered_leaf(data));
