//! Data-refresh control (IDA §III-C; Table II "remapping-based refresh"): which block of a plane
//! is due, its plan from the scheme, the relocations, in-place adjustments and read-backs it
//! queues, and its end.

use super::Engine;
use crate::ftl::{PageState, NONE};
use crate::sched::TxnKind;
use crate::scheme::{Placement, Source};

impl Engine {
    /// Start the refresh of the oldest due block of `plane` (IDA §III-C; Table II
    /// "remapping-based refresh"), unless one runs there already or the plane is short of free
    /// blocks (then it waits for GC: refresh is background work). Due blocks with no valid
    /// data are skipped and their refresh clock restarts.
    pub(super) fn maybe_refresh(&mut self, plane: u32) {
        let p = plane as usize;
        if !self.rf_on || self.rf_block[p] != NONE {
            return;
        }
        // Room for the refresh's own destination block beyond the GC reserve: refresh and GC
        // moves share the plane's relocation stream.
        if self.ftl.free_blocks(plane) <= self.ftl.gc_threshold_blocks {
            self.rf_deferred[p] = true;
            return;
        }
        self.rf_deferred[p] = false;
        let now_s = (self.now / 1_000_000_000) as i64;
        let bpp = self.ftl.geo.blocks_per_plane;
        let mut best = NONE;
        let mut best_s = i64::MAX;
        for b in plane * bpp..(plane + 1) * bpp {
            if self.ftl.block_state(b) != crate::ftl::BlockState::Full {
                continue;
            }
            let t = self.ftl.block_data_s(b) as i64;
            if now_s - t < self.rf_period_s {
                continue;
            }
            if self.ftl.block_valid(b) == 0 {
                self.stats.refresh.skipped_empty += 1;
                self.ftl.set_block_data_s(b, now_s as i32);
                continue;
            }
            if t < best_s {
                best_s = t;
                best = b;
            }
        }
        if best != NONE {
            self.start_refresh(plane, best);
        }
    }

    /// On an idle device after a scan that started nothing: the earliest time a full block
    /// becomes due (`None` when no block is full). Scans before it find nothing to do.
    pub(super) fn refresh_next_due_ns(&self) -> Option<u64> {
        let mut first: Option<i64> = None;
        for b in 0..self.ftl.geo.blocks() {
            if self.ftl.block_state(b) != crate::ftl::BlockState::Full {
                continue;
            }
            let due = self.ftl.block_data_s(b) as i64 + self.rf_period_s;
            first = Some(first.map_or(due, |f| f.min(due)));
        }
        first.map(|s| (s.max(0) as u64).saturating_mul(1_000_000_000))
    }

    pub(super) fn start_refresh(&mut self, plane: u32, block: u32) {
        let p = plane as usize;
        if !self.ftl.claim_for_refresh(block) {
            return;
        }
        self.rf_block[p] = block;
        self.rf_phase[p] = 1;
        self.stats.refresh.blocks_refreshed += 1;
        self.rf_plan.clear();
        let ctx = scheme_ctx!(self);
        self.scheme.plan_refresh(block, &ctx, &mut self.rf_plan);
        let mut pending = 0u32;
        let mut die = NONE;
        for i in 0..self.rf_plan.moves.len() {
            let src = self.rf_plan.moves[i];
            let lpn = self.ftl.page_lpn(src);
            let Some(d) = self.enqueue_refresh_move(lpn, src, plane) else {
                return;
            };
            die = d;
            pending += 1;
        }
        // Step 1 of Fig. 7b reads every valid page, also those then kept in place.
        self.rf_adjusted[p].clear();
        for i in 0..self.rf_plan.adjusted.len() {
            let a = self.rf_plan.adjusted[i];
            self.rf_adjusted[p].push(a);
            let lpn = self.ftl.page_lpn(a.ppn);
            die = self.enqueue_refresh_read(lpn, a.ppn, plane);
            pending += 1;
        }
        for i in 0..self.rf_plan.adjust_wls.len() {
            let ppn = self.rf_plan.adjust_wls[i];
            die = self.sched.enqueue(
                TxnKind::Adjust,
                Source::Refresh,
                0,
                ppn,
                plane,
                NONE,
                Placement::NONE,
            );
            pending += 1;
        }
        let r = &mut self.stats.refresh;
        r.wordlines_adjusted += self.rf_plan.adjust_wls.len() as u64;
        r.pages_adjusted += self.rf_plan.adjusted.len() as u64;
        r.blocks_adjusted += !self.rf_plan.adjust_wls.is_empty() as u64;
        self.rf_pending[p] = pending;
        if pending == 0 {
            self.finish_refresh(plane);
        } else if die != NONE {
            self.dispatch(die);
        }
    }

    /// One refresh transaction of `plane` finished (or was cancelled).
    pub(super) fn refresh_step_done(&mut self, plane: u32) {
        let p = plane as usize;
        self.rf_pending[p] -= 1;
        if self.rf_pending[p] > 0 {
            return;
        }
        if self.rf_phase[p] == 2 || self.rf_adjusted[p].is_empty() {
            self.finish_refresh(plane);
            return;
        }
        // Adjustments done: the kept pages now read faster; read each back (Fig. 7b step 5);
        // a corrupted one is rewritten from its error-free copy (step 8), which costs a move
        // (read back, decode, program to a new block).
        self.rf_phase[p] = 2;
        let mut pending = 0;
        let mut die = NONE;
        for i in 0..self.rf_adjusted[p].len() {
            let a = self.rf_adjusted[p][i];
            if self.ftl.page_state(a.ppn) != PageState::Valid {
                continue;
            }
            self.ftl.set_page_read_type(a.ppn, a.read_type);
            let lpn = self.ftl.page_lpn(a.ppn);
            self.stats.refresh.readbacks += 1;
            if a.corrupt {
                let Some(d) = self.enqueue_refresh_move(lpn, a.ppn, plane) else {
                    return;
                };
                die = d;
            } else {
                die = self.enqueue_refresh_read(lpn, a.ppn, plane);
            }
            pending += 1;
        }
        self.rf_pending[p] = pending;
        if pending == 0 {
            self.finish_refresh(plane);
        } else if die != NONE {
            self.dispatch(die);
        }
    }

    /// Queue the refresh relocation of `ppn` (holding `lpn`) on `plane`, placed by the scheme
    /// for [`Source::Refresh`]; returns its die, or `None` after a bad placement (the run has
    /// failed).
    pub(super) fn enqueue_refresh_move(&mut self, lpn: u32, ppn: u32, plane: u32) -> Option<u32> {
        let ctx = scheme_ctx!(self);
        let pl = self.scheme.placement(lpn, Source::Refresh, &ctx);
        if !self.placement_ok(pl) {
            return None;
        }
        Some(
            self.sched
                .enqueue(TxnKind::Move, Source::Refresh, lpn, ppn, plane, NONE, pl),
        )
    }

    /// Queue a refresh read of `ppn` (holding `lpn`) on `plane`; returns its die.
    pub(super) fn enqueue_refresh_read(&mut self, lpn: u32, ppn: u32, plane: u32) -> u32 {
        self.sched.enqueue(
            TxnKind::Read,
            Source::Refresh,
            lpn,
            ppn,
            plane,
            NONE,
            Placement::NONE,
        )
    }

    /// The refresh of `plane`'s block is over: it returns to the full blocks (GC reclaims it
    /// when empty, IDA §III-C "reclaimed by GC (later)"); an adjusted block is an IDA block
    /// whose refresh clock restarts (its cells were reprogrammed).
    pub(super) fn finish_refresh(&mut self, plane: u32) {
        let p = plane as usize;
        let block = self.rf_block[p];
        if !self.rf_adjusted[p].is_empty() {
            self.ftl.mark_ida(block);
        }
        self.ftl
            .set_block_data_s(block, (self.now / 1_000_000_000) as i32);
        self.ftl.unclaim_victim(block);
        self.rf_block[p] = NONE;
        self.rf_phase[p] = 0;
        self.rf_adjusted[p].clear();
        self.maybe_gc(plane);
        self.maybe_refresh(plane);
    }
}
