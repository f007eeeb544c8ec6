//! How the crate is tested and measured: the suites `cargo test` runs, the fuzz targets, and
//! the benchmarks.
//!
//! # Fuzzing
//!
//! Each parser has a cargo-fuzz target (`retry_after`, `structured`, `x_ratelimit`;
//! `vendor_durations` for OpenAI's Go durations, `vendor_instants` for Anthropic's RFC 3339
//! instants, `vendor_counts` for Shopify's `used/limit` and Zendesk's `key=value;` lists; and
//! `header_map` for a whole header block), seeded from the vectors; `structured_reference`
//! checks the hand-written structured-field parser against `sfv`; and `layer` drives the whole
//! layer on a paused clock against a fuzzer-chosen script of answers (statuses, headers, delays,
//! transport errors) from a server whose `Date` runs with that clock, written by one of two
//! backends whose clocks differ by 5 s or by a cache replaying a stale `Date`, checking that no
//! attempt lands inside a window the server named (read against that answer's own `Date`, up to the
//! horizon), no POST or PATCH is sent again after a 5xx (unless the server said `x-should-retry:
//! true`), a wait over the cap ends the call at once and fails later calls fast while more than the
//! cap is left of it, nothing beyond the horizon is remembered, and no call waits beyond
//! `max_wait`. The same checks run in `cargo test` over 5,000 random scripts
//! (`tests/layer_properties.rs`), so CI sees them without nightly. With the nightly toolchain and
//! `cargo install cargo-fuzz`:
//!
//! ```sh
//! fuzz/campaign.sh structured 600     # ten minutes; new inputs go to /tmp/fuzz-corpus/structured
//! fuzz/seed.sh                        # rewrite the seed corpus after editing the vectors
//! # keep what a campaign found that reaches new code, as small files beside the seeds
//! cargo +nightly fuzz run -O structured fuzz/corpus/structured /tmp/fuzz-corpus/structured -- -merge=1 -use_counters=0
//! ```
//!
//! `cargo test` replays every committed corpus input, and any crash reproducer kept under
//! `fuzz/regressions/<target>/`, on stable (`tests/fuzz_corpus.rs`).
//!
//! # How it is tested
//!
//! Besides unit tests and the vectors: end-to-end tests against a counting hyper server, through
//! a hyper-util client and through a reqwest client (`tests/reqwest.rs`); a fault
//! suite (`tests/faults.rs`) whose server resets connections mid-head and mid-body, stalls past
//! an outer timeout, closes without reading or answering, and answers 429 with hostile headers
//! (`Retry-After: 10^20`, a date in year 9999, non-UTF-8 bytes, 10,000 `RateLimit` lines, a
//! 1 MiB value); ten thousand calls against random faults with every request counted
//! (`tests/fault_mix.rs`); thousands of cancelled and racing calls with every gate watched
//! (`tests/stress.rs`); and mutation testing (`scripts/mutants.sh`, survivors in
//! `docs/mutants.md`).
//!
//! # Benchmarks
//!
//! `cargo bench --bench parse`, `--bench overhead`, `--bench gate`, and `--bench instructions`
//! (needs `valgrind`: the instructions a call costs bare, under the layer, under a
//! `tower::retry` stack that reads `Retry-After` itself, and under that stack with the two
//! extensions the layer attaches, the least a layer keeping its promises costs; counted by
//! callgrind, so the load of the machine does not sway them); figures and how they were taken
//! are in `BENCHMARKS.md`.
//! `--features reqwest` adds the layer's cost under reqwest to `overhead`.
//!
//! # Example
//!
//! A test of your own can do as these do: a stand-in for the API and tokio's paused clock
//! (`start_paused`, tokio's `test-util` feature), so that a server's 30 s take no real time
//! and the wait is measured exactly.
//!
//! ```
//! use std::sync::atomic::{AtomicBool, Ordering};
//! use std::sync::Arc;
//! use std::time::Duration;
//! use tokio::time::Instant;
//! use tower::{Service, ServiceBuilder, ServiceExt};
//! use tower_retry_after::RateLimitLayer;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), tower::BoxError> {
//! let refused = Arc::new(AtomicBool::new(false));
//! let api = tower::service_fn(move |_: http::Request<String>| {
//!     let first = !refused.swap(true, Ordering::SeqCst);
//!     let response = match first {
//!         true => http::Response::builder().status(429).header("retry-after", "30"),
//!         false => http::Response::builder(),
//!     };
//!     async move { response.body(String::new()) }
//! });
//! let mut client = ServiceBuilder::new().layer(RateLimitLayer::new()).service(api);
//!
//! let started = Instant::now();
//! let request = http::Request::get("https://api.test/items").body(String::new())?;
//! let response = client.ready().await?.call(request).await?;
//! assert_eq!(response.status(), 200);
//! assert!(started.elapsed() >= Duration::from_secs(30), "the server's wait, in full");
//! # Ok(())
//! # }
//! ```
