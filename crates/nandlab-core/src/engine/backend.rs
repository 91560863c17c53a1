//! Cache-mode engine features (FlexECC, issue 14), general to every scheme: idle time handed
//! to the scheme, verify-only checks, the backend disk (fixed latency `cache.disk_us`,
//! unbounded concurrency), fetch-then-CleanWrite, and fault injection (`[faults]`,
//! [`crate::reliability::faults`]).
//!
//! Backend fetches, refills and GC share the scheduler's background FIFO (spec §3 item 12).

use super::{Engine, EV_BACKEND, EV_DISK_READ, EV_FAULT};
use crate::ftl::{NONE, UNMAPPED};
use crate::host::cache::CacheOp;
use crate::reliability::faults::Fault;
use crate::scheme::Source;

impl Engine {
    /// Set the scaled span over which `[faults]` injections are spread, ns (the API sets it
    /// to the last arrival × `host.time_scale`; 0 = all at the start), and the LPN space they
    /// are drawn from (the cache slots; default the logical capacity).
    pub fn set_fault_space(&mut self, span_ns: u64, pages: u64) {
        self.fault_span_ns = span_ns;
        if let Some(p) = self.fault_plan.as_mut() {
            p.1 = pages.min(self.logical_pages) / p.0;
            self.fault_pages = pages.min(self.logical_pages);
        }
    }

    /// The corrupted pages now: (LPN, PPN, known).
    pub fn corrupted_pages(&self) -> Vec<(u32, u32, bool)> {
        self.faults
            .iter()
            .map(|(&l, f)| (l, f.ppn, f.known))
            .collect()
    }

    /// Open loop: the gap before the next arrival is `gap_ns` (> the scheme's threshold).
    pub(super) fn idle(&mut self, gap_ns: u64) {
        self.stats.cache.idle_calls += 1;
        self.stats.cache.idle_ns += gap_ns;
        self.actions.clear();
        let ctx = scheme_ctx!(self);
        self.scheme.on_idle(gap_ns, &ctx, &mut self.actions);
        self.run_actions(NONE);
    }

    /// [`crate::scheme::Action::Verify`]: corrupted pages of a detect-only code among `count`
    /// LPNs from `first` become known and are reported to the scheme.
    pub(super) fn verify(&mut self, first: u32, count: u32) {
        let n = self.logical_pages as u32;
        let count = count.min(n);
        self.stats.cache.verified_pages += count as u64;
        if count == 0 {
            return;
        }
        let first = first % n;
        if self.model_faults {
            // Model mode: the copies' errors exist once the reliability model says so; the
            // check finds those of the detect-only pages in the range.
            for k in 0..count {
                let lpn = ((first as u64 + k as u64) % n as u64) as u32;
                let ppn = self.ftl.lookup(lpn);
                if ppn != UNMAPPED && self.timing.eccs[self.ftl.page_ecc(ppn) as usize].detect_only
                {
                    if let Some(unc) = self.model_copy_errors(ppn) {
                        self.model_fault(ppn, unc);
                    }
                }
            }
        }
        if self.faults.is_empty() {
            return;
        }
        let end = first as u64 + count as u64;
        let ranges = if end <= n as u64 {
            [(first, end as u32), (0, 0)]
        } else {
            [(first, n), (0, (end - n as u64) as u32)]
        };
        for (a, b) in ranges {
            if a >= b {
                continue;
            }
            let mut cursor = a;
            // cursor = a found LPN + 1 ≤ b, so the range is never inverted.
            while let Some((&lpn, f)) = self.faults.range_mut(cursor..b).next() {
                cursor = lpn + 1;
                let ecc = self.ftl.page_ecc(f.ppn);
                if f.known || !self.timing.eccs[ecc as usize].detect_only {
                    continue;
                }
                f.known = true;
                let ppn = f.ppn;
                self.stats.cache.verify_found += 1;
                self.scheme.on_verify(lpn, ppn);
            }
        }
    }

    /// Queue a backend fetch of `lpn` (replacing copy `expect_ppn`) that returns after
    /// `delay_ns` + the disk latency; `reason` 0 = refill after a host read found the page
    /// corrupted, 1 = scheme prefetch.
    pub(super) fn queue_fetch(&mut self, lpn: u32, expect_ppn: u32, reason: u8, delay_ns: u64) {
        if self.cfg.cache.is_none() {
            self.fail(format!(
                "scheme `{}` asked for a backend fetch, which needs a backend disk: add a \
                 [cache] section",
                self.scheme.name()
            ));
            return;
        }
        self.stats.cache.fetches[reason as usize] += 1;
        let id = match self.fetch_free.pop() {
            Some(i) => {
                self.fetches[i as usize] = (lpn, expect_ppn, reason);
                i
            }
            None => {
                self.fetches.push((lpn, expect_ppn, reason));
                (self.fetches.len() - 1) as u32
            }
        };
        let t = self.now + delay_ns + self.disk_ns;
        self.push(t, EV_BACKEND | id as u64);
    }

    /// A backend fetch returned: program the data as clean (CleanWrite) unless the LPN was
    /// reprogrammed meanwhile.
    pub(super) fn fetch_returned(&mut self, id: u32) {
        let (lpn, expect, reason) = self.fetches[id as usize];
        self.fetch_free.push(id);
        let cur = self.ftl.lookup(lpn);
        let still_corrupt = self.faults.get(&lpn).is_some_and(|f| f.ppn == cur);
        if cur == UNMAPPED || (cur != expect && !still_corrupt) {
            self.stats.cache.fetches_cancelled += 1;
            return;
        }
        self.stats.cache.fetch_programs[reason as usize] += 1;
        self.scheme.on_cache_op(CacheOp::CleanWrite, lpn, 1);
        let ctx = scheme_ctx!(self);
        let pl = self.scheme.placement(lpn, Source::Scrub, &ctx);
        if !self.placement_ok(pl) {
            return;
        }
        let die = self.enqueue_program(Source::Scrub, lpn, NONE, pl);
        self.dispatch(die);
    }

    /// A host read of `lpn` at `ppn` for request `slot`: when the page is known corrupted and
    /// of a detect-only code, it is served from the backend disk only (spec §1.4, our reading
    /// of Eq. 6's ξ·R_disk term) and no flash read is queued (returns true).
    pub(super) fn known_corrupt_disk_read(&mut self, lpn: u32, ppn: u32, slot: u32) -> bool {
        let Some(f) = self.faults.get(&lpn) else {
            return false;
        };
        if f.ppn != ppn || !f.known {
            return false;
        }
        if !self.timing.eccs[self.ftl.page_ecc(ppn) as usize].detect_only {
            return false;
        }
        self.stats.cache.known_corrupt_disk_reads += 1;
        self.slots[slot as usize].pending += 1;
        let done = self.now + self.disk_ns;
        self.push(done, EV_DISK_READ | slot as u64);
        true
    }

    /// A host flash read of `lpn` at `ppn` (ECC `ecc`, nominal cost `sense + bus + decode`)
    /// starts: a corrupted page of a correcting code costs `decode_corrupted`; an undetected
    /// corrupted page of a detect-only code adds the backend disk to the response and queues a
    /// refill (counted as a disk access). Returns the decode and the extra tail, ns.
    pub(super) fn corrupt_read(
        &mut self,
        lpn: u32,
        ppn: u32,
        ecc: u8,
        nominal_ns: u64,
        decode: u64,
    ) -> (u64, u64) {
        let Some(f) = self.faults.get_mut(&lpn) else {
            return (decode, 0);
        };
        if f.ppn != ppn {
            return (decode, 0);
        }
        let e = &self.timing.eccs[ecc as usize];
        if e.detect_only || f.uncorrectable {
            let first = !f.known;
            f.known = true;
            if f.uncorrectable && !e.detect_only {
                self.stats.cache.uncorrectable_reads += 1;
            }
            self.stats.cache.disk_accesses += 1;
            if first && self.cfg.cache.is_some() {
                self.queue_fetch(lpn, ppn, 0, nominal_ns);
            }
            (decode, self.disk_ns)
        } else {
            if !f.known {
                f.known = true;
                self.stats.cache.corrected_reads += 1;
            }
            // Model mode: the code model already charged the corrupted decode.
            let d = if e.decode_corrupted_ns > 0 && !self.model_faults {
                e.decode_corrupted_ns
            } else {
                decode
            };
            (d, 0)
        }
    }

    /// A page of `lpn` was programmed: from scratch (`src` = `None`: the corruption of the old
    /// copy is gone) or relocated from `src` to `dst` (called after the FTL update; the
    /// source page keeps its metadata until its block is erased).
    pub(super) fn fault_program(&mut self, lpn: u32, src: Option<u32>, dst: u32) {
        let Some(f) = self.faults.get(&lpn).copied() else {
            return;
        };
        match src {
            Some(s) if s == f.ppn => {
                // The source's code decides: a correcting code's move decodes and corrects.
                if self.timing.eccs[self.ftl.page_ecc(s) as usize].detect_only || f.uncorrectable {
                    self.faults.insert(
                        lpn,
                        Fault {
                            ppn: dst,
                            known: true,
                            uncorrectable: f.uncorrectable,
                        },
                    );
                    self.stats.cache.gc_carried += 1;
                } else {
                    self.faults.remove(&lpn);
                    self.stats.cache.gc_corrected += 1;
                }
            }
            Some(_) => {}
            None => {
                self.faults.remove(&lpn);
            }
        }
    }

    /// Queue the next fault injection timer.
    pub(super) fn schedule_fault(&mut self) {
        let Some((_, n, k)) = self.fault_plan else {
            return;
        };
        if k >= n {
            return;
        }
        let t = ((k + 1) as u128 * self.fault_span_ns as u128 / (n + 1) as u128) as u64;
        self.push(t.max(self.now), EV_FAULT);
    }

    /// Inject the next fault (every P-th LPN; see [`crate::reliability::faults`]).
    pub(super) fn inject_fault(&mut self) {
        let Some((p, _, k)) = self.fault_plan else {
            return;
        };
        if let Some(plan) = self.fault_plan.as_mut() {
            plan.2 += 1;
        }
        let target = (k + 1) * p - 1;
        let mut hit = None;
        for d in 0..p {
            let lpn = target + d;
            if lpn >= self.fault_pages {
                break;
            }
            let lpn = lpn as u32;
            let ppn = self.ftl.lookup(lpn);
            if ppn != UNMAPPED && !self.faults.contains_key(&lpn) {
                hit = Some((lpn, ppn));
                break;
            }
        }
        match hit {
            Some((lpn, ppn)) => self.add_fault(lpn, ppn, false),
            None => self.stats.cache.corruptions_skipped += 1,
        }
        self.schedule_fault();
    }
}

impl Engine {
    /// `[faults] mode = "model"`: whether the copy at `ppn` holds errors now (`Some`, with
    /// whether they exceed its correcting code) — see [`crate::reliability::faults`].
    pub(super) fn model_copy_errors(&self, ppn: u32) -> Option<bool> {
        let rm = self.read_model.as_ref()?;
        let block = self.ftl.block_of(ppn);
        let pe = self.ftl.block_erases(block);
        let age_s = self.now as f64 / 1e9 - self.ftl.page_program_s(ppn) as f64;
        let v = crate::reliability::faults::copy_draw(self.cfg.seed, ppn, pe);
        let (_, errors, c) = rm.read_copy(
            pe,
            age_s,
            self.ftl.page_mode(ppn),
            self.ftl.page_ecc(ppn),
            self.ftl.block_reads(block),
            v,
        );
        (errors > 0).then_some(c.outcome == crate::ecc::ReadOutcome::Uncorrectable)
    }

    /// `[faults] mode = "model"`: the copy at `ppn` (its LPN's current copy) holds errors;
    /// flag it unless it is flagged already.
    pub(super) fn model_fault(&mut self, ppn: u32, uncorrectable: bool) {
        let lpn = self.ftl.page_lpn(ppn);
        if lpn == UNMAPPED || self.ftl.lookup(lpn) != ppn {
            return;
        }
        if self.faults.get(&lpn).is_some_and(|f| f.ppn == ppn) {
            return;
        }
        self.add_fault(lpn, ppn, uncorrectable);
    }

    /// Corrupt `lpn`'s copy at `ppn` (not yet known to the host): counted, and apart when the
    /// page's code only detects errors.
    fn add_fault(&mut self, lpn: u32, ppn: u32, uncorrectable: bool) {
        self.stats.cache.corruptions += 1;
        if self.timing.eccs[self.ftl.page_ecc(ppn) as usize].detect_only {
            self.stats.cache.corruptions_detect_only += 1;
        }
        self.faults.insert(
            lpn,
            Fault {
                ppn,
                known: false,
                uncorrectable,
            },
        );
    }

    /// Corrupt the current copy of `lpn` now (tests, tools; `known` = already detected).
    /// Returns false when the LPN is unmapped or already corrupted.
    pub fn inject_corruption(&mut self, lpn: u32, known: bool) -> bool {
        let ppn = self.ftl.lookup(lpn);
        if ppn == UNMAPPED || self.faults.contains_key(&lpn) {
            return false;
        }
        self.stats.cache.corruptions += 1;
        self.faults.insert(
            lpn,
            Fault {
                ppn,
                known,
                uncorrectable: false,
            },
        );
        true
    }
}
