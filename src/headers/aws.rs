//! AWS: `x-amz-retry-after`, the wait in milliseconds, as the AWS SDKs read it. Beside a
//! `Retry-After`, the longer of the two stands: the client never retries before either.

use super::clock::ResponseClock;
use super::field::{Fields, Name, members};
use super::number::parse_decimal;
use super::reader::Found;

pub(super) const NAMES: &[Name] = &[Name::XAmzRetryAfter];

pub(super) fn read<'a>(fields: &Fields<'a>, _: &ResponseClock, found: &mut Found<'a>) {
    for value in fields.lines(Name::XAmzRetryAfter).flat_map(members) {
        if let Some(millis) = parse_decimal(value) {
            found.retry_after(millis.millis());
        }
    }
}
