//! Anthropic: one meter per `anthropic-ratelimit-<meter>-{limit,remaining,reset}` triple
//! (`requests`, `tokens`, `input-tokens`, `output-tokens`, and any the API adds), each reset an
//! RFC 3339 instant read against the response's `Date` (an epoch number is read as one too).

use super::clock::{Reset, ResponseClock, epoch_second, second_of};
use super::field::{ANTHROPIC_PREFIX, Fields, Name};
use super::instant::parse_instant;
use super::meter::{Reading, Unit};
use super::number::{parse_count_with_fraction, parse_decimal};
use super::reader::Found;

pub(super) const NAMES: &[Name] = &[Name::AnthropicRateLimit];

pub(super) fn read<'a>(fields: &Fields<'a>, clock: &ResponseClock, found: &mut Found<'a>) {
    let first = found.readings.len();
    for (rest, line) in fields.prefixed(ANTHROPIC_PREFIX) {
        let Some((meter, figure)) = rest.rsplit_once('-') else {
            continue;
        };
        let mut reading = Reading::default();
        match figure {
            "limit" => reading.limit = parse_count_with_fraction(line),
            "remaining" => reading.remaining = parse_count_with_fraction(line),
            "reset" => {
                (reading.reset, reading.reset_second) = match reset(line, clock) {
                    Some((left, second)) => (Some(left), second),
                    None => (None, None),
                }
            }
            _ => continue,
        }
        if reading == Reading::default() {
            continue;
        }
        let reading = Reading {
            unit: unit(meter),
            ..reading
        };
        found.add_named(first, meter, reading);
    }
}

fn unit(meter: &str) -> Unit {
    match meter {
        "requests" => Unit::Requests,
        "tokens" => Unit::Tokens,
        "input-tokens" => Unit::InputTokens,
        "output-tokens" => Unit::OutputTokens,
        _ => Unit::Other,
    }
}

/// The time left at receipt, and the second on the server's clock the reset names, where it
/// names one.
fn reset(line: &str, clock: &ResponseClock) -> Option<(std::time::Duration, Option<u64>)> {
    match parse_decimal(line) {
        Some(number) => Some((
            clock.reset(Reset::from_number(number)),
            epoch_second(number),
        )),
        None => parse_instant(line).map(|at| (clock.until(at), second_of(at))),
    }
}
