//! Salesforce: `Sforce-Limit-Info: api-usage=18/5000`, the calls used of the organisation's
//! quota over a rolling day, and further members in the same form (`api-usage=10018/100000;
//! api-bursts=1/750`), each a meter named by its key.
//!
//! What is left is the limit less what is used (nothing, where usage runs past the limit:
//! Salesforce lets it). Only `api-usage` is documented as daily; another member's window is
//! unknown. No reset is sent, so a spent quota holds calls only through the `Retry-After` a
//! refusal carries. A member that is not `key=used/limit` (`per-app-api-usage=17/250(appName=x)`
//! among them) is skipped, never read by its prefix.

use std::time::Duration;

use super::clock::ResponseClock;
use super::field::{Fields, Name};
use super::github::is_group_name;
use super::meter::Reading;
use super::reader::Found;
use super::shopify::used_of;

/// The window of `api-usage`.
const DAY: Duration = Duration::from_secs(24 * 60 * 60);

pub(super) const NAMES: &[Name] = &[Name::SforceLimitInfo];

pub(super) fn read<'a>(fields: &Fields<'a>, _: &ResponseClock, found: &mut Found<'a>) {
    let first = found.readings.len();
    for member in fields
        .lines(Name::SforceLimitInfo)
        .flat_map(|line| line.split([';', ',']))
    {
        let Some((key, value)) = member.split_once('=') else {
            continue;
        };
        let key = key.trim_ascii();
        let Some((used, limit)) = used_of(value.trim_ascii()).filter(|_| is_group_name(key)) else {
            continue;
        };
        let reading = Reading {
            limit: Some(limit),
            remaining: Some(limit.saturating_sub(used)),
            window: (key == "api-usage").then_some(DAY),
            ..Reading::default()
        };
        found.add_named(first, key, reading);
    }
}
