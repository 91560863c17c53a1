//! The end of a die's run: each of its transactions completes — a host page is done (its
//! request completes with its last page; an RMW read queues the merged page's program, a DRAM
//! flush frees its entry), a scheme rewrite's read queues its program, a GC move or refresh
//! step counts toward its phase, an erase ends the pool's GC — and the die is dispatched again.

use super::Engine;
use crate::config::Allocation;
use crate::exec::{Done, Txn};
use crate::ftl::NONE;
use crate::sched::TxnKind;
use crate::scheme::Source;

impl Engine {
    /// Die `die` finished its run `done` at `self.now`: each of its transactions completes.
    pub(super) fn complete(&mut self, die: u32, done: Done) {
        if done.ops == 1 {
            let t = self.exec.done_txn(die, 0);
            self.complete_one(die, t, done);
        } else {
            // A multi-plane or one-shot run: take its transactions first (completing one may
            // start the idle die again, which restages them).
            let mut ts = std::mem::take(&mut self.mp_done);
            ts.clear();
            ts.extend((0..done.ops as usize).map(|k| self.exec.done_txn(die, k)));
            // Cleaning time is die time: a run of GC moves or erases counts once.
            if ts
                .iter()
                .any(|t| t.source == Source::Gc && matches!(t.kind, TxnKind::Move | TxnKind::Erase))
            {
                self.stats.cache.cleaning_ns += self.now - done.start_ns;
            }
            for &t in &ts {
                self.complete_one(die, t, done);
            }
            self.mp_done = ts;
        }
        self.dispatch(die);
    }

    /// Transaction `t` of the run `done` of die `die` completes.
    fn complete_one(&mut self, die: u32, t: Txn, done: Done) {
        let service = self.now - done.start_ns;
        if let Some(ts) = self.stats.timeseries.as_mut() {
            let gc_move = t.kind == TxnKind::Move && t.source != Source::Refresh;
            ts.flash_done(done.start_ns, self.now, t.kind == TxnKind::Erase, gc_move);
        }
        if done.ops == 1
            && t.source == Source::Gc
            && matches!(t.kind, TxnKind::Move | TxnKind::Erase)
        {
            self.stats.cache.cleaning_ns += service;
        }
        match t.kind {
            TxnKind::Read => {
                let end = self.now + done.tail_ns;
                if t.source == Source::Mapping {
                    // A translation page read: a CMT load or a write-back's first half.
                    self.map_read_done(t.owner, end, end - done.start_ns);
                } else if t.source == Source::Host {
                    if self.is_rmw_read(t.owner) {
                        self.rmw_read_done(t.owner, t.lpn, end - done.start_ns);
                        self.rmw_program(t.lpn, t.owner, die);
                    } else {
                        self.host_page_done(t.owner, end, end - done.start_ns);
                    }
                } else if t.source == Source::Refresh {
                    self.refresh_step_done(t.plane);
                } else if t.source == Source::Scrub {
                    // A scrub read only checks the page (spec §3 item 4): never reprogrammed.
                } else if t.lpn as u64 >= self.logical_pages {
                    // A background read of a scheme's hidden page (Action::Read): the data
                    // goes to the controller; nothing is reprogrammed.
                    if t.owner != NONE {
                        self.host_page_done(t.owner, end, end - done.start_ns);
                    }
                } else if self.ftl.lookup(t.lpn) == t.ppn {
                    // Second half of a scheme rewrite: program the data again (a synchronous
                    // one keeps its host request as owner).
                    let ctx = scheme_ctx!(self);
                    let pl = self.scheme.placement(t.lpn, t.source, &ctx);
                    if !self.placement_ok(pl) {
                        if t.owner != NONE {
                            self.host_page_done(t.owner, end, end - done.start_ns);
                        }
                    } else {
                        let d2 = self.enqueue_program(t.source, t.lpn, t.owner, pl);
                        if d2 != die {
                            self.dispatch(d2);
                        }
                    }
                } else if t.owner != NONE {
                    // A synchronous rewrite whose page the host overwrote meanwhile: nothing
                    // left to move; its request no longer waits for it.
                    self.host_page_done(t.owner, end, end - done.start_ns);
                }
            }
            TxnKind::Program => {
                if t.source == Source::Host
                    && self.dram.is_some()
                    && t.owner & super::dram::FLUSH != 0
                {
                    self.dram_flushed(t.owner & !super::dram::FLUSH, die);
                } else if t.source == Source::Host {
                    let service = service + self.rmw_service(t.owner, t.lpn);
                    self.host_page_done(t.owner, self.now, service);
                } else {
                    if (t.lpn as u64) < self.logical_pages {
                        self.stats.rewrites += 1;
                    }
                    if t.owner != NONE {
                        // A synchronous rewrite finished: its host request may complete.
                        self.host_page_done(t.owner, self.now, service);
                    }
                }
            }
            TxnKind::Move if t.source == Source::Refresh => self.refresh_step_done(t.plane),
            TxnKind::Move => self.move_done(self.ftl.pool(t.plane, t.placement.region)),
            TxnKind::Adjust => self.refresh_step_done(t.plane),
            TxnKind::Erase => {
                self.ftl.erase_victim(t.ppn);
                if self.map.is_some() {
                    // DFTL's batch update: the translation pages the victim's moves made stale.
                    self.map_victim_erased();
                }
                let pool = self.ftl.pool(t.plane, t.placement.region);
                self.gc_active[pool as usize] = false;
                self.gc_victim[pool as usize] = NONE;
                self.maybe_gc(pool);
                let plane = t.plane as usize;
                if self.rf_on && self.rf_deferred[plane] {
                    self.maybe_refresh(t.plane);
                }
                if self.cfg.ftl.allocation == Allocation::Dynamic {
                    // Space came back: waiting host writes may fit any idle die now.
                    for d in 0..self.exec.dies() {
                        self.dispatch(d);
                    }
                }
            }
        }
    }
}
