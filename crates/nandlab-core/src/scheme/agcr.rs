//! `agcr` (also `tos18`): access-characteristic guided cost regulation (Li, Shi, Xue et al.,
//! FAST'16; journal version IEEE TC 2018, the EFM paper's "TOS18"), as Xia & Xiao use it as
//! their baseline (§II-B, §V-A, Table I).
//!
//! Every page is LDPC-coded ("AGCR uses a uniform strong ECC scheme", Xia §II-B); the program
//! cost follows the page's access characteristic, and its read cost follows the program cost:
//!
//! | class | program | read (Table I) |
//! |---|---|---|
//! | read-only | high cost, 2600 µs | low-cost LDPC read, 75 µs |
//! | interleaved (or unknown) | medium, 1300 µs | 110 µs |
//! | write-only | low cost, 650 µs | high-cost LDPC read, 145 µs |
//!
//! **History window (our reading).** Li et al. classify a logical page by its recorded access
//! history; the public abstract says only that "logical pages receiving more reads will be written
//! using a finer step size" and Xia & Xiao that AGCR "need\[s\] to record the access histories for
//! all logical pages". We keep two bits per LPN — *read since its last host write* (R) and
//! *host-written during the run* (W) — i.e. a window of one version of the page:
//! * host write: R → interleaved (the old version was read, now it is rewritten); ¬R ∧ W →
//!   write-only (overwritten without being read); ¬R ∧ ¬W → unknown (first write) → medium;
//!   then R := 0, W := 1;
//! * GC move or rewrite of a still-valid page: R → read-only (read since written and not
//!   overwritten); ¬R ∧ W → write-only; otherwise medium;
//! * host read: R := 1.
//!
//! Memory: 2 bits per logical page (AGCR's cost; Xia & Xiao's separator is 2 KiB).
//!
//! Preconditioning (the untimed fill and aging before the trace) is not access history: its
//! pages are placed as unknown (medium cost) and the bits stay clear. On a region device they
//! go to `fill_region` (default: the medium class's region, the middle one), as for every
//! region scheme.
//!
//! **On a device with `[regions]`** (the EFM paper's "TOS18" baseline, EFM §V): the three
//! program costs are EFM's three regions — high cost (slow write, fast read) → the last region
//! (Region-3), medium → the middle region (Region-2), low cost → Region-1 — and the region's
//! program mode replaces the `*_mode` parameters. Because GC keeps a block's region there, the
//! read-only reclassification that AGCR applies when a page is moved is done as a migration
//! instead: a host read of a page already read since its last write (read-only so far) that is
//! not in the high-cost region rewrites it there (`Source::Migration`). The EFM paper observes
//! exactly this for TOS18: it "pre-allocate\[s\] data to the low-read latency region" and pays a
//! large migration overhead (§V-B, Fig. 6). `region_migration = false` turns it off. EFM §V-D
//! puts TOS18's reduced-threshold-voltage (effective wearing) data in Region-2, its medium
//! class; that is the configuration's `regions.wear_weight`.
//!
//! **Migration behaviour** (region devices, our reconstruction of the EFM paper's account of
//! TOS18, [`super::migration`]): `migration_granularity` = `page` (default) or `block`,
//! `migration_sync` = false (default, background) or true (the host read waits).
//!
//! Parameters: mode ids `high_mode` (2), `medium_mode` (0), `low_mode` (1) and ECC ids
//! `high_ecc` (3), `medium_ecc` (2), `low_ecc` (1) into the config's tables (see
//! `configs/xia-diffecc.toml`); `region_migration` (true), `migration_granularity`,
//! `migration_sync`, `fill_region` (−1 = the medium class's region).

use serde_json::json;

use super::params::Params;
use super::{Action, Ctx, Placement, Scheme, Source};
use crate::config::ConfigError;
use crate::flash::Timing;

const R: u8 = 1;
const W: u8 = 2;

/// The scheme state.
#[derive(Clone, Debug)]
pub struct Agcr {
    /// 2 bits per LPN, 4 LPNs per byte; sized on first use from the logical capacity.
    history: Vec<u8>,
    high: Placement,
    medium: Placement,
    low: Placement,
    gc_stream: u8,
    placed_read_only: u64,
    placed_interleaved: u64,
    placed_write_only: u64,
    placed_unknown: u64,
    /// `[regions]` configured: classes map to regions and read-only pages migrate.
    regions_on: bool,
    region_migration: bool,
    migrations: u64,
    /// Migration granularity and synchrony on a region device (EFM's TOS18 baseline).
    mig: super::migration::EagerMigration,
    /// `fill_region` parameter (255 = the medium class's region).
    fill_region: i64,
    /// Region of preconditioned data.
    fill: u8,
    /// Built as EFM's "TOS18" baseline: needs a region device.
    tos18: bool,
}

impl Agcr {
    /// Build from `[scheme.params]`.
    pub fn new(params: &toml::Table, timing: &Timing, streams: u32) -> Result<Self, ConfigError> {
        let p = Params::new("agcr", params);
        let nm = timing.modes.len() - 1;
        let ne = timing.eccs.len() - 1;
        let pl = |mode: usize, ecc: usize| Placement {
            stream: 0,
            mode: mode as u8,
            ecc: ecc as u8,
            region: 0,
            page_type: None,
        };
        let high = pl(
            p.usize("high_mode", 2.min(nm), 0, nm)?,
            p.usize("high_ecc", 3.min(ne), 0, ne)?,
        );
        let medium = pl(
            p.usize("medium_mode", 0, 0, nm)?,
            p.usize("medium_ecc", 2.min(ne), 0, ne)?,
        );
        let low = pl(
            p.usize("low_mode", 1.min(nm), 0, nm)?,
            p.usize("low_ecc", 1.min(ne), 0, ne)?,
        );
        let region_migration = p.bool("region_migration", true)?;
        let mig = super::migration::EagerMigration::from_params(&p, "page")?;
        let fill_region = p.usize("fill_region", 255, 0, 255)? as i64;
        p.finish()?;
        Ok(Agcr {
            regions_on: false,
            region_migration,
            migrations: 0,
            mig,
            fill_region: if fill_region == 255 { -1 } else { fill_region },
            fill: 0,
            tos18: false,
            history: Vec::new(),
            high,
            medium,
            low,
            gc_stream: if streams > 1 { 1 } else { 0 },
            placed_read_only: 0,
            placed_interleaved: 0,
            placed_write_only: 0,
            placed_unknown: 0,
        })
    }

    /// The EFM paper's "TOS18" baseline (registry name `tos18`): the same scheme, which then
    /// needs a `[regions]` device ([`Scheme::validate_device`]).
    pub fn requiring_regions(mut self) -> Self {
        self.tos18 = true;
        self
    }

    /// The class of a page never read (history `h` without the R bit), host write or not:
    /// write-only pages go to the low class, pages without history to the medium class.
    /// Counts the placement.
    #[inline]
    fn place_unread(&mut self, h: u8) -> Placement {
        if h & W != 0 {
            self.placed_write_only += 1;
            self.low
        } else {
            self.placed_unknown += 1;
            self.medium
        }
    }

    #[inline]
    fn bits(&mut self, lpn: u32, ctx: &Ctx<'_>) -> u8 {
        if self.history.is_empty() {
            self.history = vec![0; (ctx.ftl.logical_pages as usize).div_ceil(4)];
        }
        self.history[(lpn / 4) as usize] >> (2 * (lpn % 4)) & 3
    }

    #[inline]
    fn set_bits(&mut self, lpn: u32, v: u8) {
        let b = &mut self.history[(lpn / 4) as usize];
        let sh = 2 * (lpn % 4);
        *b = (*b & !(3 << sh)) | (v << sh);
    }
}

impl Scheme for Agcr {
    fn name(&self) -> &'static str {
        "agcr"
    }

    fn validate_device(&self, dev: &super::DeviceInfo) -> Result<(), ConfigError> {
        if self.tos18 {
            return dev.need_regions("tos18", 1);
        }
        let same = |a: &Placement, b: &Placement| a.mode == b.mode && a.ecc == b.ecc;
        if dev.regions >= 2 || !same(&self.high, &self.medium) || !same(&self.medium, &self.low) {
            return Ok(());
        }
        Err(super::DeviceInfo::mismatch(
            "agcr",
            &format!(
                "program modes or ECC kinds that differ between its read-hot, mixed and \
                 write-hot classes (this configuration has {} program mode(s) and {} ECC \
                 kind(s), and no [regions])",
                dev.modes, dev.eccs
            ),
            "xia-diffecc",
        ))
    }

    fn set_regions(&mut self, info: &super::RegionInfo) {
        if !info.configured {
            return;
        }
        self.regions_on = true;
        self.high.region = (info.n - 1) as u8;
        self.medium.region = info.middle();
        self.low.region = 0;
        self.fill = if self.fill_region < 0 {
            self.medium.region
        } else {
            super::fill_region(self.fill_region, info.n)
        };
    }

    fn on_host_read(&mut self, lpn: u32, _ppn: u32, ctx: &Ctx<'_>, actions: &mut Vec<Action>) {
        let h = self.bits(lpn, ctx);
        self.set_bits(lpn, h | R);
        if self.regions_on && self.region_migration && h & R != 0 {
            self.migrations += self.mig.on_read(lpn, self.high.region, ctx, actions);
        }
    }

    /// Data written before the trace has no recorded history: it is placed as unknown (medium)
    /// and leaves the history untouched, so the trace's first write of a preconditioned page
    /// is not mistaken for an overwrite ("write-only").
    fn precondition_placement(&mut self, _lpn: u32, _ctx: &Ctx<'_>) -> Placement {
        Placement {
            region: if self.regions_on { self.fill } else { 0 },
            ..self.medium
        }
    }

    fn placement(&mut self, lpn: u32, source: Source, ctx: &Ctx<'_>) -> Placement {
        let h = self.bits(lpn, ctx);
        if source == Source::Host {
            self.mig.on_write(lpn, ctx.ftl.geo.pages_per_block);
            self.set_bits(lpn, W);
            if h & R != 0 {
                self.placed_interleaved += 1;
                self.medium
            } else {
                self.place_unread(h)
            }
        } else {
            let p = if h & R != 0 {
                self.placed_read_only += 1;
                self.high
            } else {
                self.place_unread(h)
            };
            let region = match source {
                Source::Migration => self.mig.target(lpn).unwrap_or(p.region),
                _ => p.region,
            };
            Placement {
                stream: self.gc_stream,
                region,
                ..p
            }
        }
    }

    fn stats(&self) -> serde_json::Value {
        let mut v = json!({
            "placed_read_only": self.placed_read_only,
            "placed_interleaved": self.placed_interleaved,
            "placed_write_only": self.placed_write_only,
            "placed_unknown": self.placed_unknown,
            "history_bytes": self.history.len(),
        });
        if self.regions_on {
            v["region_migrations"] = json!(self.migrations);
            if self.mig.granularity == super::migration::Granularity::Block || self.mig.sync {
                v["block_migrations"] = json!(self.mig.blocks_queued);
                v["migration_sync"] = json!(self.mig.sync);
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheme::testutil::{ctx, tiny_ftl, xia_diffecc_timing};

    #[test]
    fn classes_follow_the_one_version_history() {
        let t = xia_diffecc_timing();
        let f = tiny_ftl();
        let ctx = ctx(&f, &t);
        let mut s = Agcr::new(&toml::Table::new(), &t, 2).unwrap();
        let mut a = Vec::new();
        let mp = |p: Placement| (p.mode, p.ecc);
        // First write: unknown → medium (1300 µs, 110 µs read).
        assert_eq!(mp(s.placement(1, Source::Host, &ctx)), (0, 2));
        // Overwritten without a read: write-only → low cost (650 µs, 145 µs read).
        assert_eq!(mp(s.placement(1, Source::Host, &ctx)), (1, 1));
        // Read, then written: interleaved → medium.
        s.on_host_read(1, 0, &ctx, &mut a);
        assert_eq!(mp(s.placement(1, Source::Host, &ctx)), (0, 2));
        // Preconditioned data only read, then moved by GC: read-only → high cost (2600, 75).
        s.on_host_read(2, 0, &ctx, &mut a);
        assert_eq!(mp(s.placement(2, Source::Gc, &ctx)), (2, 3));
        // Written and not read since, moved by GC: write-only.
        s.placement(3, Source::Host, &ctx);
        assert_eq!(mp(s.placement(3, Source::Gc, &ctx)), (1, 1));
        // Neighbouring LPNs in the same byte are independent.
        assert_eq!(s.bits(0, &ctx), 0);
        assert_eq!(s.placement(2, Source::Gc, &ctx).stream, 1);
    }
}
