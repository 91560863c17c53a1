//! `ida`: Invalid Data-Aware coding on top of data refresh (Kim et al., MICRO'18).
//!
//! When the lower pages of a word line are invalid, the voltage states they distinguish are
//! duplicates; merging them lets the still-valid upper pages be read with fewer sensings. IDA
//! does this during the periodic data refresh ([`Scheme::plan_refresh`], §III-C, Fig. 7b). For
//! each word line of the refresh target, by the validity of its LSB / CSB / MSB (Table I):
//!
//! | case | LSB | CSB | MSB | action |
//! |---|---|---|---|---|
//! | 1 | V | V | V | move LSB; adjust for CSB/MSB |
//! | 2 | I | V | V | adjust for CSB/MSB |
//! | 3 | V | I | V | move LSB; adjust for MSB |
//! | 4 | I | I | V | adjust for MSB |
//! | 5 | V | V | I | move LSB/CSB |
//! | 6 | I | V | I | move CSB |
//! | 7 | V | I | I | move LSB |
//! | 8 | I | I | I | nothing |
//!
//! Read types after the adjustment (§III-A, the summary of Fig. 6): CSB/MSB code
//! (cases 1, 2): the CSB reads with one sensing (LSB latency), the MSB with two (CSB latency);
//! MSB-only code (cases 3, 4): the MSB reads with one sensing (LSB latency).
//!
//! MLC (§V-G): a word line with a valid MSB moves its valid LSB and is adjusted so the MSB reads
//! as an LSB; otherwise its valid LSB is moved. SLC and QLC: baseline refresh (no IDA code is
//! defined for them here).
//!
//! An IDA block is fully moved (not adjusted again) at its next refresh (§III-C: "our design
//! forces IDA-blocks to be reclaimed in the next refresh cycle").
//!
//! Corruption by the adjustment (§III-C, Fig. 7b steps 5–8; §V-B evaluates E0/E20/E50/E80): each
//! adjusted page is found corrupted at the read-back with probability `error_fraction`, drawn
//! per page from the refresh's seeded random stream (so E50 corrupts CSB-as-LSB and
//! MSB-as-CSB pages in proportion to their numbers; an earlier error-diffusion accumulator fed
//! CSB-then-MSB aliased onto one page type).
//!
//! Relocation placement (§III-C: IDA "uses the limited fast LSB pages of the new blocks for LSB
//! data"): every page a refresh moves asks for the page type it comes from
//! ([`Placement::page_type`]), so moved LSB data lands on the new block's LSB pages while the
//! block has LSB pages left (and CSB/MSB data on CSB/MSB pages). The report's
//! `refresh.moves_by_page_type` shows where moved data landed.
//!
//! Parameters (`[scheme.params]`): `error_fraction` (0…1, default 0.2 = the paper's E20
//! default, §V-B), plus `mode`, `ecc`, `separate_gc_stream` as in `baseline`.

use rand::Rng;
use serde_json::json;

use super::baseline::Baseline;
use super::params::Params;
use super::{AdjustedPage, Ctx, Placement, RefreshPlan, Scheme, Source};
use crate::config::ConfigError;
use crate::flash::{PageType, Timing};

/// The IDA scheme.
#[derive(Clone, Debug)]
pub struct Ida {
    base: Baseline,
    error_fraction: f64,
    /// Word lines seen per Table I case (index 0 = case 1).
    pub cases: [u64; 8],
    /// Word lines voltage-adjusted.
    pub wls_adjusted: u64,
    /// Pages left in place by adjustments (N_target).
    pub pages_adjusted: u64,
    /// Adjusted pages found corrupted and rewritten (N_error).
    pub pages_corrupt: u64,
    /// Refreshes of IDA blocks (fully moved).
    pub ida_blocks_moved: u64,
    /// Refreshes that adjusted at least one word line.
    pub blocks_adjusted: u64,
}

impl Ida {
    /// Build from `[scheme.params]`.
    pub fn new(params: &toml::Table, timing: &Timing, streams: u32) -> Result<Self, ConfigError> {
        let p = Params::new("ida", params);
        let error_fraction = p.f64("error_fraction", 0.2, 0.0, 1.0)?;
        let base = Baseline::from_params(&p, timing, streams)?;
        p.finish()?;
        Ok(Ida {
            base,
            error_fraction,
            cases: [0; 8],
            wls_adjusted: 0,
            pages_adjusted: 0,
            pages_corrupt: 0,
            ida_blocks_moved: 0,
            blocks_adjusted: 0,
        })
    }

    fn adjust(&mut self, plan: &mut RefreshPlan, ppn: u32, read_type: PageType) {
        let corrupt = plan.rng.gen::<f64>() < self.error_fraction;
        self.pages_adjusted += 1;
        self.pages_corrupt += corrupt as u64;
        plan.adjusted.push(AdjustedPage {
            ppn,
            read_type,
            corrupt,
        });
    }
}

/// Table I case (1–8) of a TLC word line from the validity of its LSB, CSB, MSB.
pub fn table_i_case(lsb: bool, csb: bool, msb: bool) -> usize {
    match (msb, csb, lsb) {
        (true, true, true) => 1,
        (true, true, false) => 2,
        (true, false, true) => 3,
        (true, false, false) => 4,
        (false, true, true) => 5,
        (false, true, false) => 6,
        (false, false, true) => 7,
        (false, false, false) => 8,
    }
}

impl Scheme for Ida {
    fn name(&self) -> &'static str {
        "ida"
    }

    fn validate_device(&self, dev: &super::DeviceInfo) -> Result<(), ConfigError> {
        // IDA acts at data refresh (§III-B) on the word lines of multi-bit cells (Table I's
        // TLC cases; MLC in §V-G).
        if dev.bits_per_cell < 2 || !dev.refresh {
            return Err(super::DeviceInfo::mismatch(
                "ida",
                &format!(
                    "an MLC or TLC device (device.cell = \"tlc\"; this one has {} bit(s) per cell) with \
                     data refresh (refresh.period_s > 0 or \
                     precondition.refresh_before_replay = true; this one has {})",
                    dev.bits_per_cell,
                    if dev.refresh { "it" } else { "none" }
                ),
                "ida-tlc",
            ));
        }
        Ok(())
    }

    fn placement(&mut self, lpn: u32, source: Source, ctx: &Ctx<'_>) -> Placement {
        let mut pl = self.base.placement(lpn, source, ctx);
        if source == Source::Refresh {
            let ppn = ctx.ftl.lookup(lpn);
            if ppn != crate::ftl::UNMAPPED {
                pl.page_type = Some(ctx.ftl.page_type(ppn));
            }
        }
        pl
    }

    fn plan_refresh(&mut self, block: u32, ctx: &Ctx<'_>, plan: &mut RefreshPlan) {
        let bits = plan.layout.bits;
        if ctx.ftl.block_is_ida(block) || !(bits == 2 || bits == 3) {
            if ctx.ftl.block_is_ida(block) {
                self.ida_blocks_moved += 1;
            }
            plan.move_all_valid(ctx.ftl, block);
            return;
        }
        let base = block * ctx.ftl.geo.pages_per_block;
        let before = plan.adjust_wls.len();
        for w in 0..plan.layout.word_lines() {
            let v = plan.wl_valid(ctx.ftl, block, w);
            let wl = plan.layout.wl_pages[w];
            let page = |b: usize| base + wl[b];
            if bits == 2 {
                // MLC analogue of Table I (§V-G): [LSB, MSB].
                let (lsb, msb) = (v[0], v[1]);
                if lsb {
                    plan.moves.push(page(0));
                }
                if msb {
                    plan.adjust_wls.push(page(1));
                    self.adjust(plan, page(1), PageType::Lsb);
                }
                continue;
            }
            let (lsb, csb, msb) = (v[0], v[1], v[2]);
            let case = table_i_case(lsb, csb, msb);
            self.cases[case - 1] += 1;
            match case {
                1..=4 => {
                    if lsb {
                        plan.moves.push(page(0));
                    }
                    plan.adjust_wls.push(page(2));
                    if csb {
                        self.adjust(plan, page(1), PageType::Lsb);
                        self.adjust(plan, page(2), PageType::Csb);
                    } else {
                        self.adjust(plan, page(2), PageType::Lsb);
                    }
                }
                5..=7 => {
                    for b in [0, 1] {
                        if v[b] {
                            plan.moves.push(page(b));
                        }
                    }
                }
                _ => {}
            }
        }
        if plan.adjust_wls.len() > before {
            self.blocks_adjusted += 1;
        }
        self.wls_adjusted += (plan.adjust_wls.len() - before) as u64;
    }

    fn stats(&self) -> serde_json::Value {
        json!({
            "error_fraction": self.error_fraction,
            "wordline_cases": self.cases,
            "wordlines_adjusted": self.wls_adjusted,
            "pages_adjusted": self.pages_adjusted,
            "pages_corrupt": self.pages_corrupt,
            "blocks_adjusted": self.blocks_adjusted,
            "ida_blocks_moved": self.ida_blocks_moved,
        })
    }
}
