//! GC control: when a pool starts GC, its victim, the relocations it queues, and the erase that
//! ends it.

use super::Engine;
use crate::config::Allocation;
use crate::ftl::NONE;
use crate::sched::TxnKind;
use crate::scheme::{Placement, Source};

impl Engine {
    /// Start GC in `pool` (a plane without regions) when it is short of free blocks.
    pub(super) fn maybe_gc(&mut self, pool: u32) {
        let p = pool as usize;
        if self.gc_active[p] || !self.ftl.needs_gc(pool) {
            return;
        }
        let Some(victim) = self.ftl.select_victim(pool, self.now) else {
            return;
        };
        let plane = self.ftl.plane_of_pool(pool);
        let region = self.ftl.block_region(victim);
        let ppb = self.ftl.victim_pages(victim);
        if self.ftl.victim_valid(victim) == ppb && self.ftl.allocation() == Allocation::Dynamic {
            // Nothing to reclaim here now; dynamic allocation steers writes to other planes
            // until host overwrites invalidate data in this one.
            self.ftl.unclaim_victim(victim);
            return;
        }
        if self.ftl.victim_valid(victim) == ppb {
            self.gc_zero_gain[p] += 1;
            if self.gc_zero_gain[p] > self.ftl.geo.blocks_per_plane {
                let what = if self.rg.is_some() {
                    format!("plane {plane}{}", self.region_note(region))
                } else {
                    format!("plane {plane}")
                };
                self.fail(format!(
                    "GC cannot reclaim space on {what}: every victim is fully valid (the \
                     logical data does not fit the physical capacity less the GC reserve); \
                     raise device.op_percent_of_logical or lower ftl.gc_threshold_pct{}",
                    if self.rg.is_some() {
                        ", or give the region a larger share (regions.fractions)"
                    } else {
                        ""
                    }
                ));
                return;
            }
        } else {
            self.gc_zero_gain[p] = 0;
        }
        self.gc_active[p] = true;
        self.gc_victim[p] = victim;
        self.stats.gc_invocations += 1;
        self.stats.gc_victim_valid_sum += self.ftl.victim_valid(victim) as u64;
        self.scratch.clear();
        self.ftl.victim_valid_pages(victim, &mut self.scratch);
        self.gc_pending[p] = self.scratch.len() as u32;
        for i in 0..self.scratch.len() {
            let src = self.scratch[i];
            let lpn = self.ftl.page_lpn(src);
            let ctx = scheme_ctx!(self);
            let mut pl = self.scheme.gc_move(lpn, src, &ctx);
            // GC keeps a block's region (DESIGN §6, regions are block pools).
            pl.region = region;
            if !self.placement_ok(pl) {
                return;
            }
            self.sched
                .enqueue(TxnKind::Move, Source::Gc, lpn, src, plane, NONE, pl);
        }
        if self.gc_pending[p] == 0 {
            self.enqueue_erase(pool);
        }
    }

    pub(super) fn move_done(&mut self, pool: u32) {
        let p = pool as usize;
        self.gc_pending[p] -= 1;
        if self.gc_pending[p] == 0 {
            self.enqueue_erase(pool);
        }
    }

    pub(super) fn enqueue_erase(&mut self, pool: u32) {
        let victim = self.gc_victim[pool as usize];
        let plane = self.ftl.plane_of_pool(pool);
        let region = self.ftl.block_region(victim);
        self.sched.enqueue(
            TxnKind::Erase,
            Source::Gc,
            0,
            victim,
            plane,
            NONE,
            Placement {
                region,
                ..Placement::NONE
            },
        );
    }
}
