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

/// Time of an empty slot.
const EMPTY: u64 = u64::MAX;

/// What fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The die's current phase (or run of phases) ended.
    Die(u32),
    /// A timer set with [`EventQueue::push_timer`]; the payload is the caller's.
    Timer(u64),
}

/// A tree node: the earliest slot below it and its time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    t: u64,
    slot: u32,
}

const NO_ENTRY: Entry = Entry {
    t: EMPTY,
    slot: u32::MAX,
};

/// Slots up to which the earliest is found by a scan instead of the tree (a scan of a few
/// slots costs less than walking the tree on every update). 64: the default drive's 32 dies
/// plus the timer slot scan in fewer instructions than the tree's updates (callgrind, bundled
/// trace: 2.64 G → 2.55 G instructions in the replay together with the one-shot scratch
/// arrays; reports identical).
const SCAN_SLOTS: usize = 64;

/// Slots per group of the scan: a group keeps its earliest key, so an update rescans one
/// group (8 keys) and finding the earliest scans the groups' minima (≤ 8), not every slot.
const GROUP: usize = 8;

/// Times from which a packed key (`t << 6 | slot`) would overflow: a queue that is given such
/// a time leaves the scan for the tree for good (same order, ≈ 9.1 years of simulated time).
const KEY_T_LIMIT: u64 = 1 << 58;

/// No key (an empty slot); above every packed key.
const NO_KEY: u64 = u64::MAX;

/// Per-die timer slots and a timer heap; see the module documentation.
#[derive(Clone, Debug)]
pub struct EventQueue {
    /// Tournament tree: `node[1]` is the earliest slot, the leaves are `node[p + slot]`. Slot 0
    /// mirrors the timer heap's top, slot 1 + d is die d. In scan mode (at most
    /// [`SCAN_SLOTS`] slots, every time below [`KEY_T_LIMIT`]) only the leaves are kept, and
    /// the order comes from `keys`.
    node: Vec<Entry>,
    /// Leaves (power of two ≥ slots).
    p: usize,
    /// Slots in use.
    slots: usize,
    scan: bool,
    /// Scan mode: each slot's packed key `t << 6 | slot` ([`NO_KEY`] when empty), so that the
    /// order by (time, slot) is the order of one integer and a minimum is a branch-free `min`.
    keys: [u64; SCAN_SLOTS],
    /// Scan mode: the smallest key of each group of [`GROUP`] slots.
    gmin: [u64; SCAN_SLOTS / GROUP],
    /// Scan mode: the smallest key, recomputed from `gmin` when `stale`.
    min_key: std::cell::Cell<u64>,
    stale: std::cell::Cell<bool>,
    timers: BinaryHeap<Reverse<(u64, u64, u64)>>,
    timer_seq: u64,
}

impl EventQueue {
    /// A queue for `dies` dies, all idle, no timers.
    pub fn new(dies: u32) -> EventQueue {
        let slots = dies as usize + 1;
        let p = slots.next_power_of_two().max(2);
        let mut node = vec![NO_ENTRY; 2 * p];
        for (s, n) in node[p..].iter_mut().enumerate() {
            n.slot = s as u32;
        }
        for j in (1..p).rev() {
            node[j] = node[2 * j];
        }
        EventQueue {
            node,
            p,
            slots,
            scan: slots <= SCAN_SLOTS,
            keys: [NO_KEY; SCAN_SLOTS],
            gmin: [NO_KEY; SCAN_SLOTS / GROUP],
            min_key: std::cell::Cell::new(NO_KEY),
            stale: std::cell::Cell::new(false),
            timers: BinaryHeap::with_capacity(64),
            timer_seq: 0,
        }
    }

    /// Set leaf `slot` to time `t` and restore the minima above it, stopping where nothing
    /// changes. Ties go to the left child, i.e. the lower slot.
    #[inline]
    fn update(&mut self, slot: usize, t: u64) {
        let mut j = self.p + slot;
        self.node[j].t = t;
        if self.scan {
            if t == EMPTY || t < KEY_T_LIMIT {
                self.update_key(slot, t);
                return;
            }
            self.leave_scan();
        }
        while j > 1 {
            let (l, r) = (self.node[j & !1], self.node[j | 1]);
            let m = if r.t < l.t { r } else { l };
            j >>= 1;
            if self.node[j] == m {
                break;
            }
            self.node[j] = m;
        }
    }

    /// Scan mode: set `slot`'s key for time `t`, and its group's and the queue's minima (the
    /// queue's is only marked stale when its own slot moved later).
    #[inline]
    fn update_key(&mut self, slot: usize, t: u64) {
        let key = if t == EMPTY {
            NO_KEY
        } else {
            (t << 6) | slot as u64
        };
        let old = std::mem::replace(&mut self.keys[slot], key);
        if key == old {
            return;
        }
        let g = slot / GROUP;
        let gm = self.gmin[g];
        if key < gm {
            self.gmin[g] = key;
        } else if gm == old {
            let b = g * GROUP;
            let ks = &self.keys[b..b + GROUP];
            self.gmin[g] = ks.iter().copied().fold(NO_KEY, u64::min);
        }
        let m = self.min_key.get();
        if key < m {
            self.min_key.set(key);
        } else if m == old {
            self.stale.set(true);
        }
    }

    /// Leave scan mode for the tree (a time at or beyond [`KEY_T_LIMIT`]): build the tree's
    /// inner nodes from the leaves, which scan mode keeps up to date.
    #[cold]
    fn leave_scan(&mut self) {
        self.scan = false;
        for j in (1..self.p).rev() {
            let (l, r) = (self.node[2 * j], self.node[2 * j + 1]);
            self.node[j] = if r.t < l.t { r } else { l };
        }
    }

    /// Set (or move) die `die`'s event to time `t_ns`.
    #[inline]
    pub fn set_die(&mut self, die: u32, t_ns: u64) {
        self.update(die as usize + 1, t_ns);
    }

    /// Remove die `die`'s pending event, if any.
    #[inline]
    pub fn clear_die(&mut self, die: u32) {
        let s = die as usize + 1;
        if self.node[self.p + s].t != EMPTY {
            self.update(s, EMPTY);
        }
    }

    /// Time of die `die`'s pending event, if any.
    #[inline]
    pub fn die_time(&self, die: u32) -> Option<u64> {
        let t = self.node[self.p + die as usize + 1].t;
        (t != EMPTY).then_some(t)
    }

    fn sync_timers(&mut self) {
        let top = self.timers.peek().map_or(EMPTY, |Reverse((t, _, _))| *t);
        if top != self.node[self.p].t {
            self.update(0, top);
        }
    }

    /// Add a timer at `t_ns` with the caller's `payload`.
    pub fn push_timer(&mut self, t_ns: u64, payload: u64) {
        self.timers.push(Reverse((t_ns, self.timer_seq, payload)));
        self.timer_seq += 1;
        self.sync_timers();
    }

    /// The earliest slot.
    #[inline]
    fn top(&self) -> Entry {
        if !self.scan {
            return self.node[1];
        }
        if self.stale.get() {
            let groups = self.slots.div_ceil(GROUP);
            self.min_key
                .set(self.gmin[..groups].iter().copied().fold(NO_KEY, u64::min));
            self.stale.set(false);
        }
        match self.min_key.get() {
            NO_KEY => NO_ENTRY,
            k => Entry {
                t: k >> 6,
                slot: (k & 63) as u32,
            },
        }
    }

    /// Time of the next event, if any.
    #[inline]
    pub fn next_time(&self) -> Option<u64> {
        let t = self.top().t;
        (t != EMPTY).then_some(t)
    }

    /// Whether nothing is pending.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.top().t == EMPTY
    }

    /// Take the next event and its time. A die event stays in its slot (at the time it fired)
    /// until the die's owner sets its next time or clears it ([`EventQueue::set_die`],
    /// [`EventQueue::clear_die`]) — one tree update per event instead of two when the die goes
    /// on working. The owner must do one or the other before the next `pop`.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        let Entry { t, slot } = self.top();
        if t == EMPTY {
            return None;
        }
        if slot == 0 {
            let Reverse((_, _, payload)) = self.timers.pop()?;
            self.sync_timers();
            Some((t, Event::Timer(payload)))
        } else {
            Some((t, Event::Die(slot - 1)))
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
            if let (_, Event::Die(d)) = e {
                q.clear_die(d);
            }
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
    fn scan_and_tree_agree() {
        use rand::{Rng, SeedableRng};
        // 3, 15, 40 dies: scan mode; 100: tree; 40 starting near the packed-key limit: scan
        // mode that leaves for the tree halfway.
        for (dies, start) in [
            (3u32, 0u64),
            (15, 0),
            (40, 0),
            (100, 0),
            (40, KEY_T_LIMIT - 60_000),
        ] {
            let mut q = EventQueue::new(dies);
            let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(dies as u64);
            let mut pending = vec![None; dies as usize];
            let mut now = start;
            for _ in 0..5000 {
                let d = rng.gen_range(0..dies);
                if pending[d as usize].is_none() {
                    let t = now + rng.gen_range(0..50) * if start > 0 { 1000 } else { 1 };
                    q.set_die(d, t);
                    pending[d as usize] = Some(t);
                }
                if rng.gen_bool(0.5) {
                    let want = pending
                        .iter()
                        .enumerate()
                        .filter_map(|(i, t)| t.map(|t| (t, i as u32)))
                        .min();
                    let got = q.pop();
                    match want {
                        None => assert_eq!(got, None),
                        Some((t, i)) => {
                            assert_eq!(got, Some((t, Event::Die(i))));
                            now = t;
                            pending[i as usize] = None;
                            q.clear_die(i);
                        }
                    }
                }
            }
            assert_eq!(q.scan, dies < 64 && start == 0, "{dies} dies from {start}");
        }
    }

    #[test]
    fn clear_removes_a_pending_die_event() {
        let mut q = EventQueue::new(2);
        q.set_die(1, 4);
        q.set_die(0, 9);
        q.clear_die(1);
        assert_eq!(q.die_time(1), None);
        assert_eq!(q.pop(), Some((9, Event::Die(0))));
        q.clear_die(0);
        assert_eq!(q.pop(), None);
    }
}
