//! DPA: data-pattern-aware error prevention (Guo's thesis, ch. 2; spec
//! `shared/specs/dpa-flexlevel.md` §1).
//!
//! Which threshold-voltage level an MLC cell is programmed to depends on the data, and the
//! erased level L0 suffers least from cell-to-cell coupling and retention loss (§2.1–2.3). DPA's
//! pattern-probability-unbalance unit (DPA-PPU, §2.4) re-encodes each page so that more stored
//! bits are 1 and more cells sit in L0; the lifetime model (§2.2.1, eq. 2.5–2.9) turns the
//! level distribution into an ECC failure rate and a lifetime in P/E cycles.
//!
//! * [`poly`]: Guo Table 4's 64 order-16 polynomials (two misprints reconstructed), the
//!   polynomial sets of the Fig. 10 sweeps, a primitivity test.
//! * [`codec`]: the page codec — de-correlation (path A), per-chunk scrambling with the
//!   fewest-ones polynomial (path B), inversion, tags — exact round trip, ≥ 200 MB/s.
//! * [`analyze`]: streaming statistics over real files (`nandlab dpa analyze`): ones ratio
//!   raw / de-correlated / scrambled / stored, level distribution (Fig. 11), per-polynomial
//!   reduce probability (Table 5), the data profile a DPA scheme consumes.
//! * [`lifetime`]: eq. 2.5–2.9 with per-level error rates from the Vth model
//!   ([`crate::reliability::vth`]) reweighted by the data's level probabilities (eq. 2.7), UBER
//!   of the thesis's BCH codes against 1e-13, and the full-pattern Monte Carlo as a diagnostic.
//!
//! Readings the thesis leaves open (each is stated where it is implemented):
//! * the scrambler recurrence, bit order and tie rules ([`codec`]);
//! * Table 4 #10/#12 and the duplicates #29/#30 ([`poly::TABLE4`]);
//! * the polynomial sets of the order and count sweeps ([`poly::polynomial_set`]);
//! * which bits share a cell and the level map (11/10/01/00 as printed, or Gray) ([`analyze`],
//!   [`lifetime`]);
//! * the lifetime method (per-level rates × level probabilities; read disturb reported, not in
//!   F) ([`lifetime`]).
//!
//! What this module does not model: the DRAM data buffer in front of the codec (§2.3), the
//! redundant tag pages, their RAID-5 stripes, delayed writes and parallel reads (DPA-DRM,
//! §2.5) — those belong to the simulator's `dpa` scheme, which consumes the data profile
//! ([`analyze::Profile`]) rather than page contents.

pub mod analyze;
mod avx512;
mod clmul;
pub mod codec;
pub mod config;
mod decorrelate;
pub mod lifetime;
pub mod poly;
mod reference;
mod words;

pub use codec::{Backend, Choice, Codec, Encoded, TagStats};
pub use config::DpaConfig;

/// Errors of the DPA codec, analysis and lifetime model; each names the parameter, the value
/// and what is allowed, or the file and what went wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DpaError {
    /// A parameter is out of range.
    #[error("`{name}` = {value} is not allowed; allowed: {allowed}")]
    Param {
        /// Parameter name.
        name: &'static str,
        /// Value supplied.
        value: String,
        /// What is allowed.
        allowed: String,
    },
    /// A data file cannot be analysed.
    #[error("{path}: {msg}")]
    File {
        /// The file.
        path: String,
        /// What went wrong.
        msg: String,
    },
    /// The reliability model rejected a parameter.
    #[error("reliability model: {0}")]
    Reliability(String),
}
