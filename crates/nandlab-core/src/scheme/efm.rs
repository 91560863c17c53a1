//! `efm` and `efm_static`: Elastic Flash Management (Li, Yuan & Du; paper in
//! `shared/papers/li-yuan-du-efm.txt`), Algorithms 1–3 and eq. 4, on the device's `[regions]`.
//!
//! Regions are indexed from 0 (the paper's Region-1: fastest write, slowest read) to N − 1
//! (Region-3 of three: slowest write, fastest read). Per *logical block* (one flash block of
//! LPNs, §IV-B "we use a flash memory block as a logical block of I/O monitoring") the scheme
//! keeps:
//! * `Read_TBL` / `Write_TBL`: accumulated read / write sizes (in pages; eq. 4 uses only their
//!   ratio), multiplied by `decay` = 0.2 every period T (Algorithm 1 lines 28–32);
//! * `MRO`: the last `mro_ops` = 7 operations, 1 = read, 0 = write (lines 6–11);
//! * `Reg_mapping`: the region the block is classified to, and the migration counter.
//!
//! **LT-Classifier** (Algorithm 2, eq. 4). Between adjacent regions i and i + 1, eq. 4 prefers
//! region i when `Y·t_p(i) + X·t_r(i) < Y·t_p(i+1) + X·t_r(i+1)` (Y = Write_TBL, X = Read_TBL).
//! With t_p(i) < t_p(i+1) this is `Y/X > θ_i`, θ_i = (t_r(i+1) − t_r(i)) / (t_p(i) − t_p(i+1))
//! ([`lt_thresholds`]). *Discrepancy*: Algorithm 2 as printed tests `Write_TBL/Read_TBL < θ` for
//! Region-1, which with the paper's own Table II latencies (t_p1 = 450 < t_p2 = 600) would send
//! read-heavy blocks to the slow-read region; eq. 4's derivation ("if t_p > t'_p … otherwise")
//! gives `>` for that case, and we follow eq. 4. The classifier walks i = 0, 1, … and returns
//! the first region cheaper than its successor ([`lt_classify`]). A block with no history
//! (X = Y = 0) is classified to the middle region.
//!
//! **ST-Classifier** (Algorithm 3): ≥ 5 reads among the last 7 operations → Region-3 (N − 1),
//! ≤ 2 reads → Region-1 (0), else Region-2 (the middle region, (N − 1)/2). *Discrepancy*: the
//! prose of §IV-B says "more than or equal to four writes or four reads out of seven"; we follow
//! the algorithm (thresholds are parameters `st_reads_hi` = 5, `st_reads_lo` = 2).
//!
//! **Combination** (Algorithm 1 lines 12–15): `|LT − ST| < 2` → LT, else the middle region.
//!
//! **Writes** go to the classified region (line 19), which becomes the block's `Reg_mapping`.
//! **Migration checker** (lines 16–17, 24–27): an operation on a block classified to Region-3
//! whose `Reg_mapping` is not Region-3 counts one; when the count reaches
//! `mig_threshold = Cost_migration / (2·Gain_read)` the whole logical block migrates: each of
//! its valid pages not already in the target region is read and programmed there
//! (`Action::Rewrite` with `Source::Migration`, so the migration costs flash time). We take
//! `Cost_migration = V·(t_r(src) + t_p(dst))` for the V pages to move and
//! `Gain_read = t_r(src) − t_r(dst)` per read request, with src = the block's `Reg_mapping` and
//! the latencies of the classifier's stage (the paper gives the formula, not its terms).
//!
//! **Wear-out awareness** (§IV-B "latency sensor", §V-C): `efm` re-reads the regions' latencies
//! whenever the device's wear stage (mean P/E, `regions.stage_pe`) changes, so the LT thresholds
//! and the migration threshold follow Table III; `efm_static` keeps the Stage-1 latencies.
//! **Reduced effective wearing** (§IV-B, §V-D) is a property of the device: `regions.wear_weight`
//! (0.8 for Region-1) and the engine's effective-wear lifetime in the report.
//!
//! Data written by preconditioning (the trace's touched pages, before the replay) is placed in
//! `fill_region` (default: the middle region) — the paper does not say where SSDsim's
//! pre-written pages live; every region-aware scheme here uses the same default.
//!
//! Parameters: `period_s` (T, default 60 s: the paper gives none), `decay` (0.2), `mro_ops`
//! (7), `st_reads_hi` (5), `st_reads_lo` (2), `mig_threshold` (0 = the formula above),
//! `fill_region` (−1 = middle), `wear_aware` (true for `efm`, false for `efm_static`),
//! `migration_sync` (false: migrations run in the background; true: the host request that
//! triggers one waits for it, as the EFM baselines' reconstruction in [`super::migration`]).
//! Memory: 4 + 4 + 1 + 1 + 4 bytes per logical block.

use serde_json::json;

use super::params::Params;
use super::{Action, Ctx, Placement, RegionInfo, Scheme, Source};
use crate::config::ConfigError;
use crate::flash::Timing;
use crate::trace::Op;

/// Thresholds θ_i of eq. 4 between regions i and i + 1:
/// θ_i = (t_r(i+1) − t_r(i)) / (t_p(i) − t_p(i+1)); with t_p(i) < t_p(i+1), region i is the
/// cheaper of the two for a block whose write/read ratio Y/X exceeds θ_i. `NaN` when the two
/// program latencies are equal.
pub fn lt_thresholds(t_r: &[f64], t_p: &[f64]) -> Vec<f64> {
    (0..t_r.len().saturating_sub(1))
        .map(|i| (t_r[i + 1] - t_r[i]) / (t_p[i] - t_p[i + 1]))
        .collect()
}

/// LT-Classifier (Algorithm 2 with eq. 4's inequality): the first region i whose cost
/// `w·t_p(i) + r·t_r(i)` is below region i + 1's, else the last region; the middle region when
/// there is no history (`w = r = 0`).
pub fn lt_classify(w: f64, r: f64, t_r: &[f64], t_p: &[f64]) -> usize {
    let n = t_r.len();
    if w <= 0.0 && r <= 0.0 {
        return (n.max(1) - 1) / 2;
    }
    let cost = |i: usize| w * t_p[i] + r * t_r[i];
    (0..n.saturating_sub(1))
        .find(|&i| cost(i) < cost(i + 1))
        .unwrap_or(n.max(1) - 1)
}

/// ST-Classifier (Algorithm 3): reads (1 bits) among the last `ops` operations of `mro`:
/// `≥ hi` → the last region (read-intensive), `≤ lo` → region 0 (write-intensive), else the
/// middle region.
pub fn st_classify(mro: u32, ops: u32, hi: u32, lo: u32, n: usize) -> usize {
    let mask = if ops >= 32 {
        u32::MAX
    } else {
        (1u32 << ops) - 1
    };
    let reads = (mro & mask).count_ones();
    if reads >= hi {
        n.max(1) - 1
    } else if reads <= lo {
        0
    } else {
        (n.max(1) - 1) / 2
    }
}

/// Combination (Algorithm 1 lines 12–15): LT when `|LT − ST| < 2`, else the middle region.
pub fn combine(lt: usize, st: usize, n: usize) -> usize {
    if lt.abs_diff(st) < 2 {
        lt
    } else {
        (n.max(1) - 1) / 2
    }
}

/// Migration threshold `Cost_migration / (2·Gain_read)` (§IV-B) for moving `pages` pages from a
/// region read in `t_r_src` to one read in `t_r_dst` and programmed in `t_p_dst` (any time
/// unit); infinite when the move gains nothing.
pub fn mig_threshold(pages: u32, t_r_src: f64, t_r_dst: f64, t_p_dst: f64) -> f64 {
    let gain = t_r_src - t_r_dst;
    if gain <= 0.0 || pages == 0 {
        return f64::INFINITY;
    }
    pages as f64 * (t_r_src + t_p_dst) / (2.0 * gain)
}

/// The scheme state.
#[derive(Clone, Debug)]
pub struct Efm {
    name: &'static str,
    wear_aware: bool,
    period_ns: u64,
    decay: f32,
    mro_ops: u32,
    st_hi: u32,
    st_lo: u32,
    mig_fixed: f64,
    /// The host request that triggers a migration waits for it (`migration_sync`).
    migration_sync: bool,
    fill_region: i64,
    regions: RegionInfo,
    /// Wear stage whose latencies the classifiers use.
    stage: usize,
    t_r: Vec<f64>,
    t_p: Vec<f64>,
    /// LPNs per logical block (0 until sized).
    ppb: u32,
    logical_pages: u32,
    read_tbl: Vec<f32>,
    write_tbl: Vec<f32>,
    mro: Vec<u8>,
    reg: Vec<u8>,
    mig: Vec<u32>,
    gc_stream: u8,
    // statistics
    host_pages_by_region: Vec<u64>,
    lt_by_region: Vec<u64>,
    st_by_region: Vec<u64>,
    conflicts: u64,
    migrations: u64,
    migrated_pages: u64,
    mig_threshold_sum: f64,
    stage_updates: u64,
    decays: u64,
}

impl Efm {
    /// Build from `[scheme.params]`; `wear_aware = false` is `efm_static`.
    pub fn new(
        params: &toml::Table,
        _timing: &Timing,
        streams: u32,
        wear_aware: bool,
    ) -> Result<Self, ConfigError> {
        let name = if wear_aware { "efm" } else { "efm_static" };
        let p = Params::new(name, params);
        let period_s = p.f64("period_s", 60.0, 0.001, 1e9)?;
        let decay = p.f64("decay", 0.2, 0.0, 1.0)? as f32;
        let mro_ops = p.usize("mro_ops", 7, 1, 8)? as u32;
        let st_hi = p.usize("st_reads_hi", 5, 0, 8)? as u32;
        let st_lo = p.usize("st_reads_lo", 2, 0, 8)? as u32;
        let mig_fixed = p.f64("mig_threshold", 0.0, 0.0, 1e12)?;
        let fill_region = p.usize("fill_region", 255, 0, 255)? as i64;
        let wear_aware = p.bool("wear_aware", wear_aware)?;
        let migration_sync = p.bool("migration_sync", false)?;
        p.finish()?;
        Ok(Efm {
            name,
            wear_aware,
            period_ns: (period_s * 1e9).round() as u64,
            decay,
            mro_ops,
            st_hi,
            st_lo,
            mig_fixed,
            migration_sync,
            fill_region: if fill_region == 255 { -1 } else { fill_region },
            regions: RegionInfo::single(0, 0),
            stage: 0,
            t_r: vec![0.0],
            t_p: vec![0.0],
            ppb: 0,
            logical_pages: 0,
            read_tbl: Vec::new(),
            write_tbl: Vec::new(),
            mro: Vec::new(),
            reg: Vec::new(),
            mig: Vec::new(),
            gc_stream: if streams > 1 { 1 } else { 0 },
            host_pages_by_region: vec![0],
            lt_by_region: vec![0],
            st_by_region: vec![0],
            conflicts: 0,
            migrations: 0,
            migrated_pages: 0,
            mig_threshold_sum: 0.0,
            stage_updates: 0,
            decays: 0,
        })
    }

    fn n(&self) -> usize {
        self.regions.n
    }

    fn fill(&self) -> u8 {
        super::fill_region(self.fill_region, self.n())
    }

    /// Latencies of `stage` into the classifier (the latency sensor).
    fn load_stage(&mut self, stage: usize) {
        self.stage = stage;
        let n = self.n();
        self.t_r = (0..n).map(|r| self.regions.read(r, stage) as f64).collect();
        self.t_p = self.regions.program_ns.iter().map(|&x| x as f64).collect();
    }

    fn ensure_sized(&mut self, ctx: &Ctx<'_>) {
        if self.ppb != 0 {
            return;
        }
        self.ppb = ctx.ftl.geo.pages_per_block.max(1);
        self.logical_pages = ctx.ftl.logical_pages;
        let blocks = (self.logical_pages as usize).div_ceil(self.ppb as usize);
        self.read_tbl = vec![0.0; blocks];
        self.write_tbl = vec![0.0; blocks];
        self.mro = vec![0; blocks];
        self.reg = vec![self.fill(); blocks];
        self.mig = vec![0; blocks];
    }

    /// Latency sensor: follow the device's wear stage (`efm`) or stay at Stage-1
    /// (`efm_static`).
    fn sense(&mut self, ctx: &Ctx<'_>) {
        if self.wear_aware {
            let s = ctx.ftl.wear_stage().min(self.regions.stages - 1);
            if s != self.stage {
                self.load_stage(s);
                self.stage_updates += 1;
            }
        }
    }

    /// Classification of logical block `i` now (LT and ST combined).
    pub fn classify(&mut self, i: usize) -> usize {
        let n = self.n();
        let lt = lt_classify(
            self.write_tbl[i] as f64,
            self.read_tbl[i] as f64,
            &self.t_r,
            &self.t_p,
        );
        let st = st_classify(self.mro[i] as u32, self.mro_ops, self.st_hi, self.st_lo, n);
        self.lt_by_region[lt] += 1;
        self.st_by_region[st] += 1;
        let c = combine(lt, st, n);
        if c != lt {
            self.conflicts += 1;
        }
        c
    }

    /// Algorithm 1 for `k` pages of one request on logical block `i`.
    fn process(&mut self, op: Op, i: usize, k: u32, ctx: &Ctx<'_>, actions: &mut Vec<Action>) {
        let mask = ((1u32 << self.mro_ops) - 1) as u8;
        match op {
            Op::Read => {
                self.read_tbl[i] += k as f32;
                self.mro[i] = ((self.mro[i] << 1) | 1) & mask;
            }
            Op::Write => {
                self.write_tbl[i] += k as f32;
                self.mro[i] = (self.mro[i] << 1) & mask;
            }
            // The engine calls no scheme hook for a discard.
            Op::Trim => return,
        }
        let class = self.classify(i);
        let last = (self.n() - 1) as u8;
        if self.reg[i] != last && class == last as usize {
            self.mig[i] = self.mig[i].saturating_add(1);
        }
        match op {
            Op::Write => {
                self.reg[i] = class as u8;
                self.mig[i] = 0;
            }
            Op::Read => {
                if self.mig[i] > 0 {
                    self.check_migration(i, class as u8, ctx, actions);
                }
            }
            Op::Trim => {}
        }
    }

    fn threshold(&self, pages: u32, src: u8, dst: u8) -> f64 {
        if self.mig_fixed > 0.0 {
            return self.mig_fixed;
        }
        mig_threshold(
            pages,
            self.t_r[src as usize],
            self.t_r[dst as usize],
            self.t_p[dst as usize],
        )
    }

    /// Migration checker (Algorithm 1 lines 24–27).
    fn check_migration(&mut self, i: usize, dst: u8, ctx: &Ctx<'_>, actions: &mut Vec<Action>) {
        let src = self.reg[i];
        let count = self.mig[i] as f64;
        // Cheap bound first: the threshold grows with the pages to move.
        if count < self.threshold(1, src, dst) {
            return;
        }
        let first = i as u32 * self.ppb;
        let end = (first + self.ppb).min(self.logical_pages);
        let ftl = ctx.ftl;
        let mut pages = 0u32;
        for lpn in first..end {
            let ppn = ftl.lookup(lpn);
            if ppn != crate::ftl::UNMAPPED && ftl.block_region(ftl.geo.block_of_ppn(ppn)) != dst {
                pages += 1;
            }
        }
        let thr = self.threshold(pages, src, dst);
        if count < thr {
            return;
        }
        self.reg[i] = dst;
        self.mig[i] = 0;
        if pages == 0 {
            return;
        }
        self.migrations += 1;
        self.migrated_pages += pages as u64;
        self.mig_threshold_sum += thr;
        for lpn in first..end {
            let ppn = ftl.lookup(lpn);
            if ppn != crate::ftl::UNMAPPED && ftl.block_region(ftl.geo.block_of_ppn(ppn)) != dst {
                actions.push(Action::Rewrite {
                    lpn,
                    source: Source::Migration,
                    wait: self.migration_sync,
                });
            }
        }
    }

    fn region_of(&self, lpn: u32) -> u8 {
        if self.ppb == 0 {
            return self.fill();
        }
        self.reg[(lpn / self.ppb) as usize]
    }

    /// Test view: (Read_TBL, Write_TBL, MRO, Reg_mapping, migration count) of logical block `i`.
    pub fn block_state(&self, i: usize) -> (f32, f32, u8, u8, u32) {
        (
            self.read_tbl[i],
            self.write_tbl[i],
            self.mro[i],
            self.reg[i],
            self.mig[i],
        )
    }

    /// Test view: the latencies the classifier uses (read, program), ns.
    pub fn latencies(&self) -> (&[f64], &[f64]) {
        (&self.t_r, &self.t_p)
    }
}

impl Scheme for Efm {
    fn name(&self) -> &'static str {
        self.name
    }

    fn validate_device(&self, dev: &super::DeviceInfo) -> Result<(), ConfigError> {
        dev.need_regions(self.name, 1)
    }

    fn set_regions(&mut self, info: &RegionInfo) {
        self.regions = info.clone();
        let n = info.n;
        self.host_pages_by_region = vec![0; n];
        self.lt_by_region = vec![0; n];
        self.st_by_region = vec![0; n];
        self.load_stage(0);
    }

    fn on_request(
        &mut self,
        op: Op,
        first_lpn: u32,
        pages: u32,
        ctx: &Ctx<'_>,
        actions: &mut Vec<Action>,
    ) {
        self.ensure_sized(ctx);
        self.sense(ctx);
        let (ppb, logical) = (self.ppb, self.logical_pages.max(1));
        let mut lpn = first_lpn % logical;
        let mut left = pages;
        while left > 0 {
            let k = left.min(ppb - lpn % ppb).min(logical - lpn);
            self.process(op, (lpn / ppb) as usize, k, ctx, actions);
            left -= k;
            lpn = (lpn + k) % logical;
        }
    }

    fn placement(&mut self, lpn: u32, source: Source, _ctx: &Ctx<'_>) -> Placement {
        let region = self.region_of(lpn);
        let stream = if source == Source::Host {
            self.host_pages_by_region[region as usize] += 1;
            0
        } else {
            self.gc_stream
        };
        Placement::in_region(stream, region)
    }

    fn precondition_placement(&mut self, _lpn: u32, ctx: &Ctx<'_>) -> Placement {
        self.ensure_sized(ctx);
        Placement::in_region(0, self.fill())
    }

    fn tick_period_ns(&self) -> Option<u64> {
        Some(self.period_ns)
    }

    fn on_tick(&mut self, ctx: &Ctx<'_>, _actions: &mut Vec<Action>) {
        self.sense(ctx);
        let d = self.decay;
        for x in self.read_tbl.iter_mut().chain(self.write_tbl.iter_mut()) {
            *x *= d;
        }
        self.decays += 1;
    }

    /// `n` decays exactly as `n` ticks make them (one multiplication per tick, in order, so
    /// the result is bit-identical), stopping early once every entry is 0 (or the decay is 1),
    /// after which further decays change nothing: a year of idle time costs a few hundred
    /// passes, not 525,600.
    fn on_idle_ticks(&mut self, n: u64, ctx: &Ctx<'_>) -> u64 {
        self.sense(ctx);
        let d = self.decay;
        if d != 1.0 {
            for _ in 0..n {
                let mut any = false;
                for x in self.read_tbl.iter_mut().chain(self.write_tbl.iter_mut()) {
                    *x *= d;
                    any |= *x != 0.0;
                }
                if !any {
                    break;
                }
            }
        }
        self.decays += n;
        n
    }

    fn stats(&self) -> serde_json::Value {
        json!({
            "wear_aware": self.wear_aware,
            "classifier_stage": self.stage,
            "classifier_read_us": self.t_r.iter().map(|x| x / 1000.0).collect::<Vec<_>>(),
            "classifier_program_us": self.t_p.iter().map(|x| x / 1000.0).collect::<Vec<_>>(),
            "lt_thresholds": lt_thresholds(&self.t_r, &self.t_p),
            "host_pages_by_region": self.host_pages_by_region,
            "lt_by_region": self.lt_by_region,
            "st_by_region": self.st_by_region,
            "lt_st_conflicts": self.conflicts,
            "migrations": self.migrations,
            "migrated_pages": self.migrated_pages,
            "mean_mig_threshold": if self.migrations == 0 { 0.0 } else {
                self.mig_threshold_sum / self.migrations as f64 },
            "stage_updates": self.stage_updates,
            "decays": self.decays,
            "logical_block_pages": self.ppb,
            "table_bytes": self.read_tbl.len() * 14,
        })
    }
}
