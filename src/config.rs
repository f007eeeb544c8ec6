//! What every call through one layer shares: its settings, its gates, how it names a request's
//! key and where its jitter comes from. One value, built by the layer and held by the service
//! behind an `Arc`, so a call takes all of it with one reference count.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use http::request::Parts;

use crate::gate::Gates;
use crate::headers::ReadHeaders;
use crate::jitter::{Draws, Jitter};
use crate::key::{Key, KeyFunction};
use crate::notice::{Hook, Notice};
use crate::settings::{Durations, Settings, Switches};

/// One layer's configuration.
#[derive(Clone)]
pub(crate) struct Config {
    pub(crate) settings: Settings,
    /// The cap, budget and horizon as the user set them: `settings` holds them in force.
    pub(crate) durations: Durations,
    /// The switches that hold calls as the user set them: `settings` holds them in force.
    pub(crate) switches: Switches,
    pub(crate) gates: Gates,
    pub(crate) key: KeyFunction,
    pub(crate) jitter: Jitter,
    /// The user's readers of headers the crate does not read itself.
    pub(crate) readers: Vec<Arc<dyn ReadHeaders>>,
    /// The operator's hook, told of waits and episodes.
    pub(crate) hook: Option<Hook>,
    /// The mistakes this layer has warned of: each is told once.
    pub(crate) warned: Arc<Warned>,
}

/// The mistakes a layer can see for itself, each warned of once.
#[derive(Debug, Default)]
pub(crate) struct Warned {
    server_side: AtomicBool,
    timeout_inside: AtomicBool,
}

impl Warned {
    /// Whether the layer is to warn, now, that it sees requests a server receives.
    pub(crate) fn server_side(&self) -> bool {
        !self.server_side.swap(true, Ordering::Relaxed)
    }

    /// Whether the layer is to warn, now, that a timeout below it bounds each attempt.
    pub(crate) fn timeout_inside(&self) -> bool {
        !self.timeout_inside.swap(true, Ordering::Relaxed)
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            settings: Settings::default(),
            durations: Durations::default(),
            switches: Switches::default(),
            gates: Gates::new(),
            key: KeyFunction::default(),
            jitter: Jitter::Random,
            readers: Vec::new(),
            hook: None,
            warned: Arc::default(),
        }
    }
}

impl Config {
    /// This configuration with the probe timeout's floor applied: what a service runs with.
    pub(crate) fn in_force(&self) -> Config {
        Config {
            settings: self.settings.effective(),
            ..self.clone()
        }
    }

    /// The key a request counts against; `None` when it is not gated: the key function says
    /// so, or the layer only observes (it then neither waits nor blocks a later call).
    pub(crate) fn key_of(&self, request: &Parts) -> Option<Key> {
        if self.settings.retry_on_rate_limit {
            self.key.key_of(request)
        } else {
            None
        }
    }

    /// Tells the hook of `notice`: whether it lets a wait go ahead (always, without a hook).
    pub(crate) fn notify(&self, notice: &Notice<'_>) -> bool {
        self.hook.as_ref().is_none_or(|hook| hook(notice))
    }

    /// The random draws of the next call.
    pub(crate) fn draws(&self) -> Draws {
        self.jitter.for_call()
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("settings", &self.settings)
            .field("gates", &self.gates)
            .finish_non_exhaustive()
    }
}
