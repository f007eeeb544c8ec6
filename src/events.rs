//! The tracing events of the layer, all in one place, at the level each fits (target
//! `tower_retry_after`):
//!
//! - `info`, once per episode of a key: it closed (a refusal, or a window the server said is
//!   spent), for how long and by what; it reopened. Fields `key`, `episode` (`closed`,
//!   `spent`, `reopened`), and for a closure `closed_ms` and `cause`.
//! - `debug`, per call that waits: the wait decided, taken or declined (`key`, `reason`,
//!   `cause`, `wait_ms`, `attempt`, `will_retry`, `declined`), and its end with the true wait
//!   (`waited_ms`). A wait the caller cannot see is a stall they cannot debug.
//! - `trace`, per attempt sent (`key`, `attempt`).
//! - `trace`, target `tower_retry_after::learn`, per round the law that learns a limit no one
//!   publishes judged on a key (`key`, `round`, `sent`, `accepted`, `refused`; what the key
//!   goes by after it: `burst`, `rate`, `period_ms`; and where each search stands:
//!   `burst_value`, `_least_refused`, `_step`, `_undone`, `_on_trial`; `rate_owing`,
//!   `burst_owing`: its next refusal is its last cut's debt). For whoever tunes the law. A
//!   gate's law judges the answers of every layer on the key, learning or not; a
//!   fleet's law, kept in its store, is not told.
//! - `warn`, once per layer, for a mistake the layer can see for itself: it is given the
//!   requests a server receives, or a timeout below it cuts each attempt short.
//!
//! A key derived from a credential shows as its fingerprint, never the credential.

use std::time::Duration;

use http::request::Parts;

use crate::budget::Decision;
use crate::gate::Judged;
use crate::gate::call::Episode;
use crate::key::Key;
use crate::throttled::{HeldBy, Throttled};

/// A key's episode turned: it closed, or reopened.
pub(crate) fn episode(key: &Key, episode: &Episode) {
    match episode {
        Episode::Closed(closed) => tracing::info!(
            target: "tower_retry_after",
            key = %key,
            episode = if matches!(closed.by, HeldBy::SpentMeter { .. }) { "spent" } else { "closed" },
            closed_ms = millis(closed.left),
            cause = %closed.by,
            "rate-limit episode",
        ),
        Episode::Reopened => tracing::info!(
            target: "tower_retry_after",
            key = %key,
            episode = "reopened",
            "rate-limit episode",
        ),
    }
}

/// A retry's wait was decided: taken, or declined with its reason, `cause` being what the
/// server said. `key` is the call's gate's; a call that is not gated is named by the origin of
/// its `request`.
pub(crate) fn wait_decided(
    key: Option<&Key>,
    request: &Parts,
    decision: &Decision,
    cause: Option<HeldBy>,
    attempt: u32,
) {
    let origin = || Key::origin(request);
    tracing::debug!(
        target: "tower_retry_after",
        key = key.cloned().or_else(origin).map(tracing::field::display),
        reason = ?decision.reason,
        cause = cause.map(tracing::field::display),
        wait_ms = millis(decision.wait),
        attempt,
        will_retry = decision.retries(),
        declined = decision.declined.map(tracing::field::display),
        "rate-limit wait",
    );
}

/// A call met a closed gate, held by `cause`: it waits there, `wait` being when the gate could
/// let it through as far as it can tell, or it is `throttled`.
pub(crate) fn at_gate(
    key: &Key,
    wait: Duration,
    cause: HeldBy,
    attempt: u32,
    throttled: Option<&Throttled>,
) {
    tracing::debug!(
        target: "tower_retry_after",
        key = %key,
        reason = "Gate",
        cause = %cause,
        wait_ms = millis(wait),
        attempt,
        will_retry = throttled.is_none(),
        declined = throttled.map(tracing::field::display),
        "rate-limit wait",
    );
}

/// A call's wait ended after `waited`, the true wait, before its attempt `attempt`.
pub(crate) fn waited(key: Option<&Key>, waited: Duration, attempt: u32) {
    tracing::debug!(
        target: "tower_retry_after",
        key = key.map(tracing::field::display),
        waited_ms = millis(waited),
        attempt,
        "rate-limit wait over",
    );
}

/// The attempt `attempt` of a call was sent.
pub(crate) fn sent(key: Option<&Key>, attempt: u32) {
    tracing::trace!(
        target: "tower_retry_after",
        key = key.map(tracing::field::display),
        attempt,
        "attempt sent",
    );
}

/// The law that learns a limit no one publishes judged a round of `key`, if it did.
pub(crate) fn round_judged(key: &Key, judged: Option<Judged>) {
    let Some(judged) = judged else {
        return;
    };
    let (burst, rate) = (judged.burst_search, judged.rate);
    tracing::trace!(
        target: "tower_retry_after::learn",
        key = %key,
        round = judged.round,
        sent = judged.sent,
        accepted = judged.accepted,
        refused = judged.refused,
        burst = judged.burst,
        burst_value = burst.value,
        burst_least_refused = burst.least_refused,
        burst_step = burst.step,
        burst_undone = burst.undone,
        burst_on_trial = burst.on_trial,
        rate = rate.value,
        rate_least_refused = rate.least_refused,
        rate_step = rate.step,
        rate_undone = rate.undone,
        rate_on_trial = rate.on_trial,
        rate_owing = judged.rate_owing,
        burst_owing = judged.burst_owing,
        period_ms = judged.period.map(millis),
        "round judged",
    );
}

fn millis(wait: Duration) -> u64 {
    u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)
}

/// The layer was given a request in the form a server receives (a path, no scheme or
/// authority): it is on a server's router, where one client's 429 would hold every client.
pub(crate) fn server_side(request: &Parts) {
    tracing::warn!(
        target: "tower_retry_after",
        uri = %request.uri,
        "RateLimitLayer was given a request without scheme and authority, as a server receives \
         it: the layer belongs on the client that calls a rate-limited server, not on a server's \
         router (there, one caller's 429 would hold every caller)",
    );
}

/// An attempt timed out below the layer, which is about to wait `wait` and try again: a
/// timeout inside the layer bounds each attempt, not the call.
pub(crate) fn timeout_inside(wait: Duration) {
    tracing::warn!(
        target: "tower_retry_after",
        wait_ms = millis(wait),
        "an attempt timed out inside RateLimitLayer: a timeout below the layer bounds each \
         attempt, not the call, whose retries and waits add up; to bound the whole call, put \
         the timeout outside (above) the layer",
    );
}
