//! The compile errors a user meets when a body or a policy does not fit the layer: each names
//! the fix (`tests/compile_fail/*.stderr` pins the text).

#[test]
fn a_body_or_policy_that_does_not_fit_is_told_how_to_fix_it() {
    trybuild::TestCases::new().compile_fail("tests/compile_fail/*.rs");
}
