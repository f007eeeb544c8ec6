//! Replays every fuzz corpus input (seeds, what campaigns kept, and crash reproducers) through
//! its target on stable, so `cargo test` covers what the fuzzer found.

#[path = "../fuzz/src/targets.rs"]
mod targets;

use std::fs;
use std::path::Path;

fn replay(target: &str, run: fn(&[u8])) {
    let mut replayed = 0;
    for folder in ["corpus", "regressions"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz")
            .join(folder)
            .join(target);
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let data = fs::read(&path).unwrap();
            let outcome = std::panic::catch_unwind(|| run(&data));
            assert!(outcome.is_ok(), "{target} fails on {}", path.display());
            replayed += 1;
        }
    }
    assert!(replayed > 0, "no corpus for {target}: run fuzz/seed.sh");
}

#[test]
fn retry_after_corpus_replays() {
    replay("retry_after", targets::retry_after);
}

#[test]
fn structured_corpus_replays() {
    replay("structured", targets::structured);
}

#[test]
fn x_ratelimit_corpus_replays() {
    replay("x_ratelimit", targets::x_ratelimit);
}

#[test]
fn header_map_corpus_replays() {
    replay("header_map", targets::header_map);
}

#[test]
fn vendor_durations_corpus_replays() {
    replay("vendor_durations", targets::vendor_durations);
}

#[test]
fn vendor_instants_corpus_replays() {
    replay("vendor_instants", targets::vendor_instants);
}

#[test]
fn vendor_counts_corpus_replays() {
    replay("vendor_counts", targets::vendor_counts);
}

#[test]
fn layer_corpus_replays() {
    replay("layer", targets::layer);
}

/// The hand-written structured-field parser against sfv, on every input the differential
/// campaign kept (needs the internal `__fuzzing` feature, which `.ci/run` turns on for this test).
#[cfg(feature = "__fuzzing")]
#[test]
fn structured_reference_corpus_replays() {
    replay("structured_reference", |data| {
        if let Ok(field) = std::str::from_utf8(data) {
            tower_retry_after::__fuzzing::assert_structured_matches_sfv(field);
        }
    });
}
