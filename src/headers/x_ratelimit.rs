//! The de-facto `X-RateLimit-*` family, also spelled `X-Rate-Limit-*` (GitHub, X, Okta, Reddit,
//! Discord, express-rate-limit's legacy headers, flask-limiter, tower_governor …).
//!
//! - `-Limit`, `-Remaining`, `-Used`: counts; a fraction (`598.0`) rounds down. Without
//!   `-Remaining`, `-Limit` minus `-Used` is what is left.
//! - `-Reset`: a countdown in seconds, or an epoch instant (seconds or milliseconds) told apart
//!   by magnitude, either with a fraction (`1470173023.123`); or an HTTP-date.
//! - `-Reset-After` (Discord): the same, written as a countdown.
//! - `X-Rate-Limit` alone (Zendesk): the limit.
//! - A reset may also be an RFC 3339 / ISO 8601 instant (`2023-11-14T22:15Z`: Atlassian, others).
//! - The meter takes its name from the limit the response counted against, where the server
//!   names one: `x-ratelimit-resource` (GitHub), `X-RateLimit-Bucket` (Discord).
//!
//! Both spellings, repeated lines and comma lists are one quota: where they disagree the most
//! restrictive figure wins. A value that is not a plain number is skipped, never read by its
//! prefix (`4abc` is not 4).

use std::borrow::Cow;
use std::time::Duration;

use super::clock::{Reset, ResponseClock, epoch_second, parse_http_date, second_of};
use super::field::{Fields, Name, members};
use super::instant::parse_instant;
use super::meter::Reading;
use super::number::{parse_count_with_fraction, parse_decimal};
use super::{discord, github};

const LIMIT: &[Name] = &[
    Name::XRateLimitLimit,
    Name::XRateDashLimitLimit,
    Name::XRateLimitBare,
];
const REMAINING: &[Name] = &[Name::XRateLimitRemaining, Name::XRateDashLimitRemaining];
const USED: &[Name] = &[Name::XRateLimitUsed, Name::XRateDashLimitUsed];
const RESET: &[Name] = &[
    Name::XRateLimitReset,
    Name::XRateDashLimitReset,
    Name::XRateLimitResetAfter,
];

/// The quota the family describes, if it names any figure.
pub(crate) fn read<'a>(fields: &Fields<'a>, clock: &ResponseClock) -> Option<Reading<'a>> {
    if ![LIMIT, REMAINING, USED, RESET]
        .iter()
        .any(|names| fields.has_any(names))
    {
        return None;
    }
    let values = |names: &'static [Name]| {
        names
            .iter()
            .flat_map(|name| fields.lines(*name))
            .flat_map(members)
    };
    let counts = |names| values(names).filter_map(parse_count_with_fraction);

    let limit = counts(LIMIT).min();
    let used = counts(USED).max();
    // Used beyond the limit is a spent window, not an unknown one.
    let remaining = counts(REMAINING)
        .min()
        .or_else(|| Some(limit?.saturating_sub(used?)));
    let reset = values(RESET).filter_map(|value| reset(value, clock)).max();
    let (reset, reset_second) = (
        reset.map(|(left, _)| left),
        reset.and_then(|(_, second)| second),
    );

    let name = github::resource(fields).or_else(|| discord::bucket(fields));
    let reading = Reading {
        name: name.map(Cow::Borrowed),
        limit,
        remaining,
        reset,
        reset_second,
        ..Reading::default()
    };
    let has_figures =
        reading.limit.is_some() || reading.remaining.is_some() || reading.reset.is_some();
    has_figures.then_some(reading)
}

/// The time left at receipt, and the second on the server's clock the reset names, where it
/// names one.
fn reset(value: &str, clock: &ResponseClock) -> Option<(Duration, Option<u64>)> {
    match parse_decimal(value) {
        Some(number) => Some((
            clock.reset(Reset::from_number(number)),
            epoch_second(number),
        )),
        None => parse_http_date(value)
            .or_else(|| parse_instant(value))
            .map(|at| (clock.until(at), second_of(at))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderMap, HeaderValue};
    use std::time::UNIX_EPOCH;

    const NOW: u64 = 1_700_000_000;

    fn read_pairs(pairs: &[(&'static str, &'static str)]) -> Option<Reading<'static>> {
        let headers = headers_of(pairs);
        let fields = Fields::new(&headers);
        let clock = ResponseClock::read(&fields, UNIX_EPOCH + Duration::from_secs(NOW));
        read(&fields, &clock).map(|reading| Reading {
            name: reading.name.map(|name| Cow::Owned(name.into_owned())),
            ..reading
        })
    }

    fn headers_of(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            "date",
            HeaderValue::from_static("Tue, 14 Nov 2023 22:13:20 GMT"),
        );
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn without_remaining_limit_minus_used_is_what_is_left() {
        let reading = read_pairs(&[("x-ratelimit-limit", "60"), ("x-ratelimit-used", "45")]);
        assert_eq!(reading.unwrap().remaining, Some(15));
    }

    #[test]
    fn remaining_said_outright_wins_over_limit_minus_used() {
        let reading = read_pairs(&[
            ("x-ratelimit-limit", "60"),
            ("x-ratelimit-used", "45"),
            ("x-ratelimit-remaining", "20"),
        ]);
        assert_eq!(reading.unwrap().remaining, Some(20));
    }

    #[test]
    fn used_beyond_the_limit_leaves_nothing_and_used_alone_says_nothing() {
        let over = read_pairs(&[("x-ratelimit-limit", "60"), ("x-ratelimit-used", "61")]);
        assert_eq!(over.unwrap().remaining, Some(0));
        assert_eq!(read_pairs(&[("x-ratelimit-used", "3")]), None);
    }

    #[test]
    fn both_spellings_and_reset_after_are_one_quota() {
        let reading = read_pairs(&[
            ("x-ratelimit-remaining", "9"),
            ("x-rate-limit-remaining", "4"),
            ("x-ratelimit-reset", "30"),
            ("x-ratelimit-reset-after", "64.5"),
        ])
        .unwrap();
        assert_eq!(reading.remaining, Some(4));
        assert_eq!(reading.reset, Some(Duration::from_millis(64_500)));
    }

    #[test]
    fn a_reset_may_be_an_http_date() {
        let reading = read_pairs(&[("x-ratelimit-reset", "Tue, 14 Nov 2023 22:14:20 GMT")]);
        assert_eq!(reading.unwrap().reset, Some(Duration::from_secs(60)));
    }

    #[test]
    fn a_reset_names_a_second_when_written_as_an_epoch_second_or_a_date() {
        let second = |reset: &'static str| {
            read_pairs(&[("x-ratelimit-reset", reset)])
                .unwrap()
                .reset_second
        };
        assert_eq!(second("1700000060"), Some(1_700_000_060));
        assert_eq!(second("Tue, 14 Nov 2023 22:14:20 GMT"), Some(1_700_000_060));
        // A countdown, and an epoch in milliseconds, are read to their own precision.
        assert_eq!(second("60"), None);
        assert_eq!(second("1700000060000"), None);
    }

    #[test]
    fn nothing_readable_is_no_reading() {
        assert_eq!(read_pairs(&[]), None);
        assert_eq!(read_pairs(&[("x-ratelimit-remaining", "lots")]), None);
    }
}
