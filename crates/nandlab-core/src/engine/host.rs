//! The host side of the replay: a request's arrival split into page transactions (reads,
//! programs, read-modify-write reads, DRAM-cache hits and writes, trims), the super-page hold
//! of host writes, the prefetches ahead of arrivals, and a request's completion (its latency
//! record and request-log line).

use std::io::Write;

use super::{dram, Engine, HostSlot, WrappingLpns, EV_HOST, EV_LINK, EV_SP_HOLD};
use crate::config::{Allocation, ReplayMode};
use crate::error::NandlabError;
use crate::ftl::{NONE, UNMAPPED};
use crate::host::cache::CacheOp;
use crate::sched::TxnKind;
use crate::scheme::{Placement, Source};
use crate::trace::{HostRequest, Op};

impl Engine {
    /// Prefetch the per-page state a read that arrives next will touch on dispatch (its L2P
    /// entries were prefetched when it was read ahead).
    #[inline(always)]
    pub(super) fn prefetch_pages(&self, r: &HostRequest) {
        let read = r.op == Op::Read;
        if !read && !self.scheme_prefetch {
            return;
        }
        let first = r.offset_bytes / self.page_size;
        let last = (r.offset_bytes + r.len_bytes.max(1) - 1) / self.page_size;
        for lpn in first..=last.min(first + 15) {
            let lpn = (lpn % self.logical_pages) as u32;
            if read {
                self.ftl.prefetch_mapped(lpn);
            }
            if self.scheme_prefetch {
                self.scheme.prefetch_mapped(lpn, read, &self.ftl);
            }
        }
    }

    /// The host's requests have all arrived: no die holds its writes for a fuller super-page
    /// any more.
    pub(super) fn input_ended(&mut self) {
        self.input_done = true;
        if self.sp_on && self.sp_wait_ns > 0 {
            for d in 0..self.exec.dies() {
                self.dispatch(d);
            }
        }
    }

    /// Superpage allocation: whether `die` holds its queued host writes now — fewer than the
    /// super-page's free slots are queued, they have waited less than `ftl.superpage_wait_us`,
    /// and more may come — so that they fill a super-page instead of a padded one (firmware
    /// keeps them in its write buffer). Sets the expiry timer of a new wait.
    pub(super) fn superpage_hold(&mut self, die: u32) -> bool {
        let d = die as usize;
        let q = self.sched.writes_queued(die);
        if q == 0 {
            self.sp_since[d] = u64::MAX;
            return false;
        }
        if self.input_done {
            return false;
        }
        if self.sp_since[d] == u64::MAX {
            self.sp_since[d] = self.now;
        }
        let pool = self.ftl.pool(die * self.ftl.geo.planes_per_die, 0);
        let room = self.ftl.superpage_room(pool, 0, false) as usize;
        let deadline = self.sp_since[d].saturating_add(self.sp_wait_ns);
        if q >= room || self.now >= deadline {
            return false;
        }
        if !self.sp_armed[d] {
            self.sp_armed[d] = true;
            self.stats.device.superpage_holds += 1;
            self.push(deadline, EV_SP_HOLD | die as u64);
        }
        true
    }

    /// Prefetch the L2P entries of a request read ahead (its reads look them up on arrival,
    /// its writes when they are dispatched).
    #[inline]
    pub(super) fn prefetch_request(&self, r: &HostRequest) {
        let first = r.offset_bytes / self.page_size;
        let last = (r.offset_bytes + r.len_bytes.max(1) - 1) / self.page_size;
        // One prefetch per 64-byte line of 16 entries.
        let mut lpn = first;
        while lpn <= last {
            let l = (lpn % self.logical_pages) as u32;
            self.ftl.prefetch_lpn(l);
            if self.scheme_prefetch {
                self.scheme.prefetch_lpn(l);
            }
            lpn = (lpn | 15) + 1;
        }
    }

    pub(super) fn on_arrival(&mut self, r: HostRequest, tag: CacheOp) -> Result<(), NandlabError> {
        self.last_arrival_ns = r.arrival_ns;
        let logical_bytes = self.logical_pages * self.page_size;
        let mut offset = r.offset_bytes;
        if offset.saturating_add(r.len_bytes) > logical_bytes {
            if self.cfg.ftl.wrap_offsets {
                offset %= logical_bytes;
                self.stats.wrapped_requests += 1;
                if let Some(f) = self.flow_rt.as_mut() {
                    f.stats[self.arriving_flow as usize].wrapped_requests += 1;
                }
            } else {
                return Err(NandlabError::Sim(format!(
                    "request at offset {} bytes (+{} bytes, arrival {} ns) ends beyond the \
                     logical capacity of {} bytes; set ftl.wrap_offsets = true or a larger \
                     device.logical_capacity_bytes",
                    r.offset_bytes, r.len_bytes, r.arrival_ns, logical_bytes
                )));
            }
        }
        if tag != CacheOp::None && r.op != tag.op() {
            // The latency classes are merged from the tags by the tag's operation.
            return Err(NandlabError::Sim(format!(
                "internal error: a {:?} request tagged {} (a {:?} tag)",
                r.op,
                tag.name(),
                tag.op()
            )));
        }
        if r.op == Op::Trim {
            self.trim(offset, r.len_bytes);
            return Ok(());
        }
        let slot = self.alloc_slot(HostSlot {
            arrival_ns: r.arrival_ns.min(self.now),
            offset_bytes: r.offset_bytes,
            len_bytes: r.len_bytes,
            op: r.op,
            pending: 0,
            done_ns: self.now,
            service_ns: 0,
            tag,
            link_ns: 0,
            link_done: false,
            flow: self.arriving_flow,
        });
        self.in_flight += 1;
        if let Some(f) = self.flow_rt.as_mut() {
            f.outstanding[self.arriving_flow as usize] += 1;
        }
        if let Some(link) = self.link.as_mut() {
            // The command (and a write's data) crosses the host link first: the device sees
            // it when that transfer ends (`host::link`).
            let (at, xfer) = link.submit(self.now, r.op, r.len_bytes);
            self.slots[slot as usize].link_ns = xfer.min(u32::MAX as u64) as u32;
            self.push(at, EV_LINK | slot as u64);
            return Ok(());
        }
        self.at_device(slot, offset);
        Ok(())
    }

    /// Host request `slot` reaches the device (at its arrival, or when its downstream link
    /// transfer ends): count it, run the scheme's arrival hooks and the cached mapping table's
    /// lookups, and queue its page transactions.
    #[inline]
    pub(super) fn at_device(&mut self, slot: u32, offset: u64) {
        let HostSlot {
            op,
            len_bytes,
            tag,
            flow,
            ..
        } = self.slots[slot as usize];
        let span = self.pager.span(offset, len_bytes);
        self.stats.count_request(op, len_bytes, span.pages);
        if let Some(f) = self.flow_rt.as_mut() {
            f.stats[flow as usize].count_request(op, len_bytes, span.pages);
        }
        self.actions.clear();
        let first = (span.first_lpn % self.logical_pages) as u32;
        if tag != CacheOp::None {
            self.scheme.on_cache_op(tag, first, span.pages as u32);
        }
        self.scheme.on_host_request(op, first, span.pages as u32);
        let ctx = scheme_ctx!(self);
        self.scheme
            .on_request(op, first, span.pages as u32, &ctx, &mut self.actions);
        if self.map.is_some() {
            // A cached mapping table: the request's flash operations wait for the translation
            // reads its CMT misses need (`mapping.rs`).
            if self.map_lookup(slot, first, span.pages as u32, offset) {
                self.run_actions(slot);
                return;
            }
            self.map_insert(slot, first, span.pages as u32);
        }
        self.issue_pages(slot, offset, first, span.pages);
    }

    /// The downstream link transfer of host request `slot` ended (`EV_LINK`): it reaches the
    /// device, at its offset within the logical capacity (wrapped as at its arrival).
    pub(super) fn link_arrived(&mut self, slot: u32) {
        let s = &self.slots[slot as usize];
        let logical_bytes = self.logical_pages * self.page_size;
        let mut offset = s.offset_bytes;
        if offset.saturating_add(s.len_bytes) > logical_bytes {
            // `on_arrival` accepted it: ftl.wrap_offsets is on
            offset %= logical_bytes;
        }
        self.at_device(slot, offset);
    }

    /// Queue the page transactions of host request `slot` (`pages` LPNs from `first`, wrapping;
    /// `offset` its offset within the logical capacity) after its arrival's hooks: reads,
    /// programs, read-modify-write reads, DRAM-cache hits and writes; then the scheme's actions,
    /// and the request's completion when nothing is left to wait for.
    pub(super) fn issue_pages(&mut self, slot: u32, offset: u64, first: u32, pages: u64) {
        let (op, len_bytes) = {
            let s = &self.slots[slot as usize];
            (s.op, s.len_bytes)
        };
        // Read-modify-write: the first and last pages of a write may be partial.
        let head_partial = !offset.is_multiple_of(self.page_size);
        let tail_partial = !(offset + len_bytes).is_multiple_of(self.page_size);
        // LPNs from `first`, wrapping at the logical capacity.
        for (k, lpn) in WrappingLpns::new(first, pages, self.logical_pages) {
            match op {
                Op::Read => {
                    if let Some(d) = self.dram.as_mut() {
                        if d.read(lpn) {
                            let t = self.now + d.access_ns;
                            self.slot_done_at(slot, t);
                            continue;
                        }
                    }
                    let ppn = self.ftl.lookup(lpn);
                    if ppn == UNMAPPED {
                        self.stats.unmapped_read_pages += 1;
                        if let Some(f) = self.flow_rt.as_mut() {
                            let flow = self.slots[slot as usize].flow;
                            f.stats[flow as usize].unmapped_read_pages += 1;
                        }
                        continue;
                    }
                    if !self.faults.is_empty() && self.known_corrupt_disk_read(lpn, ppn, slot) {
                        continue;
                    }
                    let ctx = scheme_ctx!(self);
                    self.scheme.on_host_read(lpn, ppn, &ctx, &mut self.actions);
                    self.slots[slot as usize].pending += 1;
                    let die = self.enqueue_read(Source::Host, lpn, ppn, slot);
                    if self.mp_on {
                        self.mp_dies.push(die);
                    } else {
                        self.dispatch(die);
                    }
                }
                Op::Write => {
                    let ctx = scheme_ctx!(self);
                    self.scheme.on_host_write(lpn, &ctx);
                    if self.rmw_on
                        && ((k == 0 && head_partial) || (k + 1 == pages && tail_partial))
                        && !self.dram.as_ref().is_some_and(|d| d.cached(lpn))
                        && self.rmw_read(lpn, slot)
                    {
                        continue;
                    }
                    if self.dram.is_some() {
                        self.dram_write(lpn, slot, false);
                        continue;
                    }
                    let ctx = scheme_ctx!(self);
                    let pl = self.scheme.placement(lpn, Source::Host, &ctx);
                    if !self.placement_ok(pl) {
                        continue;
                    }
                    self.slots[slot as usize].pending += 1;
                    self.queue_host_program(lpn, slot, pl, NONE);
                }
                Op::Trim => {}
            }
        }
        // (Trims returned above.) Multi-plane: dispatch once every page is queued.
        if self.mp_on {
            while let Some(d) = self.mp_dies.pop() {
                self.dispatch(d);
            }
        }
        // Synchronous rewrites join the request before it can complete.
        self.run_actions(slot);
        if self.slots[slot as usize].pending == 0 {
            let done = self.slots[slot as usize].done_ns;
            if done > self.now {
                // Served from the DRAM cache: done after its access time.
                self.push(done, EV_HOST | slot as u64);
            } else {
                self.finish_host(slot);
            }
        }
    }

    /// Queue the program of host page `lpn` of request `slot` (whose `pending` already counts
    /// it) and dispatch the die(s) that may take it, except `skip` (a die that dispatches
    /// itself next).
    #[inline]
    fn queue_host_program(&mut self, lpn: u32, slot: u32, pl: Placement, skip: u32) {
        let plane = match self.cfg.ftl.allocation {
            Allocation::Static | Allocation::Superpage => {
                self.ftl.plane_for_write_in(lpn, pl.region)
            }
            Allocation::Dynamic => NONE,
        };
        let die = self
            .sched
            .enqueue(TxnKind::Program, Source::Host, lpn, NONE, plane, slot, pl);
        if die == NONE {
            for d in 0..self.exec.dies() {
                if d != skip {
                    self.dispatch(d);
                }
            }
        } else if die != skip {
            if self.mp_on && skip == NONE {
                self.mp_dies.push(die);
            } else {
                self.dispatch(die);
            }
        }
    }

    /// Read-modify-write of a partial host write to page `lpn` of request `slot`: when the
    /// page is mapped, queue a host-priority read of it (its completion queues the program,
    /// [`Engine::rmw_program`]) and return `true`; an unmapped page has nothing to merge
    /// (`false`: program at once).
    fn rmw_read(&mut self, lpn: u32, slot: u32) -> bool {
        let ppn = self.ftl.lookup(lpn);
        if ppn == UNMAPPED {
            self.stats.device.rmw_unmapped += 1;
            return false;
        }
        self.stats.device.rmw_reads += 1;
        self.slots[slot as usize].pending += 1;
        let r = &mut self.rmw[slot as usize];
        let free = usize::from(r[0].0 != NONE);
        r[free] = (lpn, 0);
        let die = self.enqueue_read(Source::Host, lpn, ppn, slot);
        self.dispatch(die);
        true
    }

    /// The read of a read-modify-write (on die `die`) ended and its data is decoded: program
    /// the merged page. The placement is asked now, when the data to program exists.
    pub(super) fn rmw_program(&mut self, lpn: u32, slot: u32, die: u32) {
        let ctx = scheme_ctx!(self);
        if self.dram.is_some() {
            // The merged page enters the DRAM cache.
            self.dram_write(lpn, slot, true);
            return;
        }
        let pl = self.scheme.placement(lpn, Source::Host, &ctx);
        if !self.placement_ok(pl) {
            self.host_page_done(slot, self.now, 0);
            return;
        }
        self.queue_host_program(lpn, slot, pl, die);
    }

    /// A page of request `slot` is served at `t_ns` without a flash operation (a DRAM hit
    /// while the request is still being split: its `pending` is not involved).
    #[inline]
    fn slot_done_at(&mut self, slot: u32, t_ns: u64) {
        let s = &mut self.slots[slot as usize];
        s.done_ns = s.done_ns.max(t_ns);
        s.service_ns = s.service_ns.max(t_ns - self.now);
    }

    /// Host write of page `lpn` of request `slot` into the DRAM cache ([`dram`]); `counted`:
    /// the request's `pending` already counts the page (after an RMW read), else it is being
    /// split now.
    fn dram_write(&mut self, lpn: u32, slot: u32, counted: bool) {
        let d = self.dram.as_mut().expect("dram on");
        let access = d.access_ns;
        match d.write(lpn) {
            Some(e) => {
                if counted {
                    // `counted`: after an RMW read (RMW on).
                    let service = access + self.rmw_service(slot, lpn);
                    self.host_page_done(slot, self.now + access, service);
                } else {
                    self.slot_done_at(slot, self.now + access);
                }
                if e != NONE {
                    // While a request is split (not `counted`) its dies dispatch after it;
                    // after an RMW read (`counted`) every die is dispatched now (no die of
                    // that number exists to skip).
                    self.queue_flush(e, if counted { NONE - 1 } else { NONE });
                }
            }
            None => {
                d.backpressure_waits += 1;
                d.waiting.push_back((lpn, slot));
                if !counted {
                    self.slots[slot as usize].pending += 1;
                }
            }
        }
    }

    /// Queue the flash program of DRAM entry `e` (owner `FLUSH | e`); `skip` as in
    /// [`Engine::queue_host_program`].
    fn queue_flush(&mut self, e: u32, skip: u32) {
        let lpn = self.dram.as_ref().expect("dram on").lpn_of(e);
        let ctx = scheme_ctx!(self);
        let pl = self.scheme.placement(lpn, Source::Host, &ctx);
        if !self.placement_ok(pl) {
            return;
        }
        self.queue_host_program(lpn, dram::FLUSH | e, pl, skip);
    }

    /// The flush of DRAM entry `e` ended on die `die`: flush it again if it was rewritten,
    /// and give freed entries to writes waiting for one.
    pub(super) fn dram_flushed(&mut self, e: u32, die: u32) {
        let mut d = self.dram.as_mut().expect("dram on");
        if d.flushed(e) {
            self.queue_flush(e, die);
            return;
        }
        while let Some(&(lpn, slot)) = d.waiting.front() {
            let Some(x) = d.write(lpn) else {
                break;
            };
            d.waiting.pop_front();
            let access = d.access_ns;
            let service = access + self.rmw_service(slot, lpn);
            self.host_page_done(slot, self.now + access, service);
            if x != NONE {
                self.queue_flush(x, die);
            }
            d = self.dram.as_mut().expect("dram on");
        }
    }

    /// The service time of the read-modify-write read of page `lpn` of request `slot` (0 when
    /// the page had none, or RMW is off), to be added to the service of the page's program or
    /// DRAM write.
    #[inline]
    pub(super) fn rmw_service(&self, slot: u32, lpn: u32) -> u64 {
        if !self.rmw_on {
            return 0;
        }
        self.rmw[slot as usize]
            .iter()
            .find(|r| r.0 == lpn)
            .map_or(0, |r| r.1)
    }

    /// The read-modify-write read of page `lpn` of request `slot` took `service_ns`.
    #[inline]
    pub(super) fn rmw_read_done(&mut self, slot: u32, lpn: u32, service_ns: u64) {
        if let Some(r) = self.rmw[slot as usize].iter_mut().find(|r| r.0 == lpn) {
            r.1 = service_ns;
        }
    }

    /// Whether a host-sourced read of request `owner` is the read of a read-modify-write.
    #[inline]
    pub(super) fn is_rmw_read(&self, owner: u32) -> bool {
        self.rmw_on && self.slots[owner as usize].op == Op::Write
    }

    /// A discard of `len_bytes` at `offset_bytes` (already wrapped): unmap every page it
    /// covers whole (a partial page keeps its data, as SSDs do); the invalidated pages are
    /// free space to GC. Takes no flash time and completes at once (not in the latency
    /// classes); counted in `sim.trim_*`. It applies to the mapping at its arrival: a write to
    /// the range still queued then lands after it (hosts order a discard after the writes it
    /// covers have completed).
    fn trim(&mut self, offset_bytes: u64, len_bytes: u64) {
        let ps = self.page_size;
        let first = offset_bytes.div_ceil(ps);
        let end = (offset_bytes + len_bytes) / ps;
        self.stats.device.trim_requests += 1;
        self.stats.device.trim_bytes += len_bytes;
        for lpn in first..end {
            let lpn = (lpn % self.logical_pages) as u32;
            if let Some(d) = self.dram.as_mut() {
                d.trim(lpn);
            }
            if self.ftl.trim(lpn) {
                self.stats.device.trimmed_pages += 1;
                // A cached mapping table: the entry changed (unmapped).
                self.map_moved(lpn);
            }
        }
        if self.cfg.host.mode == ReplayMode::Closed {
            self.to_issue += 1;
        }
    }

    #[inline]
    pub(super) fn placement_ok(&mut self, pl: Placement) -> bool {
        let l = self.placement_limit;
        if pl.stream < l.stream && pl.mode < l.mode && pl.ecc < l.ecc && pl.region < l.region {
            return true;
        }
        self.bad_placement(pl)
    }

    #[cold]
    fn bad_placement(&mut self, pl: Placement) -> bool {
        let msg = format!(
            "scheme `{}` returned placement {pl:?} outside ftl.streams = {}, {} program modes, \
             {} ECC kinds, {} regions",
            self.scheme.name(),
            self.cfg.ftl.streams,
            self.timing.modes.len(),
            self.timing.eccs.len(),
            self.ftl.regions()
        );
        self.fail(msg);
        false
    }

    fn alloc_slot(&mut self, s: HostSlot) -> u32 {
        let i = match self.free_slots.pop() {
            Some(i) => {
                self.slots[i as usize] = s;
                i
            }
            None => {
                self.slots.push(s);
                if self.rmw_on {
                    self.rmw.push([(NONE, 0); 2]);
                }
                (self.slots.len() - 1) as u32
            }
        };
        if self.rmw_on {
            self.rmw[i as usize] = [(NONE, 0); 2];
        }
        i
    }

    #[inline]
    pub(super) fn host_page_done(&mut self, slot: u32, done_ns: u64, service_ns: u64) {
        let s = &mut self.slots[slot as usize];
        s.pending -= 1;
        s.done_ns = s.done_ns.max(done_ns);
        s.service_ns = s.service_ns.max(service_ns);
        if s.pending == 0 {
            if s.done_ns > self.now {
                let t = s.done_ns;
                self.push(t, EV_HOST | slot as u64);
            } else {
                self.finish_host(slot);
            }
        }
    }

    pub(super) fn finish_host(&mut self, slot: u32) {
        if let Some(link) = self.link.as_mut() {
            let s = &mut self.slots[slot as usize];
            if !s.link_done {
                // The device is done: the completion (and a read's data) crosses the link,
                // and the host sees it when that transfer ends.
                let (at, xfer) = link.complete(self.now.max(s.done_ns), s.op, s.len_bytes);
                s.link_done = true;
                s.link_ns = s.link_ns.saturating_add(xfer.min(u32::MAX as u64) as u32);
                s.done_ns = at;
                self.push(at, EV_HOST | slot as u64);
                return;
            }
        }
        let s = self.slots[slot as usize];
        let response = s.done_ns - s.arrival_ns;
        self.stats.last_completion_ns = self.stats.last_completion_ns.max(s.done_ns);
        // A cached mapping table's translation reads are service too (0 without one), and so
        // is the host link's transfer time.
        let service = (s.service_ns + self.map_service_ns(slot) + s.link_ns as u64).min(response);
        let wait = response - service;
        if let Some(ts) = self.stats.timeseries.as_mut() {
            ts.host_done(s.op == Op::Read, s.arrival_ns, s.done_ns, s.len_bytes);
        }
        // Trims never hold a slot (`on_arrival` serves them at once). One record per request:
        // under its tag, or its class when untagged; report time merges (Stats::reads).
        if let Some(f) = self.flow_rt.as_mut() {
            // Concurrent flows: recorded per flow only; the run's distributions are their
            // union, merged (exactly) when the replay ends (`flows.rs`).
            f.completed(s.flow, s.op != Op::Read, s.done_ns, response, wait, service);
        } else {
            self.stats
                .record_host(s.op != Op::Read, s.tag, response, wait, service);
        }
        if let Some(w) = self.log.as_mut() {
            let op = if s.op == Op::Read { 'R' } else { 'W' };
            if let Err(err) = writeln!(
                w,
                "{},{},{},{},{},{},{}",
                s.arrival_ns, op, s.offset_bytes, s.len_bytes, wait, service, response
            ) {
                self.log = None;
                self.fail(format!("stats.request_log: {err}"));
            }
        }
        self.free_slots.push(slot);
        self.completed += 1;
        self.in_flight -= 1;
        if self.cfg.host.mode == ReplayMode::Closed {
            self.to_issue += 1;
        }
    }
}
