//! `[regions]`, `[refresh]` and `[reliability]`: block pools with their own program mode,
//! ECC and read latency (EFM, FlexLevel), data refresh (IDA), and the reliability model.

use serde::{Deserialize, Serialize};

use super::error::{check_range, check_us, invalid, ConfigError};

/// Where a region's read latency comes from.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum RegionReadLatency {
    /// `regions.read_us[region][stage]` (EFM Tables II–III): the read latency of a page is its
    /// region's at the device's current wear stage (plus its ECC's extra sensing and decode).
    #[default]
    Table,
    /// The reliability model (`reliability.model = "vth"`): a page's RBER follows its region's
    /// program mode (ΔVpp from the program time, EFM eq. 2) and its block's P/E; the table, when
    /// given, only feeds the schemes' latency sensor.
    Model,
}

/// Physical regions (EFM §IV, DESIGN §6): each plane's blocks are split into `fractions.len()`
/// pools. A block belongs to one region for life (its ISPP step and threshold voltage are a
/// physical setting): GC relocates a victim's pages within its region and an erased block
/// returns to its region's free list. Schemes name regions by index (0 = EFM's Region-1).
///
/// Region count, sizes and latencies are configuration only: `fractions = [0.5, 0.5]` with two
/// entries in every per-region list is a two-region device.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
#[serde(default, deny_unknown_fields)]
pub struct RegionsConfig {
    /// Fraction of each plane's blocks in each region (sum 1); empty = no regions.
    pub fractions: Vec<f64>,
    /// Names in reports (default `region1`, `region2`, …).
    pub names: Vec<String>,
    /// Program mode id of each region (index into the timing's program modes: 0 =
    /// `timing.program_us`, 1… = `timing.program_modes`). A page's program mode is its
    /// region's, whatever mode the scheme asked for.
    pub program_modes: Vec<u32>,
    /// Read latency of each region at each wear stage, µs (`read_us[region][stage]`).
    pub read_us: Vec<Vec<f64>>,
    /// Mean P/E cycles at which each wear stage starts (first 0, increasing); empty = one
    /// stage.
    pub stage_pe: Vec<f64>,
    /// Weight of an erase (and of a program) of each region toward lifetime (EFM §V-D: 0.8 for
    /// the reduced-threshold-voltage Region-1); empty = 1 for every region.
    pub wear_weight: Vec<f64>,
    /// `table` (default) or `model`.
    pub read_latency: RegionReadLatency,
    /// Bits each region's cells store (empty = the device's bits per cell everywhere). Fewer
    /// bits than the cell type means reduced-state cells that hold proportionally fewer pages
    /// per block: FlexLevel's 3-level MLC cells store 1.5 bits (3 bits per 2 cells, Guo
    /// §3.4.1), so a block holds ¾ of its pages (Table 12: 64 → 48). Such regions lose
    /// capacity (reported as `device.capacity_loss_percent`, with the over-provisioning left
    /// after it) and need no soft sensing under `reliability.model = "table6"`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bits_per_cell: Vec<f64>,
}

impl RegionsConfig {
    /// True when no regions are configured.
    pub fn is_off(&self) -> bool {
        self.fractions.is_empty()
    }
    /// Number of regions (1 when off: every block in one pool).
    pub fn count(&self) -> usize {
        self.fractions.len().max(1)
    }
    /// Number of wear stages.
    pub fn stages(&self) -> usize {
        self.stage_pe.len().max(1)
    }
    /// Name of region `r`.
    pub fn name(&self, r: usize) -> String {
        self.names
            .get(r)
            .cloned()
            .unwrap_or_else(|| format!("region{}", r + 1))
    }
    /// Wear weight of region `r`.
    pub fn weight(&self, r: usize) -> f64 {
        self.wear_weight.get(r).copied().unwrap_or(1.0)
    }
    /// Blocks of each region in a plane of `bpp` blocks: region `r` takes the blocks from
    /// round(bpp·Σ_{i<r} f_i) to round(bpp·Σ_{i≤r} f_i) (no regions: all of them).
    pub fn blocks_per_plane(&self, bpp: u32) -> Vec<u32> {
        if self.is_off() {
            return vec![bpp];
        }
        let mut out = Vec::with_capacity(self.fractions.len());
        let mut cum = 0.0;
        let mut start = 0u32;
        for (i, f) in self.fractions.iter().enumerate() {
            cum += f;
            let end = if i + 1 == self.fractions.len() {
                bpp
            } else {
                ((bpp as f64 * cum).round() as u32).clamp(start, bpp)
            };
            out.push(end - start);
            start = end;
        }
        out
    }

    /// Pages a block of each region holds, for blocks of `ppb` pages of `bits`-bit cells.
    pub fn pages_per_block(&self, ppb: u32, bits: usize) -> Vec<u32> {
        (0..self.count())
            .map(|r| match self.bits_per_cell.get(r) {
                Some(&b) => ((ppb as f64) * b / bits as f64).round() as u32,
                None => ppb,
            })
            .collect()
    }

    /// True when some region stores fewer bits per cell than the cell type (reduced state).
    pub fn reduced(&self, r: usize, bits: usize) -> bool {
        self.bits_per_cell
            .get(r)
            .is_some_and(|&b| b < bits as f64 - 1e-9)
    }

    pub(crate) fn validate(&self, n_modes: usize, vth: bool) -> Result<(), ConfigError> {
        if self.is_off() {
            let stray = !self.names.is_empty()
                || !self.bits_per_cell.is_empty()
                || !self.program_modes.is_empty()
                || !self.read_us.is_empty()
                || !self.stage_pe.is_empty()
                || !self.wear_weight.is_empty();
            if stray {
                return Err(invalid(
                    "regions.fractions",
                    "[]",
                    "give one fraction per region to configure regions",
                ));
            }
            return Ok(());
        }
        let n = self.fractions.len();
        check_range("regions.fractions (count)", n, 1, 16)?;
        let mut sum = 0.0;
        for &f in &self.fractions {
            if !(f.is_finite() && f > 0.0 && f <= 1.0) {
                return Err(invalid("regions.fractions", f, "each must be in 0 < x ≤ 1"));
            }
            sum += f;
        }
        if (sum - 1.0).abs() > 1e-6 {
            return Err(invalid(
                "regions.fractions",
                format!("{:?}", self.fractions),
                format!("must sum to 1 (they sum to {sum})"),
            ));
        }
        let per_region = |key: &str, len: usize, required: bool| -> Result<(), ConfigError> {
            if (required || len > 0) && len != n {
                return Err(invalid(
                    key,
                    len,
                    format!("give one entry per region ({n}, as regions.fractions)"),
                ));
            }
            Ok(())
        };
        per_region("regions.names", self.names.len(), false)?;
        per_region("regions.program_modes", self.program_modes.len(), true)?;
        per_region("regions.wear_weight", self.wear_weight.len(), false)?;
        per_region("regions.bits_per_cell", self.bits_per_cell.len(), false)?;
        for (r, &m) in self.program_modes.iter().enumerate() {
            if m as usize >= n_modes {
                return Err(invalid(
                    &format!("regions.program_modes[{r}]"),
                    m,
                    format!(
                        "allowed range is 0 ..= {} (the timing's program modes)",
                        n_modes - 1
                    ),
                ));
            }
        }
        for (r, &w) in self.wear_weight.iter().enumerate() {
            if !(w.is_finite() && w > 0.0 && w <= 10.0) {
                return Err(invalid(
                    &format!("regions.wear_weight[{r}]"),
                    w,
                    "allowed range is 0 < x ≤ 10",
                ));
            }
        }
        for (i, &p) in self.stage_pe.iter().enumerate() {
            let prev = if i == 0 {
                None
            } else {
                Some(self.stage_pe[i - 1])
            };
            let ok = p.is_finite()
                && (0.0..=1e9).contains(&p)
                && match prev {
                    None => p == 0.0,
                    Some(q) => p > q,
                };
            if !ok {
                return Err(invalid(
                    &format!("regions.stage_pe[{i}]"),
                    p,
                    "stages start at 0 P/E and increase (at most 1e9)",
                ));
            }
        }
        let stages = self.stages();
        let table_needed = self.read_latency == RegionReadLatency::Table;
        per_region("regions.read_us", self.read_us.len(), table_needed)?;
        for (r, row) in self.read_us.iter().enumerate() {
            if row.len() != stages {
                return Err(invalid(
                    &format!("regions.read_us[{r}]"),
                    format!("{row:?}"),
                    format!("give one read latency per wear stage ({stages}, as regions.stage_pe)"),
                ));
            }
            for &x in row {
                check_us(&format!("regions.read_us[{r}]"), x)?;
            }
        }
        if self.read_latency == RegionReadLatency::Model && !vth {
            return Err(invalid(
                "regions.read_latency",
                "\"model\"",
                "needs reliability.model = \"vth\" (or use read_latency = \"table\")",
            ));
        }
        Ok(())
    }
}

/// Greatest common divisor of two positive numbers given to 1e-6 (for the divisibility message).
pub(crate) fn gcd_f(a: f64, b: f64) -> f64 {
    let (mut x, mut y) = ((a * 1e6).round() as u64, (b * 1e6).round() as u64);
    while y != 0 {
        (x, y) = (y, x % y);
    }
    x as f64 / 1e6
}

/// Periodic data refresh (IDA §III-C, "remapping-based refresh" of Table II): every block whose
/// data is older than `period_s` has its valid pages read through ECC and written to a new
/// block; the old block is then reclaimed by GC.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
#[serde(default, deny_unknown_fields)]
pub struct RefreshConfig {
    /// Refresh period, s (IDA Table II: 3 days – 3 months per application); 0 = off.
    pub period_s: f64,
    /// How often the engine scans for due blocks, s; 0 = min(period / 100, 3600 s), at
    /// least 1 s.
    pub check_interval_s: f64,
}

impl RefreshConfig {
    /// True when refresh is off.
    pub fn is_off(&self) -> bool {
        self.period_s == 0.0
    }
    /// Scan interval, ns (refresh on).
    pub fn check_interval_ns(&self) -> u64 {
        let s = if self.check_interval_s > 0.0 {
            self.check_interval_s
        } else {
            (self.period_s / 100.0).min(3600.0)
        };
        (s.max(1.0) * 1e9).round() as u64
    }
}

/// Where read costs come from.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum ReliabilityModel {
    /// Fixed latencies per ECC kind from `[timing]` (papers' tables, e.g. Xia & Xiao Table I).
    #[default]
    None,
    /// RBER of each page from the Vth-model table (P/E, retention, program mode ΔVpp, level
    /// configuration); error count drawn per read; ECC cost from the code model.
    Vth,
    /// The fixed latencies plus LDPC soft sensing looked up in Guo's Table 6 by the block's
    /// P/E cycles and the page's data age (FlexLevel's experiments, Guo §3.6.2; floor lookup,
    /// [`crate::reliability::table6`]); each extra level costs 8 µs sensing + 20 µs transfer
    /// (Guo §3.2); pages in reduced-state regions (`regions.bits_per_cell`) need none.
    Table6,
}

/// The code behind an ECC id when the reliability model is on.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "code", rename_all = "snake_case", deny_unknown_fields)]
pub enum CodeConfig {
    /// BCH correcting `t` bits per page; decode time scaled from FlexECC's reference (10 µs at
    /// t = 6 for an 8 KiB page, §2.2).
    Bch {
        /// Correctable bits per page.
        t: u32,
    },
    /// LDPC with soft sensing (Guo §3.6): `thresholds[i]` = highest RBER decodable with `i`
    /// extra sensing levels (`thresholds[0]` = hard-decision limit 4e-3); each extra level adds
    /// 8 µs sensing and 20 µs transfer.
    Ldpc {
        /// Hard-decision decode time, µs.
        #[serde(default)]
        hard_decode_us: f64,
        /// Extra decode time per soft level, µs.
        #[serde(default)]
        soft_decode_us_per_level: f64,
        /// RBER limits per number of extra levels.
        thresholds: Vec<f64>,
        /// What an extra level costs: `soft_sensing` (default; Guo §3.6: 8 µs sensing + 20 µs
        /// transfer) or `page_read` (read retry, IDA §V-F: a full re-read at the page's own
        /// page-type latency, its transfer and another hard decode).
        #[serde(default)]
        level_cost: crate::ecc::LevelCost,
    },
    /// CRC, detect only (0.8 µs, FlexECC Table 2).
    Crc,
}

/// Reliability options.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ReliabilityConfig {
    /// `none` (fixed latencies) or `vth`.
    pub model: ReliabilityModel,
    /// RBER-table cache directory; empty = `$NANDLAB_CACHE_DIR`, else `~/.cache/nandlab`.
    pub cache_dir: String,
    /// Level configuration of every page: 0 normal, 1–3 NUNMA 1–3 (Guo Table 10).
    pub level_config: u32,
    /// Level configuration per program mode (one entry per mode, overriding `level_config`),
    /// e.g. `[0, 3]`: mode 1 programs FlexLevel reduced-state (NUNMA 3) pages. Empty = all
    /// modes use `level_config`.
    pub mode_levels: Vec<u32>,
    /// Reads since erase at which read disturb (Guo eq. 2.8–2.9) is tabulated, ascending;
    /// each point costs a full RBER table. Empty = read disturb off (every read at 0).
    pub read_disturb_grid: Vec<f64>,
    /// ISPP step of program mode 0, V (Guo §3.2: 0.15). Other modes' steps follow their
    /// program time: ΔVpp_i = ΔVpp_0 · t_0 / t_i (EFM eq. 2, t_p ∝ 1/ΔVpp).
    pub mode0_dvpp_v: f64,
    /// Normal-state gap between each level's verify voltage and its lower read reference, V
    /// (default 0.05; 0 is the alternative reading of Guo §3.4.2; see
    /// `reliability::vth::VthParams::read_ref`).
    pub read_ref_margin_v: f64,
    /// P/E grid of the RBER table.
    pub pe_grid: Vec<f64>,
    /// Retention grid of the RBER table, s.
    pub retention_grid_s: Vec<f64>,
    /// The code of each ECC id (same order as `timing.ecc`, id 0 first); empty = BCH t = 130
    /// per page for every id (65 expected errors at RBER 1e-3 over an 8 KiB page, ~8σ margin).
    pub codes: Vec<CodeConfig>,
}

impl Default for ReliabilityConfig {
    fn default() -> Self {
        let d = crate::reliability::table::TableSpec::guo_default();
        ReliabilityConfig {
            model: ReliabilityModel::None,
            cache_dir: String::new(),
            level_config: 0,
            mode_levels: Vec::new(),
            read_disturb_grid: Vec::new(),
            mode0_dvpp_v: 0.15,
            read_ref_margin_v: crate::reliability::vth::NORMAL_READ_REF_MARGIN_V,
            pe_grid: d.pe,
            retention_grid_s: d.retention_s,
            codes: Vec::new(),
        }
    }
}
