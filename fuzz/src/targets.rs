//! The bodies of the fuzz targets, shared by `cargo fuzz` and by the stable test that replays
//! the corpus (`tests/fuzz_corpus.rs` includes this file).
//!
//! An input is a response's header block as text: lines of `Name: value`, split on `\n`. Lines
//! that are not a valid name and value are dropped. Each parser's target keeps only its own
//! family (and `Date` and `Age`, which every time is measured against), so the fuzzer spends its
//! effort on that parser; `header_map` keeps everything. The `layer` target (in `layer.rs`)
//! drives the whole layer instead.

mod layer;

use std::time::{Duration, UNIX_EPOCH};

use http::{HeaderMap, HeaderName, HeaderValue};
use tower_retry_after::RateLimitInfo;

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
        let wanted = family
            .is_none_or(|family| family.contains(&name.as_str()) || CLOCK.contains(&name.as_str()));
        if wanted {
            headers.append(name, value);
        }
    }
    headers
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
    }
    if let Some(binding) = info.binding_meter() {
        let lowest = info
            .meters()
            .iter()
            .filter_map(|meter| meter.remaining())
            .min();
        assert_eq!(binding.remaining(), lowest);
    }
    info
}
