//! The fields this crate reads, located in one pass over a response's header names, as text;
//! and the members of a comma-separated line.
//!
//! One pass over the lines a response carries (a dozen, typically) costs less than looking up
//! each name the parsers know, most of which a response does not carry; the map is searched
//! again only for a field with several lines.

use std::borrow::Cow;

use http::{HeaderMap, HeaderValue};

/// Declares [`Name`], a variant for each field with how it is spelt (for a vendor that names
/// one field per meter, the prefix of the names), so that each spelling is written once.
macro_rules! names {
    ($($(#[$doc:meta])* $variant:ident => $text:tt,)*) => {
        /// A header name one of the parsers reads.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum Name {
            $($(#[$doc])* $variant,)*
        }

        const NAMES: usize = [$($text),*].len();

        impl Name {
            /// The field spelt exactly `name`.
            fn exactly(name: &str) -> Option<Name> {
                Some(match name {
                    $($text => Name::$variant,)*
                    _ => return None,
                })
            }

            /// How the field is spelt (for a prefixed field, its prefix).
            fn as_str(self) -> &'static str {
                match self {
                    $(Name::$variant => $text,)*
                }
            }
        }
    };
}

names! {
    Date => "date",
    Age => "age",
    RetryAfter => "retry-after",
    RetryAfterMs => "retry-after-ms",
    RateLimit => "ratelimit",
    RateLimitPolicy => "ratelimit-policy",
    RateLimitLimit => "ratelimit-limit",
    RateLimitRemaining => "ratelimit-remaining",
    RateLimitReset => "ratelimit-reset",
    XRateLimitLimit => "x-ratelimit-limit",
    XRateLimitRemaining => "x-ratelimit-remaining",
    XRateLimitUsed => "x-ratelimit-used",
    XRateLimitReset => "x-ratelimit-reset",
    XRateLimitResetAfter => "x-ratelimit-reset-after",
    XRateDashLimitLimit => "x-rate-limit-limit",
    XRateDashLimitRemaining => "x-rate-limit-remaining",
    XRateDashLimitUsed => "x-rate-limit-used",
    XRateDashLimitReset => "x-rate-limit-reset",
    // Vendors' own fields: each is read by the vendor's file, and only when present.
    XRateLimitResource => "x-ratelimit-resource",
    GitLabRateLimitLabel => "ratelimit-name",
    RateLimitResetTime => "ratelimit-resettime",
    XRateLimitBucket => "x-ratelimit-bucket",
    XRateLimitGlobal => "x-ratelimit-global",
    XRateLimitScope => "x-ratelimit-scope",
    XRateLimitLimitRequests => "x-ratelimit-limit-requests",
    XRateLimitRemainingRequests => "x-ratelimit-remaining-requests",
    XRateLimitResetRequests => "x-ratelimit-reset-requests",
    XRateLimitLimitTokens => "x-ratelimit-limit-tokens",
    XRateLimitRemainingTokens => "x-ratelimit-remaining-tokens",
    XRateLimitResetTokens => "x-ratelimit-reset-tokens",
    /// Every field whose name starts so: the vendor's file reads them all.
    AnthropicRateLimit => ANTHROPIC_PREFIX,
    XShopifyShopApiCallLimit => "x-shopify-shop-api-call-limit",
    BetaRateLimit => "beta-ratelimit",
    BetaRateLimitPolicy => "beta-ratelimit-policy",
    XRateLimitBare => "x-rate-limit",
    /// Every field whose name starts so: the vendor's file reads them all.
    ZendeskRateLimit => ZENDESK_PREFIX,
    StripeRateLimitedReason => "stripe-rate-limited-reason",
    XAmzRetryAfter => "x-amz-retry-after",
    XRateDashLimitResetTokens => "x-rate-limit-reset-tokens",
    XUserLimit24HourLimit => "x-user-limit-24hour-limit",
    XUserLimit24HourRemaining => "x-user-limit-24hour-remaining",
    XUserLimit24HourReset => "x-user-limit-24hour-reset",
    XAppLimit24HourLimit => "x-app-limit-24hour-limit",
    XAppLimit24HourRemaining => "x-app-limit-24hour-remaining",
    XAppLimit24HourReset => "x-app-limit-24hour-reset",
    XHubSpotRateLimitMax => "x-hubspot-ratelimit-max",
    XHubSpotRateLimitRemaining => "x-hubspot-ratelimit-remaining",
    XHubSpotRateLimitIntervalMilliseconds => "x-hubspot-ratelimit-interval-milliseconds",
    XHubSpotRateLimitSecondly => "x-hubspot-ratelimit-secondly",
    XHubSpotRateLimitSecondlyRemaining => "x-hubspot-ratelimit-secondly-remaining",
    XHubSpotRateLimitDaily => "x-hubspot-ratelimit-daily",
    XHubSpotRateLimitDailyRemaining => "x-hubspot-ratelimit-daily-remaining",
    SforceLimitInfo => "sforce-limit-info",
}

/// Fields read by prefix: a vendor that names one field per meter.
const PREFIXED: [(&str, Name); 2] = [
    (ANTHROPIC_PREFIX, Name::AnthropicRateLimit),
    (ZENDESK_PREFIX, Name::ZendeskRateLimit),
];
pub(crate) const ANTHROPIC_PREFIX: &str = "anthropic-ratelimit-";
pub(crate) const ZENDESK_PREFIX: &str = "zendesk-ratelimit-";

// One bit per name in a `u64`: a name past the 64th needs a wider set.
const _: () = assert!(NAMES <= 64);

impl Name {
    const fn bit(self) -> u64 {
        1 << self as u32
    }

    /// One bit for each of `names`, to ask [`Fields::carries_any`] of them at once.
    pub(crate) const fn mask(names: &[Name]) -> u64 {
        let mut bits = 0;
        let mut at = 0;
        while at < names.len() {
            bits |= names[at].bit();
            at += 1;
        }
        bits
    }

    fn of(name: &str) -> Option<Name> {
        // Every field read starts with one of these letters; most a response carries
        // (`content-*`, `cache-control`, `etag`, `vary`) do not, and skip the comparisons.
        if !matches!(
            name.as_bytes().first(),
            Some(b'a' | b'b' | b'd' | b'r' | b's' | b'x' | b'z')
        ) {
            return None;
        }
        Name::exactly(name).or_else(|| Name::prefixed(name))
    }

    /// A field of a vendor that names one field per meter.
    fn prefixed(name: &str) -> Option<Name> {
        PREFIXED
            .iter()
            .find(|(prefix, _)| name.starts_with(prefix))
            .map(|(_, known)| *known)
    }
}

/// A response's header block, with the fields the parsers read located.
pub(crate) struct Fields<'a> {
    headers: &'a HeaderMap,
    /// The first line of each field the response carries.
    first: [Option<&'a HeaderValue>; NAMES],
    /// One bit per field the response carries.
    present: u64,
    /// One bit per field that has more than one line.
    repeated: u64,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(headers: &'a HeaderMap) -> Self {
        // Filled where it stands: built apart, the table of every name was copied into place.
        let mut fields = Fields {
            headers,
            first: [None; NAMES],
            present: 0,
            repeated: 0,
        };
        for (name, value) in headers {
            if let Some(known) = Name::of(name.as_str()) {
                match fields.first[known as usize] {
                    None => fields.first[known as usize] = Some(value),
                    Some(_) => fields.repeated |= known.bit(),
                }
                fields.present |= known.bit();
            }
        }
        fields
    }

    /// Whether the response carries any of these fields.
    pub(crate) fn has_any(&self, names: &[Name]) -> bool {
        self.carries_any(Name::mask(names))
    }

    /// Whether the response carries any of the fields of `mask` (see [`Name::mask`]).
    pub(crate) fn carries_any(&self, mask: u64) -> bool {
        self.present & mask != 0
    }

    /// Whether the response carries this field.
    pub(crate) fn has(&self, name: Name) -> bool {
        self.present & name.bit() != 0
    }

    fn is_repeated(&self, name: Name) -> bool {
        self.repeated & name.bit() != 0
    }

    /// Every line of every field whose name starts with `prefix` (one of the prefixes
    /// [`Name::prefixed`] knows), as the rest of the name and the trimmed line; lines that are
    /// not visible ASCII are skipped, as [`lines`](Self::lines) skips them.
    pub(crate) fn prefixed(
        &self,
        prefix: &'static str,
    ) -> impl Iterator<Item = (&'a str, &'a str)> {
        let carried = PREFIXED
            .iter()
            .any(|(known, name)| *known == prefix && self.has(*name));
        carried
            .then(|| self.headers.iter())
            .into_iter()
            .flatten()
            .filter_map(move |(name, value)| {
                let rest = name.as_str().strip_prefix(prefix)?;
                Some((rest, trim_whitespace(value.to_str().ok()?)))
            })
    }

    /// Every line of the field, in order; the map is searched only for a repeated field.
    fn values(&self, name: Name) -> Values<'a> {
        if self.is_repeated(name) {
            Values::Repeated(self.headers.get_all(name.as_str()).iter())
        } else {
            Values::Single(self.first[name as usize])
        }
    }

    /// Whether the response carries any rate-limit field (beyond `Date` and `Age`).
    pub(crate) fn has_rate_limit_fields(&self) -> bool {
        self.present & !(Name::Date.bit() | Name::Age.bit()) != 0
    }

    /// Each line of the field as text, surrounding whitespace trimmed.
    ///
    /// A line holding bytes other than visible ASCII is skipped: no rate-limit format puts
    /// them in a value, so such a line carries no figure the parser could trust.
    pub(crate) fn lines(&self, name: Name) -> impl Iterator<Item = &'a str> + use<'a> {
        self.values(name).filter_map(text)
    }

    /// Every line of the field as received, for a reader that remembers a line by its bytes;
    /// [`text`] reads one as [`lines`](Self::lines) does.
    pub(crate) fn raw_lines(&self, name: Name) -> impl Iterator<Item = &'a HeaderValue> + use<'a> {
        self.values(name)
    }

    /// Every line of the field joined with `", "`, as RFC 9110 §5.3 combines them; `None` if
    /// no line holds anything, or if a line holds bytes other than visible ASCII (a structured
    /// field with such a line fails as a whole). Empty lines add no member.
    pub(crate) fn combined(&self, name: Name) -> Option<Cow<'a, str>> {
        if !self.is_repeated(name) {
            let line = trim_whitespace(self.first[name as usize]?.to_str().ok()?);
            return (!line.is_empty()).then_some(Cow::Borrowed(line));
        }
        let mut joined: Option<Cow<'a, str>> = None;
        for value in self.values(name) {
            let line = trim_whitespace(value.to_str().ok()?);
            match &mut joined {
                _ if line.is_empty() => {}
                None => joined = Some(Cow::Borrowed(line)),
                Some(field) => {
                    let field = field.to_mut();
                    field.push_str(", ");
                    field.push_str(line);
                }
            }
        }
        joined
    }
}

/// The lines of one field.
enum Values<'a> {
    Single(Option<&'a HeaderValue>),
    Repeated(http::header::ValueIter<'a, HeaderValue>),
}

impl<'a> Iterator for Values<'a> {
    type Item = &'a HeaderValue;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Values::Single(value) => value.take(),
            Values::Repeated(values) => values.next(),
        }
    }
}

/// The members of a comma-separated line, each trimmed.
///
/// An HTTP-date carries a comma of its own (`Tue, 14 Nov 2023 …`): a member that is only a day
/// name is joined with the one after it, so the date stays whole.
pub(crate) fn members(line: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(line);
    std::iter::from_fn(move || {
        let text = rest?;
        let mut end = comma_in(text);
        if let Some(comma) = end {
            if is_day_name(text[..comma].trim()) {
                end = comma_in(&text[comma + 1..]).map(|next| comma + 1 + next);
            }
        }
        let member = match end {
            Some(comma) => {
                rest = Some(&text[comma + 1..]);
                &text[..comma]
            }
            None => {
                rest = None;
                text
            }
        };
        Some(trim_whitespace(member))
    })
}

/// Where the first comma of `text` is. Searched byte by byte: a value is a few bytes long, and
/// `str::find` calls `memchr`, whose setup costs more than that.
fn comma_in(text: &str) -> Option<usize> {
    text.bytes().position(|byte| byte == b',')
}

/// A line as text, surrounding whitespace trimmed; `None` if it holds bytes other than visible
/// ASCII (see [`Fields::lines`]).
pub(crate) fn text(value: &HeaderValue) -> Option<&str> {
    value.to_str().ok().map(trim_whitespace)
}

/// Trims spaces and tabs: the only whitespace a header value can hold.
fn trim_whitespace(text: &str) -> &str {
    text.trim_ascii()
}

/// A day name as HTTP-dates write it: `Tue` (IMF-fixdate) or `Tuesday` (RFC 850).
fn is_day_name(text: &str) -> bool {
    matches!(
        text,
        "Mon"
            | "Tue"
            | "Wed"
            | "Thu"
            | "Fri"
            | "Sat"
            | "Sun"
            | "Monday"
            | "Tuesday"
            | "Wednesday"
            | "Thursday"
            | "Friday"
            | "Saturday"
            | "Sunday"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_split_on_commas_and_trim() {
        let got: Vec<_> = members(" 120 ,30,\t7 ").collect();
        assert_eq!(got, ["120", "30", "7"]);
    }

    #[test]
    fn members_keep_http_dates_whole() {
        let got: Vec<_> = members(
            "Fri, 31 Dec 1999 23:59:59 GMT, 120, Tuesday, 14-Nov-23 22:14:20 GMT, Tue Nov 14 22:14:20 2023",
        )
        .collect();
        assert_eq!(
            got,
            [
                "Fri, 31 Dec 1999 23:59:59 GMT",
                "120",
                "Tuesday, 14-Nov-23 22:14:20 GMT",
                "Tue Nov 14 22:14:20 2023"
            ]
        );
    }

    #[test]
    fn only_a_day_name_joins_the_member_after_it() {
        assert_eq!(members("soon, 30").collect::<Vec<_>>(), ["soon", "30"]);
        assert_eq!(members("Tues, 30").collect::<Vec<_>>(), ["Tues", "30"]);
    }

    #[test]
    fn members_of_an_empty_line_is_one_empty_member() {
        assert_eq!(members("").collect::<Vec<_>>(), [""]);
        assert_eq!(members("1,,2").collect::<Vec<_>>(), ["1", "", "2"]);
    }

    fn combined(headers: &HeaderMap) -> Option<Cow<'_, str>> {
        Fields::new(headers).combined(Name::RateLimit)
    }

    #[test]
    fn combined_joins_lines_and_skips_empty_ones() {
        let mut headers = HeaderMap::new();
        assert_eq!(combined(&headers), None);
        headers.append("ratelimit", http::HeaderValue::from_static(""));
        assert_eq!(combined(&headers), None);
        headers.append("ratelimit", http::HeaderValue::from_static(" a;r=1 "));
        assert!(matches!(combined(&headers), Some(Cow::Borrowed("a;r=1"))));
        headers.append("ratelimit", http::HeaderValue::from_static("b;r=2"));
        assert_eq!(combined(&headers).as_deref(), Some("a;r=1, b;r=2"));
        headers.append("ratelimit", http::HeaderValue::from_bytes(b"\xff").unwrap());
        assert_eq!(combined(&headers), None);
    }

    #[test]
    fn lines_skip_values_that_are_not_visible_ascii() {
        let mut headers = HeaderMap::new();
        headers.append("age", http::HeaderValue::from_bytes(b"\xff1").unwrap());
        headers.append("age", http::HeaderValue::from_static("  2\t"));
        let lines: Vec<_> = Fields::new(&headers).lines(Name::Age).collect();
        assert_eq!(lines, ["2"]);
    }

    #[test]
    fn a_prefix_alone_or_a_name_merely_starting_alike_is_no_field() {
        for name in [
            "accept",
            "anthropic-version",
            "zendesk-request-id",
            "anthropic-ratelimit",
        ] {
            assert_eq!(Name::of(name), None, "{name}");
        }
        assert_eq!(
            Name::of("anthropic-ratelimit-"),
            Some(Name::AnthropicRateLimit),
            "the reader skips a field without a meter"
        );
    }

    #[test]
    fn prefixed_fields_are_each_listed_with_the_rest_of_their_name() {
        let mut headers = HeaderMap::new();
        headers.append("zendesk-ratelimit-a", HeaderValue::from_static(" 1 "));
        headers.append("server", HeaderValue::from_static("x"));
        headers.append("zendesk-ratelimit-b", HeaderValue::from_static("2"));
        headers.append(
            "zendesk-ratelimit-c",
            HeaderValue::from_bytes(b"\xff").unwrap(),
        );
        let fields = Fields::new(&headers);
        let found: Vec<_> = fields.prefixed(ZENDESK_PREFIX).collect();
        assert_eq!(found, [("a", "1"), ("b", "2")]);
        assert_eq!(fields.prefixed(ANTHROPIC_PREFIX).count(), 0);
    }

    #[test]
    fn every_name_is_found_by_its_lowercase_spelling() {
        let names = [
            "date",
            "age",
            "retry-after",
            "retry-after-ms",
            "ratelimit",
            "ratelimit-policy",
            "ratelimit-limit",
            "ratelimit-remaining",
            "ratelimit-reset",
            "x-ratelimit-limit",
            "x-ratelimit-remaining",
            "x-ratelimit-used",
            "x-ratelimit-reset",
            "x-ratelimit-reset-after",
            "x-rate-limit-limit",
            "x-rate-limit-remaining",
            "x-rate-limit-used",
            "x-rate-limit-reset",
            "x-ratelimit-resource",
            "ratelimit-name",
            "ratelimit-resettime",
            "x-ratelimit-bucket",
            "x-ratelimit-global",
            "x-ratelimit-scope",
            "x-ratelimit-limit-requests",
            "x-ratelimit-remaining-requests",
            "x-ratelimit-reset-requests",
            "x-ratelimit-limit-tokens",
            "x-ratelimit-remaining-tokens",
            "x-ratelimit-reset-tokens",
            "anthropic-ratelimit-requests-limit",
            "x-shopify-shop-api-call-limit",
            "beta-ratelimit",
            "beta-ratelimit-policy",
            "x-rate-limit",
            "zendesk-ratelimit-tickets-index",
            "stripe-rate-limited-reason",
            "x-amz-retry-after",
            "x-rate-limit-reset-tokens",
            "x-user-limit-24hour-limit",
            "x-user-limit-24hour-remaining",
            "x-user-limit-24hour-reset",
            "x-app-limit-24hour-limit",
            "x-app-limit-24hour-remaining",
            "x-app-limit-24hour-reset",
            "x-hubspot-ratelimit-max",
            "x-hubspot-ratelimit-remaining",
            "x-hubspot-ratelimit-interval-milliseconds",
            "x-hubspot-ratelimit-secondly",
            "x-hubspot-ratelimit-secondly-remaining",
            "x-hubspot-ratelimit-daily",
            "x-hubspot-ratelimit-daily-remaining",
            "sforce-limit-info",
        ];
        assert_eq!(names.len(), NAMES);
        for (index, name) in names.iter().enumerate() {
            assert_eq!(
                Name::of(name).map(|known| known as usize),
                Some(index),
                "{name}"
            );
        }
        assert_eq!(Name::of("x-ratelimit-whitelisted"), None);
    }

    #[test]
    fn only_fields_beyond_date_and_age_are_rate_limit_fields() {
        let mut headers = HeaderMap::new();
        headers.insert("date", http::HeaderValue::from_static("x"));
        headers.insert("age", http::HeaderValue::from_static("1"));
        headers.insert("content-type", http::HeaderValue::from_static("text/plain"));
        assert!(!Fields::new(&headers).has_rate_limit_fields());
        headers.insert("x-rate-limit-reset", http::HeaderValue::from_static("1"));
        assert!(Fields::new(&headers).has_rate_limit_fields());
    }

    #[test]
    fn fields_know_which_are_present_and_which_have_several_lines() {
        let mut headers = HeaderMap::new();
        headers.append("retry-after", HeaderValue::from_static("5"));
        headers.append("ratelimit", HeaderValue::from_static("\"a\";r=1;t=2"));
        headers.append("ratelimit", HeaderValue::from_static("\"b\";r=3;t=4"));
        let fields = Fields::new(&headers);
        assert!(fields.has_any(&[Name::RateLimitPolicy, Name::RetryAfter]));
        assert!(!fields.has_any(&[Name::RateLimitPolicy, Name::XRateLimitReset]));
        assert!(fields.is_repeated(Name::RateLimit));
        assert!(!fields.is_repeated(Name::RetryAfter));
        assert!(!fields.is_repeated(Name::RateLimitPolicy));
        // A field on one line is read from where it was found, without searching the map.
        assert!(matches!(
            fields.values(Name::RetryAfter),
            Values::Single(Some(_))
        ));
        assert!(matches!(
            fields.values(Name::RateLimit),
            Values::Repeated(_)
        ));
    }
}
