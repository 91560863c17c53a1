//! Eager read-triggered migration into a faster-read region: the migration behaviour the EFM
//! paper attributes to its baselines TOS18 and HOTIS (EFM §V-B, Fig. 6: they "pre-allocate data
//! to the low-read latency region but do not have many read requests arrived in the near
//! future", so "the large migration overhead does not bring too much benefit"). EFM's own
//! contribution is the migration checker that filters such migrations; these baselines have
//! none, so a read that shows a page belongs in the fast-read region moves it at once.
//!
//! **Our reconstruction** (neither baseline's paper is public in full here), as parameters of
//! the scheme that uses it:
//! * `migration_granularity = "page"` moves the page read; `"block"` moves every valid page of
//!   its logical block (`pages_per_block` consecutive LPNs, the unit EFM migrates, §IV-B) not
//!   already in the target region, once per logical block until a host write touches it again;
//! * `migration_sync = false` runs migrations in the background; `true` makes the host read
//!   that triggered them wait until they are programmed, so their time is in its response (our
//!   reading of Fig. 6's "migration overhead contributing to the overall latency").
//!
//! The target region of each queued page is remembered until its program asks for a placement
//! ([`EagerMigration::target`]), so block migrations place pages the scheme's own classifier
//! would put elsewhere.

use std::collections::HashMap;

use super::params::Params;
use super::{Action, Ctx, Source};
use crate::config::ConfigError;

/// Granularity of a migration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Granularity {
    /// The page read.
    Page,
    /// Every valid page of its logical block.
    Block,
}

/// Eager migration state (see the module doc).
#[derive(Clone, Debug)]
pub struct EagerMigration {
    /// Page or block.
    pub granularity: Granularity,
    /// The triggering host request waits for the migration.
    pub sync: bool,
    /// Logical blocks migrated since their last host write (bit per logical block).
    moved: Vec<u64>,
    /// Target region of each queued page.
    targets: HashMap<u32, u8>,
    /// Migrations started (pages queued).
    pub pages_queued: u64,
    /// Block migrations started.
    pub blocks_queued: u64,
}

impl EagerMigration {
    /// Read `migration_granularity` (default `default_granularity`) and `migration_sync`
    /// (default `false`).
    ///
    /// # Errors
    /// [`ConfigError`] for a bad value.
    pub fn from_params(p: &Params<'_>, default_granularity: &str) -> Result<Self, ConfigError> {
        let g = p.choice(
            "migration_granularity",
            default_granularity,
            &["page", "block"],
        )?;
        Ok(EagerMigration {
            granularity: if g == "block" {
                Granularity::Block
            } else {
                Granularity::Page
            },
            sync: p.bool("migration_sync", false)?,
            moved: Vec::new(),
            targets: HashMap::new(),
            pages_queued: 0,
            blocks_queued: 0,
        })
    }

    /// A host read of `lpn` shows it belongs in `target`: queue its migration (page or logical
    /// block) into `actions` unless it is there already. Returns the pages queued.
    pub fn on_read(
        &mut self,
        lpn: u32,
        target: u8,
        ctx: &Ctx<'_>,
        actions: &mut Vec<Action>,
    ) -> u64 {
        let f = ctx.ftl;
        let region_of = |l: u32| {
            let p = f.lookup(l);
            (p != crate::ftl::UNMAPPED).then(|| f.block_region(f.geo.block_of_ppn(p)))
        };
        let mut n = 0;
        match self.granularity {
            Granularity::Page => {
                if region_of(lpn).is_some_and(|r| r != target) {
                    self.queue(lpn, target, actions);
                    n = 1;
                }
            }
            Granularity::Block => {
                let ppb = f.geo.pages_per_block;
                let lb = lpn / ppb;
                if self.moved.is_empty() {
                    self.moved = vec![0; (f.logical_pages / ppb + 1).div_ceil(64) as usize];
                }
                let (w, b) = ((lb / 64) as usize, lb % 64);
                if self.moved[w] >> b & 1 == 1 || region_of(lpn).is_none_or(|r| r == target) {
                    return 0;
                }
                self.moved[w] |= 1 << b;
                self.blocks_queued += 1;
                let end = ((lb + 1) * ppb).min(f.logical_pages);
                for l in lb * ppb..end {
                    if region_of(l).is_some_and(|r| r != target) {
                        self.queue(l, target, actions);
                        n += 1;
                    }
                }
            }
        }
        n
    }

    fn queue(&mut self, lpn: u32, target: u8, actions: &mut Vec<Action>) {
        self.targets.insert(lpn, target);
        self.pages_queued += 1;
        actions.push(Action::Rewrite {
            lpn,
            source: Source::Migration,
            wait: self.sync,
        });
    }

    /// A host write of `lpn`: its logical block may be migrated again.
    pub fn on_write(&mut self, lpn: u32, pages_per_block: u32) {
        self.targets.remove(&lpn);
        let lb = lpn / pages_per_block;
        if let Some(w) = self.moved.get_mut((lb / 64) as usize) {
            *w &= !(1 << (lb % 64));
        }
    }

    /// The target region of a queued migration of `lpn` (consumed), for the scheme's
    /// placement of its program.
    pub fn target(&mut self, lpn: u32) -> Option<u8> {
        self.targets.remove(&lpn)
    }
}
