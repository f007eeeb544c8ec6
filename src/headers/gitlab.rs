//! GitLab: the draft 01–06 fields (read by `ietf`, with an epoch `RateLimit-Reset`), and two of
//! its own: `RateLimit-Name` names the current window's meter (`throttle_authenticated_api`),
//! and `RateLimit-ResetTime` writes its reset again as an HTTP-date. `RateLimit-Observed` is
//! what `RateLimit-Remaining` already says.

use std::borrow::Cow;

use super::clock::{ResponseClock, parse_http_date};
use super::field::{Fields, Name};
use super::github::is_group_name;
use super::meter::Reading;
use super::reader::Found;

pub(super) const NAMES: &[Name] = &[Name::GitLabRateLimitLabel, Name::RateLimitResetTime];

pub(super) fn read<'a>(fields: &Fields<'a>, clock: &ResponseClock, found: &mut Found<'a>) {
    let own = Reading {
        name: fields
            .lines(Name::GitLabRateLimitLabel)
            .next()
            .filter(|name| is_group_name(name))
            .map(Cow::Borrowed),
        reset: fields
            .lines(Name::RateLimitResetTime)
            .find_map(parse_http_date)
            .map(|at| clock.until(at)),
        ..Reading::default()
    };
    // The current window is the IETF reader's unnamed reading, the first of the response's.
    let current = found
        .readings
        .iter_mut()
        .find(|reading| reading.name.is_none());
    match current {
        Some(current) => current.merge(own),
        None if own != Reading::default() => found.readings.push(own),
        None => {}
    }
}
