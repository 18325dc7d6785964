//! Fuzz target `index_page`: see `nvpage_tests::fuzz_bodies::index_page` for the input format and the properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nvpage_tests::fuzz_bodies::index_page(data));
