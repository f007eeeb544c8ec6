//! The compile errors a user meets when a body or a policy does not fit the layer: each names
//! the fix (`tests/compile_fail/*.stderr` pins the text). Pinned with the default feature
//! alone: rustc lists the body types that do replay, `hyper-util` adds one, and `reqwest` adds
//! its `RequestBody` (so `--all-features` would read a different list).

#[cfg(all(feature = "hyper-util", not(feature = "reqwest")))]
#[test]
fn a_body_or_policy_that_does_not_fit_is_told_how_to_fix_it() {
    trybuild::TestCases::new().compile_fail("tests/compile_fail/*.rs");
}
