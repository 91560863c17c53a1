//! The Monte-Carlo estimator of the Vth model: steps 1–4 drawn per victim cell, steps 5–6
//! (retention, eq. 2.3–2.4; read disturb, eq. 2.8) integrated exactly, bit errors counted with
//! the Gray map or Guo's ReduceCode (Table 7), and the stopping rule on the 95 % interval.
//! Steps and readings are described in the [`super`] module documentation.

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use super::params::{
    check_ascending, CellType, Condition, Coupling, LevelConfig, ProgramScheme, ReadDisturb,
    VthParams, X0Reading, MAX_LEVELS,
};
use crate::reliability::math::norm_cdf;
use crate::reliability::reducecode::{reduce_decode, reduce_encode};
use crate::reliability::{check_range, ReliabilityError};

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

/// Standard deviations beyond which a read reference's tail (< 1e-19) is skipped.
const Z_CUT: f64 = 9.0;

/// Φ(z), or 0 when `z` is more than [`Z_CUT`] standard deviations below the mean: the
/// probability mass of one side of a read reference in [`Prep::landing`].
#[inline]
fn cut_cdf(z: f64) -> f64 {
    if z < -Z_CUT {
        0.0
    } else {
        norm_cdf(z)
    }
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
        // Refs more than Z_CUT standard deviations away contribute < 1e-19 and are skipped
        // ([`cut_cdf`]), scanning outward from the own level.
        out[..l].fill(0.0);
        let mut own_p = 1.0;
        // c = P(Vth < refs[j]) for j = own-1, own-2, ...
        let mut j = own;
        let mut c = if own > 0 {
            cut_cdf((self.refs[own - 1] - mean) / sd)
        } else {
            0.0
        };
        while j > 0 && c > 0.0 {
            j -= 1;
            let below = if j > 0 {
                cut_cdf((self.refs[j - 1] - mean) / sd)
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
            cut_cdf((mean - self.refs[own]) / sd)
        } else {
            0.0
        };
        while j + 1 < l && q > 0.0 {
            j += 1;
            let above = if j + 1 < l {
                cut_cdf((mean - self.refs[j]) / sd)
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
