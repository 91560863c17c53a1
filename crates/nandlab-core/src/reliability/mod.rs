//! Reliability models: a Monte-Carlo threshold-voltage (Vth) model of MLC/TLC NAND cells
//! ([`vth`]) and cached, interpolated RBER tables built from it ([`table`]).
//!
//! The physics follows Guo's dissertation (ch. 2.1–2.2 and 3.2); see `DESIGN.md` §7.
//! No Monte Carlo runs in the simulator's hot loop: the engine looks RBER up in an
//! [`table::RberTable`] and draws error counts with [`crate::ecc::draw_errors`].
//!
//! Integration into the read path (for the engine):
//!
//! ```no_run
//! use nandlab_core::ecc::{draw_errors, Bch, BchTiming, EccModel};
//! use nandlab_core::reliability::table::{RberTable, TableSpec};
//! use rand::SeedableRng;
//!
//! // Once per run (cold: tens of seconds; cached: milliseconds).
//! let spec = TableSpec::guo_default();
//! let (table, _status) =
//!     RberTable::load_or_build(&spec, std::path::Path::new("cache")).unwrap();
//! let ecc = EccModel::Bch(Bch::for_page(8 * 8192, 40, &BchTiming::flexecc_hw()).unwrap());
//! let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
//! // Per page read: P/E of the block, age of the page, its program mode and level config
//! // (indices into spec.modes_dvpp / spec.levels, stored in the page metadata).
//! let rber = table.rber(6000.0, 30.0 * 86_400.0, 0, 0);
//! let errors = draw_errors(&mut rng, ecc.codeword_bits(), rber);
//! let cost = ecc.read_cost(rber, errors);
//! let _extra_ns = cost.extra_sense_ns + cost.extra_transfer_ns + cost.decode_ns;
//! ```

pub mod faults;
pub mod math;
pub mod modes;
pub mod reducecode;
pub mod runtime;
pub mod table;
pub mod table6;
pub mod vth;

/// Errors raised by the reliability models; each names the parameter, the value given and
/// the allowed range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReliabilityError {
    /// A numeric parameter is outside its allowed range (or not finite).
    #[error("parameter `{name}` = {value} is out of range; allowed: {allowed}")]
    OutOfRange {
        /// Parameter name.
        name: &'static str,
        /// Value supplied.
        value: f64,
        /// Human-readable allowed range.
        allowed: &'static str,
    },
    /// A list parameter has the wrong length or shape.
    #[error("parameter `{name}` has length {len}; expected {expected}")]
    BadLength {
        /// Parameter name.
        name: &'static str,
        /// Length supplied.
        len: usize,
        /// What was expected.
        expected: String,
    },
    /// A cache file could not be read or written.
    #[error("cache file {path}: {msg}")]
    Cache {
        /// Path of the cache file.
        path: String,
        /// What went wrong.
        msg: String,
    },
}

/// Check that `value` is finite and within `[lo, hi]`.
pub(crate) fn check_range(
    name: &'static str,
    value: f64,
    lo: f64,
    hi: f64,
    allowed: &'static str,
) -> Result<(), ReliabilityError> {
    if value.is_finite() && value >= lo && value <= hi {
        Ok(())
    } else {
        Err(ReliabilityError::OutOfRange {
            name,
            value,
            allowed,
        })
    }
}
