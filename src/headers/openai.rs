//! OpenAI (and Azure OpenAI): a meter of requests and a meter of tokens, each in its own three
//! fields, `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`.
//!
//! A reset is a Go duration (`6m0s`, `12ms`; Azure writes a bare `0`) to the quota's full
//! replenishment: waiting it out is never early. A reset of zero is a quota already whole,
//! not a window that has passed: what is left is kept. `retry-after-ms` and `x-should-retry`, which
//! OpenAI sends too, are read with `Retry-After` and by the policy.

use std::borrow::Cow;

use super::clock::ResponseClock;
use super::duration::parse_go_duration;
use super::field::{Fields, Name, members};
use super::meter::{Reading, Unit};
use super::number::parse_count_with_fraction;
use super::reader::Found;

pub(super) const NAMES: &[Name] = &[
    Name::XRateLimitLimitRequests,
    Name::XRateLimitRemainingRequests,
    Name::XRateLimitResetRequests,
    Name::XRateLimitLimitTokens,
    Name::XRateLimitRemainingTokens,
    Name::XRateLimitResetTokens,
];

pub(super) fn read<'a>(fields: &Fields<'a>, clock: &ResponseClock, found: &mut Found<'a>) {
    let meters = [
        (
            "requests",
            Unit::Requests,
            [
                Name::XRateLimitLimitRequests,
                Name::XRateLimitRemainingRequests,
                Name::XRateLimitResetRequests,
            ],
        ),
        (
            "tokens",
            Unit::Tokens,
            [
                Name::XRateLimitLimitTokens,
                Name::XRateLimitRemainingTokens,
                Name::XRateLimitResetTokens,
            ],
        ),
    ];
    for (name, unit, [limit, remaining, reset]) in meters {
        let values = |name| fields.lines(name).flat_map(members);
        let counts = |name| values(name).filter_map(parse_count_with_fraction);
        let reading = Reading {
            limit: counts(limit).min(),
            remaining: counts(remaining).min(),
            // Zero: the quota is whole again, and what is left is still the server's count.
            reset: values(reset)
                .filter_map(parse_go_duration)
                .map(|left| clock.countdown(left))
                .max()
                .filter(|left| !left.is_zero()),
            ..Reading::default()
        };
        if reading != Reading::default() {
            found.readings.push(Reading {
                name: Some(Cow::Borrowed(name)),
                unit,
                ..reading
            });
        }
    }
}
