//! Not arriving at the wall: what the layer does before the server says anything, and where it
//! never says much.
//!
//! - **The slow start.** The first call to a key nothing is known of goes alone
//!   (`slow_start`); the quota its answer reports goes at once, and an answer without meters
//!   starts the ramp (one more out for each healthy answer). Without it, 50 callers of a
//!   window of 20 send 50 first requests before the first answer says how many the window
//!   holds, and 30 are refused.
//! - **Limits learned where none are published, by one law.** Where the server publishes no quota,
//!   the gate learns how fast it lets the key go (`learn_limits`), by a law stated in a few lines
//!   (at the top of `src/gate/rules/learn/mod.rs`): between the server's closures (a 429 without an
//!   instruction closes the key for the refused call's guessed backoff, or until the law's own
//!   guess of the reset where that is sooner; the closure is the key's, so calls of a layer that
//!   does not learn, sharing the gates, go then too), requests go by a bucket of a learned burst
//!   (also the most out at once), refilled by a learned rate and whole at each reset. Each round,
//!   from a reset to the next, is judged once its answers are in: a refusal lowers what let the
//!   refused request go (the burst to what was accepted, halving at most; the rate by 0.7; the most
//!   out), a round that held calls back unrefused raises what held them, by a binary search (BIC's:
//!   halfway to the least value refused, beyond it by a doubling step; past it, where the key keeps
//!   windows, by doubling the value, as a refused raise costs a window no time), and a raise beyond
//!   what was refused waits until it has repaid what its refusal cost. The period between resets is
//!   measured never early, from the instructions' ends. The same law serves fixed and sliding
//!   windows, token and leaky buckets, caps on requests in flight and limits that change, and a
//!   fleet sharing a store learns by it once for all its processes; any meter makes it moot.
//! - **Never worse than doing nothing.** On any limiter the defaults aim to finish no later
//!   than a plain client that sleeps each `Retry-After` (1 s where none) and resends, and to be
//!   refused less often; `BENCHMARKS.md` measures each header style and limiter (the demo, the
//!   simulator, and where the aim is not met).
//! - **Epoch resets read against the server's clock, tightly.** A `Date` has a second's
//!   resolution; the latest `Date` less receipt seen on a key bounds the server's clock far
//!   tighter, never ahead of it, and an epoch reset is read against that. An instruction
//!   (`Retry-After` in any form) is never read shorter than its own response's `Date` says.
//!
//! # Example
//!
//! ```
//! use tower_retry_after::RateLimitLayer;
//!
//! // Both are on by default. Off, the layer paces by what the server publishes alone: the
//! // first callers go together, and a server without meters is met at its wall every window.
//! let by_the_meters_alone = RateLimitLayer::new().slow_start(false).learn_limits(false);
//! # let _ = by_the_meters_alone;
//! ```
