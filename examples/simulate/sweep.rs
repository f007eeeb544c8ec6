//! The sweep: every limiter shape, told with `Retry-After` only and with nothing (or, with
//! `--meters`, with draft 08 meters and with `X-RateLimit-*` epoch resets), over a range of
//! seeds, for the plain client, the layer's defaults and the defaults without learning. One
//! row per shape and header style, each figure the worst and best over the seeds, and whether
//! the defaults meet their bars on every seed ([`Row::verdict`]). On every style, DESIGN's
//! "never worse than doing nothing": finished, and completion within [`SLOWER`] of the plain
//! client's. Told no quota, refused no more often than the plain client (a [`FEWER`]th as often
//! where it is refused [`MANY`] times or more), and within a bound of the physical limit for
//! the shape ([`bound`]). Told meters, nothing is left to find: never refused, and within
//! [`METERED_BOUND`] of the physical limit; but for a reset that names a second on windows of a
//! second (fixed from the first request, or sliding), where that second is all the server says
//! of a window's end: refused at most once in [`WINDOWS_A_REFUSAL`] windows, within
//! [`TO_THE_SECOND`].

use std::fmt::Write as _;
use std::ops::RangeInclusive;
use std::time::Duration;

use crate::limiter::{Algorithm, Headers};
use crate::sim;
use crate::workload::{Args, CLIENTS, Outcome};

/// How much longer than the plain client the defaults may take.
const SLOWER: f64 = 1.05;
/// Where the plain client is refused this often or more …
const MANY: usize = 100;
/// … the defaults are refused at most this many times less often.
const FEWER: usize = 10;
/// The completion over the physical limit the defaults may reach told meters, round trips
/// included.
const METERED_BOUND: f64 = 1.1;
/// The same where a reset names a second on windows of a second.
const TO_THE_SECOND: f64 = 1.3;
/// Where a reset names a second on windows of a second, the defaults may be refused once in
/// this many windows.
const WINDOWS_A_REFUSAL: f64 = 10.0;

/// The header styles swept by default: the two that publish no quota.
pub const UNMETERED: [Headers; 2] = [Headers::RetryAfter, Headers::None];
/// The header styles swept with `--meters`: a countdown, and a reset that names a second.
pub const METERED: [Headers; 2] = [Headers::Draft8, Headers::XRateLimitEpoch];

/// The clients swept, as indices into `CLIENTS`, in the order a row holds their outcomes:
/// the plain client, the defaults without learning, the defaults.
const SWEPT: [usize; 3] = [0, 3, 4];
const PLAIN: usize = 0;
const UNLEARNED: usize = 1;
const DEFAULTS: usize = 2;

/// The completion over the physical limit the defaults may reach on `algorithm` told no
/// quota: a stationary limiter leaves room for little more than the cost of finding it, a
/// changing one for finding it again, a cap on requests in flight for the round trips' spread.
fn bound(algorithm: Algorithm) -> f64 {
    match algorithm {
        Algorithm::Changing => 1.35,
        Algorithm::InFlight => 1.5,
        _ => 1.2,
    }
}

/// One shape and style over the seeds: each seed's outcomes for the swept clients.
pub struct Row {
    pub algorithm: Algorithm,
    pub headers: Headers,
    /// The limiter's window.
    pub window: Duration,
    pub seeds: Vec<[Outcome; 3]>,
}

impl Row {
    /// Whether the defaults meet every bar on one seed's outcomes (the plain client's, the
    /// defaults' without learning, the defaults'), and if not, which one first.
    pub fn verdict(&self, [plain, _, defaults]: &[Outcome; 3]) -> Result<(), &'static str> {
        if !defaults.finished() {
            return Err("unfinished");
        }
        let slower = defaults.measured.completion.as_secs_f64()
            > SLOWER * plain.measured.completion.as_secs_f64();
        if plain.finished() && slower {
            return Err("slower than plain");
        }
        let metered = !UNMETERED.contains(&self.headers);
        let to_the_second = self.headers == Headers::XRateLimitEpoch
            && self.window <= Duration::from_secs(1)
            && matches!(self.algorithm, Algorithm::FirstRequest | Algorithm::Sliding);
        let (allowed, bound) = if to_the_second {
            let windows = defaults.measured.completion.as_secs_f64() / self.window.as_secs_f64();
            ((windows / WINDOWS_A_REFUSAL) as usize, TO_THE_SECOND)
        } else if metered {
            (0, METERED_BOUND)
        } else if plain.refused() >= MANY {
            (plain.refused() / FEWER, bound(self.algorithm))
        } else {
            (plain.refused(), bound(self.algorithm))
        };
        if defaults.refused() > allowed {
            return Err("refused too often");
        }
        if defaults.completion_ratio().unwrap_or(0.0) > bound {
            return Err("far from the limit");
        }
        Ok(())
    }
}

/// Runs the sweep over `seeds` for `args`' limit and workload, each shape told with `styles`.
pub fn sweep(args: &Args, seeds: RangeInclusive<u64>, styles: [Headers; 2]) -> String {
    let rows: Vec<Row> = Algorithm::ALL
        .iter()
        .flat_map(|&algorithm| styles.map(|headers| (algorithm, headers)))
        .map(|(algorithm, headers)| {
            let args = Args {
                algorithm,
                headers,
                ..*args
            };
            let seeds = seeds
                .clone()
                .map(|seed| SWEPT.map(|client| sim::run(&args, headers, CLIENTS[client], seed)))
                .collect();
            Row {
                algorithm,
                headers,
                window: args.window,
                seeds,
            }
        })
        .collect();
    table(&rows, &seeds)
}

fn table(rows: &[Row], seeds: &RangeInclusive<u64>) -> String {
    let mut table = format!(
        "seeds {}..={}; each cell the least and most over the seeds\n\n\
         | limiter | server sends | plain: refused | completion / limit | \
         defaults: refused | completion / limit | time / plain's | \
         without learning: refused | completion / limit | defaults meet the bar |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---|\n",
        seeds.start(),
        seeds.end()
    );
    for row in rows {
        let column = |client: usize| -> Vec<&Outcome> {
            row.seeds.iter().map(|outcomes| &outcomes[client]).collect()
        };
        let against_plain: Vec<f64> = row
            .seeds
            .iter()
            .filter(|[plain, _, _]| plain.finished())
            .map(|[plain, _, defaults]| {
                defaults.measured.completion.as_secs_f64() / plain.measured.completion.as_secs_f64()
            })
            .collect();
        let failed: Vec<String> = row
            .seeds
            .iter()
            .zip(seeds.clone())
            .filter_map(|(outcomes, seed)| {
                row.verdict(outcomes)
                    .err()
                    .map(|why| format!("seed {seed}: {why}"))
            })
            .collect();
        let verdict = match failed.first() {
            None => "yes".to_owned(),
            Some(first) => format!("no, {} of {} ({first})", failed.len(), row.seeds.len()),
        };
        let _ = writeln!(
            table,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {verdict} |",
            row.algorithm.flag(),
            row.headers.flag(),
            refusals(&column(PLAIN)),
            completions(&column(PLAIN)),
            refusals(&column(DEFAULTS)),
            completions(&column(DEFAULTS)),
            span(&against_plain, 2),
            refusals(&column(UNLEARNED)),
            completions(&column(UNLEARNED)),
        );
    }
    table
}

fn refusals(outcomes: &[&Outcome]) -> String {
    let counts: Vec<f64> = outcomes.iter().map(|o| o.refused() as f64).collect();
    span(&counts, 0)
}

/// Completion over the physical limit; "never" where no seed finished, a `+` where some did
/// not (their figure is where they were stopped).
fn completions(outcomes: &[&Outcome]) -> String {
    let ratios: Vec<f64> = outcomes
        .iter()
        .filter_map(|outcome| outcome.completion_ratio())
        .collect();
    let unfinished = outcomes
        .iter()
        .filter(|outcome| !outcome.finished())
        .count();
    match unfinished {
        0 => span(&ratios, 2),
        n if n == outcomes.len() => "never finishes".to_owned(),
        n => format!("{} ({n} unfinished)", span(&ratios, 2)),
    }
}

/// The least and most of `figures`, to `decimals` places: one figure where they agree.
fn span(figures: &[f64], decimals: usize) -> String {
    let least = figures.iter().copied().fold(f64::INFINITY, f64::min);
    let most = figures.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if figures.is_empty() {
        "—".to_owned()
    } else if format!("{least:.decimals$}") == format!("{most:.decimals$}") {
        format!("{least:.decimals$}")
    } else {
        format!("{least:.decimals$}–{most:.decimals$}")
    }
}
