//! Stripe numbering of the host data stream: physical addresses numbered across the dies of a
//! stripe, so that an ⟨offset, length, PA⟩ leaf entry covers many data pages while the data
//! stays spread over every die (issue 30).
//!
//! Source: §4.1.2 and §4.4.3.1 (the per-object index is an extent B+ tree, μ-FTL \[21\]: leaf
//! entries ⟨offset, length, PA⟩); §4.6.2 (object data "evenly distributed to all channels";
//! a 4 KB read costs three page reads and a 32 KB read the same, which for DMMbench's large
//! file needs extents of many pages: spec §0); F34 (the OOB of a data page, which "may spill"
//! into the data area).
//!
//! Readings (\[N\]): the host data stream opens one chunk per die as a *stripe*; its pages
//! are numbered row by row across the dies, starting at the die that opened it: slot
//! `row × dies + (die − first_die) mod dies`. Pages written round-robin over the dies (the
//! data stream's order, [`super::Device::next_die`]) therefore get consecutive slots. The
//! address a leaf entry stores for a page of a stripe is the *stripe address*
//! [`STRIPED`]` | (stripe × dies × pages_per_chunk + slot)`, and page `j` of an extent is
//! at address + `j` ([`Stripes::next`]): a run of consecutive logical pages written together
//! is one extent. A page outside any stripe (GC's data moves, YAFFS2's single log, a device
//! too large for the address space) is stored by its PPN, and page `j` is PPN + `j` within
//! its chunk. [`Stripes::ppn`] resolves an address through the table. A die whose data chunk
//! fills first opens a new stripe (normally all dies fill in the same round). An erased
//! member leaves its stripe and its die stays empty there (no later chunk takes its place, so
//! an address never moves to another page while its stripe lives); a stripe with no member
//! left is reused. Because the stripe is part of the address, a leaf entry of an object's
//! last consistent state whose first page was moved and erased since still finds the pages of
//! its other dies. Each data page's OOB carries its chunk's stripe number and first die, so
//! recovery rebuilds the table from any readable page of each chunk ([`Stripes::restrict`]);
//! recovery takes a page an address resolves to only if its OOB names the object and the
//! page index (an address into a stripe reused since resolves to some other page).

use crate::exec::NONE;

/// Flag of a stripe address (the high bit of a 32-bit PA; PPNs stay below it).
pub const STRIPED: u32 = 1 << 31;

/// A member that was erased: its die stays empty in its stripe.
const GONE: u32 = NONE - 1;

/// The stripe table (DRAM; rebuilt from OOB at recovery).
#[derive(Clone, Debug, Default)]
pub struct Stripes {
    dies: u32,
    ppc: u32,
    cpd: u32,
    /// Stripe addresses in use (false: the device is too large for them; every address is a
    /// PPN).
    on: bool,
    /// Stripe of each chunk ([`NONE`]: not a member).
    of: Vec<u32>,
    /// Stripe `s`, die `d` → member chunk, at `s × dies + d` ([`NONE`]: none yet; `GONE`:
    /// erased).
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
        // At most one stripe per chunk is alive: stripe addresses stay below the flag bit when
        // chunks × dies × pages per chunk does (and PPNs below it too).
        let on = (nchunks as u64) * (dies as u64) * (ppc as u64) < STRIPED as u64;
        Stripes {
            dies,
            ppc,
            cpd,
            on,
            of: vec![NONE; nchunks],
            cur: NONE,
            ..Default::default()
        }
    }

    /// Pages of a stripe.
    #[inline]
    fn spp(&self) -> u64 {
        self.dies as u64 * self.ppc as u64
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
    /// new one when its die has (or had) a member there.
    pub fn join(&mut self, c: u32) {
        if !self.on {
            return;
        }
        let die = c / self.cpd;
        let mut s = self.cur;
        if s == NONE || self.members[(s * self.dies + die) as usize] != NONE {
            s = self.new_stripe(die);
        }
        self.members[(s * self.dies + die) as usize] = c;
        self.live[s as usize] += 1;
        self.of[c as usize] = s;
    }

    /// Chunk `c` is erased: it leaves its stripe (its die stays empty there).
    pub fn leave(&mut self, c: u32) {
        let Some(&s) = self.of.get(c as usize) else {
            return;
        };
        if s == NONE {
            return;
        }
        self.of[c as usize] = NONE;
        let die = c / self.cpd;
        self.members[(s * self.dies + die) as usize] = GONE;
        self.live[s as usize] -= 1;
        if self.live[s as usize] == 0 {
            if self.cur == s {
                self.cur = NONE;
            }
            self.free.push(s);
        }
    }

    /// The address a leaf entry stores for the page at `ppn`: its stripe address if its chunk
    /// is a stripe member, else the PPN.
    #[inline]
    pub fn addr(&self, ppn: u32) -> u32 {
        if !self.on || ppn == NONE {
            return ppn;
        }
        let (c, off) = (ppn / self.ppc, ppn % self.ppc);
        match self.of.get(c as usize) {
            Some(&s) if s != NONE => {
                let d = self.dies as u64;
                let die = (c / self.cpd) as u64;
                let first = self.first[s as usize] as u64;
                let slot = off as u64 * d + (die + d - first) % d;
                STRIPED | (s as u64 * self.spp() + slot) as u32
            }
            _ => ppn,
        }
    }

    /// The address `j` pages after address `a` in its numbering (`None`: past the end of its
    /// stripe, or of its chunk for a PPN).
    #[inline]
    pub fn next(&self, a: u32, j: u64) -> Option<u32> {
        if j == 0 {
            return Some(a);
        }
        if a == NONE {
            return None;
        }
        if self.on && a & STRIPED != 0 {
            let x = (a & !STRIPED) as u64;
            let spp = self.spp();
            (x % spp + j < spp).then(|| STRIPED | (x + j) as u32)
        } else {
            let off = (a % self.ppc) as u64;
            (off + j < self.ppc as u64).then(|| a + j as u32)
        }
    }

    /// The PPN of address `a` (`None`: its stripe has no member on that die).
    #[inline]
    pub fn ppn(&self, a: u32) -> Option<u32> {
        if a == NONE {
            return None;
        }
        if !self.on || a & STRIPED == 0 {
            return Some(a);
        }
        let x = (a & !STRIPED) as u64;
        let spp = self.spp();
        let (s, slot) = (x / spp, x % spp);
        let d = self.dies as u64;
        let first = *self.first.get(s as usize)? as u64;
        let die = (slot % d + first) % d;
        let m = *self.members.get((s * d + die) as usize)?;
        (m != NONE && m != GONE).then(|| m * self.ppc + (slot / d) as u32)
    }

    /// The PPN of page `j` of an extent whose first page is at address `a`.
    #[inline]
    pub fn nth(&self, a: u32, j: u64) -> Option<u32> {
        self.ppn(self.next(a, j)?)
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
    fn stripe_addresses_follow_round_robin_order() {
        // 4 dies, 8 pages per chunk, 10 chunks per die.
        let mut t = Stripes::new(4, 8, 10, 40);
        // Die 2 opens first (round-robin phase 2), then 3, 0, 1.
        for c in [22, 31, 3, 15] {
            t.join(c);
        }
        // Written order: (die 2, row 0), (3, 0), (0, 0), (1, 0), (2, 1) ...
        let pa = |c: u32, off: u32| c * 8 + off;
        let seq = [
            pa(22, 0),
            pa(31, 0),
            pa(3, 0),
            pa(15, 0),
            pa(22, 1),
            pa(31, 1),
        ];
        let a0 = t.addr(seq[0]);
        assert_ne!(a0 & STRIPED, 0);
        for (j, &p) in seq.iter().enumerate() {
            assert_eq!(t.nth(a0, j as u64), Some(p));
            assert_eq!(t.addr(p), t.next(a0, j as u64).unwrap());
        }
        assert_eq!(t.nth(t.addr(pa(3, 0)), 2), Some(pa(22, 1)));
        // The end of the stripe.
        assert_eq!(t.next(t.addr(pa(15, 7)), 1), None);
        // A second member on die 2 starts a new stripe.
        t.join(23);
        assert_eq!(t.nth(t.addr(pa(23, 0)), 1), None);
        // A chunk outside any stripe counts within itself, by PPN.
        assert_eq!(t.addr(pa(5, 2)), pa(5, 2));
        assert_eq!(t.nth(pa(5, 2), 3), Some(pa(5, 5)));
        assert_eq!(t.next(pa(5, 2), 6), None);
        // An erased member leaves a hole that no later chunk fills; the other dies' pages
        // are still found from an address on the erased die.
        t.leave(31);
        assert_eq!(t.nth(a0, 1), None);
        assert_eq!(t.nth(a0, 2), Some(pa(3, 0)));
        let a22 = t.addr(pa(22, 0));
        t.leave(22);
        assert_eq!(t.ppn(a22), None);
        assert_eq!(t.nth(a22, 2), Some(pa(3, 0)));
        let r = t.restrict(|c| c != 3);
        assert_eq!(r.nth(a22, 2), None);
        assert_eq!(r.nth(a22, 3), Some(pa(15, 0)));
        // A stripe whose members are all erased is reused (die 2 has a member in stripe 1,
        // so chunk 24 starts a new stripe: number 0 again).
        for c in [3, 15] {
            t.leave(c);
        }
        t.join(24);
        assert_eq!(t.addr(pa(24, 0)), STRIPED);
    }
}
