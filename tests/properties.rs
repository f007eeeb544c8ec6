//! Properties of the header parser over generated input: no input panics, well-formed values
//! read back as written, and no figure is beyond what the headers said.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::{HeaderMap, HeaderName, HeaderValue};
use proptest::prelude::*;
use tower_retry_after::RateLimitInfo;

const NOW: u64 = 1_700_000_000;
/// The longest wait or countdown the parser reports (2^31 s).
const LONGEST: Duration = Duration::from_secs(1 << 31);

const NAMES: &[&str] = &[
    "retry-after",
    "retry-after-ms",
    "date",
    "age",
    "ratelimit",
    "ratelimit-policy",
    "ratelimit-limit",
    "ratelimit-remaining",
    "ratelimit-reset",
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "x-ratelimit-reset-after",
    "x-ratelimit-used",
    "x-rate-limit-limit",
    "x-rate-limit-remaining",
    "x-rate-limit-reset",
];

fn at(seconds: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(seconds)
}

fn read(fields: &[(&str, String)]) -> RateLimitInfo {
    let mut headers = HeaderMap::new();
    headers.insert("date", httpdate::fmt_http_date(at(NOW)).parse().unwrap());
    for (name, value) in fields {
        headers.append(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    RateLimitInfo::from_headers(&headers, at(NOW))
}

/// Bytes a header value may hold (visible ASCII, space, tab, obs-text), biased towards the
/// characters rate-limit headers are made of.
fn value_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => prop::sample::select(b"0123456789,;=.:\"- rtqwlimresGMTMonNov".to_vec()),
        1 => 0x20u8..0x7f,
        1 => 0x80u8..=0xff,
        1 => Just(b'\t'),
    ];
    prop::collection::vec(byte, 0..40)
}

/// A generated response: any of the rate-limit header names, any value bytes.
fn header_fields() -> impl Strategy<Value = Vec<(&'static str, Vec<u8>)>> {
    prop::collection::vec((prop::sample::select(NAMES), value_bytes()), 0..8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn no_input_panics_and_every_figure_is_bounded(
        fields in header_fields(),
        received in 0u64..4_000_000_000,
    ) {
        let mut headers = HeaderMap::new();
        for (name, value) in &fields {
            headers.append(*name, HeaderValue::from_bytes(value).unwrap());
        }
        let info = RateLimitInfo::from_headers(&headers, at(received));
        if let Some(wait) = info.retry_after() {
            prop_assert!(!wait.is_zero() && wait <= LONGEST);
        }
        for meter in info.meters() {
            if let Some(reset) = meter.reset_in() {
                prop_assert!(!reset.is_zero() && reset <= LONGEST);
            }
        }
    }

    #[test]
    fn delay_seconds_round_trip(seconds in 1u64..(1 << 31)) {
        let info = read(&[("retry-after", seconds.to_string())]);
        prop_assert_eq!(info.retry_after(), Some(Duration::from_secs(seconds)));
    }

    #[test]
    fn decimal_seconds_round_trip(seconds in 0u64..100_000, millis in 1u32..1000) {
        let info = read(&[("retry-after", format!("{seconds}.{millis:03}"))]);
        let expected = Duration::from_secs(seconds) + Duration::from_millis(u64::from(millis));
        prop_assert_eq!(info.retry_after(), Some(expected));
    }

    #[test]
    fn retry_after_ms_round_trips(millis in 1u64..10_000_000) {
        let info = read(&[("retry-after-ms", millis.to_string()), ("retry-after", "1".into())]);
        prop_assert_eq!(info.retry_after(), Some(Duration::from_millis(millis)));
    }

    #[test]
    fn http_dates_round_trip_in_all_three_forms(seconds in 1u64..10_000_000, form in 0usize..3) {
        let imf = httpdate::fmt_http_date(at(NOW + seconds));
        let date = httpdate::HttpDate::from(at(NOW + seconds));
        let written = match form {
            0 => imf,
            1 => rfc850(&imf),
            _ => asctime(&date.to_string()),
        };
        let info = read(&[("retry-after", written)]);
        prop_assert_eq!(info.retry_after(), Some(Duration::from_secs(seconds)));
    }

    #[test]
    fn x_ratelimit_figures_round_trip(
        limit in any::<u64>(),
        remaining in any::<u64>(),
        reset in 1u64..1_000_000_000,
    ) {
        let info = read(&[
            ("x-ratelimit-limit", limit.to_string()),
            ("x-ratelimit-remaining", remaining.to_string()),
            ("x-ratelimit-reset", reset.to_string()),
        ]);
        let meter = &info.meters()[0];
        prop_assert_eq!(meter.limit(), Some(limit));
        prop_assert_eq!(meter.remaining(), Some(remaining));
        prop_assert_eq!(meter.reset_in(), Some(Duration::from_secs(reset)));
    }

    #[test]
    fn epoch_resets_round_trip(ahead in 1u64..100_000_000, millis in any::<bool>()) {
        let epoch = NOW + ahead;
        let written = if millis { (epoch * 1000).to_string() } else { epoch.to_string() };
        let info = read(&[("x-rate-limit-reset", written)]);
        prop_assert_eq!(info.meters()[0].reset_in(), Some(Duration::from_secs(ahead)));
    }

    #[test]
    fn named_policies_round_trip(
        name in "[a-z][a-z0-9_-]{0,12}",
        quota in 0i64..=999_999_999_999_999,
        window in 1i64..=999_999_999,
        remaining in 0i64..=999_999_999_999_999,
        reset in 1i64..1_000_000_000,
    ) {
        let info = read(&[
            ("ratelimit-policy", format!("\"{name}\";q={quota};w={window}")),
            ("ratelimit", format!("\"{name}\";r={remaining};t={reset}")),
        ]);
        prop_assert_eq!(info.meters().len(), 1);
        let meter = &info.meters()[0];
        prop_assert_eq!(meter.name(), Some(name.as_str()));
        prop_assert_eq!(meter.limit(), Some(quota as u64));
        prop_assert_eq!(meter.window(), Some(Duration::from_secs(window as u64)));
        prop_assert_eq!(meter.remaining(), Some(remaining as u64));
        prop_assert_eq!(meter.reset_in(), Some(Duration::from_secs(reset as u64)));
    }

    #[test]
    fn the_draft_07_dictionary_round_trips(
        limit in 0i64..=999_999_999_999_999,
        remaining in 0i64..=999_999_999_999_999,
        reset in 1i64..1_000_000_000,
    ) {
        let info = read(&[(
            "ratelimit",
            format!("limit={limit}, remaining={remaining}, reset={reset}"),
        )]);
        let meter = &info.meters()[0];
        prop_assert_eq!(meter.limit(), Some(limit as u64));
        prop_assert_eq!(meter.remaining(), Some(remaining as u64));
        prop_assert_eq!(meter.reset_in(), Some(Duration::from_secs(reset as u64)));
    }

    #[test]
    fn no_figure_is_beyond_what_the_headers_said(
        remainings in prop::collection::vec(any::<u64>(), 1..4),
        resets in prop::collection::vec(1u64..1_000_000_000, 1..4),
        waits in prop::collection::vec(0u64..1_000_000, 1..4),
        age in 0u64..1000,
    ) {
        let mut fields = vec![("age", age.to_string())];
        fields.extend(remainings.iter().map(|r| ("x-ratelimit-remaining", r.to_string())));
        fields.extend(resets.iter().map(|t| ("x-ratelimit-reset", t.to_string())));
        fields.extend(waits.iter().map(|w| ("retry-after", w.to_string())));
        let info = read(&fields);

        let said_wait = waits.iter().copied().max().filter(|&wait| wait > 0);
        prop_assert_eq!(info.retry_after(), said_wait.map(Duration::from_secs));

        let latest = *resets.iter().max().unwrap();
        match info.meters().first() {
            Some(meter) => {
                prop_assert_eq!(meter.remaining(), remainings.iter().copied().min());
                prop_assert_eq!(meter.reset_in(), Some(Duration::from_secs(latest - age)));
            }
            // Only a window the response's age has used up leaves no meter.
            None => prop_assert!(latest <= age),
        }
    }
}

/// `Tue, 14 Nov 2023 22:14:20 GMT` as RFC 850 writes it: `Tuesday, 14-Nov-23 22:14:20 GMT`.
fn rfc850(imf: &str) -> String {
    let day = match &imf[..3] {
        "Mon" => "Monday",
        "Tue" => "Tuesday",
        "Wed" => "Wednesday",
        "Thu" => "Thursday",
        "Fri" => "Friday",
        "Sat" => "Saturday",
        _ => "Sunday",
    };
    format!(
        "{day}, {}-{}-{} {}",
        &imf[5..7],
        &imf[8..11],
        &imf[14..16],
        &imf[17..]
    )
}

/// `Tue, 14 Nov 2023 22:14:20 GMT` as asctime writes it: `Tue Nov 14 22:14:20 2023`.
fn asctime(imf: &str) -> String {
    format!(
        "{} {} {} {} {}",
        &imf[..3],
        &imf[8..11],
        &imf[5..7],
        &imf[17..25],
        &imf[12..16]
    )
}
