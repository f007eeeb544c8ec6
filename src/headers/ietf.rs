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

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::Duration;

use smallvec::SmallVec;

use super::clock::{Reset, ResponseClock};
use super::field::{Fields, Name};
use super::meter::{Reading, Readings};
use super::number::Decimal;
use super::structured::{Member, Members, parse_dictionary, parse_list};

const FIELDS: &[Name] = &[
    Name::RateLimit,
    Name::RateLimitPolicy,
    Name::RateLimitLimit,
    Name::RateLimitRemaining,
    Name::RateLimitReset,
];

/// The fields of drafts 01 to 06, one figure each.
const SPLIT_FIELDS: &[Name] = &[
    Name::RateLimitLimit,
    Name::RateLimitRemaining,
    Name::RateLimitReset,
];

/// Bare-integer limits with their windows (drafts 01 to 07), held inline: a response names few.
type Policies = SmallVec<[(u64, Option<u64>); 4]>;

/// Adds every meter the IETF fields describe to `readings`: the current window first, then
/// the policies.
pub(crate) fn read<'a>(fields: &Fields<'a>, clock: &ResponseClock, readings: &mut Readings<'a>) {
    if !fields.has_any(FIELDS) {
        return;
    }
    let mut current = Reading::default();
    let mut policies = Policies::new();
    if fields.has_any(SPLIT_FIELDS) {
        read_split_fields(fields, clock, &mut current, &mut policies);
    }

    let ratelimit_field = fields.combined(Name::RateLimit);
    let dictionary = ratelimit_field.as_deref().and_then(parse_dictionary);
    let reports = match dictionary {
        Some(dictionary) => {
            current.merge(Reading {
                limit: dictionary.limit,
                remaining: dictionary.remaining,
                reset: dictionary.reset.map(|reset| countdown(reset, clock)),
                ..Reading::default()
            });
            Members::new()
        }
        None => list_members(ratelimit_field),
    };

    let mut policy_members = list_members(fields.combined(Name::RateLimitPolicy));
    // Drafts 06 and 07 make such a field invalid: it cannot say which policy is which.
    if has_two_policies_with_one_quota(&policy_members) {
        policy_members.clear();
    }
    // A plain loop: `extend` reserves for the iterator's bounds first, which costs more than
    // the one or two pushes a response needs.
    for member in &policy_members {
        if let (None, Some(quota)) = (&member.name, member.integer) {
            policies.push((quota, member.window));
        }
    }
    attach_policies(current, &policies, readings);

    named(policy_members, reports, clock, readings);
}

/// Adds a meter for each named policy (drafts 08 to 10), with what `reports` say of it.
// Inlined: the lists are moved in, and a call would copy them. Drained rather than iterated by
// value: an iterator by value is a copy of the whole list.
#[inline(always)]
pub(super) fn named<'a>(
    mut policies: Members<'a>,
    mut reports: Members<'a>,
    clock: &ResponseClock,
    readings: &mut Readings<'a>,
) {
    let mut named = ByName::starting_at(readings.len());
    for member in policies.drain(..) {
        let Some(name) = member.name else { continue };
        let policy = Reading {
            limit: member.quota,
            window: member.window.map(Duration::from_secs),
            unit: member.unit,
            ..Reading::default()
        };
        named.add(readings, name, policy);
    }
    for member in reports.drain(..) {
        let Some(name) = member.name else { continue };
        let report = Reading {
            remaining: member.remaining,
            reset: member.reset.map(|reset| countdown(reset, clock)),
            ..Reading::default()
        };
        named.add(readings, name, report);
    }
}

/// Folds the figures of drafts 01 to 06's `RateLimit-Limit`, `-Remaining` and `-Reset` into
/// the `current` window, and the policies listed after the current limit into `policies`.
/// Asked only of a response that carries one of them: most use a later draft or none.
fn read_split_fields(
    fields: &Fields<'_>,
    clock: &ResponseClock,
    current: &mut Reading<'_>,
    policies: &mut Policies,
) {
    for (limit, window) in integers(fields, Name::RateLimitLimit) {
        match window {
            // Drafts 01 to 03 list the policies after the current limit.
            Some(_) => policies.push((limit, window)),
            None => current.merge(Reading {
                limit: Some(limit),
                ..Reading::default()
            }),
        }
    }
    for (remaining, _) in integers(fields, Name::RateLimitRemaining) {
        current.merge(Reading {
            remaining: Some(remaining),
            ..Reading::default()
        });
    }
    for (reset, _) in integers(fields, Name::RateLimitReset) {
        current.merge(Reading {
            reset: Some(countdown(reset, clock)),
            ..Reading::default()
        });
    }
}

/// The members of a list field (none if it is not one the drafts allow), their names borrowed
/// from the response where the field is a single line.
pub(super) fn list_members(field: Option<Cow<'_, str>>) -> Members<'_> {
    match field {
        Some(Cow::Borrowed(text)) => parse_list(text).unwrap_or_default(),
        Some(Cow::Owned(text)) => parse_list(&text)
            .unwrap_or_default()
            .into_iter()
            .map(Member::into_owned)
            .collect(),
        None => Members::new(),
    }
}

/// The bare-integer members of a field, each with its `w` parameter.
fn integers(fields: &Fields<'_>, name: Name) -> Policies {
    let Some(field) = fields.combined(name) else {
        return Policies::new();
    };
    parse_list(&field)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|member| Some((member.integer?, member.window)))
        .collect()
}

/// Adds the current window, given the window of its policy, and every other policy as a meter
/// of its own.
fn attach_policies<'a>(
    mut current: Reading<'a>,
    policies: &[(u64, Option<u64>)],
    readings: &mut Readings<'a>,
) {
    let lone_policy_for_an_unknown_limit = current.limit.is_none() && policies.len() == 1;
    let first = readings.len();
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
        readings.insert(first, current);
    }
}

/// Folds named readings into the ones of the same name, from `first` on. Fields name one to
/// three quotas, so the search is linear; once there are many, a hash index keeps a hostile
/// field of fifty thousand members linear in its length instead of quadratic.
struct ByName<'a> {
    first: usize,
    index: HashMap<Cow<'a, str>, usize>,
}

impl<'a> ByName<'a> {
    /// Past this many names the index is built.
    const LINEAR_UP_TO: usize = 16;

    fn starting_at(first: usize) -> Self {
        ByName {
            first,
            index: HashMap::new(),
        }
    }

    /// Names `reading` and folds it into the reading of that name, or adds it.
    fn add(&mut self, readings: &mut Readings<'a>, name: Cow<'a, str>, reading: Reading<'a>) {
        let known = if self.index.is_empty() {
            readings[self.first..]
                .iter()
                .position(|known| known.name.as_ref() == Some(&name))
                .map(|at| self.first + at)
        } else {
            self.index.get(&name).copied()
        };
        if let Some(at) = known {
            return readings[at].merge(reading);
        }
        if self.index.is_empty() && readings.len() - self.first >= Self::LINEAR_UP_TO {
            self.index = (self.first..readings.len())
                .filter_map(|at| Some((readings[at].name.clone()?, at)))
                .collect();
        }
        if !self.index.is_empty() {
            self.index.insert(name.clone(), readings.len());
        }
        readings.push(Reading {
            name: Some(name),
            ..reading
        });
    }
}

fn has_two_policies_with_one_quota(members: &[Member<'_>]) -> bool {
    // Most fields name one policy: nothing to collect and sort.
    if members.len() < 2 {
        return false;
    }
    let mut quotas: SmallVec<[u64; 4]> =
        members.iter().filter_map(|member| member.integer).collect();
    quotas.sort_unstable();
    quotas.windows(2).any(|pair| pair[0] == pair[1])
}

fn countdown(reset: u64, clock: &ResponseClock) -> Duration {
    clock.reset(Reset::from_number(Decimal {
        whole: reset,
        nanos: 0,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(by_name: &mut ByName<'static>, readings: &mut Readings<'static>, n: usize) {
        by_name.add(readings, Cow::Owned(format!("q{n}")), Reading::default());
    }

    /// The index only changes how names are found, so no reading shows whether it was built:
    /// this pins that it is, once the names after `first` pass the linear search's limit.
    #[test]
    fn names_are_indexed_once_there_are_more_than_a_linear_search_should_scan() {
        let mut readings: Readings = smallvec::smallvec![Reading::default(); 3];
        let mut by_name = ByName::starting_at(readings.len());
        for n in 0..ByName::LINEAR_UP_TO {
            named(&mut by_name, &mut readings, n);
        }
        assert!(
            by_name.index.is_empty(),
            "sixteen names are searched in turn"
        );
        named(&mut by_name, &mut readings, ByName::LINEAR_UP_TO);
        assert_eq!(by_name.index.len(), ByName::LINEAR_UP_TO + 1);
        // Found through the index: folded in, not added.
        named(&mut by_name, &mut readings, 0);
        assert_eq!(readings.len(), 3 + ByName::LINEAR_UP_TO + 1);
    }

    /// The limit and window of each reading of a lone `RateLimit-Policy` line.
    fn policies_read(line: &'static str) -> Vec<(Option<u64>, Option<Duration>)> {
        let mut headers = http::HeaderMap::new();
        headers.insert("ratelimit-policy", http::HeaderValue::from_static(line));
        let fields = Fields::new(&headers);
        let clock = ResponseClock::read(&fields, std::time::UNIX_EPOCH);
        let mut readings = Readings::new();
        read(&fields, &clock, &mut readings);
        readings
            .iter()
            .map(|reading| (reading.limit, reading.window))
            .collect()
    }

    /// Drafts 06 and 07: a field naming one quota twice cannot say which policy is which,
    /// however many policies it names, and is ignored whole.
    #[test]
    fn a_policy_field_naming_one_quota_twice_is_ignored_however_long() {
        let secs = |n| Some(Duration::from_secs(n));
        assert_eq!(
            policies_read("10;w=1, 50;w=60, 1000;w=3600"),
            [
                (Some(10), secs(1)),
                (Some(50), secs(60)),
                (Some(1000), secs(3600))
            ]
        );
        assert_eq!(policies_read("10;w=1, 50;w=60, 10;w=3600"), []);
        assert_eq!(policies_read("5;w=1, 50;w=60, 1000;w=3600, 50;w=86400"), []);
        assert_eq!(policies_read("10;w=1, 10;w=60"), []);
        assert_eq!(policies_read("10;w=60"), [(Some(10), secs(60))]);
    }
}
