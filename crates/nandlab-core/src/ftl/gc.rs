//! Garbage collection's side of the FTL: victim selection (greedy buckets, FIFO,
//! cost-benefit), a victim's valid pages, erases and the full-block bookkeeping.

use super::*;

impl Ftl {
    /// Pick and claim a victim block in `pool` (a plane without regions) by the configured
    /// policy; `None` when the pool has no full block.
    pub fn select_victim(&mut self, pool: u32, now_ns: u64) -> Option<u32> {
        let b = match self.victim_policy {
            VictimPolicy::Greedy => {
                let n = (self.geo.pages_per_block * self.group) as usize;
                let base = pool as usize * (n + 1);
                (0..=n)
                    .map(|v| self.bkt_head[base + v])
                    .find(|&h| h != NONE)?
            }
            VictimPolicy::Fifo => *self.fifo[pool as usize].front()?,
            VictimPolicy::CostBenefit => {
                let plane = self.plane_of_pool(pool);
                let region = (pool % self.regions) as u8;
                let bpp = self.geo.blocks_per_plane;
                let ppb = self.region_ppb[region as usize] as f64;
                let mut best = NONE;
                let mut best_score = f64::NEG_INFINITY;
                // Superpages: the superblocks (named by their first-plane block) of the die.
                let ppb = ppb * self.group as f64;
                for b in plane * bpp..(plane + 1) * bpp {
                    if self.blk_state[b as usize] != BlockState::Full as u8
                        || self.blk_region[b as usize] != region
                    {
                        continue;
                    }
                    let u = self.victim_valid(b) as f64 / ppb;
                    let age = now_ns.saturating_sub(self.blk_full_ns[b as usize]) as f64 + 1.0;
                    let score = if u == 0.0 {
                        f64::INFINITY
                    } else {
                        age * (1.0 - u) / (2.0 * u)
                    };
                    if score > best_score {
                        best_score = score;
                        best = b;
                    }
                }
                if best == NONE {
                    return None;
                }
                best
            }
        };
        self.untrack_full(b);
        let bpp = self.geo.blocks_per_plane;
        for k in 0..self.group {
            self.blk_state[(b + k * bpp) as usize] = BlockState::Victim as u8;
        }
        Some(b)
    }

    /// Return a victim to the full blocks without collecting it.
    pub fn unclaim_victim(&mut self, block: u32) {
        debug_assert_eq!(self.blk_state[block as usize], BlockState::Victim as u8);
        let bpp = self.geo.blocks_per_plane;
        for k in 0..self.group {
            self.blk_state[(block + k * bpp) as usize] = BlockState::Full as u8;
        }
        self.track_full(block);
    }

    /// Valid pages of the GC unit `victim` ([`Ftl::select_victim`]): its superblock's with
    /// superpages, else the block's.
    #[inline]
    pub fn victim_valid(&self, victim: u32) -> u32 {
        if self.group > 1 {
            self.sb_valid[victim as usize]
        } else {
            self.blk_valid[victim as usize]
        }
    }

    /// Pages the GC unit `victim` holds when full.
    #[inline]
    pub fn victim_pages(&self, victim: u32) -> u32 {
        self.block_pages(victim) * self.group
    }

    /// PPNs of the valid pages of the GC unit `victim`, appended to `out` (plane by plane).
    pub fn victim_valid_pages(&self, victim: u32, out: &mut Vec<u32>) {
        for m in self.members(victim) {
            self.valid_pages(m, out);
        }
    }

    /// Erase the GC unit `victim`: its superblock's blocks (one multi-plane erase), or the
    /// block. Returns the blocks erased.
    pub fn erase_victim(&mut self, victim: u32) -> u32 {
        if self.group == 1 {
            self.erase(victim);
            return 1;
        }
        debug_assert_eq!(self.sb_valid[victim as usize], 0);
        if self.blk_state[victim as usize] == BlockState::Full as u8 {
            self.untrack_full(victim);
        }
        let bpp = self.geo.blocks_per_plane;
        for k in 0..self.group {
            self.reset_block(victim + k * bpp);
        }
        self.sb_wp[victim as usize] = 0;
        let pool = self.pool_of_block(victim);
        self.free[pool as usize].push_back(victim);
        self.group
    }

    /// PPNs of the valid pages of a block, appended to `out`.
    pub fn valid_pages(&self, block: u32, out: &mut Vec<u32>) {
        let ppb = self.geo.pages_per_block;
        let (base, end) = (block * ppb, (block + 1) * ppb);
        let mut ppn = base;
        while ppn < end {
            let wi = ppn / STATE_PER_WORD;
            let w = self.state[wi as usize];
            // Valid = 01: low bit set, high bit clear.
            let mut valid = w & !(w >> 1) & STATE_LOW_BITS;
            let first = ppn % STATE_PER_WORD;
            valid &= u64::MAX << (first * 2);
            let word_end = (wi + 1) * STATE_PER_WORD;
            if word_end > end {
                valid &= (1u64 << ((end - wi * STATE_PER_WORD) * 2)) - 1;
            }
            while valid != 0 {
                let k = valid.trailing_zeros() / 2;
                out.push(wi * STATE_PER_WORD + k);
                valid &= valid - 1;
            }
            ppn = word_end.min(end);
        }
    }

    /// Erase a block: all pages free, erase count + 1, back to its plane's free list.
    /// Without superpages (there, [`Ftl::erase_victim`] erases a superblock).
    pub fn erase(&mut self, block: u32) {
        debug_assert_eq!(self.group, 1);
        let b = block as usize;
        if self.blk_state[b] == BlockState::Full as u8 {
            self.untrack_full(block);
        }
        self.reset_block(block);
        let pool = self.pool_of_block(block);
        self.free[pool as usize].push_back(block);
    }

    /// A block's erase: pages free, counters reset, erase count + 1, state free (not yet in
    /// a free list).
    pub(super) fn reset_block(&mut self, block: u32) {
        let ppb = self.geo.pages_per_block;
        let b = block as usize;
        debug_assert_eq!(self.blk_valid[b], 0, "erasing a block with valid pages");
        for ppn in block * ppb..(block + 1) * ppb {
            self.set_state_bits(ppn, PageState::Free);
        }
        self.blk_wp[b] = 0;
        self.blk_valid[b] = 0;
        self.blk_reads[b] = 0;
        self.blk_kind[b] = 0;
        self.blk_erase[b] += 1;
        self.pe_sum += 1;
        if let Some(&next) = self.stage_pe.get(self.stage as usize + 1) {
            if self.mean_pe() >= next {
                self.update_stage();
            }
        }
        self.blk_state[b] = BlockState::Free as u8;
    }

    /// Set a block's erase count (preconditioning).
    pub fn set_erase_count(&mut self, block: u32, n: u32) {
        self.pe_sum = self.pe_sum - self.blk_erase[block as usize] as u64 + n as u64;
        self.blk_erase[block as usize] = n;
        self.update_stage();
    }

    pub(super) fn track_full(&mut self, b: u32) {
        match self.victim_policy {
            VictimPolicy::Greedy => self.bkt_insert(b),
            VictimPolicy::Fifo => {
                let p = self.pool_of_block(b) as usize;
                self.fifo[p].push_back(b);
            }
            VictimPolicy::CostBenefit => {}
        }
    }

    pub(super) fn untrack_full(&mut self, b: u32) {
        match self.victim_policy {
            VictimPolicy::Greedy => self.bkt_remove(b),
            VictimPolicy::Fifo => {
                let p = self.pool_of_block(b) as usize;
                if self.fifo[p].front() == Some(&b) {
                    self.fifo[p].pop_front();
                } else if let Some(i) = self.fifo[p].iter().position(|&x| x == b) {
                    self.fifo[p].remove(i);
                }
            }
            VictimPolicy::CostBenefit => {}
        }
    }

    #[inline]
    pub(super) fn bucket_move(&mut self, b: u32, delta: i32) {
        if self.group > 1 {
            // Superpages: the bucket is the superblock's.
            let rep = self.rep_of(b);
            let full = self.blk_state[rep as usize] == BlockState::Full as u8
                && self.victim_policy == VictimPolicy::Greedy;
            if full {
                self.bkt_remove(rep);
            }
            let v = &mut self.blk_valid[b as usize];
            *v = (*v as i64 + delta as i64) as u32;
            let v = &mut self.sb_valid[rep as usize];
            *v = (*v as i64 + delta as i64) as u32;
            if full {
                self.bkt_insert(rep);
            }
            return;
        }
        let full = self.blk_state[b as usize] == BlockState::Full as u8
            && self.victim_policy == VictimPolicy::Greedy;
        if full {
            self.bkt_remove(b);
        }
        let v = &mut self.blk_valid[b as usize];
        *v = (*v as i64 + delta as i64) as u32;
        if full {
            self.bkt_insert(b);
        }
    }

    #[inline]
    pub(super) fn bkt_index(&self, b: u32) -> usize {
        let ppb = self.geo.pages_per_block as usize;
        if self.group > 1 {
            let n = ppb * self.group as usize;
            return self.pool_of_block(b) as usize * (n + 1) + self.sb_valid[b as usize] as usize;
        }
        self.pool_of_block(b) as usize * (ppb + 1) + self.blk_valid[b as usize] as usize
    }

    pub(super) fn bkt_insert(&mut self, b: u32) {
        let h = self.bkt_index(b);
        let head = self.bkt_head[h];
        self.bkt_next[b as usize] = head;
        self.bkt_prev[b as usize] = NONE;
        if head != NONE {
            self.bkt_prev[head as usize] = b;
        }
        self.bkt_head[h] = b;
    }

    pub(super) fn bkt_remove(&mut self, b: u32) {
        let h = self.bkt_index(b);
        let (n, p) = (self.bkt_next[b as usize], self.bkt_prev[b as usize]);
        if p != NONE {
            self.bkt_next[p as usize] = n;
        } else {
            self.bkt_head[h] = n;
        }
        if n != NONE {
            self.bkt_prev[n as usize] = p;
        }
        self.bkt_next[b as usize] = NONE;
        self.bkt_prev[b as usize] = NONE;
    }

    // ----- invariants --------------------------------------------------------------------
}
