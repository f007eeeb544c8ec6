//! The quota of a server that publishes none, learned from what it accepted and refused. Pure:
//! callers pass the times.
//!
//! - A window runs from its first accepted request to the next refusal; the requests it
//!   accepted are the limit. The length of a window is measured from its first request's send
//!   to the earliest time it was known to be over: the end of the instruction its refusal
//!   carried, or the send of the next request accepted. Both are later than the server's
//!   window end, so the estimate is never early; of several measurements the shortest is the
//!   tightest.
//! - While the estimate stands, the gate lets out that many a window and holds the rest until
//!   the window's end, measured from its first answer.
//! - An estimate holds calls back only once two windows agree on it (each within a quarter of
//!   the other): a server that refuses at random, or a limit shared with other clients, gives
//!   counts that do not agree, and pacing by one of them would throttle the client for
//!   nothing. Refused again near the limit (within a quarter below it), the limit becomes what
//!   that window accepted; a refusal far below it is not the quota speaking and leaves the
//!   limit as it is. A window whose first request was refused began too early: the length
//!   measured across it replaces the estimate's.
//! - Where the instruction a refusal carried has ended and the refused window's count agrees
//!   with the limit, the server named the end of the window it refused in: the next window
//!   begins there with the whole learned quota (a trial's too), as a reset the server reports
//!   restores its own, and no probe is owed. Answers to requests sent before then speak of
//!   windows already settled.
//! - After a run of windows passes unrefused the limit is raised by one; a raise that is
//!   refused doubles the run needed before the next. A length measured to the next accepted
//!   request is shortened by an eighth instead. Found too short while new (refused early, or
//!   far below the limit, before as many windows passed under it as the first shortening
//!   waited for), the length before stands again, and the next shortening waits twice as long
//!   and takes half as much. Such a length found early
//!   otherwise grows by an eighth, within what was measured across the refusal: that measure
//!   runs through guessed waits, and bounds it loosely.
//! - A response with meters makes all of it moot: the gate forgets the estimate.

use std::time::Duration;

use tokio::time::Instant;

use super::quota::Quota;

/// Windows passed unrefused before the limit is first raised.
const PATIENCE: u32 = 4;
/// The longest run of windows a raise waits for.
const MOST_PATIENCE: u32 = 64;
/// A length no instruction bounded is first shortened by one part in this many.
const FIRST_SHORTENING: u32 = 8;
/// The least a shortening takes off: one part in this many.
const LEAST_SHORTENING: u32 = 64;

/// What is learned of one key's limit.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Learning {
    window: Option<Window>,
    /// When the last window that passed unrefused began.
    passed: Option<Instant>,
    refused: Option<Refused>,
    estimate: Option<Estimate>,
    /// When the learned quota was last restored: answers to requests sent before then speak
    /// of windows already settled.
    restored: Option<Instant>,
}

/// The window under way: since its first accepted request.
#[derive(Clone, Copy, Debug)]
struct Window {
    sent: Instant,
    answered: Instant,
    accepted: u64,
}

/// A refusal ended a window. Requests sent before the refusal came back may still come back
/// accepted: they were out in its window (requests go out in any order, and the gate closes
/// only when the refusal is heard), and count in it. The first accepted request sent after
/// settles what the window says: how many it accepted, and how long it lasted.
#[derive(Clone, Copy, Debug)]
struct Refused {
    /// When the measured span began: the refused window's first request's send.
    began: Instant,
    /// When the refusal came back.
    heard: Instant,
    /// How many requests the refused window accepted.
    accepted: u64,
    /// The end of the instruction the refusal carried.
    until: Option<Instant>,
    /// The span began a window before the refused request's: the estimate's length was too
    /// short, and this measurement replaces it.
    early: bool,
}

#[derive(Clone, Copy, Debug)]
struct Estimate {
    limit: u64,
    /// Two windows agreed on the limit: it holds calls back.
    agreed: bool,
    length: Duration,
    /// The length was bounded by the end of a refusal's instruction, not by a request accepted
    /// after it.
    instructed: bool,
    unrefused: u32,
    patience: u32,
    /// The limit was just raised: a refusal puts it back and doubles the patience.
    trying: bool,
    /// The length in force is a guessed one shortened, not one measured, from this one, which
    /// passed its windows unrefused: found too short, it stands again, and the next shortening
    /// waits twice as long and takes half as much.
    shortened_from: Option<Duration>,
    /// What share of the length the next shortening takes off: one part in this many.
    shortening: u32,
}

impl Learning {
    /// A request sent at `sent` was accepted, at `now`.
    pub(crate) fn accepted(&mut self, sent: Instant, now: Instant) {
        if self.settled(sent) {
            return;
        }
        self.end_passed_window(sent);
        if let Some(window) = self.window.as_mut() {
            window.accepted += 1;
            return;
        }
        if let Some(refused) = self.refused.as_mut() {
            if sent <= refused.heard {
                // Out before the refusal was heard: it counts in the refused window.
                refused.accepted += 1;
                return;
            }
        }
        if let Some(refused) = self.refused.take() {
            self.settle(refused, sent);
        }
        self.begin(sent, now, 1);
    }

    /// A request sent at `sent` was refused, heard at `now`, with the server's instruction
    /// ending at `until` if it gave one.
    pub(crate) fn refused(&mut self, sent: Instant, now: Instant, until: Option<Instant>) {
        if self.settled(sent) {
            return;
        }
        self.end_passed_window(sent);
        if let Some(window) = self.window.take() {
            self.refused = Some(Refused {
                began: window.sent,
                heard: now,
                accepted: window.accepted,
                until,
                early: false,
            });
            return;
        }
        match self.refused.as_mut() {
            Some(refused) => {
                refused.until = refused.until.max(until);
            }
            // The window the estimate said had passed had not.
            None => {
                self.refused = self.passed.map(|began| Refused {
                    began,
                    heard: now,
                    accepted: 0,
                    until,
                    early: true,
                });
            }
        }
    }

    /// The gate's closure after a refusal is over at `now`, for calls capped at `cap`. Where
    /// the refusal's instruction has ended, it named the end of the refused window, never
    /// early: the window is settled, and, as a reset the server reported restores its quota,
    /// the next window begins now with the whole learned quota (a trial's too: its wall is met
    /// with at most a quarter of it out, as after a probe). Whether it did: then no probe is
    /// owed. Where it does not ([`restores_when_reopened`](Self::restores_when_reopened)),
    /// nothing changes, and the next request probes.
    pub(crate) fn reopened(&mut self, now: Instant, cap: Duration) -> bool {
        let over = self
            .refused
            .and_then(|refused| refused.until)
            .is_some_and(|until| until <= now);
        let Some(refused) = self
            .refused
            .filter(|_| over && self.restores_when_reopened(cap))
        else {
            return false;
        };
        self.refused = None;
        self.settle(refused, now);
        self.restore(now);
        true
    }

    /// Whether the learned quota goes at once when the closure after the refusal heard last
    /// ends, for calls capped at `cap`: see [`reopened`](Self::reopened). Not where the
    /// refusal carried no instruction, nor where the refused window accepted nothing (that was
    /// not the quota speaking). Only where its count agrees with the limit learned: a count far
    /// from it says the instruction named when one request more would go (a token bucket's
    /// next token, a sliding window's oldest request leaving), not when a window's quota comes
    /// back. Nor where the window measured is longer than `cap`: a learned quota resetting
    /// beyond it holds none of those calls.
    pub(crate) fn restores_when_reopened(&self, cap: Duration) -> bool {
        let Some(refused) = self.refused.filter(|_| self.window.is_none()) else {
            return false;
        };
        refused.accepted > 0
            && refused
                .until
                .is_some_and(|until| until.saturating_duration_since(refused.began) <= cap)
            && self.estimate.is_none_or(|estimate| {
                estimate.instructed && agree(estimate.limit, refused.accepted)
            })
    }

    /// What a refused window says, now that a request sent after its refusal was accepted
    /// at `sent`: it was over by then.
    fn settle(&mut self, refused: Refused, sent: Instant) {
        let (known_over, instructed) = match refused.until {
            Some(until) if until <= sent => (until, true),
            _ => (sent, false),
        };
        let measured = known_over.saturating_duration_since(refused.began);
        let accepted = refused.accepted;
        let Some(estimate) = self.estimate.as_mut() else {
            // The first window: it began with an accepted request.
            self.estimate = Some(Estimate {
                limit: accepted,
                agreed: false,
                length: measured,
                instructed,
                unrefused: 0,
                patience: PATIENCE,
                trying: false,
                shortened_from: None,
                shortening: FIRST_SHORTENING,
            });
            return;
        };
        // Refused at a count that does not agree with its limit (far below it: the gate lets
        // no more out), a window under a shortening still new (fewer windows passed under it
        // than the first shortening waited for) says, as one refused early does, that the
        // shortening was too short.
        let far_below = estimate.agreed && !agree(estimate.limit, accepted);
        let shortened_from = estimate
            .shortened_from
            .filter(|_| estimate.unrefused < PATIENCE && (refused.early || far_below));
        if shortened_from.is_some() {
            estimate.patience = (estimate.patience * 2).min(MOST_PATIENCE);
            estimate.shortening = (estimate.shortening * 2).min(LEAST_SHORTENING);
        }
        if refused.early || shortened_from.is_some() || measured < estimate.length {
            // Measured across the refusal, the length is only bounded: the one that passed
            // its windows before the shortening is the tighter, unless this is shorter.
            (estimate.length, estimate.instructed) = match shortened_from {
                Some(before) if before <= measured => (before, false),
                // Found early, a length no instruction bounded is only bounded by the next
                // request accepted, guessed waits after the refusal: an eighth longer is
                // tried, within that bound.
                None if refused.early && !instructed => {
                    (measured.min(estimate.length + estimate.length / 8), false)
                }
                _ => (measured, instructed),
            };
            estimate.shortened_from = None;
        }
        estimate.unrefused = 0;
        if accepted == 0 {
            return;
        }
        if estimate.trying {
            estimate.patience = (estimate.patience * 2).min(MOST_PATIENCE);
        }
        if !estimate.agreed {
            estimate.agreed = agree(estimate.limit, accepted);
            estimate.limit = accepted;
        } else if agree(estimate.limit, accepted) {
            estimate.limit = estimate.limit.min(accepted);
        }
        estimate.trying = false;
    }

    /// Whether a request sent at `sent` went before the learned quota was last restored: its
    /// window is settled.
    fn settled(&self, sent: Instant) -> bool {
        self.restored.is_some_and(|restored| sent < restored)
    }

    /// Begins a window at `now` with the whole learned quota.
    fn restore(&mut self, now: Instant) {
        self.begin(now, now, 0);
        self.restored = Some(now);
    }

    /// Begins a window with its first request sent at `sent`, answered at `answered`.
    fn begin(&mut self, sent: Instant, answered: Instant, accepted: u64) {
        self.window = Some(Window {
            sent,
            answered,
            accepted,
        });
    }

    /// A response carried meters: what they say replaces anything learned.
    pub(crate) fn forget(&mut self) {
        *self = Learning::default();
    }

    /// The quota learned for the window under way, while it lasts.
    pub(crate) fn quota(&self, now: Instant) -> Option<Quota> {
        let (window, estimate) = self.window.zip(self.estimate)?;
        let reset_at = window.answered + estimate.length;
        (reset_at > now).then(|| Quota {
            remaining: estimate.allowed().saturating_sub(window.accepted),
            reset_at,
        })
    }

    /// Whether the window under way had its quota spent and is over at `now`. If the server
    /// named its length (the end of a refusal's instruction bounds it, never early), the next
    /// window begins now with the whole learned quota, as a reset the server reported
    /// restores its own; otherwise the length is a guess, and the next request begins a new
    /// window, as a probe. True (a probe is owed) once: the window has then passed.
    pub(crate) fn spent_window_over(&mut self, now: Instant) -> bool {
        let Some(estimate) = self.estimate else {
            return false;
        };
        let spent = self
            .window
            .is_some_and(|window| window.accepted >= estimate.allowed());
        if !(spent && self.end_passed_window(now)) {
            return false;
        }
        let restores = estimate.agreed && estimate.instructed;
        if restores {
            self.restore(now);
        }
        !restores
    }

    /// Ends the window under way if it is over at `at`: it passed unrefused, and after enough
    /// such windows the limit is raised by one. Whether it ended.
    fn end_passed_window(&mut self, at: Instant) -> bool {
        let Some((window, estimate)) = self.window.zip(self.estimate.as_mut()) else {
            return false;
        };
        if window.answered + estimate.length > at {
            return false;
        }
        self.window = None;
        self.passed = Some(window.sent);
        if !estimate.agreed {
            // Its whole trial passed unrefused: the first count was low, and this is the new
            // one to agree with.
            if window.accepted >= estimate.allowed() {
                estimate.limit = window.accepted;
            }
            return true;
        }
        estimate.trying = false;
        estimate.unrefused += 1;
        if estimate.unrefused >= estimate.patience {
            estimate.unrefused = 0;
            if estimate.instructed {
                estimate.limit += 1;
                estimate.trying = true;
            } else {
                // A length measured to the next accepted request is as long as the guessed
                // waits before it: try it shorter.
                estimate.shortened_from = Some(estimate.length);
                estimate.length -= estimate.length / estimate.shortening;
            }
        }
        true
    }
}

impl Estimate {
    /// How many a window lets out: the limit once two windows agreed on it; before that, as
    /// many as would still agree with the one count there is, so that the window that
    /// confirms it meets the wall with few out, and one that does not raises it.
    fn allowed(&self) -> u64 {
        if self.agreed {
            self.limit
        } else {
            (self.limit * 4 / 3).max(self.limit + 1)
        }
    }
}

/// Whether two counts of accepted requests agree: the smaller is within a quarter of the
/// larger.
fn agree(one: u64, other: u64) -> bool {
    one.min(other).saturating_mul(4) >= one.max(other).saturating_mul(3)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const SECOND: Duration = Duration::from_secs(1);
    /// The default cap of a call.
    const CAP: Duration = Duration::from_secs(60);

    /// Requests `range` of those sent a millisecond apart from `from`, each accepted as it
    /// went.
    fn accept(learning: &mut Learning, from: Instant, range: std::ops::Range<u32>) {
        for nth in range {
            learning.accepted(from + MS * nth, from + MS * nth);
        }
    }

    /// A window of `accepted` requests answered from `start` on, a millisecond apart, ended by
    /// a refusal naming `wait`; returns when the window's first request went.
    fn refused_window(learning: &mut Learning, start: Instant, accepted: u64, wait: Duration) {
        for nth in 0..accepted {
            let at = start + MS * nth as u32;
            learning.accepted(at, at + 20 * MS);
        }
        let sent = start + MS * accepted as u32;
        learning.refused(sent, sent + 20 * MS, Some(sent + 20 * MS + wait));
    }

    #[test]
    fn two_windows_that_agree_give_the_limit_and_the_length() {
        let start = Instant::now();
        let mut learning = Learning::default();
        refused_window(&mut learning, start, 20, 2 * SECOND);
        // One window is only a trial: the next lets out no more than would still agree with
        // it, 26, so that it meets the wall with few out.
        let reopened = start + 2100 * MS;
        learning.accepted(reopened, reopened + 20 * MS);
        assert_eq!(learning.quota(reopened + 20 * MS).unwrap().remaining, 25);
        for nth in 1..20 {
            let at = reopened + MS * nth;
            learning.accepted(at, at + 20 * MS);
        }
        learning.refused(
            reopened + 20 * MS,
            reopened + 40 * MS,
            Some(reopened + 40 * MS + SECOND),
        );
        let next = reopened + 1100 * MS;
        learning.accepted(next, next + 20 * MS);
        let quota = learning.quota(next + 20 * MS).unwrap();
        assert_eq!(quota.remaining, 19, "20 a window, one of them out");
        // The length runs from the first send to the end of the refusal's instruction: the
        // shorter of the two measured, 2.04 s then 1.04 s.
        let shortest = (reopened + 40 * MS + SECOND) - reopened;
        assert_eq!(quota.reset_at, next + 20 * MS + shortest);
        assert_eq!(learning.quota(quota.reset_at), None, "over at its end");
    }

    #[test]
    fn counts_that_disagree_leave_a_trial_that_grows_while_it_passes_unrefused() {
        let start = Instant::now();
        let mut learning = Learning::default();
        refused_window(&mut learning, start, 20, SECOND);
        let reopened = start + 1100 * MS;
        refused_window(&mut learning, reopened, 3, SECOND);
        let next = reopened + 1100 * MS;
        learning.accepted(next, next);
        // 20 then 3 (a server refusing at random): no agreement, a trial of 4 a window.
        assert_eq!(learning.quota(next).unwrap().remaining, 3);
        accept(&mut learning, next, 1..4);
        let length = learning.quota(next).unwrap().reset_at - next;
        // All 4 passed unrefused: the count was low, the next trial lets out 5.
        let after = next + length;
        learning.accepted(after, after);
        assert_eq!(learning.quota(after).unwrap().remaining, 4);
        // Refused at 5: 4 then 5 agree, and the limit holds at 5.
        accept(&mut learning, after, 1..5);
        learning.refused(
            after + 5 * MS,
            after + 5 * MS + 20 * MS,
            Some(after + SECOND),
        );
        let last = after + 2 * SECOND;
        learning.accepted(last, last);
        assert_eq!(learning.quota(last).unwrap().remaining, 4);
    }

    /// Learns 20 a window of about a second; the window under way began at the returned time.
    fn learned(start: Instant) -> (Learning, Instant) {
        let mut learning = Learning::default();
        refused_window(&mut learning, start, 20, SECOND);
        let second = start + 1100 * MS;
        refused_window(&mut learning, second, 20, SECOND);
        let third = second + 1100 * MS;
        learning.accepted(third, third);
        (learning, third)
    }

    #[test]
    fn a_refusal_far_below_the_limit_is_not_the_quota_speaking() {
        let (mut learning, now) = learned(Instant::now());
        learning.refused(now + MS, now + MS + 20 * MS, Some(now + SECOND));
        let next = now + 2 * SECOND;
        learning.accepted(next, next);
        assert_eq!(learning.quota(next).unwrap().remaining, 19);
        // Refused near it, the limit becomes what the window accepted.
        accept(&mut learning, next, 1..17);
        learning.refused(
            next + 17 * MS,
            next + 17 * MS + 20 * MS,
            Some(next + SECOND),
        );
        let after = next + 2 * SECOND;
        learning.accepted(after, after);
        assert_eq!(learning.quota(after).unwrap().remaining, 16);
    }

    #[test]
    fn windows_passing_unrefused_raise_the_limit_and_a_refused_raise_doubles_the_wait() {
        let (mut learning, mut window) = learned(Instant::now());
        let length = learning.quota(window).unwrap().reset_at - window;
        let mut limits = Vec::new();
        loop {
            let quota = learning.quota(window).unwrap();
            limits.push(quota.remaining + 1);
            if limits.len() == 9 {
                break;
            }
            window += length;
            learning.accepted(window, window);
        }
        assert_eq!(
            limits,
            [20, 20, 20, 20, 21, 21, 21, 21, 22],
            "a raise each four"
        );
        // Refused at 22: back to 21, and the next raise waits eight windows.
        accept(&mut learning, window, 1..21);
        learning.refused(
            window + 21 * MS,
            window + 21 * MS + 20 * MS,
            Some(window + length),
        );
        let mut limits = Vec::new();
        window += 2 * length;
        for _ in 0..10 {
            learning.accepted(window, window);
            limits.push(learning.quota(window).unwrap().remaining + 1);
            window += length;
        }
        assert_eq!(limits[..8], [21; 8]);
        assert_eq!(limits[8], 22);
    }

    #[test]
    fn a_window_whose_first_request_is_refused_lengthens_the_estimate() {
        let (mut learning, window) = learned(Instant::now());
        let length = learning.quota(window).unwrap().reset_at - window;
        // The next window's first request, sent at the learned end, is refused for 300 ms
        // more: the window began 300 ms later than learned.
        let early = window + length;
        learning.refused(early, early + 20 * MS, Some(early + 300 * MS));
        let next = early + 400 * MS;
        learning.accepted(next, next);
        let longer = learning.quota(next).unwrap().reset_at - next;
        assert_eq!(
            longer,
            early + 300 * MS - window,
            "measured from the window that had not passed to the refusal's end"
        );
        assert!(longer > length);
    }

    #[test]
    fn meters_make_the_estimate_moot() {
        let (mut learning, window) = learned(Instant::now());
        learning.forget();
        assert_eq!(learning.quota(window), None);
    }

    #[test]
    fn a_spent_window_whose_length_the_server_named_restores_its_quota_at_its_end() {
        let (mut learning, window) = learned(Instant::now());
        let end = learning.quota(window).unwrap().reset_at;
        accept(&mut learning, window, 1..20);
        assert_eq!(learning.quota(window + 20 * MS).unwrap().remaining, 0);
        assert!(!learning.spent_window_over(end - MS));
        assert!(!learning.spent_window_over(end), "no probe owed");
        assert_eq!(
            learning.quota(end).unwrap().remaining,
            20,
            "all of it, at once"
        );
    }

    #[test]
    fn a_spent_window_whose_length_was_guessed_owes_a_probe_once_at_its_end() {
        let start = Instant::now();
        let mut learning = Learning::default();
        // Refusals without an instruction: the length is measured to the next acceptance.
        for window in 0..3 {
            let began = start + 2 * SECOND * window;
            accept(&mut learning, began, 0..20);
            learning.refused(began + 20 * MS, began + 40 * MS, None);
        }
        let last = start + 6 * SECOND;
        learning.accepted(last, last);
        accept(&mut learning, last, 1..20);
        let end = learning.quota(last).unwrap().reset_at;
        assert_eq!(end, last + 2 * SECOND);
        assert!(learning.spent_window_over(end));
        assert!(!learning.spent_window_over(end), "once");
        assert_eq!(
            learning.quota(end),
            None,
            "the probe begins the next window"
        );
    }

    #[test]
    fn a_request_accepted_before_the_instruction_ended_bounds_the_length_instead() {
        let start = Instant::now();
        let mut learning = Learning::default();
        for window in 0..3 {
            let began = start + 2 * SECOND * window;
            accept(&mut learning, began, 0..20);
            // Told to wait a second, but a request sent 600 ms after the window began was
            // accepted (a token came back): the window was over by then.
            learning.refused(began + 20 * MS, began + 40 * MS, Some(began + SECOND));
            learning.accepted(began + 600 * MS, began + 600 * MS);
            for nth in 1..20 {
                learning.accepted(began + 600 * MS + MS * nth, began + 600 * MS);
            }
            learning.refused(
                began + 700 * MS,
                began + 700 * MS + 20 * MS,
                Some(began + 1700 * MS),
            );
        }
        let last = start + 6 * SECOND;
        learning.accepted(last, last);
        let end = learning.quota(last).unwrap().reset_at;
        assert_eq!(
            end,
            last + 600 * MS,
            "to the accepted send, not the instruction"
        );
        accept(&mut learning, last, 1..20);
        assert!(
            learning.spent_window_over(end),
            "a length not named: a probe"
        );
    }

    /// Learns 20 a window without instructions, each window found over 2 s after it began.
    fn guessed(start: Instant) -> (Learning, Instant) {
        let mut learning = Learning::default();
        for window in 0..3 {
            let began = start + 2 * SECOND * window;
            accept(&mut learning, began, 0..20);
            learning.refused(began + 20 * MS, began + 40 * MS, None);
        }
        let last = start + 6 * SECOND;
        learning.accepted(last, last);
        (learning, last)
    }

    /// Spends the window under way, which began at `began`, and begins the next at its end,
    /// as the gate does: a probe, accepted. Returns when the next began.
    fn pass_window(learning: &mut Learning, began: Instant) -> Instant {
        let end = learning.quota(began).unwrap().reset_at;
        accept(learning, began, 1..20);
        assert!(learning.spent_window_over(end));
        learning.accepted(end, end);
        end
    }

    /// Passes `count` windows from `window`, as [`pass_window`] does, and moves `window` on to
    /// the last one's end: the lengths they took.
    fn pass_windows(learning: &mut Learning, window: &mut Instant, count: usize) -> Vec<Duration> {
        (0..count)
            .map(|_| {
                let next = pass_window(learning, *window);
                let length = next - *window;
                *window = next;
                length
            })
            .collect()
    }

    #[test]
    fn a_guessed_length_is_shortened_by_an_eighth_after_a_run_of_windows_unrefused() {
        let (mut learning, mut window) = guessed(Instant::now());
        let lengths = pass_windows(&mut learning, &mut window, 5);
        let two = 2 * SECOND;
        assert_eq!(
            lengths,
            [two, two, two, two, two - two / 8],
            "the limit stays 20"
        );
        assert_eq!(learning.quota(window).unwrap().remaining, 19);
        // The shortened window's end was early: the probe is refused. Measured across it, the
        // window was over within 2.5 s; the 2 s that passed before the shortening is tighter,
        // and stands again. The next shortening waits twice as long.
        let end = learning.quota(window).unwrap().reset_at;
        accept(&mut learning, window, 1..20);
        assert!(learning.spent_window_over(end));
        learning.refused(end, end + 20 * MS, None);
        let found = window + 2500 * MS;
        learning.accepted(found, found);
        assert_eq!(learning.quota(found).unwrap().reset_at, found + 2 * SECOND);
        let mut window = found;
        let lengths = pass_windows(&mut learning, &mut window, 9);
        assert_eq!(lengths[..8], [two; 8]);
        assert_eq!(lengths[8], two - two / 16, "and takes half as much");
    }

    #[test]
    fn a_refusal_far_below_the_limit_after_a_shortening_gives_back_the_length_before_it() {
        let (mut learning, mut window) = guessed(Instant::now());
        for _ in 0..4 {
            window = pass_window(&mut learning, window);
        }
        // Shortened to 1.75 s, this window is refused at its sixth request: not the count
        // speaking, the shortening.
        accept(&mut learning, window, 1..5);
        learning.refused(window + 5 * MS, window + 25 * MS, None);
        let mut window = window + 2 * SECOND;
        learning.accepted(window, window);
        let lengths = pass_windows(&mut learning, &mut window, 9);
        let two = 2 * SECOND;
        assert_eq!(
            lengths[..8],
            [two; 8],
            "the length before, for twice as long"
        );
        assert_eq!(lengths[8], two - two / 16, "and takes half as much");
    }

    #[test]
    fn a_length_no_instruction_bounded_found_early_grows_by_an_eighth_within_the_measure() {
        let (mut learning, window) = guessed(Instant::now());
        let end = learning.quota(window).unwrap().reset_at;
        accept(&mut learning, window, 1..20);
        assert!(learning.spent_window_over(end));
        // The probe at the window's end is refused: the window had not passed. The next
        // request accepted a second later bounds it at 3 s; an eighth longer is tried.
        learning.refused(end, end + 20 * MS, None);
        let found = end + SECOND;
        learning.accepted(found, found);
        let length = learning.quota(found).unwrap().reset_at - found;
        assert_eq!(length, 2 * SECOND + 2 * SECOND / 8);
    }

    #[test]
    fn a_refusal_far_below_the_limit_leaves_a_shortening_that_held_its_windows() {
        let (mut learning, mut window) = guessed(Instant::now());
        for _ in 0..4 {
            window = pass_window(&mut learning, window);
        }
        // Shortened to 1.75 s, found early: 2 s again, the next shortening after eight
        // windows, a sixteenth.
        let end = learning.quota(window).unwrap().reset_at;
        accept(&mut learning, window, 1..20);
        assert!(learning.spent_window_over(end));
        learning.refused(end, end + 20 * MS, None);
        let mut window = window + 2 * SECOND;
        learning.accepted(window, window);
        for _ in 0..12 {
            window = pass_window(&mut learning, window);
        }
        // Shortened to 1.875 s four windows ago: a refusal far below the limit now is not the
        // shortening speaking.
        let shortened = 2 * SECOND - 2 * SECOND / 16;
        accept(&mut learning, window, 1..5);
        learning.refused(window + 5 * MS, window + 25 * MS, None);
        let next = window + 2 * SECOND;
        learning.accepted(next, next);
        assert_eq!(learning.quota(next).unwrap().reset_at, next + shortened);
    }

    #[test]
    fn a_refusal_at_the_limit_after_a_shortening_does_not_slow_the_next() {
        let (mut learning, mut window) = guessed(Instant::now());
        for _ in 0..4 {
            window = pass_window(&mut learning, window);
        }
        // Shortened to 1.75 s; this window meets the wall at its 21st request, as the first
        // ones did: the count, not the length, speaks.
        accept(&mut learning, window, 1..20);
        learning.refused(window + 20 * MS, window + 40 * MS, None);
        let mut window = window + 2 * SECOND;
        learning.accepted(window, window);
        let lengths = pass_windows(&mut learning, &mut window, 5);
        let shortened = 2 * SECOND - 2 * SECOND / 8;
        assert_eq!(lengths[..4], [shortened; 4]);
        assert_eq!(
            lengths[4],
            shortened - shortened / 8,
            "after four more, not eight"
        );
    }

    #[test]
    fn the_end_of_a_refusals_instruction_restores_the_learned_quota_unless_nothing_was_accepted() {
        let start = Instant::now();
        let mut learning = Learning::default();
        refused_window(&mut learning, start, 20, SECOND);
        let until = start + 40 * MS + SECOND;
        assert!(
            !learning.reopened(until - MS, CAP),
            "the instruction has not ended"
        );
        assert!(learning.reopened(until, CAP));
        // One window's count is a trial: 26 go at once, for the length measured to the end of
        // the instruction.
        let quota = learning.quota(until).unwrap();
        assert_eq!(quota.remaining, 26);
        assert_eq!(quota.reset_at, until + (until - start));
        // The server refused the restored window's first request: its count was not the
        // quota speaking, and the next reopening probes.
        learning.refused(until, until + 20 * MS, Some(until + 20 * MS + SECOND));
        assert!(!learning.restores_when_reopened(CAP));
        assert!(!learning.reopened(until + 2 * SECOND, CAP));
        assert_eq!(learning.quota(until + 2 * SECOND), None);
    }

    #[test]
    fn a_refused_window_far_below_the_limit_or_longer_than_the_cap_owes_a_probe() {
        // Refused at its third request, where 20 were learned: the instruction named when one
        // more would go, not when a window's quota comes back.
        let (mut learning, now) = learned(Instant::now());
        accept(&mut learning, now, 1..3);
        let until = now + 20 * MS + SECOND;
        learning.refused(now + 3 * MS, now + 20 * MS, Some(until));
        assert!(!learning.restores_when_reopened(CAP));
        assert!(!learning.reopened(until, CAP));
        // A window measured longer than the calls' cap: its quota would hold none of them.
        let start = Instant::now();
        let mut learning = Learning::default();
        refused_window(&mut learning, start, 20, SECOND);
        let until = start + 40 * MS + SECOND;
        assert!(!learning.reopened(until, SECOND));
        assert!(learning.reopened(until, SECOND + 40 * MS));
    }

    #[test]
    fn a_refused_window_that_restores_nothing_is_settled_by_the_next_request_accepted() {
        let (mut learning, now) = learned(Instant::now());
        accept(&mut learning, now, 1..3);
        let until = now + 20 * MS + SECOND;
        learning.refused(now + 3 * MS, now + 20 * MS, Some(until));
        assert!(!learning.reopened(until, CAP));
        // The probe is refused too: the same window, its instruction now later.
        let later = until + 20 * MS + SECOND;
        learning.refused(until, until + 20 * MS, Some(later));
        let next = later + 10 * MS;
        learning.accepted(next, next);
        // Measured from the window's first request to the latest instruction, 2.04 s: longer
        // than the 1.04 s learned, which stands (the window was not settled at the first
        // instruction's end, which would have measured 1.02 s).
        assert_eq!(
            learning.quota(next).unwrap().reset_at,
            next + SECOND + 40 * MS
        );
    }

    #[test]
    fn answers_to_requests_sent_before_a_restore_leave_the_restored_window_alone() {
        let start = Instant::now();
        let mut learning = Learning::default();
        refused_window(&mut learning, start, 20, SECOND);
        let until = start + 40 * MS + SECOND;
        assert!(learning.reopened(until, CAP));
        let whole = learning.quota(until).unwrap();
        // A straggler sent before the refusal was heard comes back accepted, another refused:
        // their window is settled.
        learning.accepted(start + 30 * MS, until + 10 * MS);
        learning.refused(start + 35 * MS, until + 20 * MS, Some(until + SECOND));
        assert_eq!(learning.quota(until + 20 * MS), Some(whole));
    }

    #[test]
    fn a_refusal_without_an_instruction_owes_a_probe_at_the_reopening() {
        let start = Instant::now();
        let mut learning = Learning::default();
        accept(&mut learning, start, 0..20);
        learning.refused(start + 20 * MS, start + 40 * MS, None);
        assert!(!learning.restores_when_reopened(CAP));
        assert!(!learning.reopened(start + 2 * SECOND, CAP));
    }

    #[test]
    fn a_trial_lets_out_at_least_one_more_than_the_count_it_tries() {
        let start = Instant::now();
        let mut learning = Learning::default();
        refused_window(&mut learning, start, 1, SECOND);
        let next = start + 1100 * MS;
        learning.accepted(next, next);
        assert_eq!(learning.quota(next).unwrap().remaining, 1, "two in all");
    }

    #[test]
    fn a_request_out_before_the_refusal_was_heard_counts_in_its_window() {
        let start = Instant::now();
        let mut learning = Learning::default();
        for window in 0..2 {
            let began = start + 2 * SECOND * window;
            accept(&mut learning, began, 0..15);
            // The sixteenth is refused, heard at 40 ms; five sent before or after it (but
            // before it was heard) come back accepted later.
            learning.refused(began + 20 * MS, began + 40 * MS, Some(began + SECOND));
            for nth in [15, 16, 25, 30, 39] {
                learning.accepted(began + MS * nth, began + 50 * MS);
            }
        }
        let next = start + 4 * SECOND;
        learning.accepted(next, next);
        assert_eq!(
            learning.quota(next).unwrap().remaining,
            19,
            "20 a window, not 15"
        );
    }
}
