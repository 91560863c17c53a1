//! `hotis`: hot data identification by inter-reference recency with a GC-driven threshold
//! (J. Gu, C. Wu, J. Li, M. Guo, "HOTIS: A Hot Data Identification Scheme to Optimize Garbage
//! Collection of SSDs", ISPA/IUCC 2017, doi:10.1109/ispa/iucc.2017.00054), as the EFM paper's
//! baseline (EFM §V, ref. \[21\]).
//!
//! **What HOTIS does** (public abstract): hot and cold data are written into different blocks
//! to cut GC page migrations; instead of cache-derived LRU/LFU identifiers, "HOTIS exploits the
//! information collected during garbage collections, and calculates the number of blocks with
//! fewer valid pages to dynamically set the threshold of IRR (Inter-Reference Recency)". The
//! full text is not public here, so the following is our reading of the abstract:
//!
//! * **IRR** of a host write of an LPN = host page writes since that LPN's previous host write
//!   (∞ for its first write in the trace). The write is hot when IRR ≤ θ.
//! * **Threshold θ** (pages). At GC, blocks with fewer valid pages are those whose data was
//!   overwritten before GC reached them: data rewritten within the span of writes that fills
//!   them dies young. When GC runs, HOTIS counts the full blocks whose valid pages are below
//!   half a block (`low_valid_fraction`) and sets θ = that count × pages per block (at most
//!   once per `pages_per_block` GC moves; the count scans every block). Before the first GC
//!   θ = `initial_irr_fraction` × logical pages (default 0.01; our choice).
//!
//! **Mapping onto EFM's regions.** EFM §V-D gives HOTIS's reduced threshold voltage to
//! Region-1, i.e. HOTIS's hot data goes to Region-1 (fast write). We map IRR ≤ θ → Region-1,
//! θ < IRR ≤ 2θ → Region-2 (a third class for the middle region: our extension), colder writes
//! and first writes → Region-3 (fast read: cold data is read-mostly). EFM Fig. 6 reports large
//! migration overheads for HOTIS, from moving cold data at GC; here GC keeps a block's region
//! (regions are block pools), so HOTIS's cold/hot separation at GC happens within the victim's
//! region (GC stream). Preconditioned data goes to `fill_region` (default: the middle region, as
//! every region scheme).
//!
//! **Migration** (our reconstruction, off by default; [`super::migration`]): EFM §V-B says
//! HOTIS "pre-allocate\[s\] data to the low-read latency region" and pays a large migration
//! overhead. With `read_migration = true` a host read of a page that is cold now (not rewritten
//! within warm_factor·θ host page writes, or never written in the trace) and lies outside the
//! last region (fast read) migrates it there at once, with `migration_granularity` (`page` |
//! `block`) and `migration_sync` (false: background; true: the read waits).
//!
//! Parameters: `initial_irr_fraction` (0.01), `low_valid_fraction` (0.5), `warm_factor` (2:
//! the Region-2 band is θ < IRR ≤ warm_factor·θ), `fill_region` (−1 = middle),
//! `read_migration` (false), `migration_granularity` (`page`), `migration_sync` (false).
//! Memory: 4 bytes per logical page.

use serde_json::json;

use super::params::Params;
use super::{Action, Ctx, Placement, RegionInfo, Scheme, Source};
use crate::config::ConfigError;
use crate::flash::Timing;
use crate::ftl::BlockState;

/// The scheme state.
#[derive(Clone, Debug)]
pub struct Hotis {
    init_frac: f64,
    low_valid: f64,
    warm_factor: f64,
    fill_region: i64,
    n: usize,
    /// Host page-write sequence number of each LPN's last host write (0 = never).
    last: Vec<u32>,
    seq: u32,
    threshold: u64,
    moves_since_update: u64,
    gc_stream: u8,
    // statistics
    writes_by_class: [u64; 3],
    first_writes: u64,
    threshold_updates: u64,
    read_migration: bool,
    mig: super::migration::EagerMigration,
    migrations: u64,
}

impl Hotis {
    /// Build from `[scheme.params]`.
    pub fn new(params: &toml::Table, _timing: &Timing, streams: u32) -> Result<Self, ConfigError> {
        let p = Params::new("hotis", params);
        let init_frac = p.f64("initial_irr_fraction", 0.01, 0.0, 1.0)?;
        let low_valid = p.f64("low_valid_fraction", 0.5, 0.0, 1.0)?;
        let warm_factor = p.f64("warm_factor", 2.0, 1.0, 1e6)?;
        let fill = p.usize("fill_region", 255, 0, 255)? as i64;
        let read_migration = p.bool("read_migration", false)?;
        let mig = super::migration::EagerMigration::from_params(&p, "page")?;
        p.finish()?;
        Ok(Hotis {
            init_frac,
            low_valid,
            warm_factor,
            fill_region: if fill == 255 { -1 } else { fill },
            n: 1,
            last: Vec::new(),
            seq: 0,
            threshold: 0,
            moves_since_update: u64::MAX,
            gc_stream: if streams > 1 { 1 } else { 0 },
            writes_by_class: [0; 3],
            first_writes: 0,
            threshold_updates: 0,
            read_migration,
            mig,
            migrations: 0,
        })
    }

    fn ensure_sized(&mut self, ctx: &Ctx<'_>) {
        if !self.last.is_empty() {
            return;
        }
        let n = ctx.ftl.logical_pages as usize;
        self.last = vec![0; n];
        self.threshold = ((n as f64 * self.init_frac).ceil() as u64).max(1);
    }

    fn fill(&self) -> u8 {
        super::fill_region(self.fill_region, self.n)
    }

    /// Class of a host write of `lpn`: 0 hot, 1 warm, 2 cold (first writes are cold).
    fn classify(&mut self, lpn: u32) -> usize {
        self.seq = self.seq.wrapping_add(1).max(1);
        let i = lpn as usize;
        let prev = self.last[i];
        self.last[i] = self.seq;
        if prev == 0 {
            self.first_writes += 1;
            return 2;
        }
        let irr = self.seq.wrapping_sub(prev) as u64;
        if irr <= self.threshold {
            0
        } else if (irr as f64) <= self.threshold as f64 * self.warm_factor {
            1
        } else {
            2
        }
    }

    /// The GC-driven threshold: blocks with few valid pages × pages per block.
    fn update_threshold(&mut self, ctx: &Ctx<'_>) {
        let f = ctx.ftl;
        let ppb = f.geo.pages_per_block;
        let limit = (ppb as f64 * self.low_valid) as u32;
        let low = (0..f.geo.blocks())
            .filter(|&b| f.block_state(b) == BlockState::Full && f.block_valid(b) < limit)
            .count() as u64;
        self.threshold = (low * ppb as u64).max(1);
        self.threshold_updates += 1;
    }
}

impl Scheme for Hotis {
    fn name(&self) -> &'static str {
        "hotis"
    }

    fn validate_device(&self, dev: &super::DeviceInfo) -> Result<(), ConfigError> {
        dev.need_regions("hotis", 1)
    }

    fn set_regions(&mut self, info: &RegionInfo) {
        self.n = info.n.max(1);
    }

    fn on_host_read(&mut self, lpn: u32, _ppn: u32, ctx: &Ctx<'_>, actions: &mut Vec<Action>) {
        if !self.read_migration || self.n < 2 {
            return;
        }
        self.ensure_sized(ctx);
        let prev = self.last[lpn as usize];
        let cold = prev == 0
            || self.seq.wrapping_sub(prev) as f64 > self.threshold as f64 * self.warm_factor;
        if cold {
            self.migrations += self.mig.on_read(lpn, (self.n - 1) as u8, ctx, actions);
        }
    }

    fn placement(&mut self, lpn: u32, source: Source, ctx: &Ctx<'_>) -> Placement {
        self.ensure_sized(ctx);
        let (stream, region) = if source == Source::Host {
            self.mig.on_write(lpn, ctx.ftl.geo.pages_per_block);
            let c = self.classify(lpn);
            self.writes_by_class[c] += 1;
            // Three classes onto n regions: 0 → first, 2 → last, 1 → middle.
            let r = match c {
                0 => 0,
                2 => self.n - 1,
                _ => (self.n - 1) / 2,
            };
            (0, r as u8)
        } else if source == Source::Migration {
            let r = self.mig.target(lpn).unwrap_or_else(|| self.fill());
            (self.gc_stream, r)
        } else {
            (self.gc_stream, self.fill())
        };
        Placement::in_region(stream, region)
    }

    fn gc_move(&mut self, lpn: u32, _ppn: u32, ctx: &Ctx<'_>) -> Placement {
        self.ensure_sized(ctx);
        let ppb = ctx.ftl.geo.pages_per_block as u64;
        if self.moves_since_update >= ppb {
            self.update_threshold(ctx);
            self.moves_since_update = 0;
        }
        self.moves_since_update += 1;
        self.placement(lpn, Source::Gc, ctx)
    }

    fn precondition_placement(&mut self, _lpn: u32, ctx: &Ctx<'_>) -> Placement {
        self.ensure_sized(ctx);
        Placement::in_region(0, self.fill())
    }

    fn stats(&self) -> serde_json::Value {
        let mut v = json!({
            "host_writes_hot": self.writes_by_class[0],
            "host_writes_warm": self.writes_by_class[1],
            "host_writes_cold": self.writes_by_class[2],
            "first_writes": self.first_writes,
            "irr_threshold_pages": self.threshold,
            "threshold_updates": self.threshold_updates,
            "state_bytes": self.last.len() * 4,
        });
        if self.read_migration {
            v["region_migrations"] = json!(self.migrations);
            v["block_migrations"] = json!(self.mig.blocks_queued);
            v["migration_sync"] = json!(self.mig.sync);
        }
        v
    }
}
