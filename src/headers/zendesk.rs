//! Zendesk: a named meter per endpoint, `zendesk-ratelimit-tickets-index: total=100;
//! remaining=99; resets=41`, and the account's limit split over three families,
//! `X-Rate-Limit: 700`, `X-Rate-Limit-Remaining: 699` and `ratelimit-reset: 41` (with
//! `ratelimit-limit: 700` and `ratelimit-remaining: 699` beside them, as Zendesk sends them),
//! read as the one meter they describe.

use super::clock::{Reset, ResponseClock};
use super::field::{Fields, Name, ZENDESK_PREFIX};
use super::meter::Reading;
use super::number::{parse_count_with_fraction, parse_decimal};
use super::reader::Found;

pub(super) const NAMES: &[Name] = &[Name::ZendeskRateLimit, Name::XRateLimitBare];

pub(super) fn read<'a>(fields: &Fields<'a>, clock: &ResponseClock, found: &mut Found<'a>) {
    if fields.has(Name::XRateLimitBare) {
        join_split_account_meter(found);
    }
    let first = found.readings.len();
    for (endpoint, line) in fields.prefixed(ZENDESK_PREFIX) {
        let reading = figures(line, clock);
        if endpoint.is_empty() || reading == Reading::default() {
            continue;
        }
        found.add_named(first, endpoint, reading);
    }
}

/// `total=100; remaining=99; resets=41`: unknown keys and values that are not numbers are
/// skipped; `;` or `,` separates.
pub(crate) fn figures(line: &str, clock: &ResponseClock) -> Reading<'static> {
    let mut reading = Reading::default();
    for pair in line.split([';', ',']) {
        let Some((key, value)) = pair.split_once('=') else {
            continue;
        };
        let value = value.trim_ascii();
        let mut figure = Reading::default();
        match key.trim_ascii() {
            "total" => figure.limit = parse_count_with_fraction(value),
            "remaining" => figure.remaining = parse_count_with_fraction(value),
            "resets" => {
                figure.reset =
                    parse_decimal(value).map(|number| clock.reset(Reset::from_number(number)))
            }
            _ => continue,
        }
        reading.merge(figure);
    }
    reading
}

/// The account's meter as the generic readers left it: the `X-Rate-Limit-*` reading (limit and
/// remaining, no reset), and the IETF reading that holds its reset (`ratelimit-reset`, with
/// `ratelimit-limit` and `ratelimit-remaining` where Zendesk sends them too). They are one
/// meter where the IETF reading's counts, as far as it gives them, are the same; left apart,
/// the account would be listed twice, once without its reset. Any other shape is left as it
/// is: counts that differ are another meter's.
fn join_split_account_meter(found: &mut Found<'_>) {
    let no_reset = |reading: &Reading<'_>| {
        reading.name.is_none() && reading.reset.is_none() && reading.remaining.is_some()
    };
    let Some(counts_at) = found.readings.iter().position(no_reset) else {
        return;
    };
    let counts = &found.readings[counts_at];
    let same_or_unsaid =
        |said: Option<u64>, counted: Option<u64>| said.is_none() || said == counted;
    let its_reset = |reading: &Reading<'_>| {
        reading.name.is_none()
            && reading.reset.is_some()
            && same_or_unsaid(reading.limit, counts.limit)
            && same_or_unsaid(reading.remaining, counts.remaining)
    };
    if let Some(reset_at) = found.readings.iter().position(its_reset) {
        let reset = found.readings.remove(reset_at);
        let counts_at = if counts_at > reset_at {
            counts_at - 1
        } else {
            counts_at
        };
        found.readings[counts_at].merge(reset);
    }
}
