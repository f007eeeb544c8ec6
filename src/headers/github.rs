//! GitHub's REST API: the `X-RateLimit-*` family (read by `x_ratelimit`, which names the meter
//! after `x-ratelimit-resource`), and what `x-ratelimit-resource` proves.
//!
//! - `x-ratelimit-resource: core | search | graphql | …` names one of several limits GitHub
//!   keeps for one token: later calls of the same route are gated by that limit alone, so a
//!   spent search quota does not hold calls to the core API.
//! - GitHub answers a spent limit with 403 as well as 429 (the primary limit with
//!   `x-ratelimit-remaining: 0`, a secondary limit with `Retry-After`). Only a response that
//!   carries `x-ratelimit-resource` proves the server is GitHub, so only then is such a 403 a
//!   refusal by default; elsewhere one line of configuration says so (see
//!   [`Found::forbidden_is_refusal`](super::Found::forbidden_is_refusal)).
//! - A secondary limit without `Retry-After` says so only in its body, which a layer reading
//!   headers does not see: it is returned as any 403 is.

use std::borrow::Cow;

use super::clock::ResponseClock;
use super::field::{Fields, Name};
use super::reader::Found;

pub(super) const NAMES: &[Name] = &[Name::XRateLimitResource];

pub(super) fn read<'a>(fields: &Fields<'a>, _: &ResponseClock, found: &mut Found<'a>) {
    if let Some(resource) = resource(fields) {
        found.group = Some(Cow::Borrowed(resource));
        found.signals.forbidden_is_refusal = true;
    }
}

/// The resource the response counted against, if it names one a key can carry.
pub(super) fn resource<'a>(fields: &Fields<'a>) -> Option<&'a str> {
    fields
        .lines(Name::XRateLimitResource)
        .next()
        .filter(|name| is_group_name(name))
}

/// A name a server gives one of its limits: short, and nothing but a token's characters, so
/// that a hostile value cannot smuggle a key of any size or shape into the gates.
pub(super) fn is_group_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b':'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_name_is_one_to_64_token_characters() {
        for name in [
            "core",
            "graphql",
            "a",
            "throttle_authenticated_api",
            "v4:search-1.x",
        ] {
            assert!(is_group_name(name), "{name:?}");
        }
        assert!(is_group_name(&"a".repeat(64)), "64 characters");
        assert!(!is_group_name(&"a".repeat(65)), "65 characters");
        for hostile in [
            "",
            "core search",
            "../core",
            "core/1",
            "core\"",
            "caf\u{e9}",
        ] {
            assert!(!is_group_name(hostile), "{hostile:?}");
        }
    }
}
