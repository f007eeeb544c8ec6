//! Instants written as RFC 3339 / ISO 8601 extended timestamps (`2023-11-14T22:13:50Z`,
//! `2023-11-14T22:13:21.5Z`, `2023-11-14T22:14:20+00:00`, `2023-11-14T22:15Z`), as Anthropic's
//! resets and some `X-RateLimit-Reset` values are.
//!
//! The offset is required: a time without one is in a zone the client cannot know, and read
//! as UTC it could be hours early. Seconds may be left out (minute precision) and may carry a
//! fraction; a leap second (`:60`) is read as the second after, which is never early.
//! Anything out of range (month 13, 31 February, hour 24) is nothing, never a wrong instant.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::clock::days_since_epoch;
use super::number::parse_decimal;

/// An RFC 3339 / ISO 8601 instant with its offset; `None` for anything else.
pub(crate) fn parse_instant(text: &str) -> Option<SystemTime> {
    let bytes = text.as_bytes();
    if !text.is_ascii() || bytes.len() < 17 || !matches!(bytes[10], b'T' | b't' | b' ') {
        return None;
    }
    let (date, rest) = (text.get(..10)?, text.get(11..)?);
    let day = calendar_day(date)?;
    let zone_at = rest.find(['Z', 'z', '+', '-'])?;
    let (time, zone) = rest.split_at(zone_at);
    let since_midnight = time_of_day(time)?;
    let offset = offset(zone)?;
    let local = Duration::from_secs(day * 86_400) + since_midnight;
    let utc = if offset.ahead {
        local.checked_sub(offset.by)?
    } else {
        local + offset.by
    };
    UNIX_EPOCH.checked_add(utc)
}

/// Days since 1970-01-01 of `YYYY-MM-DD`.
fn calendar_day(date: &str) -> Option<u64> {
    let bytes = date.as_bytes();
    if bytes[4] != b'-' || bytes[7] != b'-' {
        return None;
    }
    let year = digits(&date[..4])?;
    let month = digits(&date[5..7])?;
    let day = digits(&date[8..10])?;
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if year < 1970 || day == 0 || day > days_in_month {
        return None;
    }
    Some(days_since_epoch(year, month, day))
}

/// `HH:MM` or `HH:MM:SS[.fraction]`, from midnight.
fn time_of_day(time: &str) -> Option<Duration> {
    let (hour, rest) = time.split_once(':')?;
    let (minute, second) = match rest.split_once(':') {
        Some((minute, second)) => (minute, Some(second)),
        None => (rest, None),
    };
    let hour = two_digits(hour).filter(|hour| *hour < 24)?;
    let minute = two_digits(minute).filter(|minute| *minute < 60)?;
    let second = match second {
        None => Duration::ZERO,
        Some(second) => {
            let whole = second.split('.').next()?;
            let value = parse_decimal(second).filter(|_| whole.len() == 2)?;
            if value.whole > 60 {
                return None;
            }
            value.seconds()
        }
    };
    Some(Duration::from_secs(hour * 3_600 + minute * 60) + second)
}

/// A zone offset: how far local time is from UTC, and in which direction.
struct Offset {
    ahead: bool,
    by: Duration,
}

/// `Z`, or `±HH:MM`, `±HHMM`, `±HH`.
fn offset(zone: &str) -> Option<Offset> {
    if zone.eq_ignore_ascii_case("z") {
        return Some(Offset {
            ahead: false,
            by: Duration::ZERO,
        });
    }
    let ahead = match zone.as_bytes().first()? {
        b'+' => true,
        b'-' => false,
        _ => return None,
    };
    let zone = &zone[1..];
    let (hours, minutes) = match zone.len() {
        2 => (zone, "00"),
        4 => zone.split_at(2),
        5 if zone.as_bytes()[2] == b':' => (&zone[..2], &zone[3..]),
        _ => return None,
    };
    let hours = two_digits(hours).filter(|hours| *hours < 24)?;
    let minutes = two_digits(minutes).filter(|minutes| *minutes < 60)?;
    Some(Offset {
        ahead,
        by: Duration::from_secs(hours * 3_600 + minutes * 60),
    })
}

fn two_digits(text: &str) -> Option<u64> {
    (text.len() == 2).then(|| digits(text)).flatten()
}

fn digits(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: u64, millis: u64) -> Option<SystemTime> {
        Some(UNIX_EPOCH + Duration::from_secs(seconds) + Duration::from_millis(millis))
    }

    #[test]
    fn the_forms_vendors_send() {
        assert_eq!(parse_instant("2023-11-14T22:13:50Z"), at(1_700_000_030, 0));
        assert_eq!(
            parse_instant("2023-11-14T22:13:21.5Z"),
            at(1_700_000_001, 500)
        );
        assert_eq!(
            parse_instant("2023-11-14T22:14:20+00:00"),
            at(1_700_000_060, 0)
        );
        assert_eq!(parse_instant("2023-11-14T22:15Z"), at(1_700_000_100, 0));
        assert_eq!(
            parse_instant("2025-10-25T12:00:00.5+02:00"),
            parse_instant("2025-10-25T10:00:00.5Z")
        );
        assert_eq!(parse_instant("2018-03-13T00:00:00Z"), at(1_520_899_200, 0));
    }

    #[test]
    fn offsets_move_the_instant_the_right_way() {
        let utc = parse_instant("2023-11-14T22:13:20Z").unwrap();
        let hour = Duration::from_secs(3_600);
        assert_eq!(parse_instant("2023-11-14T23:13:20+01:00"), Some(utc));
        assert_eq!(parse_instant("2023-11-14T21:13:20-01:00"), Some(utc));
        assert_eq!(parse_instant("2023-11-14T22:13:20-0100"), Some(utc + hour));
        assert_eq!(parse_instant("2023-11-14T22:13:20+01"), Some(utc - hour));
        assert_eq!(parse_instant("2023-11-14 22:13:20z"), Some(utc));
    }

    #[test]
    fn a_leap_year_has_its_day_and_a_leap_second_is_the_second_after() {
        assert!(parse_instant("2024-02-29T00:00:00Z").is_some());
        assert_eq!(parse_instant("2023-02-29T00:00:00Z"), None);
        assert_eq!(
            parse_instant("2023-11-14T22:13:60Z"),
            parse_instant("2023-11-14T22:14:00Z")
        );
    }

    #[test]
    fn anything_else_is_nothing() {
        for text in [
            "",
            "2023-11-14",
            "2023-11-14T22:13:20",
            "2023-11-14T22:13:20+1",
            "2023-11-14T22:13:20+24:00",
            "2023-13-14T22:13:20Z",
            "2023-11-31T22:13:20Z",
            "2023-11-00T22:13:20Z",
            "2023-11-14T24:00:00Z",
            "2023-11-14T22:60:00Z",
            "2023-11-14T22:13:61Z",
            "2023-11-14T22:13:2Z",
            "2023-11-14T2:13:20Z",
            "2023-11-14X22:13:20Z",
            "1969-12-31T23:59:59Z",
            "+023-11-14T22:13:20Z",
            "2023/11/14T22:13:20Z",
            "2023-11-14T22:13:20.Z",
            "2023-11-14T22:13:20Zjunk",
            "1970-01-01T00:00:00+01:00",
            "Tue, 14 Nov 2023 22:13:20 GMT",
        ] {
            assert_eq!(parse_instant(text), None, "{text:?}");
        }
    }
}
