//! Stripe numbering of the host data stream: physical addresses numbered across the dies of a
//! stripe, so that an ⟨offset, length, PA⟩ leaf entry covers many data pages while the data
//! stays spread over every die (issue 30).
//!
//! Source: §4.1.2 and §4.4.3.1 (the per-object index is an extent B+ tree, μ-FTL \[21\]: leaf
//! entries ⟨offset, length, PA⟩); §4.6.2 (object data "evenly distributed to all channels";
//! a 4 KB read costs three page reads and a 32 KB read the same, which with a 64 MiB file needs
//! extents of many pages: spec §0).
//!
//! Readings (\[N\]): the host data stream opens one chunk per die as a *stripe*; its pages are
//! numbered row by row across the dies, starting at the die that opened it: slot
//! `row × dies + (die − first_die) mod dies`. Pages written round-robin over the dies (the data
//! stream's order, [`super::Device::next_die`]) therefore get consecutive slots, and a run of
//! consecutive logical pages written together is one extent: its page `j` is at slot
//! `slot(PA) + j`. A chunk that is not a stripe member (GC's data moves, YAFFS2's single log)
//! numbers its pages within itself (`PA + j`). A die whose data chunk fills first opens a new
//! stripe (normally all dies fill in the same round); an erased member leaves its stripe
//! (nothing live can point into it: GC moved its pages, which split their extents), and a
//! stripe with no member left is reused. Each data page's OOB carries its chunk's stripe id
//! and first die (F34's OOB "may spill" into the data area), so recovery rebuilds the table
//! from any readable page of each chunk ([`Stripes::restrict`]).

use crate::exec::NONE;

/// The stripe table (DRAM; rebuilt from OOB at recovery).
#[derive(Clone, Debug, Default)]
pub struct Stripes {
    dies: u32,
    ppc: u32,
    cpd: u32,
    /// Stripe of each chunk ([`NONE`]: not a member).
    of: Vec<u32>,
    /// Stripe `s`, die `d` → member chunk, at `s × dies + d` ([`NONE`]: none).
    members: Vec<u32>,
    /// First die of each stripe.
    first: Vec<u32>,
    /// Members of each stripe not erased yet.
    live: Vec<u32>,
    free: Vec<u32>,
    /// The stripe the data stream fills ([`NONE`]: open a new one).
    cur: u32,
}

impl Stripes {
    /// An empty table for `nchunks` chunks of `ppc` pages, `cpd` per die.
    pub fn new(dies: u32, ppc: u32, cpd: u32, nchunks: usize) -> Stripes {
        Stripes {
            dies,
            ppc,
            cpd,
            of: vec![NONE; nchunks],
            cur: NONE,
            ..Default::default()
        }
    }

    fn new_stripe(&mut self, first: u32) -> u32 {
        let d = self.dies as usize;
        let s = if let Some(s) = self.free.pop() {
            self.members[s as usize * d..(s as usize + 1) * d].fill(NONE);
            self.first[s as usize] = first;
            self.live[s as usize] = 0;
            s
        } else {
            let s = self.first.len() as u32;
            self.members.extend(std::iter::repeat_n(NONE, d));
            self.first.push(first);
            self.live.push(0);
            s
        };
        self.cur = s;
        s
    }

    /// Chunk `c` was opened by the host data stream: it joins the current stripe, or starts a
    /// new one when its die already has a member there.
    pub fn join(&mut self, c: u32) {
        let die = c / self.cpd;
        let mut s = self.cur;
        if s == NONE || self.members[(s * self.dies + die) as usize] != NONE {
            s = self.new_stripe(die);
        }
        self.members[(s * self.dies + die) as usize] = c;
        self.live[s as usize] += 1;
        self.of[c as usize] = s;
    }

    /// Chunk `c` is erased: it leaves its stripe.
    pub fn leave(&mut self, c: u32) {
        let s = self.of[c as usize];
        if s == NONE {
            return;
        }
        self.of[c as usize] = NONE;
        let die = c / self.cpd;
        self.members[(s * self.dies + die) as usize] = NONE;
        self.live[s as usize] -= 1;
        if self.live[s as usize] == 0 {
            if self.cur == s {
                self.cur = NONE;
            }
            self.free.push(s);
        }
    }

    /// The PA of page `j` of an extent starting at `pa` (`None`: beyond its chunk or
    /// stripe).
    #[inline]
    pub fn nth(&self, pa: u32, j: u64) -> Option<u32> {
        if j == 0 {
            return Some(pa);
        }
        let (c, off) = (pa / self.ppc, pa % self.ppc);
        let s = *self.of.get(c as usize)?;
        if s == NONE {
            let o = off as u64 + j;
            return (o < self.ppc as u64).then(|| c * self.ppc + o as u32);
        }
        let d = self.dies as u64;
        let die = (c / self.cpd) as u64;
        let first = self.first[s as usize] as u64;
        let slot = off as u64 * d + (die + d - first) % d + j;
        let row = slot / d;
        if row >= self.ppc as u64 {
            return None;
        }
        let die2 = (slot % d + first) % d;
        let m = self.members[(s as u64 * d + die2) as usize];
        (m != NONE).then(|| m * self.ppc + row as u32)
    }

    /// The table as flash can tell it: only chunks for which `readable` holds (a readable
    /// page's OOB names the stripe); the data stream starts a new stripe.
    pub fn restrict(&self, readable: impl Fn(usize) -> bool) -> Stripes {
        let mut t = self.clone();
        t.cur = NONE;
        for c in 0..t.of.len() {
            if t.of[c] != NONE && !readable(c) {
                t.leave(c as u32);
            }
        }
        t
    }

    /// Stripes in use and their members (diagnostics).
    pub fn in_use(&self) -> (usize, u64) {
        let n = self.live.iter().filter(|&&l| l > 0).count();
        (n, self.live.iter().map(|&l| l as u64).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripe_slots_follow_round_robin_order() {
        // 4 dies, 8 pages per chunk, 10 chunks per die.
        let mut t = Stripes::new(4, 8, 10, 40);
        // Die 2 opens first (round-robin phase 2), then 3, 0, 1.
        for c in [22, 31, 3, 15] {
            t.join(c);
        }
        // Written order: (die 2, row 0), (3, 0), (0, 0), (1, 0), (2, 1) ...
        let pa = |c: u32, off: u32| c * 8 + off;
        let seq = [pa(22, 0), pa(31, 0), pa(3, 0), pa(15, 0), pa(22, 1), pa(31, 1)];
        for (j, &p) in seq.iter().enumerate() {
            assert_eq!(t.nth(seq[0], j as u64), Some(p));
        }
        assert_eq!(t.nth(pa(3, 0), 2), Some(pa(22, 1)));
        // The end of the stripe.
        assert_eq!(t.nth(pa(15, 7), 1), None);
        // A second member on die 2 starts a new stripe.
        t.join(23);
        assert_eq!(t.nth(pa(23, 0), 1), None);
        // A chunk outside any stripe counts within itself.
        assert_eq!(t.nth(pa(5, 2), 3), Some(pa(5, 5)));
        assert_eq!(t.nth(pa(5, 2), 6), None);
        // An erased member leaves a hole.
        t.leave(31);
        assert_eq!(t.nth(pa(22, 0), 1), None);
        assert_eq!(t.nth(pa(22, 0), 2), Some(pa(3, 0)));
        let r = t.restrict(|c| c != 3);
        assert_eq!(r.nth(pa(22, 0), 2), None);
    }
}
