//! HubSpot: three meters, each a limit and what is left of it, and none with a reset:
//!
//! - `X-HubSpot-RateLimit-Max` and `-Remaining`, over `-Interval-Milliseconds` (the burst
//!   window, 10 s);
//! - `-Secondly` and `-Secondly-Remaining`, over a second;
//! - `-Daily` and `-Daily-Remaining`, over a day (HubSpot's resets at midnight in the
//!   account's time zone).
//!
//! A window with quota left is given no reset: none was sent, and none is made up. A spent
//! one comes back within one window of the response however the server counts it (a fixed
//! window ends within its length, a sliding one lets its oldest request go within it), so its
//! window is taken as its reset: an upper bound, never early. Without it, a 429 with the burst
//! window at zero would be retried after a guess, shorter than the window may still need, and
//! refused again. For the daily quota that bound may be most of a day late, far beyond any cap:
//! a 429 at zero is then handed back at once, not retried (`respect_remaining(false)` makes it
//! a guess again).

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
    let meters = [
        (
            "burst",
            [Name::XHubSpotRateLimitMax, Name::XHubSpotRateLimitRemaining],
            burst_window,
        ),
        (
            "secondly",
            [
                Name::XHubSpotRateLimitSecondly,
                Name::XHubSpotRateLimitSecondlyRemaining,
            ],
            Some(SECOND),
        ),
        (
            "daily",
            [
                Name::XHubSpotRateLimitDaily,
                Name::XHubSpotRateLimitDailyRemaining,
            ],
            Some(DAY),
        ),
    ];
    for (name, [limit, remaining], window) in meters {
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
                .filter(|_| spent)
                .map(|window| clock.countdown(window)),
            window,
            ..Reading::default()
        });
    }
}
