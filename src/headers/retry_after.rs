//! `Retry-After` (RFC 9110 §10.2.3) and `retry-after-ms`: the server's instruction to wait.
//!
//! - delay-seconds, and a non-negative decimal (`1.5`, sent by some servers): that duration.
//!   Rejecting a decimal would leave a guessed wait that may be shorter than the server meant.
//! - an HTTP-date in any of its three forms, measured against the response's own `Date` (plus
//!   `Age`), never against what earlier responses said of the server's clock: where that
//!   bound runs ahead of this response's `Date` (another backend, a cache), it would read the
//!   instruction short and the retry would land inside the window.
//! - a Go duration (`1m0s`, seen from GitHub): that duration, never its prefix.
//! - zero, a date already past, and anything that is not one of the above (negative, `+1`,
//!   non-ASCII digits, empty, garbage) are no instruction: `Retry-After: 0` honoured literally is
//!   a burst against a limiter that asked for a pause, so the caller's guessed backoff applies.
//! - several values (repeated lines or a comma list): the largest, so the client never retries
//!   before any time the server named.
//! - `retry-after-ms`, when it holds an instruction, is preferred: it is the same instruction
//!   without the rounding to whole seconds. One at or below the least a `Retry-After` member
//!   can mean (a whole-second one less the second it may have been rounded up by; a decimal
//!   or a Go duration, not rounded, itself) is not that instruction rounded but another, and
//!   of instructions that disagree the largest holds (`Retry-After: 30` beside
//!   `retry-after-ms: 1` is 30 s, not a retry inside the 30 s).

use std::time::Duration;

use super::clock::{ResponseClock, parse_http_date};
use super::duration::parse_go_duration;
use super::field::{Fields, Name, members};
use super::number::{LONGEST, parse_decimal};

/// The server's instruction to wait, measured from receipt; `None` if it gave none.
pub(crate) fn read(fields: &Fields<'_>, clock: &ResponseClock) -> Option<Duration> {
    let millis = largest(fields.lines(Name::RetryAfterMs), |member| {
        parse_decimal(member).map(|millis| (millis.millis(), Duration::ZERO))
    });
    let seconds = largest(fields.lines(Name::RetryAfter), |member| {
        delay(member, clock)
    });
    match (millis, seconds) {
        // Short of the least a `Retry-After` can mean: not that instruction unrounded.
        (Some(millis), Some(seconds)) if millis.most <= seconds.least => Some(seconds.most),
        (Some(millis), _) => Some(millis.most),
        (None, seconds) => seconds.map(|seconds| seconds.most),
    }
}

/// A `Retry-After` and how far it may lie above the instruction it rounds: a second for whole
/// seconds (delay-seconds, a date), nothing for a decimal or a Go duration, which are exact.
fn delay(member: &str, clock: &ResponseClock) -> Option<(Duration, Duration)> {
    const WHOLE_SECONDS: Duration = Duration::from_secs(1);
    match parse_decimal(member) {
        Some(seconds) if member.contains('.') => Some((seconds.seconds(), Duration::ZERO)),
        Some(seconds) => Some((seconds.seconds(), WHOLE_SECONDS)),
        None => parse_http_date(member)
            .map(|at| (clock.instructed_wait_until(at), WHOLE_SECONDS))
            .or_else(|| parse_go_duration(member).map(|wait| (wait, Duration::ZERO))),
    }
}

/// What the members of one field say: the largest wait, and the largest of the least each
/// can mean (its wait, less what it may have been rounded up by).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Said {
    most: Duration,
    least: Duration,
}

/// What the members of `lines` say, each read by `read` as a wait and its rounding.
fn largest<'a>(
    lines: impl Iterator<Item = &'a str>,
    read: impl Fn(&str) -> Option<(Duration, Duration)>,
) -> Option<Said> {
    // Plain loops: the adapters' chain (a flat_map over a from_fn) cost more than the reading.
    let mut said: Option<Said> = None;
    let mut consider = |member: &str| {
        if let Some((wait, rounded)) = read(member).filter(|(wait, _)| !wait.is_zero()) {
            let (most, least) = (wait.min(LONGEST), wait.saturating_sub(rounded).min(LONGEST));
            said = Some(said.map_or(Said { most, least }, |said| Said {
                most: said.most.max(most),
                least: said.least.max(least),
            }));
        }
    };
    for line in lines {
        // Nearly every line is one value: without a comma, the line (trimmed already) is the
        // one member `members` would give, and splitting it costs more than reading it.
        if line.bytes().any(|byte| byte == b',') {
            members(line).for_each(&mut consider);
        } else {
            consider(line);
        }
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderMap, HeaderValue};
    use std::time::{SystemTime, UNIX_EPOCH};

    const NOW: u64 = 1_700_000_000;

    fn read_pairs(pairs: &[(&'static str, &'static str)], received: u64) -> Option<Duration> {
        read_with_floor(pairs, received, None)
    }

    /// As [`read_pairs`], on a key whose earlier responses bound the server's clock at
    /// receipt to at least `floor`.
    fn read_with_floor(
        pairs: &[(&'static str, &'static str)],
        received: u64,
        floor: Option<SystemTime>,
    ) -> Option<Duration> {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        let received = UNIX_EPOCH + Duration::from_secs(received);
        let fields = Fields::new(&headers);
        read(
            &fields,
            &ResponseClock::read(&fields, received).with_floor(floor),
        )
    }

    fn retry_after(value: &'static str) -> Option<Duration> {
        read_pairs(
            &[
                ("date", "Tue, 14 Nov 2023 22:13:20 GMT"),
                ("retry-after", value),
            ],
            NOW,
        )
    }

    fn secs(seconds: u64) -> Option<Duration> {
        Some(Duration::from_secs(seconds))
    }

    #[test]
    fn delay_seconds_and_decimals_are_that_duration() {
        assert_eq!(retry_after("120"), secs(120));
        assert_eq!(retry_after("1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(retry_after("2.0"), secs(2));
    }

    #[test]
    fn all_three_http_date_forms_are_read_against_date() {
        assert_eq!(retry_after("Tue, 14 Nov 2023 22:14:20 GMT"), secs(60));
        assert_eq!(retry_after("Tuesday, 14-Nov-23 22:14:20 GMT"), secs(60));
        assert_eq!(retry_after("Tue Nov 14 22:14:20 2023"), secs(60));
        let skewed_client = read_pairs(
            &[
                ("date", "Tue, 14 Nov 2023 22:13:20 GMT"),
                ("retry-after", "Tue, 14 Nov 2023 22:14:20 GMT"),
            ],
            NOW + 5,
        );
        assert_eq!(skewed_client, secs(60));
    }

    /// Earlier responses bound the server's clock 5 s (or 0.4 s) past this response's `Date`:
    /// they came from a clock this response's did not (another backend, a cache), and the
    /// date this response names is still 3 s after its own `Date`.
    #[test]
    fn an_http_date_is_read_against_its_own_date_whatever_earlier_responses_said() {
        for ahead in [Duration::from_secs(5), Duration::from_millis(400)] {
            let floor = UNIX_EPOCH + Duration::from_secs(NOW) + ahead;
            let got = read_with_floor(
                &[
                    ("date", "Tue, 14 Nov 2023 22:13:20 GMT"),
                    ("retry-after", "Tue, 14 Nov 2023 22:13:23 GMT"),
                ],
                NOW,
                Some(floor),
            );
            assert_eq!(got, secs(3), "{ahead:?}");
        }
    }

    #[test]
    fn an_http_date_in_utc_is_read_as_in_gmt_and_other_zones_are_no_instruction() {
        assert_eq!(retry_after("Tue, 14 Nov 2023 22:14:20 UTC"), secs(60));
        let both_in_utc = read_pairs(
            &[
                ("date", "Tue, 14 Nov 2023 22:13:20 UTC"),
                ("retry-after", "Tue, 14 Nov 2023 22:14:20 UTC"),
            ],
            NOW + 5,
        );
        assert_eq!(
            both_in_utc,
            secs(60),
            "read against the Date, not the receipt"
        );
        for other_zone in [
            "Tue, 14 Nov 2023 22:14:20 PST",
            "Tue, 14 Nov 2023 22:14:20 XYZ",
        ] {
            assert_eq!(retry_after(other_zone), None, "{other_zone}");
        }
    }

    #[test]
    fn without_date_an_http_date_is_read_against_the_local_clock() {
        let got = read_pairs(&[("retry-after", "Tue, 14 Nov 2023 22:14:20 GMT")], NOW + 5);
        assert_eq!(got, secs(55));
    }

    #[test]
    fn zero_past_and_garbage_are_no_instruction() {
        for value in [
            "0",
            "0.0",
            "Fri, 31 Dec 1999 23:59:59 GMT",
            "-5",
            "+1",
            "1e3",
            "",
            "soon",
            "Tue, 14 Nov 2023 22:13:20 GMT",
        ] {
            assert_eq!(retry_after(value), None, "{value:?}");
        }
        let full_width = HeaderValue::from_bytes("１２０".as_bytes()).unwrap();
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", full_width);
        let fields = Fields::new(&headers);
        let clock = ResponseClock::read(&fields, UNIX_EPOCH + Duration::from_secs(NOW));
        assert_eq!(read(&fields, &clock), None);
    }

    #[test]
    fn overflow_saturates() {
        assert_eq!(retry_after("99999999999999999999"), Some(LONGEST));
        let far = retry_after("Fri, 31 Dec 9999 23:59:59 GMT");
        assert_eq!(far, Some(LONGEST));
    }

    #[test]
    fn several_values_give_the_largest() {
        assert_eq!(retry_after("120, 120"), secs(120));
        assert_eq!(retry_after("120, 30"), secs(120));
        assert_eq!(retry_after("30, Tue, 14 Nov 2023 22:14:20 GMT"), secs(60));
        let lines = read_pairs(
            &[
                ("retry-after", "30"),
                ("retry-after", "90"),
                ("retry-after", "x"),
            ],
            NOW,
        );
        assert_eq!(lines, secs(90));
    }

    #[test]
    fn retry_after_ms_is_preferred_when_it_holds_an_instruction() {
        let both = read_pairs(&[("retry-after", "2"), ("retry-after-ms", "1500")], NOW);
        assert_eq!(both, Some(Duration::from_millis(1500)));
        let fractional = read_pairs(&[("retry-after-ms", "12.5")], NOW);
        assert_eq!(fractional, Some(Duration::from_micros(12_500)));
        let empty_ms = read_pairs(&[("retry-after", "2"), ("retry-after-ms", "0")], NOW);
        assert_eq!(empty_ms, secs(2));
        let longer = read_pairs(&[("retry-after", "1"), ("retry-after-ms", "2500")], NOW);
        assert_eq!(
            longer,
            Some(Duration::from_millis(2500)),
            "the finer and the larger"
        );
    }

    /// Both sent, a second or more apart: not one instruction rounded, but two; the client
    /// never retries before either (the largest), where within the rounding the finer holds.
    #[test]
    fn retry_after_ms_a_second_or_more_short_of_retry_after_is_not_preferred() {
        let apart = read_pairs(&[("retry-after", "30"), ("retry-after-ms", "1")], NOW);
        assert_eq!(apart, secs(30));
        let just_apart = read_pairs(&[("retry-after", "2"), ("retry-after-ms", "1000")], NOW);
        assert_eq!(just_apart, secs(2), "a whole second short");
        let rounded = read_pairs(&[("retry-after", "2"), ("retry-after-ms", "1001")], NOW);
        assert_eq!(
            rounded,
            Some(Duration::from_millis(1001)),
            "2 s rounds 1.001 s up"
        );
        let dated = read_pairs(
            &[
                ("date", "Tue, 14 Nov 2023 22:13:20 GMT"),
                ("retry-after", "Tue, 14 Nov 2023 22:14:20 GMT"),
                ("retry-after-ms", "20"),
            ],
            NOW,
        );
        assert_eq!(dated, secs(60), "a date is an instruction too");
    }

    /// A decimal `Retry-After` and a Go duration are not rounded: `retry-after-ms` short of
    /// them, by however little, is another instruction, and the larger holds.
    #[test]
    fn retry_after_ms_short_of_an_unrounded_retry_after_is_not_preferred() {
        let decimal = read_pairs(&[("retry-after", "0.9"), ("retry-after-ms", "1")], NOW);
        assert_eq!(decimal, Some(Duration::from_millis(900)));
        let half = read_pairs(&[("retry-after", "1.5"), ("retry-after-ms", "600")], NOW);
        assert_eq!(half, Some(Duration::from_millis(1500)));
        let go = read_pairs(&[("retry-after", "1m0s"), ("retry-after-ms", "59100")], NOW);
        assert_eq!(go, secs(60));
        let finer = read_pairs(&[("retry-after", "1.5"), ("retry-after-ms", "1600")], NOW);
        assert_eq!(finer, Some(Duration::from_millis(1600)), "the larger");
        let several = read_pairs(
            &[("retry-after", "1.5, 2"), ("retry-after-ms", "1200")],
            NOW,
        );
        assert_eq!(several, secs(2), "short of the exact 1.5 s: the larger");
        let above = read_pairs(
            &[("retry-after", "1.5, 2"), ("retry-after-ms", "1600")],
            NOW,
        );
        assert_eq!(
            above,
            Some(Duration::from_millis(1600)),
            "2 s rounds 1.6 s up"
        );
        let mixed = read_pairs(
            &[("retry-after", "2.5, 3"), ("retry-after-ms", "2100")],
            NOW,
        );
        assert_eq!(mixed, secs(3), "short of the exact 2.5 s");
    }

    /// Members that name the same wait, one exact and one whole seconds: the exact one says
    /// the least the instruction can mean.
    #[test]
    fn an_exact_member_tied_with_a_whole_second_one_is_not_rounded() {
        let listed = read_pairs(
            &[("retry-after", "2, 2.0"), ("retry-after-ms", "1500")],
            NOW,
        );
        assert_eq!(listed, secs(2), "2.0 is exact");
        let lines = read_pairs(
            &[
                ("retry-after", "2s"),
                ("retry-after", "2"),
                ("retry-after-ms", "1500"),
            ],
            NOW,
        );
        assert_eq!(lines, secs(2), "a Go duration is exact");
    }

    proptest::proptest! {
        /// A line without a comma is read whole, without `members`: the same as splitting it.
        #[test]
        fn a_line_read_whole_reads_as_its_members(line in "[0-9.,a-zA-Z: \t]{0,30}") {
            let line = line.trim_ascii();
            let clock = ResponseClock::read(&Fields::new(&HeaderMap::new()), UNIX_EPOCH);
            let read = |member: &str| delay(member, &clock);
            let waits: Vec<_> = members(line)
                .filter_map(read)
                .filter(|(wait, _)| !wait.is_zero())
                .collect();
            let most = waits.iter().map(|(wait, _)| (*wait).min(LONGEST)).max();
            let least = waits
                .iter()
                .map(|(wait, rounded)| wait.saturating_sub(*rounded).min(LONGEST))
                .max();
            let split = most.zip(least).map(|(most, least)| Said { most, least });
            proptest::prop_assert_eq!(largest(std::iter::once(line), read), split);
        }
    }

    #[test]
    fn whitespace_around_the_value_is_trimmed() {
        assert_eq!(retry_after(" \t42 "), secs(42));
    }
}
