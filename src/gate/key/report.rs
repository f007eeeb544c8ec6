//! [`Report`]: what the server said about a key in one response, as its gate takes it in.

use tokio::time::Instant;

use super::reopening::Pace;
use crate::gate::rules::quota::Quota;
use crate::gate::time::ServerClock;
use crate::throttled::HeldBy;

/// What the server said about the key in one response.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Report {
    /// The response was a refusal (429): it is no healthy answer to a probe.
    pub(crate) refused: bool,
    /// No request before this.
    pub(crate) closed_until: Option<Instant>,
    /// What set `closed_until`: the server's instruction, a spent meter's reset, a guess.
    pub(crate) closed_by: Option<HeldBy>,
    /// The end of the wait the server named, if it named one (`closed_until` adds the spread).
    pub(crate) instructed_until: Option<Instant>,
    /// The binding meter's remaining quota and reset.
    pub(crate) quota: Option<Quota>,
    /// The server itself read `quota` spent: its reset is an instruction to the calls that
    /// respect the quota. (What a store tells is left may be spent by the fleet's requests out
    /// instead, which their answers may give back.)
    pub(crate) server_spent: bool,
    /// What the binding meter is, as it holds calls once spent.
    pub(crate) quota_by: Option<HeldBy>,
    /// The binding meter's whole quota a window, where the server gave it.
    pub(crate) limit: Option<u64>,
    /// The server's policy as a spacing between requests.
    pub(crate) pace: Option<Pace>,
    /// The server's clock, as the response's `Date` bounds it.
    pub(crate) server_clock: Option<ServerClock>,
}
