//! The waiters' queue of one gate: first come, first out, and only the head waits for time to
//! pass, so a gate needs one timer however many calls wait.

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
    pub(crate) fn pop_head(&mut self) {
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
    pub(crate) fn reroute_all(&mut self) -> impl Iterator<Item = Waker> + '_ {
        self.reroute_before = self.next_id;
        self.slots.iter_mut().filter_map(|slot| slot.waker.take())
    }

    /// Whether waiter `id` is to go to another gate.
    pub(crate) fn is_rerouted(&self, id: u64) -> bool {
        id < self.reroute_before
    }

    /// The head's waker, to be called once the registry is unlocked.
    pub(crate) fn take_head_waker(&mut self) -> Option<Waker> {
        self.slots.front_mut().and_then(|slot| slot.waker.take())
    }

    /// Whether no slot is held, not even of a waiter that left.
    #[cfg(test)]
    pub(crate) fn is_drained(&self) -> bool {
        self.slots.is_empty()
    }

    fn drop_gone_front(&mut self) {
        while self.slots.front().is_some_and(|slot| slot.gone) {
            self.slots.pop_front();
        }
    }
}
