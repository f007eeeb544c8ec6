//! HubSpot: three meters, each a limit and what is left of it, and none with a reset:
//!
//! - `X-HubSpot-RateLimit-Max` and `-Remaining`, over `-Interval-Milliseconds` (the burst
//!   window, 10 s);
//! - `-Secondly` and `-Secondly-Remaining`, over a second;
//! - `-Daily` and `-Daily-Remaining`, over a day (HubSpot's resets at midnight in the
//!   account's time zone).
//!
//! A window with quota left is given no reset: none was sent, and none is made up. A spent
//! short window (the burst's, the second's) comes back within one window of the response
//! however the server counts it (a fixed window ends within its length, a sliding one lets its
//! oldest request go within it), so its window is taken as its reset: an upper bound, never
//! early. Without it, a 429 with the burst window at zero would be retried after a guess,
//! shorter than the window may still need, and refused again. The daily quota is given no such
//! bound: it may be most of a day late, and the layer remembers a spent window until its
//! reset, so a made-up one could fail every call on the key for hours after the quota came
//! back (a closure the layer guessed never exceeds the cap). A spent day is reported as spent,
//! with no reset, and a 429 at zero is retried on the guessed backoff.

use std::borrow::Cow;
use std::time::Duration;

use super::clock::ResponseClock;
use super::field::{Fields, Name, members};
use super::meter::Reading;
use super::number::{LONGEST, parse_count, parse_count_with_fraction};
use super::reader::Found;

const SECOND: Duration = Duration::from_secs(1);
const DAY: Duration = Duration::from_secs(24 * 60 * 60);

pub(super) const NAMES: &[Name] = &[
    Name::XHubSpotRateLimitMax,
    Name::XHubSpotRateLimitRemaining,
    Name::XHubSpotRateLimitIntervalMilliseconds,
    Name::XHubSpotRateLimitSecondly,
    Name::XHubSpotRateLimitSecondlyRemaining,
    Name::XHubSpotRateLimitDaily,
    Name::XHubSpotRateLimitDailyRemaining,
];

pub(super) fn read<'a>(fields: &Fields<'a>, clock: &ResponseClock, found: &mut Found<'a>) {
    let values = |name| fields.lines(name).flat_map(members);
    let burst_window = values(Name::XHubSpotRateLimitIntervalMilliseconds)
        .filter_map(parse_count)
        .map(|millis| Duration::from_millis(millis).min(LONGEST))
        .filter(|window| !window.is_zero())
        .max();
    // Each meter: its name, its fields, its window, and whether a spent window is taken to
    // reset within it.
    let meters = [
        (
            "burst",
            [Name::XHubSpotRateLimitMax, Name::XHubSpotRateLimitRemaining],
            burst_window,
            true,
        ),
        (
            "secondly",
            [
                Name::XHubSpotRateLimitSecondly,
                Name::XHubSpotRateLimitSecondlyRemaining,
            ],
            Some(SECOND),
            true,
        ),
        (
            "daily",
            [
                Name::XHubSpotRateLimitDaily,
                Name::XHubSpotRateLimitDailyRemaining,
            ],
            Some(DAY),
            false,
        ),
    ];
    for (name, [limit, remaining], window, bounded) in meters {
        let counts = |name| values(name).filter_map(parse_count_with_fraction);
        let (limit, remaining) = (counts(limit).min(), counts(remaining).min());
        if limit.is_none() && remaining.is_none() {
            continue;
        }
        let spent = remaining == Some(0);
        found.readings.push(Reading {
            name: Some(Cow::Borrowed(name)),
            limit,
            remaining,
            reset: window
                .filter(|_| spent && bounded)
                .map(|window| clock.countdown(window)),
            window,
            ..Reading::default()
        });
    }
}
