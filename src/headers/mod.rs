//! Reading a server's own rate-limit headers: the interface of a reader of your own.
//!
//! The layer reads every format it knows from every response (`Retry-After`, the IETF
//! `RateLimit` drafts, `X-RateLimit-*`, and the vendors' own headers the
//! [reading guide](crate::guide::reading) lists) into a [`RateLimitInfo`]. A server that
//! writes its limits in a way of its own needs a reader of its own: a [`ReadHeaders`] (a
//! closure `Fn(&HeaderMap, &ResponseClock, &mut Found)` is one), added with
//! [`RateLimitLayer::read_headers_with`](crate::RateLimitLayer::read_headers_with). It runs
//! after the crate's readers, on every response the layer reads, and adds what it finds to
//! [`Found`]: a meter (its [`Figures`]), an instruction to wait, the limit the request counted
//! against, or that the server answers a spent limit with 403. What it adds counts as the
//! crate's own findings do: it gates, retries and is attached to the response alike.
//!
//! A reader measures every time it reads against the response's own clock, a
//! [`ResponseClock`] (its receipt, `Date` and `Age`): a reset or a wait is given as the time
//! left at receipt, a `Duration`, never as an instant of the client's, so that a cached
//! response or a client clock that is off never makes one early.
//!
//! # Example
//!
//! An API that writes its quota as `x-quota-left: 12` and its reset as epoch seconds:
//!
//! ```
//! use std::time::{Duration, UNIX_EPOCH};
//! use http::HeaderMap;
//! use tower::{Service, ServiceBuilder, ServiceExt};
//! use tower_retry_after::headers::{Figures, Found, ResponseClock};
//! use tower_retry_after::{RateLimitInfo, RateLimitLayer};
//!
//! fn quota(headers: &HeaderMap, clock: &ResponseClock, found: &mut Found<'_>) {
//!     let number = |name: &str| headers.get(name)?.to_str().ok()?.parse::<u64>().ok();
//!     if let Some(left) = number("x-quota-left") {
//!         let mut figures = Figures::new().name("quota").remaining(left);
//!         if let Some(seconds) = number("x-quota-reset") {
//!             let reset = UNIX_EPOCH + Duration::from_secs(seconds);
//!             figures = figures.reset_in(clock.until(reset));
//!         }
//!         found.meter(figures);
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), tower_retry_after::BoxError> {
//! let mut client = ServiceBuilder::new()
//!     .layer(RateLimitLayer::new().read_headers_with(quota))
//!     .service_fn(|_: http::Request<String>| async {
//!         http::Response::builder()
//!             .header("date", "Tue, 14 Nov 2023 22:13:20 GMT")
//!             .header("x-quota-left", "12")
//!             .header("x-quota-reset", "1700000060")
//!             .body(String::new())
//!     });
//!
//! let request = http::Request::get("https://api.test/items").body(String::new())?;
//! let response = client.ready().await?.call(request).await?;
//! let info = response.extensions().get::<RateLimitInfo>().unwrap();
//! let meter = &info.meters()[0];
//! assert_eq!((meter.name(), meter.remaining()), (Some("quota"), Some(12)));
//! // Read against the response's `Date`, whatever the client's clock says.
//! assert_eq!(meter.reset_in(), Some(Duration::from_secs(60)));
//! # Ok(())
//! # }
//! ```

// Inside: one file per header family, `retry_after` (`Retry-After`, `retry-after-ms`), `ietf`
// (the `RateLimit` drafts, with `structured` for their structured-field shapes), `x_ratelimit`
// (`X-RateLimit-*`), `clock` (`Date` and `Age`, against which every time is measured), one per
// vendor, and `info`, the reading they make together. Everything here is pure: no clock is
// read, the caller passes the time the response was received on both clocks.
// `RateLimitInfo::from_headers`, which takes the moment it is called as the receipt, reads
// tokio's clock at the crate's edge (`receipt`), not here. Only the reader interface is public
// here; `RateLimitInfo`, `Meter` and `Unit` are the crate root's.

mod anthropic;
mod atlassian;
mod aws;
mod clock;
mod discord;
mod duration;
mod field;
mod github;
mod gitlab;
mod hubspot;
mod ietf;
pub(crate) mod info;
mod instant;
pub(crate) mod meter;
mod number;
mod openai;
mod reader;
mod retry_after;
mod salesforce;
mod shopify;
mod stripe;
mod structured;
#[cfg(any(test, feature = "__fuzzing"))]
pub(crate) mod structured_reference;
mod twitter;
mod x_ratelimit;
mod zendesk;

pub use clock::ResponseClock;
pub use reader::{Figures, Found, ReadHeaders};

pub(crate) use info::RateLimitInfo;
pub(crate) use meter::Unit;

use field::{Fields, Name};

/// A vendor's reader: the fields that prove its vendor (as a [`Name::mask`]), and what it reads
/// from a response that carries one of them. Rows run in order, after the IETF and
/// `X-RateLimit-*` readers.
type Row = (u64, for<'a> fn(&Fields<'a>, &ResponseClock, &mut Found<'a>));

const VENDORS: [Row; 13] = [
    (Name::mask(github::NAMES), github::read),
    (Name::mask(gitlab::NAMES), gitlab::read),
    (Name::mask(discord::NAMES), discord::read),
    (Name::mask(openai::NAMES), openai::read),
    (Name::mask(anthropic::NAMES), anthropic::read),
    // Before Shopify's: Zendesk joins the account meter the generic readers split, and must
    // not take another vendor's meter for it.
    (Name::mask(zendesk::NAMES), zendesk::read),
    (Name::mask(shopify::NAMES), shopify::read),
    (Name::mask(atlassian::NAMES), atlassian::read),
    (Name::mask(stripe::NAMES), stripe::read),
    (Name::mask(aws::NAMES), aws::read),
    // From here on each row names every meter it adds: none takes what the rows before it
    // found, so their order is free.
    (Name::mask(twitter::NAMES), twitter::read),
    (Name::mask(hubspot::NAMES), hubspot::read),
    (Name::mask(salesforce::NAMES), salesforce::read),
];

/// Every vendor's fields: a response carrying none skips the table.
const ANY_VENDOR: u64 = {
    let mut bits = 0;
    let mut row = 0;
    while row < VENDORS.len() {
        bits |= VENDORS[row].0;
        row += 1;
    }
    bits
};

/// Panics unless the structured-field parser reads `field` exactly as `sfv` does.
#[cfg(feature = "__fuzzing")]
pub(crate) fn assert_structured_matches_sfv(field: &str) {
    assert_eq!(
        structured::parse_list(field),
        structured_reference::parse_list(field),
        "list {field:?}"
    );
    assert_eq!(
        structured::parse_dictionary(field),
        structured_reference::parse_dictionary(field),
        "dictionary {field:?}"
    );
}
