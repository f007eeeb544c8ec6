//! The two tickets a call holds at its gate: a [`Pass`] while its request is out, a [`Place`]
//! while it waits. Each gives back what it holds when dropped, so a call cancelled at any point
//! leaves no waiter and no request counted in flight.

use std::task::Waker;

use tokio::time::Instant;

use super::Gates;
use super::state::{Admission, Report, Terms};
use super::store::Window;
use crate::key::Key;
use crate::throttled::Throttled;

/// A request let through a gate. What its response says must be recorded; if no response
/// comes (the call was dropped, or failed in transport), dropping the pass tells the gate so.
pub(crate) struct Pass {
    gates: Gates,
    key: Key,
    admission: Admission,
    open: bool,
}

impl Pass {
    pub(super) fn new(gates: Gates, key: Key, admission: Admission) -> Self {
        Pass {
            gates,
            key,
            admission,
            open: true,
        }
    }

    /// Records what the response said.
    pub(crate) fn answered(mut self, report: Report, now: Instant) {
        self.open = false;
        let registry = &self.gates.registry;
        let wakes =
            registry
                .lock()
                .answered(&self.key, self.admission, report, now, registry.capacity);
        wakes.into_iter().for_each(Waker::wake);
        let worth_sharing = report.closed_until.is_some() || report.quota.is_some();
        if let Some(store) = registry.store.as_ref().filter(|_| worth_sharing) {
            store.merge(&self.key, Window::from_report(report, &registry.clocks));
        }
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        if self.open {
            let admission = self.admission;
            self.gates
                .registry
                .update(&self.key, |gate| gate.abandoned(admission));
        }
    }
}

/// A place in a gate's queue; dropping it leaves the queue.
pub(crate) struct Place {
    gates: Gates,
    key: Key,
    id: u64,
    terms: Terms,
    queued: bool,
}

impl Place {
    pub(super) fn new(gates: Gates, key: Key, id: u64, terms: Terms) -> Self {
        Place {
            gates,
            key,
            id,
            terms,
            queued: true,
        }
    }

    /// Whether the call may go: its pass, or when to ask again (`None`: when woken).
    pub(crate) fn poll(&mut self, now: Instant, waker: &Waker) -> Result<Pass, Option<Instant>> {
        let mut table = self.gates.registry.lock();
        let (admission, wakes) = match table.gates.get_mut(&self.key) {
            Some(gate) => {
                let admission = gate.poll_waiter(self.id, now, waker, self.terms);
                (admission, gate.take_wakes())
            }
            // The gate was forgotten: nothing holds the call back.
            None => (Ok(Admission::UNCOUNTED), Vec::new()),
        };
        drop(table);
        wakes.into_iter().for_each(Waker::wake);
        let admission = admission?;
        self.queued = false;
        Ok(Pass::new(self.gates.clone(), self.key.clone(), admission))
    }

    /// The error of a call that gives up its place: how long the gate stays closed.
    pub(crate) fn throttled(&self, now: Instant) -> Throttled {
        let closed_for = self
            .gates
            .registry
            .lock()
            .gates
            .get(&self.key)
            .and_then(|gate| gate.closed_for(now));
        Throttled::new(self.key.clone(), closed_for.unwrap_or_default())
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if self.queued {
            let id = self.id;
            self.gates.registry.update(&self.key, |gate| gate.leave(id));
        }
    }
}
