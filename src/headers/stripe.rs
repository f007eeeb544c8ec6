//! Stripe: `Stripe-Rate-Limited-Reason` says which limit refused a request. A
//! `*-concurrency` reason (`global-concurrency`, `endpoint-concurrency`) asks for fewer
//! requests in flight, not for a pause: see
//! [`RateLimitInfo::is_concurrency_limit`](crate::RateLimitInfo::is_concurrency_limit).
//! `Stripe-Should-Retry` is the server's verdict, read by the policy as `x-should-retry` is.

use super::clock::ResponseClock;
use super::field::{Fields, Name};
use super::reader::Found;

pub(super) const NAMES: &[Name] = &[Name::StripeRateLimitedReason];

pub(super) fn read<'a>(fields: &Fields<'a>, _: &ResponseClock, found: &mut Found<'a>) {
    found.signals.concurrency |= fields
        .lines(Name::StripeRateLimitedReason)
        .any(|reason| reason.ends_with("-concurrency"));
}
