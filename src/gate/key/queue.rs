//! The waiters of one gate, in two queues (calls that respect the quota, and calls whose layer
//! does not): first come, first out, and only each queue's head waits for time to pass, so a
//! gate needs one timer a queue however many calls wait.

use std::collections::VecDeque;
use std::task::Waker;

/// The calls waiting at one gate, in arrival order.
#[derive(Default)]
pub(crate) struct Queue {
    // Ordered by id; the front is always a waiter that has not left.
    slots: VecDeque<Slot>,
    waiting: usize,
    next_id: u64,
    /// Waiters with a lower id are sent to another gate the next time they look.
    reroute_before: u64,
}

/// A gate's two queues, and the wakers of heads that may now go.
#[derive(Default)]
pub(crate) struct Queues {
    /// Calls that respect the quota.
    metered: Queue,
    /// Calls whose layer does not.
    unmetered: Queue,
    wakes: Vec<Waker>,
}

impl Queues {
    /// The queue of calls that respect the quota (`metered`), or of those that do not.
    pub(crate) fn of(&self, metered: bool) -> &Queue {
        if metered {
            &self.metered
        } else {
            &self.unmetered
        }
    }

    /// The same, to change.
    pub(super) fn of_mut(&mut self, metered: bool) -> &mut Queue {
        if metered {
            &mut self.metered
        } else {
            &mut self.unmetered
        }
    }

    /// How many calls wait, in both queues.
    pub(crate) fn len(&self) -> usize {
        self.metered.len() + self.unmetered.len()
    }

    /// Each queue's head may go now: its waker is kept, to be called once the registry is
    /// unlocked.
    pub(super) fn wake_heads(&mut self) {
        for queue in [&mut self.metered, &mut self.unmetered] {
            if let Some(waker) = queue.take_head_waker() {
                self.wakes.push(waker);
            }
        }
    }

    /// Every call waiting now goes to another gate: woken, it finds itself rerouted.
    pub(super) fn reroute_all(&mut self) {
        let wakes: Vec<Waker> = [&mut self.metered, &mut self.unmetered]
            .into_iter()
            .flat_map(Queue::reroute_all)
            .collect();
        self.wakes.extend(wakes);
    }

    /// The wakers kept: to be called once the registry is unlocked.
    pub(crate) fn take_wakes(&mut self) -> Vec<Waker> {
        std::mem::take(&mut self.wakes)
    }
}

struct Slot {
    id: u64,
    waker: Option<Waker>,
    /// The waiter left; its slot is dropped when it reaches the front.
    gone: bool,
}

impl Queue {
    /// A new waiter at the back; its id.
    pub(crate) fn push(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.slots.push_back(Slot {
            id,
            waker: None,
            gone: false,
        });
        self.waiting += 1;
        id
    }

    /// How many calls wait.
    pub(crate) fn len(&self) -> usize {
        self.waiting
    }

    /// Where waiter `id` stands (0: the head); `None` if it is not waiting.
    pub(crate) fn position(&self, id: u64) -> Option<usize> {
        self.slots
            .binary_search_by_key(&id, |slot| slot.id)
            .ok()
            .filter(|position| !self.slots[*position].gone)
    }

    /// How many waiters that have not left stand ahead of waiter `id`; `None` if it is not
    /// waiting.
    pub(crate) fn ahead(&self, id: u64) -> Option<usize> {
        let position = self.position(id)?;
        // Slots of waiters that left stay till they reach the front: count them out only
        // where there are any.
        if self.slots.len() == self.waiting {
            return Some(position);
        }
        Some(
            self.slots
                .range(..position)
                .filter(|slot| !slot.gone)
                .count(),
        )
    }

    /// Remembers `waker` for the waiter at `position`, unless it already wakes the same task.
    pub(crate) fn remember(&mut self, position: usize, waker: &Waker) {
        let slot = &mut self.slots[position];
        if !slot
            .waker
            .as_ref()
            .is_some_and(|known| known.will_wake(waker))
        {
            slot.waker = Some(waker.clone());
        }
    }

    /// The head goes through the gate.
    pub(super) fn pop_head(&mut self) {
        self.slots.pop_front();
        self.waiting -= 1;
        self.drop_gone_front();
    }

    /// Waiter `id` gives up; whether it was the head (then there is a new one to wake).
    pub(crate) fn leave(&mut self, id: u64) -> bool {
        let Some(position) = self.position(id) else {
            return false;
        };
        self.waiting -= 1;
        if position == 0 {
            self.slots.pop_front();
            self.drop_gone_front();
            true
        } else {
            // Marked, not removed: leaving stays cheap with thousands waiting.
            let slot = &mut self.slots[position];
            slot.gone = true;
            slot.waker = None;
            false
        }
    }

    /// Every waiter now in the queue is to go to another gate: each is told the next time it
    /// looks, and every one is woken to look (the wakers, to be called once the registry is
    /// unlocked).
    pub(super) fn reroute_all(&mut self) -> impl Iterator<Item = Waker> + '_ {
        self.reroute_before = self.next_id;
        self.slots.iter_mut().filter_map(|slot| slot.waker.take())
    }

    /// Whether waiter `id` is to go to another gate.
    pub(super) fn is_rerouted(&self, id: u64) -> bool {
        id < self.reroute_before
    }

    /// The head's waker, to be called once the registry is unlocked.
    pub(super) fn take_head_waker(&mut self) -> Option<Waker> {
        self.slots.front_mut().and_then(|slot| slot.waker.take())
    }

    /// Whether no slot is held, not even of a waiter that left.
    #[cfg(test)]
    pub(super) fn is_drained(&self) -> bool {
        self.slots.is_empty()
    }

    fn drop_gone_front(&mut self) {
        while self.slots.front().is_some_and(|slot| slot.gone) {
            self.slots.pop_front();
        }
    }
}
