//! Where a server puts its limits: [`ReadHeaders`], the trait a reader of a server's own headers
//! implements, and [`Found`], what a reader adds its findings to.
//!
//! The crate's own readers (one file per header family and per vendor) are rows of a table in
//! `headers/mod.rs`: each names the fields that prove its vendor, and the one pass over a
//! response's header names decides which rows run, so a response without a vendor's fields
//! costs that vendor one bit test. A reader of the user's own implements [`ReadHeaders`] over
//! the whole header map and runs on every response the layer reads: it pays its own way.

use std::borrow::Cow;
use std::time::Duration;

use http::HeaderMap;

use super::clock::ResponseClock;
use super::meter::{Reading, Readings, Unit};
use super::number::LONGEST;

/// A reader of rate-limit headers the crate does not read itself: a server's own names, or its
/// own way of writing a figure. Add one with
/// [`RateLimitLayer::read_headers_with`](crate::RateLimitLayer::read_headers_with); it runs
/// after the crate's readers, on every response the layer reads.
///
/// A closure `Fn(&HeaderMap, &ResponseClock, &mut Found)` is a reader.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use http::HeaderMap;
/// use tower_retry_after::RateLimitLayer;
/// use tower_retry_after::headers::{Figures, Found, ResponseClock};
///
/// // An API that writes its quota as `x-quota-left: 12` and its reset as `x-quota-reset-ms`.
/// fn quota(headers: &HeaderMap, clock: &ResponseClock, found: &mut Found<'_>) {
///     let number = |name: &str| headers.get(name)?.to_str().ok()?.parse::<u64>().ok();
///     if let Some(left) = number("x-quota-left") {
///         let mut figures = Figures::new().remaining(left);
///         if let Some(millis) = number("x-quota-reset-ms") {
///             figures = figures.reset_in(clock.countdown(Duration::from_millis(millis)));
///         }
///         found.meter(figures);
///     }
/// }
///
/// let layer = RateLimitLayer::new().read_headers_with(quota);
/// # let _ = layer;
/// ```
pub trait ReadHeaders: Send + Sync + 'static {
    /// Reads `headers`, received as `clock` tells, adding what it finds to `found`.
    fn read(&self, headers: &HeaderMap, clock: &ResponseClock, found: &mut Found<'_>);
}

impl<F> ReadHeaders for F
where
    F: Fn(&HeaderMap, &ResponseClock, &mut Found<'_>) + Send + Sync + 'static,
{
    fn read(&self, headers: &HeaderMap, clock: &ResponseClock, found: &mut Found<'_>) {
        self(headers, clock, found)
    }
}

/// What the readers of one response found: its meters, the server's instruction to wait, and
/// what the response says about the limit it counts against. A [`ReadHeaders`] adds to it.
#[derive(Debug, Default)]
pub struct Found<'a> {
    pub(crate) readings: Readings<'a>,
    pub(crate) retry_after: Option<Duration>,
    pub(crate) group: Option<Cow<'a, str>>,
    pub(crate) signals: Signals,
}

/// What a response says about how to treat it, beyond its figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Signals {
    /// The server answers a spent limit with 403 (GitHub proves it with
    /// `x-ratelimit-resource`).
    pub(crate) forbidden_is_refusal: bool,
    /// The refusal is for every limit of the credential, not one route's (Discord's global
    /// limit).
    pub(crate) global: bool,
    /// The refusal is for too many requests in flight, not too many per window (Stripe).
    pub(crate) concurrency: bool,
}

impl<'a> Found<'a> {
    /// Adds a meter. Its figures are the server's, as the reader read them; a reset is the
    /// time left at receipt, as [`ResponseClock`] measures it.
    pub fn meter(&mut self, figures: Figures) {
        self.readings.push(figures.reading);
    }

    /// The server's instruction to wait, from receipt. Zero is no instruction; of several,
    /// the longest stands.
    pub fn retry_after(&mut self, wait: Duration) {
        if !wait.is_zero() {
            self.retry_after = self.retry_after.max(Some(wait.min(LONGEST)));
        }
    }

    /// Names the limit the request counted against, where the server names one of several it
    /// keeps for one credential (GitHub's `x-ratelimit-resource`, Discord's bucket). Later
    /// calls to the same route are gated by that limit alone.
    pub fn limit_group(&mut self, name: &str) {
        if self.group.is_none() {
            self.group = Some(Cow::Owned(name.to_owned()));
        }
    }

    /// Says the server answers a spent limit with 403 as well as 429: a 403 carrying a spent
    /// meter or a `Retry-After` is then a refusal, retried on any method after its wait.
    pub fn forbidden_is_refusal(&mut self) {
        self.signals.forbidden_is_refusal = true;
    }

    /// Says the refusal holds every limit of the credential, not only the route's.
    pub fn global(&mut self) {
        self.signals.global = true;
    }

    /// Folds `reading` into the meter called `name` among the readings from `first` on (those
    /// one vendor's reader added), or adds it as a meter of that name while that reader has
    /// added fewer than [`MOST_NAMED_METERS`].
    pub(crate) fn add_named(&mut self, first: usize, name: &'a str, reading: Reading<'a>) {
        let known = self.readings[first..]
            .iter()
            .position(|known| known.name.as_deref() == Some(name));
        match known {
            Some(at) => self.readings[first + at].merge(reading),
            None if self.readings.len() - first < MOST_NAMED_METERS => {
                self.readings.push(Reading {
                    name: Some(Cow::Borrowed(name)),
                    ..reading
                });
            }
            None => {}
        }
    }
}

/// A response names a handful of meters in a vendor's own fields; a hostile one naming more
/// gets these many of each vendor.
const MOST_NAMED_METERS: usize = 8;

/// The figures of one meter, as a [`ReadHeaders`] found them. Unknown figures stay `None`:
/// absence is not zero.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use tower_retry_after::Unit;
/// use tower_retry_after::headers::Figures;
///
/// let tokens = Figures::new()
///     .name("tokens")
///     .unit(Unit::Tokens)
///     .limit(40_000)
///     .remaining(0)
///     .reset_in(Duration::from_secs(30))
///     .window(Duration::from_secs(60));
/// # let _ = tokens;
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    reading: Reading<'static>,
}

impl Figures {
    /// No figure known yet.
    pub fn new() -> Self {
        Figures::default()
    }

    /// The server's name for the quota.
    pub fn name(mut self, name: &str) -> Self {
        self.reading.name = Some(Cow::Owned(name.to_owned()));
        self
    }

    /// How many units the quota allows per window.
    pub fn limit(mut self, limit: u64) -> Self {
        self.reading.limit = Some(limit);
        self
    }

    /// How many units are left in the current window.
    pub fn remaining(mut self, remaining: u64) -> Self {
        self.reading.remaining = Some(remaining);
        self
    }

    /// The time left at receipt until the window resets (see [`ResponseClock`]).
    pub fn reset_in(mut self, reset: Duration) -> Self {
        self.reading.reset = Some(reset.min(LONGEST));
        self
    }

    /// How long a window lasts.
    pub fn window(mut self, window: Duration) -> Self {
        self.reading.window = Some(window.min(LONGEST));
        self
    }

    /// What the quota counts (requests unless said).
    pub fn unit(mut self, unit: Unit) -> Self {
        self.reading.unit = unit;
        self
    }
}
