//! The reliability model as the engine uses it: one RBER table for the run (cached on disk),
//! one code model per ECC id, and a seeded RNG for the error count of each read.
//!
//! Per page read: RBER = table(P/E of the block, retention age of the page, ΔVpp of its program
//! mode, level configuration); errors ~ Binomial(codeword bits, RBER); the code model turns
//! (RBER, errors) into extra sensing, extra transfer, decode time and an outcome
//! ([`crate::ecc::EccModel::read_cost`]).

use std::path::PathBuf;
use std::time::Instant;

use rand_xoshiro::Xoshiro256PlusPlus;

use super::table::{CacheStatus, RberTable, TableSpec};
use super::vth::{LevelConfig, VthParams};
use crate::config::{CodeConfig, Config, ConfigError, ReliabilityModel};
use crate::ecc::{draw_errors, Bch, BchTiming, EccModel, Ldpc, ReadCost};
use crate::flash::{CellType, Timing};

/// The per-run read model.
pub struct ReadModel {
    table: RberTable,
    codes: Vec<EccModel>,
    /// Program mode id → table mode index.
    mode_index: Vec<usize>,
    level: usize,
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
        if r.model == ReliabilityModel::None {
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
        spec.pe = r.pe_grid.clone();
        spec.retention_s = r.retention_grid_s.clone();
        spec.modes_dvpp = axis;
        let level = r.level_config as usize;
        if level >= spec.levels.len() {
            return Err(cfg_err(
                "reliability.level_config",
                level,
                "allowed 0 ..= 3",
            ));
        }
        // Keep only the level configuration in use: the table is 4× cheaper.
        let lc: LevelConfig = spec.levels[level];
        spec.levels = vec![lc];
        let dir = cache_dir(cfg);
        let t = Instant::now();
        let (table, cache_status) = RberTable::load_or_build(&spec, &dir)
            .map_err(|e| cfg_err("reliability", dir.display(), e.to_string()))?;
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
            table,
            codes,
            mode_index,
            level: 0,
            rng: crate::engine::rng_stream(cfg.seed, 3),
            cache_status,
            table_s,
            mode_dvpp_v,
        }))
    }

    /// RBER and read cost of one page read.
    #[inline]
    pub fn read(&mut self, pe: u32, retention_s: f64, mode: u8, ecc: u8) -> (f64, ReadCost) {
        let rber = self.table.rber(
            pe as f64,
            retention_s.max(0.0),
            self.mode_index[mode as usize],
            self.level,
        );
        let code = &self.codes[ecc as usize];
        let errors = draw_errors(&mut self.rng, code.codeword_bits(), rber);
        (rber, code.read_cost(rber, errors))
    }

    /// RBER without drawing (for reports and tests).
    pub fn rber(&self, pe: u32, retention_s: f64, mode: u8) -> f64 {
        self.table.rber(
            pe as f64,
            retention_s.max(0.0),
            self.mode_index[mode as usize],
            self.level,
        )
    }

    /// The code model of an ECC id.
    pub fn code(&self, ecc: u8) -> &EccModel {
        &self.codes[ecc as usize]
    }
}
