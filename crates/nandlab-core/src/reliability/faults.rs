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
//! Mode `model` (issue 14 item 6; FlexECC spec §1.7 "model mode"): errors come from the
//! reliability model (`[reliability] model = "vth"`, with `[[reliability.codes]]` such as
//! BCH t = 6 for id 0 and CRC for id 1). Each physical copy of a page draws one uniform number
//! v (a hash of the seed, the PPN and its block's erase count, so the draw is fixed for the
//! copy); when the copy is read (host read, GC move, or checked by the scrubber) at raw bit error
//! rate RBER(P/E, retention age, ΔVpp, reads since erase), it holds errors when
//! v < P(X > 0) and more than a BCH code corrects when v < P(X > t), X ~ Binomial(codeword bits,
//! RBER). Both thresholds grow with RBER, so a copy that has aged into errors keeps them until
//! it is reprogrammed. A copy with errors is flagged as in the deterministic mode: a correcting
//! code decodes it at the code model's corrupted-decode cost; a detect-only code (CRC) or a
//! BCH copy beyond t is served from the backend disk and refilled (an uncorrectable copy is
//! counted as `uncorrectable_reads`; whether its data was dirty, and so lost, is not modelled).
//! The same draw sets the read's cost (the read model's per-read random draw is not used).
//!
//! Not modelled: faults on writes; in `every_nth_bit`, errors that appear with wear or retention
//! (that is `model`), and multi-bit errors beyond the code's strength (a corrupted page of a
//! correcting code is always corrected, at `decode_corrupted_us`).

use serde::{Deserialize, Serialize};

use crate::config::error::ConfigError;

/// How faults are injected.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum FaultMode {
    /// No faults.
    #[default]
    Off,
    /// FlexECC §4.4: every 1/RBER-th bit, spread evenly over the replay.
    EveryNthBit,
    /// Errors from the reliability model per page copy (needs `reliability.model = "vth"`).
    Model,
}

/// `[faults]`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FaultsConfig {
    /// `off`, `every_nth_bit` or `model`.
    pub mode: FaultMode,
    /// Raw bit error rate of `every_nth_bit` (FlexECC §4.4: 1e-7; Fig. 6 sweeps it); unused by
    /// `model`, whose RBER comes from the reliability model.
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
    /// More errors than its correcting code corrects (`model` mode only): served from the
    /// backend disk like a detect-only page.
    pub uncorrectable: bool,
}

/// The uniform draw v ∈ [0, 1) of one physical page copy in `model` mode: SplitMix64 of the
/// seed, the PPN and its block's erase count (a new copy after each erase of the block).
pub fn copy_draw(seed: u64, ppn: u32, block_erases: u32) -> f64 {
    let mut z = seed
        ^ (u64::from(ppn)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (u64::from(block_erases)).wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}
