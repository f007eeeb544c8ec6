//! OpenAI (and Azure OpenAI): a meter of requests and a meter of tokens, each in its own three
//! fields, `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`.
//!
//! A reset is a Go duration (`6m0s`, `12ms`; Azure writes a bare `0`) to the quota's full
//! replenishment: waiting it out is never early. A reset of zero is a quota already whole,
//! not a window that has passed: what is left is kept. `retry-after-ms` and `x-should-retry`, which
//! OpenAI sends too, are read with `Retry-After` and by the policy.
//!
//! Azure answers a refused token limit with its own spelling of the token reset,
//! `x-rate-limit-reset-tokens: 55`, and no `Retry-After` (openai-python #937). It is the token
//! meter's reset, and the server's instruction too: read only as a reset of a meter that did
//! not say it is spent, it would leave the refusal to a guessed backoff, shorter than the
//! server named. An instruction on a response that is no refusal closes nothing, so reading it
//! so costs nothing where Azure sends it on other responses.

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
    Name::XRateDashLimitResetTokens,
];

pub(super) fn read<'a>(fields: &Fields<'a>, clock: &ResponseClock, found: &mut Found<'a>) {
    let meters: [(&str, Unit, [&[Name]; 3]); 2] = [
        (
            "requests",
            Unit::Requests,
            [
                &[Name::XRateLimitLimitRequests],
                &[Name::XRateLimitRemainingRequests],
                &[Name::XRateLimitResetRequests],
            ],
        ),
        (
            "tokens",
            Unit::Tokens,
            [
                &[Name::XRateLimitLimitTokens],
                &[Name::XRateLimitRemainingTokens],
                &[Name::XRateLimitResetTokens, Name::XRateDashLimitResetTokens],
            ],
        ),
    ];
    let values = |names: &'static [Name]| {
        names
            .iter()
            .flat_map(|name| fields.lines(*name))
            .flat_map(members)
    };
    let resets = |names| {
        values(names)
            .filter_map(parse_go_duration)
            .map(|left| clock.countdown(left))
    };
    for (name, unit, [limit, remaining, reset]) in meters {
        let counts = |names| values(names).filter_map(parse_count_with_fraction);
        let reading = Reading {
            limit: counts(limit).min(),
            remaining: counts(remaining).min(),
            // Zero: the quota is whole again, and what is left is still the server's count.
            reset: resets(reset).max().filter(|left| !left.is_zero()),
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
    for wait in resets(&[Name::XRateDashLimitResetTokens]) {
        found.retry_after(wait);
    }
}
