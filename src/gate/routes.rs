//! Which of a key's limits each route counts against, as the server last named it (GitHub's
//! `x-ratelimit-resource`, Discord's `X-RateLimit-Bucket`): a request's route is known before
//! it is sent, its limit only from an answer to the same route.
//!
//! A route not answered yet counts against the limit most answers of its key named (GitHub's
//! `core`): REST paths carry ids, so most calls go to a route never seen, and gating them by
//! nothing would let them all meet a limit the server already said is spent. Where the guess is
//! wrong, the call waits for another limit (never early) or is refused once, and its answer
//! teaches its route's limit.
//!
//! Bounded: a server inventing a new name on every answer cannot make it grow past
//! [`MOST_ROUTES`] routes, nor count more than [`MOST_GROUPS`] names a key; past them, new
//! routes take the key's most named limit.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::key::{BuildKeyHasher, Key};

/// How a route's limit is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Known {
    /// An answer on the route named it.
    Route,
    /// No answer on the route yet: the limit most of the key's answers named.
    Guessed,
}

/// Routes remembered across every key.
pub(crate) const MOST_ROUTES: usize = 4_096;
/// Limit names counted for one key.
pub(crate) const MOST_GROUPS: usize = 16;

/// The routes of every key whose server named its limits.
#[derive(Default)]
pub(crate) struct Routes {
    /// Whether any route is known: most servers name no limit, and their calls then skip the
    /// lock.
    any: AtomicBool,
    table: Mutex<RoutesByKey>,
}

/// Every key's routes, and how many there are in all.
#[derive(Default)]
struct RoutesByKey {
    by_key: HashMap<Key, KeyRoutes, BuildKeyHasher>,
    len: usize,
}

/// One key's routes, each with the key of its limit (made once: a call clones it), and how
/// often answers named each limit.
#[derive(Default)]
struct KeyRoutes {
    routes: HashMap<Box<str>, Key>,
    named: Vec<(Key, u64)>,
}

impl KeyRoutes {
    /// The limit most answers named; of equals, the first named.
    fn most_named(&self) -> Option<&Key> {
        let (limit, _) = self.named.iter().rev().max_by_key(|(_, count)| *count)?;
        Some(limit)
    }

    /// Counts an answer naming `group`, of the key `whole`; returns the limit's key.
    fn count(&mut self, whole: &Key, group: &str) -> Key {
        let known = self
            .named
            .iter_mut()
            .find(|(limit, _)| limit.limit_name() == Some(group));
        if let Some((limit, count)) = known {
            *count += 1;
            return limit.clone();
        }
        let limit = whole.within(group);
        if self.named.len() < MOST_GROUPS {
            self.named.push((limit.clone(), 1));
        }
        limit
    }
}

impl Routes {
    /// The key a request on `route` counts against: `key` within its route's limit, or the
    /// limit most of the key's answers named for a route not answered yet; `None` where the
    /// server named none. Says which: `Known` where an answer on the route named it.
    pub(crate) fn refine(&self, key: &Key, route: &str) -> Option<(Key, Known)> {
        if !self.any.load(Ordering::Relaxed) {
            return None;
        }
        let table = self.lock();
        let routes = table.by_key.get(key)?;
        match routes.routes.get(route) {
            Some(limit) => Some((limit.clone(), Known::Route)),
            None => Some((routes.most_named()?.clone(), Known::Guessed)),
        }
    }

    /// The limits of `key` its answers named: first those most named first, in the order
    /// first named, then any others its routes count against.
    pub(crate) fn limits(&self, key: &Key) -> Vec<Key> {
        if !self.any.load(Ordering::Relaxed) {
            return Vec::new();
        }
        let table = self.lock();
        let Some(routes) = table.by_key.get(key) else {
            return Vec::new();
        };
        let mut limits: Vec<Key> = routes
            .named
            .iter()
            .map(|(limit, _)| limit.clone())
            .collect();
        let mut others: Vec<&Key> = routes
            .routes
            .values()
            .filter(|limit| !limits.contains(limit))
            .collect();
        others.sort_by_cached_key(|limit| limit.to_string());
        others.dedup();
        limits.extend(others.into_iter().cloned());
        limits
    }

    /// Remembers that requests on `route` of `key` count against `group`.
    pub(crate) fn learn(&self, key: &Key, route: &str, group: &str) {
        let mut table = self.lock();
        let RoutesByKey { by_key, len } = &mut *table;
        let known_key = by_key.contains_key(key);
        if !known_key && *len >= MOST_ROUTES {
            return;
        }
        let routes = by_key.entry(key.clone()).or_default();
        let limit = routes.count(key, group);
        if let Some(known) = routes.routes.get_mut(route) {
            *known = limit;
            return;
        }
        if *len < MOST_ROUTES {
            routes.routes.insert(Box::from(route), limit);
            *len += 1;
        }
        self.any.store(true, Ordering::Relaxed);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RoutesByKey> {
        self.table
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_counts_against_the_limit_last_named_for_it() {
        let routes = Routes::default();
        let key = Key::named("api");
        assert_eq!(routes.refine(&key, "/search"), None);
        routes.learn(&key, "/search", "search");
        assert_eq!(
            routes.refine(&key, "/search"),
            Some((key.within("search"), Known::Route))
        );
        assert_eq!(
            routes.refine(&Key::named("other"), "/search"),
            None,
            "another key"
        );
        routes.learn(&key, "/search", "core");
        assert_eq!(
            routes.refine(&key, "/search"),
            Some((key.within("core"), Known::Route))
        );
    }

    #[test]
    fn a_route_not_answered_yet_counts_against_the_limit_most_answers_named() {
        let routes = Routes::default();
        let key = Key::named("api");
        routes.learn(&key, "/search/code", "search");
        assert_eq!(
            routes.refine(&key, "/issues/1"),
            Some((key.within("search"), Known::Guessed))
        );
        routes.learn(&key, "/user", "core");
        assert_eq!(
            routes.refine(&key, "/issues/1").map(|(limit, _)| limit),
            Some(key.within("search")),
            "of equals, the first named"
        );
        routes.learn(&key, "/issues/2", "core");
        assert_eq!(
            routes.refine(&key, "/issues/3"),
            Some((key.within("core"), Known::Guessed))
        );
        assert_eq!(
            routes.refine(&key, "/search/code").map(|(limit, _)| limit),
            Some(key.within("search")),
            "a route answered keeps its own"
        );
    }

    #[test]
    fn a_server_inventing_names_cannot_grow_the_routes_past_their_bound() {
        let routes = Routes::default();
        let key = Key::named("api");
        for n in 0..MOST_ROUTES + 10 {
            routes.learn(&key, &format!("/r/{n}"), &format!("b{n}"));
        }
        let table = routes.lock();
        assert_eq!(table.len, MOST_ROUTES);
        assert_eq!(table.by_key[&key].routes.len(), MOST_ROUTES);
        assert_eq!(table.by_key[&key].named.len(), MOST_GROUPS);
        drop(table);
        assert_eq!(
            routes.refine(&key, "/r/1"),
            Some((key.within("b1"), Known::Route))
        );
        assert_eq!(
            routes.refine(&key, &format!("/r/{MOST_ROUTES}")),
            Some((key.within("b0"), Known::Guessed)),
            "past the bound, the most named limit"
        );
    }
}
