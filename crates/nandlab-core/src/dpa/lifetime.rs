//! DPA lifetime model (Guo §2.2.1, eq. 2.5–2.9; spec `dpa-flexlevel.md` §1.5).
//!
//! A block's lifetime is the P/E count at which its ECC failure rate reaches T_uber = 1e-13:
//!
//! * F = max(f_prog, f_rd, f_rt) (eq. 2.5); each f is the UBER (eq. 2.6, binomial tail per
//!   information bit, [`crate::ecc::Bch::uber`]) of the code at cell error rate p_c;
//! * p_c = Σ_i p_i · p_li (eq. 2.7): p_i = probability that a cell is programmed to level i
//!   (from the data's bit patterns and the level map), p_li = error rate of a cell at level i.
//!
//! **Method (spec §1.5, "nandlab method (R)").** The per-level rates come from *one* uniform-data
//! Monte-Carlo run of the Vth model ([`crate::reliability::vth::simulate`], Guo §2.2.1's device
//! [`VthParams::guo_ch2_mlc`], ΔVpp 0.3 V) per P/E point: p_li = share_i · RBER_uniform / 0.25,
//! where share_i is the fraction of bit errors that cells at level i make. The data changes
//! only the weights p_i (eq. 2.7 taken literally: p_li does not depend on the data).
//! * f_prog: the run at retention 0 (program disturb: RTN + coupling);
//! * f_rt: the run after `retention_s` (Guo: 1 year) — includes the program errors;
//! * f_rd: the run at retention 0 after `read_disturb_reads` reads (Guo Fig. 12(c): 5 K). With
//!   the printed eq. 2.8 coefficients the read-disturb shift is volts after one read (see
//!   [`crate::reliability::vth::ReadDisturb`]), so f_rd is reported but left out of F unless
//!   `include_read_disturb`.
//!
//! **Diagnostic: the full-pattern Monte Carlo.** The same device simulated with the data's level
//! distribution for victims *and* coupling neighbours (`simulate(.., Some(levels))`), F from its
//! RBER after `retention_s`. Spec §0.1: with read references 0.05 V below verify it moves in the
//! opposite direction (more L0 → more coupling shift onto L0 cells that sit just under the
//! L0|L1 reference), so it is printed next to eq. 2.7, never used for the headline.
//!
//! **Codes** (§2.6): baseline 8-bit BCH per 512 B, printed "(4200,4096,104)" = n 4200, k 4096,
//! t 8 (104 = 13 · 8 parity bits); DPA BCH(4312, 4208, 8) over 512 B data + 14 B tags.
//!
//! **Level map.** Guo §2.1.1 prints L0..L3 = 11, 10, 01, 00 (not Gray) and §2.2.1 derives p_i
//! from it; that is the default here ([`LevelMap::Printed`]), applied to the Monte Carlo's bit
//! errors too. [`LevelMap::Gray`] (11, 10, 00, 01; nandlab's Vth default) is the alternative.
//! A bit pattern is `msb·2 + lsb` (MSB = lower page), "10" = MSB 1, LSB 0.
//!
//! **Lifetime** = the first P/E of the grid where F ≥ T_uber, interpolated linearly in log10 F
//! between that grid point and the one before; `None` with `beyond_grid` when F stays below.

use serde::{Deserialize, Serialize};

use super::DpaError;
use crate::ecc::{Bch, BchTiming};
use crate::reliability::vth::{
    simulate, Condition, LevelConfig, McOptions, McResult, VthParams, DAY_S,
};

/// Guo's reliability threshold T_uber (§2.2.1, \[2\]).
pub const T_UBER: f64 = 1e-13;

/// Level map of MLC cells: `map()[level]` = bit pattern (msb·2 + lsb).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LevelMap {
    /// Guo §2.1.1 as printed: L0..L3 = 11, 10, 01, 00.
    #[default]
    Printed,
    /// Gray: L0..L3 = 11, 10, 00, 01 (nandlab's Vth-model default).
    Gray,
}

impl LevelMap {
    /// Bit pattern of each level.
    pub fn map(self) -> [u8; 4] {
        match self {
            LevelMap::Printed => [0b11, 0b10, 0b01, 0b00],
            LevelMap::Gray => [0b11, 0b10, 0b00, 0b01],
        }
    }

    /// Level probabilities from bit-pattern probabilities (index msb·2 + lsb).
    pub fn levels(self, patterns: &[f64; 4]) -> [f64; 4] {
        self.map().map(|v| patterns[usize::from(v)])
    }
}

/// A BCH code by its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeSpec {
    /// Codeword bits.
    pub n: u32,
    /// Information bits.
    pub k: u32,
    /// Correctable bits.
    pub t: u32,
    /// Field degree m of GF(2^m).
    pub m: u32,
}

impl CodeSpec {
    /// Baseline (Guo §2.6): 8-bit BCH per 512 B, "(4200,4096,104)".
    pub const BASELINE: CodeSpec = CodeSpec {
        n: 4200,
        k: 4096,
        t: 8,
        m: 13,
    };
    /// DPA (Guo §2.6.1): BCH(4312, 4208, 8) over 526 B (512 B data + 14 B tags).
    pub const DPA: CodeSpec = CodeSpec {
        n: 4312,
        k: 4208,
        t: 8,
        m: 13,
    };

    fn bch(&self) -> Result<Bch, DpaError> {
        Bch::new(self.n, self.k, self.t, self.m, &BchTiming::flexecc_hw()).map_err(|e| {
            DpaError::Param {
                name: "code",
                value: format!("({}, {}, t={}, m={})", self.n, self.k, self.t, self.m),
                allowed: e.to_string(),
            }
        })
    }
}

/// One data profile whose lifetime is computed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileSpec {
    /// Label (`baseline`, `8 B`, …).
    pub name: String,
    /// Cell bit-pattern probabilities, index msb·2 + lsb (they are normalised).
    pub patterns: [f64; 4],
    /// The ECC.
    pub code: CodeSpec,
}

/// Request of [`lifetime`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LifetimeRequest {
    /// Level map (default: Guo's printed 11/10/01/00).
    pub level_map: LevelMap,
    /// Normal-state read references below verify, V (nandlab default 0.05).
    pub read_ref_margin_v: f64,
    /// ISPP step, V (Guo §2.2.1: 0.3).
    pub dvpp_v: f64,
    /// Retention time of f_rt, s (Guo: 1 year).
    pub retention_s: f64,
    /// Reads since erase of f_rd (Guo Fig. 12(c): 5000; Fig. 5(b): 10 K); 0 = no f_rd.
    pub read_disturb_reads: f64,
    /// Whether f_rd enters F (default false, see the module doc).
    pub include_read_disturb: bool,
    /// P/E grid, ascending.
    pub pe: Vec<f64>,
    /// Failure threshold (Guo: 1e-13).
    pub t_uber: f64,
    /// Profiles (default: uniform baseline, and Guo Fig. 11's 8 B / 4 B level shares).
    pub profiles: Vec<ProfileSpec>,
    /// Also run the full-pattern Monte Carlo per profile (diagnostic).
    pub full_pattern: bool,
    /// Monte-Carlo target relative 95 % half-width.
    pub rel_half_width: f64,
    /// RBERs below this need not meet the precision target.
    pub rber_floor: f64,
    /// Monte-Carlo seed.
    pub seed: u64,
    /// Cap on Monte-Carlo samples per point.
    pub max_samples: u64,
    /// Worker threads for the Monte-Carlo points (results do not depend on it).
    pub threads: usize,
}

/// Guo Fig. 11 (WIN 7): L0 = 48 % (8 B) and 59 % (4 B) ⇒ independent-bit ones ratios √0.48 and
/// √0.59 of the stored data.
pub fn guo_fig11_profiles() -> Vec<ProfileSpec> {
    use super::analyze::independent_patterns;
    vec![
        ProfileSpec {
            name: "baseline".into(),
            patterns: [0.25; 4],
            code: CodeSpec::BASELINE,
        },
        ProfileSpec {
            name: "8 B".into(),
            patterns: independent_patterns(0.48f64.sqrt()),
            code: CodeSpec::DPA,
        },
        ProfileSpec {
            name: "4 B".into(),
            patterns: independent_patterns(0.59f64.sqrt()),
            code: CodeSpec::DPA,
        },
    ]
}

impl Default for LifetimeRequest {
    fn default() -> Self {
        LifetimeRequest {
            level_map: LevelMap::Printed,
            read_ref_margin_v: crate::reliability::vth::NORMAL_READ_REF_MARGIN_V,
            dvpp_v: 0.3,
            retention_s: 365.0 * DAY_S,
            read_disturb_reads: 5000.0,
            include_read_disturb: false,
            pe: (0..=40).map(|i| 1000.0 * f64::from(i)).collect(),
            t_uber: T_UBER,
            profiles: guo_fig11_profiles(),
            full_pattern: true,
            rel_half_width: 0.05,
            rber_floor: 1e-7,
            seed: McOptions::default().seed,
            max_samples: 1 << 26,
            threads: 1,
        }
    }
}

/// Monte-Carlo summary of one point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct McPoint {
    /// RBER.
    pub rber: f64,
    /// 95 % half-width.
    pub ci95_half: f64,
    /// Share of bit errors by level of the victim cell.
    pub per_level_share: Vec<f64>,
    /// Cells simulated.
    pub cells: u64,
    /// Whether the precision target was met.
    pub met_target: bool,
}

impl From<&McResult> for McPoint {
    fn from(r: &McResult) -> Self {
        McPoint {
            rber: r.rber,
            ci95_half: r.ci95_half,
            per_level_share: r.per_level_share.clone(),
            cells: r.cells,
            met_target: r.met_target,
        }
    }
}

/// One profile at one P/E point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfilePoint {
    /// Eq. 2.7 cell error rate at retention 0.
    pub pc_prog: f64,
    /// Eq. 2.7 cell error rate after the retention time.
    pub pc_rt: f64,
    /// Eq. 2.7 cell error rate after the reads (`None` without read disturb).
    pub pc_rd: Option<f64>,
    /// UBER from program disturb.
    pub f_prog: f64,
    /// UBER after the retention time.
    pub f_rt: f64,
    /// UBER after the reads.
    pub f_rd: Option<f64>,
    /// F (eq. 2.5).
    pub f: f64,
    /// Full-pattern Monte Carlo after the retention time (diagnostic).
    pub full_pattern: Option<McPoint>,
    /// UBER of the full-pattern RBER.
    pub f_full_pattern: Option<f64>,
}

/// One P/E point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PePoint {
    /// P/E cycles.
    pub pe: f64,
    /// Uniform data at retention 0.
    pub uniform_prog: McPoint,
    /// Uniform data after the retention time.
    pub uniform_rt: McPoint,
    /// Uniform data at retention 0 after the reads.
    pub uniform_rd: Option<McPoint>,
    /// Per profile, in request order.
    pub profiles: Vec<ProfilePoint>,
}

/// Lifetime of one profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileLifetime {
    /// Label.
    pub name: String,
    /// Level probabilities L0..L3.
    pub levels: [f64; 4],
    /// The code.
    pub code: CodeSpec,
    /// Lifetime by eq. 2.7, P/E (`None`: beyond the grid, or at/below its first point).
    pub lifetime_pe: Option<f64>,
    /// F stays below T_uber over the whole grid.
    pub beyond_grid: bool,
    /// F is already above T_uber at the first grid point.
    pub below_grid: bool,
    /// Lifetime by the full-pattern Monte Carlo (diagnostic).
    pub full_pattern_lifetime_pe: Option<f64>,
    /// Lifetime / the first profile's lifetime (eq. 2.7).
    pub ratio_to_first: Option<f64>,
}

/// Result of [`lifetime`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LifetimeResult {
    /// The request, with defaults filled in.
    pub request: LifetimeRequest,
    /// Per P/E point.
    pub points: Vec<PePoint>,
    /// Per profile.
    pub lifetimes: Vec<ProfileLifetime>,
    /// Wall seconds.
    pub wall_s: f64,
}

fn bad(name: &'static str, value: impl ToString, allowed: &str) -> DpaError {
    DpaError::Param {
        name,
        value: value.to_string(),
        allowed: allowed.into(),
    }
}

/// The Vth device of Guo §2.2.1 with the request's level map and read references.
///
/// # Errors
/// [`DpaError::Reliability`] for a read-reference margin outside [0, 0.5] V.
pub fn device(req: &LifetimeRequest) -> Result<VthParams, DpaError> {
    let mut p = VthParams::guo_ch2_mlc()
        .with_read_ref_margin(req.read_ref_margin_v)
        .map_err(|e| DpaError::Reliability(e.to_string()))?;
    p.bit_map = req.level_map.map().to_vec();
    Ok(p)
}

/// Crossing of `f` over `t` along `pe` (first grid point at or above), interpolated in log10.
fn crossing(pe: &[f64], f: &[f64], t: f64) -> (Option<f64>, bool, bool) {
    let lt = t.log10();
    for (i, &v) in f.iter().enumerate() {
        if v >= t {
            if i == 0 {
                return (None, false, true);
            }
            let (a, b) = (f[i - 1].max(1e-300).log10(), v.max(1e-300).log10());
            let x = if b > a { (lt - a) / (b - a) } else { 1.0 };
            return (Some(pe[i - 1] + x * (pe[i] - pe[i - 1])), false, false);
        }
    }
    (None, true, false)
}

/// Run the lifetime model.
///
/// # Errors
/// [`DpaError::Param`] for a bad grid, threshold, profile or code; [`DpaError::Reliability`]
/// when the Vth model rejects a parameter.
pub fn lifetime(req: &LifetimeRequest) -> Result<LifetimeResult, DpaError> {
    let t0 = std::time::Instant::now();
    if req.pe.is_empty() || req.pe.windows(2).any(|w| w[1] <= w[0]) || req.pe[0] < 0.0 {
        return Err(bad(
            "pe",
            format!("{:?}", req.pe),
            "a non-empty ascending list of P/E counts ≥ 0",
        ));
    }
    if !(req.t_uber > 0.0 && req.t_uber < 1.0) {
        return Err(bad("t_uber", req.t_uber, "(0, 1)"));
    }
    if req.profiles.is_empty() {
        return Err(bad("profiles", "[]", "at least one profile"));
    }
    if !(req.read_disturb_reads.is_finite() && req.read_disturb_reads >= 0.0) {
        return Err(bad("read_disturb_reads", req.read_disturb_reads, "≥ 0"));
    }
    let params = device(req)?;
    let mut codes = Vec::new();
    let mut levels = Vec::new();
    for p in &req.profiles {
        let s: f64 = p.patterns.iter().sum();
        if p.patterns.iter().any(|x| !(x.is_finite() && *x >= 0.0)) || s <= 0.0 {
            return Err(bad(
                "profiles.patterns",
                format!("{:?}", p.patterns),
                "four non-negative probabilities with a positive sum",
            ));
        }
        let norm = p.patterns.map(|x| x / s);
        levels.push(req.level_map.levels(&norm));
        codes.push(p.code.bch()?);
    }
    let mc = McOptions {
        seed: req.seed,
        rel_half_width: req.rel_half_width,
        rber_floor: req.rber_floor,
        max_samples: req.max_samples.max(McOptions::default().batch),
        ..McOptions::default()
    };
    // Every Monte-Carlo point: (pe index, kind, retention, reads, pattern).
    #[derive(Clone)]
    struct Job {
        pe: f64,
        retention_s: f64,
        reads: f64,
        pattern: Option<[f64; 4]>,
    }
    let mut jobs = Vec::new();
    for &pe in &req.pe {
        jobs.push(Job {
            pe,
            retention_s: 0.0,
            reads: 0.0,
            pattern: None,
        });
        jobs.push(Job {
            pe,
            retention_s: req.retention_s,
            reads: 0.0,
            pattern: None,
        });
        if req.read_disturb_reads > 0.0 {
            jobs.push(Job {
                pe,
                retention_s: 0.0,
                reads: req.read_disturb_reads,
                pattern: None,
            });
        }
        if req.full_pattern {
            for l in &levels {
                jobs.push(Job {
                    pe,
                    retention_s: req.retention_s,
                    reads: 0.0,
                    pattern: Some(*l),
                });
            }
        }
    }
    let run = |j: &Job| -> Result<McResult, DpaError> {
        let cond = Condition {
            pe: j.pe,
            retention_s: j.retention_s,
            dvpp: req.dvpp_v,
            reads: j.reads,
        };
        simulate(
            &params,
            &LevelConfig::Normal,
            j.pattern.as_ref().map(|p| &p[..]),
            &cond,
            &mc,
        )
        .map_err(|e| DpaError::Reliability(e.to_string()))
    };
    let threads = req.threads.clamp(1, 64);
    let results: Vec<Result<McResult, DpaError>> = if threads == 1 {
        jobs.iter().map(run).collect()
    } else {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let slots: Vec<std::sync::Mutex<Option<Result<McResult, DpaError>>>> =
            jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(j) = jobs.get(i) else { break };
                    let r = run(j);
                    if let Ok(mut slot) = slots[i].lock() {
                        *slot = Some(r);
                    }
                });
            }
        });
        slots
            .into_iter()
            .map(|m| {
                m.into_inner()
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| Err(DpaError::Reliability("worker failed".into())))
            })
            .collect()
    };
    let mut results = results.into_iter();
    let mut next = || -> Result<McResult, DpaError> {
        results
            .next()
            .unwrap_or_else(|| Err(DpaError::Reliability("missing point".into())))
    };
    let weigh = |r: &McResult, l: &[f64; 4]| -> f64 {
        // eq. 2.7 with p_li = share_i · RBER_uniform / 0.25.
        (0..4)
            .map(|i| l[i] * r.per_level_share.get(i).copied().unwrap_or(0.0) * r.rber / 0.25)
            .sum()
    };
    let mut points = Vec::with_capacity(req.pe.len());
    for &pe in &req.pe {
        let prog = next()?;
        let rt = next()?;
        let rd = if req.read_disturb_reads > 0.0 {
            Some(next()?)
        } else {
            None
        };
        let mut profiles = Vec::with_capacity(levels.len());
        let mut full = Vec::new();
        if req.full_pattern {
            for _ in &levels {
                full.push(next()?);
            }
        }
        for (i, (l, code)) in levels.iter().zip(&codes).enumerate() {
            let pc_prog = weigh(&prog, l);
            let pc_rt = weigh(&rt, l);
            let pc_rd = rd.as_ref().map(|r| weigh(r, l));
            let f_prog = code.uber(pc_prog);
            let f_rt = code.uber(pc_rt);
            let f_rd = pc_rd.map(|p| code.uber(p));
            let mut f = f_prog.max(f_rt);
            if req.include_read_disturb {
                f = f.max(f_rd.unwrap_or(0.0));
            }
            let fp = full.get(i);
            profiles.push(ProfilePoint {
                pc_prog,
                pc_rt,
                pc_rd,
                f_prog,
                f_rt,
                f_rd,
                f,
                full_pattern: fp.map(McPoint::from),
                f_full_pattern: fp.map(|r| code.uber(r.rber)),
            });
        }
        points.push(PePoint {
            pe,
            uniform_prog: McPoint::from(&prog),
            uniform_rt: McPoint::from(&rt),
            uniform_rd: rd.as_ref().map(McPoint::from),
            profiles,
        });
    }
    let mut lifetimes = Vec::new();
    for (i, p) in req.profiles.iter().enumerate() {
        let f: Vec<f64> = points.iter().map(|x| x.profiles[i].f).collect();
        let (life, beyond, below) = crossing(&req.pe, &f, req.t_uber);
        let full = if req.full_pattern {
            let ff: Vec<f64> = points
                .iter()
                .map(|x| x.profiles[i].f_full_pattern.unwrap_or(0.0))
                .collect();
            crossing(&req.pe, &ff, req.t_uber).0
        } else {
            None
        };
        lifetimes.push(ProfileLifetime {
            name: p.name.clone(),
            levels: levels[i],
            code: p.code,
            lifetime_pe: life,
            beyond_grid: beyond,
            below_grid: below,
            full_pattern_lifetime_pe: full,
            ratio_to_first: None,
        });
    }
    let first = lifetimes.first().and_then(|l| l.lifetime_pe);
    for l in &mut lifetimes {
        l.ratio_to_first = match (l.lifetime_pe, first) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        };
    }
    Ok(LifetimeResult {
        request: req.clone(),
        points,
        lifetimes,
        wall_s: t0.elapsed().as_secs_f64(),
    })
}
