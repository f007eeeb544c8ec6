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
        // Lines that disagree: the latest, as every reset is read, never early.
        reset: fields
            .lines(Name::RateLimitResetTime)
            .filter_map(parse_http_date)
            .map(|at| clock.until(at))
            .max(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderMap, HeaderValue};
    use std::time::{Duration, UNIX_EPOCH};

    /// Duplicated `RateLimit-ResetTime` lines that disagree (a proxy that appends its own, a
    /// cache that merges two responses) are one reset, read as the latest: as every other
    /// reset is (DESIGN: "that disagree, the most restrictive ... latest reset"), never early.
    #[test]
    fn reset_times_that_disagree_give_the_latest() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "date",
            HeaderValue::from_static("Tue, 14 Nov 2023 22:13:20 GMT"),
        );
        for line in [
            "Tue, 14 Nov 2023 22:14:20 GMT",
            "Tue, 14 Nov 2023 22:15:20 GMT",
        ] {
            headers.append("ratelimit-resettime", HeaderValue::from_static(line));
        }
        let fields = Fields::new(&headers);
        let clock = ResponseClock::read(&fields, UNIX_EPOCH + Duration::from_secs(1_700_000_000));
        let mut found = Found::default();
        read(&fields, &clock, &mut found);
        assert_eq!(found.readings.len(), 1);
        assert_eq!(found.readings[0].reset, Some(Duration::from_secs(120)));
    }
}
