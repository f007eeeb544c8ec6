//! The compile errors a user meets when a body or a policy does not fit the layer: each names
//! the fix (`tests/compile_fail/*.stderr` pins the text). Pinned with the default feature:
//! rustc lists the body types that do replay, and `hyper-util` adds one.

#[cfg(feature = "hyper-util")]
#[test]
fn a_body_or_policy_that_does_not_fit_is_told_how_to_fix_it() {
    trybuild::TestCases::new().compile_fail("tests/compile_fail/*.rs");
}
