//! A deterministic simulation of the demo: the same workload (`workers` tasks sharing
//! `requests` requests, each worker's one after the other), the same limiter and the same
//! clients, over a simulated network where each request takes a seeded round trip of
//! 20–80 ms. Everything runs on tokio's paused clock with seeded draws: the same seed prints
//! the same report, byte for byte, in a few seconds of real time, and its figures predict the
//! demo's.
//!
//! It prints the demo's table (or, with `--matrix`, one row per header style) and writes an
//! SVG timeline of the requests the limiter received from each client.
//!
//! Run: `cargo run --example simulate`, or with the demo's flags (same defaults:
//! `--limit 50 --window 1 --workers 50 --requests 400 --limiter first-request
//! --headers draft-8`), `--matrix`, and `[--seed N] [--svg PATH]`
//! (default SVG: docs/simulate.svg). `--callers 10,200` runs each number of callers making
//! one call each, all at once (workers = requests = callers). `--seeds 1..=10` sweeps every
//! limiter shape, told with `Retry-After` only and with nothing, over those seeds, and prints
//! one table of the plain client, the defaults and the defaults without learning (see
//! `sweep.rs`), instead of the picture; with `--meters`, told with draft 08 meters and with
//! `X-RateLimit-*` epoch resets instead. `--trace` prints each round the layer's law judged
//! to stderr (see `trace.rs`).

mod limiter;
mod sim;
mod sweep;
mod timeline;
mod trace;
mod workload;

use workload::Args;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = Args::default();
    let mut seed = 7;
    let mut svg_path = "docs/simulate.svg".to_owned();
    let mut callers = Vec::new();
    let mut seeds = None;
    let mut styles = sweep::UNMETERED;
    let mut given = std::env::args().skip(1);
    while let Some(flag) = given.next() {
        let mut value = || given.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--seed" => seed = value()?.parse()?,
            "--svg" => svg_path = value()?,
            "--seeds" => {
                let text = value()?;
                let (first, last) = text
                    .split_once("..=")
                    .ok_or(format!("--seeds {text}: not FIRST..=LAST"))?;
                seeds = Some(first.parse()?..=last.parse()?);
            }
            "--meters" => styles = sweep::METERED,
            "--trace" => trace::install(),
            "--callers" => {
                callers = value()?
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()?
            }
            other => {
                if !args.read(other, value)? {
                    return Err(format!(
                        "unknown flag {other}\n\nflags: {} --seed N --svg PATH --callers N,N \
                         --seeds FIRST..=LAST --meters --trace",
                        workload::FLAGS
                    )
                    .into());
                }
            }
        }
    }
    if let Some(seeds) = seeds {
        println!("{}\n", args.describe());
        println!("{}", sweep::sweep(&args, seeds, styles));
        return Ok(());
    }
    let workloads: Vec<Args> = if callers.is_empty() {
        vec![args]
    } else {
        callers
            .iter()
            .map(|&callers| Args {
                workers: callers,
                requests: callers,
                ..args
            })
            .collect()
    };
    let mut pictured = None;
    for args in workloads {
        println!("{}; seed {seed}\n", args.describe());
        let rows = sim::runs(&args, seed);
        if args.matrix {
            println!("{}", workload::matrix_table(&workload::CLIENTS, &rows));
        }
        for (headers, outcomes) in rows {
            if !args.matrix {
                println!(
                    "headers: {}\n{}",
                    headers.flag(),
                    workload::runs_table(&workload::CLIENTS, &outcomes)
                );
            }
            if headers == args.headers {
                pictured = Some((args, outcomes));
            }
        }
    }
    let (args, outcomes) = pictured.expect("the style asked for is among those run");
    let title = format!(
        "{} per {:?}, {}, {}; {} requests, {} workers: accepted (green) and refused (red)",
        args.limit,
        args.window,
        args.algorithm.flag(),
        args.headers.flag(),
        args.requests,
        args.workers,
    );
    std::fs::write(&svg_path, timeline::svg(&title, &outcomes)?)?;
    println!("timeline: {svg_path}");
    Ok(())
}
