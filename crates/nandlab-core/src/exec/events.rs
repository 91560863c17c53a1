//! The event queue: one timer slot per die plus a heap of other timers, merged by a tournament
//! tree so that the next event is found in O(log dies) and a die's pending event can be moved
//! in place (what program/erase suspension needs: the die's phase end changes, no stale event
//! is left behind).
//!
//! Order: by time; at equal times, timers first (in the order they were set), then dies by
//! index. The order of simultaneous events does not depend on when they were scheduled, so a
//! run whose phases are merged into fewer events (a bus phase that cannot wait for another die)
//! handles every remaining event in the same order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Slot key of an empty slot.
const EMPTY: u64 = u64::MAX;

/// What fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The die's current phase (or run of phases) ended.
    Die(u32),
    /// A timer set with [`EventQueue::push_timer`]; the payload is the caller's.
    Timer(u64),
}

/// Per-die timer slots and a timer heap; see the module documentation.
#[derive(Clone, Debug)]
pub struct EventQueue {
    /// Slot keys (time, ns): slot 0 mirrors the timer heap's top, slot 1 + d is die d.
    key: Vec<u64>,
    /// Tournament tree over the slots: `node[1]` is the winning slot, `node[p + s] = s`.
    node: Vec<u32>,
    /// Leaves (power of two ≥ slots).
    p: usize,
    timers: BinaryHeap<Reverse<(u64, u64, u64)>>,
    timer_seq: u64,
}

impl EventQueue {
    /// A queue for `dies` dies, all idle, no timers.
    pub fn new(dies: u32) -> EventQueue {
        let slots = dies as usize + 1;
        let p = slots.next_power_of_two();
        let mut node = vec![0u32; 2 * p];
        for s in 0..p {
            node[p + s] = s.min(slots - 1) as u32;
        }
        let mut q = EventQueue {
            key: vec![EMPTY; slots],
            node,
            p,
            timers: BinaryHeap::with_capacity(64),
            timer_seq: 0,
        };
        for j in (1..p).rev() {
            q.node[j] = q.better(q.node[2 * j], q.node[2 * j + 1]);
        }
        q
    }

    #[inline]
    fn better(&self, a: u32, b: u32) -> u32 {
        // Strict: on equal keys the lower slot (timers, then lower die) wins.
        if self.key[b as usize] < self.key[a as usize] {
            b
        } else {
            a
        }
    }

    #[inline]
    fn update(&mut self, slot: usize) {
        let mut j = (self.p + slot) >> 1;
        while j >= 1 {
            self.node[j] = self.better(self.node[2 * j], self.node[2 * j + 1]);
            j >>= 1;
        }
    }

    /// Set (or move) die `die`'s event to time `t_ns`.
    #[inline]
    pub fn set_die(&mut self, die: u32, t_ns: u64) {
        let s = die as usize + 1;
        self.key[s] = t_ns;
        self.update(s);
    }

    /// Remove die `die`'s pending event, if any.
    #[inline]
    pub fn clear_die(&mut self, die: u32) {
        let s = die as usize + 1;
        if self.key[s] != EMPTY {
            self.key[s] = EMPTY;
            self.update(s);
        }
    }

    /// Time of die `die`'s pending event, if any.
    #[inline]
    pub fn die_time(&self, die: u32) -> Option<u64> {
        let k = self.key[die as usize + 1];
        (k != EMPTY).then_some(k)
    }

    /// Add a timer at `t_ns` with the caller's `payload`.
    pub fn push_timer(&mut self, t_ns: u64, payload: u64) {
        self.timers.push(Reverse((t_ns, self.timer_seq, payload)));
        self.timer_seq += 1;
        let top = self.timers.peek().map_or(EMPTY, |Reverse((t, _, _))| *t);
        if top != self.key[0] {
            self.key[0] = top;
            self.update(0);
        }
    }

    /// Time of the next event, if any.
    #[inline]
    pub fn next_time(&self) -> Option<u64> {
        let k = self.key[self.node[1] as usize];
        (k != EMPTY).then_some(k)
    }

    /// Whether nothing is pending.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.next_time().is_none()
    }

    /// Take the next event and its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        let s = self.node[1] as usize;
        let t = self.key[s];
        if t == EMPTY {
            return None;
        }
        if s == 0 {
            let Reverse((_, _, payload)) = self.timers.pop()?;
            self.key[0] = self.timers.peek().map_or(EMPTY, |Reverse((t, _, _))| *t);
            self.update(0);
            Some((t, Event::Timer(payload)))
        } else {
            self.key[s] = EMPTY;
            self.update(s);
            Some((t, Event::Die(s as u32 - 1)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_time_then_timers_then_die_index() {
        let mut q = EventQueue::new(5);
        q.set_die(3, 10);
        q.set_die(1, 10);
        q.push_timer(10, 7);
        q.set_die(4, 5);
        q.push_timer(10, 8);
        q.set_die(0, 20);
        q.set_die(0, 3); // moved
        let mut got = Vec::new();
        while let Some(e) = q.pop() {
            got.push(e);
        }
        assert_eq!(
            got,
            vec![
                (3, Event::Die(0)),
                (5, Event::Die(4)),
                (10, Event::Timer(7)),
                (10, Event::Timer(8)),
                (10, Event::Die(1)),
                (10, Event::Die(3)),
            ]
        );
        assert!(q.is_empty());
    }

    #[test]
    fn clear_removes_a_pending_die_event() {
        let mut q = EventQueue::new(2);
        q.set_die(1, 4);
        q.set_die(0, 9);
        q.clear_die(1);
        assert_eq!(q.die_time(1), None);
        assert_eq!(q.pop(), Some((9, Event::Die(0))));
        assert_eq!(q.pop(), None);
    }
}
