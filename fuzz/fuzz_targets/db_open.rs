//! Fuzz target `db_open`: see `nvpage_tests::fuzz_bodies::db_open` for the input format and the properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nvpage_tests::fuzz_bodies::db_open(data));
