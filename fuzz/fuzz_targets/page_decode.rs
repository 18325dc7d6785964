//! Fuzz target `page_decode`: see `nvpage_tests::fuzz_bodies::page_decode` for the input format and the properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nvpage_tests::fuzz_bodies::page_decode(data));
