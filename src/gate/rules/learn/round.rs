//! One round of the law (`super`): what let each request go, what went from a reset to the
//! next, and what its answers said, for the round to be judged once they are in.

use std::time::Duration;

use crate::gate::time::Moment;

/// What let a request go, as its answer is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "redis", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Tag<T> {
    pub(super) round: u64,
    /// It took one of the tokens its round began with.
    pub(super) burst: bool,
    /// Only a raise on trial let it go: of the burst, or of the rate.
    pub(super) trial: Option<Quantity>,
    /// How many were out when it went, itself included; whether as many as the burst allows.
    pub(super) out: u64,
    pub(super) crowded: bool,
    pub(super) at: T,
}

impl<T: Copy> Tag<T> {
    /// When the request went.
    pub(crate) fn sent(&self) -> T {
        self.at
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "redis", derive(serde::Serialize, serde::Deserialize))]
pub(super) enum Quantity {
    Burst,
    Rate,
}

/// What held calls back in a round.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "redis", derive(serde::Serialize, serde::Deserialize))]
pub(super) struct Held {
    pub(super) out: bool,
    pub(super) token: bool,
    pub(super) reset: bool,
}

/// One round of sends, from a reset (or, under a rate, the last round's end) to the next.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "redis", derive(serde::Serialize, serde::Deserialize))]
pub(super) struct Round<T> {
    pub(super) id: u64,
    pub(super) began: Option<T>,
    /// When its first answer came (a window it counts against began by then).
    pub(super) answered: Option<T>,
    pub(super) sent: u64,
    pub(super) out: u64,
    /// Tokens as of `at`; those it began with (that many go at once) and how many went.
    pub(super) level: f64,
    pub(super) at: Option<T>,
    pub(super) burst: u64,
    pub(super) burst_sent: u64,
    pub(super) burst_accepted: u64,
    pub(super) burst_refused: bool,
    pub(super) paced_accepted: u64,
    pub(super) paced_refused: bool,
    /// The fewest out at a refusal of a request that went with the burst's count out.
    pub(super) crowded: Option<u64>,
    /// Whether a raise on trial let requests go, of the burst, of the rate; whether one of
    /// those was refused, of each.
    pub(super) burst_tried: bool,
    pub(super) rate_tried: bool,
    #[cfg_attr(feature = "redis", serde(default))]
    pub(super) burst_trial_refused: bool,
    #[cfg_attr(feature = "redis", serde(default))]
    pub(super) rate_trial_refused: bool,
    /// The latest instruction its refusals named (`Some(None)`: refused, none named); when
    /// the first was heard; the latest refused send; what they cost.
    #[cfg_attr(feature = "redis", serde(with = "refusal"))]
    pub(super) refused: Option<Option<T>>,
    pub(super) heard: Option<T>,
    pub(super) refused_sent: Option<T>,
    pub(super) cost: Duration,
    pub(super) held: Held,
    /// The slow start's round, before the first refusal.
    pub(super) cold: bool,
    /// Where its reset was a guess: when the window it probes began, and whether its probe
    /// (its first request, sent alone) was accepted.
    pub(super) probing: Option<T>,
    pub(super) probed: bool,
    pub(super) last: Option<T>,
}

impl<T: Moment> Round<T> {
    pub(super) fn new(id: u64, level: f64, at: Option<T>, last: Option<T>) -> Self {
        Round {
            id,
            began: None,
            answered: None,
            sent: 0,
            out: 0,
            level,
            at,
            burst: level as u64,
            burst_sent: 0,
            burst_accepted: 0,
            burst_refused: false,
            paced_accepted: 0,
            paced_refused: false,
            crowded: None,
            burst_tried: false,
            rate_tried: false,
            burst_trial_refused: false,
            rate_trial_refused: false,
            refused: None,
            heard: None,
            refused_sent: None,
            cost: Duration::ZERO,
            held: Held::default(),
            cold: false,
            probing: None,
            probed: false,
            last,
        }
    }

    pub(super) fn answered(&mut self, tag: Tag<T>, refused: bool) {
        self.out = self.out.saturating_sub(1);
        let trial = tag.trial.is_some();
        match tag.trial {
            Some(Quantity::Burst) => self.burst_trial_refused |= refused,
            Some(Quantity::Rate) => self.rate_trial_refused |= refused,
            None => {}
        }
        if tag.burst {
            self.burst_accepted += u64::from(!refused);
            self.burst_refused |= refused && !trial;
        } else if refused && tag.crowded {
            self.crowded = Some(self.crowded.map_or(tag.out, |out| out.min(tag.out)));
        } else {
            self.paced_accepted += u64::from(!refused);
            self.paced_refused |= refused && !trial;
        }
    }

    /// Its first request, sent at `sent`, was one the last round let go: it took one of the
    /// burst's tokens all the same. (The round still ends a period after its own first answer,
    /// and still probes: where each request's count lapses a period after it, the burst's are
    /// what bind.)
    pub(super) fn opened_by(&mut self, sent: T) {
        (self.began, self.last) = (Some(sent), Some(sent));
        (self.sent, self.burst_sent, self.burst_accepted) = (1, 1, 1);
        self.level = (self.level - 1.0).max(0.0);
    }

    /// When the window it counts against began, at the latest it can tell.
    pub(super) fn window(&self) -> Option<T> {
        self.probing.filter(|_| !self.probed).or(self.began)
    }
}

/// [`Round::refused`] in a ledger's JSON: `null` before a refusal, the end of the instruction
/// where one was named, `"unnamed"` where none was. (JSON has one `null`: derived, a refusal
/// without an instruction would read back as no refusal at all.)
#[cfg(feature = "redis")]
mod refusal {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Wire<T> {
        Unnamed(Unnamed),
        Named(T),
    }

    #[derive(Serialize, Deserialize)]
    enum Unnamed {
        #[serde(rename = "unnamed")]
        Unnamed,
    }

    pub(super) fn serialize<T: Serialize, S: Serializer>(
        refused: &Option<Option<T>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let wire = refused.as_ref().map(|named| match named {
            Some(until) => Wire::Named(until),
            None => Wire::Unnamed(Unnamed::Unnamed),
        });
        wire.serialize(serializer)
    }

    pub(super) fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Option<T>>, D::Error> {
        let wire = Option::<Wire<T>>::deserialize(deserializer)?;
        Ok(wire.map(|wire| match wire {
            Wire::Named(until) => Some(until),
            Wire::Unnamed(_) => None,
        }))
    }
}
