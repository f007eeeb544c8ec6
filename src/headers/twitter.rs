//! X (Twitter) API v2: beside the `x-rate-limit-*` meter of the endpoint's window (15 minutes
//! for most, read by `x_ratelimit`), two caps over 24 hours, the user's and the app's, each in
//! its own three fields, `x-{user,app}-limit-24hour-{limit,remaining,reset}`.
//!
//! A reset is an epoch instant, read against `Date` as every meter's reset is (a number below
//! 1,000,000,000 is a countdown, as under every other name). A spent cap holds calls until its
//! reset while the endpoint's own meter has room: it is the limit that refused.

use std::borrow::Cow;
use std::time::Duration;

use super::clock::{Reset, ResponseClock};
use super::field::{Fields, Name, members};
use super::meter::Reading;
use super::number::{parse_count_with_fraction, parse_decimal};
use super::reader::Found;

/// The window both caps count over.
const DAY: Duration = Duration::from_secs(24 * 60 * 60);

pub(super) const NAMES: &[Name] = &[
    Name::XUserLimit24HourLimit,
    Name::XUserLimit24HourRemaining,
    Name::XUserLimit24HourReset,
    Name::XAppLimit24HourLimit,
    Name::XAppLimit24HourRemaining,
    Name::XAppLimit24HourReset,
];

pub(super) fn read<'a>(fields: &Fields<'a>, clock: &ResponseClock, found: &mut Found<'a>) {
    let caps = [
        (
            "user-24hour",
            [
                Name::XUserLimit24HourLimit,
                Name::XUserLimit24HourRemaining,
                Name::XUserLimit24HourReset,
            ],
        ),
        (
            "app-24hour",
            [
                Name::XAppLimit24HourLimit,
                Name::XAppLimit24HourRemaining,
                Name::XAppLimit24HourReset,
            ],
        ),
    ];
    for (name, [limit, remaining, reset]) in caps {
        let values = |name| fields.lines(name).flat_map(members);
        let counts = |name| values(name).filter_map(parse_count_with_fraction);
        let reading = Reading {
            limit: counts(limit).min(),
            remaining: counts(remaining).min(),
            reset: values(reset)
                .filter_map(parse_decimal)
                .map(|number| clock.reset(Reset::from_number(number)))
                .max(),
            ..Reading::default()
        };
        if reading != Reading::default() {
            found.readings.push(Reading {
                name: Some(Cow::Borrowed(name)),
                window: Some(DAY),
                ..reading
            });
        }
    }
}
