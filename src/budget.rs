//! What one call may still spend on waiting, and whether the next wait fits: pure, so every
//! rule is tested exactly.
//!
//! A call has a budget: a total wait (`max_wait`: every wait of the call added up) and attempt
//! counts (transient retries; rate-limited retries as a backstop). A wait that does not fit
//! ends the call with the last outcome: it is dropped, never shortened to fit, because a
//! shortened wait buys exactly one more refused request. An instruction above the cap is
//! neither waited nor shortened: the response goes back to the caller at once (and the gate
//! remembers it, up to the horizon).
//!
//! How long a response closes its key's gate for every other call is budget arithmetic too:
//! [`closure`].

use std::fmt;
use std::time::Duration;

use crate::policy::Action;
use crate::settings::Settings;

/// Whether the server named the wait or the layer guessed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    /// `Retry-After`, or the reset of a meter that said it is exhausted.
    Instructed,
    /// Exponential backoff: the server named no time.
    Guessed,
}

/// Why an outcome the policy wanted retried goes back to the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Declined {
    /// Retrying rate-limited responses is turned off: the layer only observes.
    ObserveOnly,
    /// The instruction is above `retry_after_cap`: the gate remembers it, and later calls
    /// fail fast while more than the cap is left of it.
    OverCap,
    /// The instruction is beyond `retry_after_horizon`: absurd or hostile, it is not
    /// remembered.
    BeyondHorizon,
    /// The call used all its retries of this kind.
    OutOfRetries,
    /// The wait does not fit in what is left of `max_wait`.
    OutOfTime,
    /// The request body cannot be sent again.
    NotReplayable,
    /// The hook registered with `on_rate_limit` said no.
    Vetoed,
}

impl fmt::Display for Declined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Declined::ObserveOnly => "retrying rate-limited responses is off",
            Declined::OverCap => {
                "the server's wait is above retry_after_cap: later calls fail fast while more than the cap is left of it"
            }
            Declined::BeyondHorizon => {
                "the server's wait is beyond retry_after_horizon: not remembered"
            }
            Declined::OutOfRetries => "no retries left for this call",
            Declined::OutOfTime => "the wait does not fit in what is left of max_wait",
            Declined::NotReplayable => "the request body cannot be sent again",
            Declined::Vetoed => "the on_rate_limit hook declined the wait",
        })
    }
}

/// The wait before another attempt, and whether the call takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Decision {
    /// What the policy said of the outcome: never [`Action::Return`].
    pub(crate) action: Action,
    pub(crate) wait: Duration,
    pub(crate) reason: Reason,
    pub(crate) declined: Option<Declined>,
}

impl Decision {
    /// Whether the call takes the wait and tries again: nothing declined it.
    pub(crate) fn retries(&self) -> bool {
        self.declined.is_none()
    }

    /// This decision, knowing whether the next attempt's body is in hand: a retry without one
    /// is declined, since the request cannot be sent again.
    pub(crate) fn with_body(self, in_hand: bool) -> Decision {
        if in_hand {
            self
        } else {
            self.declined(Declined::NotReplayable)
        }
    }

    /// This decision, declined for `why` unless something declined it already.
    pub(crate) fn declined(self, why: Declined) -> Decision {
        Decision {
            declined: self.declined.or(Some(why)),
            ..self
        }
    }
}

/// What one call has spent so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Budget {
    waited: Duration,
    transient_retries: u32,
    rate_limited_retries: u32,
}

impl Budget {
    /// The wait before retrying an outcome classified `action` (never [`Action::Return`]),
    /// given the server's `instruction` and a uniform draw `unit` in [0, 1) for the jitter.
    pub(crate) fn decide(
        &self,
        action: Action,
        instruction: Option<Duration>,
        settings: &Settings,
        unit: f64,
    ) -> Decision {
        let (wait, reason) = match instruction {
            Some(instruction) => (
                settings.backoff.instructed(instruction, unit),
                Reason::Instructed,
            ),
            None => {
                let retries = self.transient_retries + self.rate_limited_retries;
                (settings.backoff.guessed(retries, unit), Reason::Guessed)
            }
        };
        let (used, allowed) = match action {
            Action::RateLimited => (self.rate_limited_retries, settings.rate_limited_retries),
            _ => (self.transient_retries, settings.transient_retries),
        };
        let declined = if action == Action::RateLimited && !settings.retry_on_rate_limit {
            Some(Declined::ObserveOnly)
        } else if instruction.is_some_and(|instruction| instruction > settings.horizon) {
            Some(Declined::BeyondHorizon)
        } else if instruction.is_some_and(|instruction| instruction > settings.retry_after_cap) {
            Some(Declined::OverCap)
        } else if used >= allowed {
            Some(Declined::OutOfRetries)
        } else if self.waited.saturating_add(wait) > settings.max_wait {
            Some(Declined::OutOfTime)
        } else {
            None
        };
        Decision {
            action,
            wait,
            reason,
            declined,
        }
    }

    /// Records the retry `decision` is about, with `wait` of its wait spent asleep.
    pub(crate) fn spend(&mut self, decision: &Decision, wait: Duration) {
        self.waited = self.waited.saturating_add(wait);
        match decision.action {
            Action::RateLimited => self.rate_limited_retries += 1,
            _ => self.transient_retries += 1,
        }
    }

    /// What is left of the call's total wait.
    pub(crate) fn time_left(&self, settings: &Settings) -> Duration {
        settings.max_wait.saturating_sub(self.waited)
    }

    /// Records a wait at the gate.
    pub(crate) fn add_wait(&mut self, wait: Duration) {
        self.waited = self.waited.saturating_add(wait);
    }

    /// How long the call has waited so far, every wait added up.
    pub(crate) fn waited(&self) -> Duration {
        self.waited
    }

    /// How many retries the call has made.
    pub(crate) fn retries(&self) -> u32 {
        self.transient_retries + self.rate_limited_retries
    }
}

/// What an attempt's response said, as far as waiting goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Answer {
    /// It was a refusal (429).
    pub(crate) refused: bool,
    /// How long the server said this call waits before its retry, if it did.
    pub(crate) instruction: Option<Duration>,
    /// How long the server said every call on the key waits, as far as the layer holds its
    /// calls by what it said: for a layer that does not respect what remains, a spent
    /// meter's reset holds the refused call's retry (`instruction`), not the others.
    pub(crate) closing: Option<Duration>,
    /// The refusal was for too many requests in flight (Stripe's concurrency limit).
    pub(crate) crowded: bool,
}

/// How long `answer` closes its key's gate, given the `decision` taken on it (`None`: the
/// policy returned it): a rate-limited outcome or a refusal closes it for the server's
/// instruction (with its spread), or else for a guess: the first guess for a refusal the
/// policy returns or retries as transient, or whose instruction the layer does not hold other
/// calls by; for a guessed wait, the key's.
///
/// The key's guess is the first guess, doubled for each probe the server refused since the
/// key last had a healthy answer (`refused_probes`, asked only then). A call's backoff grows
/// with its own retries, and one unlucky call's caution is no reason to hold every other call;
/// the server refusing the key's probes is. Where the gate's learned law holds the key
/// (`refused_probes` is `None`), the law's reset is its guess of the window, and the call's
/// guessed wait only bounds it until the law has one.
///
/// An instruction above the cap closes it all the same: the call that met it returns at once, but
/// every later call would be a certain refusal, so they fail fast while more than the cap is left
/// of it (the cap bounds a wait, not what is remembered). One beyond the horizon is absurd or
/// hostile and closes nothing: no server can lock a key for years. A guess never closes it beyond
/// the cap: the server named no time. A refusal for too many requests in flight, without an
/// instruction, does not close it: it asks for fewer at once, not a pause, and the refused call
/// backs off alone.
pub(crate) fn closure(
    answer: Answer,
    decision: Option<&Decision>,
    settings: &Settings,
    unit: f64,
    refused_probes: impl FnOnce() -> Option<u32>,
) -> Option<Duration> {
    let rate_limited = decision.filter(|decision| decision.action == Action::RateLimited);
    if !answer.refused && rate_limited.is_none() {
        return None;
    }
    match answer.closing {
        Some(instruction) if instruction > settings.horizon => None,
        Some(instruction) => Some(settings.backoff.instructed(instruction, unit)),
        None if answer.crowded => None,
        None => {
            let guessed = match rate_limited {
                Some(decision) if decision.reason == Reason::Guessed => refused_probes()
                    .map_or(decision.wait, |refused| {
                        settings.backoff.guessed(refused, unit)
                    }),
                _ => settings.backoff.guessed(0, unit),
            };
            Some(guessed.min(settings.retry_after_cap))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn settings() -> Settings {
        Settings::default()
    }

    #[test]
    fn an_instruction_is_waited_with_additive_spread() {
        let decision =
            Budget::default().decide(Action::RateLimited, Some(20 * SECOND), &settings(), 0.5);
        assert_eq!(decision.wait, 20 * SECOND + SECOND / 2);
        assert_eq!(decision.reason, Reason::Instructed);
        assert_eq!(decision.declined, None);
    }

    #[test]
    fn without_an_instruction_the_wait_is_guessed_and_grows_with_the_retries() {
        let mut budget = Budget::default();
        let first = budget.decide(Action::Retry, None, &settings(), 0.0);
        assert_eq!((first.wait, first.reason), (SECOND / 4, Reason::Guessed));
        budget.spend(&first, first.wait);
        let limited = budget.decide(Action::RateLimited, None, &settings(), 0.0);
        budget.spend(&limited, first.wait);
        let third = budget.decide(Action::Retry, None, &settings(), 0.0);
        assert_eq!(third.wait, SECOND);
    }

    #[test]
    fn observe_only_declines_rate_limited_but_not_transient_retries() {
        let mut observe = settings();
        observe.retry_on_rate_limit = false;
        let limited = Budget::default().decide(Action::RateLimited, Some(SECOND), &observe, 0.0);
        assert_eq!(limited.declined, Some(Declined::ObserveOnly));
        let transient = Budget::default().decide(Action::Retry, None, &observe, 0.0);
        assert_eq!(transient.declined, None);
    }

    #[test]
    fn an_instruction_over_the_cap_is_declined_not_shortened() {
        let over =
            Budget::default().decide(Action::RateLimited, Some(61 * SECOND), &settings(), 0.0);
        assert_eq!(over.declined, Some(Declined::OverCap));
        assert_eq!(over.wait, 61 * SECOND);
        let at = Budget::default().decide(Action::RateLimited, Some(60 * SECOND), &settings(), 0.0);
        assert_eq!(at.declined, None);
        let transient =
            Budget::default().decide(Action::Retry, Some(61 * SECOND), &settings(), 0.0);
        assert_eq!(transient.declined, Some(Declined::OverCap));
    }

    #[test]
    fn each_kind_of_retry_has_its_own_count() {
        let mut budget = Budget::default();
        let transient = budget.decide(Action::Retry, None, &settings(), 0.0);
        for _ in 0..3 {
            budget.spend(&transient, Duration::ZERO);
        }
        let transient = budget.decide(Action::Retry, None, &settings(), 0.0);
        assert_eq!(transient.declined, Some(Declined::OutOfRetries));
        let limited = budget.decide(Action::RateLimited, None, &settings(), 0.0);
        assert_eq!(limited.declined, None);
        for _ in 0..10 {
            budget.spend(&limited, Duration::ZERO);
        }
        let limited = budget.decide(Action::RateLimited, None, &settings(), 0.0);
        assert_eq!(limited.declined, Some(Declined::OutOfRetries));
    }

    #[test]
    fn a_wait_that_does_not_fit_is_dropped_not_clamped() {
        let mut budget = Budget::default();
        let limited = budget.decide(Action::RateLimited, None, &settings(), 0.0);
        budget.spend(&limited, 100 * SECOND);
        let fits = budget.decide(Action::RateLimited, Some(20 * SECOND), &settings(), 0.0);
        assert_eq!(fits.declined, None);
        let too_long = budget.decide(Action::RateLimited, Some(20 * SECOND), &settings(), 0.1);
        assert_eq!(too_long.declined, Some(Declined::OutOfTime));
        assert!(
            too_long.wait > 20 * SECOND,
            "the wait is reported whole, not clamped"
        );
    }

    /// A refusal naming `instruction`, taken by the gate as it is by the call.
    fn refused(instruction: Option<Duration>) -> Answer {
        Answer {
            refused: true,
            instruction,
            closing: instruction,
            crowded: false,
        }
    }

    #[test]
    fn a_429_closes_the_gate_whatever_the_policy_beyond_the_cap_too_but_not_beyond_the_horizon() {
        let settings = settings();
        let thirty = Some(30 * SECOND);
        assert_eq!(
            closure(refused(thirty), None, &settings, 0.0, || Some(0)),
            thirty
        );
        let hour = Some(3600 * SECOND);
        assert_eq!(
            closure(refused(hour), None, &settings, 0.0, || Some(0)),
            hour
        );
        let two_days = Some(settings.horizon);
        assert_eq!(
            closure(refused(two_days), None, &settings, 0.0, || Some(0)),
            two_days
        );
        let beyond = Some(settings.horizon + SECOND);
        assert_eq!(
            closure(refused(beyond), None, &settings, 0.0, || Some(0)),
            None
        );
        let accepted = Answer {
            refused: false,
            ..refused(thirty)
        };
        assert_eq!(closure(accepted, None, &settings, 0.0, || Some(0)), None);
        let guessed = closure(refused(None), None, &settings, 0.0, || Some(0));
        assert_eq!(guessed, Some(SECOND / 4));
    }

    #[test]
    fn a_rate_limited_outcome_closes_the_gate_for_a_guess_a_transient_one_not_at_all() {
        let settings = settings();
        let four = 4 * SECOND;
        let decided = |action| Decision {
            action,
            wait: four,
            reason: Reason::Guessed,
            declined: None,
        };
        let closed_for = |refused, action, refused_probes| {
            let answer = Answer {
                refused,
                ..Answer::default()
            };
            closure(answer, Some(&decided(action)), &settings, 0.0, || {
                refused_probes
            })
        };
        // Rate limited by the policy (a 503 it maps so), not a 429: closed for a guess.
        assert_eq!(
            closed_for(false, Action::RateLimited, Some(0)),
            Some(SECOND / 4)
        );
        // A 429 on a call's later attempt, without an instruction: the key's guess, the first
        // while the key's probes were not refused, doubled for each that was; not the call's
        // own backoff, grown by its retries to 4 s.
        assert_eq!(
            closed_for(true, Action::RateLimited, Some(0)),
            Some(SECOND / 4)
        );
        assert_eq!(closed_for(true, Action::RateLimited, Some(2)), Some(SECOND));
        // Where the learned law holds the key, it ends the call's own guess by its reset.
        assert_eq!(closed_for(true, Action::RateLimited, None), Some(four));
        // A transient retry (a 503) closes nothing: its backoff is the call's own.
        assert_eq!(closed_for(false, Action::Retry, Some(0)), None);
    }

    #[test]
    fn the_keys_refused_probes_are_asked_only_for_a_guessed_wait() {
        let settings = settings();
        let asked = std::cell::Cell::new(0);
        let refused_probes = || {
            asked.set(asked.get() + 1);
            Some(1)
        };
        let thirty = Some(30 * SECOND);
        let instructed = Budget::default().decide(Action::RateLimited, thirty, &settings, 0.0);
        let closed = closure(
            refused(thirty),
            Some(&instructed),
            &settings,
            0.0,
            refused_probes,
        );
        assert_eq!(closed, thirty);
        let returned = closure(refused(None), None, &settings, 0.0, refused_probes);
        assert_eq!(returned, Some(SECOND / 4), "the first guess");
        assert_eq!(asked.get(), 0);
        let guessed = Budget::default().decide(Action::RateLimited, None, &settings, 0.0);
        let closed = closure(
            refused(None),
            Some(&guessed),
            &settings,
            0.0,
            refused_probes,
        );
        assert_eq!(closed, Some(SECOND / 2), "the key's, one probe refused");
        assert_eq!(asked.get(), 1);
    }

    #[test]
    fn a_guessed_closure_is_capped_an_instructed_one_is_not_shortened() {
        let settings = Settings {
            backoff: crate::backoff::Backoff::new()
                .base(300 * SECOND)
                .max(3600 * SECOND),
            ..settings()
        };
        let guessed = refused(None);
        assert_eq!(
            closure(guessed, None, &settings, 0.5, || Some(0)),
            Some(60 * SECOND)
        );
        let decided = Budget::default().decide(Action::RateLimited, None, &settings, 0.5);
        assert!(decided.wait > 60 * SECOND);
        assert_eq!(
            closure(guessed, Some(&decided), &settings, 0.5, || Some(0)),
            Some(60 * SECOND)
        );
        let instructed = refused(Some(60 * SECOND));
        let waited = closure(instructed, None, &settings, 0.5, || Some(0)).unwrap();
        assert!(waited > 60 * SECOND, "the spread is added, not clamped");
    }

    #[test]
    fn a_refusal_for_too_many_in_flight_closes_the_gate_only_for_an_instruction() {
        let settings = settings();
        let decided = Budget::default().decide(Action::RateLimited, None, &settings, 0.5);
        let crowded = Answer {
            crowded: true,
            ..refused(None)
        };
        assert_eq!(
            closure(crowded, Some(&decided), &settings, 0.5, || Some(0)),
            None
        );
        assert_eq!(closure(crowded, None, &settings, 0.5, || Some(0)), None);
        let instructed = Answer {
            crowded: true,
            ..refused(Some(2 * SECOND))
        };
        assert!(closure(instructed, Some(&decided), &settings, 0.5, || Some(0)).is_some());
    }

    #[test]
    fn a_refusal_whose_wait_the_gate_does_not_take_closes_it_only_for_a_guess() {
        // A layer that does not respect what remains: the refused call waits out the spent
        // meter's hour (`instruction`), but its other calls are held only by a guess.
        let settings = settings();
        let meter_only = Answer {
            closing: None,
            ..refused(Some(3600 * SECOND))
        };
        let decided =
            Budget::default().decide(Action::RateLimited, Some(3600 * SECOND), &settings, 0.0);
        assert_eq!(
            closure(meter_only, Some(&decided), &settings, 0.0, || Some(0)),
            Some(SECOND / 4)
        );
    }

    #[test]
    fn an_instruction_beyond_the_horizon_is_declined_as_such() {
        let settings = settings();
        let beyond = settings.horizon + SECOND;
        let decision = Budget::default().decide(Action::RateLimited, Some(beyond), &settings, 0.0);
        assert_eq!(decision.declined, Some(Declined::BeyondHorizon));
        // The horizon itself is within what is remembered: over the cap, not beyond it.
        let at =
            Budget::default().decide(Action::RateLimited, Some(settings.horizon), &settings, 0.0);
        assert_eq!(at.declined, Some(Declined::OverCap));
    }

    #[test]
    fn a_retry_without_the_next_body_in_hand_is_declined_as_not_replayable() {
        let retried = Budget::default().decide(Action::Retry, None, &settings(), 0.0);
        assert_eq!(retried.with_body(true).declined, None);
        assert_eq!(
            retried.with_body(false).declined,
            Some(Declined::NotReplayable)
        );
        let mut spent = Budget::default();
        for _ in 0..3 {
            spent.spend(&retried, Duration::ZERO);
        }
        let out = spent.decide(Action::Retry, None, &settings(), 0.0);
        assert_eq!(
            out.with_body(false).declined,
            Some(Declined::OutOfRetries),
            "the first reason stands"
        );
    }
}
