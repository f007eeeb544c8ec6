//! What one response said that the gate and the retry act on: the reading of its headers
//! turned into a [`Report`] for the gate and an [`Answer`] for the retry's arithmetic. Pure
//! but for the reading: the caller passes when the response was received.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::{Response, StatusCode};
use tokio::time::Instant;

use crate::budget::Answer;
use crate::gate::key::reopening::Pace;
use crate::gate::key::report::Report;
use crate::gate::key::tokens::TokenMeters;
use crate::gate::rules::quota::{Quota, SAME_WINDOW};
use crate::gate::time::{ServerClock, after};
use crate::headers::{RateLimitInfo, ReadHeaders, Unit};
use crate::settings::Settings;
use crate::throttled::HeldBy;

/// What one response said that the layer acts on.
#[derive(Default)]
pub(crate) struct Said {
    /// The response was a refusal of the window's quota (a 429, or a 403 its headers mark as
    /// one).
    refused: bool,
    /// The response was a refusal for too many requests in flight: no quota is learned from
    /// it, and without an instruction it closes nothing.
    crowded: bool,
    /// The response's status: what a closure it sets says set it.
    status: StatusCode,
    /// How long the server said this call waits before its retry, if it did.
    instruction: Option<Duration>,
    /// The instruction the gate takes for every call on the key, and where it was named: for
    /// a layer that does not respect what remains, only `Retry-After`.
    closing: Option<(Duration, Named)>,
    /// When that wait ends.
    instructed_until: Option<Instant>,
    /// The quota closest to running out, when the layer respects what remains.
    quota: Option<Binding>,
    /// The spacing the server's shortest policy within the cap asks for.
    pace: Option<Pace>,
    /// The server's clock, as the response's `Date` bounds it.
    server_clock: Option<ServerClock>,
    /// The token meters within the horizon, when the layer respects what remains and the
    /// response has any: boxed, as most responses have none.
    tokens: Option<Box<TokenMeters>>,
    /// The limit the request counted against, where the server keeps several for its key.
    group: Option<Box<str>>,
    /// The refusal holds every limit of the key.
    global: bool,
}

/// Where the server named a wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Named {
    /// `Retry-After` (or `retry-after-ms`).
    RetryAfter,
    /// The reset of a meter of this unit that said it is spent.
    SpentMeter(Unit),
}

/// The meter closest to running out, as the gate counts by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Binding {
    quota: Quota,
    /// The meter's whole quota a window, if the server gave it.
    limit: Option<u64>,
    unit: Unit,
}

impl Said {
    /// Reads `response`'s rate-limit headers (with the user's `readers` after the crate's),
    /// received `now`, when the wall clock read `wall` and the server's clock at least
    /// `floor`, and attaches the reading to it; what the gate and the retry need of it, under
    /// `settings`, is taken first.
    pub(crate) fn read<B>(
        response: &mut Response<B>,
        now: Instant,
        wall: SystemTime,
        floor: Option<SystemTime>,
        settings: &Settings,
        readers: &[Arc<dyn ReadHeaders>],
    ) -> Said {
        let info = RateLimitInfo::read(response.headers(), wall, now, floor, readers);
        let status = response.status();
        let refused = info.is_refusal(status) && !info.is_concurrency_limit();
        let said = Said {
            refused,
            crowded: info.is_concurrency_limit(),
            status,
            group: info.limit_group().map(Box::from),
            global: info.is_global(),
            server_clock: info.server_date().map(|date| ServerClock::new(date, now)),
            ..Said::of(&info, now, refused, settings)
        };
        response.extensions_mut().insert(info);
        said
    }

    /// The token meters the response reported ([`TokenMeters::NONE`] where none).
    pub(crate) fn tokens(&self) -> &TokenMeters {
        self.tokens.as_deref().unwrap_or(&TokenMeters::NONE)
    }

    /// Whether the response named the limit it counted against, or refused for every limit:
    /// most name neither, and have nothing to teach the key's routes.
    pub(crate) fn names_a_limit(&self) -> bool {
        self.group.is_some() || self.global
    }

    /// The limit the request counted against, where the server named one of several.
    pub(crate) fn group(&self) -> Option<&str> {
        self.group.as_deref()
    }

    /// Whether the refusal holds every limit of the key.
    pub(crate) fn is_global(&self) -> bool {
        self.global
    }

    /// What the retry's arithmetic needs of it.
    pub(crate) fn answer(&self) -> Answer {
        Answer {
            refused: self.refused || self.crowded,
            instruction: self.instruction,
            closing: self.closing.map(|(wait, _)| wait),
            crowded: self.crowded,
        }
    }

    /// What the gate and the retry need from the reading of a response received `now`,
    /// `refused` or not.
    fn of(info: &RateLimitInfo, now: Instant, refused: bool, settings: &Settings) -> Said {
        if info.is_empty() {
            // Most responses: nothing to weigh.
            return Said::default();
        }
        let named = named_wait(info, Duration::MAX);
        let retry_after = info.retry_after().map(|wait| (wait, Named::RetryAfter));
        // A layer that does not respect what remains takes no instruction from a meter for
        // its other calls; but the refused call itself is not resent into a window the server
        // said is spent, whatever the layer holds other calls by.
        let instruction = if refused || settings.respect_remaining {
            named
        } else {
            retry_after
        };
        let instruction = instruction.map(|(wait, _)| wait);
        // What the gate takes is the latest the server named within the horizon: a wait
        // beyond it is absurd and not remembered (its call is returned at once), but it does
        // not erase a window named within it, as a 429's `Retry-After` beside a meter's reset
        // years away. Where all it named is beyond the horizon, that is kept, and closes
        // nothing: taken for no instruction at all, it would close the gate for a guess.
        let closing = if settings.respect_remaining {
            named_wait(info, settings.horizon).or(named)
        } else {
            retry_after
        };
        // What is remembered reaches as far as the horizon from receipt, where the meters'
        // resets are measured from too. Beyond it a reset is absurd or hostile.
        let horizon = after(now, settings.horizon);
        Said {
            instruction,
            closing,
            // An end beyond the horizon is no time the gate or its law keeps: taken for a
            // window's end, it would make the learned law's round last decades.
            instructed_until: closing
                .filter(|(wait, _)| *wait <= settings.horizon)
                .map(|(wait, _)| after(now, wait)),
            quota: settings
                .respect_remaining
                .then(|| quota(info, horizon))
                .flatten(),
            pace: pace(info, now, settings.retry_after_cap),
            tokens: settings
                .respect_remaining
                .then(|| tokens(info, horizon))
                .filter(|meters| *meters != TokenMeters::NONE)
                .map(Box::new),
            ..Said::default()
        }
    }

    /// What a wait this answer sets is held by: the instruction it named, or a guess.
    pub(crate) fn held_by(&self) -> HeldBy {
        let status = self.status;
        match self.closing {
            Some((_, Named::RetryAfter)) => HeldBy::RetryAfter { status },
            Some((_, Named::SpentMeter(unit))) => HeldBy::SpentMeter { status, unit },
            None => HeldBy::Guess { status },
        }
    }

    /// What the gate takes in: what was said, and until when the layer closes the gate.
    pub(crate) fn report(&self, closed_until: Option<Instant>) -> Report {
        let status = self.status;
        let closed_by = self.held_by();
        Report {
            refused: self.refused,
            closed_until,
            closed_by: closed_until.map(|_| closed_by),
            instructed_until: self.instructed_until,
            quota: self.quota.map(|binding| binding.quota),
            server_spent: self.quota.is_some_and(|binding| binding.quota.is_spent()),
            quota_by: self.quota.map(|binding| HeldBy::SpentMeter {
                status,
                unit: binding.unit,
            }),
            limit: self.quota.and_then(|binding| binding.limit),
            pace: self.pace,
            server_clock: self.server_clock,
        }
    }
}

/// The longest wait the server named up to `within`, and where: its `Retry-After`, or the
/// reset of a meter that said it is spent, whichever is later (never retry before any time it
/// named).
fn named_wait(info: &RateLimitInfo, within: Duration) -> Option<(Duration, Named)> {
    let spent = info
        .meters()
        .iter()
        .filter(|meter| meter.is_exhausted())
        .filter_map(|meter| Some((meter.reset_in()?, Named::SpentMeter(meter.unit()))))
        .filter(|(reset, _)| *reset <= within)
        .max_by_key(|(reset, _)| *reset);
    let retry_after = info
        .retry_after()
        .filter(|wait| *wait <= within)
        .map(|wait| (wait, Named::RetryAfter));
    match (retry_after, spent) {
        (Some(told), Some(spent)) if spent.0 > told.0 => Some(spent),
        (Some(told), _) => Some(told),
        (None, spent) => spent,
    }
}

/// The quota closest to running out among the meters that say what is left and reset by
/// `horizon`, with that meter's whole quota a window if it says. A meter of another unit than
/// requests is not spent one a call: it counts only once the server says it is spent, and its
/// limit says nothing of how many calls a window holds.
///
/// The whole quota is what the binding meter's reset restores; a meter of requests whose
/// window outlasts it still counts then, so the reset restores no more than that meter has
/// left once the binding meter's own remaining are spent (a second's ten, restored while the
/// minute has two left, are eight refusals). Readings of one window are not mixed: a meter
/// resetting within [`SAME_WINDOW`] of the binding one is that window read again.
fn quota(info: &RateLimitInfo, horizon: Instant) -> Option<Binding> {
    let bindings = || {
        info.meters()
            .iter()
            .filter(|meter| meter.unit() == Unit::Requests || meter.is_exhausted())
            .filter_map(move |meter| {
                let reset_at = meter.reset_at().filter(|reset_at| *reset_at <= horizon)?;
                let quota = Quota {
                    remaining: meter.remaining()?,
                    reset_at,
                    second: meter.reset_second(),
                };
                let limit = meter.limit().filter(|_| meter.unit() == Unit::Requests);
                Some(Binding {
                    quota,
                    limit,
                    unit: meter.unit(),
                })
            })
    };
    let mut binding = bindings().min_by_key(|binding| {
        let quota = binding.quota;
        (quota.remaining, std::cmp::Reverse(quota.reset_at))
    })?;
    let longer_left = bindings()
        .filter(|other| {
            // Another window, resetting clearly later (readings of one window, in two header
            // families, differ by up to `SAME_WINDOW`).
            other.unit == Unit::Requests
                && other.quota.reset_at > after(binding.quota.reset_at, SAME_WINDOW)
        })
        .map(|other| {
            other
                .quota
                .remaining
                .saturating_sub(binding.quota.remaining)
        })
        .min();
    if let Some(left) = longer_left {
        binding.limit = binding.limit.map(|limit| limit.min(left));
    }
    Some(binding)
}

/// The token meters that say what is left and reset by `horizon`.
fn tokens(info: &RateLimitInfo, horizon: Instant) -> TokenMeters {
    let mut meters = TokenMeters::default();
    for meter in info.meters() {
        let reset_at = meter.reset_at().filter(|reset_at| *reset_at <= horizon);
        if let (Some(remaining), Some(reset_at)) = (meter.remaining(), reset_at) {
            meters.add(
                meter.unit(),
                Quota {
                    remaining,
                    reset_at,
                    second: meter.reset_second(),
                },
            );
        }
    }
    meters
}

/// The server's policy with the shortest window, as a spacing between requests that stands
/// for that window: the rate that binds a burst. A window longer than `cap` gives no pace, as
/// an instruction over the cap is not waited: a day's quota says how many in a day, not how
/// far apart, and 86 400 s / 5 000 is 17 s between calls that would fail them all.
fn pace(info: &RateLimitInfo, now: Instant, cap: Duration) -> Option<Pace> {
    info.meters()
        .iter()
        .filter(|meter| meter.unit() == Unit::Requests)
        .filter_map(|meter| {
            let limit = u32::try_from(meter.limit()?)
                .ok()
                .filter(|limit| *limit > 0)?;
            let window = meter.window().filter(|window| *window <= cap)?;
            Some((window, window / limit))
        })
        .min()
        .map(|(window, interval)| Pace {
            interval,
            window,
            until: after(now, window),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(pairs: &[(&'static str, &'static str)]) -> RateLimitInfo {
        let mut headers = http::HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, http::HeaderValue::from_static(value));
        }
        RateLimitInfo::from_headers(&headers, SystemTime::now())
    }

    const CAP: Duration = Duration::from_secs(60);

    #[test]
    fn the_wait_named_is_the_longest_and_a_tie_is_the_retry_afters() {
        let second = Duration::from_secs(1);
        let named = |retry_after: &'static str, reset: &'static str| {
            named_wait(
                &info(&[
                    ("retry-after", retry_after),
                    ("ratelimit-limit", "10"),
                    ("ratelimit-remaining", "0"),
                    ("ratelimit-reset", reset),
                ]),
                Duration::MAX,
            )
        };
        assert_eq!(named("30", "5"), Some((30 * second, Named::RetryAfter)));
        assert_eq!(
            named("5", "30").map(|(wait, _)| wait),
            Some(30 * second),
            "the spent meter's later reset"
        );
        assert_eq!(named("5", "5"), Some((5 * second, Named::RetryAfter)));
    }

    #[test]
    fn the_pace_is_the_shortest_windows_and_stands_for_that_window() {
        let now = Instant::now();
        let policies = info(&[(
            "ratelimit-policy",
            r#""minute";q=100;w=60, "second";q=10;w=1"#,
        )]);
        let pace = pace(&policies, now, CAP).unwrap();
        assert_eq!(pace.interval, Duration::from_millis(100));
        assert_eq!(pace.until, now + Duration::from_secs(1));
        assert_eq!(super::pace(&info(&[]), now, CAP), None);
    }

    #[test]
    fn a_window_longer_than_the_cap_gives_no_pace() {
        let now = Instant::now();
        let day = info(&[("ratelimit-policy", r#""day";q=5000;w=86400"#)]);
        assert_eq!(pace(&day, now, CAP), None);
        let minute_and_day = info(&[(
            "ratelimit-policy",
            r#""minute";q=100;w=60, "day";q=5000;w=86400"#,
        )]);
        let minute = pace(&minute_and_day, now, CAP).unwrap();
        assert_eq!(minute.interval, Duration::from_millis(600));
        assert_eq!(pace(&minute_and_day, now, Duration::from_secs(59)), None);
    }

    #[test]
    fn the_quota_is_the_meter_closest_to_running_out_within_the_horizon() {
        let now = Instant::now();
        let meters = info(&[
            (
                "ratelimit-policy",
                r#""minute";q=100;w=60, "day";q=5000;w=86400"#,
            ),
            ("ratelimit", r#""minute";r=40;t=30, "day";r=3;t=36000"#),
        ]);
        let within_a_minute = quota(&meters, now + Duration::from_secs(60)).unwrap();
        assert_eq!(within_a_minute.limit, Some(100), "the minute's policy");
        assert_eq!(
            within_a_minute.quota.remaining, 40,
            "the day's window is beyond that horizon"
        );
        let within_a_day = quota(&meters, now + Duration::from_secs(86_400)).unwrap();
        assert_eq!(within_a_day.quota.remaining, 3);
    }

    /// The report says whether the binding meter's reset names a whole second: an epoch
    /// `X-RateLimit-Reset` does, a countdown does not.
    #[test]
    fn the_report_says_whether_the_reset_names_a_second() {
        let now = Instant::now();
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let settings = Settings::default();
        let read = |reset: &'static str| {
            let mut response = Response::builder()
                .header("x-ratelimit-limit", "20")
                .header("x-ratelimit-remaining", "3")
                .header("x-ratelimit-reset", reset)
                .body(())
                .unwrap();
            Said::read(&mut response, now, wall, None, &settings, &[]).report(None)
        };
        let epoch = read("1700000001");
        let second = |report: Report| report.quota.map(|quota| quota.second);
        assert_eq!(second(epoch), Some(Some(1_700_000_001)));
        let countdown = read("1");
        assert_eq!(second(countdown), Some(None));
        // Anthropic's reset is an RFC 3339 instant, to the second.
        let mut response = Response::builder()
            .header("anthropic-ratelimit-requests-limit", "20")
            .header("anthropic-ratelimit-requests-remaining", "3")
            .header("anthropic-ratelimit-requests-reset", "2023-11-14T22:13:21Z")
            .body(())
            .unwrap();
        let instant = Said::read(&mut response, now, wall, None, &settings, &[]).report(None);
        assert_eq!(second(instant), Some(Some(1_700_000_001)));
    }

    /// A policy whose quota counts another unit than requests (drafts 09 and 10's `qu`) is no
    /// quota of calls: 100 bytes left are not 100 requests, and 65 535 bytes in 10 s no pace;
    /// spent, it holds calls all the same.
    #[test]
    fn a_quota_of_bytes_is_no_quota_of_requests_till_it_is_spent() {
        let now = Instant::now();
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let settings = Settings::default();
        let read = |remaining: u64, unit: &str| {
            let mut response = Response::builder()
                .header(
                    "ratelimit-policy",
                    format!(r#""peruser";q=65535;qu="{unit}";w=10"#),
                )
                .header("ratelimit", format!(r#""peruser";r={remaining};t=5"#))
                .body(())
                .unwrap();
            Said::read(&mut response, now, wall, None, &settings, &[]).report(None)
        };
        let bytes = read(100, "content-bytes");
        assert_eq!((bytes.quota, bytes.pace), (None, None));
        let spent = read(0, "content-bytes").quota.expect("spent: it holds");
        assert_eq!(spent.remaining, 0);
        let requests = read(100, "requests");
        assert_eq!(requests.quota.map(|quota| quota.remaining), Some(100));
        assert!(requests.pace.is_some());
    }

    /// A `Retry-After` beyond the horizon closes nothing and names no end the gate keeps (the
    /// learned law would take it for a window's end), though it is still what held the call.
    #[test]
    fn an_instruction_beyond_the_horizon_names_no_end_the_gate_keeps() {
        let now = Instant::now();
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let settings = Settings::default();
        let read = |seconds: &str| {
            let mut response = Response::builder()
                .status(StatusCode::TOO_MANY_REQUESTS)
                .header("retry-after", seconds)
                .body(())
                .unwrap();
            Said::read(&mut response, now, wall, None, &settings, &[])
        };
        let absurd = read("3000000000");
        assert_eq!(absurd.report(None).instructed_until, None);
        assert!(matches!(absurd.held_by(), HeldBy::RetryAfter { .. }));
        let at_the_horizon = read(&settings.horizon.as_secs().to_string());
        assert_eq!(
            at_the_horizon.report(None).instructed_until,
            Some(now + settings.horizon)
        );
    }

    /// A 429 whose `RateLimit` field says its window is spent, and resets in `seconds`.
    fn spent_for(seconds: u64) -> Response<()> {
        let ratelimit = format!(r#""d";r=0;t={seconds}"#);
        Response::builder()
            .status(StatusCode::TOO_MANY_REQUESTS)
            .header("ratelimit", ratelimit)
            .body(())
            .unwrap()
    }

    /// Measured from the receipt the caller passes, however long after it the headers are
    /// read (here a second, on the paused clock): a spent window resetting exactly at the
    /// horizon is held, and one a second beyond it is not remembered.
    #[tokio::test(start_paused = true)]
    async fn a_spent_window_resetting_exactly_at_the_horizon_is_held() {
        let received = Instant::now();
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        tokio::time::advance(Duration::from_secs(1)).await;
        let settings = Settings::default();
        let read = |response: &mut Response<()>| {
            Said::read(response, received, wall, None, &settings, &[])
        };
        let mut two_days = spent_for(172_800);
        let held = read(&mut two_days).quota.expect("the spent window is held");
        assert_eq!(held.quota.remaining, 0);
        assert_eq!(held.quota.reset_at, received + settings.horizon);
        let reading = two_days.extensions().get::<RateLimitInfo>().unwrap();
        assert_eq!(reading.read_at(), received, "placed at receipt");
        assert!(read(&mut spent_for(172_801)).quota.is_none());
    }

    #[test]
    fn a_refusal_by_a_spent_meter_holds_its_own_retry_whatever_the_layer_respects() {
        let now = Instant::now();
        let spent = info(&[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "3600"),
        ]);
        let opted_out = Settings {
            respect_remaining: false,
            ..Settings::default()
        };
        let refused = Said::of(&spent, now, true, &opted_out);
        let answer = refused.answer();
        assert_eq!(answer.instruction, Some(Duration::from_secs(3600)));
        assert_eq!(answer.closing, None, "its other calls are not held");
        let accepted = Said::of(&spent, now, false, &opted_out);
        assert_eq!(accepted.answer().instruction, None);
        let respected = Said::of(&spent, now, false, &Settings::default()).answer();
        assert_eq!(respected.closing, Some(Duration::from_secs(3600)));
    }

    #[test]
    fn a_wait_named_beyond_the_horizon_does_not_erase_a_window_named_within_it() {
        let now = Instant::now();
        let settings = Settings::default();
        let refusal = info(&[
            ("retry-after", "5"),
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "259200"),
        ]);
        // As a 429 is read: `Said::read` marks the refusal.
        let refused = |info| Answer {
            refused: true,
            ..Said::of(info, now, true, &settings).answer()
        };
        let answer = refused(&refusal);
        assert_eq!(
            answer.instruction,
            Some(Duration::from_secs(259_200)),
            "its call is returned at once"
        );
        let closed = crate::budget::closure(answer, None, &settings, 0.0, || Some(0));
        assert_eq!(
            closed,
            Some(Duration::from_secs(5)),
            "the 429's window holds"
        );
        let absurd = info(&[("retry-after", "99999999999999999999")]);
        assert_eq!(
            crate::budget::closure(refused(&absurd), None, &settings, 0.0, || Some(0)),
            None,
            "neither remembered nor guessed at"
        );
    }

    #[test]
    fn a_meter_of_tokens_neither_paces_nor_counts_calls() {
        let now = Instant::now();
        let openai = info(&[
            ("x-ratelimit-limit-requests", "60"),
            ("x-ratelimit-remaining-requests", "59"),
            ("x-ratelimit-reset-requests", "1s"),
            ("x-ratelimit-limit-tokens", "150000"),
            ("x-ratelimit-remaining-tokens", "20"),
            ("x-ratelimit-reset-tokens", "2s"),
        ]);
        let requests = quota(&openai, now + CAP).unwrap();
        assert_eq!((requests.quota.remaining, requests.limit), (59, Some(60)));
        let tokens_only = info(&[
            ("x-ratelimit-remaining-tokens", "20"),
            ("x-ratelimit-reset-tokens", "2s"),
        ]);
        assert_eq!(quota(&tokens_only, now + CAP), None);
        let tokens_spent = info(&[
            ("x-ratelimit-remaining-requests", "59"),
            ("x-ratelimit-limit-tokens", "150000"),
            ("x-ratelimit-remaining-tokens", "0"),
            ("x-ratelimit-reset-tokens", "2s"),
        ]);
        let spent = quota(&tokens_spent, now + CAP).unwrap();
        assert_eq!(
            (spent.quota.remaining, spent.limit, spent.unit),
            (0, None, Unit::Tokens),
            "spent, holding calls"
        );
        let tokens_a_second =
            |_: &http::HeaderMap, _: &_, found: &mut crate::headers::Found<'_>| {
                let figures = crate::headers::Figures::new()
                    .unit(Unit::Tokens)
                    .limit(1000);
                found.meter(figures.window(Duration::from_secs(1)));
            };
        let readers: [std::sync::Arc<dyn crate::headers::ReadHeaders>; 1] =
            [std::sync::Arc::new(tokens_a_second)];
        let headers = http::HeaderMap::new();
        let tokens = RateLimitInfo::read(&headers, SystemTime::now(), now, None, &readers);
        assert_eq!(tokens.meters()[0].window(), Some(Duration::from_secs(1)));
        assert_eq!(pace(&tokens, now, CAP), None, "a thousand tokens a second");
    }

    /// Two named policies, a second's and a minute's: the second's binds (one left against
    /// the minute's three), and its reset restores its whole quota at once. The minute's count
    /// still holds then: no more go than the minute has left (DESIGN: never send while the
    /// known remaining quota is spent by what is in flight; several policies, each its own
    /// meter).
    #[test]
    fn a_shorter_windows_reset_restores_no_more_than_a_longer_window_has_left() {
        use crate::gate::key::Gate;
        use crate::gate::key::answer::Arrival;
        use crate::gate::key::terms::Terms;
        let now = Instant::now();
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let settings = Settings::default();
        let mut response = Response::builder()
            .header(
                "ratelimit-policy",
                r#""second";q=10;w=1, "minute";q=100;w=60"#,
            )
            .header("ratelimit", r#""second";r=1;t=1, "minute";r=3;t=50"#)
            .body(())
            .unwrap();
        let report = Said::read(&mut response, now, wall, None, &settings, &[]).report(None);
        let mut gate = Gate::new();
        let went = |gate: &mut Gate, at: Instant, calls: usize| {
            let mut admitted = Vec::new();
            for _ in 0..calls {
                if let Arrival::Admitted(admission) =
                    gate.arrive(at, Terms::EVERYTHING, Duration::MAX)
                {
                    admitted.push(admission);
                }
            }
            admitted
        };
        let first = went(&mut gate, now, 1)
            .pop()
            .expect("nothing known: it goes");
        gate.answered(first, report, now);
        // The second's one left goes now; the minute then has two left.
        assert_eq!(went(&mut gate, now, 1).len(), 1);
        let reset = now + Duration::from_secs(1);
        let at_reset = went(&mut gate, reset, 20).len();
        assert!(
            at_reset <= 2,
            "{at_reset} went at the second's reset, the minute having two left"
        );
        // One window read in two header families is one window: its whole quota stands, as
        // far as `SAME_WINDOW` (2 s) apart; further, the later is another window.
        for (later, limit) in [("11", 10), ("12", 10), ("13", 1)] {
            let twice = info(&[
                ("ratelimit-limit", "10"),
                ("ratelimit-remaining", "5"),
                ("ratelimit-reset", "10"),
                ("x-ratelimit-limit", "10"),
                ("x-ratelimit-remaining", "6"),
                ("x-ratelimit-reset", later),
            ]);
            let binding = quota(&twice, now + CAP).unwrap();
            assert_eq!(
                (binding.quota.remaining, binding.limit),
                (5, Some(limit)),
                "the later reset in {later} s"
            );
        }
    }

    #[test]
    fn a_policy_of_zero_requests_gives_no_pace() {
        let none_allowed = info(&[("ratelimit-policy", r#""closed";q=0;w=60"#)]);
        assert_eq!(none_allowed.meters()[0].limit(), Some(0));
        assert_eq!(pace(&none_allowed, Instant::now(), CAP), None);
    }
}
