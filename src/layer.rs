//! [`RateLimitLayer`] and its settings.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::request::Parts;
use tower_layer::Layer;

use crate::backoff::Backoff;
use crate::config::Config;
use crate::gate::Gates;
use crate::headers::ReadHeaders;
use crate::jitter::Jitter;
use crate::key::{Key, KeyFunction};
use crate::notice::Notice;
use crate::policy::StatusPolicy;
use crate::service::RateLimit;

/// Applies [`RateLimit`] to a service. See the [crate documentation](crate) for what it does.
///
/// Every setting has a documented default. What you set is never overridden: of the cap,
/// `max_wait` and the horizon, the ones left unset follow the ones set, and ones set at odds
/// make the setter panic with a message naming the setting to change, whatever the order; so
/// does turning [`slow_start`](Self::slow_start) or [`learn_limits`](Self::learn_limits) on by
/// name where [`respect_remaining`](Self::respect_remaining) is off (they would do nothing).
///
/// | setting | default |
/// |---|---|
/// | [`retry_on_rate_limit`](Self::retry_on_rate_limit) | on (off = observe only) |
/// | [`retry_after_cap`](Self::retry_after_cap) | 60 s (at most half of `max_wait`, if set) |
/// | [`max_wait`](Self::max_wait) | 120 s (at least 2 × the cap, if set) |
/// | [`retry_after_horizon`](Self::retry_after_horizon) | 2 days (at least the cap) |
/// | [`transient_retries`](Self::transient_retries) | 3 |
/// | [`rate_limited_retries`](Self::rate_limited_retries) | 10 |
/// | [`backoff`](Self::backoff) | 500 ms × 2^n, at most 20 s, × U[0.5, 1] |
/// | [`respect_remaining`](Self::respect_remaining) | on |
/// | [`probe_timeout`](Self::probe_timeout) | 10 s |
/// | [`slow_start`](Self::slow_start) | on |
/// | [`learn_limits`](Self::learn_limits) | on |
/// | [`key`](Self::key) | the request's origin, [`Key::origin`] |
/// | [`gates`](Self::gates) | a set of gates of its own, shared by every service it makes |
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use tower::ServiceBuilder;
/// use tower_retry_after::RateLimitLayer;
///
/// let layer = RateLimitLayer::new()
///     .retry_after_cap(Duration::from_secs(30))
///     .max_wait(Duration::from_secs(90));
/// let service = ServiceBuilder::new()
///     .layer(layer)
///     .service_fn(|_request: http::Request<String>| async {
///         Ok::<_, std::convert::Infallible>(http::Response::new(String::new()))
///     });
/// # let _ = service;
/// ```
#[derive(Clone)]
pub struct RateLimitLayer<P = StatusPolicy> {
    policy: P,
    config: Config,
}

impl<P: fmt::Debug> fmt::Debug for RateLimitLayer<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitLayer")
            .field("policy", &self.policy)
            .field("config", &self.config)
            .finish()
    }
}

impl RateLimitLayer {
    /// A layer with the default settings and [`StatusPolicy`].
    pub fn new() -> Self {
        Self::default()
    }
}

impl Default for RateLimitLayer {
    fn default() -> Self {
        RateLimitLayer {
            policy: StatusPolicy::new(),
            config: Config::default(),
        }
    }
}

impl<S> RateLimit<S> {
    /// A [`RateLimitLayer`] with the default settings, to configure and apply.
    pub fn layer() -> RateLimitLayer {
        RateLimitLayer::new()
    }
}

impl<P> RateLimitLayer<P> {
    /// Uses `policy` to decide what is retried and how bodies are replayed.
    pub fn with_policy<Q>(self, policy: Q) -> RateLimitLayer<Q> {
        RateLimitLayer {
            policy,
            config: self.config,
        }
    }

    /// Whether rate-limited responses (429) are waited out and retried (default: on).
    ///
    /// Off, the layer only observes: it neither sleeps nor retries for a rate-limited response,
    /// nor records it in its gates (shared ones included), and hands it back with what it read
    /// attached.
    ///
    /// # Panics
    ///
    /// Off, where [`respect_remaining`](Self::respect_remaining),
    /// [`slow_start`](Self::slow_start) or [`learn_limits`](Self::learn_limits) was turned on by
    /// name, whatever the order: they hold calls at the key's gate, which an observing layer
    /// holds none at, and would do nothing. The message says which to drop.
    pub fn retry_on_rate_limit(mut self, retry: bool) -> Self {
        self.config.settings.retry_on_rate_limit = retry;
        self.config.switches.retry_on_rate_limit = Some(retry);
        self.check_switches()
    }

    /// The longest instruction a call waits out (default 60 s; with [`max_wait`](Self::max_wait)
    /// set, at most half of it, and at most the [horizon](Self::retry_after_horizon)).
    ///
    /// The cap bounds a wait, not what is remembered. A longer `Retry-After` (or the reset of
    /// a spent meter) is neither waited nor shortened: the call that met it gets that response
    /// at once. The key's gate remembers it until it passes, and while more than the cap is
    /// left of it, every call on the key fails fast with [`Throttled`](crate::Throttled) (the
    /// true time left, and what set it), sending nothing: a request the server already said it
    /// will refuse is a certain refusal, which costs quota and standing. A layer that sees
    /// `Retry-After: 3600` never sends that key's next call inside the hour, and sleeps for it
    /// only once the cap or less is left, as for any wait within the cap.
    ///
    /// `Duration::ZERO` waits no instruction (a guessed backoff is still slept); with
    /// `Duration::MAX` every instruction within the horizon is waited (and the budget and the
    /// horizon, if left unset, follow it: a call then sleeps as long as the server says, so
    /// keep that for servers you trust).
    ///
    /// # Panics
    ///
    /// If `max_wait` was set below twice `cap`, or the horizon was set below `cap`: the
    /// message says which setting to change. Settings are never adjusted behind your back.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tower_retry_after::RateLimitLayer;
    ///
    /// // Waits of up to five minutes; `max_wait` follows, to ten.
    /// let layer = RateLimitLayer::new().retry_after_cap(Duration::from_secs(300));
    /// # let _ = layer;
    /// ```
    pub fn retry_after_cap(mut self, cap: Duration) -> Self {
        self.config.durations.cap = Some(cap);
        self.resolve_durations()
    }

    /// The longest instruction or spent window the gates remember (default two days; at least
    /// the cap, which follows it down if left unset).
    ///
    /// An instruction beyond it (`Retry-After: 2147483647`, a date in 2090) is absurd or
    /// hostile: the call that met it gets the response at once, and nothing is remembered, so
    /// the key's next call is sent. No server can lock a key for years. A spent window whose
    /// reset lies beyond it is not held either. `Duration::ZERO` remembers nothing beyond the
    /// cap (which follows it to zero if unset).
    ///
    /// # Panics
    ///
    /// If the cap was set beyond `horizon`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tower_retry_after::RateLimitLayer;
    ///
    /// // An API with a monthly quota: remember its reset up to 31 days ahead.
    /// let layer = RateLimitLayer::new().retry_after_horizon(Duration::from_secs(31 * 86_400));
    /// # let _ = layer;
    /// ```
    pub fn retry_after_horizon(mut self, horizon: Duration) -> Self {
        self.config.durations.horizon = Some(horizon);
        self.resolve_durations()
    }

    /// The most one call may wait in total, every wait added up (default 120 s; with the cap
    /// set, at least twice it, which it follows if left unset).
    ///
    /// A wait that does not fit in what is left ends the call with the last outcome (response
    /// or error); it is never shortened to fit. A call that gave up after it began to wait ends
    /// with [`Throttled`](crate::Throttled), carrying the head of the response it had.
    ///
    /// An outer `tower::timeout::Timeout` bounds the whole call, waits included, and cancels it
    /// wherever it stands (nothing is left at the gate); `max_wait` is the layer's own bound,
    /// which ends the call with what it had instead of an elapsed error. Whichever is shorter
    /// decides: a timeout below `max_wait` (plus the time the attempts themselves take) cuts
    /// waits the budget allows, and the caller gets `Elapsed` instead of the last response or
    /// [`Throttled`](crate::Throttled). Set the timeout above it to let the layer decide, or
    /// lower `max_wait` to fit under the timeout. Each response says what its call waited:
    /// [`CallCost`](crate::CallCost).
    ///
    /// With [`rate_limited_retries`](Self::rate_limited_retries) this makes the crossover
    /// between count and duration: at the defaults, instructions shorter than
    /// `max_wait / rate_limited_retries` = 12 s run out of retries first, longer ones run out
    /// of time first.
    ///
    /// `Duration::ZERO` waits nothing (the cap, if unset, follows it to zero: every closed
    /// gate fails its calls fast); `Duration::MAX` never runs out (the counts still bind).
    ///
    /// # Panics
    ///
    /// If the cap was set above half of `max_wait`: the message says which setting to change.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tower_retry_after::RateLimitLayer;
    ///
    /// // Under a 30 s timeout: the cap follows, to 12 s.
    /// let layer = RateLimitLayer::new().max_wait(Duration::from_secs(24));
    /// # let _ = layer;
    /// ```
    pub fn max_wait(mut self, max_wait: Duration) -> Self {
        self.config.durations.max_wait = Some(max_wait);
        self.resolve_durations()
    }

    /// The cap, budget and horizon in force after a setter: the ones left unset follow the
    /// ones set, and ones set at odds are refused here, when the layer is built, rather than
    /// adjusted or found out at call time.
    fn resolve_durations(mut self) -> Self {
        match self.config.durations.resolve() {
            Ok((cap, max_wait, horizon)) => {
                let settings = &mut self.config.settings;
                settings.retry_after_cap = cap;
                settings.max_wait = max_wait;
                settings.horizon = horizon;
                self
            }
            Err(at_odds) => panic!("{at_odds}"),
        }
    }

    /// How many times one call retries transient failures: 408, 5xx, transport errors
    /// (default 3; zero retries none).
    pub fn transient_retries(mut self, retries: u32) -> Self {
        self.config.settings.transient_retries = retries;
        self
    }

    /// How many times one call retries rate-limited responses, a backstop behind
    /// [`max_wait`](Self::max_wait) (default 10). Zero retries none, but the gate still holds
    /// the key's other calls for the server's time (to neither retry nor hold, turn
    /// [`retry_on_rate_limit`](Self::retry_on_rate_limit) off).
    pub fn rate_limited_retries(mut self, retries: u32) -> Self {
        self.config.settings.rate_limited_retries = retries;
        self
    }

    /// The guessed-backoff schedule and the spread added to instructed waits.
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.config.settings.backoff = backoff;
        self
    }

    /// Whether a meter that said `remaining = 0` holds the key's calls until its reset, and
    /// whether calls are let through only as far as the quota the server reported, at the
    /// pace of its policy (default: on).
    ///
    /// Off means off for this layer's calls: only a 429's own `Retry-After` (or a guess)
    /// closes the gate for them, and neither a quota, a spent window nor a pace holds them,
    /// even at gates shared with layers that respect them.
    ///
    /// # Panics
    ///
    /// Off, where [`slow_start`](Self::slow_start) or [`learn_limits`](Self::learn_limits)
    /// was turned on by name, whatever the order: they hold only calls that respect the quota,
    /// and would do nothing. On, where [`retry_on_rate_limit`](Self::retry_on_rate_limit) was
    /// turned off: an observing layer holds no call. The message says which to drop.
    pub fn respect_remaining(mut self, respect: bool) -> Self {
        self.config.settings.respect_remaining = respect;
        self.config.switches.respect_remaining = Some(respect);
        self.check_switches()
    }

    /// Refuses switches set at odds, here, when the layer is built.
    fn check_switches(self) -> Self {
        if let Some(at_odds) = self.config.switches.at_odds() {
            panic!("{at_odds}");
        }
        self
    }

    /// How long the probe after a closure (the first request out when the gate reopens, which
    /// goes alone) may stay unanswered before the next waiting call probes instead (default
    /// 10 s, at least 1 ms).
    ///
    /// No single request holds a key's gate indefinitely: a probe that hangs is given up on as
    /// a probe (its answer, if it comes, still counts), and every call behind it would
    /// otherwise wait out its whole budget; so is any request out longer than this, as far
    /// as a window's quota goes (a reset gives the quota back less only those out no
    /// longer). Set it above the time the server takes to answer one request.
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.config.settings.probe_timeout = timeout;
        self
    }

    /// Whether the first call to a key the gate knows nothing about goes alone (default: on).
    ///
    /// Its answer decides the rest: the remaining quota it reports goes at once, no more;
    /// an answer without meters starts a ramp (one more request out for each healthy answer,
    /// so the burst doubles each round trip). Calls arriving meanwhile wait for that one
    /// answer, a round trip, not for a timer. Without it, every call made before the first
    /// answer comes back goes blind, and where they outnumber the quota the rest are refused:
    /// 50 workers starting together against 20 a second are refused 30 times.
    ///
    /// Applies only where [`respect_remaining`](Self::respect_remaining) is on.
    ///
    /// # Panics
    ///
    /// On, where `respect_remaining(false)` or `retry_on_rate_limit(false)` was set, whatever
    /// the order: it would do nothing.
    ///
    /// ```
    /// use tower_retry_after::RateLimitLayer;
    ///
    /// // A client that makes one call at a time gains nothing from it.
    /// let layer = RateLimitLayer::new().slow_start(false);
    /// # let _ = layer;
    /// ```
    pub fn slow_start(mut self, on: bool) -> Self {
        self.config.settings.slow_start = on;
        self.config.switches.slow_start = Some(on);
        self.check_switches()
    }

    /// Whether the gate learns how fast a server that publishes no quota lets a key go, and
    /// paces by it (default: on).
    ///
    /// With only `Retry-After`, or nothing, requests go by a bucket of a learned burst (also
    /// the most out at once), refilled by a learned rate and whole at each reset the refusals
    /// measure. A refusal lowers what let its request go; a stretch that held calls back and
    /// was not refused raises what held them, halfway to what was refused, and a raise that
    /// was refused is tried again only once it has repaid what it cost. The server's
    /// instructions stay hard limits: the law paces only between them. Any response that
    /// carries meters makes what was learned moot.
    ///
    /// Against a window of 20 a second opening at the first request, `Retry-After` only, 50
    /// workers, 400 requests and 20 to 80 ms round trips (the simulator, seeds 1 to 10), the
    /// layer is refused 22 to 30 times and finishes within 1.04 times a plain client's time,
    /// which is refused 910 times; `BENCHMARKS.md` has every shape of limiter.
    ///
    /// Applies only where [`respect_remaining`](Self::respect_remaining) is on. Off, the
    /// layer's calls are paced by nothing learned, their gate's or, where gates share a store,
    /// their fleet's; what they meet is still learned from, for the calls that do learn: the
    /// server counts them too, so in a fleet where some processes learn and some do not, the
    /// refusals of those that do not slow those that do.
    ///
    /// # Panics
    ///
    /// On, where `respect_remaining(false)` or `retry_on_rate_limit(false)` was set, whatever
    /// the order: it would do nothing.
    ///
    /// ```
    /// use tower_retry_after::RateLimitLayer;
    ///
    /// // A server whose refusals are not a quota (it sheds load at random): nothing to learn.
    /// let layer = RateLimitLayer::new().learn_limits(false);
    /// # let _ = layer;
    /// ```
    pub fn learn_limits(mut self, on: bool) -> Self {
        self.config.settings.learn_limits = on;
        self.config.switches.learn_limits = Some(on);
        self.check_switches()
    }

    /// Names the rate limit each request counts against (default: its origin,
    /// [`Key::origin`]). Calls with the same key share one gate, so two APIs on one origin
    /// (GitHub's search and core limits, say) share one unless the key function names them
    /// apart.
    ///
    /// `None` means the request is not gated at all: it waits at no gate, and a 429 it gets
    /// holds no other call (its own retry still sleeps out the server's wait). It is a silent
    /// opt-out, so where what a key function looks for is missing it should fall back to the
    /// origin, as below, rather than to `None`.
    ///
    /// ```
    /// use tower::{Service, ServiceBuilder, ServiceExt};
    /// use tower_retry_after::{Gates, Key, RateLimitLayer};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), tower::BoxError> {
    /// // One limit per API token, as servers that count per credential do (the key keeps only
    /// // a fingerprint of the token: it is printed in events and errors); a request without
    /// // a token counts against its origin.
    /// let gates = Gates::new();
    /// let layer = RateLimitLayer::new()
    ///     .gates(gates.clone())
    ///     .key(|request: &http::request::Parts| match request.headers.get("authorization") {
    ///         Some(token) => Some(Key::credential(token.as_bytes())),
    ///         None => Key::origin(request),
    ///     });
    /// # // A stand-in for the API: 59 of its 60 calls a minute left.
    /// # let mut client = ServiceBuilder::new().layer(layer).service_fn(|_: http::Request<String>| async {
    /// #     http::Response::builder()
    /// #         .header("ratelimit-policy", r#""minute";q=60;w=60"#)
    /// #         .header("ratelimit", r#""minute";r=59;t=30"#)
    /// #         .body(String::new())
    /// # });
    ///
    /// let anonymous = http::Request::get("https://api.test/items").body(String::new())?;
    /// client.ready().await?.call(anonymous).await?;
    /// let origin = gates.snapshot(&Key::from_origin("https://api.test")?).unwrap();
    /// assert_eq!(origin.remaining(), Some(59));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Two APIs on one origin, each with a limit of its own:
    ///
    /// ```
    /// use tower_retry_after::{Key, RateLimitLayer};
    ///
    /// let layer = RateLimitLayer::new().key(|request: &http::request::Parts| {
    ///     if request.uri.path().starts_with("/search/") {
    ///         Some(Key::named("api.github.com search"))
    ///     } else {
    ///         Key::origin(request)
    ///     }
    /// });
    /// # let _ = layer;
    /// ```
    pub fn key<F>(mut self, key: F) -> Self
    where
        F: Fn(&Parts) -> Option<Key> + Send + Sync + 'static,
    {
        self.config.key = KeyFunction::Custom(Arc::new(key));
        self
    }

    /// Draws the random spread of waits from generators seeded with `seed`, one per call in the
    /// order calls are made, so that a simulation on a paused clock repeats exactly (default:
    /// the thread's random generator).
    pub fn jitter_seed(mut self, seed: u64) -> Self {
        self.config.jitter = Jitter::seeded(seed);
        self
    }

    /// Shares `gates` with every other layer given them: a 429 seen through any of them that
    /// waits out rate limits holds the key's calls through all of them (a layer that only
    /// observes, [`retry_on_rate_limit(false)`](Self::retry_on_rate_limit), records nothing in
    /// them: it only surfaces what it read). Layers sharing gates may differ in settings: each
    /// call is held only by what its own layer respects (its `retry_after_cap` bounds how long
    /// it waits out a closure or a spent window, beyond which it fails fast, and which paces
    /// hold it; its `respect_remaining` whether quotas do; its `probe_timeout` how long a hung
    /// probe holds it).
    pub fn gates(mut self, gates: Gates) -> Self {
        self.config.gates = gates;
        self
    }

    /// Adds a reader of rate-limit headers the crate does not read itself (see
    /// [`ReadHeaders`]): it runs on every response, after the crate's own readers, and what it
    /// finds counts as theirs do. Several readers run in the order they were added.
    ///
    /// One line says that a server answers spent limits with 403 (as GitHub Enterprise behind
    /// a proxy that strips `x-ratelimit-resource` does):
    ///
    /// ```
    /// use tower_retry_after::RateLimitLayer;
    /// use tower_retry_after::headers::Found;
    ///
    /// let layer = RateLimitLayer::new()
    ///     .read_headers_with(|_: &http::HeaderMap, _: &_, found: &mut Found<'_>| found.forbidden_is_refusal());
    /// # let _ = layer;
    /// ```
    pub fn read_headers_with<R: ReadHeaders>(mut self, reader: R) -> Self {
        self.config.readers.push(Arc::new(reader));
        self
    }

    /// Registers `hook`, told of each rate-limited wait a call is about to take (at the gate,
    /// or before a retry) and of each turn of a key's episode (closed, reopened); see
    /// [`Notice`]. Its `false` for a [`Notice::Wait`] vetoes the wait: the call ends at once
    /// with what it has, as when its budget does not fit the wait. It runs on the task making
    /// the call, under no lock: keep it quick. A later call replaces an earlier hook.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::time::Duration;
    /// use tower_retry_after::{Notice, RateLimitLayer};
    ///
    /// // Counts the episodes, and lets no call wait out a rate limit of more than a minute.
    /// let episodes = Arc::new(AtomicU64::new(0));
    /// let counted = episodes.clone();
    /// let layer = RateLimitLayer::new().on_rate_limit(move |notice: &Notice<'_>| {
    ///     if let Notice::Closed { .. } = notice {
    ///         counted.fetch_add(1, Ordering::Relaxed);
    ///     }
    ///     !matches!(notice, Notice::Wait { wait, .. } if *wait > Duration::from_secs(60))
    /// });
    /// # drop(layer);
    /// ```
    pub fn on_rate_limit<F>(mut self, hook: F) -> Self
    where
        F: Fn(&Notice<'_>) -> bool + Send + Sync + 'static,
    {
        self.config.hook = Some(Arc::new(hook));
        self
    }
}

impl<P: Clone> RateLimitLayer<P> {
    /// The policy and the settings with their floors applied: what every service (or
    /// middleware) made from this layer runs with.
    pub(crate) fn in_force(&self) -> (P, Arc<Config>) {
        (self.policy.clone(), Arc::new(self.config.in_force()))
    }
}

impl<S, P: Clone> Layer<S> for RateLimitLayer<P> {
    type Service = RateLimit<S, P>;

    fn layer(&self, inner: S) -> Self::Service {
        let (policy, config) = self.in_force();
        RateLimit::with_config(inner, policy, config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn the_budget_follows_a_raised_cap_whatever_the_order_of_other_setters() {
        let cap_first = RateLimitLayer::new()
            .retry_after_cap(100 * SECOND)
            .transient_retries(2);
        let cap_last = RateLimitLayer::new()
            .transient_retries(2)
            .retry_after_cap(100 * SECOND);
        for layer in [cap_first, cap_last] {
            assert_eq!(layer.config.settings.max_wait, 200 * SECOND);
        }
    }

    /// The message a layer built by `build` is refused with.
    fn refused(build: fn() -> RateLimitLayer) -> String {
        let refused = std::panic::catch_unwind(build).expect_err("refused");
        *refused.downcast::<String>().unwrap()
    }

    #[test]
    fn a_switch_turned_on_where_respect_remaining_is_off_is_refused_in_either_order() {
        let slow_start_last = refused(|| {
            RateLimitLayer::new()
                .respect_remaining(false)
                .slow_start(true)
        });
        let respect_last = refused(|| {
            RateLimitLayer::new()
                .learn_limits(true)
                .respect_remaining(false)
        });
        assert!(
            slow_start_last.contains("drop slow_start(true)"),
            "{slow_start_last}"
        );
        assert!(
            respect_last.contains("drop learn_limits(true)"),
            "{respect_last}"
        );
        // Off, or left at their defaults, they stand with it.
        let layer = RateLimitLayer::new()
            .slow_start(false)
            .respect_remaining(false)
            .learn_limits(false);
        assert!(!layer.config.settings.respect_remaining);
        let _ = RateLimitLayer::new().respect_remaining(false);
        let _ = RateLimitLayer::new()
            .respect_remaining(true)
            .slow_start(true);
    }

    #[test]
    fn a_switch_that_holds_calls_turned_on_where_the_layer_only_observes_is_refused() {
        let respect_last = refused(|| {
            RateLimitLayer::new()
                .retry_on_rate_limit(false)
                .respect_remaining(true)
        });
        let observe_last = refused(|| {
            RateLimitLayer::new()
                .slow_start(true)
                .retry_on_rate_limit(false)
        });
        let learn = refused(|| {
            RateLimitLayer::new()
                .learn_limits(true)
                .retry_on_rate_limit(false)
        });
        for (message, switch) in [
            (respect_last, "respect_remaining"),
            (observe_last, "slow_start"),
            (learn, "learn_limits"),
        ] {
            assert!(
                message.contains(&format!("drop {switch}(true)"))
                    && message.contains("or retry_on_rate_limit(false)"),
                "{message}"
            );
        }
        // Off, or left at their defaults, they stand with it.
        let layer = RateLimitLayer::new()
            .respect_remaining(false)
            .retry_on_rate_limit(false)
            .slow_start(false);
        assert!(!layer.config.settings.retry_on_rate_limit);
        let _ = RateLimitLayer::new().retry_on_rate_limit(false);
        let _ = RateLimitLayer::new()
            .retry_on_rate_limit(true)
            .respect_remaining(true);
    }

    #[test]
    fn a_cap_and_budget_set_at_odds_are_refused_in_either_order() {
        let budget_last = std::panic::catch_unwind(|| {
            RateLimitLayer::new()
                .retry_after_cap(100 * SECOND)
                .max_wait(150 * SECOND)
        });
        let cap_last = std::panic::catch_unwind(|| {
            RateLimitLayer::new()
                .max_wait(150 * SECOND)
                .retry_after_cap(100 * SECOND)
        });
        for refused in [budget_last, cap_last] {
            let message = *refused.err().unwrap().downcast::<String>().unwrap();
            assert!(
                message.contains("raise max_wait to at least 200s"),
                "{message}"
            );
        }
    }
}
