//! The gate's rules, pure: callers pass the time. `quota` and `closure` are generic over the
//! clock (`Instant` for one process, the store's clock for a fleet); `window` and `learned` run
//! on `Instant`. `quota` (the server's count, and the fold of its reports), `window` (the
//! reported window: report, restore at reset, what is left given what is out), `closure` (until
//! when the key is closed, never brought forward) and `learned` (the limit of a server that
//! publishes none).

pub(crate) mod closure;
pub(crate) mod learned;
pub(crate) mod quota;
pub(crate) mod window;
