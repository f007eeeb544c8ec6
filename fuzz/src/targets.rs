//! The bodies of the fuzz targets, shared by `cargo fuzz` and by the stable test that replays
//! the corpus (`tests/fuzz_corpus.rs` includes this file).
//!
//! An input is a response's header block as text: lines of `Name: value`, split on `\n`. Lines
//! that are not a valid name and value are dropped. Each parser's target keeps only its own
//! family (and `Date` and `Age`, which every time is measured against), so the fuzzer spends its
//! effort on that parser; a family name ending in `*` keeps every name with that prefix (the
//! vendors that name one field per meter); `header_map` keeps everything. The `layer` target (in `layer.rs`)
//! drives the whole layer instead.

mod layer;

use std::time::{Duration, UNIX_EPOCH};

use http::{HeaderMap, HeaderName, HeaderValue};
use tower_retry_after::{RateLimitInfo, Unit};

pub use layer::layer;

/// The receipt time of every input: the vectors' NOW (Tue, 14 Nov 2023 22:13:20 GMT).
const RECEIVED: u64 = 1_700_000_000;
/// The longest wait or countdown the parser may report (2^31 s).
const LONGEST: Duration = Duration::from_secs(1 << 31);

const CLOCK: &[&str] = &["date", "age"];
const RETRY_AFTER: &[&str] = &["retry-after", "retry-after-ms"];
const STRUCTURED: &[&str] = &[
    "ratelimit",
    "ratelimit-policy",
    "ratelimit-limit",
    "ratelimit-remaining",
    "ratelimit-reset",
];
const X_RATELIMIT: &[&str] = &[
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "x-ratelimit-reset-after",
    "x-ratelimit-used",
    "x-rate-limit-limit",
    "x-rate-limit-remaining",
    "x-rate-limit-reset",
    "x-rate-limit-used",
];
/// OpenAI's Go-duration resets (and Azure's spelling of the token reset), and `Retry-After`,
/// which may be a Go duration too.
const DURATIONS: &[&str] = &[
    "x-ratelimit-limit-requests",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-reset-requests",
    "x-ratelimit-limit-tokens",
    "x-ratelimit-remaining-tokens",
    "x-ratelimit-reset-tokens",
    "x-rate-limit-reset-tokens",
    "retry-after",
    "retry-after-ms",
];
/// Anthropic's RFC 3339 resets, `X-RateLimit-Reset`, which may be an ISO 8601 instant, and X's
/// daily caps, whose resets are epoch instants.
const INSTANTS: &[&str] = &[
    "anthropic-ratelimit-*",
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "x-user-limit-24hour-limit",
    "x-user-limit-24hour-remaining",
    "x-user-limit-24hour-reset",
    "x-app-limit-24hour-limit",
    "x-app-limit-24hour-remaining",
    "x-app-limit-24hour-reset",
];
/// Shopify's and Salesforce's `used/limit`, Zendesk's `key=value;` lists and the account meter
/// Zendesk splits over three families, and HubSpot's counts without resets.
const COUNTS: &[&str] = &[
    "x-shopify-shop-api-call-limit",
    "zendesk-ratelimit-*",
    "x-rate-limit",
    "x-rate-limit-limit",
    "x-rate-limit-remaining",
    "x-rate-limit-reset",
    "ratelimit-limit",
    "ratelimit-remaining",
    "ratelimit-reset",
    "retry-after",
    "x-hubspot-ratelimit-*",
    "sforce-limit-info",
];

/// `Retry-After` and `retry-after-ms`. Beyond the invariants: a lone `Retry-After` of plain
/// digits reads back as exactly that many seconds (or nothing, for zero).
pub fn retry_after(data: &[u8]) {
    let headers = decode(data, Some(RETRY_AFTER));
    let info = read(&headers);
    let mut values = headers.get_all("retry-after").iter();
    if let (Some(value), None, false) = (
        values.next(),
        values.next(),
        headers.contains_key("retry-after-ms"),
    ) {
        let text = value.as_bytes().trim_ascii();
        let digits = text.iter().all(u8::is_ascii_digit) && !text.is_empty();
        if digits {
            let seconds: u64 = std::str::from_utf8(text)
                .unwrap()
                .parse()
                .unwrap_or(u64::MAX);
            let expected = Duration::from_secs(seconds).min(LONGEST);
            assert_eq!(info.retry_after(), (seconds > 0).then_some(expected));
        }
    }
}

/// The IETF `RateLimit` fields, every draft shape.
pub fn structured(data: &[u8]) {
    read(&decode(data, Some(STRUCTURED)));
}

/// The `X-RateLimit-*` family.
pub fn x_ratelimit(data: &[u8]) {
    read(&decode(data, Some(X_RATELIMIT)));
}

/// OpenAI's meters and `Retry-After`, where resets and waits are Go durations. Beyond the
/// invariants: a lone token reset in either spelling (`x-ratelimit-reset-tokens`, Azure's
/// `x-rate-limit-reset-tokens`) written in whole units (`90s`, `6m0s`, `1h2m3s`) is the tokens
/// meter's reset, to the second (nothing for zero; no `Age` to take off); Azure's is the wait
/// as well, and so is a lone `Retry-After` in that form.
pub fn vendor_durations(data: &[u8]) {
    let headers = decode(data, Some(DURATIONS));
    let info = read(&headers);
    let spellings = ["x-ratelimit-reset-tokens", "x-rate-limit-reset-tokens"];
    for (spelling, other) in [(spellings[0], spellings[1]), (spellings[1], spellings[0])] {
        let Some(seconds) = lone(&headers, spelling).and_then(go_seconds) else {
            continue;
        };
        if headers.contains_key("age") || headers.contains_key(other) {
            continue;
        }
        let tokens = info
            .meters()
            .iter()
            .find(|meter| meter.name() == Some("tokens"));
        assert_eq!(
            tokens.and_then(|meter| meter.reset_in()),
            countdown(seconds)
        );
        let waits = ["retry-after", "retry-after-ms"];
        if spelling == spellings[1] && !waits.iter().any(|wait| headers.contains_key(*wait)) {
            assert_eq!(info.retry_after(), countdown(seconds));
        }
    }
    if let Some(seconds) = lone(&headers, "retry-after").and_then(go_seconds) {
        if !headers.contains_key("retry-after-ms") && !headers.contains_key(spellings[1]) {
            assert_eq!(info.retry_after(), countdown(seconds));
        }
    }
}

/// Anthropic's meters, `X-RateLimit-Reset` and X's daily caps, where resets are instants (RFC
/// 3339 / ISO 8601, epoch seconds). Beyond the invariants: a lone
/// `anthropic-ratelimit-requests-reset` of the form `YYYY-MM-DDTHH:MM:SSZ` resets the requests
/// meter exactly that long after the `Date` (the receipt without one), and so does a lone
/// `x-user-limit-24hour-reset` of ten digits the user's daily cap; a reset at or before it
/// leaves no reset.
pub fn vendor_instants(data: &[u8]) {
    let headers = decode(data, Some(INSTANTS));
    let info = read(&headers);
    let Some(server_now) = server_now(&headers) else {
        return;
    };
    let anthropic = lone(&headers, "anthropic-ratelimit-requests-reset").and_then(utc_seconds);
    if let Some(at) = anthropic {
        let expected = countdown(at.saturating_sub(u128::from(server_now)));
        match info
            .meters()
            .iter()
            .find(|meter| meter.name() == Some("requests"))
        {
            Some(requests) => assert_eq!(requests.reset_in(), expected),
            // Only the cap on meters per response keeps a reset out.
            None => assert!(expected.is_none() || info.meters().len() >= 8),
        }
    }
    let x = lone(&headers, "x-user-limit-24hour-reset").and_then(epoch_seconds);
    if let Some(at) = x {
        let expected = countdown(at.saturating_sub(u128::from(server_now)));
        let user = info
            .meters()
            .iter()
            .find(|meter| meter.name() == Some("user-24hour"));
        assert_eq!(user.and_then(|meter| meter.reset_in()), expected);
    }
}

/// What the server's clock read at receipt, in seconds since the epoch, where the block says it
/// plainly: its one `Date` in IMF-fixdate with no `Age`, or the receipt without a `Date`.
fn server_now(headers: &HeaderMap) -> Option<u64> {
    let mut dates = headers.get_all("date").iter();
    match (dates.next(), dates.next()) {
        (None, _) => Some(RECEIVED),
        (Some(date), None) if !headers.contains_key("age") => {
            // IMF-fixdate only (`Tue, 14 Nov 2023 22:13:20 GMT`): the obsolete forms leave
            // the century of a two-digit year to each parser.
            let date = date.to_str().ok().map(str::trim_ascii).filter(|date| {
                date.len() == 29 && date.as_bytes()[3] == b',' && date.ends_with(" GMT")
            })?;
            let date = httpdate::parse_http_date(date).ok()?;
            Some(date.duration_since(UNIX_EPOCH).unwrap().as_secs())
        }
        _ => None,
    }
}

/// Shopify's bucket, Zendesk's meters and the account meter, HubSpot's and Salesforce's
/// meters. Beyond the invariants: a lone Shopify `used/limit` with used at most the limit is a
/// meter of that limit with the difference left (without `X-Rate-Limit`, whose split meter
/// Zendesk's reader joins); so is a lone `Sforce-Limit-Info: api-usage=used/limit`, over a day;
/// and a HubSpot meter is given a reset only where it says nothing is left.
pub fn vendor_counts(data: &[u8]) {
    let headers = decode(data, Some(COUNTS));
    let info = read(&headers);
    let shopify = lone(&headers, "x-shopify-shop-api-call-limit").and_then(used_of);
    if let Some((used, limit)) = shopify {
        if used <= limit && !headers.contains_key("x-rate-limit") {
            let bucket = info.meters().iter().find(|meter| {
                meter.limit() == Some(limit) && meter.remaining() == Some(limit - used)
            });
            assert!(bucket.is_some(), "{used}/{limit}: {:?}", info.meters());
        }
    }
    // A Zendesk endpoint may be called anything, a HubSpot or Salesforce meter's name too.
    if headers
        .keys()
        .any(|name| name.as_str().starts_with("zendesk-ratelimit-"))
    {
        return;
    }
    let salesforce = lone(&headers, "sforce-limit-info")
        .and_then(|line| line.strip_prefix(b"api-usage="))
        .and_then(used_of);
    if let Some((used, limit)) = salesforce {
        let usage = info
            .meters()
            .iter()
            .find(|meter| meter.name() == Some("api-usage"))
            .expect("the api-usage meter");
        assert_eq!(usage.limit(), Some(limit));
        assert_eq!(usage.remaining(), Some(limit.saturating_sub(used)));
        assert_eq!(usage.window(), Some(Duration::from_secs(86_400)));
    }
    for hubspot in ["burst", "secondly", "daily"] {
        let meter = info
            .meters()
            .iter()
            .find(|meter| meter.name() == Some(hubspot));
        if let Some(meter) = meter.filter(|meter| meter.reset_in().is_some()) {
            assert!(meter.is_exhausted(), "{meter:?}");
        }
    }
}

/// A whole header block, any names.
pub fn header_map(data: &[u8]) {
    read(&decode(data, None));
}

/// The header block an input describes; with `family`, only those names (and the clock's).
fn decode(data: &[u8], family: Option<&[&str]>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for line in data.split(|&byte| byte == b'\n') {
        let Some(colon) = line.iter().position(|&byte| byte == b':') else {
            continue;
        };
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(line[..colon].trim_ascii()),
            HeaderValue::from_bytes(&line[colon + 1..]),
        ) else {
            continue;
        };
        let wanted = family.is_none_or(|family| {
            CLOCK.contains(&name.as_str())
                || family.iter().any(|wanted| match wanted.strip_suffix('*') {
                    Some(prefix) => name.as_str().starts_with(prefix),
                    None => name.as_str() == *wanted,
                })
        });
        if wanted {
            headers.append(name, value);
        }
    }
    headers
}

/// The one line of a field, trimmed; `None` if the field is absent or repeated.
fn lone<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a [u8]> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (Some(value), None) => Some(value.as_bytes().trim_ascii()),
        _ => None,
    }
}

/// A Go duration in whole hours, minutes and seconds (`90s`, `6m0s`, `1h2m3s`), in seconds.
fn go_seconds(text: &[u8]) -> Option<u128> {
    let mut seconds: u128 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.iter().take_while(|byte| byte.is_ascii_digit()).count();
        let unit = match rest.get(digits)? {
            b'h' => 3_600,
            b'm' => 60,
            b's' => 1,
            _ => return None,
        };
        if digits == 0
            || rest
                .get(digits + 1)
                .is_some_and(|byte| !byte.is_ascii_digit())
        {
            return None;
        }
        let number = rest[..digits].iter().fold(0u128, |sum, digit| {
            sum.saturating_mul(10)
                .saturating_add(u128::from(digit - b'0'))
        });
        seconds = seconds.saturating_add(number.saturating_mul(unit));
        rest = &rest[digits + 1..];
    }
    (!text.is_empty()).then_some(seconds)
}

/// `YYYY-MM-DDTHH:MM:SSZ` from 1970 on, in seconds since the epoch; a leap second is the
/// second after. Computed apart from the crate's calendar (days from the civil date).
fn utc_seconds(text: &[u8]) -> Option<u128> {
    let shape = b"dddd-dd-ddTdd:dd:ddZ";
    let fits = text.len() == shape.len()
        && text.iter().zip(shape).all(|(byte, want)| match want {
            b'd' => byte.is_ascii_digit(),
            _ => byte == want,
        });
    if !fits {
        return None;
    }
    let number = |at: usize, len: usize| {
        text[at..at + len]
            .iter()
            .fold(0u128, |sum, digit| sum * 10 + u128::from(digit - b'0'))
    };
    let (year, month, day) = (number(0, 4), number(5, 2), number(8, 2));
    let (hour, minute, second) = (number(11, 2), number(14, 2), number(17, 2));
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    let valid = year >= 1970
        && (1..=12).contains(&month)
        && (1..=month_days).contains(&day)
        && hour < 24
        && minute < 60
        && second <= 60;
    if !valid {
        return None;
    }
    // Days from 1970-01-01 to the civil date (H. Hinnant's days_from_civil), years from March.
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let year_of_era = y - era * 400;
    let day_of_year = (153 * m + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    Some(days * 86_400 + hour * 3_600 + minute * 60 + second)
}

/// Ten digits, as an epoch second since 2001 is written, in seconds since the epoch.
fn epoch_seconds(text: &[u8]) -> Option<u128> {
    let digits = text.len() == 10 && text.iter().all(u8::is_ascii_digit) && text[0] != b'0';
    digits.then(|| {
        text.iter()
            .fold(0u128, |sum, digit| sum * 10 + u128::from(digit - b'0'))
    })
}

/// `used/limit`, both plain digits that fit a `u64`.
fn used_of(text: &[u8]) -> Option<(u64, u64)> {
    let text = std::str::from_utf8(text).ok()?;
    let (used, limit) = text.split_once('/')?;
    let count = |text: &str| {
        let digits = !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit());
        digits.then(|| text.parse().ok()).flatten()
    };
    Some((count(used)?, count(limit)?))
}

/// What the parser reports for a countdown of this many seconds: saturated at [`LONGEST`],
/// nothing for zero.
fn countdown(seconds: u128) -> Option<Duration> {
    let seconds = u64::try_from(seconds).unwrap_or(u64::MAX);
    (seconds > 0).then(|| Duration::from_secs(seconds).min(LONGEST))
}

/// Whether the block says some quota is spent: a `0` in a rate-limit value, a `used/limit`, or
/// a `-used` count (the limit less what is used can be zero).
fn says_zero(headers: &HeaderMap) -> bool {
    headers.iter().any(|(name, value)| {
        !CLOCK.contains(&name.as_str())
            && (value
                .as_bytes()
                .iter()
                .any(|byte| matches!(byte, b'0' | b'/'))
                || name.as_str().ends_with("-used"))
    })
}

/// Reads the headers and checks what holds for every input.
fn read(headers: &HeaderMap) -> RateLimitInfo {
    let info = RateLimitInfo::from_headers(headers, UNIX_EPOCH + Duration::from_secs(RECEIVED));
    if let Some(wait) = info.retry_after() {
        assert!(!wait.is_zero() && wait <= LONGEST, "{wait:?}");
    }
    for meter in info.meters() {
        let known = [
            meter.limit().is_some(),
            meter.remaining().is_some(),
            meter.reset_in().is_some(),
            meter.window().is_some(),
        ];
        assert!(known.contains(&true), "a meter with no figure: {meter:?}");
        if let Some(reset) = meter.reset_in() {
            assert!(!reset.is_zero() && reset <= LONGEST, "{meter:?}");
        }
        if let Some(window) = meter.window() {
            assert!(!window.is_zero(), "{meter:?}");
        }
        // Unknown is never zero: only a server that said so makes a meter exhausted.
        assert!(!meter.is_exhausted() || says_zero(headers), "{meter:?}");
    }
    if let Some(binding) = info.binding_meter() {
        // The lowest count of its kind: the spent meters if any; else the meters of requests,
        // whose counts are comparable with each other and not with tokens'; else the rest.
        let counted: Vec<_> = info
            .meters()
            .iter()
            .filter(|meter| meter.remaining().is_some())
            .collect();
        let spent = counted.iter().any(|meter| meter.is_exhausted());
        let of_requests = counted.iter().any(|meter| meter.unit() == Unit::Requests);
        let lowest = counted
            .iter()
            .filter(|meter| !spent || meter.is_exhausted())
            .filter(|meter| spent || !of_requests || meter.unit() == Unit::Requests)
            .filter_map(|meter| meter.remaining())
            .min();
        assert_eq!(binding.remaining(), lowest, "{binding:?} of {counted:?}");
        assert_eq!(binding.is_exhausted(), spent, "{binding:?}");
    }
    info
}
