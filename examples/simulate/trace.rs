//! `--trace`: the rounds the layer's law judged (events of target
//! `tower_retry_after::learn`), printed to stderr at the simulated time since their run began,
//! under the run's client, limiter, header style and seed. The law's figures without a
//! debugger: what each round sent and heard, and where it left the burst, the rate and the
//! period.

use std::cell::Cell;
use std::fmt;

use tokio::time::Instant;
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;
use tracing_subscriber::prelude::*;

use crate::limiter::Headers;
use crate::workload::Args;

thread_local! {
    /// When the run under way on this thread began, on its paused clock (each run's runtime
    /// runs on the thread that starts it).
    static RUN_BEGAN: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Prints the law's rounds from now on (once: a second `--trace` changes nothing).
pub fn install() {
    let targets = Targets::new()
        .with_target("tower_retry_after::learn", Level::TRACE)
        .with_target(module_path!(), Level::TRACE);
    let printed = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .with_level(false)
        .with_timer(SinceRunBegan)
        .with_filter(targets);
    // Already installed: the first stays.
    let _ = tracing_subscriber::registry().with(printed).try_init();
}

/// A run begins now: the rounds it prints are timed from here.
pub fn run_began() {
    RUN_BEGAN.set(Some(Instant::now()));
}

/// The span a run's rounds are printed under.
pub fn run(client: &str, args: &Args, headers: Headers, seed: u64) -> tracing::Span {
    let limiter = args.algorithm.flag();
    let headers = headers.flag();
    tracing::trace_span!("run", client, limiter, headers, seed)
}

/// Each line's time: the simulated time since its run began.
struct SinceRunBegan;

impl FormatTime for SinceRunBegan {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        let began = RUN_BEGAN.get().unwrap_or_else(Instant::now);
        write!(w, "{:>8.3}s", began.elapsed().as_secs_f64())
    }
}
