//! Shopify: `X-Shopify-Shop-Api-Call-Limit: 39/40`, the calls in a leaky bucket and its size.
//!
//! What is left is the size less what is used; the bucket leaks (two calls a second on the
//! standard plans) and names no reset, so a full bucket holds calls only through the
//! `Retry-After` its 429 carries. A value without the slash is nothing.

use super::clock::ResponseClock;
use super::field::{Fields, Name, members};
use super::meter::Reading;
use super::number::parse_count;
use super::reader::Found;

pub(super) const NAMES: &[Name] = &[Name::XShopifyShopApiCallLimit];

pub(super) fn read<'a>(fields: &Fields<'a>, _: &ResponseClock, found: &mut Found<'a>) {
    let mut bucket = Reading::default();
    for value in fields
        .lines(Name::XShopifyShopApiCallLimit)
        .flat_map(members)
    {
        if let Some((used, size)) = used_of(value) {
            bucket.merge(Reading {
                limit: Some(size),
                remaining: Some(size.saturating_sub(used)),
                ..Reading::default()
            });
        }
    }
    if bucket != Reading::default() {
        found.readings.push(bucket);
    }
}

/// `used/limit`, both plain counts.
pub(crate) fn used_of(value: &str) -> Option<(u64, u64)> {
    let (used, limit) = value.split_once('/')?;
    Some((
        parse_count(used.trim_ascii())?,
        parse_count(limit.trim_ascii())?,
    ))
}
