//! The response's own clock, `Date` and `Age`, and the resets measured against it.
//!
//! Rate-limit headers carry two kinds of time:
//! - a countdown ("reset in 30 s"), started when the server generated the response. It is
//!   measured from the receipt, and shortened only by an explicit `Age` (a cached response,
//!   RFC 9111 §5.1): forgetting that holds a stale countdown up as fresh. A `Date` behind the
//!   receipt is not age: it is `Date`'s one-second resolution, the transit, or skew between
//!   the clocks, and subtracting it would retry early whenever the client's clock runs ahead.
//! - an instant (an epoch timestamp, an HTTP-date). It is measured against the server's own
//!   clock, `Date` plus `Age`, never the client's, so a client clock that is off does not move
//!   it. Only without a `Date` does the local clock stand in (for a meter's reset, never
//!   ahead of what earlier responses showed of the server's clock).
//!
//! Earlier responses on the same key bound the server's clock more tightly than one `Date`
//! (see `gate::time::ServerClock`), but that bound assumes one server clock; a response whose
//! `Date` lags it (another backend behind the same host, a cache without `Age`) has a clock of
//! its own. So an instruction (`Retry-After`'s date) is read against its own response's `Date`
//! alone, and a meter's reset is tightened by the bound only within `Date`'s resolution.

use std::cell::Cell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::HeaderValue;

use super::field::{Fields, Name, members, text};
use super::number::{Decimal, LONGEST, parse_decimal};

/// From this value on, a reset number is an instant in seconds since the Unix epoch (2001-09-09),
/// not a countdown: no window lasts 31 years, and servers send both forms under every name.
const EPOCH_SECONDS_FROM: u64 = 1_000_000_000;
/// From this value on (13 digits), an epoch instant is in milliseconds.
const EPOCH_MILLIS_FROM: u64 = 1_000_000_000_000;
/// A `Date` names whole seconds: when the server wrote it, its clock read at most this much
/// past it.
const DATE_RESOLUTION: Duration = Duration::from_secs(1);

/// When a rate-limit window resets, as the header wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reset {
    /// A countdown started when the server generated the response.
    In(Duration),
    /// An instant on the server's clock.
    At(SystemTime),
}

/// The second on the server's clock (since the Unix epoch) a reset written as `value` names,
/// where it names one (an epoch second): the window it ends may end up to a second before it.
pub(crate) fn epoch_second(value: Decimal) -> Option<u64> {
    (EPOCH_SECONDS_FROM..EPOCH_MILLIS_FROM)
        .contains(&value.whole)
        .then_some(value.whole)
}

/// The second on the server's clock (since the Unix epoch) an instant written as a date
/// falls in.
pub(crate) fn second_of(at: SystemTime) -> Option<u64> {
    at.duration_since(UNIX_EPOCH)
        .ok()
        .map(|since| since.as_secs())
}

impl Reset {
    /// A reset written as a number: a countdown in seconds below [`EPOCH_SECONDS_FROM`], an
    /// epoch instant above it.
    pub(crate) fn from_number(value: Decimal) -> Self {
        let since_epoch = if value.whole >= EPOCH_MILLIS_FROM {
            value.millis()
        } else if value.whole >= EPOCH_SECONDS_FROM {
            value.seconds()
        } else {
            return Reset::In(value.seconds());
        };
        // Where `SystemTime` is narrower than the value (Windows), it is further away than any
        // countdown the parser reports anyway.
        match UNIX_EPOCH.checked_add(since_epoch) {
            Some(at) => Reset::At(at),
            None => Reset::In(LONGEST),
        }
    }
}

/// A response's clock: when it was received, what its `Date` and `Age` say, and what earlier
/// responses said of the server's clock. A [`ReadHeaders`](super::ReadHeaders) measures the
/// times it reads against it, so that none is early.
///
/// # Example
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use tower_retry_after::headers::{Figures, Found, ResponseClock};
///
/// fn read(_: &http::HeaderMap, clock: &ResponseClock, found: &mut Found<'_>) {
///     let reset = UNIX_EPOCH + Duration::from_secs(1_700_000_060);
///     found.meter(Figures::new().remaining(0).reset_in(clock.until(reset)));
/// }
/// # let _ = read;
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ResponseClock {
    received: SystemTime,
    date: Option<SystemTime>,
    age: Duration,
    /// What the server's clock read at least at receipt, known from earlier responses.
    floor: Option<SystemTime>,
}

impl ResponseClock {
    /// Reads `Date` (the earliest of the lines that are HTTP-dates: read against a later one,
    /// a reset would come early) and `Age` (the first member of the first line, as RFC 9111
    /// §5.1 says; anything but digits counts as no `Age`).
    pub(crate) fn read(fields: &Fields<'_>, received: SystemTime) -> Self {
        let date = fields.raw_lines(Name::Date).filter_map(parse_date).min();
        let age = fields
            .lines(Name::Age)
            .next()
            .and_then(|line| members(line).next())
            .filter(|member| member.bytes().all(|byte| byte.is_ascii_digit()))
            .and_then(parse_decimal)
            .map_or(Duration::ZERO, |age| age.seconds().min(LONGEST));
        ResponseClock {
            received,
            date,
            age,
            floor: None,
        }
    }

    /// This clock, knowing that the server's clock read at least `floor` at receipt: a
    /// `Date` has a resolution of a second, and earlier responses on the same server bound
    /// its clock more tightly (see `gate::time::ServerClock`). Only a meter's reset is read
    /// against it, and only within that second (see [`until`](Self::until)).
    pub(crate) fn with_floor(self, floor: Option<SystemTime>) -> Self {
        ResponseClock { floor, ..self }
    }

    /// What the server's clock read when it wrote the response: `Date` plus `Age`.
    pub(crate) fn server_date(&self) -> Option<SystemTime> {
        self.date?.checked_add(self.age)
    }

    /// How long after receipt the server's clock reaches `at`, a meter's reset (an epoch
    /// timestamp, an RFC 3339 instant): zero if it already has. It is read against the
    /// server's clock, never the client's alone: `Date` plus `Age`, and, where earlier
    /// responses on the same key bound that clock later, their bound, but never more than
    /// `Date`'s resolution (a second) past `Date` plus `Age`: a bound further ahead is another
    /// server's clock, and read against it the reset would come early. Without a `Date`, the
    /// time of receipt stands in, or that bound where it is earlier.
    ///
    /// For the end of an instruction, use
    /// [`instructed_wait_until`](Self::instructed_wait_until).
    pub fn until(&self, at: SystemTime) -> Duration {
        let own = self.own_clock();
        let server_now = match (self.date, self.floor) {
            (Some(_), Some(floor)) => own.map(|own| {
                let latest = own.checked_add(DATE_RESOLUTION).unwrap_or(own);
                floor.clamp(own, latest)
            }),
            // Without a `Date`, the receipt stands in, but never ahead of what earlier
            // responses showed of the server's clock: a client clock that runs ahead would
            // read the reset early.
            (None, Some(floor)) => own.map(|own| own.min(floor)),
            _ => own,
        };
        time_left(server_now, at)
    }

    /// How long after receipt the server asked the client to wait when it named the end of
    /// the wait as an instant (`Retry-After`'s HTTP-date): zero if it has passed. It is read
    /// against this response's own clock, `Date` plus `Age` (without a `Date`, the time of
    /// receipt), never against what earlier responses said of the server's clock: an
    /// instruction is never read shorter than its own response says.
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use tower_retry_after::headers::{Found, ResponseClock};
    ///
    /// // An API that names the end of a refusal as `x-retry-at: <epoch seconds>`.
    /// fn retry_at(headers: &http::HeaderMap, clock: &ResponseClock, found: &mut Found<'_>) {
    ///     let seconds = headers.get("x-retry-at").and_then(|value| value.to_str().ok());
    ///     if let Some(seconds) = seconds.and_then(|text| text.parse().ok()) {
    ///         let at = UNIX_EPOCH + Duration::from_secs(seconds);
    ///         found.retry_after(clock.instructed_wait_until(at));
    ///     }
    /// }
    /// # let _ = retry_at;
    /// ```
    pub fn instructed_wait_until(&self, at: SystemTime) -> Duration {
        time_left(self.own_clock(), at)
    }

    /// The server's clock at receipt as this response alone says: `Date` plus `Age`, or the
    /// time of receipt without a `Date`; `None` where `Date` plus `Age` overflows.
    fn own_clock(&self) -> Option<SystemTime> {
        match self.date {
            Some(_) => self.server_date(),
            None => Some(self.received),
        }
    }

    /// What is left at receipt of a countdown the server started when it wrote the response:
    /// zero if nothing is. Only a cache's `Age` is taken off: never early, whatever the clocks
    /// say.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tower_retry_after::headers::{Figures, Found, ResponseClock};
    ///
    /// fn read(_: &http::HeaderMap, clock: &ResponseClock, found: &mut Found<'_>) {
    ///     let reset = clock.countdown(Duration::from_secs(30));
    ///     found.meter(Figures::new().remaining(0).reset_in(reset));
    /// }
    /// # let _ = read;
    /// ```
    pub fn countdown(&self, started_at: Duration) -> Duration {
        started_at.min(LONGEST).saturating_sub(self.age)
    }

    /// A reset as the time left at receipt: zero if it has already passed.
    pub(crate) fn reset(&self, reset: Reset) -> Duration {
        match reset {
            Reset::In(countdown) => self.countdown(countdown),
            Reset::At(at) => self.until(at),
        }
    }
}

/// How long after `now` the instant `at` comes: zero if it has come, or if `now` is `None`
/// (a `Date` plus `Age` beyond what `SystemTime` holds, which every instant precedes).
fn time_left(now: Option<SystemTime>, at: SystemTime) -> Duration {
    now.and_then(|now| at.duration_since(now).ok())
        .map_or(Duration::ZERO, |left| left.min(LONGEST))
}

/// A `Date` line as [`parse_http_date`] reads it, remembering the last 29-byte line this
/// thread read (an IMF-fixdate is 29 bytes): a server's `Date` changes once a second, and every
/// response within that second carries the same line. Keyed by the line's exact bytes, the
/// memo can never answer for another line, and a repeat is read without even checking its
/// bytes again; held per thread, it needs no lock.
fn parse_date(line: &HeaderValue) -> Option<SystemTime> {
    thread_local! {
        static LAST: Cell<Option<([u8; 29], SystemTime)>> = const { Cell::new(None) };
    }
    let key = <[u8; 29]>::try_from(line.as_bytes()).ok();
    if let (Some(key), Some((last, at))) = (key, LAST.get()) {
        if last == key {
            return Some(at);
        }
    }
    let at = parse_http_date(text(line)?)?;
    if let Some(key) = key {
        LAST.set(Some((key, at)));
    }
    Some(at)
}

/// An HTTP-date in any of its three forms (RFC 9110 §5.6.7), with `UTC` read as `GMT`.
///
/// Some servers (X's API, Okta) write `UTC` where the grammar has `GMT`; RFC 9110 §5.6.7 lets
/// a recipient read such a date leniently, and it names the same instant. Refused, it would be
/// no `Date` at all, and every instant would be read against the client's clock instead. No
/// other zone is read: `PST` or `+0100` would need an offset the grammar has no place for.
pub(crate) fn parse_http_date(text: &str) -> Option<SystemTime> {
    imf_fixdate(text).or_else(|| match text.strip_suffix(" UTC") {
        // An obsolete form with `UTC`: rare enough to pay for the copy.
        Some(before_zone) => httpdate::parse_http_date(&format!("{before_zone} GMT")).ok(),
        None => httpdate::parse_http_date(text).ok(),
    })
}

/// The form servers send (`Sun, 06 Nov 1994 08:49:37 GMT`, or `UTC`), read without
/// `httpdate`'s round trip through a calendar: `Date` is on every response, so this is a hot
/// path. Anything it does not recognise falls to `httpdate`, which reads the obsolete forms too.
fn imf_fixdate(text: &str) -> Option<SystemTime> {
    let bytes = text.as_bytes();
    if bytes.len() != 29 || &bytes[3..5] != b", " || !matches!(&bytes[25..], b" GMT" | b" UTC") {
        return None;
    }
    let separators = [(7, b' '), (11, b' '), (16, b' '), (19, b':'), (22, b':')];
    if separators.iter().any(|&(at, byte)| bytes[at] != byte) {
        return None;
    }
    let number = |range: std::ops::Range<usize>| {
        bytes[range].iter().try_fold(0u64, |sum, &digit| {
            digit
                .is_ascii_digit()
                .then(|| sum * 10 + u64::from(digit - b'0'))
        })
    };
    let (day, year) = (number(5..7)?, number(12..16)?);
    let (hour, minute, second) = (number(17..19)?, number(20..22)?, number(23..25)?);
    let month = match &bytes[8..11] {
        b"Jan" => 1,
        b"Feb" => 2,
        b"Mar" => 3,
        b"Apr" => 4,
        b"May" => 5,
        b"Jun" => 6,
        b"Jul" => 7,
        b"Aug" => 8,
        b"Sep" => 9,
        b"Oct" => 10,
        b"Nov" => 11,
        b"Dec" => 12,
        _ => return None,
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if !(1970..=9999).contains(&year)
        || !(1..=month_days).contains(&day)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let days = days_since_epoch(year, month, day);
    const WEEKDAYS: [&[u8]; 7] = [b"Thu", b"Fri", b"Sat", b"Sun", b"Mon", b"Tue", b"Wed"];
    if WEEKDAYS[(days % 7) as usize] != &bytes[..3] {
        return None;
    }
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second;
    Some(UNIX_EPOCH + Duration::from_secs(seconds))
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (from 1970 on).
pub(super) fn days_since_epoch(year: u64, month: u64, day: u64) -> u64 {
    // Counted from 1 March 0000, so the leap day falls at the end of a year.
    let (year, month) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era_days = year * 365 + year / 4 - year / 100 + year / 400;
    let year_days = (153 * month + 2) / 5 + day - 1;
    era_days + year_days - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderMap, HeaderValue};
    use proptest::prelude::*;

    #[test]
    fn a_reset_names_a_second_only_where_it_is_one_on_the_servers_clock() {
        let number = |text| parse_decimal(text).unwrap();
        assert_eq!(epoch_second(number("1700000060")), Some(1_700_000_060));
        assert_eq!(epoch_second(number("1700000060.5")), Some(1_700_000_060));
        // A countdown, and milliseconds since the epoch, name no second.
        assert_eq!(epoch_second(number("60")), None);
        assert_eq!(epoch_second(number("1700000060000")), None);
        let instant = UNIX_EPOCH + Duration::from_millis(1_700_000_060_900);
        assert_eq!(second_of(instant), Some(1_700_000_060));
        // Before the epoch a date names no second this crate can carry.
        assert_eq!(second_of(UNIX_EPOCH - Duration::from_secs(1)), None);
    }

    const NOW: u64 = 1_700_000_000;

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds)
    }

    fn clock(pairs: &[(&'static str, &'static str)], received: u64) -> ResponseClock {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        ResponseClock::read(&Fields::new(&headers), at(received))
    }

    fn decimal(whole: u64) -> Decimal {
        Decimal { whole, nanos: 0 }
    }

    #[test]
    fn numbers_below_a_billion_are_countdowns() {
        assert_eq!(Reset::from_number(decimal(0)), Reset::In(Duration::ZERO));
        assert_eq!(
            Reset::from_number(decimal(999_999_999)),
            Reset::In(Duration::from_secs(999_999_999))
        );
    }

    #[test]
    fn numbers_from_a_billion_are_epoch_seconds_and_from_13_digits_epoch_millis() {
        assert_eq!(
            Reset::from_number(decimal(1_000_000_000)),
            Reset::At(at(1_000_000_000))
        );
        assert_eq!(
            Reset::from_number(decimal(999_999_999_999)),
            Reset::At(at(999_999_999_999))
        );
        assert_eq!(
            Reset::from_number(decimal(1_700_000_060_000)),
            Reset::At(at(1_700_000_060))
        );
    }

    #[test]
    fn an_absurdly_far_epoch_is_the_longest_countdown() {
        let fresh = clock(&[("date", "Tue, 14 Nov 2023 22:13:20 GMT")], NOW);
        let far = Reset::from_number(decimal(u64::MAX));
        assert_eq!(fresh.reset(far), LONGEST);
    }

    #[test]
    fn instants_are_read_against_date_not_the_local_clock() {
        let skewed = clock(&[("date", "Tue, 14 Nov 2023 22:13:20 GMT")], NOW + 5);
        assert_eq!(skewed.until(at(NOW + 60)), Duration::from_secs(60));
        let without_date = clock(&[], NOW + 5);
        assert_eq!(without_date.until(at(NOW + 60)), Duration::from_secs(55));
    }

    #[test]
    fn instants_subtract_age_from_the_server_clock() {
        let cached = clock(
            &[("date", "Tue, 14 Nov 2023 22:13:20 GMT"), ("age", "30")],
            NOW,
        );
        assert_eq!(cached.until(at(NOW + 60)), Duration::from_secs(30));
    }

    /// A response dated NOW and received at NOW, on a key whose earlier responses bound the
    /// server's clock `ahead` of that `Date`.
    fn floored(ahead: Duration) -> ResponseClock {
        clock(&[("date", "Tue, 14 Nov 2023 22:13:20 GMT")], NOW).with_floor(Some(at(NOW) + ahead))
    }

    #[test]
    fn a_floor_within_dates_second_tightens_a_meters_reset_by_all_of_it() {
        let within = floored(Duration::from_millis(400));
        assert_eq!(within.until(at(NOW + 60)), Duration::from_millis(59_600));
    }

    #[test]
    fn a_floor_beyond_dates_second_tightens_a_meters_reset_by_a_second_only() {
        let ahead = floored(Duration::from_secs(5));
        assert_eq!(ahead.until(at(NOW + 60)), Duration::from_secs(59));
    }

    #[test]
    fn a_floor_behind_date_leaves_a_meters_reset_to_date() {
        let behind =
            clock(&[("date", "Tue, 14 Nov 2023 22:13:20 GMT")], NOW).with_floor(Some(at(NOW - 5)));
        assert_eq!(behind.until(at(NOW + 60)), Duration::from_secs(60));
    }

    #[test]
    fn an_instruction_is_read_against_its_own_date_whatever_the_floor() {
        for ahead in [Duration::from_millis(400), Duration::from_secs(5)] {
            let floored = floored(ahead);
            assert_eq!(
                floored.instructed_wait_until(at(NOW + 3)),
                Duration::from_secs(3),
                "{ahead:?}"
            );
        }
    }

    #[test]
    fn the_floors_second_counts_from_date_plus_age() {
        let cached = clock(
            &[("date", "Tue, 14 Nov 2023 22:13:20 GMT"), ("age", "10")],
            NOW,
        )
        .with_floor(Some(at(NOW + 15)));
        assert_eq!(cached.until(at(NOW + 60)), Duration::from_secs(49));
        assert_eq!(
            cached.instructed_wait_until(at(NOW + 60)),
            Duration::from_secs(50)
        );
    }

    #[test]
    fn without_date_the_receipt_stands_in_and_the_floor_is_not_read() {
        let undated =
            clock(&[], NOW + 5).with_floor(Some(at(NOW + 5) + Duration::from_millis(500)));
        assert_eq!(undated.until(at(NOW + 60)), Duration::from_secs(55));
        assert_eq!(
            undated.instructed_wait_until(at(NOW + 60)),
            Duration::from_secs(55)
        );
    }

    /// Without a `Date`, a meter's reset is read against the receipt, or against the key's
    /// bound of the server's clock where that is earlier: never against the client's clock
    /// alone when it runs ahead.
    #[test]
    fn without_date_a_reset_is_read_against_the_earlier_of_the_receipt_and_the_floor() {
        let ahead = clock(&[], NOW + 5).with_floor(Some(at(NOW)));
        assert_eq!(ahead.until(at(NOW + 60)), Duration::from_secs(60));
    }

    /// Of two `Date` lines, the earlier: read against the later, a reset or a `Retry-After`
    /// date would come early.
    #[test]
    fn of_two_dates_the_earlier_is_the_servers_clock() {
        let both = [
            ("date", "Tue, 14 Nov 2023 22:13:50 GMT"),
            ("date", "Tue, 14 Nov 2023 22:13:20 GMT"),
        ];
        for pairs in [both, [both[1], both[0]]] {
            let dated = clock(&pairs, NOW);
            assert_eq!(dated.until(at(NOW + 60)), Duration::from_secs(60));
            assert_eq!(
                dated.instructed_wait_until(at(NOW + 60)),
                Duration::from_secs(60)
            );
        }
    }

    #[test]
    fn passed_instants_are_zero() {
        let fresh = clock(&[("date", "Tue, 14 Nov 2023 22:13:20 GMT")], NOW);
        assert_eq!(fresh.until(at(NOW - 1)), Duration::ZERO);
        assert_eq!(fresh.until(at(NOW)), Duration::ZERO);
    }

    #[test]
    fn countdowns_lose_the_age_a_cache_reports() {
        let cached = clock(&[("age", "30")], NOW);
        assert_eq!(
            cached.countdown(Duration::from_secs(50)),
            Duration::from_secs(20)
        );
        assert_eq!(cached.countdown(Duration::from_secs(30)), Duration::ZERO);
    }

    #[test]
    fn a_date_behind_the_receipt_does_not_shorten_a_countdown() {
        for date in [
            "Tue, 14 Nov 2023 22:13:10 GMT",
            "Tue, 14 Nov 2023 22:12:20 GMT",
        ] {
            let behind = clock(&[("date", date)], NOW);
            assert_eq!(
                behind.countdown(Duration::from_secs(30)),
                Duration::from_secs(30),
                "{date}"
            );
        }
    }

    #[test]
    fn only_age_shortens_a_countdown_whatever_date_says() {
        let both = clock(
            &[("date", "Tue, 14 Nov 2023 22:12:20 GMT"), ("age", "10")],
            NOW,
        );
        assert_eq!(
            both.countdown(Duration::from_secs(90)),
            Duration::from_secs(80)
        );
    }

    #[test]
    fn age_is_the_first_member_of_the_first_line_and_garbage_is_no_age() {
        assert_eq!(
            clock(&[("age", "10, 20")], NOW).age,
            Duration::from_secs(10)
        );
        assert_eq!(
            clock(&[("age", "10"), ("age", "20")], NOW).age,
            Duration::from_secs(10)
        );
        for garbage in ["-1", "", "abc", "+5", "1e3", "10.5"] {
            assert_eq!(
                clock(&[("age", garbage)], NOW).age,
                Duration::ZERO,
                "{garbage:?}"
            );
        }
        assert_eq!(
            clock(&[("age", "99999999999999999999999")], NOW).age,
            LONGEST
        );
    }

    /// What the memo must answer for a line: the line read afresh.
    fn read_afresh(line: &HeaderValue) -> Option<SystemTime> {
        parse_http_date(text(line)?)
    }

    #[test]
    fn the_remembered_date_answers_only_for_its_own_line() {
        // Each differs from the one before it in one byte only, or in the whitespace around it.
        for line in [
            "Tue, 14 Nov 2023 22:13:20 GMT",
            "Tue, 14 Nov 2023 22:13:20 GMT",
            "Tue, 14 Nov 2023 22:13:21 GMT",
            "Tue, 14 Nov 2023 22:13:20 GMT",
            "Wed, 14 Nov 2023 22:13:20 GMT",
            "Tue, 14 Nov 2023 22:13:20 GMT",
            "Tue, 14 Nov 2023 22:13:20 UTC",
            "Tue, 14 Nov 2023 22:13:20 GMT",
            " Tue, 14 Nov 2023 22:13:20 GM",
            "Tue, 14 Nov 2023 22:13:20 GMT\t",
            "Tuesday, 14-Nov-23 22:13:20 GMT",
            "Tue, 14 Nov 2023 22:13:20 GMT",
        ] {
            let line = HeaderValue::from_static(line);
            assert_eq!(parse_date(&line), read_afresh(&line), "{line:?}");
        }
        let not_text = HeaderValue::from_bytes(b"Tue, 14 Nov 2023 22:13:20 GM\xff").unwrap();
        assert_eq!(parse_date(&not_text), None);
    }

    #[test]
    fn a_date_that_is_not_an_http_date_is_no_date() {
        let bad = clock(
            &[
                ("date", "yesterday"),
                ("date", "Tue, 14 Nov 2023 22:13:20 GMT"),
            ],
            NOW,
        );
        assert_eq!(bad.date, Some(at(NOW)));
        assert_eq!(clock(&[("date", "1700000000")], NOW).date, None);
    }

    #[test]
    fn imf_fixdates_read_as_httpdate_reads_them() {
        for seconds in [
            0,
            68_169_600,
            951_782_400,
            1_700_000_000,
            4_107_542_400,
            253_402_300_799,
        ] {
            let written = httpdate::fmt_http_date(at(seconds));
            assert_eq!(imf_fixdate(&written), Some(at(seconds)), "{written}");
        }
    }

    #[test]
    fn malformed_imf_fixdates_are_left_to_httpdate() {
        for text in [
            "Wed, 14 Nov 2023 22:13:20 GMT",
            "Tue, 31 Nov 2023 22:13:20 GMT",
            "Thu, 29 Feb 2023 22:13:20 GMT",
            "Tue, 29 Feb 2100 22:13:20 GMT",
            "Tue, 14 Nov 2023 24:13:20 GMT",
            "Tue, 14 Nov 1969 22:13:20 GMT",
            "Tue, 14 Nov 2023 22:13:20 PST",
            "Tue, 14 nov 2023 22:13:20 GMT",
            "Tue, 14 Nov 2023 22:13:2x GMT",
            "Tue,14 Nov 2023 22:13:20 GMT ",
            "Tuesday, 14-Nov-23 22:13:20 GMT",
        ] {
            assert_eq!(imf_fixdate(text), None, "{text}");
        }
        assert_eq!(
            parse_http_date("Thu, 29 Feb 2024 22:13:20 GMT"),
            Some(at(1_709_244_800))
        );
        assert_eq!(
            parse_http_date("Tuesday, 14-Nov-23 22:13:20 GMT"),
            Some(at(NOW))
        );
    }

    #[test]
    fn a_date_in_utc_is_read_as_in_gmt() {
        let utc = clock(&[("date", "Tue, 14 Nov 2023 22:13:20 UTC")], NOW + 5);
        assert_eq!(utc.date, Some(at(NOW)));
        assert_eq!(
            imf_fixdate("Tue, 14 Nov 2023 22:13:20 UTC"),
            Some(at(NOW)),
            "on the fast path, without a copy"
        );
        assert_eq!(utc.until(at(NOW + 60)), Duration::from_secs(60));
        assert_eq!(
            parse_http_date("Tuesday, 14-Nov-23 22:13:20 UTC"),
            Some(at(NOW))
        );
    }

    #[test]
    fn a_date_in_any_other_zone_is_no_date() {
        for zone in ["PST", "XYZ", "utc", "UT", "Z", "+0000"] {
            let date = format!("Tue, 14 Nov 2023 22:13:20 {zone}");
            assert_eq!(parse_http_date(&date), None, "{date}");
            let rfc850 = format!("Tuesday, 14-Nov-23 22:13:20 {zone}");
            assert_eq!(parse_http_date(&rfc850), None, "{rfc850}");
            let line = HeaderValue::from_str(&date).unwrap();
            assert_eq!(parse_date(&line), None, "{date}");
        }
    }

    #[test]
    fn a_reset_resolves_by_its_kind() {
        let cached = clock(
            &[("date", "Tue, 14 Nov 2023 22:13:20 GMT"), ("age", "10")],
            NOW,
        );
        assert_eq!(
            cached.reset(Reset::In(Duration::from_secs(60))),
            Duration::from_secs(50)
        );
        assert_eq!(
            cached.reset(Reset::At(at(NOW + 60))),
            Duration::from_secs(50)
        );
    }

    proptest! {
        #[test]
        fn every_imf_fixdate_reads_as_httpdate_reads_it(seconds in 0u64..253_402_300_800) {
            let written = httpdate::fmt_http_date(at(seconds));
            prop_assert_eq!(imf_fixdate(&written), Some(at(seconds)));
        }

        #[test]
        fn a_remembered_date_reads_as_the_parser_reads_it(
            first in 0u64..253_402_300_800,
            second in 0u64..253_402_300_800,
        ) {
            let first = HeaderValue::from_str(&httpdate::fmt_http_date(at(first))).unwrap();
            let second = HeaderValue::from_str(&httpdate::fmt_http_date(at(second))).unwrap();
            for line in [&first, &second, &second, &first] {
                prop_assert_eq!(parse_date(line), read_afresh(line));
            }
        }

        #[test]
        fn every_http_date_in_utc_reads_as_in_gmt(seconds in 0u64..253_402_300_800) {
            let gmt = httpdate::fmt_http_date(at(seconds));
            let utc = gmt.replace(" GMT", " UTC");
            prop_assert_eq!(parse_http_date(&utc), Some(at(seconds)));
        }

        #[test]
        fn what_imf_fixdate_accepts_httpdate_accepts_alike(
            text in "[A-Z][a-z]{2}, [0-3][0-9] [A-Z][a-z]{2} [12][0-9]{3} [0-2][0-9]:[0-6][0-9]:[0-6][0-9] GMT",
        ) {
            let ours = imf_fixdate(&text);
            prop_assert!(ours.is_none() || ours == httpdate::parse_http_date(&text).ok(), "{}", text);
        }
    }

    #[test]
    fn impossible_dates_are_refused_even_with_the_weekday_they_roll_into() {
        for text in [
            // 31 Nov 2023 would be Fri 1 Dec 2023.
            "Fri, 31 Nov 2023 22:13:20 GMT",
            // 2023 is no leap year: 29 Feb would be Wed 1 Mar 2023.
            "Wed, 29 Feb 2023 22:13:20 GMT",
            // 2100 is no leap year (divisible by 100, not by 400): Mon 1 Mar 2100.
            "Mon, 29 Feb 2100 22:13:20 GMT",
            // Minute 60 would be 23:00:20 the same Tuesday.
            "Tue, 14 Nov 2023 22:60:20 GMT",
        ] {
            assert_eq!(imf_fixdate(text), None, "{text}");
            assert_eq!(parse_http_date(text), None, "{text}");
        }
        // The leap days that exist.
        assert_eq!(
            imf_fixdate("Thu, 29 Feb 2024 22:13:20 GMT"),
            Some(at(1_709_244_800))
        );
        assert_eq!(
            imf_fixdate("Tue, 29 Feb 2000 00:00:00 GMT"),
            Some(at(951_782_400))
        );
    }
}
