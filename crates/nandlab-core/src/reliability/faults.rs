//! Fault injection (`[faults]`): FlexECC's evaluation model of bit errors (Huang et al., ATC'14,
//! §4.4): "every 1/RBER-th bit is corrupted; the page containing it is erroneous"; faults
//! affect reads only ("writes … bypass faulty pages").
//!
//! Mode `every_nth_bit` (deterministic): with P = round(1 / (RBER · page bits)), the current
//! copy of every P-th logical page (LPN P − 1, 2P − 1, …) is corrupted, N = ⌊logical pages / P⌋
//! corruptions in all, introduced evenly over the replay (Table 4: "introduced during
//! running"): corruption k at (k + 1) · span / (N + 1) of the scaled trace span. An LPN not
//! mapped at that time passes the corruption to the next mapped LPN within P (else it is
//! skipped and counted). A fixed slot space gives every workload the same N, as Table 4 shows.
//!
//! The flag belongs to the physical copy: any program of the LPN clears it; a relocation
//! (GC, refresh) of a page of a correcting code corrects it (the move decodes); a relocated
//! page of a detect-only code (CRC) keeps it and is then known corrupted (spec §1.7).
//!
//! Not modelled: errors that appear with wear or retention (use `[reliability] model = "vth"`
//! for RBER-driven read costs; it does not set these flags), multi-bit errors beyond the code's
//! strength (a corrupted page of a correcting code is always corrected, at
//! `decode_corrupted_us`), faults on writes.

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

/// How faults are injected.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum FaultMode {
    /// No faults.
    #[default]
    Off,
    /// FlexECC §4.4: every 1/RBER-th bit, spread evenly over the replay.
    EveryNthBit,
}

/// `[faults]`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FaultsConfig {
    /// `off` or `every_nth_bit`.
    pub mode: FaultMode,
    /// Raw bit error rate of the deterministic mode (FlexECC §4.4: 1e-7; Fig. 6 sweeps it).
    pub rber: f64,
}

impl Default for FaultsConfig {
    fn default() -> Self {
        FaultsConfig {
            mode: FaultMode::Off,
            rber: 1e-7,
        }
    }
}

impl FaultsConfig {
    /// True when off (then left out of the serialized config).
    pub fn is_off(&self) -> bool {
        *self == FaultsConfig::default()
    }

    /// Check ranges.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming `faults.rber`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.rber.is_finite() && self.rber > 0.0 && self.rber < 1.0) {
            return Err(ConfigError::Invalid {
                key: "faults.rber".into(),
                value: self.rber.to_string(),
                msg: "allowed range is 0 < rber < 1".into(),
            });
        }
        Ok(())
    }

    /// Period P in pages for `page_size_bytes` pages: round(1 / (RBER · page bits)), ≥ 1.
    pub fn period_pages(&self, page_size_bytes: u64) -> u64 {
        ((1.0 / (self.rber * page_size_bytes as f64 * 8.0)).round() as u64).max(1)
    }
}

/// Engine-side state of one corrupted page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The physical copy that is corrupted.
    pub ppn: u32,
    /// Known corrupted (found by verification, a read or a carried relocation).
    pub known: bool,
}
