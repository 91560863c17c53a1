//! The read-cost path: what a flash read of a page costs (sense, transfer, decode) and what it
//! counts — from the fixed per-ECC latencies, a region's wear-stage table, or the reliability
//! model — and the page type it senses as (IDA-adjusted word lines).

use super::Engine;
use crate::ftl::PageState;
use crate::scheme::Source;

impl Engine {
    #[inline]
    pub(super) fn count_read(&mut self, source: Source, ecc: u8, pt: crate::flash::PageType) {
        self.stats.flash_reads.add(source);
        self.stats.reads_by_ecc[ecc as usize] += 1;
        self.stats.reads_by_page_type[pt as usize] += 1;
    }

    /// Sense, transfer and decode time of a read of `ppn` (page type `pt`, ECC `ecc`), ns:
    /// from the fixed per-ECC latencies, or from the reliability model (which also counts the
    /// read's RBER, soft-sensing levels and outcome).
    pub(super) fn read_cost(
        &mut self,
        ppn: u32,
        pt: crate::flash::PageType,
        ecc: u8,
    ) -> (u64, u64, u64) {
        let xfer = self.timing.transfer_ns;
        if let Some(rg) = &self.rg {
            if rg.table {
                // EFM Tables II-III: the region's read latency at the current wear stage
                // replaces the page-type sense time; the ECC's extra sensing and decode add.
                let r = self.ftl.block_region(self.ftl.block_of(ppn)) as usize;
                let e = &self.timing.eccs[ecc as usize];
                let c = (
                    rg.read_ns[r * rg.stages + self.ftl.wear_stage()] + e.extra_sense_ns,
                    xfer,
                    e.decode_ns,
                );
                return self.table6_levels(ppn, c);
            }
        }
        let Some(rm) = self.read_model.as_mut() else {
            let c = (
                self.timing.sense_ns(pt, ecc),
                xfer,
                self.timing.decode_ns(ecc),
            );
            return self.table6_levels(ppn, c);
        };
        let block = self.ftl.block_of(ppn);
        let pe = self.ftl.block_erases(block);
        let age_s = self.now as f64 / 1e9 - self.ftl.page_program_s(ppn) as f64;
        let mode = self.ftl.page_mode(ppn);
        let reads = self.ftl.block_reads(block);
        let mut fault = None;
        let (rber, c) = if self.model_faults {
            // `[faults] mode = "model"`: the copy's own draw decides its errors.
            let v = crate::reliability::faults::copy_draw(self.cfg.seed, ppn, pe);
            let (rber, errors, c) = rm.read_copy(pe, age_s, mode, ecc, reads, v);
            if errors > 0 {
                fault = Some(c.outcome == crate::ecc::ReadOutcome::Uncorrectable);
            }
            (rber, c)
        } else {
            rm.read(pe, age_s, mode, ecc, reads)
        };
        let r = &mut self.stats.reliability;
        r.reads += 1;
        r.rber_sum += rber;
        r.reads_by_soft_level[(c.soft_levels as usize).min(15)] += 1;
        r.read_retries += u64::from(c.rereads);
        match c.outcome {
            crate::ecc::ReadOutcome::Corrected => {}
            crate::ecc::ReadOutcome::Uncorrectable => r.uncorrectable += 1,
            crate::ecc::ReadOutcome::DetectedOnly => r.detected_only += 1,
        }
        if let Some(unc) = fault {
            self.model_fault(ppn, unc);
        }
        let tries = 1 + u64::from(c.rereads);
        (
            tries * self.timing.read_ns[pt as usize] + c.extra_sense_ns.round() as u64,
            tries * xfer + c.extra_transfer_ns.round() as u64,
            c.decode_ns.round() as u64,
        )
    }

    /// `reliability.model = "table6"`: add Guo Table 6's extra soft-sensing levels of `ppn` to
    /// the fixed cost `c` (each level 8 µs of sensing + 20 µs of transfer, Guo §3.2); pages of
    /// reduced-state regions need none. Without the Table 6 source, `c` unchanged.
    ///
    /// Always inlined: without the Table 6 source it is a no-op, and as a call the tuple
    /// crossed memory (a 16-byte load of two 8-byte stores, which cannot be forwarded and
    /// waits for the store buffer to drain: 10 % of the default drive's replay time).
    #[inline(always)]
    fn table6_levels(&mut self, ppn: u32, c: (u64, u64, u64)) -> (u64, u64, u64) {
        if self.table6.is_none() {
            return c;
        }
        self.table6_levels_on(ppn, c)
    }

    /// [`Engine::table6_levels`] with the Table 6 source configured.
    fn table6_levels_on(&mut self, ppn: u32, c: (u64, u64, u64)) -> (u64, u64, u64) {
        let Some(reduced) = &self.table6 else {
            return c;
        };
        let block = self.ftl.block_of(ppn);
        let levels = if reduced[self.ftl.block_region(block) as usize] {
            0
        } else {
            let age_s = self.now as f64 / 1e9 - self.ftl.page_program_s(ppn) as f64;
            crate::reliability::table6::levels(self.ftl.block_erases(block) as f64, age_s)
        };
        let r = &mut self.stats.reliability;
        r.reads += 1;
        r.reads_by_soft_level[(levels as usize).min(15)] += 1;
        let l = u64::from(levels);
        (
            c.0 + l * crate::ecc::LDPC_SENSE_NS as u64,
            c.1 + l * crate::ecc::LDPC_TRANSFER_NS as u64,
            c.2,
        )
    }

    /// Page type a read of `ppn` (layout type `pt`) senses as: the IDA-adjusted type when its
    /// word line was voltage-adjusted. Counts host MSB reads by lower-page validity (IDA
    /// Fig. 4) and reads of adjusted pages.
    #[inline]
    pub(super) fn read_type(
        &mut self,
        ppn: u32,
        pt: crate::flash::PageType,
        source: Source,
    ) -> crate::flash::PageType {
        let adj = self.ftl.page_read_type(ppn);
        if let Some(rt) = adj {
            self.stats.refresh.adjusted_reads_by_type[rt as usize] += 1;
        }
        if self.rf_on && source == Source::Host && pt == crate::flash::PageType::Msb {
            let ppb = self.ftl.geo.pages_per_block;
            let base = ppn - ppn % ppb;
            let wl = self.layout.word_line[(ppn % ppb) as usize] as usize;
            let mut idx = 0;
            for (b, &p) in self.layout.wl(wl).iter().enumerate().take(2) {
                if self.layout.bits > b + 1 && self.ftl.page_state(base + p) == PageState::Valid {
                    idx |= 1 << b;
                }
            }
            let r = &mut self.stats.refresh;
            r.host_msb_reads_by_lower_valid[idx] += 1;
            r.host_msb_reads_adjusted += adj.is_some() as u64;
        }
        adj.unwrap_or(pt)
    }
}
