//! Numbers as rate-limit headers write them: ASCII digits, an optional fraction, nothing else.
//!
//! No sign, no exponent, no leading `+`, no `NaN`: `str::parse` would accept some of those
//! (`"+5"`, `"1e9"` for floats), and each is a number the server did not write.

use std::time::Duration;

/// The longest wait or countdown the parser reports: 2^31 seconds (about 68 years).
///
/// RFC 9111 §1.2.2 gives this value to a delta-seconds that overflows. Anything this long is far
/// past every cap, so saturating here loses nothing, and it keeps later `Instant` arithmetic
/// from overflowing.
pub(crate) const LONGEST: Duration = Duration::from_secs(1 << 31);

/// A non-negative decimal as written: whole units (saturated at `u64::MAX`) and a fraction in
/// nanounits (digits past the ninth are dropped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Decimal {
    pub(crate) whole: u64,
    pub(crate) nanos: u32,
}

impl Decimal {
    /// This many seconds.
    pub(crate) fn seconds(self) -> Duration {
        Duration::new(self.whole, self.nanos)
    }

    /// This many milliseconds.
    pub(crate) fn millis(self) -> Duration {
        // A billionth of a millisecond is a thousandth of a nanosecond.
        Duration::from_millis(self.whole) + Duration::from_nanos(u64::from(self.nanos) / 1_000)
    }
}

/// `1*DIGIT ["." 1*DIGIT]`; `None` for anything else.
pub(crate) fn parse_decimal(text: &str) -> Option<Decimal> {
    // The whole part is read in the pass that finds its end: a value is a few digits long,
    // and a scan apiece for the point, the check and the value cost more than the reading.
    let bytes = text.as_bytes();
    let mut whole = 0u64;
    let mut end = 0;
    while let Some(digit) = bytes.get(end).filter(|byte| byte.is_ascii_digit()) {
        whole = whole
            .saturating_mul(10)
            .saturating_add(u64::from(digit - b'0'));
        end += 1;
    }
    if end == 0 {
        return None;
    }
    let nanos = match &bytes[end..] {
        [] => 0,
        [b'.', fraction @ ..] if is_digits(fraction) => fraction
            .iter()
            .chain(std::iter::repeat(&b'0'))
            .take(9)
            .fold(0u32, |sum, digit| sum * 10 + u32::from(digit - b'0')),
        _ => return None,
    };
    Some(Decimal { whole, nanos })
}

/// `1*DIGIT` that fits a `u64`; `None` for anything else, overflow included (a count the
/// parser cannot hold is not a count it may guess).
pub(crate) fn parse_count(text: &str) -> Option<u64> {
    if is_digits(text.as_bytes()) {
        text.parse().ok()
    } else {
        None
    }
}

/// A count that may carry a fraction (`598.0`, as some servers write remaining quota), rounded
/// down: the server has no more whole units than that.
pub(crate) fn parse_count_with_fraction(text: &str) -> Option<u64> {
    match split_at_point(text) {
        (whole, Some(fraction)) if is_digits(fraction.as_bytes()) => parse_count(whole),
        (_, Some(_)) => None,
        (whole, None) => parse_count(whole),
    }
}

/// `text` before its first `.`, and after it if it has one. Searched byte by byte: a number is
/// a few digits long, and `str::split_once` calls `memchr`, whose setup costs more than that.
fn split_at_point(text: &str) -> (&str, Option<&str>) {
    match text.bytes().position(|byte| byte == b'.') {
        Some(point) => (&text[..point], Some(&text[point + 1..])),
        None => (text, None),
    }
}

fn is_digits(text: &[u8]) -> bool {
    !text.is_empty() && text.iter().all(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_reads_whole_and_fraction() {
        assert_eq!(
            parse_decimal("12"),
            Some(Decimal {
                whole: 12,
                nanos: 0
            })
        );
        assert_eq!(
            parse_decimal("64.57"),
            Some(Decimal {
                whole: 64,
                nanos: 570_000_000
            })
        );
        assert_eq!(
            parse_decimal("1.1234567899"),
            Some(Decimal {
                whole: 1,
                nanos: 123_456_789
            })
        );
    }

    #[test]
    fn decimal_refuses_what_the_server_did_not_write_as_a_number() {
        for text in [
            "", " 1", "1 ", "+1", "-1", "1e9", "NaN", "inf", ".5", "5.", "1.2.3", "４", "0x10",
        ] {
            assert_eq!(parse_decimal(text), None, "{text:?}");
        }
    }

    /// The grammar read the plain way: split at the point, check each side, then add up.
    fn decimal_by_parts(text: &str) -> Option<Decimal> {
        let (whole, fraction) = match text.split_once('.') {
            Some((whole, fraction)) => (whole, Some(fraction)),
            None => (text, None),
        };
        let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
        if !digits(whole) || fraction.is_some_and(|fraction| !digits(fraction)) {
            return None;
        }
        let whole = whole.bytes().fold(0u64, |sum, digit| {
            sum.saturating_mul(10)
                .saturating_add(u64::from(digit - b'0'))
        });
        let nanos = format!("{:0<9}", fraction.unwrap_or(""))[..9]
            .parse()
            .unwrap();
        Some(Decimal { whole, nanos })
    }

    proptest::proptest! {
        #[test]
        fn decimal_reads_as_the_grammar_says(text in "[0-9.a \u{664}]{0,25}") {
            proptest::prop_assert_eq!(parse_decimal(&text), decimal_by_parts(&text));
        }
    }

    #[test]
    fn decimal_saturates_instead_of_overflowing() {
        let huge = parse_decimal("99999999999999999999999").unwrap();
        assert_eq!(huge.whole, u64::MAX);
        assert_eq!(huge.seconds(), Duration::from_secs(u64::MAX));
        assert_eq!(huge.millis(), Duration::from_millis(u64::MAX));
    }

    #[test]
    fn seconds_and_millis_keep_the_fraction() {
        let value = parse_decimal("1500.5").unwrap();
        assert_eq!(value.millis(), Duration::from_micros(1_500_500));
        assert_eq!(value.seconds(), Duration::from_millis(1_500_500));
    }

    #[test]
    fn count_is_digits_that_fit() {
        assert_eq!(parse_count("0"), Some(0));
        assert_eq!(parse_count("18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_count("18446744073709551616"), None);
        for text in ["", "-3", "+3", "4abc", "５", "1.0", " 1"] {
            assert_eq!(parse_count(text), None, "{text:?}");
        }
    }

    #[test]
    fn count_with_fraction_rounds_down() {
        assert_eq!(parse_count_with_fraction("598.0"), Some(598));
        assert_eq!(parse_count_with_fraction("598.9"), Some(598));
        assert_eq!(parse_count_with_fraction("598"), Some(598));
        assert_eq!(parse_count_with_fraction("598."), None);
        assert_eq!(parse_count_with_fraction("-1.0"), None);
    }
}
