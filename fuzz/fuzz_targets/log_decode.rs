//! Fuzz target `log_decode`: see `nvpage_tests::fuzz_bodies::log_decode` for the input format and the properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nvpage_tests::fuzz_bodies::log_decode(data));
