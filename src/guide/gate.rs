//! One gate per upstream: how calls on one key wait together, leave together, and never jam.
//!
//! - **One gate per upstream.** A 429 closes the key's gate (its origin, by default) until the
//!   server's time; every call on that key waits on the same gate instead of sleeping its own
//!   copy and stampeding back together. A shorter `Retry-After` never brings it forward. Where
//!   the server named no time, the key's guess closes it: the first guess, doubled for each
//!   probe refused since the key's last healthy answer (the refused call still sleeps its own
//!   backoff, grown by its retries: one call's caution holds no other call). A
//!   meter that said `remaining = 0` holds the calls that respect it until the reset. Two APIs
//!   on one origin (GitHub's search and core limits) share one gate unless a `key` function
//!   names them apart; a key function that returns `None` leaves that request ungated, so fall
//!   back to `Key::origin`.
//! - **No herd when it opens.** One probe goes first, alone. Then the calls that were waiting
//!   leave at once up to the quota the server reported, at its policy's rate where only that
//!   is known, or on a ramp (one more out for each healthy answer, never two in the same
//!   instant) where it said nothing; calls that arrive meanwhile wait behind them and leave
//!   the same way, and the gate opens once a call leaves with none behind it. Of the calls held at the gate, at most one is refused per episode (one per
//!   probe: a probe that outlives `probe_timeout` lets another go), whatever their number;
//!   requests already in flight when the first 429 arrives were sent before anything was
//!   known. A retry of any kind meets the gate: a 503's retry, answered while the key is closed
//!   at least as long as its backoff, waits there in line; closed longer than the call may
//!   still wait, the call ends at once with the 503 it has.
//! - **Known quota is not overspent.** When 50 calls see `remaining: 3`, three go and the rest
//!   wait for the reset (or for an answer that gives a unit back, whichever comes first). An
//!   answer to a request sent after the lowest figure came back speaks for a later count: room
//!   no less than the lowest in it (a bucket refilling, a counter fading) replaces what is
//!   known, its reset with it. At
//!   the reset, the whole quota the server gave (its policy's `q`, `X-RateLimit-Limit`) goes at
//!   once, no probe: a reset read never early has restored it. Once the server refuses a
//!   request that went on what a reset restored (a leaky bucket whose countdown is rounded up
//!   to the second gives back one request, not its whole policy), resets restore nothing: each
//!   new window's first request probes, until one opens whole again. A reset that names a whole
//!   second (an epoch `X-RateLimit-Reset`) may fall up to a second before it: where other
//!   calls wait or are out, the window's last unit waits for the answers out and goes alone at
//!   the earliest the window can have ended, and if its answer finds room (a new window, or a
//!   sliding log freeing its oldest), what it found goes then, not at the second read, and
//!   times the next window. A later second named says the reset moved (a token bucket is full
//!   later as it is spent): it is kept. One second read twice is read as tightly as either
//!   reading (each is the second against a bound of the server's clock).
//! - **Nothing jams a gate.** A probe that has not answered within `probe_timeout` (10 s) lets
//!   the next waiter probe, and a request out longer than that holds none of a window's quota
//!   (a reset gives the whole quota back less only the requests out no longer). A pace comes only from a policy whose window is within the cap (a
//!   daily quota is not a reason to space calls 17 s apart) and lasts only that window. A wait
//!   the layer guessed never closes the gate beyond the cap. A closure or a spent window is
//!   never forgotten to make room in a full registry (`Gates::with_capacity` says what a new
//!   key gets then). A call that gives up at the gate is told how long until it could have
//!   gone: the closure, the probe out or the pace ahead of it.
//! - **Opting out opts out.** With `respect_remaining(false)`, a layer's calls are held only by
//!   a 429's own wait, never by a quota, a spent window or a pace, even at gates shared with
//!   layers that respect them; but a refused call is not itself resent into the window its
//!   answer said is spent (beyond the cap, that answer is returned at once). Layers with
//!   different settings may share `Gates`: each call is held only by what its own layer's
//!   settings say (a pace beyond its cap paces it not; a closure beyond its cap fails it fast;
//!   a hung probe holds it for its own `probe_timeout`).
//! - **Secrets stay out of logs.** The default key is the origin without the URI's userinfo;
//!   `Key::credential(token)` keeps and shows only a fingerprint. Maps of keys hash with a seed
//!   of the process, so chosen keys cannot collide the gates' table.
//!
//! # Keys, and reading a key's gate
//!
//! Most APIs count per credential, not per origin: a key function says so. A key's gate can be
//! read at any time through the [`Gates`](crate::Gates) given to the layer (the service is
//! usually wrapped, in a `Timeout` or a box, by the time it is used;
//! [`RateLimit::gates`](crate::RateLimit::gates) reads them from the service itself). Keep a
//! clone before handing them over: a layer built without `.gates(..)` has gates of its own,
//! and a `Gates::new()` never given to it stays empty (`snapshot` is `None` for every key). A
//! snapshot gives `closed_for`, `remaining`, `reset_in` (aged to now), `is_exhausted`,
//! `waiters` and `in_flight`; a window longer than `retry_after_cap` is remembered too (up to
//! the horizon), though no call waits for it.
//!
//! ```
//! use std::time::Duration;
//! use tower::{Service, ServiceBuilder, ServiceExt};
//! use tower_retry_after::{Gates, Key, RateLimitLayer};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), tower::BoxError> {
//! // A stand-in for the API: 4,999 of its 5,000 calls a minute left.
//! let api = tower::service_fn(|_: http::Request<String>| async {
//!     http::Response::builder()
//!         .header("ratelimit-policy", r#""minute";q=5000;w=60"#)
//!         .header("ratelimit", r#""minute";r=4999;t=30"#)
//!         .body(String::new())
//! });
//! // Kept to read the gates later: once the service is wrapped (or boxed), the layer is out of reach.
//! let gates = Gates::new();
//! let layer = RateLimitLayer::new()
//!     .gates(gates.clone())
//!     // One limit per API token, as most APIs count; only a fingerprint of the token is kept.
//!     .key(|request| match request.headers.get("authorization") {
//!         Some(token) => Some(Key::credential(token.as_bytes())),
//!         None => Key::origin(request), // not `None`: that would leave the request ungated
//!     });
//! let mut client = ServiceBuilder::new()
//!     .timeout(Duration::from_secs(300))
//!     .layer(layer)
//!     .service(api);
//!
//! let request = http::Request::get("https://api.test/user")
//!     .header("authorization", "Bearer sk-live-0123")
//!     .body(String::new())?;
//! client.ready().await?.call(request).await?;
//!
//! // The token's gate, at any time.
//! let gate = gates.snapshot(&Key::credential("Bearer sk-live-0123")).unwrap();
//! assert_eq!(gate.remaining(), Some(4999));
//! assert!(gates.snapshot(&Key::from_origin("https://api.test")?).is_none(), "counted by token");
//! # Ok(())
//! # }
//! ```
