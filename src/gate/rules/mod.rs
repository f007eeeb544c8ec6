//! The gate's rules, pure: callers pass the time, and every rule is generic over the clock
//! (`Instant` for one process, the store's wall clock for a fleet). `quota` (the server's
//! count, and the fold of its reports), `window` (the reported window: report, restore at
//! reset, what is left given what is out), `closure` (until when the key is closed, never
//! brought forward) and `learn` (how fast a server that publishes no quota lets a key go).

pub(crate) mod closure;
pub(crate) mod learn;
pub(crate) mod quota;
pub(crate) mod window;
