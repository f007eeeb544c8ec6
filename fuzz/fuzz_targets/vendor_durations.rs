#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tower_retry_after_fuzz::vendor_durations(data));
