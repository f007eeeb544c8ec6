//! Which of a key's limits each route counts against, as the server last named it (GitHub's
//! `x-ratelimit-resource`, Discord's `X-RateLimit-Bucket`): a request's route is known before
//! it is sent, its limit only from an answer to the same route.
//!
//! Bounded: a server inventing a new name on every answer cannot make it grow past
//! [`MOST_ROUTES`]; past it, new routes go unrefined, gated by their key as a whole.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::key::{BuildKeyHasher, Key};

/// Routes remembered across every key.
pub(super) const MOST_ROUTES: usize = 4_096;

/// The routes of every key whose server named its limits.
#[derive(Default)]
pub(super) struct Routes {
    /// Whether any route is known: most servers name no limit, and their calls then skip the
    /// lock.
    any: AtomicBool,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    by_key: HashMap<Key, HashMap<Box<str>, Box<str>>, BuildKeyHasher>,
    len: usize,
}

impl Routes {
    /// The key a request on `route` counts against: `key` within its route's limit, if the
    /// server named one.
    pub(super) fn refine(&self, key: &Key, route: &str) -> Option<Key> {
        if !self.any.load(Ordering::Relaxed) {
            return None;
        }
        let table = self
            .table
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let group = table.by_key.get(key)?.get(route)?;
        Some(key.within(group))
    }

    /// Remembers that requests on `route` of `key` count against `group`.
    pub(super) fn learn(&self, key: &Key, route: &str, group: &str) {
        let mut table = self
            .table
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let Table { by_key, len } = &mut *table;
        if let Some(known) = by_key.get_mut(key).and_then(|routes| routes.get_mut(route)) {
            if **known != *group {
                *known = Box::from(group);
            }
            return;
        }
        if *len >= MOST_ROUTES {
            return;
        }
        by_key
            .entry(key.clone())
            .or_default()
            .insert(Box::from(route), Box::from(group));
        *len += 1;
        self.any.store(true, Ordering::Relaxed);
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
        assert_eq!(routes.refine(&key, "/search"), Some(key.within("search")));
        assert_eq!(routes.refine(&key, "/user"), None, "another route");
        assert_eq!(
            routes.refine(&Key::named("other"), "/search"),
            None,
            "another key"
        );
        routes.learn(&key, "/search", "core");
        assert_eq!(routes.refine(&key, "/search"), Some(key.within("core")));
    }

    #[test]
    fn a_server_inventing_names_cannot_grow_the_routes_past_their_bound() {
        let routes = Routes::default();
        let key = Key::named("api");
        for n in 0..MOST_ROUTES + 10 {
            routes.learn(&key, &format!("/r/{n}"), &format!("b{n}"));
        }
        let table = routes.table.lock().unwrap();
        assert_eq!(table.len, MOST_ROUTES);
        assert_eq!(table.by_key[&key].len(), MOST_ROUTES);
        drop(table);
        assert_eq!(routes.refine(&key, &format!("/r/{MOST_ROUTES}")), None);
        assert!(routes.refine(&key, "/r/0").is_some());
    }
}
