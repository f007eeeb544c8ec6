//! `--trace`: the rounds the layer's law judged (events of target
//! `tower_retry_after::learn`), printed to stderr at the simulated time since their run began,
//! under the run's client and header style. The law's figures without a debugger: what each
//! round sent and heard, and the burst, rate and period it left the key with.

use std::fmt;
use std::sync::Mutex;

use tokio::time::Instant;
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;
use tracing_subscriber::prelude::*;

/// When the run under way began, on its paused clock.
static RUN_BEGAN: Mutex<Option<Instant>> = Mutex::new(None);

/// Prints the law's rounds from now on.
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
    tracing_subscriber::registry().with(printed).init();
}

/// A run begins now: the rounds it prints are timed from here.
pub fn run_began() {
    *RUN_BEGAN.lock().unwrap() = Some(Instant::now());
}

/// The span a run's rounds are printed under.
pub fn run(client: &str, headers: impl fmt::Debug) -> tracing::Span {
    tracing::trace_span!("run", client, headers = ?headers)
}

struct SinceRunBegan;

impl FormatTime for SinceRunBegan {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        let began = RUN_BEGAN.lock().unwrap().unwrap_or_else(Instant::now);
        write!(w, "{:>8.3}s", began.elapsed().as_secs_f64())
    }
}
