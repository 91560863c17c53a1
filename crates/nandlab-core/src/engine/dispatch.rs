//! The block device's side of the executor: what a transaction the scheduler picks for a die
//! costs and does to the FTL when it starts (dispatch; what its end does is `complete.rs`), and
//! the FTL's answers to the scheduler's [`SpaceView`] questions.

use super::Engine;
use crate::config::Allocation;
use crate::exec::{Phase, Txn};
use crate::ftl::{Ftl, PageState, NONE};
use crate::sched::{SpaceView, TxnKind, Visit};
use crate::scheme::Source;

/// A programmed page ([`Engine::program_page`]): its PPN, page type and program mode, and
/// whether the pool's blocks changed.
type ProgrammedPage = (u32, crate::flash::PageType, u8, bool);

impl SpaceView for Ftl {
    #[inline]
    fn can_start(&self, t: &Txn) -> bool {
        match t.kind {
            TxnKind::Program => self.can_allocate_in(
                t.plane,
                t.placement.region,
                t.placement.stream,
                // With regions, scheme migrations may not take a pool's last free block either;
                // nor may backend refills and prefetches (Scrub): like host writes they bring
                // data from outside, and taking the reserve left GC nowhere to move to (a
                // stall under heavy refill traffic, `[faults] mode = "model"` on worn flash);
                // nor may a scheme's hidden pages (GC needs those blocks to make progress).
                t.source == Source::Host
                    || t.source == Source::Scrub
                    || t.source == Source::Mapping
                    || (t.source == Source::Migration
                        && (self.regions() > 1 || t.lpn >= self.logical_pages)),
            ),
            TxnKind::Move => {
                self.can_allocate_in(t.plane, t.placement.region, t.placement.stream, false)
            }
            TxnKind::Read | TxnKind::Erase | TxnKind::Adjust => true,
        }
    }

    #[inline]
    fn plane_urgent(&self, plane: u32) -> bool {
        self.plane_gc_urgent(plane)
    }

    fn write_plane(&self, t: &Txn, first: u32, n: u32, start: u32) -> Option<u32> {
        let (region, stream) = (t.placement.region, t.placement.stream);
        let order = (0..n).map(|k| first + (start + k) % n);
        order
            .clone()
            .find(|&p| {
                !self.needs_gc(self.pool(p, region))
                    && self.can_allocate_in(p, region, stream, true)
            })
            .or_else(|| {
                order
                    .clone()
                    .find(|&p| self.can_allocate_in(p, region, stream, true))
            })
    }
}

impl Engine {
    /// Start the next transaction on `die` if it is idle and something can start.
    pub(super) fn dispatch(&mut self, die: u32) {
        loop {
            if self.exec.busy(die) {
                if self.susp_on && !self.maybe_suspend(die) {
                    return;
                }
                if self.exec.busy(die) {
                    return;
                }
            }
            if self.susp_on && self.exec.has_suspended(die) && !self.sched.has_host_read(die) {
                // The reads that suspended the operation are served: resume it.
                self.exec.resume(die, self.now);
                return;
            }
            if self.sp_on && self.sp_wait_ns > 0 {
                let hold = self.superpage_hold(die);
                self.sched.set_hold(die, hold);
            }
            let Some(picked) = self.sched.pick(die, &self.ftl) else {
                return;
            };
            // Staged in the die's slot; `t` is the copy the cost computation reads, and the
            // fields dispatch decides (ECC read, page programmed) are written to the slot.
            let t = picked;
            self.exec.stage(die, 0, t);
            if self.susp_prefix_ns > 0 {
                // The read that suspended a program/erase waits for the suspension first.
                self.exec
                    .push_phase(die, Phase::Array(std::mem::take(&mut self.susp_prefix_ns)));
            }
            if self.sp_on && self.superpage(die, &t) {
                self.prefetch_next(die, &t);
                return;
            }
            if self.os_on && self.one_shot(die, &t) {
                self.prefetch_next(die, &t);
                return;
            }
            if self.mp_on && self.multi_plane(die, &t) {
                self.prefetch_next(die, &t);
                return;
            }
            let now = self.now;
            let xfer = self.timing.transfer_ns;
            let mut tail = 0;
            match t.kind {
                TxnKind::Read => {
                    let pt = self.layout.page_type[self.ftl.page_index(t.ppn) as usize];
                    let ecc = self.ftl.page_ecc(t.ppn);
                    let rt = self.read_type(t.ppn, pt, t.source);
                    let (sense, bus, mut decode) = self.read_cost(t.ppn, rt, ecc);
                    self.ftl.note_read(t.ppn);
                    self.count_read(t.source, ecc, pt);
                    if t.source == Source::Host {
                        self.stats.cache.host_reads_by_ecc[ecc as usize] += 1;
                        if !self.faults.is_empty() {
                            let (d, extra) =
                                self.corrupt_read(t.lpn, t.ppn, ecc, sense + bus + decode, decode);
                            decode = d + extra;
                        }
                    }
                    if self.rg.is_some() {
                        self.count_region_read(t.source, t.ppn, sense + bus + decode);
                    }
                    self.exec.push_phase(die, Phase::Array(sense));
                    self.exec.push_phase(die, Phase::Bus(bus));
                    self.exec.stage_mut(die, 0).placement.ecc = ecc;
                    if t.source == Source::Host && self.is_rmw_read(t.owner) {
                        // The merge needs the decoded data: the die waits for the decode, as
                        // for a GC move, and the program is queued when the run ends.
                        self.exec.push_phase(die, Phase::Ctrl(decode));
                    } else {
                        tail = decode;
                    }
                }
                TxnKind::Program => {
                    let Some((ppn, pt, mode, changed)) = self.program_page(&t, None) else {
                        return;
                    };
                    let prog = self.timing.program_ns(pt, mode);
                    let encode = self.timing.eccs[t.placement.ecc as usize].encode_ns;
                    if encode > 0 {
                        self.exec.push_phase(die, Phase::Ctrl(encode));
                    }
                    self.exec.push_phase(die, Phase::Bus(xfer));
                    self.exec.push_phase(die, Phase::Array(prog));
                    self.exec.stage_mut(die, 0).ppn = ppn;
                    if self.rg.is_some() {
                        self.count_region_program(t.source, t.placement.region, xfer + prog);
                    }
                    // Static allocation: GC can only become due, or find a victim, when the
                    // pool's blocks changed (dynamic: host overwrites elsewhere may turn a
                    // fully valid victim into a useful one at any time).
                    if changed || self.cfg.ftl.allocation == Allocation::Dynamic {
                        self.maybe_gc(self.ftl.pool(t.plane, t.placement.region));
                    }
                }
                TxnKind::Move => {
                    // A valid source page still holds the LPN it held when the move was queued
                    // (it cannot be reprogrammed before its block is erased), and is that LPN's
                    // target (FTL invariant): no L2P check needed.
                    if self.ftl.page_state(t.ppn) != PageState::Valid {
                        if t.source == Source::Refresh {
                            self.stats.refresh.moves_cancelled += 1;
                            self.refresh_step_done(t.plane);
                        } else {
                            self.stats.gc_moves_cancelled += 1;
                            self.move_done(self.ftl.pool(t.plane, t.placement.region));
                        }
                        continue;
                    }
                    let src_pt = self.layout.page_type[self.ftl.page_index(t.ppn) as usize];
                    let ecc = self.ftl.page_ecc(t.ppn);
                    let rt = self.read_type(t.ppn, src_pt, t.source);
                    let (sense, bus, decode) = self.read_cost(t.ppn, rt, ecc);
                    if self.rg.is_some() {
                        self.count_region_read(t.source, t.ppn, sense + bus + decode);
                    }
                    debug_assert_eq!(self.ftl.lookup(t.lpn), t.ppn);
                    let Some((dst, dst_pt, dst_mode, _)) = self.program_page(&t, Some(t.ppn))
                    else {
                        return;
                    };
                    self.count_read(t.source, ecc, src_pt);
                    if t.source == Source::Refresh {
                        self.stats.refresh.moves_by_page_type[src_pt as usize][dst_pt as usize] +=
                            1;
                        if self.rf_phase[t.plane as usize] == 2 {
                            self.stats.refresh.pages_rewritten += 1;
                        } else {
                            self.stats.refresh.pages_moved += 1;
                        }
                    } else {
                        self.stats.gc_pages_moved += 1;
                        let n = self.timing.eccs.len();
                        self.stats.cache.gc_moves_by_ecc
                            [ecc as usize * n + t.placement.ecc as usize] += 1;
                    }
                    let encode = self.timing.eccs[t.placement.ecc as usize].encode_ns;
                    self.exec.push_phase(die, Phase::Array(sense));
                    if !self.cfg.ftl.copyback {
                        self.exec.push_phase(die, Phase::Bus(bus));
                        self.exec.push_phase(die, Phase::Ctrl(decode + encode));
                        self.exec.push_phase(die, Phase::Bus(xfer));
                    } else if self.cfg.ftl.copyback_decode {
                        // Copy-back through the controller's ECC (spec §1.5): decode and
                        // re-encode, no channel transfer.
                        self.exec.push_phase(die, Phase::Ctrl(decode + encode));
                    }
                    let prog = self.timing.program_ns(dst_pt, dst_mode);
                    self.exec.push_phase(die, Phase::Array(prog));
                    self.exec.stage_mut(die, 0).ppn = dst;
                    if self.rg.is_some() {
                        self.count_region_program(t.source, t.placement.region, xfer + prog);
                    }
                    if t.source == Source::Refresh {
                        self.maybe_gc(t.plane);
                    }
                }
                TxnKind::Adjust => {
                    // IDA §III-B: "we conservatively set the voltage adjustment latency to the
                    // MSB write latency".
                    let mode = self.ftl.page_mode(t.ppn);
                    let adjust = self.timing.program_ns(crate::flash::PageType::Msb, mode);
                    self.exec.push_phase(die, Phase::Array(adjust));
                }
                TxnKind::Erase => {
                    // A superblock's erase is one multi-plane erase of its blocks.
                    for _ in 0..self.ftl.group() {
                        self.stats.flash_erases.add(t.source);
                    }
                    if self.ftl.group() > 1 {
                        self.stats.device.multi_plane_ops[2] += 1;
                        self.stats.device.multi_plane_txns += self.ftl.group() as u64;
                    }
                    if self.rg.is_some() {
                        self.stats.regions.erases[t.placement.region as usize] += 1;
                    }
                    self.exec
                        .push_phase(die, Phase::Array(self.timing.erase_ns));
                }
            }
            self.exec.start(die, 1, tail, now);
            self.prefetch_next(die, &t);
            return;
        }
    }

    /// Prefetch what the run just started (`t`) will touch when it completes, and what the
    /// transactions likely to start next on `die` (the heads of its queues) will touch when
    /// they are dispatched: by then the lines are in cache.
    #[inline]
    fn prefetch_next(&self, die: u32, t: &Txn) {
        if t.owner != NONE {
            crate::prefetch::slice(&self.slots, t.owner as usize);
        }
        for n in self.sched.heads(die) {
            match n.kind {
                TxnKind::Program => self.ftl.prefetch_lpn(n.lpn),
                TxnKind::Read => self.ftl.prefetch_read(n.ppn),
                TxnKind::Move => {
                    self.ftl.prefetch_read(n.ppn);
                    self.ftl.prefetch_lpn(n.lpn);
                }
                TxnKind::Erase | TxnKind::Adjust => {}
            }
        }
    }

    /// Program/erase suspension (`sched.suspension`): a host read is queued at busy `die`;
    /// when the die is programming or erasing (in the array phase) and the operation has been
    /// suspended fewer than `sched.max_suspends_per_op` times, suspend it and return `true`
    /// (the die is then free for the read, which starts with the suspend latency).
    fn maybe_suspend(&mut self, die: u32) -> bool {
        if !self.sched.has_host_read(die) || self.exec.suspends(die) >= self.susp_cap {
            return false;
        }
        let k = match self.exec.txn(die, 0).kind {
            TxnKind::Program => 0,
            TxnKind::Erase => 1,
            _ => return false,
        };
        if !self.exec.suspend(die, self.now, self.susp_ns[2]) {
            return false;
        }
        self.stats.device.suspensions[k] += 1;
        self.susp_prefix_ns = self.susp_ns[k];
        true
    }

    /// Multi-plane operation (`sched.multi_plane`): with `t` (staged as transaction 0 of idle
    /// `die`), take queued transactions of its kind on the die's other planes that can run
    /// with it — reads of the same page offset, host programs whose planes allocate at the
    /// same page offset, erases — and start them as one run: one array time (the longest of
    /// them), the transfers back to back on the channel. Returns `false` (nothing staged
    /// beyond `t`) when no partner is queued; the caller then runs `t` alone.
    ///
    /// Readings (MQSim's multi-plane commands are the model): block offsets may differ
    /// between the planes (parts with independent per-plane block addresses); reads of a
    /// read-modify-write and scheme rewrites run alone; partners are looked for among the
    /// first 8 transactions of `t`'s queue.
    ///
    /// With a mapping unit smaller than the page (`ftl.mapping_unit_bytes`), reads of other
    /// units of a page a partner already senses join too: the page is sensed once and each
    /// unit moves over the channel (the scan looks 8 transactions deep per unit of a page).
    fn multi_plane(&mut self, die: u32, t: &Txn) -> bool {
        let units = self.units as usize;
        let scan = 8 * units;
        let ppd = self.ftl.geo.planes_per_die as usize;
        let kind_idx = match t.kind {
            TxnKind::Read if t.source == Source::Host && !self.is_rmw_read(t.owner) => 0,
            TxnKind::Program if t.source == Source::Host && t.placement.page_type.is_none() => 1,
            TxnKind::Erase => 2,
            _ => return false,
        };
        if t.plane == NONE {
            return false;
        }
        let mut planes: u64 = 1 << (t.plane as usize % ppd);
        let offset = match kind_idx {
            0 => self.ftl.page_index(t.ppn),
            1 => {
                if !self.ftl.can_start(t) {
                    return false;
                }
                match self
                    .ftl
                    .next_page_offset(t.plane, t.placement.region, t.placement.stream)
                {
                    Some(o) => o,
                    None => return false,
                }
            }
            _ => 0,
        };
        let mut n = 1;
        let max = if kind_idx == 0 { ppd * units } else { ppd };
        if units > 1 {
            self.run_page.fill(NONE);
            self.run_page[t.plane as usize % ppd] = t.ppn / units as u32;
        }
        {
            let ftl = &self.ftl;
            let slots = &self.slots;
            let run_page = &mut self.run_page;
            let rmw_on = self.rmw_on;
            let any_offset = self.cfg.sched.independent_plane_reads;
            stage_partners(&mut self.sched, &mut self.exec, die, t, scan, |x| {
                let bit = 1u64 << (x.plane as usize % ppd);
                // Another unit of a page this run already senses on x's plane.
                let same_page = units > 1
                    && kind_idx == 0
                    && x.plane != NONE
                    && run_page[x.plane as usize % ppd] == x.ppn / units as u32;
                let fits = x.plane != NONE
                    && (planes & bit == 0 || same_page)
                    && match kind_idx {
                        0 => {
                            (same_page || any_offset || ftl.page_index(x.ppn) == offset)
                                && !(rmw_on
                                    && slots[x.owner as usize].op == crate::trace::Op::Write)
                        }
                        1 => {
                            x.placement.page_type.is_none()
                                && x.placement.stream == t.placement.stream
                                && ftl.can_start(x)
                                && ftl.next_page_offset(
                                    x.plane,
                                    x.placement.region,
                                    x.placement.stream,
                                ) == Some(offset)
                        }
                        _ => true,
                    };
                if fits {
                    planes |= bit;
                    if units > 1 && kind_idx == 0 {
                        run_page[x.plane as usize % ppd] = x.ppn / units as u32;
                    }
                    n += 1;
                }
                Visit {
                    take: fits,
                    more: n < max,
                }
            });
        }
        if n == 1 {
            return false;
        }
        if planes.count_ones() > 1 {
            // (Units of one page on one plane are one sense, not a multi-plane read.)
            self.stats.device.multi_plane_ops[kind_idx] += 1;
            self.stats.device.multi_plane_txns += n as u64;
        }
        let xfer = self.timing.transfer_ns;
        let (mut array, mut bus, mut tail) = (0u64, 0u64, 0u64);
        if units > 1 {
            self.run_page.fill(NONE);
        }
        for k in 0..n {
            let x = *self.exec.txn(die, k);
            match kind_idx {
                0 => {
                    let pt = self.layout.page_type[self.ftl.page_index(x.ppn) as usize];
                    let ecc = self.ftl.page_ecc(x.ppn);
                    let rt = self.read_type(x.ppn, pt, x.source);
                    let (sense, b, decode) = self.read_cost(x.ppn, rt, ecc);
                    // A block's read count (read disturb) counts senses, one per page.
                    if units == 1 || self.needs_sense(x.plane, x.ppn) {
                        self.ftl.note_read(x.ppn);
                    }
                    self.count_read(x.source, ecc, pt);
                    self.exec.stage_mut(die, k).placement.ecc = ecc;
                    array = array.max(sense);
                    bus += b;
                    tail = tail.max(decode);
                }
                1 => {
                    let Some((ppn, pt, mode, changed)) = self.program_page(&x, None) else {
                        return true;
                    };
                    array = array.max(self.timing.program_ns(pt, mode));
                    bus += xfer;
                    self.exec.stage_mut(die, k).ppn = ppn;
                    if changed || self.cfg.ftl.allocation == Allocation::Dynamic {
                        self.maybe_gc(self.ftl.pool(x.plane, x.placement.region));
                    }
                }
                _ => {
                    self.stats.flash_erases.add(x.source);
                    array = self.timing.erase_ns;
                }
            }
        }
        match kind_idx {
            0 => {
                self.exec.push_phase(die, Phase::Array(array));
                self.exec.push_phase(die, Phase::Bus(bus));
            }
            1 => {
                self.exec.push_phase(die, Phase::Bus(bus));
                self.exec.push_phase(die, Phase::Array(array));
            }
            _ => self.exec.push_phase(die, Phase::Array(array)),
        }
        self.exec.start(die, n, tail, self.now);
        true
    }

    /// One-shot programming (`timing.one_shot_program`): with `t` (a program or a GC move,
    /// staged as transaction 0 of idle `die`), take the queued transactions of its kind
    /// that program the rest of the same word line — the next pages of the same open block
    /// (same plane, stream and region) — and, with `sched.multi_plane`, those that program the
    /// same word line of the die's other planes, and start them as one run: the source
    /// senses (moves; planes in parallel, pages of a plane one after another), the transfers
    /// out, the controller's decode and re-encode, the transfers in, then **one** array
    /// program time (the longest `program_us` of the pages it holds). Returns `false` when `t`
    /// is not a one-shot program (reads, erases, refresh and scheme rewrites with a page
    /// type, moves of a page that is no longer valid): the caller runs it as usual.
    ///
    /// Readings (no public source describes a controller's word-line batching):
    /// * A run takes what is queued when the die becomes free; it does not wait for the rest
    ///   of the word line. A word line a run left partly programmed gets its remaining pages
    ///   in a later run that costs another full one-shot time (a real part cannot add pages
    ///   to a programmed word line; controllers hold the data — nandlab's DRAM write cache
    ///   does, since it acknowledges writes before they are programmed — or pad it). No page
    ///   is padded or wasted.
    /// * Partners are looked for among the first 16 transactions of `t`'s queue, as
    ///   multi-plane partners are (8).
    fn one_shot(&mut self, die: u32, t: &Txn) -> bool {
        const SCAN: usize = 16;
        let (kind_idx, source_ok) = match t.kind {
            // Every program without a page type: host writes and DRAM flushes, backend
            // refills, scheme rewrites and hidden pages.
            TxnKind::Program => (0usize, true),
            TxnKind::Move => (1usize, t.source == Source::Gc),
            _ => return false,
        };
        if !source_ok || t.placement.page_type.is_some() || t.plane == NONE {
            return false;
        }
        if t.kind == TxnKind::Move && self.ftl.page_state(t.ppn) != PageState::Valid {
            return false;
        }
        if !self.ftl.can_start(t) {
            return false;
        }
        let Some(offset) =
            self.ftl
                .next_page_offset(t.plane, t.placement.region, t.placement.stream)
        else {
            return false;
        };
        let bits = self.layout.bits as u32;
        let room = (bits - offset % bits) as u8;
        let ppd = self.ftl.geo.planes_per_die as usize;
        let first_plane = die * ppd as u32;
        let ti = (t.plane - first_plane) as usize;
        // Per plane of the die: pages taken, and whether the plane can join the word line
        // (0 = not asked yet, 1 = yes, 2 = no; t's own plane: yes).
        self.os_taken.fill(0);
        self.os_join.fill(0);
        self.os_taken[ti] = 1;
        self.os_join[ti] = 1;
        let max_ops = ppd * bits as usize;
        let mp_on = self.mp_on;
        // Whether some plane can still take another page of the word line.
        let open = |taken: &[u8], join: &[u8]| {
            (0..ppd).any(|i| taken[i] < room && (i == ti || (mp_on && join[i] != 2)))
        };
        let mut n = 1;
        if n < max_ops && open(&self.os_taken, &self.os_join) {
            let ftl = &self.ftl;
            let taken = &mut self.os_taken;
            let join = &mut self.os_join;
            stage_partners(&mut self.sched, &mut self.exec, die, t, SCAN, |x| {
                let refuse = Visit {
                    take: false,
                    more: true,
                };
                if x.plane == NONE
                    || x.placement.page_type.is_some()
                    || x.placement.stream != t.placement.stream
                    || x.placement.region != t.placement.region
                {
                    return refuse;
                }
                let i = x.plane.wrapping_sub(first_plane) as usize;
                if i >= ppd || taken[i] >= room || (i != ti && !mp_on) {
                    return refuse;
                }
                if x.kind == TxnKind::Move && ftl.page_state(x.ppn) != PageState::Valid {
                    return refuse;
                }
                if join[i] == 0 {
                    // Another plane joins at the same word line (multi-plane, MQSim's rule
                    // of the same page address); the answer holds for the whole run (same
                    // kind, source, stream and region).
                    let ok = ftl.can_start(x)
                        && ftl.next_page_offset(x.plane, x.placement.region, x.placement.stream)
                            == Some(offset);
                    join[i] = if ok { 1 } else { 2 };
                }
                if join[i] != 1 {
                    return refuse;
                }
                taken[i] += 1;
                n += 1;
                Visit {
                    take: true,
                    more: n < max_ops && open(taken, join),
                }
            });
        }
        let planes = self.os_taken.iter().filter(|&&k| k > 0).count();
        self.stats.device.one_shot_ops[kind_idx] += 1;
        self.stats.device.one_shot_pages[kind_idx] += n as u64;
        if planes > 1 {
            self.stats.device.multi_plane_ops[1] += 1;
            self.stats.device.multi_plane_txns += n as u64;
        }
        let xfer = self.timing.transfer_ns;
        let copyback = self.cfg.ftl.copyback;
        let copyback_decode = self.cfg.ftl.copyback_decode;
        // Per plane: the senses of its source pages, one after another.
        self.os_sense.fill(0);
        let (mut prog, mut bus_out, mut ctrl, mut bus_in) = (0u64, 0u64, 0u64, 0u64);
        for k in 0..n {
            let x = *self.exec.txn(die, k);
            let encode = self.timing.eccs[x.placement.ecc as usize].encode_ns;
            if x.kind == TxnKind::Program {
                let Some((ppn, pt, mode, changed)) = self.program_page(&x, None) else {
                    return true;
                };
                prog = prog.max(self.timing.program_ns(pt, mode));
                ctrl += encode;
                bus_in += xfer;
                self.exec.stage_mut(die, k).ppn = ppn;
                if changed || self.cfg.ftl.allocation == Allocation::Dynamic {
                    self.maybe_gc(self.ftl.pool(x.plane, x.placement.region));
                }
            } else {
                let Some(((sense, bus, decode), (dst, dst_pt, dst_mode, _))) = self.run_move(&x)
                else {
                    return true;
                };
                self.os_sense[(x.plane - first_plane) as usize] += sense;
                if !copyback {
                    bus_out += bus;
                    ctrl += decode + encode;
                    bus_in += xfer;
                } else if copyback_decode {
                    ctrl += decode + encode;
                }
                prog = prog.max(self.timing.program_ns(dst_pt, dst_mode));
                self.exec.stage_mut(die, k).ppn = dst;
            }
        }
        self.start_program_run(die, n, [bus_out, ctrl, bus_in, prog]);
        true
    }

    /// Superpage allocation (`ftl.allocation = "superpage"`, [`crate::ftl`]): with `t` (a
    /// program without a page type, or a GC move) staged as transaction 0 of idle `die`, take
    /// the queued transactions of its kind and stream that fill the rest of the die's current
    /// super-page, allocate them in order — the superblock's cursor gives each its plane and
    /// page, every plane of the die at the same word line — pad the slots no transaction fills,
    /// and start one run: the moves' source senses (planes in parallel, a plane's one after
    /// another), the transfers out, the controller's decode and re-encode, the transfers in
    /// (padding included), then **one** array program time (the longest of its pages'). Returns
    /// `false` when `t` is not such a program (erases, reads; a move of a page no longer
    /// valid): the caller runs it as usual.
    ///
    /// Readings (no public source describes a controller's super-page assembly): partners
    /// are looked for among the first 64 transactions of `t`'s queue; padding is programmed
    /// with dummy data, so it costs a transfer per page like data (a conservative reading:
    /// some parts fill the page register internally); a host program that has waited
    /// `ftl.superpage_wait_us` runs padded rather than wait longer (the hold is in
    /// [`Engine::dispatch`]).
    fn superpage(&mut self, die: u32, t: &Txn) -> bool {
        const SCAN: usize = 64;
        let kind_idx = match t.kind {
            TxnKind::Program => 0usize,
            TxnKind::Move if t.source == Source::Gc => 1usize,
            _ => return false,
        };
        if t.placement.page_type.is_some() {
            self.fail(format!(
                "scheme `{}` places pages by page type, which superpage allocation does not \
                 model (a super-page is written in one order); use ftl.allocation = \"static\"",
                self.scheme.name()
            ));
            return true;
        }
        if t.kind == TxnKind::Move && self.ftl.page_state(t.ppn) != PageState::Valid {
            return false;
        }
        let pool = self.ftl.pool(t.plane, t.placement.region);
        let stream = t.placement.stream;
        let room = self.ftl.superpage_room(pool, stream, false) as usize;
        if room == 0 {
            return false;
        }
        let mut n = 1usize;
        if room > 1 {
            let ftl = &self.ftl;
            stage_partners(&mut self.sched, &mut self.exec, die, t, SCAN, |x| {
                let ok = x.kind == t.kind
                    && x.placement.page_type.is_none()
                    && x.placement.stream == stream
                    && x.placement.region == t.placement.region
                    && (x.kind != TxnKind::Move
                        || (x.source == Source::Gc && ftl.page_state(x.ppn) == PageState::Valid));
                if ok {
                    n += 1;
                }
                Visit {
                    take: ok,
                    more: n < room,
                }
            });
        }
        let xfer = self.timing.transfer_ns;
        let ppd = self.ftl.geo.planes_per_die;
        let first_plane = die * ppd;
        self.os_sense.fill(0);
        if self.units > 1 {
            self.run_page.fill(NONE);
        }
        let (mut prog, mut bus_out, mut ctrl, mut bus_in) = (0u64, 0u64, 0u64, 0u64);
        let mut planes: u64 = 0;
        let mut changed_any = false;
        for k in 0..n {
            let x = *self.exec.txn(die, k);
            let encode = self.timing.eccs[x.placement.ecc as usize].encode_ns;
            if x.kind == TxnKind::Program {
                let Some((ppn, pt, mode, changed)) = self.program_page(&x, None) else {
                    return true;
                };
                prog = prog.max(self.timing.program_ns(pt, mode));
                ctrl += encode;
                bus_in += xfer;
                planes |= 1 << (self.ftl.plane_of_ppn(ppn) - first_plane);
                self.exec.stage_mut(die, k).ppn = ppn;
                changed_any |= changed;
            } else {
                let Some(((sense, bus, decode), (dst, dst_pt, dst_mode, changed))) =
                    self.run_move(&x)
                else {
                    return true;
                };
                // The units of one source page share its sense (the victim's valid units are
                // queued in page order).
                let src_plane = self.ftl.plane_of_ppn(x.ppn);
                if self.units == 1 || self.needs_sense(src_plane, x.ppn) {
                    self.os_sense[(src_plane - first_plane) as usize] += sense;
                }
                // No copyback with superpages (the config refuses it: the copy changes plane).
                bus_out += bus;
                ctrl += decode + encode;
                bus_in += xfer;
                prog = prog.max(self.timing.program_ns(dst_pt, dst_mode));
                planes |= 1 << (self.ftl.plane_of_ppn(dst) - first_plane);
                self.exec.stage_mut(die, k).ppn = dst;
                changed_any |= changed;
            }
        }
        // Complete the super-page with padding.
        let pads = room.saturating_sub(n);
        for _ in 0..pads {
            match self.ftl.allocate_pad(pool, stream, self.now) {
                Ok((ppn, changed)) => {
                    let pt = self.layout.page_type[self.ftl.page_index(ppn) as usize];
                    prog = prog.max(self.timing.program_ns(pt, 0));
                    bus_in += xfer;
                    planes |= 1 << (self.ftl.plane_of_ppn(ppn) - first_plane);
                    changed_any |= changed;
                }
                Err(_) => {
                    self.fail(format!(
                        "internal error: no page to pad the super-page of die {die}"
                    ));
                    return true;
                }
            }
        }
        if kind_idx == 0 {
            // What is left queued starts a new wait (an approximation: it may have arrived
            // earlier).
            self.sp_since[die as usize] = if self.sched.writes_queued(die) > 0 {
                self.now
            } else {
                u64::MAX
            };
        }
        let d = &mut self.stats.device;
        d.superpage_runs[kind_idx] += 1;
        d.superpage_pages[kind_idx] += n as u64;
        d.superpage_padded_pages[kind_idx] += pads as u64;
        if planes.count_ones() > 1 {
            d.superpage_multi_plane_pages[kind_idx] += n as u64;
            d.multi_plane_ops[1] += 1;
            d.multi_plane_txns += n as u64;
        }
        if self.os_on {
            d.one_shot_ops[kind_idx] += 1;
            d.one_shot_pages[kind_idx] += n as u64;
        }
        if changed_any {
            self.maybe_gc(pool);
        }
        self.start_program_run(die, n, [bus_out, ctrl, bus_in, prog]);
        true
    }

    /// Mapping units (`ftl.mapping_unit_bytes`): whether reading FTL page `ppn` on `plane`
    /// needs a sense of its own — its flash page is not the one the run's last sense on that
    /// plane read (`run_page`, reset by the caller at the start of a run) — and remember it.
    #[inline]
    fn needs_sense(&mut self, plane: u32, ppn: u32) -> bool {
        let i = (plane % self.ftl.geo.planes_per_die) as usize;
        let page = ppn / self.units;
        let new = self.run_page[i] != page;
        self.run_page[i] = page;
        new
    }

    /// Start the staged run of `n` transactions on `die` that ends in one array program (a
    /// one-shot word line or a super-page): the longest plane's senses (`os_sense`, moves'
    /// sources), the moved pages out over the bus, the controller's decode/encode, the pages in
    /// over the bus, then the program. Zero-length phases are left out.
    fn start_program_run(&mut self, die: u32, n: usize, [bus_out, ctrl, bus_in, prog]: [u64; 4]) {
        let sense = self.os_sense.iter().copied().max().unwrap_or(0);
        if sense > 0 {
            self.exec.push_phase(die, Phase::Array(sense));
        }
        if bus_out > 0 {
            self.exec.push_phase(die, Phase::Bus(bus_out));
        }
        if ctrl > 0 {
            self.exec.push_phase(die, Phase::Ctrl(ctrl));
        }
        if bus_in > 0 {
            self.exec.push_phase(die, Phase::Bus(bus_in));
        }
        self.exec.push_phase(die, Phase::Array(prog));
        self.exec.start(die, n, 0, self.now);
    }

    /// One GC move of a multi-page run (one-shot or superpage): the read cost of its source
    /// page (sense, transfer out, decode), then the program of its copy
    /// ([`Engine::program_page`]), counting the read and the move by (source, target) ECC.
    /// `None` when the program failed (the run has failed).
    #[inline]
    fn run_move(&mut self, x: &Txn) -> Option<((u64, u64, u64), ProgrammedPage)> {
        let src_pt = self.layout.page_type[self.ftl.page_index(x.ppn) as usize];
        let ecc = self.ftl.page_ecc(x.ppn);
        let rt = self.read_type(x.ppn, src_pt, x.source);
        let cost = self.read_cost(x.ppn, rt, ecc);
        let programmed = self.program_page(x, Some(x.ppn))?;
        self.count_read(x.source, ecc, src_pt);
        self.stats.gc_pages_moved += 1;
        let ne = self.timing.eccs.len();
        self.stats.cache.gc_moves_by_ecc[ecc as usize * ne + x.placement.ecc as usize] += 1;
        Some((cost, programmed))
    }

    /// Allocate and program the page of a program (`src` = `None`) or move (`src` = the valid
    /// page it relocates) transaction at dispatch; counts the program. Returns the new PPN, its
    /// page type and mode, and whether the pool's blocks changed (`None` after an internal
    /// error).
    fn program_page(&mut self, t: &Txn, src: Option<u32>) -> Option<ProgrammedPage> {
        let source = t.source;
        // With regions, scheme migrations may not take a pool's last free block either.
        // Nor may a scheme's hidden pages (redundant pages: they would starve GC).
        let host = source == Source::Host
            || source == Source::Mapping
            || (source == Source::Migration
                && (self.rg.is_some() || t.lpn as u64 >= self.logical_pages));
        let Ok((ppn, changed)) = self.ftl.allocate_typed(
            t.plane,
            t.placement.region,
            t.placement.stream,
            host,
            self.now,
            t.placement.page_type,
        ) else {
            self.fail(format!(
                "internal error: {source:?} program dispatched on plane {}{} without space",
                t.plane,
                self.region_note(t.placement.region)
            ));
            return None;
        };
        let time_s = (self.now / 1_000_000_000) as i32;
        let mode = self.region_mode(t.placement);
        match src {
            None => self.ftl.program(ppn, t.lpn, mode, t.placement.ecc, time_s),
            Some(src) => self.ftl.relocate(src, ppn, mode, t.placement.ecc, time_s),
        }
        // A cached mapping table: a move or a rewrite changes the page's entry (a host
        // write's entry was dirtied when it was issued; translation pages are in the GTD).
        if self.map.is_some() && (src.is_some() || source != Source::Host) {
            self.map_moved(t.lpn);
        }
        if !self.faults.is_empty() {
            self.fault_program(t.lpn, src, ppn);
        }
        self.stats.flash_programs.add(source);
        self.stats.programs_by_mode[mode as usize] += 1;
        Some((
            ppn,
            self.layout.page_type[self.ftl.page_index(ppn) as usize],
            mode,
            changed,
        ))
    }
}

/// Take from `die`'s queue the partners of `t` (staged as transaction 0) that `visit` accepts
/// ([`crate::sched::Sched::take_partners`]) and stage them as transactions 1, 2, … of the
/// die's next run, oldest first.
#[inline]
fn stage_partners(
    sched: &mut crate::sched::Sched,
    exec: &mut crate::exec::Executor,
    die: u32,
    t: &Txn,
    scan: usize,
    visit: impl FnMut(&Txn) -> Visit,
) {
    let mut k = 1;
    sched.take_partners(die, t, scan, visit, |p| {
        exec.stage(die, k, p);
        k += 1;
    });
}
