//! Configuration: TOML with units in key names, validated into typed structs.
//!
//! Every key carries its unit (`read_us`, `page_size_bytes`, `initial_age_window_s`) and is
//! converted once into the core's units (ns, bytes). Unknown keys are errors, never ignored.
//! `--set dotted.key=value` overrides are applied to the TOML tree before validation, so they
//! are checked exactly like file contents.
//!
//! # Over-provisioning
//!
//! The literature uses two definitions. nandlab accepts either, under a name that says which:
//!
//! * `op_percent_of_logical` = ρ·100 with ρ = (T − U)/U (physical T, logical U): physical =
//!   logical × (1 + ρ). This is the definition of Xia & Xiao, Desnoyers and Agarwal & Marrow.
//! * `op_percent_of_physical` = (T − U)/T·100, MQSim's `Overprovisioning_Ratio`.
//!
//! Conversion: of_physical = of_logical / (1 + of_logical) (as fractions). Giving both is an
//! error. The report echoes both.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::flash::{
    BlockLayout, CellType, EccTiming, Geometry, PageOrder, ProgramModeTiming, Timing,
};

/// A configuration error names the key, the value and the allowed range.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// TOML syntax error or unknown key.
    #[error("{file}: {msg}")]
    Syntax { file: String, msg: String },
    /// A key's value is invalid.
    #[error("config key `{key}` = {value}: {msg}")]
    Invalid {
        key: String,
        value: String,
        msg: String,
    },
}

fn invalid(key: &str, value: impl std::fmt::Display, msg: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.to_string(),
        value: value.to_string(),
        msg: msg.into(),
    }
}

/// The whole configuration.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Master seed; every random stream of a run derives from it.
    pub seed: u64,
    /// Device geometry and capacity.
    pub device: DeviceConfig,
    /// Flash operation timing.
    pub timing: TimingConfig,
    /// Flash translation layer.
    pub ftl: FtlConfig,
    /// Transaction scheduler.
    pub sched: SchedConfig,
    /// Host replay.
    pub host: HostConfig,
    /// Preconditioning before replay.
    pub precondition: PreconditionConfig,
    /// The object device's host layer (`[objfs]`, [`crate::osd::objfs`]): how a file-level
    /// trace becomes object commands. Left out of the serialized config while at its defaults,
    /// so reports of block-device runs are unchanged.
    #[serde(skip_serializing_if = "crate::osd::objfs::ObjfsConfig::is_default")]
    pub objfs: crate::osd::objfs::ObjfsConfig,
    /// The flash-management scheme and its parameters.
    pub scheme: SchemeConfig,
    /// Statistics options.
    pub stats: StatsConfig,
    /// Reliability model (RBER per page read, ECC costs that follow it).
    pub reliability: ReliabilityConfig,
    /// Periodic data refresh (off by default; left out of the serialized config while off so
    /// reports of runs without refresh are unchanged).
    #[serde(skip_serializing_if = "RefreshConfig::is_off")]
    pub refresh: RefreshConfig,
    /// Physical regions: block pools with their own program mode and read latency (off by
    /// default; left out of the serialized config while off so reports of runs without regions
    /// are unchanged).
    #[serde(skip_serializing_if = "RegionsConfig::is_off")]
    pub regions: RegionsConfig,
    /// DPA (Guo ch. 2) codec and lifetime-model parameters (left out of the serialized config
    /// while at their defaults, so reports of runs without DPA are unchanged).
    #[serde(skip_serializing_if = "crate::dpa::DpaConfig::is_default")]
    pub dpa: crate::dpa::DpaConfig,
    /// Controller DRAM data cache (issue 13; off by default: `capacity_bytes = 0`).
    pub dram: DramConfig,
    /// SSD-as-cache front end (`[cache]`, FlexECC §3.2; [`crate::host::cache`]); off (`None`)
    /// without the section, and then left out of the serialized config.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<crate::host::cache::CacheConfig>,
    /// Fault injection (`[faults]`, FlexECC §4.4); off by default and then left out of the
    /// serialized config.
    #[serde(skip_serializing_if = "crate::reliability::faults::FaultsConfig::is_off")]
    pub faults: crate::reliability::faults::FaultsConfig,
    /// Object-based flash device (`[osd]`, Guo ch. 4; [`crate::osd`]); off (`None`) without
    /// the section, and then left out of the serialized config.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub osd: Option<crate::osd::config::OsdConfig>,
}

/// The controller's DRAM data cache (`[dram]`): a write-back cache of host pages. A host
/// write page is acknowledged once in DRAM (`access_us`) and flushed to flash at once in the
/// background (the flash program of a page rewritten while its flush runs is issued again when
/// that flush ends: rewrites coalesce); a host read of a cached page is served from DRAM.
/// Flushed pages stay cached (clean) until evicted, least recently used first. A write that
/// finds every entry dirty waits until a flush ends (back-pressure). Off (`capacity_bytes =
/// 0`, every paper preset): writes complete when their program ends, as before.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DramConfig {
    /// Cache size in bytes (whole pages; 0 = no cache).
    pub capacity_bytes: u64,
    /// Time to move one page between the host interface and DRAM, µs (a hit's service time).
    pub access_us: f64,
}

impl Default for DramConfig {
    fn default() -> Self {
        DramConfig {
            capacity_bytes: 0,
            access_us: 0.0,
        }
    }
}

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

    fn validate(&self, n_modes: usize, vth: bool) -> Result<(), ConfigError> {
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
fn gcd_f(a: f64, b: f64) -> f64 {
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

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 42,
            device: DeviceConfig::default(),
            timing: TimingConfig::default(),
            ftl: FtlConfig::default(),
            sched: SchedConfig::default(),
            host: HostConfig::default(),
            precondition: PreconditionConfig::default(),
            objfs: crate::osd::objfs::ObjfsConfig::default(),
            scheme: SchemeConfig::default(),
            stats: StatsConfig::default(),
            reliability: ReliabilityConfig::default(),
            refresh: RefreshConfig::default(),
            regions: RegionsConfig::default(),
            dpa: crate::dpa::DpaConfig::default(),
            dram: DramConfig::default(),
            cache: None,
            faults: Default::default(),
            osd: None,
        }
    }
}

/// Geometry and capacity.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DeviceConfig {
    /// `slc`, `mlc`, `tlc` or `qlc`.
    pub cell: CellType,
    /// Channels (≥ 1).
    pub channels: u32,
    /// Chips (packages) per channel (≥ 1).
    pub chips_per_channel: u32,
    /// Dies per chip (≥ 1).
    pub dies_per_chip: u32,
    /// Planes per die (≥ 1).
    pub planes_per_die: u32,
    /// Pages per block (a multiple of bits per cell).
    pub pages_per_block: u32,
    /// Page size in bytes (512 B … 64 KiB, multiple of 512).
    pub page_size_bytes: u32,
    /// Blocks per plane; 0 = size the device from the trace's address space plus
    /// over-provisioning.
    pub blocks_per_plane: u32,
    /// Logical capacity in bytes; 0 = the trace's address space rounded up to a block stripe.
    /// Ignored when `blocks_per_plane` is set (then logical = physical / (1 + ρ)).
    pub logical_capacity_bytes: u64,
    /// Smallest logical capacity in bytes when it follows the trace's address space
    /// (`blocks_per_plane` and `logical_capacity_bytes` both 0): a trace touching a few pages
    /// still gets a device GC can work on. 0 = no minimum.
    pub min_logical_capacity_bytes: u64,
    /// Over-provisioning ρ = (T − U)/U in percent (see module doc). Default 15.
    pub op_percent_of_logical: Option<f64>,
    /// Over-provisioning (T − U)/T in percent (MQSim's definition). Exclusive with the above.
    pub op_percent_of_physical: Option<f64>,
    /// Page-to-word-line order.
    pub page_order: PageOrder,
    /// How the trace's addresses map onto the modelled logical space
    /// ([`crate::host::address_map`]): `auto` (compact when the span is sparse and a device
    /// sized from it would need more than [`DENSE_MAP_MAX_TABLE_BYTES`] of FTL tables),
    /// `dense` (offsets as they are) or `compact` (only the touched chunks, in order).
    pub address_map: AddressMapMode,
}

/// `device.address_map`: see [`DeviceConfig::address_map`].
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum AddressMapMode {
    /// Compact when the trace touches at most half of its span and a device sized from the
    /// span would need more than [`DENSE_MAP_MAX_TABLE_BYTES`] of FTL tables; dense otherwise.
    #[default]
    Auto,
    /// The trace's offsets as they are.
    Dense,
    /// Only the touched chunks, packed in address order.
    Compact,
}

/// With `device.address_map = "auto"`, the FTL table size above which a sparse trace (one
/// touching at most half of its span) is replayed on the compact map: 1 GiB, about a
/// 700 GiB device at 8 KiB pages. Below it a dense device costs little memory and keeps every
/// address as the trace wrote it.
pub const DENSE_MAP_MAX_TABLE_BYTES: u64 = 1 << 30;

impl Default for DeviceConfig {
    fn default() -> Self {
        DeviceConfig {
            cell: CellType::Mlc,
            channels: 8,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 1,
            pages_per_block: 128,
            page_size_bytes: 8192,
            blocks_per_plane: 0,
            logical_capacity_bytes: 0,
            min_logical_capacity_bytes: 0,
            op_percent_of_logical: None,
            op_percent_of_physical: None,
            page_order: PageOrder::Sequential,
            address_map: AddressMapMode::Auto,
        }
    }
}

/// One program mode (ISPP setting).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProgramModeConfig {
    /// Name in reports.
    pub name: String,
    /// Program latency per page type (LSB, CSB, MSB, TSB), µs; one value applies to all.
    pub program_us: Vec<f64>,
}

/// One ECC kind's fixed timing.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EccConfig {
    /// Name in reports.
    pub name: String,
    /// Decode latency, µs.
    #[serde(default)]
    pub decode_us: f64,
    /// Extra array sensing per read, µs (e.g. soft sensing).
    #[serde(default)]
    pub extra_sense_us: f64,
    /// Decode latency of a page with bit errors, µs (FlexECC Table 2: BCH 10); 0 = `decode_us`.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub decode_corrupted_us: f64,
    /// Encode latency before each program, µs (FlexECC Table 2: 0.8); 0 = none.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub encode_us: f64,
    /// Detection only (CRC, FlexECC §2.2): corrupted pages are detected, not corrected.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub detect_only: bool,
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

/// Operation timing.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct TimingConfig {
    /// Array read latency per page type (LSB, CSB, MSB, TSB), µs; one value applies to all.
    pub read_us: Vec<f64>,
    /// Program latency per page type of the default mode, µs; one value applies to all.
    pub program_us: Vec<f64>,
    /// Block erase latency, µs.
    pub erase_us: f64,
    /// Channel rate, mega-transfers per second.
    pub channel_mt_s: f64,
    /// Channel width, bytes per transfer.
    pub channel_width_bytes: u32,
    /// ECC decode latency of the default ECC (id 0), µs.
    pub ecc_decode_us: f64,
    /// Name of ECC id 0 in reports.
    pub ecc_name: String,
    /// Decode latency of a corrupted page with ECC id 0, µs; 0 = `ecc_decode_us`.
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub ecc_decode_corrupted_us: f64,
    /// Encode latency of ECC id 0 before each program, µs; 0 = none.
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub ecc_encode_us: f64,
    /// Name of program mode id 0 in reports.
    pub program_mode_name: String,
    /// Additional program modes (ids 1, 2, …; id 0 is `program_us`, named `normal`).
    pub program_modes: Vec<ProgramModeConfig>,
    /// Additional ECC kinds (ids 1, 2, …; id 0 uses `ecc_decode_us`, named `default`).
    pub ecc: Vec<EccConfig>,
    /// One-shot programming (3D TLC/QLC): `program_us` is the time to program a whole word
    /// line — all its bits-per-cell pages in one array operation — and the scheduler programs
    /// the queued pages of a word line together (host programs and GC moves of one open
    /// block; with `sched.multi_plane` also the same word line of the die's other planes).
    /// `false` (every paper preset): each page is its own program operation.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub one_shot_program: bool,
}

impl Default for TimingConfig {
    fn default() -> Self {
        TimingConfig {
            read_us: vec![45.0],
            program_us: vec![1300.0],
            erase_us: 3800.0,
            channel_mt_s: 400.0,
            channel_width_bytes: 1,
            ecc_decode_us: 0.0,
            ecc_name: "default".into(),
            ecc_decode_corrupted_us: 0.0,
            ecc_encode_us: 0.0,
            program_mode_name: "normal".into(),
            program_modes: Vec::new(),
            ecc: Vec::new(),
            one_shot_program: false,
        }
    }
}

/// Where host writes are placed.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Allocation {
    /// Static striping over LPN: channel first, then chip, die, plane (CWDP).
    Static,
    /// Dynamic: each page program goes to the next plane round-robin.
    Dynamic,
    /// Super-pages, as firmware writes (issue 29): LPNs are striped over dies as with
    /// `static`; within a die the planes are allocated in lockstep — a superblock is the block
    /// of the same index on every plane, filled super-page by super-page (the same page offset
    /// on every plane; with one-shot programming the word line's pages on every plane) — so
    /// every program and GC copy is plane-parallel by construction, and GC collects whole
    /// superblocks. See [`crate::ftl`].
    Superpage,
}

/// GC victim selection policy.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum VictimPolicy {
    /// Fewest valid pages.
    Greedy,
    /// Oldest full block (in the order blocks were filled).
    Fifo,
    /// Maximise age·(1 − u)/(2u) (Kawaguchi et al.; age = time since the block filled).
    CostBenefit,
}

/// FTL options.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FtlConfig {
    /// `static` (CWDP) or `dynamic` allocation.
    pub allocation: Allocation,
    /// GC runs on a plane while its free blocks are fewer than this percent of its blocks.
    pub gc_threshold_pct: f64,
    /// Victim selection.
    pub gc_victim: VictimPolicy,
    /// Valid-page moves use copyback (no channel transfer) when true.
    pub copyback: bool,
    /// With `copyback`, a move still decodes and re-encodes the page in the controller
    /// (sense, decode + encode, program; no transfer). FlexECC §4.3 needs this: its GC saving
    /// is decode time, which a pure copy-back would hide (spec §1.5).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub copyback_decode: bool,
    /// Offsets beyond the logical capacity wrap around (DiskSim habit) instead of failing.
    pub wrap_offsets: bool,
    /// Number of write streams (open blocks per plane). Stream 0 = host, 1 = GC by default.
    pub streams: u32,
    /// Read-modify-write: a host write that covers part of a page whose LPN is mapped reads
    /// the page first and programs the merged page after the read (and its decode) ends, as
    /// SSD firmware and MQSim do; a partial write to an unmapped page programs at once.
    /// `false` (every paper preset): a partial write programs the full page at once.
    pub read_modify_write: bool,
    /// TRIM / discard: traces' discards (blkparse `D`, op `D` in the canonical CSV and
    /// SYSTOR) unmap the pages they cover whole; `false`: readers skip them and count them in
    /// `trace.non_request_skipped`, as before.
    pub trim: bool,
    /// With `allocation = "superpage"`: how long a die holds host writes that do not fill its
    /// super-page yet, µs (firmware keeps them in its write buffer until a super-page is
    /// full); after it, or at the end of the trace, the super-page is programmed padded. 0 =
    /// never hold (program what is queued, padded). Our reading: no public source gives a
    /// controller's flush timeout.
    pub superpage_wait_us: f64,
    /// Mapping unit, bytes: the logical page the FTL maps (its L2P entry), 0 = the flash page
    /// (`device.page_size_bytes`; every paper preset). A smaller unit that divides the page
    /// (e.g. 4096 on a 16 KiB-page part) is how firmware maps a current part: each unit has its
    /// own L2P entry, a flash page holds `page_size_bytes / mapping_unit_bytes` units written in
    /// arrival order, a 4 KiB host write is one unit (no read-modify-write of the page), a read
    /// senses the page once and moves only its units over the channel, and GC copies units.
    /// Needs `allocation = "superpage"` (the units fill super-pages). See [`crate::ftl`].
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub mapping_unit_bytes: u32,
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

impl Default for FtlConfig {
    fn default() -> Self {
        FtlConfig {
            allocation: Allocation::Static,
            gc_threshold_pct: 5.0,
            gc_victim: VictimPolicy::Greedy,
            copyback: false,
            copyback_decode: false,
            wrap_offsets: false,
            streams: 2,
            read_modify_write: false,
            trim: false,
            superpage_wait_us: 1_000_000.0,
            mapping_unit_bytes: 0,
        }
    }
}

/// Scheduling priority.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Host reads first, then background (GC, refresh, migration), then host writes.
    ReadFirst,
    /// First come, first served across all kinds.
    Fifo,
}

/// Scheduler options.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SchedConfig {
    /// `read_first` or `fifo`.
    pub priority: Priority,
    /// Multi-plane operations: reads of the same page offset, programs at the same page
    /// offset and erases on different planes of a die run as one operation (one array time,
    /// the transfers back to back); `false` (every paper preset): one plane at a time.
    pub multi_plane: bool,
    /// With `multi_plane`: host reads of *any* page offsets on different planes of a die run
    /// together (independent plane reads: Micron's 176-tier parts read "four independent
    /// multiplane page read addresses", Pekny et al., ISSCC 2022); `false`: only reads of the
    /// same page offset pair up (MQSim's multi-plane rule).
    pub independent_plane_reads: bool,
    /// Program/erase suspension: a host read queued at a die busy programming or erasing
    /// suspends the operation (after `suspend_program_us` / `suspend_erase_us`), runs, and the
    /// operation resumes (`resume_us`) with the array time it had left. Needs `read_first`.
    pub suspension: bool,
    /// Most suspensions of one program or erase (1 … 255).
    pub max_suspends_per_op: u32,
    /// Time to suspend a program before the read can start, µs.
    pub suspend_program_us: f64,
    /// Time to suspend an erase before the read can start, µs.
    pub suspend_erase_us: f64,
    /// Time to resume the suspended operation, µs (added to its remaining array time).
    pub resume_us: f64,
}

impl Default for SchedConfig {
    fn default() -> Self {
        SchedConfig {
            priority: Priority::ReadFirst,
            multi_plane: false,
            independent_plane_reads: false,
            suspension: false,
            max_suspends_per_op: 1,
            suspend_program_us: 0.0,
            suspend_erase_us: 0.0,
            resume_us: 0.0,
        }
    }
}

/// Replay mode.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ReplayMode {
    /// Open loop: requests arrive at their (scaled) timestamps.
    Open,
    /// Closed loop: `queue_depth` requests outstanding, timestamps ignored.
    Closed,
}

/// Host replay options.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct HostConfig {
    /// `open` or `closed`.
    pub mode: ReplayMode,
    /// Open loop: arrival times are multiplied by this (FlexECC's "ioscale"; > 1 slows the
    /// trace down). Periods given in trace time stretch with it, so a policy sees the same
    /// trace at any scale: scheme tick periods (e.g. EFM's T), `refresh.period_s` and
    /// `refresh.check_interval_s` are multiplied by it (the report's `refresh.period_s` is the
    /// effective value). Counts of requests or pages (Bloom-filter decay, MRO windows) are not.
    pub time_scale: f64,
    /// Closed loop: outstanding requests.
    pub queue_depth: u32,
    /// Replay at most this many requests (0 = all).
    pub max_requests: u64,
    /// Open loop: at most this many host requests outstanding in the device (the host's queue
    /// depth). A request arriving when the device holds this many waits in the host — its
    /// response time still counts from its trace timestamp — and is only read from the trace
    /// when a slot frees, so memory stays bounded however long an overload lasts.
    pub max_outstanding: u32,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            mode: ReplayMode::Open,
            time_scale: 1.0,
            queue_depth: 32,
            max_requests: 0,
            max_outstanding: 65536,
        }
    }
}

/// What to write before replay.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Fill {
    /// Nothing: reads of never-written pages are served without a flash access.
    None,
    /// Every logical page the trace touches (read or written), in LPN order.
    Touched,
    /// The first `fill_fraction` of the logical space, sequentially.
    Fraction,
}

/// Preconditioning (untimed; not in the reported latencies or counters).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct PreconditionConfig {
    /// `none`, `touched` or `fraction`. With `touched` the untouched pages stay free, so a
    /// trace that does not overwrite its pages many times over never reaches GC (WA 1.0): age
    /// the device or fill a fraction to measure GC.
    pub fill: Fill,
    /// For `fill = "fraction"`: fraction of the logical pages, 0…1.
    pub fill_fraction: f64,
    /// Random page overwrites over the filled pages, as a multiple of the number of filled
    /// pages (0 = none).
    pub age_overwrites: f64,
    /// Keep overwriting in rounds of 10 % of the filled pages until GC has erased blocks in two
    /// rounds in a row whose write amplification differs by at most 1 % (capped by
    /// `age_overwrites` × filled pages when that is > 0, else by 10 × filled pages plus the
    /// free pages at the start, so that GC is reached).
    pub age_until_steady: bool,
    /// Initial P/E cycles of every block.
    pub initial_pe_cycles: u32,
    /// Blocks get initial P/E uniformly in `initial_pe_cycles ± initial_pe_spread`.
    pub initial_pe_spread: u32,
    /// Program ages of preconditioned data are spread uniformly over this window before the
    /// trace starts, seconds.
    pub initial_age_window_s: f64,
    /// After fill and aging, refresh every full block with data once, untimed, through the
    /// scheme's `plan_refresh` (IDA: voltage-adjust word lines): the replay starts in the
    /// state a past data refresh left, without refresh traffic in its latencies.
    pub refresh_before_replay: bool,
}

impl Default for PreconditionConfig {
    fn default() -> Self {
        PreconditionConfig {
            fill: Fill::Touched,
            fill_fraction: 1.0,
            age_overwrites: 0.0,
            age_until_steady: false,
            initial_pe_cycles: 0,
            initial_pe_spread: 0,
            initial_age_window_s: 0.0,
            refresh_before_replay: false,
        }
    }
}

/// Scheme selection.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SchemeConfig {
    /// Scheme name (see `scheme::registry`).
    pub name: String,
    /// Scheme parameters (each scheme declares and validates its own).
    pub params: toml::Table,
}

impl Default for SchemeConfig {
    fn default() -> Self {
        SchemeConfig {
            name: "baseline".into(),
            params: toml::Table::new(),
        }
    }
}

/// Statistics options.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
#[serde(default, deny_unknown_fields)]
pub struct StatsConfig {
    /// Write a per-request CSV log (arrival, op, offset, size, wait, service, response; ns)
    /// to this path (gzip when it ends in `.gz`).
    pub request_log: Option<String>,
    /// Write the per-interval time series (CSV; gzip when it ends in `.gz`) to this path
    /// (`stats::timeseries` documents the columns). Not serialised when unset, so reports
    /// without it are unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeseries: Option<String>,
    /// Interval of the time series, ms (default 1000; needs `timeseries`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeseries_interval_ms: Option<f64>,
    /// Add latency CDFs (`host.cdf`, `stats::cdf`) to the report.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub latency_cdf: bool,
}

impl StatsConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if let Some(ms) = self.timeseries_interval_ms {
            if self.timeseries.is_none() {
                return Err(invalid(
                    "stats.timeseries_interval_ms",
                    ms,
                    "applies only to a time series: set stats.timeseries to its output path",
                ));
            }
            if !(ms.is_finite() && (1e-6..=1e9).contains(&ms)) {
                return Err(invalid(
                    "stats.timeseries_interval_ms",
                    ms,
                    "allowed range is 1e-6 ..= 1e9 (1 ns to about 11.6 days)",
                ));
            }
        }
        Ok(())
    }
}

/// Parse TOML text, apply `key=value` overrides, deserialize and validate.
///
/// `origin` names the source in errors (a path or `"<string>"`).
///
/// # Errors
/// [`ConfigError::Syntax`] for TOML errors and unknown keys, [`ConfigError::Invalid`] for
/// out-of-range values.
pub fn load(text: &str, origin: &str, overrides: &[String]) -> Result<Config, ConfigError> {
    load_table(&parse_table(text, origin)?, origin, overrides)
}

/// The TOML table of a configuration's text, before overrides and validation (parse once,
/// [`load_table`] many times: a sweep's grid checks thousands of override sets on one file).
///
/// # Errors
/// [`ConfigError::Syntax`] naming `origin`.
pub fn parse_table(text: &str, origin: &str) -> Result<toml::Table, ConfigError> {
    // A TOML syntax error keeps its line breaks: the quoted line and the caret under the
    // column are the useful part.
    text.parse()
        .map_err(|e: toml::de::Error| ConfigError::Syntax {
            file: origin.to_string(),
            msg: e.to_string().trim_end().to_string(),
        })
}

/// [`load`] from a table [`parse_table`] returned.
///
/// # Errors
/// As [`load`].
pub fn load_table(
    table: &toml::Table,
    origin: &str,
    overrides: &[String],
) -> Result<Config, ConfigError> {
    let mut table = table.clone();
    drop_replaced_alternatives(&mut table, overrides);
    let base = table.clone();
    for o in overrides {
        apply_override(&mut table, o)?;
    }
    sizes_to_bytes(&mut table, "")?;
    let cfg: Config =
        Config::deserialize(toml::Value::Table(table)).map_err(|e| ConfigError::Syntax {
            file: blame(&base, origin, overrides),
            msg: e.to_string().trim().replace('\n', " "),
        })?;
    cfg.validate()?;
    Ok(cfg)
}

/// Keys that are alternatives to each other: an override of one replaces the other when the
/// file sets it (`--set device.op_percent_of_physical=10` on a file that gives the logical
/// definition). Giving both in the file, or both as overrides, is still an error.
const ALTERNATIVES: &[(&str, &str)] = &[(
    "device.op_percent_of_logical",
    "device.op_percent_of_physical",
)];

fn drop_replaced_alternatives(table: &mut toml::Table, overrides: &[String]) {
    let set: Vec<&str> = overrides
        .iter()
        .filter_map(|o| o.split_once('=').map(|(k, _)| k.trim()))
        .collect();
    for &(a, b) in ALTERNATIVES {
        for (given, other) in [(a, b), (b, a)] {
            if set.contains(&given) && !set.contains(&other) {
                remove_dotted(table, other);
            }
        }
    }
}

fn remove_dotted(table: &mut toml::Table, dotted: &str) {
    let parts: Vec<&str> = dotted.split('.').collect();
    let mut cur = table;
    for p in &parts[..parts.len() - 1] {
        match cur.get_mut(*p) {
            Some(toml::Value::Table(t)) => cur = t,
            _ => return,
        }
    }
    cur.remove(parts[parts.len() - 1]);
}

/// The source to name in a deserialization error: the first override that turns a valid
/// base into an invalid one (`--set key=value`), else the file.
fn blame(base: &toml::Table, origin: &str, overrides: &[String]) -> String {
    let ok = |t: &toml::Table| {
        let mut t = t.clone();
        sizes_to_bytes(&mut t, "").is_ok() && Config::deserialize(toml::Value::Table(t)).is_ok()
    };
    if overrides.is_empty() || !ok(base) {
        return origin.to_string();
    }
    let mut t = base.clone();
    for o in overrides {
        if apply_override(&mut t, o).is_err() || !ok(&t) {
            return format!("--set {}", o.trim());
        }
    }
    origin.to_string()
}

/// Parse a byte size: an integer or decimal number with an optional binary suffix (`K`, `KB`,
/// `KiB` = 2^10; `M…`, `G…`, `T…`, `P…` likewise; `B` = 1), case-insensitive, spaces allowed:
/// `4096`, `64KiB`, `16 GiB`, `1.5M`. The result must be a whole number of bytes.
///
/// The same grammar as the command line's size options (`nandlab trace generate --span-bytes`).
pub fn parse_size_bytes(text: &str) -> Option<u64> {
    let s = text.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    if num.is_empty() {
        return None;
    }
    let x: f64 = num.parse().ok()?;
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit.strip_suffix('b').unwrap_or(&unit);
    let unit = unit.strip_suffix('i').unwrap_or(unit);
    let mult: u64 = match unit {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        "p" => 1 << 50,
        _ => return None,
    };
    let v = x * mult as f64;
    if !v.is_finite() || v < 0.0 || v.fract() != 0.0 || v >= u64::MAX as f64 {
        return None;
    }
    Some(v as u64)
}

/// Every `*_bytes` key given as a string with a unit (`"64GiB"`) becomes its integer byte
/// count, in tables and arrays of tables alike.
fn sizes_to_bytes(table: &mut toml::Table, prefix: &str) -> Result<(), ConfigError> {
    for (k, v) in table.iter_mut() {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::String(s) if k.ends_with("_bytes") => {
                let n = parse_size_bytes(s).ok_or_else(|| {
                    invalid(
                        &key,
                        format!("{s:?}"),
                        "expected a whole number of bytes, optionally with a binary unit \
                         (4096, \"64KiB\", \"16GiB\")",
                    )
                })?;
                let n = i64::try_from(n)
                    .map_err(|_| invalid(&key, format!("{s:?}"), "too large (at most 2^63 B)"))?;
                *v = toml::Value::Integer(n);
            }
            toml::Value::Table(t) => sizes_to_bytes(t, &key)?,
            toml::Value::Array(a) => {
                for x in a.iter_mut() {
                    if let toml::Value::Table(t) = x {
                        sizes_to_bytes(t, &key)?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Every key a configuration accepts, as dotted paths in file order of the structs:
/// `device.channels`; entries of arrays of tables as `timing.ecc[].name`; the fields of each
/// variant of a tagged table (`[[reliability.codes]]`) once each; a free-form table (each
/// scheme's `scheme.params`) as its own path. Found by asking the deserializer itself (an
/// unknown probe key makes it list the fields it expects), so a field added to a config struct
/// is listed without editing anything here.
pub fn accepted_keys() -> Vec<String> {
    let mut out = Vec::new();
    probe_struct(&[], &mut out);
    // variants of a tagged table may share fields: keep the first of each
    let mut seen = std::collections::HashSet::new();
    out.retain(|k| seen.insert(k.clone()));
    out
}

const PROBE: &str = "__nandlab_probe__";

/// What a config with `value` at `path` makes the deserializer say (`None`: accepted).
fn probe_error(path: &[PathPart], value: toml::Value) -> Option<String> {
    let mut v = value;
    for part in path.iter().rev() {
        v = match part {
            PathPart::Key(k) => {
                let mut t = toml::Table::new();
                t.insert(k.clone(), v);
                toml::Value::Table(t)
            }
            PathPart::Entry => toml::Value::Array(vec![v]),
            PathPart::Tag(tag, variant) => {
                if let toml::Value::Table(mut t) = v {
                    t.insert(tag.clone(), toml::Value::String(variant.clone()));
                    toml::Value::Table(t)
                } else {
                    v
                }
            }
        };
    }
    Config::deserialize(v).err().map(|e| e.to_string())
}

#[derive(Clone)]
enum PathPart {
    Key(String),
    Entry,
    Tag(String, String),
}

fn backticked_after(msg: &str, marker: &str) -> Vec<String> {
    let Some(i) = msg.find(marker) else {
        return Vec::new();
    };
    let mut rest = &msg[i + marker.len()..];
    // the deserializer ends its message with the path: "… in `device`" (after a space or a
    // line break)
    if let Some(j) = rest.rfind("in `") {
        if rest[..j].ends_with(char::is_whitespace) {
            rest = &rest[..j];
        }
    }
    rest.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

fn dotted(path: &[PathPart]) -> String {
    let mut s = String::new();
    for p in path {
        match p {
            PathPart::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            PathPart::Entry => s.push_str("[]"),
            PathPart::Tag(..) => {}
        }
    }
    s
}

fn probe_table() -> toml::Value {
    let mut t = toml::Table::new();
    t.insert(PROBE.into(), toml::Value::Integer(0));
    toml::Value::Table(t)
}

/// Collect the keys of the struct at `path` (a table there is known to be a struct).
fn probe_struct(path: &[PathPart], out: &mut Vec<String>) {
    let Some(msg) = probe_error(path, probe_table()) else {
        return;
    };
    let fields = if msg.contains("there are no fields") {
        Vec::new()
    } else {
        backticked_after(&msg, "expected")
    };
    for f in fields {
        let mut p = path.to_vec();
        p.push(PathPart::Key(f.clone()));
        probe_value(&p, out);
    }
}

/// Classify the value at `path`: struct, array of structs, tagged union, free table or leaf.
fn probe_value(path: &[PathPart], out: &mut Vec<String>) {
    let unknown_probe = |m: &str| m.contains(&format!("unknown field `{PROBE}`"));
    match probe_error(path, probe_table()) {
        None => {
            out.push(dotted(path));
            return;
        }
        Some(m) if unknown_probe(&m) => return probe_struct(path, out),
        Some(_) => {}
    }
    let mut entry = path.to_vec();
    entry.push(PathPart::Entry);
    match probe_error(&entry, probe_table()) {
        Some(m) if unknown_probe(&m) => return probe_struct(&entry, out),
        Some(m) if m.contains("missing field `") => {
            let tag = backticked_after(&m, "missing field").into_iter().next();
            if let Some(tag) = tag {
                let mut t = toml::Table::new();
                t.insert(tag.clone(), toml::Value::String(PROBE.into()));
                let variants = probe_error(&entry, toml::Value::Table(t))
                    .map(|m| backticked_after(&m, "expected"))
                    .unwrap_or_default();
                out.push(format!("{}.{tag}", dotted(&entry)));
                for v in variants {
                    let mut p = entry.clone();
                    p.push(PathPart::Tag(tag.clone(), v));
                    probe_struct(&p, out);
                }
                return;
            }
        }
        _ => {}
    }
    out.push(dotted(path));
}

/// Load a config file.
pub fn load_file(path: &Path, overrides: &[String]) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Syntax {
        file: path.display().to_string(),
        msg: e.to_string(),
    })?;
    load(&text, &path.display().to_string(), overrides)
}

/// Apply one `dotted.key=value` override; `value` is a TOML literal, or a bare string.
pub fn apply_override(table: &mut toml::Table, kv: &str) -> Result<(), ConfigError> {
    let Some((key, value)) = kv.split_once('=') else {
        return Err(invalid(kv, "", "an override must be `key=value`"));
    };
    let key = key.trim();
    let value = value.trim();
    if key.is_empty() || key.split('.').any(|p| p.is_empty()) {
        return Err(invalid(key, value, "empty key segment in override"));
    }
    let parsed: toml::Value = match format!("v = {value}").parse::<toml::Table>() {
        Ok(mut t) => t.remove("v").unwrap_or(toml::Value::String(value.into())),
        Err(_) => toml::Value::String(value.to_string()),
    };
    let parts: Vec<&str> = key.split('.').collect();
    let mut cur = table;
    for p in &parts[..parts.len() - 1] {
        let entry = cur
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        cur = match entry {
            toml::Value::Table(t) => t,
            _ => return Err(invalid(key, value, format!("`{p}` is not a table"))),
        };
    }
    cur.insert(parts[parts.len() - 1].to_string(), parsed);
    Ok(())
}

/// `n` bytes in binary units with 3 significant digits (`1.50 GiB`).
pub fn human_bytes(n: u64) -> String {
    let mut x = n as f64;
    for unit in ["B", "KiB", "MiB", "GiB", "TiB", "PiB"] {
        if x < 1024.0 || unit == "PiB" {
            return match unit {
                "B" => format!("{n} B"),
                _ if x >= 100.0 => format!("{x:.0} {unit}"),
                _ if x >= 10.0 => format!("{x:.1} {unit}"),
                _ => format!("{x:.2} {unit}"),
            };
        }
        x /= 1024.0;
    }
    format!("{n} B")
}

fn check_range<T: PartialOrd + std::fmt::Display + Copy>(
    key: &str,
    v: T,
    lo: T,
    hi: T,
) -> Result<(), ConfigError> {
    if v < lo || v > hi {
        return Err(invalid(key, v, format!("allowed range is {lo} ..= {hi}")));
    }
    Ok(())
}

fn check_us(key: &str, v: f64) -> Result<(), ConfigError> {
    if !v.is_finite() || !(0.0..=1e9).contains(&v) {
        return Err(invalid(key, v, "must be a finite time in 0 ..= 1e9 µs"));
    }
    Ok(())
}

fn us_to_ns(v: f64) -> u64 {
    (v * 1000.0).round() as u64
}

fn per_type_ns(key: &str, v: &[f64], bits: usize) -> Result<[u64; 4], ConfigError> {
    if v.len() != 1 && v.len() != bits {
        return Err(invalid(
            key,
            format!("{v:?}"),
            format!("give one value or one per page type ({bits} for this cell type)"),
        ));
    }
    let mut out = [0u64; 4];
    for (i, o) in out.iter_mut().enumerate() {
        let x = if v.len() == 1 {
            v[0]
        } else {
            v[i.min(bits - 1)]
        };
        check_us(key, x)?;
        *o = us_to_ns(x);
    }
    Ok(out)
}

impl Config {
    /// Check every value's range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.stats.validate()?;
        self.objfs.validate()?;
        let d = &self.device;
        check_range("device.channels", d.channels, 1, 1024)?;
        check_range("device.chips_per_channel", d.chips_per_channel, 1, 1024)?;
        check_range("device.dies_per_chip", d.dies_per_chip, 1, 64)?;
        check_range("device.planes_per_die", d.planes_per_die, 1, 64)?;
        check_range("device.pages_per_block", d.pages_per_block, 1, 65536)?;
        if !(self.dram.access_us.is_finite() && (0.0..=1e9).contains(&self.dram.access_us)) {
            return Err(invalid(
                "dram.access_us",
                self.dram.access_us,
                "must be between 0 and 1e9 µs",
            ));
        }
        if self.dram.capacity_bytes > 0 && self.dram.capacity_bytes < d.page_size_bytes as u64 {
            return Err(invalid(
                "dram.capacity_bytes",
                self.dram.capacity_bytes,
                format!(
                    "holds no page of device.page_size_bytes = {}: use 0 (no cache) or at \
                     least one page",
                    d.page_size_bytes
                ),
            ));
        }
        self.validate_superpage()?;
        let s = &self.sched;
        check_range("sched.max_suspends_per_op", s.max_suspends_per_op, 1, 255)?;
        for (k, v) in [
            ("sched.suspend_program_us", s.suspend_program_us),
            ("sched.suspend_erase_us", s.suspend_erase_us),
            ("sched.resume_us", s.resume_us),
        ] {
            if !(v.is_finite() && (0.0..=1e9).contains(&v)) {
                return Err(invalid(k, v, "must be between 0 and 1e9 µs"));
            }
        }
        if s.suspension && s.priority != Priority::ReadFirst {
            return Err(invalid(
                "sched.suspension",
                true,
                "program/erase suspension serves host reads first: it needs sched.priority = \
                 \"read_first\"",
            ));
        }
        if self.timing.one_shot_program {
            let why = if self.device.cell.bits() < 2 {
                Some(
                    "one-shot programming programs the pages of a multi-bit word line together; \
                      an SLC word line has one page: set timing.one_shot_program = false",
                )
            } else if self.device.page_order != crate::flash::PageOrder::Sequential {
                Some(
                    "one-shot programming writes a word line's pages together, never staggered: \
                      set device.page_order = \"sequential\" or timing.one_shot_program = false",
                )
            } else if !self.regions.is_off() {
                Some(
                    "one-shot programming is not modelled on a [regions] device (each region's \
                      blocks fill apart); set timing.one_shot_program = false or remove [regions]",
                )
            } else if self.scheme.name == "ida" {
                Some(
                    "ida places refresh moves by page type (LSB/CSB/MSB programmed apart), which \
                      a one-shot part cannot do; use the ida-tlc preset (one_shot_program = false)",
                )
            } else {
                None
            };
            if let Some(msg) = why {
                return Err(invalid("timing.one_shot_program", true, msg));
            }
        }
        if self.sched.multi_plane && !self.regions.is_off() {
            return Err(invalid(
                "sched.multi_plane",
                true,
                "multi-plane operations are not modelled on a [regions] device (each region's \
                 blocks fill apart); set sched.multi_plane = false or remove [regions]",
            ));
        }
        check_range("device.page_size_bytes", d.page_size_bytes, 512, 65536)?;
        if !d.page_size_bytes.is_multiple_of(512) {
            return Err(invalid(
                "device.page_size_bytes",
                d.page_size_bytes,
                "must be a multiple of 512",
            ));
        }
        let bits = d.cell.bits() as u32;
        if !d.pages_per_block.is_multiple_of(bits) {
            return Err(invalid(
                "device.pages_per_block",
                d.pages_per_block,
                format!("must be a multiple of the bits per cell ({bits})"),
            ));
        }
        match (d.op_percent_of_logical, d.op_percent_of_physical) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "device.op_percent_of_physical",
                    d.op_percent_of_physical.unwrap_or(0.0),
                    "give either op_percent_of_logical or op_percent_of_physical, not both",
                ))
            }
            (Some(v), None) => {
                if !(v.is_finite() && (0.0..=1000.0).contains(&v)) {
                    return Err(invalid(
                        "device.op_percent_of_logical",
                        v,
                        "allowed range is 0 ..= 1000",
                    ));
                }
            }
            (None, Some(v)) => {
                if !(v.is_finite() && (0.0..95.0).contains(&v)) {
                    return Err(invalid(
                        "device.op_percent_of_physical",
                        v,
                        "allowed range is 0 ..< 95",
                    ));
                }
            }
            (None, None) => {}
        }
        let t = &self.timing;
        per_type_ns("timing.read_us", &t.read_us, bits as usize)?;
        per_type_ns("timing.program_us", &t.program_us, bits as usize)?;
        check_us("timing.erase_us", t.erase_us)?;
        check_us("timing.ecc_decode_us", t.ecc_decode_us)?;
        check_us("timing.ecc_decode_corrupted_us", t.ecc_decode_corrupted_us)?;
        check_us("timing.ecc_encode_us", t.ecc_encode_us)?;
        // Physical range: legacy asynchronous NAND runs at tens of MT/s, ONFI 5 / Toggle 5 at
        // a few thousand; outside 1 ..= 100,000 MT/s a value is a unit mistake, and a tiny one
        // saturated the clock (issue 20).
        if !(t.channel_mt_s.is_finite() && (1.0..=1e5).contains(&t.channel_mt_s)) {
            return Err(invalid(
                "timing.channel_mt_s",
                t.channel_mt_s,
                "allowed range is 1 ..= 100000 MT/s",
            ));
        }
        check_range("timing.channel_width_bytes", t.channel_width_bytes, 1, 64)?;
        for (i, m) in t.program_modes.iter().enumerate() {
            per_type_ns(
                &format!("timing.program_modes[{i}].program_us"),
                &m.program_us,
                bits as usize,
            )?;
        }
        for (i, e) in t.ecc.iter().enumerate() {
            check_us(&format!("timing.ecc[{i}].decode_us"), e.decode_us)?;
            check_us(&format!("timing.ecc[{i}].extra_sense_us"), e.extra_sense_us)?;
            check_us(
                &format!("timing.ecc[{i}].decode_corrupted_us"),
                e.decode_corrupted_us,
            )?;
            check_us(&format!("timing.ecc[{i}].encode_us"), e.encode_us)?;
        }
        if t.program_modes.len() > 254 || t.ecc.len() > 254 {
            return Err(invalid(
                "timing.program_modes",
                t.program_modes.len(),
                "at most 254 extra modes / ECC kinds",
            ));
        }
        let f = &self.ftl;
        if !(f.gc_threshold_pct.is_finite() && (0.0..=50.0).contains(&f.gc_threshold_pct)) {
            return Err(invalid(
                "ftl.gc_threshold_pct",
                f.gc_threshold_pct,
                "allowed range is 0 ..= 50",
            ));
        }
        check_range("ftl.streams", f.streams, 1, 16)?;
        let h = &self.host;
        if !(h.time_scale.is_finite() && (1e-6..=1e6).contains(&h.time_scale)) {
            return Err(invalid(
                "host.time_scale",
                h.time_scale,
                "allowed range is 1e-6 ..= 1e6",
            ));
        }
        check_range("host.queue_depth", h.queue_depth, 1, 1 << 20)?;
        check_range("host.max_outstanding", h.max_outstanding, 1, 1 << 24)?;
        let p = &self.precondition;
        if !(p.fill_fraction.is_finite() && (0.0..=1.0).contains(&p.fill_fraction)) {
            return Err(invalid(
                "precondition.fill_fraction",
                p.fill_fraction,
                "allowed range is 0 ..= 1",
            ));
        }
        if !(p.age_overwrites.is_finite() && (0.0..=100.0).contains(&p.age_overwrites)) {
            return Err(invalid(
                "precondition.age_overwrites",
                p.age_overwrites,
                "allowed range is 0 ..= 100",
            ));
        }
        if !(p.initial_age_window_s.is_finite() && (0.0..=2.0e9).contains(&p.initial_age_window_s))
        {
            return Err(invalid(
                "precondition.initial_age_window_s",
                p.initial_age_window_s,
                "allowed range is 0 ..= 2e9 s",
            ));
        }
        let rf = &self.refresh;
        // 2e9 s bounds the i32 second clock of page program times.
        if !(rf.period_s.is_finite() && (0.0..=2.0e9).contains(&rf.period_s)) {
            return Err(invalid(
                "refresh.period_s",
                rf.period_s,
                "allowed range is 0 (off) ..= 2e9 s",
            ));
        }
        if !(rf.check_interval_s.is_finite() && (0.0..=2.0e9).contains(&rf.check_interval_s)) {
            return Err(invalid(
                "refresh.check_interval_s",
                rf.check_interval_s,
                "allowed range is 0 (auto) ..= 2e9 s",
            ));
        }
        let r = &self.reliability;
        check_range("reliability.level_config", r.level_config, 0, 3)?;
        if !(r.mode0_dvpp_v.is_finite() && r.mode0_dvpp_v > 0.0 && r.mode0_dvpp_v <= 2.0) {
            return Err(invalid(
                "reliability.mode0_dvpp_v",
                r.mode0_dvpp_v,
                "allowed range is 0 < x ≤ 2 V",
            ));
        }
        if !(r.read_ref_margin_v.is_finite() && (0.0..=0.5).contains(&r.read_ref_margin_v)) {
            return Err(invalid(
                "reliability.read_ref_margin_v",
                r.read_ref_margin_v,
                "allowed range is 0 ≤ x ≤ 0.5 V",
            ));
        }
        for (i, w) in r.read_disturb_grid.windows(2).enumerate() {
            if w[0].partial_cmp(&w[1]) != Some(std::cmp::Ordering::Less) {
                return Err(invalid(
                    &format!("reliability.read_disturb_grid[{}]", i + 1),
                    w[1],
                    "must be ascending",
                ));
            }
        }
        if let Some(&x) = r
            .read_disturb_grid
            .iter()
            .find(|x| !(x.is_finite() && **x >= 0.0 && **x <= 1e12))
        {
            return Err(invalid(
                "reliability.read_disturb_grid",
                x,
                "allowed range is 0 ≤ reads ≤ 1e12",
            ));
        }
        let n_ecc = 1 + t.ecc.len();
        if !r.codes.is_empty() && r.codes.len() != n_ecc {
            return Err(invalid(
                "reliability.codes",
                r.codes.len(),
                format!("give one code per ECC id ({n_ecc}: id 0 and timing.ecc)"),
            ));
        }
        self.regions
            .validate(1 + t.program_modes.len(), r.model == ReliabilityModel::Vth)?;
        let bits = self.device.cell.bits();
        for (i, &b) in self.regions.bits_per_cell.iter().enumerate() {
            let key = format!("regions.bits_per_cell[{i}]");
            if !(b.is_finite() && b > 0.0 && b <= bits as f64) {
                return Err(invalid(
                    &key,
                    b,
                    format!("allowed range is 0 < x ≤ {bits} (the cell type's bits)"),
                ));
            }
            let pages = self.device.pages_per_block as f64 * b / bits as f64;
            if (pages - pages.round()).abs() > 1e-9 || pages.round() < 1.0 {
                return Err(invalid(
                    &key,
                    b,
                    format!(
                        "a block of {} pages would hold {pages} pages; pages_per_block must be                          divisible as the reduced layout needs (a multiple of {} for {b} of                          {bits} bits)",
                        self.device.pages_per_block,
                        (bits as f64 / gcd_f(b, bits as f64)).round()
                    ),
                ));
            }
        }
        if !self.regions.is_off() && !self.refresh.is_off() {
            return Err(invalid(
                "refresh.period_s",
                self.refresh.period_s,
                "data refresh is not supported together with [regions] yet (set 0)",
            ));
        }
        self.dpa.validate()?;
        if let Some(c) = &self.cache {
            c.validate()?;
            if self.ftl.trim {
                return Err(invalid(
                    "ftl.trim",
                    true,
                    "the [cache] layer does not model discards of the primary storage; set \
                     ftl.trim = false (discards are then skipped and counted by the reader)",
                ));
            }
        }
        self.faults.validate()?;
        if self.faults.mode == crate::reliability::faults::FaultMode::Model
            && self.reliability.model != ReliabilityModel::Vth
        {
            return Err(invalid(
                "faults.mode",
                "model",
                "errors from the reliability model need reliability.model = \"vth\" (with \
                 [[reliability.codes]], e.g. BCH t = 6 and CRC); for the paper's deterministic \
                 injection use faults.mode = \"every_nth_bit\"",
            ));
        }
        if let Some(o) = &self.osd {
            o.validate(self)?;
        }
        if !self.faults.is_off() && self.cache.is_none() {
            return Err(invalid(
                "faults.mode",
                format!("{:?}", self.faults.mode),
                "fault injection needs a [cache] section (corruptions are spread over the \
                 cache's replay, and a corrupted detect-only page is fetched from its backend \
                 disk)",
            ));
        }
        if p.initial_pe_spread > p.initial_pe_cycles {
            return Err(invalid(
                "precondition.initial_pe_spread",
                p.initial_pe_spread,
                format!(
                    "must not exceed initial_pe_cycles ({})",
                    p.initial_pe_cycles
                ),
            ));
        }
        Ok(())
    }

    /// Over-provisioning as the fraction ρ = (T − U)/U.
    pub fn op_fraction_of_logical(&self) -> f64 {
        match (
            self.device.op_percent_of_logical,
            self.device.op_percent_of_physical,
        ) {
            (Some(v), _) => v / 100.0,
            (None, Some(p)) => {
                let p = p / 100.0;
                p / (1.0 - p)
            }
            (None, None) => 0.15,
        }
    }

    /// Mapping units per flash page (`ftl.mapping_unit_bytes`; 1 when the FTL maps pages).
    pub fn map_units(&self) -> u32 {
        match self.ftl.mapping_unit_bytes {
            0 => 1,
            u => (self.device.page_size_bytes / u).max(1),
        }
    }

    /// The FTL's page, bytes: the mapping unit, or the flash page when it maps pages. Every
    /// LPN, PPN and page count of the FTL and the engine is in these units.
    pub fn map_page_bytes(&self) -> u32 {
        self.device.page_size_bytes / self.map_units()
    }

    /// `ftl.allocation = "superpage"`: the features it does not combine with, each an error
    /// naming the way out.
    fn validate_superpage(&self) -> Result<(), ConfigError> {
        let unit = self.ftl.mapping_unit_bytes;
        let page = self.device.page_size_bytes;
        if unit != 0 {
            if !(512..=page).contains(&unit)
                || !unit.is_multiple_of(512)
                || !page.is_multiple_of(unit)
            {
                return Err(invalid(
                    "ftl.mapping_unit_bytes",
                    unit,
                    format!(
                        "must be a multiple of 512 B that divides device.page_size_bytes = {page} \
                         (e.g. 4096), or 0 for the page"
                    ),
                ));
            }
            if unit < page && self.ftl.allocation != Allocation::Superpage {
                return Err(invalid(
                    "ftl.mapping_unit_bytes",
                    unit,
                    format!(
                        "a mapping unit smaller than the {page} B page needs \
                         ftl.allocation = \"superpage\" (units fill super-pages); use it, or \
                         ftl.mapping_unit_bytes = 0"
                    ),
                ));
            }
        }
        let w = self.ftl.superpage_wait_us;
        if !(w.is_finite() && (0.0..=1e9).contains(&w)) {
            return Err(invalid(
                "ftl.superpage_wait_us",
                w,
                "must be between 0 and 1e9 µs (0 = never hold host writes)",
            ));
        }
        if self.ftl.allocation != Allocation::Superpage {
            return Ok(());
        }
        let no = |key: &str, value: String, why: &str| {
            Err(invalid(
                key,
                value,
                format!("{why}; with it use ftl.allocation = \"static\""),
            ))
        };
        if !self.regions.is_off() {
            return no(
                "regions",
                "[regions]".into(),
                "superpage allocation does not combine with block pools (a superblock spans \
                 the planes of a die, a region's pools are per plane)",
            );
        }
        if !self.sched.multi_plane {
            return no(
                "sched.multi_plane",
                "false".into(),
                "a super-page is one multi-plane program over the planes of a die",
            );
        }
        if self.ftl.copyback {
            return no(
                "ftl.copyback",
                "true".into(),
                "a superpage GC copy may change plane, which copyback cannot",
            );
        }
        if self.device.page_order != PageOrder::Sequential {
            return no(
                "device.page_order",
                format!("{:?}", self.device.page_order),
                "superpage allocation fills word lines in page order",
            );
        }
        if !self.refresh.is_off() {
            return no(
                "refresh.period_s",
                self.refresh.period_s.to_string(),
                "data refresh relocates within a plane (IDA), not by super-page",
            );
        }
        Ok(())
    }

    /// Resolve the timing in ns for the core.
    pub fn timing(&self) -> Result<Timing, ConfigError> {
        let bits = self.device.cell.bits();
        let t = &self.timing;
        let mut modes = vec![ProgramModeTiming {
            name: t.program_mode_name.clone(),
            program_ns: per_type_ns("timing.program_us", &t.program_us, bits)?,
        }];
        for (i, m) in t.program_modes.iter().enumerate() {
            modes.push(ProgramModeTiming {
                name: m.name.clone(),
                program_ns: per_type_ns(
                    &format!("timing.program_modes[{i}].program_us"),
                    &m.program_us,
                    bits,
                )?,
            });
        }
        let mut eccs = vec![EccTiming {
            name: t.ecc_name.clone(),
            decode_ns: us_to_ns(t.ecc_decode_us),
            extra_sense_ns: 0,
            decode_corrupted_ns: us_to_ns(t.ecc_decode_corrupted_us),
            encode_ns: us_to_ns(t.ecc_encode_us),
            detect_only: false,
        }];
        for e in &t.ecc {
            eccs.push(EccTiming {
                name: e.name.clone(),
                decode_ns: us_to_ns(e.decode_us),
                extra_sense_ns: us_to_ns(e.extra_sense_us),
                decode_corrupted_ns: us_to_ns(e.decode_corrupted_us),
                encode_ns: us_to_ns(e.encode_us),
                detect_only: e.detect_only,
            });
        }
        let bytes_per_s = t.channel_mt_s * 1e6 * t.channel_width_bytes as f64;
        // One FTL page's transfer: the mapping unit's bytes (a part moves any column range of
        // its page register), the page's without sub-page mapping.
        let transfer_ns = (self.map_page_bytes() as f64 / bytes_per_s * 1e9).round() as u64;
        Ok(Timing {
            read_ns: per_type_ns("timing.read_us", &t.read_us, bits)?,
            modes,
            eccs,
            erase_ns: us_to_ns(t.erase_us),
            transfer_ns,
        })
    }

    /// Block layout for the configured cell type and page order.
    ///
    /// With a mapping unit smaller than the page ([`Config::map_units`] = U > 1) this is the
    /// FTL's view: each physical page's word line and page type repeated for its U units.
    pub fn layout(&self) -> BlockLayout {
        BlockLayout::new(
            self.device.pages_per_block as usize,
            self.device.cell.bits(),
            self.device.page_order,
        )
        .with_units(self.map_units() as usize)
    }

    /// Size the geometry. `trace_max_end_bytes` is the end of the highest byte the trace
    /// touches (used when neither `blocks_per_plane` nor `logical_capacity_bytes` is set).
    ///
    /// Returns the FTL's geometry and the logical capacity in its pages (mapping units with
    /// `ftl.mapping_unit_bytes`: page size = the unit, pages per block × units per page; see
    /// [`Config::map_page_bytes`]). Logical capacity is rounded up to a block stripe (one block in every plane); physical blocks per plane =
    /// ⌈logical blocks per plane × (1 + ρ)⌉.
    pub fn size_device(&self, trace_max_end_bytes: u64) -> Result<(Geometry, u64), ConfigError> {
        let d = &self.device;
        let planes = d.channels as u64
            * d.chips_per_channel as u64
            * d.dies_per_chip as u64
            * d.planes_per_die as u64;
        // In the FTL's pages: mapping units when the FTL maps units smaller than a page.
        let ps = self.map_page_bytes() as u64;
        let ppb = d.pages_per_block as u64 * self.map_units() as u64;
        let rho = self.op_fraction_of_logical();
        let stripe_pages = planes * ppb;
        let (bpp, logical_pages) = if d.blocks_per_plane > 0 {
            let bpp = d.blocks_per_plane as u64;
            let logical = ((bpp * stripe_pages) as f64 / (1.0 + rho)).floor() as u64;
            (bpp, logical)
        } else {
            let bytes = if d.logical_capacity_bytes > 0 {
                d.logical_capacity_bytes
            } else {
                trace_max_end_bytes.max(1).max(d.min_logical_capacity_bytes)
            };
            let pages = bytes.div_ceil(ps);
            let lbpp = pages.div_ceil(stripe_pages).max(1);
            let bpp = ((lbpp as f64) * (1.0 + rho)).ceil() as u64;
            (bpp, lbpp * stripe_pages)
        };
        // GC needs spare blocks beyond its free-block reserve and the open blocks.
        let lbpp = logical_pages.div_ceil(stripe_pages);
        let thr = (((bpp as f64) * self.ftl.gc_threshold_pct / 100.0).ceil() as u64).max(2);
        let needed = lbpp + thr + self.ftl.streams as u64;
        if bpp < needed {
            let why = format!(
                "{bpp} blocks per plane for {lbpp} logical blocks leave no room for GC: it keeps \
                 {thr} free blocks and {} open; at least {needed} blocks per plane are needed",
                self.ftl.streams
            );
            // Blame the key the user set: the block count when given, else the
            // over-provisioning in the definition the config uses, as written.
            return Err(if d.blocks_per_plane > 0 {
                invalid(
                    "device.blocks_per_plane",
                    d.blocks_per_plane,
                    format!("{why} (raise device.blocks_per_plane)"),
                )
            } else if let (None, Some(p)) = (d.op_percent_of_logical, d.op_percent_of_physical) {
                invalid(
                    "device.op_percent_of_physical",
                    p,
                    format!("{why} (raise over-provisioning or the device size)"),
                )
            } else {
                invalid(
                    "device.op_percent_of_logical",
                    d.op_percent_of_logical.unwrap_or(15.0),
                    format!("{why} (raise over-provisioning or the device size)"),
                )
            });
        }
        if !self.regions.bits_per_cell.is_empty() {
            // Reduced-state regions hold fewer pages per block: the logical data and every
            // region's GC reserve must still fit what the blocks hold.
            let pages = self.regions.pages_per_block(ppb as u32, d.cell.bits());
            let blocks = self.regions.blocks_per_plane(bpp as u32);
            let usable: u64 = blocks
                .iter()
                .zip(&pages)
                .map(|(&b, &p)| b as u64 * p as u64)
                .sum();
            let reserve: u64 = blocks
                .iter()
                .zip(&pages)
                .map(|(&b, &p)| {
                    let thr =
                        (((b as f64) * self.ftl.gc_threshold_pct / 100.0).ceil() as u64).max(2);
                    (thr + self.ftl.streams as u64 + 1) * p as u64
                })
                .sum();
            let logical_per_plane = logical_pages.div_ceil(planes);
            if usable < logical_per_plane + reserve {
                return Err(invalid(
                    "regions.bits_per_cell",
                    format!("{:?}", self.regions.bits_per_cell),
                    format!(
                        "the reduced-state regions leave {usable} usable pages per plane for \
                         {logical_per_plane} logical pages and a GC reserve of {reserve}: the \
                         data does not fit; raise device.op_percent_of_logical or make the \
                         reduced region smaller (regions.fractions)"
                    ),
                ));
            }
        }
        if !self.regions.is_off() {
            for (r, &b) in self.regions.blocks_per_plane(bpp as u32).iter().enumerate() {
                let thr_r = (((b as f64) * self.ftl.gc_threshold_pct / 100.0).ceil() as u64).max(2);
                let need = thr_r + self.ftl.streams as u64 + 1;
                if (b as u64) < need {
                    return Err(invalid(
                        "regions.fractions",
                        format!("{:?}", self.regions.fractions),
                        format!(
                            "region {} ({}) gets {b} blocks per plane of {bpp}; it needs at \
                             least {need} (GC reserve {thr_r}, {} open blocks, 1 host reserve)",
                            r,
                            self.regions.name(r),
                            self.ftl.streams
                        ),
                    ));
                }
            }
        }
        let total_pages = bpp * stripe_pages;
        if total_pages >= u32::MAX as u64 {
            let max = u32::MAX as u64 - 1;
            let fits = format!(
                "the device would have {total_pages} pages of {ps} B; at most {max} \
                 ({}) fit the 32-bit PPN",
                human_bytes(max * ps)
            );
            return Err(if d.blocks_per_plane > 0 {
                invalid("device.blocks_per_plane", bpp, fits)
            } else if d.logical_capacity_bytes > 0 {
                invalid(
                    "device.logical_capacity_bytes",
                    d.logical_capacity_bytes,
                    fits,
                )
            } else {
                invalid(
                    "device.logical_capacity_bytes",
                    format!(
                        "0 (auto: the trace's address space, {})",
                        human_bytes(trace_max_end_bytes)
                    ),
                    format!(
                        "{fits}. Pack what the trace touches (device.address_map = \"compact\" \
                         or \"auto\"), replay part of the address space (set \
                         device.logical_capacity_bytes and ftl.wrap_offsets = true), use larger \
                         pages (device.page_size_bytes), or for a multi-device trace one device \
                         (--device ID; `nandlab trace stats` lists them)"
                    ),
                )
            });
        }
        if bpp > u32::MAX as u64 / 2 {
            return Err(invalid("device.blocks_per_plane", bpp, "too many blocks"));
        }
        Ok((
            Geometry {
                channels: d.channels,
                chips_per_channel: d.chips_per_channel,
                dies_per_chip: d.dies_per_chip,
                planes_per_die: d.planes_per_die,
                blocks_per_plane: bpp as u32,
                pages_per_block: ppb as u32,
                page_size_bytes: ps as u32,
                cell: d.cell,
            },
            logical_pages,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        let c = load("", "<s>", &[]).unwrap();
        assert_eq!(c.device.channels, 8);
        assert!((c.op_fraction_of_logical() - 0.15).abs() < 1e-12);
        let t = c.timing().unwrap();
        assert_eq!(t.read_ns[0], 45_000);
        assert_eq!(t.transfer_ns, 20_480);
    }

    #[test]
    fn unknown_key_is_an_error_naming_it() {
        let e = load("[device]\nchanels = 4\n", "x.toml", &[]).unwrap_err();
        let s = e.to_string();
        assert!(s.contains("x.toml") && s.contains("chanels"), "{s}");
    }

    #[test]
    fn out_of_range_names_key_value_range() {
        let e = load("[device]\nchannels = 0\n", "x.toml", &[]).unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("device.channels") && s.contains("= 0") && s.contains("1 ..= 1024"),
            "{s}"
        );
        let e = load("", "x", &["ftl.gc_threshold_pct=80".into()]).unwrap_err();
        assert!(e.to_string().contains("ftl.gc_threshold_pct"), "{e}");
    }

    #[test]
    fn overrides_apply() {
        let c = load(
            "[device]\nchannels = 4\n",
            "x",
            &[
                "device.channels=2".into(),
                "scheme.name=foo".into(),
                "timing.read_us=[50, 100]".into(),
            ],
        )
        .unwrap();
        assert_eq!(c.device.channels, 2);
        assert_eq!(c.scheme.name, "foo");
        assert_eq!(c.timing().unwrap().read_ns[1], 100_000);
        let e = load("", "x", &["device.channels".into()]).unwrap_err();
        assert!(e.to_string().contains("key=value"), "{e}");
    }

    #[test]
    fn op_definitions_convert() {
        let c = load("[device]\nop_percent_of_physical = 20\n", "x", &[]).unwrap();
        assert!((c.op_fraction_of_logical() - 0.25).abs() < 1e-12);
        let e = load(
            "[device]\nop_percent_of_physical = 20\nop_percent_of_logical = 25\n",
            "x",
            &[],
        )
        .unwrap_err();
        assert!(e.to_string().contains("not both"), "{e}");
    }

    #[test]
    fn sizing_rounds_to_stripe_and_adds_op() {
        let c = load(
            "[device]\nchannels = 2\npages_per_block = 4\npage_size_bytes = 4096\n",
            "x",
            &[],
        )
        .unwrap();
        // 1000 pages of data -> 125 blocks per plane logical (2 planes × 4 pages per stripe).
        let (g, logical) = c.size_device(1000 * 4096 - 5).unwrap();
        assert_eq!(logical, 125 * 8);
        assert_eq!(g.blocks_per_plane, 144); // ceil(125 × 1.15) = 144
                                             // A tiny device has no room for GC: an error, not a silent enlargement.
        let e = c.size_device(100 * 4096).unwrap_err().to_string();
        assert!(
            e.contains("op_percent_of_logical") && e.contains("at least"),
            "{e}"
        );
    }
}

#[cfg(test)]
mod first_hour_tests {
    //! Issue 19: what a new user trips over.
    use super::*;

    #[test]
    fn an_override_of_one_op_definition_replaces_the_other() {
        let base = "[device]\nop_percent_of_logical = 15.0\n";
        let c = load(base, "d.toml", &["device.op_percent_of_physical=10".into()]).unwrap();
        assert_eq!(c.device.op_percent_of_logical, None);
        assert_eq!(c.device.op_percent_of_physical, Some(10.0));
        let c = load(
            "[device]\nop_percent_of_physical = 10\n",
            "d.toml",
            &["device.op_percent_of_logical=20".into()],
        )
        .unwrap();
        assert_eq!(c.device.op_percent_of_physical, None);
        // both in the file, or both as overrides: still an error
        let both = [
            "device.op_percent_of_physical=10".to_string(),
            "device.op_percent_of_logical=10".to_string(),
        ];
        assert!(load(base, "d.toml", &both)
            .unwrap_err()
            .to_string()
            .contains("not both"));
    }

    #[test]
    fn a_bad_override_is_named_as_the_source_not_the_file() {
        let e = load(
            "[device]\nchannels = 8\n",
            "/pkg/default.toml",
            &["host.time_scale=2".into(), "device.channels=-3".into()],
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("--set device.channels=-3: "), "{e}");
        assert!(!e.contains("default.toml"), "{e}");
        // an error in the file itself still names the file
        let e = load(
            "[device]\nchannels = -1\n",
            "/pkg/x.toml",
            &["seed=1".into()],
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("/pkg/x.toml: "), "{e}");
    }

    #[test]
    fn sizes_with_units_are_accepted_for_every_bytes_key() {
        let c = load(
            "[device]\nlogical_capacity_bytes = \"64GiB\"\npage_size_bytes = \"4 KiB\"\n",
            "x",
            &["timing.channel_width_bytes=1".into()],
        )
        .unwrap();
        assert_eq!(c.device.logical_capacity_bytes, 64 << 30);
        assert_eq!(c.device.page_size_bytes, 4096);
        let c = load("", "x", &["device.logical_capacity_bytes=1.5G".into()]).unwrap();
        assert_eq!(c.device.logical_capacity_bytes, 3 << 29);
        let e = load("", "x", &["device.logical_capacity_bytes=64GB/s".into()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("device.logical_capacity_bytes") && e.contains("64KiB"),
            "{e}"
        );
        assert_eq!(parse_size_bytes("16GiB"), Some(16 << 30));
        assert_eq!(parse_size_bytes("64k"), Some(65536));
        assert_eq!(parse_size_bytes("0.5KiB"), Some(512));
        assert_eq!(parse_size_bytes("0.3B"), None);
        assert_eq!(parse_size_bytes("GiB"), None);
    }

    #[test]
    fn a_toml_syntax_error_keeps_its_line_breaks_and_caret() {
        let e = load("[device\nchannels = 3\n", "bad.toml", &[])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("bad.toml: TOML parse error at line 1"), "{e}");
        assert!(e.contains('\n') && e.contains('^'), "{e}");
    }

    #[test]
    fn accepted_keys_come_from_the_deserializer() {
        let keys = accepted_keys();
        for k in [
            "seed",
            "device.channels",
            "device.op_percent_of_physical",
            "timing.program_modes[].program_us",
            "timing.ecc[].extra_sense_us",
            "reliability.codes[].code",
            "reliability.codes[].t",
            "reliability.codes[].level_cost",
            "stats.request_log",
            "stats.latency_cdf",
            "refresh.period_s",
            "regions.read_latency",
            "scheme.params",
        ] {
            assert!(keys.iter().any(|x| x == k), "{k} missing from {keys:?}");
        }
        for k in ["device.device", "timing.timing", "reliability.codes[].bch"] {
            assert!(!keys.iter().any(|x| x == k), "{k} in {keys:?}");
        }
        assert!(
            !keys.iter().any(|k| k.contains(PROBE) || k == "device"),
            "{keys:?}"
        );
        // every listed key is accepted by a real load (tables and leaves alike)
        assert!(keys.len() > 60, "{}", keys.len());
    }

    #[test]
    fn a_trace_too_large_for_the_ppn_says_so_and_how_to_shrink_it() {
        let c = load("", "x", &[]).unwrap();
        let e = c.size_device(80 << 40).unwrap_err().to_string();
        assert!(
            e.contains("device.logical_capacity_bytes") && e.contains("32-bit PPN"),
            "{e}"
        );
        assert!(
            e.contains("trace's address space, 80.0 TiB") && e.contains("--device"),
            "{e}"
        );
    }
}
