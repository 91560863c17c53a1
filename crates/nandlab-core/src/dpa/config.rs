//! The `[dpa]` configuration section (Guo ch. 2): codec, lifetime-model and device
//! parameters of DPA, used by `nandlab reproduce dpa` (and, later, the `dpa` scheme).
//! Left out of a run's serialized config while it has its defaults, so reports of runs that
//! do not use DPA are unchanged.

use serde::{Deserialize, Serialize};

use super::codec::CHUNK_SIZES;
use super::lifetime::{CodeSpec, LevelMap, T_UBER};
use crate::config::ConfigError;

/// `[dpa]`: every key carries its unit; defaults are Guo's (section given per field).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DpaConfig {
    /// Data chunk size, bytes (Guo §2.6: 8 B by default).
    pub chunk_bytes: usize,
    /// Chunk size after `switch_pe`, bytes (Guo §2.6.2: 4 B).
    pub late_chunk_bytes: usize,
    /// P/E count at which the chunk size switches (Guo §2.6.2: 23 K, the 8 B lifetime).
    pub switch_pe: f64,
    /// Polynomial order (Guo §2.6: 16).
    pub polynomial_order: u32,
    /// Polynomials (Guo §2.6 / Table 4: 64).
    pub polynomials: usize,
    /// Out-of-band bytes per page (Guo Table 3: 218).
    pub oob_bytes: usize,
    /// ECC failure threshold T_uber (Guo §2.2.1: 1e-13).
    pub t_uber: f64,
    /// Retention time of the retention failure rate, s (Guo §2.2.1: 1 year).
    pub retention_s: f64,
    /// Reads of the read-disturb failure rate (Guo Fig. 12(c): 5 K; Fig. 5(b): 10 K).
    pub read_disturb_reads: f64,
    /// ISPP step of the lifetime model's device, V (Guo §2.2.1: 0.3).
    pub dvpp_v: f64,
    /// Read references below verify, V (Guo gives none; nandlab's reading 0.05).
    pub read_ref_margin_v: f64,
    /// K_s of the lifetime model's retention shift (Guo eq. 2.4; ch. 2 does not restate it);
    /// absent: ch. 3's 0.333. The preset's value is fitted to the thesis's baseline
    /// endurance (7,500 P/E, Fig. 5(b)), not to DPA's result (docs/reproductions.md, DPA).
    pub retention_ks: Option<f64>,
    /// Level map of the cell bit patterns: `printed` (Guo §2.1.1: 11/10/01/00) or `gray`.
    pub level_map: LevelMap,
    /// Baseline ECC (Guo §2.6: 8-bit BCH per 512 B, "(4200,4096,104)").
    pub baseline_code: CodeSpec,
    /// DPA's ECC (Guo §2.6.1: BCH(4312, 4208, 8) over 512 B data + 14 B tags).
    pub code: CodeSpec,
}

impl Default for DpaConfig {
    fn default() -> Self {
        DpaConfig {
            chunk_bytes: 8,
            late_chunk_bytes: 4,
            switch_pe: 23_000.0,
            polynomial_order: 16,
            polynomials: 64,
            oob_bytes: 218,
            t_uber: T_UBER,
            retention_s: 365.0 * 86_400.0,
            read_disturb_reads: 5000.0,
            dvpp_v: 0.3,
            read_ref_margin_v: crate::reliability::vth::NORMAL_READ_REF_MARGIN_V,
            retention_ks: None,
            level_map: LevelMap::Printed,
            baseline_code: CodeSpec::BASELINE,
            code: CodeSpec::DPA,
        }
    }
}

fn invalid(key: &str, value: impl std::fmt::Display, msg: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        value: value.to_string(),
        msg: msg.into(),
    }
}

impl DpaConfig {
    /// Whether every key has its default (then the section is not serialized).
    pub fn is_default(&self) -> bool {
        *self == DpaConfig::default()
    }

    /// Check every key.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the key, the value and the allowed range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (k, v) in [
            ("dpa.chunk_bytes", self.chunk_bytes),
            ("dpa.late_chunk_bytes", self.late_chunk_bytes),
        ] {
            if !CHUNK_SIZES.contains(&v) {
                return Err(invalid(k, v, "allowed: 4, 8, 16, 32 (Guo Fig. 10(c))"));
            }
        }
        if let Err(e) = super::poly::polynomial_set(self.polynomial_order, Some(self.polynomials)) {
            return Err(invalid(
                "dpa.polynomials",
                self.polynomials,
                format!("at order {}: {e}", self.polynomial_order),
            ));
        }
        let finite_in = |k: &str, v: f64, lo: f64, hi: f64, what: &str| {
            if v.is_finite() && (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(invalid(k, v, format!("allowed range is {what}")))
            }
        };
        finite_in("dpa.switch_pe", self.switch_pe, 0.0, 1e7, "0 ..= 1e7 P/E")?;
        finite_in("dpa.t_uber", self.t_uber, 1e-30, 0.5, "1e-30 ..= 0.5")?;
        finite_in(
            "dpa.retention_s",
            self.retention_s,
            0.0,
            1e10,
            "0 ..= 1e10 s",
        )?;
        finite_in(
            "dpa.read_disturb_reads",
            self.read_disturb_reads,
            0.0,
            1e12,
            "0 ..= 1e12",
        )?;
        finite_in("dpa.dvpp_v", self.dvpp_v, 1e-3, 2.0, "0.001 ..= 2 V")?;
        finite_in(
            "dpa.read_ref_margin_v",
            self.read_ref_margin_v,
            0.0,
            0.5,
            "0 ..= 0.5 V",
        )?;
        if let Some(ks) = self.retention_ks {
            if !(ks.is_finite() && ks > 0.0 && ks <= 10.0) {
                return Err(invalid("dpa.retention_ks", ks, "allowed range is (0, 10]"));
            }
        }
        if self.oob_bytes > 65536 {
            return Err(invalid(
                "dpa.oob_bytes",
                self.oob_bytes,
                "allowed 0 ..= 65536",
            ));
        }
        for (k, c) in [
            ("dpa.baseline_code", self.baseline_code),
            ("dpa.code", self.code),
        ] {
            crate::ecc::Bch::new(c.n, c.k, c.t, c.m, &crate::ecc::BchTiming::flexecc_hw())
                .map_err(|e| {
                    invalid(
                        k,
                        format!("({}, {}, t={}, m={})", c.n, c.k, c.t, c.m),
                        e.to_string(),
                    )
                })?;
        }
        Ok(())
    }
}
