//! The README's quick start runs as shown: its code is `tests/readme/quick_start.rs`, here
//! checked to be the README's block character for character, and run against a stand-in API
//! on loopback (the README shows no stand-in: a reader pastes the client alone).

mod support;

const README: &str = include_str!("../README.md");
const QUICK_START: &str = include_str!("readme/quick_start.rs");

#[test]
fn the_readme_shows_the_quick_start_that_is_run_here() {
    let block = format!("```rust,no_run\n{QUICK_START}```\n");
    assert!(
        README.contains(&block),
        "README.md's quick start differs from tests/readme/quick_start.rs"
    );
}

// Included rather than a module of its own so that the test reaches its private `call`, as
// a reader's `main` does; `main` itself is the reader's entry point, not called here.
#[allow(dead_code)]
mod quick_start {
    include!("readme/quick_start.rs");

    use crate::support::{TestServer, header};

    #[tokio::test(start_paused = true)]
    async fn the_quick_start_waits_out_a_429_and_gets_the_answer() {
        let server = TestServer::start(|_, _, nth| match nth {
            0 => (429, vec![header("retry-after", 1)]),
            _ => (200, vec![header("ratelimit", r#""minute";r=4999;t=30"#)]),
        })
        .await;
        call(&server.url("")).await.unwrap();
        assert_eq!(server.count("GET", "/user"), 2);
    }
}
