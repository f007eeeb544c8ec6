//! The whole-layer fuzz target's script and checks (`fuzz/src/layer.rs`) over random inputs on
//! stable, so `cargo test` holds the layer to them without nightly or a campaign.

#[path = "../fuzz/src/layer.rs"]
mod layer;

use proptest::prelude::*;

/// The run's three bytes and up to this many scripted answers of four bytes: enough for four
/// calls to meet several answers each, short enough for 5000 runs in a few seconds of a debug
/// build.
const ANSWERS: usize = 32;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]

    #[test]
    fn every_scripted_run_keeps_the_layers_rules(
        input in prop::collection::vec(any::<u8>(), 3..=3 + 4 * ANSWERS),
    ) {
        layer::layer(&input);
    }
}
