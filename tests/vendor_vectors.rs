//! Every line of `tests/vectors/vendor-headers.txt` (what GitHub, GitLab, Discord, OpenAI,
//! Anthropic, Shopify, Reddit, Atlassian, Zendesk, Stripe, AWS, Cloudflare, X, HubSpot,
//! Salesforce and Azure OpenAI send) is a case here, with what the crate reads from it;
//! `refusal` marks a response that is a rate-limit refusal though it is not a 429.

mod support;

use support::vectors::{Case, NOW, assert_cases_read_as_expected, assert_one_case_a_line, reads};

const VECTORS: &str = include_str!("vectors/vendor-headers.txt");

fn cases() -> Vec<Case> {
    vec![
        reads(
            r#"HTTP 403 || x-ratelimit-remaining: 0 || x-ratelimit-reset: 1700000600 || x-ratelimit-resource: core"#,
            "core[r=0 t=600s]; group=core; refusal",
        ),
        // Without x-ratelimit-resource nothing proves the server is GitHub: the wait is read, and
        // the 403 is a refusal only where one line says so (see `a_403_is_a_refusal_where_one_line_says_so`).
        reads(
            r#"HTTP 403 || retry-after: 60 || x-ratelimit-remaining: 4999"#,
            "retry=60s; _[r=4999]",
        ),
        // Only the body says it: a layer reading headers returns it as any 403.
        reads(
            r#"HTTP 403 || x-ratelimit-remaining: 4999 || body "You have exceeded a secondary rate limit""#,
            "_[r=4999]",
        ),
        reads(
            r#"HTTP 200 || x-ratelimit-resource: search || x-ratelimit-limit: 30 || x-ratelimit-remaining: 29 || x-ratelimit-reset: 1700000060"#,
            "search[l=30 r=29 t=60s]; group=search",
        ),
        // A Go duration in Retry-After: 60 s, never its prefix.
        reads(r#"Retry-After: 1m0s"#, "retry=60s"),
        reads(
            r#"RateLimit-Limit: 600 || RateLimit-Observed: 67 || RateLimit-Remaining: 533 || RateLimit-Reset: 1700000060 || RateLimit-ResetTime: Tue, 14 Nov 2023 22:14:20 GMT || RateLimit-Name: throttle_authenticated_api"#,
            "throttle_authenticated_api[l=600 r=533 t=60s]",
        ),
        reads(
            r#"X-RateLimit-Limit: 10 || X-RateLimit-Remaining: 9 || X-RateLimit-Reset: 1700000064.57 || X-RateLimit-Reset-After: 64.57 || X-RateLimit-Bucket: abcd1234"#,
            "abcd1234[l=10 r=9 t=64.57s]; group=abcd1234",
        ),
        reads(
            r#"HTTP 429 || Retry-After: 65 || X-RateLimit-Global: true || X-RateLimit-Scope: global"#,
            "retry=65s; global",
        ),
        reads(
            r#"HTTP 429 || Retry-After: 1337 || X-RateLimit-Remaining: 9 || X-RateLimit-Scope: shared || X-RateLimit-Bucket: abcd1234"#,
            "retry=1337s; abcd1234[r=9]; group=abcd1234",
        ),
        // A token reset of 0s is a quota already whole: what is left is kept.
        reads(
            r#"x-ratelimit-limit-requests: 10000 || x-ratelimit-remaining-requests: 9999 || x-ratelimit-reset-requests: 6ms || x-ratelimit-limit-tokens: 2000000 || x-ratelimit-remaining-tokens: 1999984 || x-ratelimit-reset-tokens: 0s"#,
            "requests![l=10000 r=9999 t=0.006s]; tokens[l=2000000 r=1999984 u=tokens]",
        ),
        reads(
            r#"x-ratelimit-remaining-tokens: 0 || x-ratelimit-reset-tokens: 6m0s"#,
            "tokens[r=0 t=360s u=tokens]",
        ),
        // x-should-retry is the policy's to read (`tests/vendors.rs`).
        reads(
            r#"HTTP 429 || retry-after-ms: 20 || retry-after: 1 || x-should-retry: true"#,
            "retry=0.02s",
        ),
        // The verdict is the policy's to read: nothing for the gate.
        reads(r#"HTTP 500 || x-should-retry: false"#, ""),
        reads(
            r#"anthropic-ratelimit-requests-limit: 50 || anthropic-ratelimit-requests-remaining: 0 || anthropic-ratelimit-requests-reset: 2023-11-14T22:13:50Z"#,
            "requests[l=50 r=0 t=30s]",
        ),
        reads(
            r#"anthropic-ratelimit-input-tokens-limit: 40000 || anthropic-ratelimit-input-tokens-remaining: 39000 || anthropic-ratelimit-input-tokens-reset: 2023-11-14T22:13:21.5Z || anthropic-ratelimit-output-tokens-limit: 16000 || anthropic-ratelimit-output-tokens-remaining: 0 || anthropic-ratelimit-output-tokens-reset: 2023-11-14T22:14:20+00:00"#,
            "input-tokens[l=40000 r=39000 t=1.5s u=input]; output-tokens![l=16000 r=0 t=60s u=output]",
        ),
        reads(
            r#"HTTP 429 || retry-after: 12 || anthropic-ratelimit-tokens-remaining: 0"#,
            "retry=12s; tokens[r=0 u=tokens]",
        ),
        reads(r#"X-Shopify-Shop-Api-Call-Limit: 39/40"#, "_[l=40 r=1]"),
        reads(
            r#"HTTP 429 || X-Shopify-Shop-Api-Call-Limit: 40/40 || Retry-After: 2.0"#,
            "retry=2s; _[l=40 r=0]",
        ),
        reads(
            r#"x-ratelimit-used: 2 || x-ratelimit-remaining: 598.0 || x-ratelimit-reset: 356"#,
            "_[r=598 t=356s]",
        ),
        reads(r#"x-ratelimit-remaining: 991, 98"#, "_[r=98]"),
        reads(
            r#"Beta-RateLimit-Policy: "tenant-app-quota";q=100100;w=3600 || Beta-RateLimit: "tenant-app-quota";r=17842;t=2107 || X-Beta-RateLimit-NearLimit: true"#,
            "tenant-app-quota[l=100100 r=17842 t=2107s w=3600s]",
        ),
        reads(
            r#"X-RateLimit-Limit: 350 || X-RateLimit-Remaining: 0 || X-RateLimit-Reset: 2023-11-14T22:15Z || Retry-After: 60"#,
            "retry=60s; _[l=350 r=0 t=100s]",
        ),
        reads(
            r#"zendesk-ratelimit-tickets-index: total=100; remaining=99; resets=41"#,
            "tickets-index[l=100 r=99 t=41s]",
        ),
        reads(
            r#"X-Rate-Limit: 700 || X-Rate-Limit-Remaining: 699 || ratelimit-reset: 41"#,
            "_[l=700 r=699 t=41s]",
        ),
        // Too many in flight: no wait to read, and no closure for the key's other calls.
        reads(
            r#"HTTP 429 || Stripe-Rate-Limited-Reason: global-concurrency || Stripe-Should-Retry: true"#,
            "concurrency",
        ),
        // The verdict is the policy's to read: nothing for the gate.
        reads(r#"HTTP 409 || Stripe-Should-Retry: false"#, ""),
        reads(r#"HTTP 429 || x-amz-retry-after: 1500"#, "retry=1.5s"),
        reads(
            r#"Ratelimit-Policy: "burst";q=100;w=60 || Ratelimit: "burst";r=50;t=30"#,
            "burst[l=100 r=50 t=30s w=60s]",
        ),
        // The endpoint's window is not written, so its meter is given none: it is 15 minutes
        // for most endpoints, not all.
        reads(
            r#"x-rate-limit-limit: 15 || x-rate-limit-remaining: 14 || x-rate-limit-reset: 1700000900 || x-user-limit-24hour-limit: 1000 || x-user-limit-24hour-remaining: 999 || x-user-limit-24hour-reset: 1700086400 || x-app-limit-24hour-limit: 5000 || x-app-limit-24hour-remaining: 4999 || x-app-limit-24hour-reset: 1700086400"#,
            "_![l=15 r=14 t=900s]; user-24hour[l=1000 r=999 t=86400s w=86400s]; app-24hour[l=5000 r=4999 t=86400s w=86400s]",
        ),
        // The spent cap's reset is the instructed wait (`tests/vendors.rs` shows the layer
        // failing fast on it).
        reads(
            r#"HTTP 429 || x-rate-limit-remaining: 14 || x-user-limit-24hour-remaining: 0 || x-user-limit-24hour-reset: 1700086400"#,
            "_[r=14]; user-24hour![r=0 t=86400s w=86400s]",
        ),
        // Received 5 s after its `Date`: the reset is read against that `Date`, 60 s, not
        // against the receipt, 55 s, as it would be were the `Date` no date.
        reads(r#"Date: Tue, 14 Nov 2023 22:13:20 UTC"#, "_[t=60s]")
            .with("X-RateLimit-Reset: 1700000060")
            .received_at(NOW + 5),
        reads(
            r#"X-HubSpot-RateLimit-Max: 100 || X-HubSpot-RateLimit-Remaining: 97 || X-HubSpot-RateLimit-Interval-Milliseconds: 10000 || X-HubSpot-RateLimit-Secondly: 10 || X-HubSpot-RateLimit-Secondly-Remaining: 9 || X-HubSpot-RateLimit-Daily: 250000 || X-HubSpot-RateLimit-Daily-Remaining: 249958"#,
            "burst[l=100 r=97 w=10s]; secondly![l=10 r=9 w=1s]; daily[l=250000 r=249958 w=86400s]",
        ),
        // A spent window comes back within one window: that is its reset (see `hubspot.rs`).
        reads(
            r#"HTTP 429 || X-HubSpot-RateLimit-Max: 100 || X-HubSpot-RateLimit-Remaining: 0 || X-HubSpot-RateLimit-Interval-Milliseconds: 10000"#,
            "burst[l=100 r=0 t=10s w=10s]",
        ),
        reads(
            r#"Sforce-Limit-Info: api-usage=18/5000"#,
            "api-usage[l=5000 r=4982 w=86400s]",
        ),
        reads(
            r#"Sforce-Limit-Info: api-usage=10018/100000; api-bursts=1/750"#,
            "api-usage[l=100000 r=89982 w=86400s]; api-bursts![l=750 r=749]",
        ),
        // Azure's spelling is both the token meter's reset and the wait (see `openai.rs`).
        reads(
            r#"HTTP 429 || x-rate-limit-reset-tokens: 55"#,
            "retry=55s; tokens[t=55s u=tokens]",
        ),
    ]
}

/// Zendesk joins the account meter split over three families, whether the IETF fields carry
/// only its reset or its counts as well; a Shopify bucket in the same response is not taken
/// for its counts, nor is a reset read with other counts taken for the account's.
#[test]
fn zendesk_joins_only_its_own_account_meter() {
    let cases = [
        reads(
            "X-Rate-Limit: 700 || X-Rate-Limit-Remaining: 699 || ratelimit-limit: 700 || ratelimit-remaining: 699 || ratelimit-reset: 41",
            "_[l=700 r=699 t=41s]",
        ),
        reads(
            "X-Rate-Limit: 700 || X-Rate-Limit-Remaining: 699 || ratelimit-remaining: 699 || ratelimit-reset: 41",
            "_[l=700 r=699 t=41s]",
        ),
        reads(
            "X-Rate-Limit: 700 || X-Rate-Limit-Remaining: 699 || ratelimit-limit: 400 || ratelimit-remaining: 699 || ratelimit-reset: 41",
            "_![l=400 r=699 t=41s]; _[l=700 r=699]",
        ),
        reads(
            "X-Rate-Limit: 700 || ratelimit-reset: 41 || X-Shopify-Shop-Api-Call-Limit: 39/40",
            "_[t=41s]; _[l=700]; _![l=40 r=1]",
        ),
        reads(
            "X-Rate-Limit: 700 || X-Rate-Limit-Remaining: 699 || RateLimit-Remaining: 5 || RateLimit-Reset: 30",
            "_![r=5 t=30s]; _[l=700 r=699]",
        ),
    ];
    assert_cases_read_as_expected(&cases);
}

/// A response naming more meters than any vendor sends keeps the first eight of each vendor's
/// family, counted apart from the meters other readers found before it.
#[test]
fn a_vendor_reader_keeps_at_most_eight_meters_of_its_own() {
    let cases = [
        reads(
            "x-ratelimit-remaining: 5 || anthropic-ratelimit-m1-remaining: 1 || anthropic-ratelimit-m2-remaining: 2 || anthropic-ratelimit-m3-remaining: 3 || anthropic-ratelimit-m4-remaining: 4 || anthropic-ratelimit-m5-remaining: 5 || anthropic-ratelimit-m6-remaining: 6 || anthropic-ratelimit-m7-remaining: 7 || anthropic-ratelimit-m8-remaining: 8 || anthropic-ratelimit-m9-remaining: 9",
            "_![r=5]; m1[r=1 u=other]; m2[r=2 u=other]; m3[r=3 u=other]; m4[r=4 u=other]; m5[r=5 u=other]; m6[r=6 u=other]; m7[r=7 u=other]; m8[r=8 u=other]",
        ),
        reads(
            "x-ratelimit-remaining: 5 || zendesk-ratelimit-e1: remaining=1 || zendesk-ratelimit-e2: remaining=2 || zendesk-ratelimit-e3: remaining=3 || zendesk-ratelimit-e4: remaining=4 || zendesk-ratelimit-e5: remaining=5 || zendesk-ratelimit-e6: remaining=6 || zendesk-ratelimit-e7: remaining=7 || zendesk-ratelimit-e8: remaining=8 || zendesk-ratelimit-e9: remaining=9",
            "_[r=5]; e1![r=1]; e2[r=2]; e3[r=3]; e4[r=4]; e5[r=5]; e6[r=6]; e7[r=7]; e8[r=8]",
        ),
    ];
    assert_cases_read_as_expected(&cases);
}

/// A limit's name becomes part of a key: a value that is not a short token names neither the
/// meter nor the group, and proves nothing of the server (the 403 stays a 403).
#[test]
fn a_resource_or_bucket_that_is_not_a_short_token_names_nothing() {
    let cases = [
        reads(
            "HTTP 403 || x-ratelimit-remaining: 0 || x-ratelimit-resource: core search",
            "_[r=0]",
        ),
        reads(
            "X-RateLimit-Remaining: 9 || X-RateLimit-Bucket: abcd/1234",
            "_[r=9]",
        ),
    ];
    assert_cases_read_as_expected(&cases);
}

/// GitLab's `RateLimit-ResetTime` is a reset of its own: read where `RateLimit-Reset` is
/// absent, and a meter of its own where no other field gave one; a `RateLimit-Name` that is
/// not a short token adds nothing.
#[test]
fn gitlab_reset_time_is_read_without_ratelimit_reset() {
    let cases = [
        reads(
            "RateLimit-Remaining: 533 || RateLimit-ResetTime: Tue, 14 Nov 2023 22:14:20 GMT",
            "_[r=533 t=60s]",
        ),
        reads(
            "RateLimit-ResetTime: Tue, 14 Nov 2023 22:14:20 GMT || RateLimit-Name: throttle_authenticated_api",
            "throttle_authenticated_api[t=60s]",
        ),
        reads("RateLimit-Name: throttle authenticated api", ""),
    ];
    assert_cases_read_as_expected(&cases);
}

/// Zendesk's endpoint meters: one per endpoint, its lines merged, after the meters other
/// readers found; a line without an endpoint or without a figure is nothing.
#[test]
fn zendesk_merges_the_lines_of_one_endpoint_and_skips_the_empty() {
    let cases = [
        reads(
            "x-ratelimit-remaining: 5 || zendesk-ratelimit-a: total=10 || zendesk-ratelimit-b: total=20 || zendesk-ratelimit-b: remaining=3",
            "_[r=5]; a[l=10]; b![l=20 r=3]",
        ),
        reads(
            "zendesk-ratelimit-: total=10; remaining=3 || zendesk-ratelimit-a: limit=5; left=2",
            "",
        ),
    ];
    assert_cases_read_as_expected(&cases);
}

/// X's caps: each a meter over a day, its reset an epoch instant or a countdown; duplicates give
/// the most restrictive figure, a reset already past leaves the quota unknown, and a figure
/// that is empty, negative, overflowing, not ASCII digits or garbage is nothing.
#[test]
fn x_caps_read_each_figure_or_nothing() {
    let cases = [
        reads(
            "x-app-limit-24hour-remaining: 12 || x-app-limit-24hour-reset: 3600",
            "app-24hour[r=12 t=3600s w=86400s]",
        ),
        reads(
            "x-user-limit-24hour-remaining: 5 || x-user-limit-24hour-remaining: 3 || x-user-limit-24hour-reset: 1700000100, 1700000200",
            "user-24hour[r=3 t=200s w=86400s]",
        ),
        reads(
            "x-user-limit-24hour-limit: 1000 || x-user-limit-24hour-remaining: 0 || x-user-limit-24hour-reset: 1699999000",
            "user-24hour[l=1000 w=86400s]",
        ),
        reads(
            "x-user-limit-24hour-limit:  || x-user-limit-24hour-remaining: -1 || x-user-limit-24hour-reset: soon || x-app-limit-24hour-remaining: 4abc",
            "",
        ),
        reads(
            "x-user-limit-24hour-remaining: 18446744073709551616 || x-app-limit-24hour-limit: ５ || x-app-limit-24hour-reset: -60",
            "",
        ),
    ];
    assert_cases_read_as_expected(&cases);
}

/// HubSpot's meters: a spent short one resets within its window (the burst interval, a
/// second), aged by `Age`; a spent day, one with quota left, or one without a known window is
/// given no reset.
/// Duplicates give the lowest counts and the longest interval; an interval that is zero,
/// negative, overflowing or garbage is no window, and a count of that kind is nothing.
#[test]
fn hubspot_meters_read_each_figure_or_nothing() {
    let cases = [
        reads(
            "X-HubSpot-RateLimit-Secondly: 10 || X-HubSpot-RateLimit-Secondly-Remaining: 0",
            "secondly[l=10 r=0 t=1s w=1s]",
        ),
        // A day's bound could lock the key for hours after the quota came back: no reset.
        reads(
            "X-HubSpot-RateLimit-Daily-Remaining: 0",
            "daily[r=0 w=86400s]",
        ),
        reads(
            "X-HubSpot-RateLimit-Max: 100 || X-HubSpot-RateLimit-Remaining: 0",
            "burst[l=100 r=0]",
        ),
        reads(
            "X-HubSpot-RateLimit-Remaining: 0 || X-HubSpot-RateLimit-Interval-Milliseconds: 10000",
            "burst[r=0 t=7s w=10s]",
        )
        .with("Age: 3"),
        reads(
            "X-HubSpot-RateLimit-Remaining: 5 || X-HubSpot-RateLimit-Remaining: 3 || X-HubSpot-RateLimit-Interval-Milliseconds: 10000, 20000",
            "burst[r=3 w=20s]",
        ),
        reads(
            "X-HubSpot-RateLimit-Remaining: 7 || X-HubSpot-RateLimit-Interval-Milliseconds: 0, -10000, 99999999999999999999, 10s, 10000.5",
            "burst[r=7]",
        ),
        reads("X-HubSpot-RateLimit-Interval-Milliseconds: 10000", ""),
        reads(
            "X-HubSpot-RateLimit-Max:  || X-HubSpot-RateLimit-Remaining: -1 || X-HubSpot-RateLimit-Daily: ２５０ || X-HubSpot-RateLimit-Secondly-Remaining: 18446744073709551616",
            "",
        ),
    ];
    assert_cases_read_as_expected(&cases);
}

/// Salesforce's members: what is left is the limit less what is used (nothing past the
/// limit), lines of one member merge, only `api-usage` is known to be daily, and a member
/// that is not `key=used/limit` with a short token for its key is skipped.
#[test]
fn salesforce_members_are_meters_or_nothing() {
    let cases = [
        reads(
            "Sforce-Limit-Info: api-usage=5001/5000",
            "api-usage[l=5000 r=0 w=86400s]",
        ),
        reads(
            "Sforce-Limit-Info: api-usage=18/5000 || Sforce-Limit-Info: api-usage=20/5000",
            "api-usage[l=5000 r=4980 w=86400s]",
        ),
        reads(
            "Sforce-Limit-Info: api-usage = 18 / 5000 ,api-bursts=1/750",
            "api-usage[l=5000 r=4982 w=86400s]; api-bursts![l=750 r=749]",
        ),
        reads(
            "Sforce-Limit-Info: per-app-api-usage=17/250(appName=sample-connected-app); api-usage=25/5000",
            "api-usage[l=5000 r=4975 w=86400s]",
        ),
        reads(
            "Sforce-Limit-Info: api-usage=18; api-usage=/5000; api-usage=-1/5000; api-usage=18/18446744073709551616; =1/2; api usage=1/2; api-usage",
            "",
        ),
        reads("Sforce-Limit-Info: api-usage=１８/5000", ""),
        reads("Sforce-Limit-Info: ", ""),
    ];
    assert_cases_read_as_expected(&cases);
}

/// Azure's spelling of the token reset is OpenAI's: one token meter with the later of the
/// resets, and the wait, the longer beside a `Retry-After`, aged by `Age`; zero is a quota
/// already whole and no wait, and a value that is negative, garbage or not ASCII is nothing.
#[test]
fn azure_spells_the_token_reset_its_own_way() {
    let cases = [
        reads(
            "HTTP 429 || x-rate-limit-reset-tokens: 55 || retry-after: 20",
            "retry=55s; tokens[t=55s u=tokens]",
        ),
        reads(
            "x-ratelimit-remaining-tokens: 0 || x-ratelimit-reset-tokens: 30s || x-rate-limit-reset-tokens: 55",
            "retry=55s; tokens[r=0 t=55s u=tokens]",
        ),
        reads(
            "x-rate-limit-reset-tokens: 55 || x-rate-limit-reset-tokens: 1m0s",
            "retry=60s; tokens[t=60s u=tokens]",
        ),
        reads(
            "x-rate-limit-reset-tokens: 55",
            "retry=45s; tokens[t=45s u=tokens]",
        )
        .with("Age: 10"),
        reads("x-rate-limit-reset-tokens: 0", ""),
        reads(
            "x-rate-limit-reset-tokens: -5 || x-rate-limit-reset-tokens: soon || x-rate-limit-reset-tokens:  || x-rate-limit-reset-tokens: ５５",
            "",
        ),
    ];
    assert_cases_read_as_expected(&cases);
}

#[test]
fn every_vector_line_has_exactly_one_case() {
    assert_one_case_a_line(VECTORS, &cases());
}

#[test]
fn every_vector_reads_as_the_design_decides() {
    assert_cases_read_as_expected(&cases());
}
