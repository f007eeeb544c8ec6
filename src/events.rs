//! The tracing events of the layer, all in one place: one for every wait the layer decides,
//! taken or declined, and one for a call that meets a closed gate. A wait the caller cannot
//! see is a stall they cannot debug.
//!
//! Every event has the target `tower_retry_after` and the fields `key`, `reason`, `wait_ms`,
//! `attempt`, `will_retry` and, for a wait not taken, `declined`.

use std::time::Duration;

use http::request::Parts;

use crate::budget::Decision;
use crate::key::Key;
use crate::throttled::Throttled;

/// A retry's wait was decided: taken, or declined with its reason. `key` is the call's gate's;
/// a call that is not gated is named by the origin of its `request`.
pub(crate) fn wait_decided(key: Option<&Key>, request: &Parts, decision: &Decision, attempt: u32) {
    let origin = || Key::origin(request);
    tracing::info!(
        target: "tower_retry_after",
        key = key.cloned().or_else(origin).map(tracing::field::display),
        reason = ?decision.reason,
        wait_ms = millis(decision.wait),
        attempt,
        will_retry = decision.declined.is_none(),
        declined = decision.declined.map(tracing::field::display),
        "rate-limit wait",
    );
}

/// A call met a closed gate: it waits there, `wait` being when the gate could let it through
/// as far as it can tell, or it is `throttled`.
pub(crate) fn at_gate(key: &Key, wait: Duration, attempt: u32, throttled: Option<&Throttled>) {
    tracing::info!(
        target: "tower_retry_after",
        key = %key,
        reason = "Gate",
        wait_ms = millis(wait),
        attempt,
        will_retry = throttled.is_none(),
        declined = throttled.map(tracing::field::display),
        "rate-limit wait",
    );
}

fn millis(wait: Duration) -> u64 {
    u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)
}
