//! Instructions a call costs, bare and under the layer, beside `tower::retry` as its peer:
//! counted by valgrind's callgrind, so the figures do not depend on the machine's load.
//!
//! Run: `cargo bench --bench instructions` (needs `valgrind`). Each case runs in a process of
//! its own under callgrind, once with `--calls N` calls and once with twice as many (5,000 by
//! default); the difference of the two totals divided by N is the case's instructions a call,
//! and what the process does once (starting, building the runtime and the service, the first
//! call's allocations) cancels out. A filter after `--` keeps the cases whose name contains it
//! (`cargo bench --bench instructions -- github`). The callgrind profiles stay in
//! `target/tmp/instructions/`, to read with `callgrind_annotate --inclusive=yes FILE`.
//!
//! The calls are those of `cargo bench --bench overhead -- call` (`benches/calls/`), against a
//! service that answers at once, so what is counted is the stacks' own work. Here every stack
//! runs on one current-thread tokio runtime, one call after the other, as a client's calls run.
//!
//! A fourth stack, `floor`, is the least any layer keeping this one's promises could cost: the
//! peer (a copy of the request kept for a retry), and the two extensions the layer attaches to
//! every response, read from nothing (a `RateLimitInfo`, and a value of `CallCost`'s size in
//! its place: its constructor is the crate's own).

mod calls;

use std::fmt::Debug;
use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{Empty, Full};
use tower::{Service, ServiceExt};
use tower_retry_after::{CallCost, RateLimitInfo};

/// The first argument of a process that runs one case, rather than driving the others.
const RUN: &str = "run-case";

/// The stacks a call goes through: the service, under the layer, under `tower::retry`, and
/// under `tower::retry` with the layer's two extensions attached.
const STACKS: [&str; 4] = ["bare", "layer", "peer", "floor"];

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    match arguments.as_slice() {
        [run, stack, response, count] if run == RUN => {
            let headers = calls::RESPONSES
                .iter()
                .find(|(name, _)| name == response)
                .unwrap_or_else(|| panic!("no response named {response:?}"))
                .1;
            run_case(stack, headers, count.parse().expect("a number of calls"));
        }
        _ => drive(&arguments),
    }
}

/// Makes `count` calls through `stack` to a service answering with `headers`, one at a time.
fn run_case(stack: &str, headers: calls::Headers, count: u64) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let service = calls::answering(headers);
    let last = runtime.block_on(async {
        match stack {
            "bare" => call_in_turn(service, count).await,
            "layer" => call_in_turn(calls::layer(service), count).await,
            "peer" => call_in_turn(calls::peer(service), count).await,
            "floor" => call_in_turn(floor(service), count).await,
            _ => panic!("no stack named {stack:?}: one of {STACKS:?}"),
        }
    });
    if stack == "layer" {
        // Went straight through, and read what the response said: the path measured.
        let cost = last.extensions().get::<CallCost>().expect("a call's cost");
        assert_eq!((cost.attempts(), cost.waited()), (1, Default::default()));
        let info = last.extensions().get::<RateLimitInfo>().expect("a reading");
        assert_eq!(info.is_empty(), headers.is_empty());
    }
}

/// `service` under the peer, with what the layer attaches to every response attached: the
/// least a layer keeping its promises costs.
fn floor<S>(
    service: S,
) -> impl Service<Request<Full<Bytes>>, Response = Response<Empty<Bytes>>, Error: Debug>
where
    S: Service<Request<Full<Bytes>>, Response = Response<Empty<Bytes>>> + Clone,
    S::Error: Debug,
{
    let nothing = RateLimitInfo::from_headers(&http::HeaderMap::new(), SystemTime::UNIX_EPOCH);
    tower::ServiceBuilder::new()
        .map_response(move |mut response: Response<Empty<Bytes>>| {
            let extensions = response.extensions_mut();
            extensions.insert(nothing.clone());
            // A call's cost in `CallCost`'s shape: attempts, and the time waited.
            extensions.insert((1_u32, Duration::ZERO));
            response
        })
        .service(calls::peer(service))
}

/// The last response of `count` calls, each sent once the one before it has answered.
async fn call_in_turn<S>(mut service: S, count: u64) -> Response<Empty<Bytes>>
where
    S: Service<Request<Full<Bytes>>, Response = Response<Empty<Bytes>>>,
    S::Error: Debug,
{
    let mut last = None;
    for _ in 0..count {
        let ready = service.ready().await.unwrap();
        let response = ready.call(black_box(calls::request())).await.unwrap();
        last = Some(black_box(response));
    }
    last.expect("at least one call")
}

/// Runs every case (or those the filter names) under callgrind and prints the table.
fn drive(arguments: &[String]) {
    if Command::new("valgrind").arg("--version").output().is_err() {
        eprintln!("instructions: valgrind is not installed; nothing measured");
        return;
    }
    let mut count: u64 = 5_000;
    let mut filter = None;
    let mut arguments = arguments.iter();
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "--calls" => {
                count = arguments
                    .next()
                    .and_then(|count| count.parse().ok())
                    .expect("--calls N")
            }
            // What cargo passes to every bench.
            "--bench" => {}
            other => filter = Some(other.to_owned()),
        }
    }
    let profiles = Path::new(env!("CARGO_TARGET_TMPDIR")).join("instructions");
    std::fs::create_dir_all(&profiles).unwrap();
    let cases: Vec<(&str, &str)> = calls::RESPONSES
        .iter()
        .flat_map(|(response, _)| STACKS.map(|stack| (stack, *response)))
        .filter(|(stack, response)| {
            filter
                .as_deref()
                .is_none_or(|filter| format!("{stack}/{response}").contains(filter))
        })
        .collect();
    let per_call = measure(&cases, count, &profiles);
    print_table(&per_call, count, &profiles);
}

/// Each case's instructions a call, counted in parallel on the machine's cores (a count does
/// not depend on what else runs).
fn measure(cases: &[(&str, &str)], count: u64, profiles: &Path) -> Vec<(String, String, f64)> {
    let runs: Vec<(usize, u64)> = (0..cases.len())
        .flat_map(|case| [(case, count), (case, 2 * count)])
        .collect();
    let next = Mutex::new(runs.into_iter());
    let totals = Mutex::new(vec![[0u64; 2]; cases.len()]);
    let workers = std::thread::available_parallelism().map_or(1, usize::from);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let Some((case, calls)) = next.lock().unwrap().next() else {
                        return;
                    };
                    let (stack, response) = cases[case];
                    let total = count_instructions(stack, response, calls, profiles);
                    totals.lock().unwrap()[case][usize::from(calls != count)] = total;
                }
            });
        }
    });
    let totals = totals.into_inner().unwrap();
    cases
        .iter()
        .zip(totals)
        .map(|(&(stack, response), [once, twice])| {
            let per_call = (twice as f64 - once as f64) / count as f64;
            (stack.to_owned(), response.to_owned(), per_call)
        })
        .collect()
}

/// The instructions a process making `calls` calls of the case executes, all told.
fn count_instructions(stack: &str, response: &str, calls: u64, profiles: &Path) -> u64 {
    let profile = profiles.join(format!("{stack}-{response}-{calls}.out"));
    let output = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", profile.display()))
        .arg(std::env::current_exe().unwrap())
        .args([RUN, stack, response, &calls.to_string()])
        .output()
        .expect("valgrind runs");
    assert!(
        output.status.success(),
        "{stack}/{response} failed under valgrind:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    total_of(&profile)
}

/// The total a callgrind profile records (`totals:` or, in older profiles, `summary:`).
fn total_of(profile: &Path) -> u64 {
    let text = std::fs::read_to_string(profile).unwrap();
    text.lines()
        .find_map(|line| {
            line.strip_prefix("totals:")
                .or_else(|| line.strip_prefix("summary:"))
        })
        .and_then(|total| total.trim().parse().ok())
        .unwrap_or_else(|| panic!("no total in {}", profile.display()))
}

fn print_table(per_call: &[(String, String, f64)], count: u64, profiles: &Path) {
    let figure = |stack: &str, response: &str| {
        per_call
            .iter()
            .find(|(s, r, _)| s == stack && r == response)
            .map(|(_, _, instructions)| *instructions)
    };
    let show =
        |value: Option<f64>| value.map_or_else(|| "".to_owned(), |value| format!("{value:.0}"));
    println!(
        "Instructions a call ({count} and {} calls a run, the difference / {count}):\n",
        2 * count
    );
    println!(
        "| response | bare | layer | added by the layer | tower::retry peer | added by the peer \
         | floor: peer and extensions | added by the floor | layer beyond the peer |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (response, _) in calls::RESPONSES {
        let bare = figure("bare", response);
        let layer = figure("layer", response);
        let peer = figure("peer", response);
        let floor = figure("floor", response);
        if [bare, layer, peer, floor].iter().all(Option::is_none) {
            continue;
        }
        let added = |stack: Option<f64>| stack.zip(bare).map(|(stack, bare)| stack - bare);
        println!(
            "| {response} | {} | {} | {} | {} | {} | {} | {} | {} |",
            show(bare),
            show(layer),
            show(added(layer)),
            show(peer),
            show(added(peer)),
            show(floor),
            show(added(floor)),
            show(layer.zip(peer).map(|(layer, peer)| layer - peer)),
        );
    }
    println!("\nProfiles: {}", profiles.display());
}
