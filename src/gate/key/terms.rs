//! [`Terms`]: what a call asks of the gate: what its layer's settings say to respect, and what
//! it declares it will spend. Layers with different settings may share one set of gates; each
//! call is held only by what its own layer's settings say to respect.

use std::time::Duration;

use crate::tokens::TokenCost;

/// What a call asks of the gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Terms {
    /// The call respects the quota and pace the server reported (`respect_remaining`).
    pub(crate) metered: bool,
    /// The longest wait the call's layer takes from the server (`retry_after_cap`): a pace
    /// drawn from a longer window does not hold it.
    pub(crate) cap: Duration,
    /// The longest the call waits out a closure or a spent window at its gate: the cap, with
    /// the spread an instruction that long is given. One that holds it longer fails it at
    /// once: the cap bounds a wait, not what is remembered.
    pub(crate) longest_wait: Duration,
    /// How long a probe out may stay unanswered before this call probes instead.
    pub(crate) probe_timeout: Duration,
    /// The first call to a key the gate knows nothing about goes alone (`slow_start`); only
    /// for a call that respects the quota.
    pub(crate) slow_start: bool,
    /// The call is held by the pace the gate learned where the server publishes no quota
    /// (`learn_limits`); only for a call that respects the quota.
    pub(crate) learned: bool,
    /// The gates share a store: the fleet learns that pace, in the store, and the gate leaves
    /// the call's pace to its reservation.
    pub(crate) fleet: bool,
    /// What the call spends of the key's token meters when it leaves the gate, where it
    /// declares it ([`TokenCost`]); only for a call that respects the quota.
    pub(crate) cost: Option<TokenCost>,
}

impl Terms {
    /// What a call that respects everything the server said would meet: the gate as a
    /// snapshot shows it, and as the registry weighs it. A learned quota is the layer's
    /// estimate, not something the server said, and moves with each window: it is left out.
    pub(crate) const EVERYTHING: Terms = Terms {
        metered: true,
        cap: Duration::MAX,
        longest_wait: Duration::MAX,
        probe_timeout: Duration::MAX,
        slow_start: true,
        learned: false,
        fleet: false,
        cost: None,
    };
}
