//! The header test vectors (`tests/vectors/*.txt`) as cases: what each line's response reads
//! as, rendered as text so a whole file's expectations read as a table.

use std::collections::HashSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use tower_retry_after::{RateLimitInfo, Unit};

/// The vectors' NOW: Tue, 14 Nov 2023 22:13:20 GMT. Responses are received at NOW with
/// `Date: NOW` unless a case says otherwise.
pub const NOW: u64 = 1_700_000_000;
pub const NOW_DATE: &str = "Tue, 14 Nov 2023 22:13:20 GMT";

pub struct Case {
    pub input: &'static str,
    pub expected: &'static str,
    pub received: u64,
    pub extra: Option<&'static str>,
}

/// A case whose figures the crate reads: `expected` is the rendering of the `RateLimitInfo`
/// (see `render`).
pub fn reads(input: &'static str, expected: &'static str) -> Case {
    Case {
        input,
        expected,
        received: NOW,
        extra: None,
    }
}

/// A format the crate does not read: it must give nothing, never a wrong number.
pub fn not_read(input: &'static str) -> Case {
    reads(input, "")
}

impl Case {
    /// Received at another time (and `Date` at that time where the input names none).
    pub fn received_at(mut self, seconds: u64) -> Self {
        self.received = seconds;
        self
    }

    /// A header added to the vector's own, so that a line about `Age` shows what it does.
    pub fn with(mut self, header: &'static str) -> Self {
        self.extra = Some(header);
        self
    }
}

/// The input of each line of a vector file: the text before ` => `.
pub fn vector_inputs(vectors: &'static str) -> Vec<&'static str> {
    vectors
        .lines()
        .filter(|line| !line.starts_with('#') && !line.starts_with("##") && !line.trim().is_empty())
        .map(|line| line.split_once(" => ").expect("a vector line has ' => '").0)
        .collect()
}

/// A line's status (`HTTP 403`, else 200) and headers; a `body "…"` part is what the server
/// wrote in the body, which no header reader sees.
pub fn response_of(case: &Case) -> (StatusCode, HeaderMap) {
    let mut status = StatusCode::OK;
    let mut headers = HeaderMap::new();
    for field in case.input.split(" || ").chain(case.extra) {
        if let Some(code) = field.strip_prefix("HTTP ") {
            status = code.parse().expect("a status");
            continue;
        }
        if field.starts_with("body ") {
            continue;
        }
        let (name, value) = field.split_once(':').expect("a field has ':'");
        headers.append(
            HeaderName::from_bytes(name.as_bytes()).expect("a valid name"),
            HeaderValue::from_bytes(value.as_bytes()).expect("a valid value"),
        );
    }
    if !headers.contains_key("date") {
        let date = if case.received == NOW {
            NOW_DATE.to_owned()
        } else {
            httpdate::fmt_http_date(at(case.received))
        };
        headers.insert("date", date.parse().unwrap());
    }
    (status, headers)
}

pub fn at(seconds: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(seconds)
}

/// `retry=<wait>` then each meter as `name[l=limit r=remaining t=reset_in w=window u=unit]`,
/// `_` for an unnamed one, figures the server did not give left out (and the unit where it is
/// requests), `!` on the binding meter where there are several; then what the response says
/// of its limit: `group=<name>`, `global`, `concurrency`, and `refusal` where a response of
/// this `status` is one though it is not a 429; `; ` between them. An empty string: nothing
/// was read.
pub fn render(info: &RateLimitInfo, status: StatusCode) -> String {
    let seconds = |duration: Duration| format!("{}s", duration.as_secs_f64());
    let mut parts = Vec::new();
    if let Some(wait) = info.retry_after() {
        parts.push(format!("retry={}", seconds(wait)));
    }
    let binding = info.binding_meter().map(|meter| meter as *const _);
    for meter in info.meters() {
        let mut figures = Vec::new();
        figures.extend(meter.limit().map(|limit| format!("l={limit}")));
        figures.extend(meter.remaining().map(|remaining| format!("r={remaining}")));
        figures.extend(
            meter
                .reset_in()
                .map(|reset| format!("t={}", seconds(reset))),
        );
        figures.extend(
            meter
                .window()
                .map(|window| format!("w={}", seconds(window))),
        );
        match meter.unit() {
            Unit::Requests => {}
            Unit::Tokens => figures.push("u=tokens".into()),
            Unit::InputTokens => figures.push("u=input".into()),
            Unit::OutputTokens => figures.push("u=output".into()),
            _ => figures.push("u=other".into()),
        }
        let mark = if info.meters().len() > 1 && binding == Some(meter as *const _) {
            "!"
        } else {
            ""
        };
        parts.push(format!(
            "{}{mark}[{}]",
            meter.name().unwrap_or("_"),
            figures.join(" ")
        ));
    }
    parts.extend(info.limit_group().map(|group| format!("group={group}")));
    if info.is_global() {
        parts.push("global".into());
    }
    if info.is_concurrency_limit() {
        parts.push("concurrency".into());
    }
    if status != StatusCode::TOO_MANY_REQUESTS && info.is_refusal(status) {
        parts.push("refusal".into());
    }
    parts.join("; ")
}

/// Panics unless every line of `vectors` has exactly one case and no case is not a line.
pub fn assert_one_case_a_line(vectors: &'static str, cases: &[Case]) {
    let inputs = vector_inputs(vectors);
    let covered: HashSet<_> = cases.iter().map(|case| case.input).collect();
    assert_eq!(covered.len(), cases.len(), "two cases share an input");
    let missing: Vec<_> = inputs
        .iter()
        .filter(|input| !covered.contains(*input))
        .collect();
    assert!(
        missing.is_empty(),
        "vector lines without a case: {missing:#?}"
    );
    assert_eq!(inputs.len(), cases.len(), "cases that are not vector lines");
}

/// Panics, listing each, unless every case reads as it expects.
pub fn assert_cases_read_as_expected(cases: &[Case]) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            let (status, headers) = response_of(case);
            let info = RateLimitInfo::from_headers(&headers, at(case.received));
            let got = render(&info, status);
            (got != case.expected).then(|| {
                format!(
                    "{}\n    expected: {:?}\n    got:      {got:?}",
                    case.input, case.expected
                )
            })
        })
        .collect();
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
