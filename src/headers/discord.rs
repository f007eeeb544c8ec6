//! Discord: the `X-RateLimit-*` family with `X-RateLimit-Reset-After` (read by `x_ratelimit`,
//! which names the meter after the bucket), and the fields that say which limit a response
//! counts against.
//!
//! - `X-RateLimit-Bucket` names the route's limit: later calls of the same route are gated by
//!   that bucket alone.
//! - `X-RateLimit-Global: true` or `X-RateLimit-Scope: global` on a 429: the whole token is
//!   limited, every route of it waits. It holds more than a refused route's own gate only
//!   where buckets split the routes, which only Discord's own fields do.
//! - `X-RateLimit-Scope: shared`: a resource's limit shared with other users; the bucket waits,
//!   and the token's own quota (`X-RateLimit-Remaining`) is not spent.

use std::borrow::Cow;

use super::clock::ResponseClock;
use super::field::{Fields, Name};
use super::github::is_group_name;
use super::reader::Found;

pub(super) const NAMES: &[Name] = &[
    Name::XRateLimitBucket,
    Name::XRateLimitGlobal,
    Name::XRateLimitScope,
];

pub(super) fn read<'a>(fields: &Fields<'a>, _: &ResponseClock, found: &mut Found<'a>) {
    if let Some(bucket) = bucket(fields) {
        found.group = Some(Cow::Borrowed(bucket));
    }
    let global = fields
        .lines(Name::XRateLimitGlobal)
        .any(|line| line.eq_ignore_ascii_case("true"))
        || fields
            .lines(Name::XRateLimitScope)
            .any(|line| line.eq_ignore_ascii_case("global"));
    found.signals.global |= global;
}

/// The bucket the response counted against, if it names one a key can carry.
pub(super) fn bucket<'a>(fields: &Fields<'a>) -> Option<&'a str> {
    fields
        .lines(Name::XRateLimitBucket)
        .next()
        .filter(|name| is_group_name(name))
}
