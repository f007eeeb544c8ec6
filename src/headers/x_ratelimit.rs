//! The de-facto `X-RateLimit-*` family, also spelled `X-Rate-Limit-*` (GitHub, X, Okta, Reddit,
//! Discord, express-rate-limit's legacy headers, flask-limiter, tower_governor …).
//!
//! - `-Limit`, `-Remaining`, `-Used`: counts; a fraction (`598.0`) rounds down. Without
//!   `-Remaining`, `-Limit` minus `-Used` is what is left.
//! - `-Reset`: a countdown in seconds, or an epoch instant (seconds or milliseconds) told apart
//!   by magnitude, either with a fraction (`1470173023.123`); or an HTTP-date.
//! - `-Reset-After` (Discord): the same, written as a countdown.
//!
//! Both spellings, repeated lines and comma lists are one quota: where they disagree the most
//! restrictive figure wins. A value that is not a plain number is skipped, never read by its
//! prefix (`4abc` is not 4).

use std::time::Duration;

use http::HeaderMap;

use super::clock::{Reset, ResponseClock};
use super::field::{lines, members};
use super::meter::Reading;
use super::number::{parse_count_with_fraction, parse_decimal};

const LIMIT: &[&str] = &["x-ratelimit-limit", "x-rate-limit-limit"];
const REMAINING: &[&str] = &["x-ratelimit-remaining", "x-rate-limit-remaining"];
const USED: &[&str] = &["x-ratelimit-used", "x-rate-limit-used"];
const RESET: &[&str] = &[
    "x-ratelimit-reset",
    "x-rate-limit-reset",
    "x-ratelimit-reset-after",
];

/// The quota the family describes, if it names any figure.
pub(crate) fn read(headers: &HeaderMap, clock: &ResponseClock) -> Option<Reading> {
    let values = |names: &'static [&'static str]| {
        names
            .iter()
            .flat_map(|name| lines(headers, name))
            .flat_map(members)
    };
    let counts = |names| values(names).filter_map(parse_count_with_fraction);

    let limit = counts(LIMIT).min();
    let used = counts(USED).max();
    let remaining = counts(REMAINING)
        .min()
        .or_else(|| limit?.checked_sub(used?));
    let reset = values(RESET).filter_map(|value| reset(value, clock)).max();

    let reading = Reading {
        limit,
        remaining,
        reset,
        ..Reading::default()
    };
    (reading != Reading::default()).then_some(reading)
}

fn reset(value: &str, clock: &ResponseClock) -> Option<Duration> {
    match parse_decimal(value) {
        Some(number) => Some(clock.reset(Reset::from_number(number))),
        None => httpdate::parse_http_date(value)
            .ok()
            .map(|at| clock.until(at)),
    }
}
