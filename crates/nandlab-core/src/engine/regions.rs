//! Regions (`[regions]`): the engine's flat per-region tables, program mode by region, and the
//! per-region counters of the EFM Fig. 6 breakdown.

use super::Engine;
use crate::flash::Timing;
use crate::scheme::{Placement, Source};

/// Flat per-region tables of the engine's hot path (`[regions]`).
#[derive(Clone, Debug)]
pub(super) struct RegionRuntime {
    /// Regions.
    pub(super) n: usize,
    /// Wear stages.
    pub(super) stages: usize,
    /// Program mode of each region.
    pub(super) mode: Vec<u8>,
    /// Read latency by `region · stages + stage`, ns (table source).
    pub(super) read_ns: Vec<u64>,
    /// Read latency comes from the table (else from the reliability model).
    pub(super) table: bool,
    /// Whether region r is a lowest-read-latency region at stage s (`r · stages + s`).
    pub(super) opt_read: Vec<bool>,
    /// Whether region r is a lowest-program-latency region.
    pub(super) opt_write: Vec<bool>,
    /// Wear stage when the replay started.
    pub(super) stage_at_start: usize,
    pub(super) mean_pe_at_start: f64,
}

impl Engine {
    /// The program mode of a page placed by `pl`: its region's with `[regions]`, else the
    /// scheme's.
    #[inline]
    pub(super) fn region_mode(&self, pl: Placement) -> u8 {
        match &self.rg {
            Some(rg) => rg.mode[pl.region as usize],
            None => pl.mode,
        }
    }

    /// `" region NAME"` for messages (empty without regions).
    pub(super) fn region_note(&self, region: u8) -> String {
        if self.rg.is_some() {
            format!(" region {}", self.cfg.regions.name(region as usize))
        } else {
            String::new()
        }
    }

    /// Per-region read counters and the EFM Fig. 6 breakdown of a read of `ppn` costing
    /// `ns` of flash time.
    pub(super) fn count_region_read(&mut self, source: Source, ppn: u32, ns: u64) {
        let Some(rg) = &self.rg else { return };
        let r = self.ftl.block_region(self.ftl.block_of(ppn)) as usize;
        let st = &mut self.stats.regions;
        st.reads[r] += 1;
        match source {
            Source::Host => {
                st.host_reads[r] += 1;
                if rg.opt_read[r * rg.stages + self.ftl.wear_stage()] {
                    st.optimal_ns += ns;
                } else {
                    st.nonoptimal_read_ns += ns;
                }
            }
            _ => st.add_background(source, ns),
        }
    }

    /// Per-region program counters and the Fig. 6 breakdown of a program costing `ns`.
    pub(super) fn count_region_program(&mut self, source: Source, region: u8, ns: u64) {
        let Some(rg) = &self.rg else { return };
        let r = region as usize;
        let st = &mut self.stats.regions;
        st.programs[r] += 1;
        match source {
            Source::Host => {
                st.host_programs[r] += 1;
                if rg.opt_write[r] {
                    st.optimal_ns += ns;
                } else {
                    st.nonoptimal_write_ns += ns;
                }
            }
            _ => st.add_background(source, ns),
        }
    }
}

impl RegionRuntime {
    pub(super) fn new(
        cfg: &crate::config::RegionsConfig,
        timing: &Timing,
    ) -> Option<RegionRuntime> {
        if cfg.is_off() {
            return None;
        }
        let n = cfg.count();
        let stages = cfg.stages();
        let mode: Vec<u8> = cfg.program_modes.iter().map(|&m| m as u8).collect();
        let table = cfg.read_latency == crate::config::RegionReadLatency::Table;
        let mut read_ns = vec![0u64; n * stages];
        for (r, row) in cfg.read_us.iter().enumerate().take(n) {
            for (s, &us) in row.iter().enumerate().take(stages) {
                read_ns[r * stages + s] = (us * 1000.0).round() as u64;
            }
        }
        let mut opt_read = vec![false; n * stages];
        for s in 0..stages {
            let best = (0..n).map(|r| read_ns[r * stages + s]).min().unwrap_or(0);
            for r in 0..n {
                opt_read[r * stages + s] = read_ns[r * stages + s] == best;
            }
        }
        let prog = |r: usize| timing.program_ns(crate::flash::PageType::Lsb, mode[r]);
        let best_w = (0..n).map(prog).min().unwrap_or(0);
        let opt_write = (0..n).map(|r| prog(r) == best_w).collect();
        Some(RegionRuntime {
            n,
            stages,
            mode,
            read_ns,
            table,
            opt_read,
            opt_write,
            stage_at_start: 0,
            mean_pe_at_start: 0.0,
        })
    }
}
