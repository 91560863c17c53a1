//! Program modes: an ISPP step ΔVpp and the page-program latency it implies.
//!
//! Program latency is inversely proportional to ΔVpp (Li, Yuan & Du, EFM, eq. 2:
//! `t_p ∝ 1/ΔVpp`); the RBER of pages written in a mode comes from the Vth model at that ΔVpp
//! (the `modes_dvpp` axis of [`super::table::TableSpec`]).

use serde::{Deserialize, Serialize};

use super::{check_range, ReliabilityError};

/// One program mode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProgramMode {
    /// Label.
    pub name: String,
    /// ISPP step, V.
    pub dvpp: f64,
    /// Page-program latency, ns.
    pub program_ns: f64,
}

impl ProgramMode {
    /// A mode at `dvpp` whose latency scales as `1/ΔVpp` from a reference mode
    /// (EFM eq. 2).
    pub fn scaled(
        name: &str,
        reference: &ProgramMode,
        dvpp: f64,
    ) -> Result<ProgramMode, ReliabilityError> {
        check_range("dvpp", dvpp, 1e-4, 2.0, "(0, 2] V")?;
        check_range("reference.dvpp", reference.dvpp, 1e-4, 2.0, "(0, 2] V")?;
        check_range(
            "reference.program_ns",
            reference.program_ns,
            0.0,
            1e12,
            "[0, 1e12] ns",
        )?;
        Ok(ProgramMode {
            name: name.to_string(),
            dvpp,
            program_ns: reference.program_ns * reference.dvpp / dvpp,
        })
    }

    /// Xia & Xiao (Table I, §IV): normal-cost write 1300 µs and low-cost write 650 µs, "the
    /// low-cost write mode that doubles the ΔVp". Xia & Xiao give no absolute ΔVpp; the
    /// normal mode is mapped to Guo §3.2's 0.15 V, so low-cost is 0.30 V.
    pub fn xia_xiao() -> Vec<ProgramMode> {
        vec![
            ProgramMode {
                name: "normal".into(),
                dvpp: 0.15,
                program_ns: 1_300_000.0,
            },
            ProgramMode {
                name: "low-cost".into(),
                dvpp: 0.30,
                program_ns: 650_000.0,
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_is_inverse_in_dvpp() {
        let m = ProgramMode::xia_xiao();
        let fast = ProgramMode::scaled("fast", &m[0], 0.30).unwrap();
        assert_eq!(fast.program_ns, m[1].program_ns);
        assert!(ProgramMode::scaled("bad", &m[0], 0.0).is_err());
    }
}
