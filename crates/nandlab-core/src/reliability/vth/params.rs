//! Parameters of the Vth model (Guo ch. 2.1–2.2, 3.2, 3.4, Table 10): cell types, bit-line
//! coupling (eq. 2.2), read disturb (eq. 2.8), program schemes (§2.1.1), the presets of Guo
//! ch. 2 and 3 with their checks, the FlexLevel level configurations and the operating point
//! of a page. The model they feed is described in the [`super`] module documentation.

use serde::{Deserialize, Serialize};

use crate::reliability::{check_range, ReliabilityError};

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

/// The Gray-code level → bits map of a cell with `levels` levels (L0 holds all ones).
pub(super) fn gray_map(levels: usize) -> Vec<u8> {
    let all = (levels - 1) as u8;
    (0..levels as u8).map(|i| all ^ (i ^ (i >> 1))).collect()
}

/// Read reference voltages `margin_v` below each verify voltage: the presets' references
/// ([`NORMAL_READ_REF_MARGIN_V`]) and [`VthParams::with_read_ref_margin`]'s.
fn read_refs_below(verify: &[f64], margin_v: f64) -> Vec<f64> {
    verify.iter().map(|v| v - margin_v).collect()
}

impl VthParams {
    /// FlexLevel chapter-3 MLC (Guo §3.2): λ = 4.0e-4·N^0.5, even/odd bit line
    /// (0.07/0.09/0.005), Ks/Kd/Km = 0.333/4e-4/2e-6, t0 = 1 h, verify 2.55/3.15/3.75 V.
    pub fn guo_ch3_mlc() -> Self {
        let verify = vec![2.55, 3.15, 3.75];
        let read_ref = read_refs_below(&verify, NORMAL_READ_REF_MARGIN_V);
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
        let read_ref = read_refs_below(&verify, NORMAL_READ_REF_MARGIN_V);
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
        self.read_ref = read_refs_below(&self.verify, margin_v);
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

pub(super) fn check_ascending(name: &'static str, v: &[f64]) -> Result<(), ReliabilityError> {
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
    pub(super) fn validate(&self) -> Result<(), ReliabilityError> {
        check_range("pe", self.pe, 0.0, 1e7, "[0, 1e7] cycles")?;
        check_range("retention_s", self.retention_s, 0.0, 1e10, "[0, 1e10] s")?;
        check_range("dvpp", self.dvpp, 0.0, 2.0, "[0, 2] V")?;
        check_range("reads", self.reads, 0.0, 1e12, "[0, 1e12]")
    }
}
