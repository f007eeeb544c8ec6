//! The simulator is deterministic: the same seed gives the same table and picture, byte for
//! byte (its modules are the example's own).

#[path = "../examples/simulate/limiter.rs"]
mod limiter;
#[path = "../examples/simulate/sim.rs"]
mod sim;
#[path = "../examples/simulate/timeline.rs"]
mod timeline;

use limiter::Model;

fn report(seed: u64) -> (String, String) {
    let pictured = (Model::FixedWindowRemaining, 200);
    let (table, runs) = sim::report(seed, &[10, 200], pictured);
    (table, timeline::svg("determinism", &runs).unwrap())
}

#[test]
fn the_same_seed_gives_the_same_report_byte_for_byte() {
    let first = report(7);
    assert_eq!(first, report(7));
    assert_ne!(first.0, report(8).0, "the seed does reach the jitter");
}

#[test]
fn the_layer_serves_every_call_without_a_refusal_where_meters_are_sent() {
    let (table, _) = report(7);
    let row = table
        .lines()
        .find(|line| line.contains("draft 08 | 200 | RateLimitLayer"))
        .unwrap();
    assert!(row.contains("| 200 | 0 | 200/200 |"), "{row}");
}
