//! The IETF `RateLimit` header drafts (draft-ietf-httpapi-ratelimit-headers), every shape:
//!
//! - drafts 01 to 03: `RateLimit-Limit: 10, 10;w=1, 50;w=60` (the current limit, then the
//!   policies), `RateLimit-Remaining: 5`, `RateLimit-Reset: 7` (a countdown in seconds);
//! - drafts 04 to 06: the same three fields, with policies in `RateLimit-Policy: 100;w=60`;
//! - draft 07: one dictionary, `RateLimit: limit=100, remaining=50, reset=5`, beside a
//!   bare-integer `RateLimit-Policy`;
//! - drafts 08 to 10: named policies, `RateLimit-Policy: "day";q=5000;w=86400` and
//!   `RateLimit: "day";r=100;t=36000`, several to a field and split over field lines.
//!
//! Up to draft 07 a response describes one current window. Its figures, from whichever shape
//! carried them, form one unnamed meter; the policy whose quota equals its limit gives it its
//! window. Every other policy is a meter of its own with a limit and a window and nothing else
//! known. From draft 08 each named policy is a meter, and `RateLimit` reports on some of them.
//!
//! A reset is a countdown below 1,000,000,000 and an epoch instant above (some servers send
//! epoch under these names), aged by the response's clock either way.

use std::time::Duration;

use http::HeaderMap;

use super::clock::{Reset, ResponseClock};
use super::field::combined;
use super::meter::Reading;
use super::number::Decimal;
use super::structured::{Member, parse_dictionary, parse_list};

/// Every meter the IETF fields describe.
pub(crate) fn read(headers: &HeaderMap, clock: &ResponseClock) -> Vec<Reading> {
    let mut current = Reading::default();
    let mut policies = Vec::new();
    let mut named: Vec<Reading> = Vec::new();

    for (limit, window) in integers(headers, "ratelimit-limit") {
        match window {
            // Drafts 01 to 03 list the policies after the current limit.
            Some(_) => policies.push((limit, window)),
            None => current.merge(Reading {
                limit: Some(limit),
                ..Reading::default()
            }),
        }
    }
    for (remaining, _) in integers(headers, "ratelimit-remaining") {
        current.merge(Reading {
            remaining: Some(remaining),
            ..Reading::default()
        });
    }
    for (reset, _) in integers(headers, "ratelimit-reset") {
        current.merge(Reading {
            reset: Some(countdown(reset, clock)),
            ..Reading::default()
        });
    }

    let policy_field = combined(headers, "ratelimit-policy");
    let policy_members = policy_field
        .as_deref()
        .and_then(parse_list)
        // Drafts 06 and 07 make such a field invalid: it cannot say which policy is which.
        .filter(|members| !has_two_policies_with_one_quota(members))
        .unwrap_or_default();
    for member in policy_members {
        match (member.name, member.integer) {
            (Some(name), _) => merge_named(
                &mut named,
                Reading {
                    name: Some(name.into_owned()),
                    limit: member.quota,
                    window: member.window.map(Duration::from_secs),
                    ..Reading::default()
                },
            ),
            (None, Some(quota)) => policies.push((quota, member.window)),
            (None, None) => {}
        }
    }

    let ratelimit = combined(headers, "ratelimit");
    if let Some(dictionary) = ratelimit.as_deref().and_then(parse_dictionary) {
        current.merge(Reading {
            limit: dictionary.limit,
            remaining: dictionary.remaining,
            reset: dictionary.reset.map(|reset| countdown(reset, clock)),
            ..Reading::default()
        });
    } else {
        for member in ratelimit
            .as_deref()
            .and_then(parse_list)
            .unwrap_or_default()
        {
            let Some(name) = member.name else { continue };
            merge_named(
                &mut named,
                Reading {
                    name: Some(name.into_owned()),
                    remaining: member.remaining,
                    reset: member.reset.map(|reset| countdown(reset, clock)),
                    ..Reading::default()
                },
            );
        }
    }

    let mut readings = attach_policies(current, &policies);
    readings.extend(named);
    readings
}

/// The bare-integer members of a field, each with its `w` parameter.
fn integers(headers: &HeaderMap, name: &'static str) -> Vec<(u64, Option<u64>)> {
    let Some(field) = combined(headers, name) else {
        return Vec::new();
    };
    parse_list(&field)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|member| Some((member.integer?, member.window)))
        .collect()
}

/// Gives the current window the window of its policy, and makes every other policy a meter.
fn attach_policies(mut current: Reading, policies: &[(u64, Option<u64>)]) -> Vec<Reading> {
    let lone_policy_for_an_unknown_limit = current.limit.is_none() && policies.len() == 1;
    let mut readings = Vec::new();
    for &(quota, window) in policies {
        let policy = Reading {
            limit: Some(quota),
            window: window.map(Duration::from_secs),
            ..Reading::default()
        };
        if current.limit == Some(quota) || lone_policy_for_an_unknown_limit {
            current.merge(policy);
        } else {
            readings.push(policy);
        }
    }
    if current != Reading::default() {
        readings.insert(0, current);
    }
    readings
}

fn merge_named(named: &mut Vec<Reading>, reading: Reading) {
    match named.iter_mut().find(|known| known.name == reading.name) {
        Some(known) => known.merge(reading),
        None => named.push(reading),
    }
}

fn has_two_policies_with_one_quota(members: &[Member<'_>]) -> bool {
    let quotas: Vec<u64> = members.iter().filter_map(|member| member.integer).collect();
    quotas
        .iter()
        .enumerate()
        .any(|(index, quota)| quotas[index + 1..].contains(quota))
}

fn countdown(reset: u64, clock: &ResponseClock) -> Duration {
    clock.reset(Reset::from_number(Decimal {
        whole: reset,
        nanos: 0,
    }))
}
