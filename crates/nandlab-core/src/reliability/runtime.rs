//! The reliability model as the engine uses it: one RBER table for the run (cached on disk),
//! one code model per ECC id, and a seeded RNG for the error count of each read.
//!
//! Per page read: RBER = table(P/E of the block, retention age of the page, ΔVpp of its program
//! mode, level configuration of its program mode, reads of its block since erase);
//! errors ~ Binomial(codeword bits, RBER); the code model turns (RBER, errors) into extra
//! sensing, extra transfer, decode time and an outcome ([`crate::ecc::EccModel::read_cost`]).
//!
//! Read disturb (Guo eq. 2.8–2.9) is an axis only when `reliability.read_disturb_grid` is
//! given: one table per grid point, interpolated linearly in `ln(1 + reads)`; otherwise every
//! read is evaluated at 0 reads since erase.

use std::path::PathBuf;
use std::time::Instant;

use rand_xoshiro::Xoshiro256PlusPlus;

use super::table::{CacheStatus, RberTable, TableSpec};
use super::vth::VthParams;
use crate::config::{CodeConfig, Config, ConfigError, ReliabilityModel};
use crate::ecc::{draw_errors, Bch, BchTiming, EccModel, Ldpc, ReadCost};
use crate::flash::{CellType, Timing};

/// The per-run read model.
pub struct ReadModel {
    /// One table per read-disturb grid point (one table when read disturb is off).
    tables: Vec<RberTable>,
    /// `ln(1 + reads)` of each table's reads-since-erase.
    reads_x: Vec<f64>,
    codes: Vec<EccModel>,
    /// Program mode id → table mode index.
    mode_index: Vec<usize>,
    /// Program mode id → table level-configuration index.
    mode_level: Vec<usize>,
    rng: Xoshiro256PlusPlus,
    /// Whether the table came from the cache.
    pub cache_status: CacheStatus,
    /// Seconds spent loading or building the table.
    pub table_s: f64,
    /// ΔVpp of each program mode, V.
    pub mode_dvpp_v: Vec<f64>,
}

fn cfg_err(key: &str, value: impl std::fmt::Display, msg: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        value: value.to_string(),
        msg: msg.into(),
    }
}

/// The cache directory: `reliability.cache_dir`, else `$NANDLAB_CACHE_DIR`, else
/// `$HOME/.cache/nandlab`, else `./.nandlab-cache`.
pub fn cache_dir(cfg: &Config) -> PathBuf {
    if !cfg.reliability.cache_dir.is_empty() {
        return PathBuf::from(&cfg.reliability.cache_dir);
    }
    if let Some(d) = std::env::var_os("NANDLAB_CACHE_DIR") {
        return PathBuf::from(d);
    }
    match std::env::var_os("HOME") {
        Some(h) => PathBuf::from(h).join(".cache").join("nandlab"),
        None => PathBuf::from(".nandlab-cache"),
    }
}

impl ReadModel {
    /// Build the model for a run, or `None` when `reliability.model = "none"`.
    ///
    /// # Errors
    /// [`ConfigError`] for a bad code or table parameter, or an unwritable cache.
    pub fn new(cfg: &Config, timing: &Timing) -> Result<Option<ReadModel>, ConfigError> {
        let r = &cfg.reliability;
        if r.model != ReliabilityModel::Vth {
            return Ok(None);
        }
        // Program modes → ΔVpp (t_p ∝ 1/ΔVpp, EFM eq. 2), deduplicated into the table axis.
        let t0 = timing.modes[0].program_ns[0].max(1) as f64;
        let mode_dvpp_v: Vec<f64> = timing
            .modes
            .iter()
            .map(|m| r.mode0_dvpp_v * t0 / m.program_ns[0].max(1) as f64)
            .collect();
        let mut axis: Vec<f64> = Vec::new();
        let mut mode_index = Vec::new();
        for &d in &mode_dvpp_v {
            let d = (d * 1e6).round() / 1e6;
            let i = match axis.iter().position(|&x| x == d) {
                Some(i) => i,
                None => {
                    axis.push(d);
                    axis.len() - 1
                }
            };
            mode_index.push(i);
        }
        for (i, &d) in axis.iter().enumerate() {
            if d > 2.0 {
                return Err(cfg_err(
                    "timing.program_modes",
                    d,
                    format!("mode {i} implies ΔVpp above 2 V; its program time is too short"),
                ));
            }
        }
        let mut spec = TableSpec::guo_default();
        spec.params =
            match cfg.device.cell {
                CellType::Mlc => VthParams::guo_ch3_mlc(),
                CellType::Tlc if r.level_config == 0 => VthParams::tlc(),
                CellType::Tlc => return Err(cfg_err(
                    "reliability.level_config",
                    r.level_config,
                    "reduced-state (NUNMA) configurations are MLC only; use 0 with a TLC device",
                )),
                other => {
                    return Err(cfg_err(
                        "device.cell",
                        format!("{other:?}"),
                        "the Vth model covers MLC and TLC; use reliability.model = \"none\"",
                    ))
                }
            }
            .with_read_ref_margin(r.read_ref_margin_v)
            .map_err(|e| {
                cfg_err(
                    "reliability.read_ref_margin_v",
                    r.read_ref_margin_v,
                    e.to_string(),
                )
            })?;
        // The grids are checked here, naming their keys (the table's own check would name the
        // table and its cache file).
        for (key, grid, hi) in [
            ("reliability.pe_grid", &r.pe_grid, 1e7),
            ("reliability.retention_grid_s", &r.retention_grid_s, 1e10),
            ("reliability.read_disturb_grid", &r.read_disturb_grid, 1e12),
        ] {
            if key.ends_with("read_disturb_grid") && grid.is_empty() {
                continue; // empty = read disturb off
            }
            crate::reliability::table::axis("grid", grid, hi)
                .map_err(|e| cfg_err(key, format!("{grid:?}"), e.to_string()))?;
        }
        spec.pe = r.pe_grid.clone();
        spec.retention_s = r.retention_grid_s.clone();
        spec.modes_dvpp = axis;
        // Level configuration of each program mode: `mode_levels[i]`, else `level_config`.
        let all_levels = spec.levels.clone();
        let n_modes = timing.modes.len();
        if !r.mode_levels.is_empty() && r.mode_levels.len() != n_modes {
            return Err(cfg_err(
                "reliability.mode_levels",
                format!("{:?}", r.mode_levels),
                format!("give one level configuration per program mode ({n_modes})"),
            ));
        }
        let mut level_axis: Vec<usize> = Vec::new();
        let mut mode_level = Vec::with_capacity(n_modes);
        for i in 0..n_modes {
            let (key, lv) = match r.mode_levels.get(i) {
                Some(&l) => (format!("reliability.mode_levels[{i}]"), l as usize),
                None => (
                    "reliability.level_config".to_string(),
                    r.level_config as usize,
                ),
            };
            if lv >= all_levels.len() {
                return Err(cfg_err(&key, lv, "allowed 0 (normal) ..= 3 (NUNMA 3)"));
            }
            if lv > 0 && cfg.device.cell == CellType::Tlc {
                return Err(cfg_err(
                    &key,
                    lv,
                    "reduced-state (NUNMA) configurations are MLC only",
                ));
            }
            let j = match level_axis.iter().position(|&x| x == lv) {
                Some(j) => j,
                None => {
                    level_axis.push(lv);
                    level_axis.len() - 1
                }
            };
            mode_level.push(j);
        }
        // Keep only the level configurations in use: each one costs a full table.
        spec.levels = level_axis.iter().map(|&l| all_levels[l]).collect();
        let reads_grid: Vec<f64> = if r.read_disturb_grid.is_empty() {
            vec![0.0]
        } else {
            r.read_disturb_grid.clone()
        };
        let dir = cache_dir(cfg);
        let t = Instant::now();
        let mut tables = Vec::with_capacity(reads_grid.len());
        let mut cache_status = CacheStatus::Hit;
        for &reads in &reads_grid {
            let mut sp = spec.clone();
            sp.reads = reads;
            let (table, st) = RberTable::load_or_build(&sp, &dir)
                .map_err(|e| cfg_err("reliability", dir.display(), e.to_string()))?;
            if st == CacheStatus::Built {
                cache_status = CacheStatus::Built;
            }
            tables.push(table);
        }
        let table_s = t.elapsed().as_secs_f64();
        let page_bits = 8 * cfg.device.page_size_bytes;
        let n_ecc = timing.eccs.len();
        let mut codes = Vec::with_capacity(n_ecc);
        for i in 0..n_ecc {
            let c = r
                .codes
                .get(i)
                .cloned()
                .unwrap_or(CodeConfig::Bch { t: 130 });
            let key = format!("reliability.codes[{i}]");
            let m = match c {
                CodeConfig::Bch { t } => EccModel::Bch(
                    Bch::for_page(page_bits, t, &BchTiming::flexecc_hw())
                        .map_err(|e| cfg_err(&key, t, e.to_string()))?,
                ),
                CodeConfig::Ldpc {
                    hard_decode_us,
                    soft_decode_us_per_level,
                    thresholds,
                    level_cost,
                } => EccModel::Ldpc(
                    Ldpc::new(
                        page_bits + page_bits / 8,
                        hard_decode_us * 1000.0,
                        soft_decode_us_per_level * 1000.0,
                        thresholds.clone(),
                    )
                    .map_err(|e| cfg_err(&key, format!("{thresholds:?}"), e.to_string()))?
                    .with_level_cost(level_cost),
                ),
                CodeConfig::Crc => EccModel::Crc(crate::ecc::Crc {
                    n_bits: page_bits + 32,
                    detect_ns: crate::ecc::CRC_NS,
                }),
            };
            codes.push(m);
        }
        Ok(Some(ReadModel {
            tables,
            reads_x: reads_grid.iter().map(|r| r.ln_1p()).collect(),
            codes,
            mode_index,
            mode_level,
            rng: crate::rng::rng_stream(cfg.seed, 3),
            cache_status,
            table_s,
            mode_dvpp_v,
        }))
    }

    /// RBER and read cost of one page read (`reads`: reads of its block since erase).
    #[inline]
    pub fn read(
        &mut self,
        pe: u32,
        retention_s: f64,
        mode: u8,
        ecc: u8,
        reads: u32,
    ) -> (f64, ReadCost) {
        let rber = self.rber_at(pe, retention_s, mode, reads);
        let code = &self.codes[ecc as usize];
        let errors = draw_errors(&mut self.rng, code.codeword_bits(), rber);
        (rber, code.read_cost(rber, errors))
    }

    /// A read of a page copy whose error state is fixed by `v` ∈ [0, 1) (`[faults] mode =
    /// "model"`, [`crate::reliability::faults`]): RBER as in [`ReadModel::read`], the error
    /// count from [`EccModel::errors_at_quantile`] instead of a random draw. Returns the RBER,
    /// the error count and the cost.
    pub fn read_copy(
        &self,
        pe: u32,
        retention_s: f64,
        mode: u8,
        ecc: u8,
        reads: u32,
        v: f64,
    ) -> (f64, u32, ReadCost) {
        let rber = self.rber_at(pe, retention_s, mode, reads);
        let code = &self.codes[ecc as usize];
        let errors = code.errors_at_quantile(rber, v);
        (rber, errors, code.read_cost(rber, errors))
    }

    /// RBER at 0 reads since erase, without drawing (for reports and tests).
    pub fn rber(&self, pe: u32, retention_s: f64, mode: u8) -> f64 {
        self.rber_at(pe, retention_s, mode, 0)
    }

    /// RBER with `reads` reads of the block since erase (linear in `ln(1 + reads)` between
    /// the read-disturb grid points, clamped to the grid).
    pub fn rber_at(&self, pe: u32, retention_s: f64, mode: u8, reads: u32) -> f64 {
        let m = self.mode_index[mode as usize];
        let l = self.mode_level[mode as usize];
        let at = |i: usize| self.tables[i].rber(pe as f64, retention_s.max(0.0), m, l);
        let n = self.tables.len();
        if n == 1 {
            return at(0);
        }
        let x = f64::from(reads).ln_1p();
        let i = self.reads_x.partition_point(|&g| g <= x);
        if i == 0 {
            return at(0);
        }
        if i >= n {
            return at(n - 1);
        }
        let (x0, x1) = (self.reads_x[i - 1], self.reads_x[i]);
        let f = if x1 > x0 { (x - x0) / (x1 - x0) } else { 0.0 };
        let (a, b) = (at(i - 1), at(i));
        a + (b - a) * f
    }

    /// The code model of an ECC id.
    pub fn code(&self, ecc: u8) -> &EccModel {
        &self.codes[ecc as usize]
    }
}
