//! DPA lifetime model (Guo §2.2.1, eq. 2.5–2.9; spec `dpa-flexlevel.md` §1.5).
//!
//! A block's lifetime is the P/E count at which its ECC failure rate reaches T_uber = 1e-13:
//!
//! * F = max(f_prog, f_rd, f_rt) (eq. 2.5); each f is the UBER (eq. 2.6, binomial tail per
//!   information bit, [`crate::ecc::Bch::uber`]) of the code at cell error rate p_c;
//! * p_c = Σ_i p_i · p_li (eq. 2.7): p_i = probability that a cell is programmed to level i
//!   (from the data's bit patterns and the level map), p_li = error rate of a cell at level i.
//!
//! **Method (spec §1.5, "nandlab method (R)").** The per-level rates come from the Vth model
//! ([`crate::reliability::vth`], Guo §2.2.1's device [`VthParams::guo_ch2_mlc`], ΔVpp 0.3 V)
//! with *uniform* data around the victim: p_li is the bit error rate of cells programmed to
//! level i whose coupling neighbours are uniform over the four levels
//! ([`crate::reliability::vth::simulate_split`] with a one-hot victim distribution), one
//! Monte-Carlo run per level, each to its own precision target. The data changes only the
//! weights p_i (eq. 2.7 taken literally: p_li does not depend on the data). This equals the
//! spec's `share_i · RBER_uniform / 0.25` in expectation, but estimates each level to the same
//! relative precision: L0's errors are rare erased-tail events (x0 ~ N(1.1, 0.35) above the
//! 2.50 V reference after coupling), which a uniform run samples too sparsely, and L0 is the
//! level DPA moves weight to.
//! * f_prog: the runs at retention 0 (program disturb: RTN + coupling);
//! * f_rt: the runs after `retention_s` (Guo: 1 year) — includes the program errors;
//! * f_rd: the runs at retention 0 after `read_disturb_reads` reads (Guo Fig. 12(c): 5 K). With
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

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::DpaError;
use crate::ecc::{Bch, BchTiming};
use crate::reliability::math::fnv1a64;
use crate::reliability::vth::{
    simulate_split, Condition, LevelConfig, McOptions, McResult, VthParams, DAY_S,
};

/// Guo's reliability threshold T_uber (§2.2.1, \[2\]).
pub const T_UBER: f64 = 1e-13;

/// Monte-Carlo points are cached in this file of the reliability cache directory, keyed by a
/// hash of everything that determines them.
pub const CACHE_FILE: &str = "dpa-lifetime-mc.json";
/// Bumped when this module's use of the Monte Carlo changes results.
const CACHE_VERSION: u32 = 1;

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
    /// Whether this profile gets the full-pattern Monte Carlo (when the request asks for it).
    #[serde(default = "yes")]
    pub full_pattern: bool,
}

fn yes() -> bool {
    true
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
    /// K_s of the retention shift (Guo eq. 2.4); ch. 2 does not restate it: `None` keeps
    /// ch. 3's 0.333 ([`VthParams::guo_ch3_mlc`]). The DPA preset gives the value fitted so
    /// that the baseline (uniform data, 8-bit BCH) lives the thesis's 7,500 P/E (Fig. 5(b)).
    pub retention_ks: Option<f64>,
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
    /// Directory of the Monte-Carlo cache; empty = the reliability cache
    /// (`$NANDLAB_CACHE_DIR`, else `~/.cache/nandlab`); `none` = no cache.
    pub cache_dir: String,
}

/// Default P/E grid: 0–10 K in steps of 500 (where the lifetimes fall), then 12.5–40 K in
/// steps of 2.5 K (Guo Figs. 12–13 span 5–40 K).
pub fn default_pe_grid() -> Vec<f64> {
    (0..=20)
        .map(|i| 500.0 * f64::from(i))
        .chain((5..=16).map(|i| 2500.0 * f64::from(i)))
        .collect()
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
            full_pattern: true,
        },
        ProfileSpec {
            name: "8 B".into(),
            patterns: independent_patterns(0.48f64.sqrt()),
            code: CodeSpec::DPA,
            full_pattern: true,
        },
        ProfileSpec {
            name: "4 B".into(),
            patterns: independent_patterns(0.59f64.sqrt()),
            code: CodeSpec::DPA,
            full_pattern: true,
        },
    ]
}

impl Default for LifetimeRequest {
    fn default() -> Self {
        LifetimeRequest {
            level_map: LevelMap::Printed,
            read_ref_margin_v: crate::reliability::vth::NORMAL_READ_REF_MARGIN_V,
            dvpp_v: 0.3,
            retention_ks: None,
            retention_s: 365.0 * DAY_S,
            read_disturb_reads: 5000.0,
            include_read_disturb: false,
            pe: default_pe_grid(),
            t_uber: T_UBER,
            profiles: guo_fig11_profiles(),
            full_pattern: true,
            rel_half_width: 0.05,
            rber_floor: 1e-6,
            seed: McOptions::default().seed,
            max_samples: 1 << 26,
            threads: 1,
            cache_dir: String::new(),
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
    /// Per level L0..L3 (uniform neighbours), retention 0: bit error rate p_li and its run.
    pub levels_prog: Vec<McPoint>,
    /// Per level after the retention time.
    pub levels_rt: Vec<McPoint>,
    /// Per level at retention 0 after the reads (`None` without read disturb).
    pub levels_rd: Option<Vec<McPoint>>,
    /// RBER of uniform data (mean of the four levels) at retention 0.
    pub uniform_rber_prog: f64,
    /// RBER of uniform data after the retention time.
    pub uniform_rber_rt: f64,
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
    /// Monte-Carlo points taken from the cache / computed.
    pub mc_cached: usize,
    /// Monte-Carlo points computed by this call.
    pub mc_computed: usize,
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

/// The Vth device of Guo §2.2.1 with the request's level map, read references and K_s.
///
/// # Errors
/// [`DpaError::Reliability`] for a read-reference margin outside [0, 0.5] V;
/// [`DpaError::Param`] for `retention_ks` outside (0, 10].
pub fn device(req: &LifetimeRequest) -> Result<VthParams, DpaError> {
    let mut p = VthParams::guo_ch2_mlc()
        .with_read_ref_margin(req.read_ref_margin_v)
        .map_err(|e| DpaError::Reliability(e.to_string()))?;
    p.bit_map = req.level_map.map().to_vec();
    if let Some(ks) = req.retention_ks {
        if !(ks.is_finite() && ks > 0.0 && ks <= 10.0) {
            return Err(bad("retention_ks", ks, "(0, 10]"));
        }
        p.ks = ks;
    }
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
    // Every Monte-Carlo point: victims (one-hot level, or a profile's levels for the
    // full-pattern diagnostic) and neighbours (uniform, or the same profile).
    #[derive(Clone)]
    struct Job {
        pe: f64,
        retention_s: f64,
        reads: f64,
        victims: [f64; 4],
        neighbours: [f64; 4],
    }
    let one_hot = |i: usize| {
        let mut v = [0.0; 4];
        v[i] = 1.0;
        v
    };
    let uniform = [0.25; 4];
    let mut jobs = Vec::new();
    for &pe in &req.pe {
        let mut kinds = vec![(0.0, 0.0), (req.retention_s, 0.0)];
        if req.read_disturb_reads > 0.0 {
            kinds.push((0.0, req.read_disturb_reads));
        }
        for (retention_s, reads) in kinds {
            for i in 0..4 {
                jobs.push(Job {
                    pe,
                    retention_s,
                    reads,
                    victims: one_hot(i),
                    neighbours: uniform,
                });
            }
        }
        if req.full_pattern {
            for l in levels
                .iter()
                .zip(&req.profiles)
                .filter(|(_, p)| p.full_pattern)
                .map(|(l, _)| l)
            {
                jobs.push(Job {
                    pe,
                    retention_s: req.retention_s,
                    reads: 0.0,
                    victims: *l,
                    neighbours: *l,
                });
            }
        }
    }
    let key = |j: &Job| -> String {
        let cond = Condition {
            pe: j.pe,
            retention_s: j.retention_s,
            dvpp: req.dvpp_v,
            reads: j.reads,
        };
        let json = serde_json::to_string(&(
            CACHE_VERSION,
            crate::reliability::table::MODEL_VERSION,
            &params,
            &cond,
            &j.victims,
            &j.neighbours,
            &mc,
        ))
        .unwrap_or_default();
        format!("{:016x}", fnv1a64(json.as_bytes()))
    };
    let keys: Vec<String> = jobs.iter().map(key).collect();
    let cache_path = if req.cache_dir == "none" {
        None
    } else if req.cache_dir.is_empty() {
        Some(
            crate::reliability::runtime::cache_dir(&crate::config::Config::default())
                .join(CACHE_FILE),
        )
    } else {
        Some(std::path::PathBuf::from(&req.cache_dir).join(CACHE_FILE))
    };
    let mut cache: BTreeMap<String, McPoint> = cache_path
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let todo: Vec<usize> = (0..jobs.len())
        .filter(|&i| !cache.contains_key(&keys[i]))
        .collect();
    let cached = jobs.len() - todo.len();
    let run = |j: &Job| -> Result<McPoint, DpaError> {
        let cond = Condition {
            pe: j.pe,
            retention_s: j.retention_s,
            dvpp: req.dvpp_v,
            reads: j.reads,
        };
        simulate_split(
            &params,
            &LevelConfig::Normal,
            Some(&j.victims[..]),
            Some(&j.neighbours[..]),
            &cond,
            &mc,
        )
        .map(|r| McPoint::from(&r))
        .map_err(|e| DpaError::Reliability(e.to_string()))
    };
    let threads = req.threads.clamp(1, 64);
    let computed: Vec<Result<McPoint, DpaError>> = if threads == 1 {
        todo.iter().map(|&i| run(&jobs[i])).collect()
    } else {
        let next = AtomicUsize::new(0);
        let slots: Vec<Mutex<Option<Result<McPoint, DpaError>>>> =
            todo.iter().map(|_| Mutex::new(None)).collect();
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&i) = todo.get(k) else { break };
                    let r = run(&jobs[i]);
                    if let Ok(mut slot) = slots[k].lock() {
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
    for (&i, r) in todo.iter().zip(computed) {
        cache.insert(keys[i].clone(), r?);
    }
    if let (Some(path), false) = (&cache_path, todo.is_empty()) {
        // Best effort: a cache that cannot be written only costs time next run.
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        if let Ok(text) = serde_json::to_string(&cache) {
            if std::fs::write(&tmp, text).is_ok() {
                let _ = std::fs::rename(&tmp, path);
            }
        }
    }
    let mut results = keys.iter().map(|k| cache.get(k).cloned());
    let mut take = |k: usize| -> Result<Vec<McPoint>, DpaError> {
        (0..k)
            .map(|_| {
                results
                    .next()
                    .flatten()
                    .ok_or_else(|| DpaError::Reliability("missing Monte-Carlo point".into()))
            })
            .collect()
    };
    // eq. 2.7: p_c = Σ p_i · p_li.
    let weigh = |rates: &[McPoint], l: &[f64; 4]| -> f64 {
        rates.iter().zip(l).map(|(r, p)| r.rber * p).sum()
    };
    let mut points = Vec::with_capacity(req.pe.len());
    for &pe in &req.pe {
        let prog = take(4)?;
        let rt = take(4)?;
        let rd = if req.read_disturb_reads > 0.0 {
            Some(take(4)?)
        } else {
            None
        };
        let mut full: Vec<Option<McPoint>> = Vec::with_capacity(levels.len());
        for p in &req.profiles {
            full.push(if req.full_pattern && p.full_pattern {
                take(1)?.pop()
            } else {
                None
            });
        }
        let mut profiles = Vec::with_capacity(levels.len());
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
            let fp = full.get(i).and_then(|x| x.as_ref());
            profiles.push(ProfilePoint {
                pc_prog,
                pc_rt,
                pc_rd,
                f_prog,
                f_rt,
                f_rd,
                f,
                full_pattern: fp.cloned(),
                f_full_pattern: fp.map(|r| code.uber(r.rber)),
            });
        }
        points.push(PePoint {
            pe,
            uniform_rber_prog: weigh(&prog, &uniform),
            uniform_rber_rt: weigh(&rt, &uniform),
            levels_prog: prog,
            levels_rt: rt,
            levels_rd: rd,
            profiles,
        });
    }
    let mut lifetimes = Vec::new();
    for (i, p) in req.profiles.iter().enumerate() {
        let f: Vec<f64> = points.iter().map(|x| x.profiles[i].f).collect();
        let (life, beyond, below) = crossing(&req.pe, &f, req.t_uber);
        let full = if req.full_pattern && p.full_pattern {
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
        mc_cached: cached,
        mc_computed: jobs.len() - cached,
        wall_s: t0.elapsed().as_secs_f64(),
    })
}
