//! Fuzz target `log_scan`: see `nvpage_tests::fuzz_bodies::log_scan` for the input format and the properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nvpage_tests::fuzz_bodies::log_scan(data));
