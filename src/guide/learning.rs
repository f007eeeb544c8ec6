//! Not arriving at the wall: what the layer does before the server says anything, and where it
//! never says much.
//!
//! - **The slow start.** The first call to a key nothing is known of goes alone
//!   (`slow_start`); the quota its answer reports goes at once, and an answer without meters
//!   starts the ramp (one more out for each healthy answer). Without it, 50 callers of a
//!   window of 20 send 50 first requests before the first answer says how many the window
//!   holds, and 30 are refused.
//! - **Limits learned where none are published.** Where the server publishes no quota, the
//!   gate learns it (`learn_limits`): the requests accepted in a window before a refusal, once
//!   two windows agree, are let out a window and the rest held until the window's end,
//!   measured from the refusal's `Retry-After`; refused again near it, it is lowered; after a
//!   run of windows unrefused, raised by one; any meter makes it moot.
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
