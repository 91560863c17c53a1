//! Preconditioning: put the device in a realistic state before replay, untimed.
//!
//! 1. **Fill** (`precondition.fill`): `touched` writes every LPN the trace reads or writes, in LPN
//!    order (so reads of data the trace never wrote still hit flash, as on a used device);
//!    `fraction` writes the first `fill_fraction` of the logical space; `none` writes nothing
//!    (reads of never-written LPNs are then served without a flash access and counted as
//!    `host.unmapped_read_pages`, as an SSD returns zeros for a deallocated LBA).
//! 2. **Age** (`age_overwrites`, `age_until_steady`): uniformly random overwrites of the filled
//!    LPNs with GC running, so that the replay starts with GC in steady state. Until steady,
//!    rounds of 10 % of the filled pages continue until GC has erased blocks in two rounds in a
//!    row whose write amplification differs by at most 1 % (`aging_steady` in the report), or a
//!    cap: `age_overwrites` × filled pages when set, else 10 × filled pages plus the free pages
//!    at the start (GC only starts once overwrites have used the free pages up).
//!
//! With `fill = "touched"` only the pages the trace touches hold data and the rest of the device
//! is free; GC starts only once writes have used up the free pages. A trace that does not
//! overwrite its pages many times over — in particular one that writes each page once — over an
//! address space larger than the pages it touches never gets there: the replay shows WA 1.0 and
//! no erase. Age the device (`age_overwrites`, `age_until_steady`) or fill a fraction of the
//! logical space to measure GC.
//! 3. **Refresh** (`refresh_before_replay`): every full block with valid data is refreshed
//!    once through the scheme's [`crate::scheme::Scheme::plan_refresh`]: planned moves and
//!    corrupted adjusted pages are relocated, kept pages take their adjusted read type, and an
//!    adjusted block becomes an IDA block — the state a past refresh leaves (IDA §III-C).
//! 4. **Wear and retention** (`initial_pe_cycles ± initial_pe_spread`, `initial_age_window_s`):
//!    each block gets an initial P/E count; each block's data gets a program time uniformly
//!    spread over the window before the trace starts.
//!
//! None of this is in the reported latencies or flash counters; its own summary is the
//! report's `precondition` section. Randomness comes from the master seed (streams 1 and 2).

use rand::Rng;
use serde::Serialize;

use super::Engine;
use crate::config::Fill;
use crate::error::NandlabError;
use crate::ftl::{PageState, UNMAPPED};
use crate::host::Prepass;
use crate::rng::rng_stream;
use crate::scheme::{Placement, Source};

/// What preconditioning did.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct PreconditionReport {
    /// How the device was brought to steady state, in words (only for a whole-space fill
    /// aged until steady, SNIA SSS PTS style; absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Pages written by the fill step.
    pub filled_pages: u64,
    /// Random overwrites of the aging step.
    pub aged_overwrites: u64,
    /// GC relocations during aging.
    pub aging_gc_moves: u64,
    /// Write amplification of the last aging round (1 when no aging).
    pub aging_last_round_wa: f64,
    /// Aging rounds run.
    pub aging_rounds: u64,
    /// `age_until_steady`: whether aging stopped because GC ran and the write amplification
    /// settled (false: the cap was reached first).
    pub aging_steady: bool,
    /// Mean initial P/E cycles assigned.
    pub initial_pe_mean: f64,
    /// Blocks refreshed before the replay (`refresh_before_replay`).
    pub refreshed_blocks: u64,
    /// Pages relocated by that refresh (planned moves and corrupted adjusted pages).
    pub refresh_moves: u64,
    /// Pages left in place with an adjusted (faster) read type.
    pub refresh_adjusted_pages: u64,
    /// Adjusted pages read back after the adjustment (IDA Fig. 7b step 5): IDA's extra reads.
    pub refresh_readbacks: u64,
    /// Adjusted pages found corrupted and rewritten from their copy (step 8): IDA's extra
    /// writes.
    pub refresh_rewrites: u64,
    /// Refresh relocations by source page type and the type they land on (`{from: {to: n}}`;
    /// only when `refresh_before_replay` ran).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_moves_by_page_type: Option<serde_json::Value>,
}

impl Engine {
    /// Run the configured preconditioning. `prepass` carries the touched-LPN bitmap for
    /// `fill = "touched"`; `progress(Stage::Precondition, done, total)` is called every 65,536
    /// page writes (fill and aging; `total` is the fill plus the aging cap, which aging until
    /// steady may not reach).
    pub fn precondition(
        &mut self,
        prepass: Option<&Prepass>,
        progress: &mut crate::error::ProgressFn<'_>,
    ) -> Result<(), NandlabError> {
        use crate::error::Stage;
        const EVERY: u64 = 1 << 16;
        let pc = self.cfg.precondition.clone();
        let mut filled: Vec<u32> = Vec::new();
        match pc.fill {
            Fill::None => {}
            Fill::Touched => {
                let Some(pp) = prepass else {
                    return Err(NandlabError::Sim(
                        "precondition.fill = \"touched\" needs a pass over the trace".into(),
                    ));
                };
                for lpn in 0..self.logical_pages {
                    if pp.is_touched(lpn) {
                        filled.push(lpn as u32);
                    }
                }
            }
            Fill::Fraction => {
                let n = (self.logical_pages as f64 * pc.fill_fraction).floor() as u64;
                filled.extend(0..n as u32);
            }
        }
        // What the aging step will write at most (for the progress total).
        let n_filled = filled.len() as u64;
        let aging_cap = if n_filled > 0 && (pc.age_overwrites > 0.0 || pc.age_until_steady) {
            if pc.age_overwrites > 0.0 {
                (pc.age_overwrites * n_filled as f64) as u64
            } else {
                let free = self.ftl.geo.pages().saturating_sub(n_filled);
                10 * n_filled + free
            }
        } else {
            0
        };
        let total = n_filled + aging_cap;
        for (i, &lpn) in filled.iter().enumerate() {
            self.untimed_write(lpn, &mut 0)?;
            if (i as u64 + 1).is_multiple_of(EVERY) {
                progress(Stage::Precondition, i as u64 + 1, total);
            }
        }
        self.precondition.filled_pages = filled.len() as u64;
        self.precondition.aging_last_round_wa = 1.0;

        if !filled.is_empty() && (pc.age_overwrites > 0.0 || pc.age_until_steady) {
            let mut rng = rng_stream(self.cfg.seed, 1);
            let n = filled.len() as u64;
            // Until steady, the default cap leaves room to use up the free pages first: GC
            // only starts once the overwrites have consumed them.
            let free_pages = self.ftl.geo.pages().saturating_sub(self.ftl.mapped_pages());
            let cap = if pc.age_overwrites > 0.0 {
                (pc.age_overwrites * n as f64) as u64
            } else {
                10 * n + free_pages
            };
            debug_assert_eq!(cap, aging_cap);
            let round = if pc.age_until_steady {
                (n / 10).max(1)
            } else {
                cap.max(1)
            };
            let mut done = 0u64;
            // WA of the previous round, when GC erased blocks in it.
            let mut prev_wa: Option<f64> = None;
            // The overwrites are drawn `AHEAD` writes early (the same sequence from the same
            // stream) and their memory is prefetched in three steps along the way — the
            // `filled` slot, then the LPN's L2P entry, then its old page's state — so that a
            // write finds them in cache: random overwrites of a large logical space are
            // otherwise a chain of cache misses. Draws past the last write are discarded with
            // the stream.
            const AHEAD: usize = 24;
            const STEP: usize = AHEAD / 3;
            let mut ring = [0usize; AHEAD];
            let mut head = 0usize;
            for slot in ring.iter_mut() {
                *slot = rng.gen_range(0..filled.len());
                crate::prefetch::slice(&filled, *slot);
            }
            for &i in &ring[STEP..] {
                self.ftl.prefetch_lpn(filled[i]);
            }
            for &i in &ring[2 * STEP..] {
                self.ftl.prefetch_mapped(filled[i]);
            }
            while done < cap {
                let this = round.min(cap - done);
                let mut moves = 0u64;
                let erases_before = self.ftl.total_erases();
                for _ in 0..this {
                    let lpn = filled[ring[head]];
                    ring[head] = rng.gen_range(0..filled.len());
                    crate::prefetch::slice(&filled, ring[head]);
                    self.ftl
                        .prefetch_lpn(filled[ring[(head + AHEAD - STEP) % AHEAD]]);
                    self.ftl
                        .prefetch_mapped(filled[ring[(head + AHEAD - 2 * STEP) % AHEAD]]);
                    head = (head + 1) % AHEAD;
                    self.untimed_write(lpn, &mut moves)?;
                }
                done += this;
                progress(Stage::Precondition, n_filled + done, total);
                self.precondition.aging_rounds += 1;
                self.precondition.aging_gc_moves += moves;
                let wa = (this + moves) as f64 / this as f64;
                self.precondition.aging_last_round_wa = wa;
                let gc_ran = self.ftl.total_erases() > erases_before;
                if pc.age_until_steady {
                    // Steady: GC ran in this round and the previous one, and the write
                    // amplification moved by at most 1 %. Rounds before GC starts (WA 1.0 with
                    // no erase) are not steady state, however flat their WA.
                    if let (true, Some(p)) = (gc_ran, prev_wa) {
                        if (wa - p).abs() <= 0.01 * p {
                            self.precondition.aging_steady = true;
                            break;
                        }
                    }
                    prev_wa = gc_ran.then_some(wa);
                }
            }
            self.precondition.aged_overwrites = done;
            if pc.fill == Fill::Fraction && pc.fill_fraction >= 1.0 && pc.age_until_steady {
                let p = &self.precondition;
                self.precondition.method = Some(format!(
                    "SNIA SSS PTS-style steady state, untimed: the whole logical space ({} \
                     pages) written once in LPN order, then uniformly random page overwrites \
                     in rounds of 10 % of it until GC ran in two consecutive rounds whose write \
                     amplification differed by at most 1 % ({}: {} rounds, {} overwrites, \
                     last-round WA {:.3})",
                    p.filled_pages,
                    if p.aging_steady {
                        "reached"
                    } else {
                        "not reached before the cap"
                    },
                    p.aging_rounds,
                    done,
                    p.aging_last_round_wa
                ));
            }
        }

        let translation = self.untimed_translation_pages()?;
        if let Some(m) = self.map.as_mut() {
            m.preconditioned_pages = translation;
        }

        if pc.refresh_before_replay {
            let mut by_type = [[0u64; 4]; 4];
            self.untimed_refresh_all(&mut by_type)?;
            self.precondition.refresh_moves_by_page_type = Some(
                crate::stats::page_type_matrix_json(&by_type, self.ftl.geo.cell.bits()),
            );
        }

        if pc.initial_pe_cycles > 0 || pc.initial_age_window_s > 0.0 {
            let mut rng = rng_stream(self.cfg.seed, 2);
            let blocks = self.ftl.geo.blocks();
            let ppb = self.ftl.geo.pages_per_block;
            let mut pe_sum = 0u64;
            for b in 0..blocks {
                let spread = pc.initial_pe_spread as i64;
                let pe = pc.initial_pe_cycles as i64
                    + if spread > 0 {
                        rng.gen_range(-spread..=spread)
                    } else {
                        0
                    };
                let pe = pe.max(0) as u32 + self.ftl.block_erases(b);
                self.ftl.set_erase_count(b, pe);
                pe_sum += pe as u64;
                if pc.initial_age_window_s > 0.0 {
                    let age = rng.gen_range(0.0..pc.initial_age_window_s);
                    let t = -(age.round() as i64).min(i32::MAX as i64) as i32;
                    for ppn in b * ppb..(b + 1) * ppb {
                        if self.ftl.page_state(ppn) != PageState::Free {
                            self.ftl.set_program_s(ppn, t);
                        }
                    }
                }
            }
            self.precondition.initial_pe_mean = pe_sum as f64 / blocks.max(1) as f64;
        }
        progress(Stage::Precondition, total, total);
        Ok(())
    }

    /// Refresh every full block holding valid data once, untimed (step 3); relocations are
    /// counted in `by_type[from][to]` by page type.
    fn untimed_refresh_all(&mut self, by_type: &mut [[u64; 4]; 4]) -> Result<(), NandlabError> {
        let bpp = self.ftl.geo.blocks_per_plane;
        // The blocks due now; the destination blocks this pass fills are not refreshed again.
        let due: Vec<u32> = (0..self.ftl.geo.blocks())
            .filter(|&b| {
                self.ftl.block_state(b) == crate::ftl::BlockState::Full
                    && self.ftl.block_valid(b) > 0
            })
            .collect();
        for block in due {
            if self.ftl.block_valid(block) == 0 || !self.ftl.claim_for_refresh(block) {
                continue;
            }
            let plane = block / bpp;
            self.rf_plan.clear();
            let ctx = scheme_ctx!(self, 0);
            self.scheme.plan_refresh(block, &ctx, &mut self.rf_plan);
            let mut moves = 0u64;
            for i in 0..self.rf_plan.moves.len() {
                let src = self.rf_plan.moves[i];
                self.untimed_relocate(src, plane, &mut moves, by_type)?;
            }
            for i in 0..self.rf_plan.adjusted.len() {
                let a = self.rf_plan.adjusted[i];
                if self.ftl.page_state(a.ppn) != PageState::Valid {
                    continue;
                }
                self.precondition.refresh_readbacks += 1;
                if a.corrupt {
                    self.precondition.refresh_rewrites += 1;
                    self.untimed_relocate(a.ppn, plane, &mut moves, by_type)?;
                } else {
                    self.ftl.set_page_read_type(a.ppn, a.read_type);
                    self.precondition.refresh_adjusted_pages += 1;
                }
            }
            if !self.rf_plan.adjust_wls.is_empty() {
                self.ftl.mark_ida(block);
            }
            self.ftl.unclaim_victim(block);
            self.precondition.refreshed_blocks += 1;
            self.precondition.refresh_moves += moves;
        }
        Ok(())
    }

    /// Move the valid page `src` to a new page of `plane` (refresh placement), untimed, with
    /// GC as needed.
    fn untimed_relocate(
        &mut self,
        src: u32,
        plane: u32,
        moves: &mut u64,
        by_type: &mut [[u64; 4]; 4],
    ) -> Result<(), NandlabError> {
        let lpn = self.ftl.page_lpn(src);
        let region = self.ftl.block_region(self.ftl.geo.block_of_ppn(src));
        let ctx = scheme_ctx!(self, 0);
        let mut pl = self.scheme.placement(lpn, Source::Refresh, &ctx);
        pl.region = region;
        self.untimed_placement_ok(pl)?;
        let pool = self.ftl.pool(plane, region);
        let mut gc_moves = 0u64;
        let mut guard = 0u32;
        while self.ftl.needs_gc(pool) {
            if !self.untimed_gc(pool, &mut gc_moves)? {
                break;
            }
            guard += 1;
            if guard > self.ftl.geo.blocks_per_plane {
                return Err(NandlabError::Sim(format!(
                    "preconditioning: GC cannot reclaim space on plane {plane} during the \
                     refresh; raise device.op_percent_of_logical"
                )));
            }
        }
        let dst = self
            .ftl
            .allocate_typed(plane, region, pl.stream, false, 0, pl.page_type)
            .map(|(ppn, _)| ppn)
            .map_err(|_| {
                NandlabError::Sim(format!(
                    "preconditioning: refresh on plane {plane} ran out of space \
                     (raise device.op_percent_of_logical)"
                ))
            })?;
        let mode = self.region_mode(pl);
        by_type[self.ftl.page_type(src) as usize][self.ftl.page_type(dst) as usize] += 1;
        self.ftl.program(dst, lpn, mode, pl.ecc, 0);
        *moves += 1;
        Ok(())
    }

    /// Write one page with GC as needed, untimed; adds GC relocations to `moves`.
    fn untimed_write(&mut self, lpn: u32, moves: &mut u64) -> Result<(), NandlabError> {
        let ctx = scheme_ctx!(self, 0);
        let pl = self.scheme.precondition_placement(lpn, &ctx);
        self.untimed_placement_ok(pl)?;
        self.untimed_write_at(lpn, pl, moves)
    }

    /// The translation pages of a cached mapping table that hold a mapped entry, programmed
    /// once, untimed, after the fill and the aging (our reading: preconditioning writes the
    /// table as it stands at the end; the CMT starts empty). Returns how many.
    fn untimed_translation_pages(&mut self) -> Result<u64, NandlabError> {
        let Some(m) = self.map.as_ref() else {
            return Ok(0);
        };
        let (base, epp, pages, pl) = (
            m.cmt.base,
            m.cmt.entries_per_page as u64,
            m.cmt.pages,
            m.placement,
        );
        let mut moves = 0u64;
        let mut written = 0u64;
        for tp in 0..pages {
            let lo = tp as u64 * epp;
            let hi = (lo + epp).min(self.logical_pages);
            if (lo..hi).any(|l| self.ftl.lookup(l as u32) != UNMAPPED) {
                self.untimed_write_at(base + tp, pl, &mut moves)?;
                written += 1;
            }
        }
        Ok(written)
    }

    /// Program `lpn` untimed at placement `pl` (GC first when its pool needs it).
    fn untimed_write_at(
        &mut self,
        lpn: u32,
        pl: Placement,
        moves: &mut u64,
    ) -> Result<(), NandlabError> {
        let plane = self.ftl.plane_for_write_in(lpn, pl.region);
        let pool = self.ftl.pool(plane, pl.region);
        let mut guard = 0u32;
        while self.ftl.needs_gc(pool) {
            if !self.untimed_gc(pool, moves)? {
                break;
            }
            guard += 1;
            if guard > self.ftl.geo.blocks_per_plane {
                return Err(NandlabError::Sim(format!(
                    "preconditioning: GC cannot reclaim space on plane {plane}{} (every victim \
                     is fully valid); raise device.op_percent_of_logical{}",
                    self.region_note(pl.region),
                    if self.ftl.regions() > 1 {
                        " or that region's share (regions.fractions)"
                    } else {
                        ""
                    }
                )));
            }
        }
        let ppn = self
            .ftl
            .allocate_in(plane, pl.region, pl.stream, true, 0)
            .map_err(|_| {
                NandlabError::Sim(format!(
                    "preconditioning: plane {plane}{} is full; the filled data does not fit the \
                     device (raise device.op_percent_of_logical{})",
                    self.region_note(pl.region),
                    if self.ftl.regions() > 1 {
                        " or that region's fraction"
                    } else {
                        ""
                    }
                ))
            })?;
        let mode = self.region_mode(pl);
        self.ftl.program(ppn, lpn, mode, pl.ecc, 0);
        // Only a scheme with hidden pages (the L2P extends past the logical capacity) has
        // untimed work on them: the others skip the call (hot in a large fill).
        if (lpn as u64) < self.logical_pages && self.ftl.lookup_len() as u64 > self.logical_pages {
            self.untimed_hidden(moves)?;
        }
        Ok(())
    }

    /// Apply the scheme's untimed work on hidden pages ([`crate::scheme::Scheme::take_untimed`])
    /// after an untimed host write: programs and unmaps, no time; reads dropped.
    fn untimed_hidden(&mut self, moves: &mut u64) -> Result<(), NandlabError> {
        let mut acts = std::mem::take(&mut self.actions);
        acts.clear();
        self.scheme.take_untimed(&mut acts);
        let mut r = Ok(());
        let (lo, hi) = (self.logical_pages, self.ftl.lookup_len());
        let hidden = |lpn: u32| (lpn as usize) < hi && lpn as u64 >= lo;
        for a in acts.iter() {
            match *a {
                crate::scheme::Action::Program { lpn, .. } if hidden(lpn) => {
                    r = self.untimed_write(lpn, moves);
                }
                crate::scheme::Action::Unmap { lpn } if hidden(lpn) => {
                    self.ftl.trim(lpn);
                }
                _ => {}
            }
            if r.is_err() {
                break;
            }
        }
        acts.clear();
        self.actions = acts;
        r
    }

    fn untimed_gc(&mut self, pool: u32, moves: &mut u64) -> Result<bool, NandlabError> {
        let Some(victim) = self.ftl.select_victim(pool, 0) else {
            return Ok(false);
        };
        let plane = self.ftl.plane_of_pool(pool);
        let region = self.ftl.block_region(victim);
        self.scratch.clear();
        self.ftl.victim_valid_pages(victim, &mut self.scratch);
        // The moved pages' LPNs are scattered over the L2P: fetch their entries a few moves
        // ahead (the move writes them).
        const AHEAD: usize = 8;
        for &src in self.scratch.iter().take(AHEAD) {
            self.ftl.prefetch_lpn(self.ftl.page_lpn(src));
        }
        for i in 0..self.scratch.len() {
            let src = self.scratch[i];
            if let Some(&ahead) = self.scratch.get(i + AHEAD) {
                self.ftl.prefetch_lpn(self.ftl.page_lpn(ahead));
            }
            let lpn = self.ftl.page_lpn(src);
            let ctx = scheme_ctx!(self, 0);
            let mut pl = self.scheme.gc_move(lpn, src, &ctx);
            pl.region = region;
            self.untimed_placement_ok(pl)?;
            let dst = self
                .ftl
                .allocate_in(plane, region, pl.stream, false, 0)
                .map_err(|_| {
                    NandlabError::Sim(format!(
                        "preconditioning: GC on plane {plane}{} ran out of space",
                        self.region_note(region)
                    ))
                })?;
            let mode = self.region_mode(pl);
            // The same state change as programming `lpn` at `dst`, without reading the L2P (a
            // valid page is its LPN's target).
            self.ftl.relocate(src, dst, mode, pl.ecc, 0);
            *moves += 1;
        }
        self.ftl.erase_victim(victim);
        Ok(true)
    }
}

impl Engine {
    /// [`Engine::placement_ok`] for untimed writes: the error the check recorded (or a bad
    /// placement) when it fails.
    fn untimed_placement_ok(&mut self, pl: crate::scheme::Placement) -> Result<(), NandlabError> {
        if self.placement_ok(pl) {
            return Ok(());
        }
        Err(self
            .error
            .take()
            .unwrap_or(NandlabError::Sim("bad placement".into())))
    }
}
