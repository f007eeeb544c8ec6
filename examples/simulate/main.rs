//! A deterministic simulation: four client strategies (no retry; each call sleeping its own
//! `Retry-After`; `tower::retry` with exponential backoff; `RateLimitLayer`) against four
//! limiter models (fixed windows with `Retry-After` = the period or the time left, a token
//! bucket, a GitHub-style epoch reset), with 1 to 1,000 callers at once. Everything runs on
//! tokio's paused clock with seeded jitter: the same seed prints the same report, byte for
//! byte, in a second or two of real time.
//!
//! It prints a markdown table (requests sent, refused, calls served, completion against the
//! limiter's physical limit, the longest call) and writes an SVG timeline of one scenario.
//!
//! Run: `cargo run --example simulate -- [--seed N] [--callers 1,10,50,200,1000] [--svg PATH]`
//! (default SVG: docs/simulate.svg).

mod limiter;
mod sim;
mod timeline;

use limiter::Model;

/// The callers of each run, all at once.
const CALLERS: [usize; 5] = [1, 10, 50, 200, 1000];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut seed = 7;
    let mut callers = CALLERS.to_vec();
    let mut svg_path = "docs/simulate.svg".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--seed" => seed = value.parse()?,
            "--callers" => callers = value.split(',').map(str::parse).collect::<Result<_, _>>()?,
            "--svg" => svg_path = value,
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    let pictured = (
        Model::FixedWindowRemaining,
        *callers.iter().max().unwrap_or(&1).min(&200),
    );
    let (table, runs) = sim::report(seed, &callers, pictured);
    println!(
        "{} requests per {:?} per limiter; every caller makes one call at once; seed {seed}\n",
        sim::LIMIT,
        sim::WINDOW
    );
    print!("{table}");
    let title = format!(
        "{} callers at once, {}: requests accepted (green) and refused (red)",
        pictured.1,
        pictured.0.name()
    );
    std::fs::write(&svg_path, timeline::svg(&title, &runs)?)?;
    println!("\ntimeline: {svg_path}");
    Ok(())
}
