#![no_main]

// The hand-written structured-field parser must accept, refuse and read every field exactly as
// sfv does. Inputs are single field values (not header blocks).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(field) = std::str::from_utf8(data) {
        tower_retry_after::__fuzzing::assert_structured_matches_sfv(field);
    }
});
