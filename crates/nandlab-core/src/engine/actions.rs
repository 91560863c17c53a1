//! The scheme's actions ([`crate::scheme::Action`]): rewrites, verifies, backend fetches and
//! the programs, reads and unmaps of its hidden pages, queued as flash transactions.

use super::Engine;
use crate::ftl::{NONE, UNMAPPED};
use crate::sched::TxnKind;
use crate::scheme::{Action, Placement, Source};

impl Engine {
    /// Queue the scheme's actions; a synchronous rewrite (`wait`) is tied to `owner` (a host
    /// request slot, or [`NONE`] outside a request: then it runs in the background).
    pub(super) fn run_actions(&mut self, owner: u32) {
        let mut i = 0;
        while i < self.actions.len() {
            match self.actions[i] {
                Action::Rewrite { lpn, source, wait } => {
                    let ppn = self.ftl.lookup(lpn);
                    if ppn != UNMAPPED {
                        let owner = if wait { owner } else { NONE };
                        if owner != NONE {
                            self.slots[owner as usize].pending += 1;
                            self.stats.sync_rewrites += 1;
                        }
                        let die = self.enqueue_read(source, lpn, ppn, owner);
                        self.dispatch(die);
                    }
                }
                Action::Verify { first_lpn, count } => self.verify(first_lpn, count),
                Action::Fetch { lpn, expect_ppn } => self.queue_fetch(lpn, expect_ppn, 1, 0),
                Action::Program { lpn, wait } => {
                    if !self.hidden_ok(lpn) {
                        break;
                    }
                    let ctx = scheme_ctx!(self);
                    let pl = self.scheme.placement(lpn, Source::Migration, &ctx);
                    if self.placement_ok(pl) {
                        let owner = if wait { owner } else { NONE };
                        if owner != NONE {
                            self.slots[owner as usize].pending += 1;
                        }
                        let die = self.enqueue_program(Source::Migration, lpn, owner, pl);
                        self.dispatch(die);
                    }
                }
                Action::Read { lpn, wait } => {
                    if !self.hidden_ok(lpn) {
                        break;
                    }
                    let ppn = self.ftl.lookup(lpn);
                    if ppn != UNMAPPED {
                        let owner = if wait { owner } else { NONE };
                        let source = if owner != NONE {
                            self.slots[owner as usize].pending += 1;
                            Source::Host
                        } else {
                            Source::Migration
                        };
                        let die = self.enqueue_read(source, lpn, ppn, owner);
                        self.dispatch(die);
                    }
                }
                Action::Unmap { lpn } => {
                    if !self.hidden_ok(lpn) {
                        break;
                    }
                    self.ftl.trim(lpn);
                }
            }
            i += 1;
        }
        self.actions.clear();
    }

    /// Whether `lpn` is a hidden page (at or above the logical capacity, inside the L2P); an
    /// internal error of the scheme otherwise.
    fn hidden_ok(&mut self, lpn: u32) -> bool {
        let total = self.ftl.lookup_len();
        if (lpn as u64) >= self.logical_pages && (lpn as usize) < total {
            return true;
        }
        let msg = format!(
            "internal error: scheme `{}` asked for hidden page {lpn} outside {} ..< {total}",
            self.scheme.name(),
            self.logical_pages
        );
        self.fail(msg);
        self.actions.clear();
        false
    }

    /// Queue a read of `ppn` (holding `lpn`) on its plane for `source`, tied to the host
    /// request slot `owner` ([`NONE`]: background); returns its die. The caller dispatches it.
    #[inline]
    pub(super) fn enqueue_read(&mut self, source: Source, lpn: u32, ppn: u32, owner: u32) -> u32 {
        let plane = self.ftl.plane_of_ppn(ppn);
        self.sched.enqueue(
            TxnKind::Read,
            source,
            lpn,
            ppn,
            plane,
            owner,
            Placement::NONE,
        )
    }

    /// Queue a program of `lpn` placed by `pl` (on the plane the FTL writes it to) for
    /// `source`, tied to the host request slot `owner` ([`NONE`]: background); returns its
    /// die ([`NONE`]: not queued). The caller dispatches it.
    #[inline]
    pub(super) fn enqueue_program(
        &mut self,
        source: Source,
        lpn: u32,
        owner: u32,
        pl: Placement,
    ) -> u32 {
        let plane = self.ftl.plane_for_write_in(lpn, pl.region);
        self.sched
            .enqueue(TxnKind::Program, source, lpn, NONE, plane, owner, pl)
    }
}
