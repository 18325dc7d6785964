//! Fuzz target `api_countdown`: see `nvpage_tests::fuzz_bodies::api_countdown` for the input format and the properties.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nvpage_tests::fuzz_bodies::api_countdown(data));
