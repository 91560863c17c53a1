//! Monte-Carlo threshold-voltage (Vth) model of MLC and TLC NAND cells (Guo ch. 2.1–2.2, 3.2).
//!
//! For every sampled victim cell the model draws
//!
//! 1. its erased Vth `x0 ~ N(1.1, 0.35)` (Guo §2.2.1 / §3.2, citing Dong et al. \[27\]);
//! 2. if programmed to level `i ≥ 1`, its ISPP-programmed Vth, uniform in
//!    `[Vverify_i, Vverify_i + ΔVpp]` (the ISPP model of Guo's reference \[27\]; Guo itself
//!    states the verify voltages and ΔVpp but not the shape, so *uniform over one step* is
//!    our reading), or `x0` itself if `x0` already passes verify;
//! 3. random telegraph noise, Laplacian with mean magnitude `λ = k·N^a` (eq. 2.1);
//! 4. cell-to-cell interference `ΔV_c2c = Σ_k ΔVp^(k)·γ^(k)` (eq. 2.2) from the neighbours
//!    programmed *after* the victim. `ΔVp` is the neighbour's Vth change in its last program
//!    step ([`ProgramScheme`]): with Guo's two-step programming (§2.1.1, Fig. 3(a)) a
//!    neighbour going to L1 moves from its erased Vth, one going to L2/L3 from the
//!    intermediate (LM) level, so the largest disturbances come from L1 and L3 — as Guo
//!    §2.1.2 states citing \[23\];
//! 5. retention charge loss `N(μd, σd²)` (eq. 2.3–2.4) with `x` = programmed Vth after RTN and
//!    `x0` = the *same cell's* erased Vth (Guo §3.2: "x0 is Vth level 0 and is modeled by
//!    N(1.1, 0.35)" — we read x0 as the random erased Vth of that cell, not the mean);
//! 6. read disturb `N(μrd, σrd²)` (eq. 2.8).
//!
//! Steps 5–6 are Gaussian given steps 1–4, so instead of drawing them the model computes the
//! exact conditional probability that the cell is read at each level (a Rao–Blackwellised
//! estimator: unbiased, and far lower variance for rare retention errors). With no retention
//! and no reads the estimator is the plain error indicator. Bit errors are counted with the
//! level → bits map (Gray code), or with Guo's ReduceCode (Table 7, eq. 3.6–3.8) for the
//! FlexLevel reduced state, where two cells hold three bits.

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use super::math::norm_cdf;
use super::{check_range, ReliabilityError};

/// Default gap between a normal-state level's verify voltage and its lower read reference, V
/// (our reading of Guo §3.4.2; see [`VthParams::read_ref`]).
pub const NORMAL_READ_REF_MARGIN_V: f64 = 0.05;

/// Foggy-step offset of the TLC preset, V: one level spacing (0.3 V) below verify (our
/// reading; see [`ProgramScheme::FoggyFine`]).
pub const TLC_FOGGY_OFFSET_V: f64 = 0.3;

/// Maximum number of levels supported (TLC).
pub const MAX_LEVELS: usize = 8;

/// One hour in seconds: the retention time constant `t0` (Guo §3.2: "t0 is set one hour").
pub const HOUR_S: f64 = 3600.0;
/// One day in seconds.
pub const DAY_S: f64 = 86_400.0;

/// Cell type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CellType {
    /// 2 bits / 4 levels.
    Mlc,
    /// 3 bits / 8 levels.
    Tlc,
}

impl CellType {
    /// Number of Vth levels.
    pub fn levels(self) -> usize {
        match self {
            CellType::Mlc => 4,
            CellType::Tlc => 8,
        }
    }
    /// Bits per cell.
    pub fn bits(self) -> u32 {
        match self {
            CellType::Mlc => 2,
            CellType::Tlc => 3,
        }
    }
}

/// Cell-to-cell coupling ratios (eq. 2.2).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Coupling {
    /// Even/odd bit-line structure: an even-bit-line victim is disturbed by its two odd
    /// x-neighbours (same word line, programmed after it), and every victim by the y and two
    /// xy neighbours on the next word line. Guo §3.2: γx, γy, γxy = 0.07, 0.09, 0.005 \[44\].
    EvenOdd {
        /// Same word line, adjacent bit line.
        gx: f64,
        /// Next word line, same bit line.
        gy: f64,
        /// Next word line, diagonal.
        gxy: f64,
    },
    /// All-bit-line structure: only next-word-line neighbours interfere.
    /// Guo §2.2.1: γy, γxy = 0.08, 0.0048 \[27\].
    AllBitLine {
        /// Next word line, same bit line.
        gy: f64,
        /// Next word line, diagonal.
        gxy: f64,
    },
}

impl Coupling {
    /// Guo §3.2 even/odd bit-line ratios (γx, γy, γxy) = (0.07, 0.09, 0.005).
    pub const GUO_EVEN_ODD: Coupling = Coupling::EvenOdd {
        gx: 0.07,
        gy: 0.09,
        gxy: 0.005,
    };
    /// Guo §2.2.1 all-bit-line ratios (γy, γxy) = (0.08, 0.0048).
    pub const GUO_ALL_BIT_LINE: Coupling = Coupling::AllBitLine {
        gy: 0.08,
        gxy: 0.0048,
    };
}

/// Read-disturb coefficients of eq. 2.8:
/// `μrd = (1/γ)·ln[1 + γ·β·ts·e^{γ(VCG − VT0)}·N^0.3·Kr]`,
/// `σrd = sqrt(α·(1 − e^{−γ·μrd}))`.
///
/// Readings (eq. 2.9 is missing from the text): the stress time is `ts × reads since
/// erase`; `VT0` is the victim's Vth before the disturb; `VCG` is the pass voltage applied to
/// unread word lines (Guo §2.1.3: 6 V); the printed `σrd = sqrt(α(1 − e^{+γμrd}))` would be
/// imaginary, so the sign of the exponent is taken as negative. With the printed coefficients
/// the shift is of order volts even for one read, so this term is reported as-is and the
/// chapter-3 preset (whose Table 6/11 simulations do not include read disturb) runs with zero
/// reads.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadDisturb {
    /// γ = 1.1 (Guo §2.2.1).
    pub gamma: f64,
    /// β = 8.8e5 (Guo §2.2.1).
    pub beta: f64,
    /// Read pulse duration ts = 8e-2 (Guo §2.2.1; unit as printed).
    pub ts: f64,
    /// α = 5.3e-2 (Guo §2.2.1).
    pub alpha: f64,
    /// Kr = 11.9 (Guo §2.2.1).
    pub kr: f64,
    /// Word-line voltage VCG = V_PASS = 6 V (Guo §2.1.3).
    pub vcg: f64,
}

impl ReadDisturb {
    /// Guo §2.2.1 coefficients.
    pub const GUO: ReadDisturb = ReadDisturb {
        gamma: 1.1,
        beta: 8.8e5,
        ts: 8e-2,
        alpha: 5.3e-2,
        kr: 11.9,
        vcg: 6.0,
    };

    /// (μrd, σrd) for a cell at `vt0` after `reads` reads at `pe` cycles (eq. 2.8).
    pub fn shift(&self, vt0: f64, pe: f64, reads: f64) -> (f64, f64) {
        if reads <= 0.0 {
            return (0.0, 0.0);
        }
        let g = self.gamma;
        let arg = g
            * self.beta
            * self.ts
            * reads
            * (g * (self.vcg - vt0)).exp()
            * pe.max(0.0).powf(0.3)
            * self.kr;
        let mu = arg.ln_1p() / g;
        let sigma = (self.alpha * (1.0 - (-g * mu).exp())).max(0.0).sqrt();
        (mu, sigma)
    }
}

/// How cells are programmed, which fixes the `ΔVp` a neighbour imposes on an earlier-programmed
/// victim (eq. 2.2).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum ProgramScheme {
    /// One step from the erased level to the final level: `ΔVp = Vth_final − x0`.
    FullSequence,
    /// Guo §2.1.1 / Fig. 3(a) two-step programming (MLC). First step: cells whose first-written
    /// bit is 0 (L2, L3 under the Gray map) go to an intermediate level LM; second step: L1
    /// from erased, L2/L3 from LM. Only the second step disturbs a victim whose own second step
    /// is done. Guo does not give LM; our reading is LM verify = L1 verify (which makes L1 and
    /// L3 the largest disturbers, matching §2.1.2). In the reduced state the second step is
    /// Guo Table 8's (MSB = 1 rows: L0→L2 or L1→L2). TLC always uses full sequence.
    TwoStep,
    /// Foggy–fine programming (TLC; not in Guo — our reading of how TLC parts limit
    /// interference): every programmed cell first goes "foggy" to `foggy_offset_v` below its
    /// verify voltage, and only the fine step, `ΔVp = Vth_final − max(x0, Vverify − offset)`,
    /// disturbs already-programmed neighbours. Full-sequence TLC with Guo's MLC coupling
    /// ratios moves a victim by up to 0.8 V across 0.3 V level spacings (RBER ≈ 0.27 at 0 P/E),
    /// which no TLC part does.
    FoggyFine {
        /// Foggy-step target below the verify voltage, V.
        foggy_offset_v: f64,
    },
}

/// What `x0` in eq. 2.3–2.4 stands for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum X0Reading {
    /// The cell's own erased Vth, drawn from N(1.1, 0.35) (default; Guo §3.2: "x0 is Vth
    /// level 0 and is modeled by Gaussian distribution N(1.1, 0.35)").
    #[default]
    PerCell,
    /// The erased-level mean (1.1 V) for every cell.
    Mean,
}

/// Device parameters of the Vth model. Field docs cite the source of each preset value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VthParams {
    /// MLC or TLC.
    pub cell: CellType,
    /// Erased-level mean, 1.1 V (Guo §2.2.1, §3.2).
    pub erased_mean: f64,
    /// Erased-level standard deviation, 0.35 V (Guo: "N(1.1, 0.35)"; read as σ, as in the
    /// cited model \[27\]).
    pub erased_sigma: f64,
    /// Program-verify voltages of levels 1..L-1 (MLC: 2.55, 3.15, 3.75 V, Guo §3.2).
    pub verify: Vec<f64>,
    /// Read reference voltages between levels (L−1 values, ascending). Guo does not list them
    /// for the normal state; §3.4.2/Fig. 19(a) places the verify voltage "close to the lower
    /// read reference voltage", and Table 10 puts the reduced-state references 0.05–0.15 V
    /// below the verify voltages. Our reading for normal MLC: `verify − 0.05 V`
    /// ([`NORMAL_READ_REF_MARGIN_V`]; 2.50, 3.10, 3.70 V). It keeps RBER rising with ΔVpp at
    /// every P/E and retention, but gives NUNMA 1 a higher RBER than the baseline, against
    /// Guo Table 11. The other reading of "close to" — references *at* the verify voltages
    /// ([`VthParams::with_read_ref_margin`]`(0.0)`) — reproduces Table 11's ordering
    /// baseline > NUNMA 1 > 2 > 3 in all 20 columns and its retention BER within 0.3–1.4×
    /// (geometric means), but then a doubled ISPP step reads *better* after a month at 6000
    /// P/E (7.8e-3 vs 1.2e-2), because a zero margin makes RBER follow the density of cells
    /// at the verify voltage (∝ 1/ΔVpp). Both are reported in issue #3's note.
    pub read_ref: Vec<f64>,
    /// Level → bit pattern (L entries). Guo §2.1.1 calls the MLC map a Gray code; its printed
    /// order 11/10/01/00 is not Gray (L1↔L2 would flip both bits), so the default is the Gray
    /// order 11/10/00/01. [`VthParams::literal_guo_bit_map`] gives the printed order.
    pub bit_map: Vec<u8>,
    /// RTN coefficient k in λ = k·N^a: 4.0e-4 (Guo §3.2) or 2.8e-4 (Guo §2.2.1) \[31\].
    pub rtn_k: f64,
    /// RTN exponent a in λ = k·N^a: 0.5 (Guo §3.2) or 0.4 (Guo §2.2.1).
    pub rtn_a: f64,
    /// Coupling structure and ratios (eq. 2.2).
    pub coupling: Coupling,
    /// Retention Ks = 0.333 (Guo §3.2, eq. 2.3–2.4).
    pub ks: f64,
    /// Retention Kd = 4e-4 (Guo §3.2; §2.2.1 uses 4e-5).
    pub kd: f64,
    /// Retention Km = 2e-6 (Guo §3.2; §2.2.1 uses 3e-6).
    pub km: f64,
    /// Retention t0 = 1 h in seconds (Guo §3.2).
    pub t0_s: f64,
    /// Read-disturb coefficients (eq. 2.8, Guo §2.2.1).
    pub read_disturb: ReadDisturb,
    /// Program scheme (Guo §2.1.1: two-step for MLC).
    pub program: ProgramScheme,
    /// Reading of `x0` in eq. 2.3–2.4.
    #[serde(default)]
    pub x0: X0Reading,
}

fn gray_map(levels: usize) -> Vec<u8> {
    let all = (levels - 1) as u8;
    (0..levels as u8).map(|i| all ^ (i ^ (i >> 1))).collect()
}

impl VthParams {
    /// FlexLevel chapter-3 MLC (Guo §3.2): λ = 4.0e-4·N^0.5, even/odd bit line
    /// (0.07/0.09/0.005), Ks/Kd/Km = 0.333/4e-4/2e-6, t0 = 1 h, verify 2.55/3.15/3.75 V.
    pub fn guo_ch3_mlc() -> Self {
        let verify = vec![2.55, 3.15, 3.75];
        let read_ref = verify
            .iter()
            .map(|v| v - NORMAL_READ_REF_MARGIN_V)
            .collect();
        VthParams {
            cell: CellType::Mlc,
            erased_mean: 1.1,
            erased_sigma: 0.35,
            verify,
            read_ref,
            bit_map: gray_map(4),
            rtn_k: 4.0e-4,
            rtn_a: 0.5,
            coupling: Coupling::GUO_EVEN_ODD,
            ks: 0.333,
            kd: 4e-4,
            km: 2e-6,
            t0_s: HOUR_S,
            read_disturb: ReadDisturb::GUO,
            program: ProgramScheme::TwoStep,
            x0: X0Reading::PerCell,
        }
    }

    /// DPA chapter-2 MLC (Guo §2.2.1): λ = 2.8e-4·N^0.4, all-bit-line (0.08/0.0048),
    /// Kd/Km = 4e-5/3e-6 (Ks and t0 are not restated in ch. 2; the ch. 3 values are kept).
    pub fn guo_ch2_mlc() -> Self {
        VthParams {
            rtn_k: 2.8e-4,
            rtn_a: 0.4,
            coupling: Coupling::GUO_ALL_BIT_LINE,
            kd: 4e-5,
            km: 3e-6,
            ..Self::guo_ch3_mlc()
        }
    }

    /// TLC extrapolation (not in Guo): the ch. 3 noise model with seven verify voltages from
    /// 2.55 V in 0.3 V steps (half the MLC spacing), read references at the verify voltages
    /// (the MLC reading, [`NORMAL_READ_REF_MARGIN_V`]), Gray map, foggy–fine programming
    /// ([`ProgramScheme::FoggyFine`], [`TLC_FOGGY_OFFSET_V`]).
    ///
    /// What it does not model well: with 0.3 V level spacing the upper margin (0.1 V at
    /// ΔVpp 0.15) is smaller than the interference shift, so errors right after programming
    /// are mostly *upward* and retention charge loss partly undoes them — RBER rises with
    /// P/E (3.6e-5 fresh, 1.9e-3 at 1000, 4.9e-3 at 3000 P/E) but falls slightly with
    /// retention time. No source calibrates a TLC Vth model for us; use it for wear trends
    /// only.
    pub fn tlc() -> Self {
        let verify: Vec<f64> = (0..7).map(|i| 2.55 + 0.3 * f64::from(i)).collect();
        let read_ref = verify
            .iter()
            .map(|v| v - NORMAL_READ_REF_MARGIN_V)
            .collect();
        VthParams {
            cell: CellType::Tlc,
            verify,
            read_ref,
            bit_map: gray_map(8),
            program: ProgramScheme::FoggyFine {
                foggy_offset_v: TLC_FOGGY_OFFSET_V,
            },
            ..Self::guo_ch3_mlc()
        }
    }

    /// The same device with normal-state read references `margin_v` volts below the verify
    /// voltages (the retention noise margin of Guo Fig. 4(a) at the bottom of each level).
    ///
    /// # Errors
    /// [`ReliabilityError::OutOfRange`] unless `0 ≤ margin_v ≤ 0.5` V.
    pub fn with_read_ref_margin(mut self, margin_v: f64) -> Result<Self, ReliabilityError> {
        check_range("read_ref_margin_v", margin_v, 0.0, 0.5, "[0, 0.5] V")?;
        self.read_ref = self.verify.iter().map(|v| v - margin_v).collect();
        Ok(self)
    }

    /// The MLC bit order as printed in Guo §2.1.1 (11, 10, 01, 00), for comparison.
    pub fn literal_guo_bit_map() -> Vec<u8> {
        vec![0b11, 0b10, 0b01, 0b00]
    }

    /// Validate all fields.
    pub fn validate(&self) -> Result<(), ReliabilityError> {
        let l = self.cell.levels();
        check_range("erased_mean", self.erased_mean, -5.0, 10.0, "[-5, 10] V")?;
        check_range("erased_sigma", self.erased_sigma, 0.0, 2.0, "[0, 2] V")?;
        check_len("verify", self.verify.len(), l - 1)?;
        check_len("read_ref", self.read_ref.len(), l - 1)?;
        check_len("bit_map", self.bit_map.len(), l)?;
        check_ascending("verify", &self.verify)?;
        check_ascending("read_ref", &self.read_ref)?;
        if let ProgramScheme::FoggyFine { foggy_offset_v } = self.program {
            check_range("foggy_offset_v", foggy_offset_v, 0.0, 5.0, "[0, 5] V")?;
        }
        let mut seen = [false; MAX_LEVELS];
        for &b in &self.bit_map {
            if usize::from(b) >= l || seen[usize::from(b)] {
                return Err(ReliabilityError::OutOfRange {
                    name: "bit_map",
                    value: f64::from(b),
                    allowed: "a permutation of 0..levels",
                });
            }
            seen[usize::from(b)] = true;
        }
        check_range("rtn_k", self.rtn_k, 0.0, 1.0, "[0, 1] V")?;
        check_range("rtn_a", self.rtn_a, 0.0, 2.0, "[0, 2]")?;
        let (a, b, c) = match self.coupling {
            Coupling::EvenOdd { gx, gy, gxy } => (gx, gy, gxy),
            Coupling::AllBitLine { gy, gxy } => (0.0, gy, gxy),
        };
        for (n, v) in [("coupling.gx", a), ("coupling.gy", b), ("coupling.gxy", c)] {
            check_range(n, v, 0.0, 1.0, "[0, 1]")?;
        }
        check_range("ks", self.ks, 0.0, 10.0, "[0, 10]")?;
        check_range("kd", self.kd, 0.0, 1.0, "[0, 1]")?;
        check_range("km", self.km, 0.0, 1.0, "[0, 1]")?;
        check_range("t0_s", self.t0_s, 1e-9, 1e12, "(0, 1e12] s")?;
        let rd = &self.read_disturb;
        check_range("read_disturb.gamma", rd.gamma, 1e-9, 100.0, "(0, 100]")?;
        check_range("read_disturb.beta", rd.beta, 0.0, 1e30, "[0, 1e30]")?;
        check_range("read_disturb.ts", rd.ts, 0.0, 1e30, "[0, 1e30]")?;
        check_range("read_disturb.alpha", rd.alpha, 0.0, 100.0, "[0, 100]")?;
        check_range("read_disturb.kr", rd.kr, 0.0, 1e30, "[0, 1e30]")?;
        check_range("read_disturb.vcg", rd.vcg, -20.0, 30.0, "[-20, 30] V")?;
        Ok(())
    }
}

fn check_len(name: &'static str, len: usize, want: usize) -> Result<(), ReliabilityError> {
    if len == want {
        Ok(())
    } else {
        Err(ReliabilityError::BadLength {
            name,
            len,
            expected: want.to_string(),
        })
    }
}

fn check_ascending(name: &'static str, v: &[f64]) -> Result<(), ReliabilityError> {
    for (i, x) in v.iter().enumerate() {
        check_range(name, *x, -5.0, 15.0, "finite voltages in [-5, 15] V")?;
        if i > 0 && *x <= v[i - 1] {
            return Err(ReliabilityError::OutOfRange {
                name,
                value: *x,
                allowed: "strictly ascending voltages",
            });
        }
    }
    Ok(())
}

/// Level configuration of an MLC cell (Guo ch. 3.4).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum LevelConfig {
    /// Normal state: all levels of the cell type, verify/read voltages from [`VthParams`].
    Normal,
    /// FlexLevel reduced state (MLC only): three levels L0 (erased), L1, L2 with the given
    /// verify and read-reference voltages; pairs of cells store 3 bits with ReduceCode
    /// (Guo Table 7, eq. 3.2–3.8).
    Reduced {
        /// Verify voltages of L1, L2.
        verify: [f64; 2],
        /// Read references L0|L1 and L1|L2.
        read_ref: [f64; 2],
    },
}

impl LevelConfig {
    /// NUNMA configuration 1–3 of Guo Table 10 (ΔVpp 0.15 in all three):
    /// NUNMA 1: verify 2.71/3.61, NUNMA 2: 2.70/3.65, NUNMA 3: 2.75/3.70; read refs 2.65/3.55.
    pub fn nunma(i: u8) -> Result<Self, ReliabilityError> {
        let verify = match i {
            1 => [2.71, 3.61],
            2 => [2.70, 3.65],
            3 => [2.75, 3.70],
            _ => {
                return Err(ReliabilityError::OutOfRange {
                    name: "nunma",
                    value: f64::from(i),
                    allowed: "1, 2 or 3",
                })
            }
        };
        Ok(LevelConfig::Reduced {
            verify,
            read_ref: [2.65, 3.55],
        })
    }

    /// Short label: `normal`, `nunma1`… (`reduced` for a custom reduced state).
    pub fn label(&self) -> String {
        for i in 1..=3u8 {
            if LevelConfig::nunma(i).ok().as_ref() == Some(self) {
                return format!("nunma{i}");
            }
        }
        match self {
            LevelConfig::Normal => "normal".into(),
            LevelConfig::Reduced { .. } => "reduced".into(),
        }
    }
}

pub use super::reducecode::{reduce_decode, reduce_encode};

/// Operating point of a page.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Condition {
    /// P/E cycles N.
    pub pe: f64,
    /// Retention (storage) time t in seconds.
    pub retention_s: f64,
    /// ISPP step ΔVpp in volts (Guo: 0.15 in ch. 3, 0.3 in ch. 2).
    pub dvpp: f64,
    /// Reads of the block since its erase (read disturb).
    pub reads: f64,
}

impl Condition {
    fn validate(&self) -> Result<(), ReliabilityError> {
        check_range("pe", self.pe, 0.0, 1e7, "[0, 1e7] cycles")?;
        check_range("retention_s", self.retention_s, 0.0, 1e10, "[0, 1e10] s")?;
        check_range("dvpp", self.dvpp, 0.0, 2.0, "[0, 2] V")?;
        check_range("reads", self.reads, 0.0, 1e12, "[0, 1e12]")
    }
}

/// Monte-Carlo options.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct McOptions {
    /// RNG seed (Xoshiro256PlusPlus).
    pub seed: u64,
    /// Target relative half-width of the 95 % interval (0.10 = ±10 %).
    pub rel_half_width: f64,
    /// RBERs below this need not meet the precision target; the run stops once the upper
    /// 95 % bound is below it.
    pub rber_floor: f64,
    /// Samples (cells, or cell pairs in the reduced state) per batch; the stopping rule is
    /// checked after each batch, so results depend only on seed and batch size.
    pub batch: u64,
    /// Hard cap on samples.
    pub max_samples: u64,
}

impl Default for McOptions {
    fn default() -> Self {
        McOptions {
            seed: 0x6e61_6e64_6c61_6221,
            rel_half_width: 0.10,
            rber_floor: 1e-5,
            batch: 1 << 14,
            max_samples: 1 << 27,
        }
    }
}

/// Result of one Monte-Carlo point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct McResult {
    /// Raw bit error rate (bit errors / bits).
    pub rber: f64,
    /// Absolute half-width of the 95 % interval of `rber`.
    pub ci95_half: f64,
    /// Cells simulated.
    pub cells: u64,
    /// Bits represented by those cells.
    pub bits: f64,
    /// Expected bit errors accumulated (= rber × bits).
    pub errors: f64,
    /// Cells whose error probability was non-zero (for the plain indicator this is the
    /// number of erroneous cells).
    pub nonzero_samples: u64,
    /// "Program BER": bit errors the same cells would show right after programming (t = 0,
    /// no reads) — Guo §3.2 / Fig. 22.
    pub program_rber: f64,
    /// "Retention time BER": bit errors at the requested condition among cells that read
    /// correctly right after programming. Guo §3.6.1 reports program BER (Fig. 22) and
    /// retention-time BER (Table 11) separately; this split is our reading of that
    /// distinction (the thesis does not define it further). `rber` ≈ `program_rber` +
    /// `retention_rber`.
    pub retention_rber: f64,
    /// 95 % half-width of `retention_rber` (not used by the stopping rule).
    pub retention_ci95_half: f64,
    /// Fraction of the bit errors coming from cells programmed to each level (Guo Fig. 18).
    pub per_level_share: Vec<f64>,
    /// Whether the precision target (or the floor rule) was met before `max_samples`.
    pub met_target: bool,
}

/// Everything needed to run one point, pre-computed (no allocation in the sample loop).
struct Prep {
    levels: usize,
    reduced: bool,
    verify: [f64; MAX_LEVELS],
    refs: [f64; MAX_LEVELS],
    bitmap: [u8; MAX_LEVELS],
    sym_cdf: [f64; MAX_LEVELS],
    n_sym: usize,
    nb_cdf: [f64; MAX_LEVELS],
    em: f64,
    es: f64,
    dvpp: f64,
    lambda: f64,
    ret_mu: f64,
    ret_var: f64,
    even_odd: bool,
    gx: f64,
    gy: f64,
    gxy: f64,
    rd: ReadDisturb,
    pe: f64,
    reads: f64,
    two_step: bool,
    /// Foggy-fine offset, V (`None` unless [`ProgramScheme::FoggyFine`]).
    foggy: Option<f64>,
    x0_mean: bool,
}

fn cdf_of(p: &[f64], out: &mut [f64; MAX_LEVELS]) {
    let s: f64 = p.iter().sum();
    let mut acc = 0.0;
    for (i, x) in p.iter().enumerate() {
        acc += x / s;
        out[i] = acc;
    }
    out[p.len() - 1] = 1.0;
}

fn pick(cdf: &[f64; MAX_LEVELS], n: usize, u: f64) -> usize {
    let mut i = 0;
    while i + 1 < n && u >= cdf[i] {
        i += 1;
    }
    i
}

impl Prep {
    fn new(
        p: &VthParams,
        cfg: &LevelConfig,
        pattern: Option<&[f64]>,
        c: &Condition,
    ) -> Result<Self, ReliabilityError> {
        p.validate()?;
        c.validate()?;
        let mut verify = [0.0; MAX_LEVELS];
        let mut refs = [f64::INFINITY; MAX_LEVELS];
        let mut bitmap = [0u8; MAX_LEVELS];
        let (levels, reduced) = match cfg {
            LevelConfig::Normal => {
                let l = p.cell.levels();
                verify[1..l].copy_from_slice(&p.verify);
                refs[..l - 1].copy_from_slice(&p.read_ref);
                bitmap[..l].copy_from_slice(&p.bit_map);
                (l, false)
            }
            LevelConfig::Reduced {
                verify: v,
                read_ref: r,
            } => {
                if p.cell != CellType::Mlc {
                    return Err(ReliabilityError::OutOfRange {
                        name: "level_config",
                        value: p.cell.levels() as f64,
                        allowed: "reduced state is defined for MLC (4-level) cells only",
                    });
                }
                check_ascending("reduced.verify", v)?;
                check_ascending("reduced.read_ref", r)?;
                verify[1] = v[0];
                verify[2] = v[1];
                refs[0] = r[0];
                refs[1] = r[1];
                (3, true)
            }
        };
        // Symbols: levels (normal) or 3-bit values (reduced pair).
        let n_sym = if reduced { 8 } else { levels };
        let uniform = vec![1.0; n_sym];
        let pat = pattern.unwrap_or(&uniform);
        if pat.len() != n_sym {
            return Err(ReliabilityError::BadLength {
                name: "pattern",
                len: pat.len(),
                expected: format!("{n_sym} (one probability per level, or per 3-bit ReduceCode value in the reduced state)"),
            });
        }
        for &x in pat {
            check_range("pattern", x, 0.0, 1.0, "probabilities in [0, 1]")?;
        }
        let total: f64 = pat.iter().sum();
        if total <= 0.0 {
            return Err(ReliabilityError::OutOfRange {
                name: "pattern (sum)",
                value: total,
                allowed: "> 0",
            });
        }
        let mut sym_cdf = [0.0; MAX_LEVELS];
        cdf_of(pat, &mut sym_cdf);
        // Marginal level distribution of neighbour cells.
        let mut marg = [0.0; MAX_LEVELS];
        if reduced {
            for (v, w) in pat.iter().enumerate() {
                let (a, b) = reduce_encode(v as u8);
                marg[usize::from(a)] += 0.5 * w;
                marg[usize::from(b)] += 0.5 * w;
            }
        } else {
            marg[..levels].copy_from_slice(pat);
        }
        let mut nb_cdf = [0.0; MAX_LEVELS];
        cdf_of(&marg[..levels], &mut nb_cdf);
        let n = c.pe;
        let lt = (c.retention_s / p.t0_s).ln_1p();
        let (even_odd, gx, gy, gxy) = match p.coupling {
            Coupling::EvenOdd { gx, gy, gxy } => (true, gx, gy, gxy),
            Coupling::AllBitLine { gy, gxy } => (false, 0.0, gy, gxy),
        };
        Ok(Prep {
            levels,
            reduced,
            verify,
            refs,
            bitmap,
            sym_cdf,
            n_sym,
            nb_cdf,
            em: p.erased_mean,
            es: p.erased_sigma,
            dvpp: c.dvpp,
            // eq. 2.1: λ = k·N^a
            lambda: p.rtn_k * n.powf(p.rtn_a),
            // eq. 2.3: μd = Ks(x−x0)·Kd·N^0.3·ln(1+t/t0)
            ret_mu: p.ks * p.kd * n.powf(0.3) * lt,
            // eq. 2.4: σd² = Ks(x−x0)·Km·N^0.4·ln(1+t/t0)
            ret_var: p.ks * p.km * n.powf(0.4) * lt,
            even_odd,
            gx,
            gy,
            gxy,
            rd: p.read_disturb,
            pe: n,
            reads: c.reads,
            two_step: p.program == ProgramScheme::TwoStep && p.cell == CellType::Mlc,
            foggy: match p.program {
                ProgramScheme::FoggyFine { foggy_offset_v } => Some(foggy_offset_v),
                _ => None,
            },
            x0_mean: p.x0 == X0Reading::Mean,
        })
    }

    /// Erased Vth and programmed Vth (before RTN) of a cell at `lvl`.
    #[inline]
    fn program<R: Rng>(&self, rng: &mut R, lvl: usize) -> (f64, f64) {
        let z: f64 = StandardNormal.sample(rng);
        let x0 = self.em + self.es * z;
        if lvl == 0 {
            (x0, x0)
        } else {
            let v = self.verify[lvl] + self.dvpp * rng.gen::<f64>();
            (x0, v.max(x0))
        }
    }

    /// ΔVp of one interfering neighbour (eq. 2.2), per [`ProgramScheme`].
    #[inline]
    fn neighbour_shift<R: Rng>(&self, rng: &mut R) -> f64 {
        if self.reduced {
            // A random cell of a random ReduceCode pair.
            let v = pick(&self.sym_cdf, self.n_sym, rng.gen::<f64>()) as u8;
            let (a, b) = reduce_encode(v);
            let first = rng.gen::<bool>();
            let lvl = usize::from(if first { a } else { b });
            if lvl == 0 {
                return 0.0;
            }
            let (x0, v_final) = self.program(rng, lvl);
            if !self.two_step {
                return v_final - x0;
            }
            // Table 8: only L2 cells move in the second step; from L0 for value 100, else L1.
            if lvl == 1 {
                return 0.0;
            }
            if v == 0b100 {
                return v_final - x0;
            }
            // Its first step had taken it to L1 (same erased Vth x0).
            let v1 = (self.verify[1] + self.dvpp * rng.gen::<f64>()).max(x0);
            return (v_final - v1).max(0.0);
        }
        let lvl = pick(&self.nb_cdf, self.levels, rng.gen::<f64>());
        if lvl == 0 {
            return 0.0;
        }
        let (x0, v) = self.program(rng, lvl);
        if let Some(off) = self.foggy {
            return v - (self.verify[lvl] - off).max(x0).min(v);
        }
        if !self.two_step || lvl == 1 {
            return v - x0;
        }
        // Second step from LM (verify = L1 verify, same erased Vth x0) to L2/L3.
        let lm = (self.verify[1] + self.dvpp * rng.gen::<f64>()).max(x0);
        (v - lm).max(0.0)
    }

    /// Sample one victim at `lvl` (on an even bit line if `even`) and return the mean and
    /// standard deviation of its Vth at read time (steps 5–6 left analytic), and its Vth right
    /// after programming (steps 1–4).
    #[inline]
    fn victim<R: Rng>(&self, rng: &mut R, lvl: usize, even: bool) -> (f64, f64, f64) {
        let (x0, mut v) = self.program(rng, lvl);
        if self.lambda > 0.0 {
            // Laplacian (eq. 2.1) by inversion: sign × Exp(λ).
            let u: f64 = rng.gen::<f64>();
            let e = -self.lambda * (1.0 - u).ln();
            v += if rng.gen::<bool>() { e } else { -e };
        }
        let x = v;
        // eq. 2.2: neighbours programmed after the victim.
        let mut c2c = 0.0;
        if self.even_odd && even && self.gx > 0.0 {
            c2c += self.gx * (self.neighbour_shift(rng) + self.neighbour_shift(rng));
        }
        if self.gy > 0.0 {
            c2c += self.gy * self.neighbour_shift(rng);
        }
        if self.gxy > 0.0 {
            c2c += self.gxy * (self.neighbour_shift(rng) + self.neighbour_shift(rng));
        }
        v += c2c;
        let d = (x - if self.x0_mean { self.em } else { x0 }).max(0.0);
        let mut mean = v - self.ret_mu * d;
        let mut var = self.ret_var * d;
        if self.reads > 0.0 {
            let (m, s) = self.rd.shift(v, self.pe, self.reads);
            mean += m;
            var += s * s;
        }
        (mean, var.sqrt(), v)
    }

    /// Probability of reading level j for a cell at N(mean, sd²), written into `out`.
    #[inline]
    fn landing(&self, own: usize, mean: f64, sd: f64, out: &mut [f64; MAX_LEVELS]) {
        let l = self.levels;
        if sd <= 0.0 {
            let mut j = 0;
            while j + 1 < l && mean >= self.refs[j] {
                j += 1;
            }
            out[..l].fill(0.0);
            out[j] = 1.0;
            return;
        }
        // Below own level: Φ differences (small, accurate); above: upper-tail differences.
        // Refs more than Z_CUT standard deviations away contribute < 1e-19 and are skipped,
        // scanning outward from the own level.
        const Z_CUT: f64 = 9.0;
        out[..l].fill(0.0);
        let mut own_p = 1.0;
        // c = P(Vth < refs[j]) for j = own-1, own-2, ...
        let mut j = own;
        let mut c = if own > 0 {
            let z = (self.refs[own - 1] - mean) / sd;
            if z < -Z_CUT {
                0.0
            } else {
                norm_cdf(z)
            }
        } else {
            0.0
        };
        while j > 0 && c > 0.0 {
            j -= 1;
            let below = if j > 0 {
                let z = (self.refs[j - 1] - mean) / sd;
                if z < -Z_CUT {
                    0.0
                } else {
                    norm_cdf(z)
                }
            } else {
                0.0
            };
            out[j] = (c - below).max(0.0);
            own_p -= out[j];
            c = below;
        }
        // q = P(Vth >= refs[j-1]) for j = own+1, own+2, ...
        let mut j = own;
        let mut q = if own + 1 < l {
            let z = (mean - self.refs[own]) / sd;
            if z < -Z_CUT {
                0.0
            } else {
                norm_cdf(z)
            }
        } else {
            0.0
        };
        while j + 1 < l && q > 0.0 {
            j += 1;
            let above = if j + 1 < l {
                let z = (mean - self.refs[j]) / sd;
                if z < -Z_CUT {
                    0.0
                } else {
                    norm_cdf(z)
                }
            } else {
                0.0
            };
            out[j] = (q - above).max(0.0);
            own_p -= out[j];
            q = above;
        }
        out[own] = own_p.max(0.0);
    }
}

/// Run the Monte-Carlo model for one point.
///
/// `pattern`: `None` = uniform data; otherwise one probability per level (normal state), or
/// per 3-bit ReduceCode value (reduced state; 8 entries). Deterministic for a given seed and
/// options.
pub fn simulate(
    params: &VthParams,
    cfg: &LevelConfig,
    pattern: Option<&[f64]>,
    cond: &Condition,
    opts: &McOptions,
) -> Result<McResult, ReliabilityError> {
    simulate_split(params, cfg, pattern, None, cond, opts)
}

/// [`simulate`] with the level distribution of the interfering neighbours given separately
/// from the victims' (normal state only): `victims` = one probability per level for the
/// simulated cells, `neighbours` = the same for the cells that disturb them (`None` = the
/// victims' distribution, which is [`simulate`]). With a one-hot `victims` the result is the
/// bit error rate of cells programmed to that level, the p_li of Guo eq. 2.7.
///
/// # Errors
/// As [`simulate`]; [`ReliabilityError::OutOfRange`] for `neighbours` in the reduced state.
pub fn simulate_split(
    params: &VthParams,
    cfg: &LevelConfig,
    pattern: Option<&[f64]>,
    neighbours: Option<&[f64]>,
    cond: &Condition,
    opts: &McOptions,
) -> Result<McResult, ReliabilityError> {
    check_range(
        "rel_half_width",
        opts.rel_half_width,
        1e-4,
        1.0,
        "[1e-4, 1]",
    )?;
    check_range("rber_floor", opts.rber_floor, 0.0, 1.0, "[0, 1]")?;
    if opts.batch == 0 || opts.max_samples == 0 {
        return Err(ReliabilityError::OutOfRange {
            name: "batch/max_samples",
            value: 0.0,
            allowed: ">= 1",
        });
    }
    let mut prep = Prep::new(params, cfg, pattern, cond)?;
    if let Some(nb) = neighbours {
        if prep.reduced {
            return Err(ReliabilityError::OutOfRange {
                name: "neighbours",
                value: nb.len() as f64,
                allowed: "a separate neighbour distribution only in the normal state",
            });
        }
        // Validate like a victim pattern, then take its CDF for the neighbours.
        let other = Prep::new(params, cfg, Some(nb), cond)?;
        prep.nb_cdf = other.sym_cdf;
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(opts.seed);
    let bits_per_sample = if prep.reduced {
        3.0
    } else {
        f64::from(params.cell.bits())
    };
    let cells_per_sample: u64 = if prep.reduced { 2 } else { 1 };
    let mut s1 = 0.0;
    let mut s2 = 0.0;
    let mut nonzero = 0u64;
    let mut per_level = [0.0f64; MAX_LEVELS];
    let mut n: u64 = 0;
    let mut met = false;
    let mut pa = [0.0; MAX_LEVELS];
    let mut pb = [0.0; MAX_LEVELS];
    // Bit errors of reading ReduceCode levels (i, j) when value `sym` was written.
    let mut dec_err = [[[0.0f64; 8]; 3]; 3];
    for (i, row) in dec_err.iter_mut().enumerate() {
        for (j, cell) in row.iter_mut().enumerate() {
            for (v, e) in cell.iter_mut().enumerate() {
                *e = f64::from((reduce_decode(i as u8, j as u8) ^ v as u8).count_ones());
            }
        }
    }
    let (mut rber, mut half);
    let (mut prog_err, mut ret_err, mut ret_err2) = (0.0f64, 0.0f64, 0.0f64);
    loop {
        for _ in 0..opts.batch {
            let u: f64 = rng.gen::<f64>();
            let sym = pick(&prep.sym_cdf, prep.n_sym, u);
            let even = !prep.even_odd || rng.gen::<bool>();
            let (e, prog_ok) = if prep.reduced {
                let (a, b) = reduce_encode(sym as u8);
                let (a, b) = (usize::from(a), usize::from(b));
                let (m1, s1_, v1) = prep.victim(&mut rng, a, even);
                let (m2, s2_, v2) = prep.victim(&mut rng, b, even);
                prep.landing(a, v1, 0.0, &mut pa);
                let ok1 = pa[a] == 1.0;
                prep.landing(b, v2, 0.0, &mut pb);
                let ok2 = pb[b] == 1.0;
                let prog_ok = ok1 && ok2;
                if !prog_ok {
                    let (l1, l2) = (
                        pa[..3].iter().position(|&x| x == 1.0).unwrap_or(a),
                        pb[..3].iter().position(|&x| x == 1.0).unwrap_or(b),
                    );
                    prog_err += dec_err[l1][l2][sym];
                }
                prep.landing(a, m1, s1_, &mut pa);
                prep.landing(b, m2, s2_, &mut pb);
                let mut e = 0.0;
                let (mut ea, mut eb) = (0.0, 0.0);
                for (i, &x) in pa[..3].iter().enumerate() {
                    for (j, &y) in pb[..3].iter().enumerate() {
                        if i == a && j == b {
                            continue;
                        }
                        let w = x * y;
                        if w == 0.0 {
                            continue;
                        }
                        let bits = dec_err[i][j][sym];
                        let eb_ = w * bits;
                        e += eb_;
                        match (i != a, j != b) {
                            (true, false) => ea += eb_,
                            (false, true) => eb += eb_,
                            _ => {
                                ea += 0.5 * eb_;
                                eb += 0.5 * eb_;
                            }
                        }
                    }
                }
                per_level[a] += ea;
                per_level[b] += eb;
                (e, prog_ok)
            } else {
                let (m, s, v0) = prep.victim(&mut rng, sym, even);
                prep.landing(sym, v0, 0.0, &mut pa);
                let prog_ok = pa[sym] == 1.0;
                if !prog_ok {
                    let l0 = pa[..prep.levels]
                        .iter()
                        .position(|&x| x == 1.0)
                        .unwrap_or(sym);
                    prog_err += f64::from((prep.bitmap[l0] ^ prep.bitmap[sym]).count_ones());
                }
                prep.landing(sym, m, s, &mut pa);
                let own = prep.bitmap[sym];
                let mut e = 0.0;
                for (j, &p) in pa[..prep.levels].iter().enumerate() {
                    if j != sym && p > 0.0 {
                        e += p * f64::from((prep.bitmap[j] ^ own).count_ones());
                    }
                }
                per_level[sym] += e;
                (e, prog_ok)
            };
            if prog_ok {
                ret_err += e;
                ret_err2 += e * e;
            }
            if e > 0.0 {
                nonzero += 1;
                s1 += e;
                s2 += e * e;
            }
        }
        n += opts.batch;
        let nf = n as f64;
        let mean = s1 / nf;
        let var = (s2 / nf - mean * mean).max(0.0);
        rber = mean / bits_per_sample;
        half = 1.96 * (var / nf).sqrt() / bits_per_sample;
        let bits = nf * bits_per_sample;
        if n >= 2 * opts.batch {
            if s1 > 0.0 && half <= opts.rel_half_width * rber {
                met = true;
                break;
            }
            if rber + half.max(3.0 / bits) < opts.rber_floor {
                met = true;
                break;
            }
        }
        if n >= opts.max_samples {
            break;
        }
    }
    let share = per_level[..prep.levels]
        .iter()
        .map(|x| if s1 > 0.0 { x / s1 } else { 0.0 })
        .collect();
    Ok(McResult {
        rber,
        ci95_half: half,
        cells: n * cells_per_sample,
        bits: n as f64 * bits_per_sample,
        errors: s1,
        nonzero_samples: nonzero,
        program_rber: prog_err / (n as f64 * bits_per_sample),
        retention_rber: ret_err / (n as f64 * bits_per_sample),
        retention_ci95_half: {
            let nf = n as f64;
            let m = ret_err / nf;
            1.96 * ((ret_err2 / nf - m * m).max(0.0) / nf).sqrt() / bits_per_sample
        },
        per_level_share: share,
        met_target: met,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduce_code_matches_table7() {
        // Guo Table 7.
        let t7: [(u8, u8, u8); 8] = [
            (0b000, 0, 0),
            (0b001, 0, 1),
            (0b010, 1, 0),
            (0b011, 1, 1),
            (0b100, 2, 2),
            (0b101, 0, 2),
            (0b110, 2, 0),
            (0b111, 2, 1),
        ];
        for (v, a, b) in t7 {
            assert_eq!(reduce_encode(v), (a, b), "encode {v:03b}");
            assert_eq!(reduce_decode(a, b), v, "decode {a}{b}");
        }
    }

    #[test]
    fn gray_maps_are_gray() {
        for l in [4usize, 8] {
            let g = gray_map(l);
            for i in 1..l {
                assert_eq!((g[i] ^ g[i - 1]).count_ones(), 1);
            }
        }
        assert_eq!(gray_map(4), vec![0b11, 0b10, 0b00, 0b01]);
    }

    #[test]
    fn bad_input_is_an_error_naming_the_parameter() {
        let p = VthParams::guo_ch3_mlc();
        let c = Condition {
            pe: -1.0,
            retention_s: 0.0,
            dvpp: 0.15,
            reads: 0.0,
        };
        let e = simulate(&p, &LevelConfig::Normal, None, &c, &McOptions::default()).unwrap_err();
        assert!(e.to_string().contains("pe"), "{e}");
        let c = Condition { pe: 10.0, ..c };
        let e = simulate(
            &p,
            &LevelConfig::Normal,
            Some(&[1.0; 3]),
            &c,
            &McOptions::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("pattern"), "{e}");
        assert!(LevelConfig::nunma(4).is_err());
    }
}
