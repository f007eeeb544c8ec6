//! Durations written as Go prints them (`6m0s`, `1h2m3.5s`, `12ms`), as OpenAI's resets and
//! some `Retry-After` values are: a sequence of decimal numbers, each with a unit.
//!
//! A bare number is seconds (Azure OpenAI writes `0`), as every other reset is. No sign: a
//! negative duration is no reset, and `+` is not a number a server writes. A unit the grammar
//! does not know, or a number without its unit after the first, reads as nothing rather than
//! as a guess: `1m0s` read by its prefix would be 1 s where the server meant 60.

use std::time::Duration;

use super::number::{LONGEST, parse_decimal};

/// Nanoseconds in each unit Go writes (`µs` is skipped earlier: it is not ASCII).
fn unit_nanos(unit: &str) -> Option<u128> {
    Some(match unit {
        "h" => 3_600_000_000_000,
        "m" => 60_000_000_000,
        "s" => 1_000_000_000,
        "ms" => 1_000_000,
        "us" => 1_000,
        "ns" => 1,
        _ => return None,
    })
}

/// A Go duration, or a bare number of seconds; `None` for anything else. Saturates at
/// [`LONGEST`].
pub(crate) fn parse_go_duration(text: &str) -> Option<Duration> {
    if let Some(seconds) = parse_decimal(text) {
        return Some(seconds.seconds().min(LONGEST));
    }
    if text.is_empty() {
        return None;
    }
    let is_number = |c: char| c.is_ascii_digit() || c == '.';
    let mut rest = text;
    let mut nanos: u128 = 0;
    while !rest.is_empty() {
        let (number, after) = rest.split_at(rest.find(|c| !is_number(c)).unwrap_or(rest.len()));
        let (unit, next) = after.split_at(after.find(is_number).unwrap_or(after.len()));
        let value = parse_decimal(number)?;
        let scale = unit_nanos(unit)?;
        let whole = u128::from(value.whole).saturating_mul(scale);
        let fraction = u128::from(value.nanos) * scale / 1_000_000_000;
        nanos = nanos.saturating_add(whole).saturating_add(fraction);
        rest = next;
    }
    let longest = LONGEST.as_nanos();
    let nanos = u64::try_from(nanos.min(longest)).unwrap_or(u64::MAX);
    Some(Duration::from_nanos(nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(ms: u64) -> Option<Duration> {
        Some(Duration::from_millis(ms))
    }

    #[test]
    fn every_unit_and_several_of_them_add_up() {
        assert_eq!(parse_go_duration("6m0s"), millis(360_000));
        assert_eq!(parse_go_duration("1m0s"), millis(60_000));
        assert_eq!(parse_go_duration("1h2m3.5s"), millis(3_723_500));
        assert_eq!(parse_go_duration("12ms"), millis(12));
        assert_eq!(parse_go_duration("6m"), millis(360_000));
        assert_eq!(parse_go_duration("1.5h"), millis(5_400_000));
        assert_eq!(parse_go_duration("20us"), Some(Duration::from_micros(20)));
        assert_eq!(parse_go_duration("7ns"), Some(Duration::from_nanos(7)));
    }

    #[test]
    fn a_bare_number_is_seconds() {
        assert_eq!(parse_go_duration("0"), Some(Duration::ZERO));
        assert_eq!(parse_go_duration("2.5"), millis(2_500));
    }

    #[test]
    fn anything_else_is_nothing_never_a_prefix() {
        for text in [
            "", "s", "m5", "-1s", "+1s", "1x", "1m0", "1 m", "1.s", ".5s", "1m-2s", "1d", "ms",
            "1..5s", "1mss",
        ] {
            assert_eq!(parse_go_duration(text), None, "{text:?}");
        }
    }

    #[test]
    fn huge_values_saturate() {
        assert_eq!(parse_go_duration("99999999999999999999h"), Some(LONGEST));
        assert_eq!(
            parse_go_duration("9999999999999999999h9999999999999999999h"),
            Some(LONGEST)
        );
    }
}
