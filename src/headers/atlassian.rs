//! Atlassian (Jira, Confluence): the draft 08 pair under a `Beta-` prefix,
//! `Beta-RateLimit-Policy: "tenant-app-quota";q=100100;w=3600` and
//! `Beta-RateLimit: "tenant-app-quota";r=17842;t=2107`, read as the draft's own fields are.
//! Its `X-RateLimit-Reset` instants (`2023-11-14T22:15Z`) are read by `x_ratelimit`.

use super::clock::ResponseClock;
use super::field::{Fields, Name};
use super::ietf::{list_members, named};
use super::reader::Found;

pub(super) const NAMES: &[Name] = &[Name::BetaRateLimit, Name::BetaRateLimitPolicy];

pub(super) fn read<'a>(fields: &Fields<'a>, clock: &ResponseClock, found: &mut Found<'a>) {
    let policies = list_members(fields.combined(Name::BetaRateLimitPolicy));
    let reports = list_members(fields.combined(Name::BetaRateLimit));
    named(policies, reports, clock, &mut found.readings);
}
