//! ECC models: BCH, LDPC with soft sensing, CRC (detect only), UBER, and the per-read cost
//! the engine charges.
//!
//! Engine integration (per page read):
//! 1. `rber = table.rber(pe, age_s, mode, level)` ([`crate::reliability::table::RberTable`]);
//! 2. `errors = draw_errors(rng, model.codeword_bits(), rber)` with the run's seeded RNG;
//! 3. `cost = model.read_cost(rber, errors)`; add `extra_sense_ns + extra_transfer_ns +
//!    decode_ns` to the read; act on `cost.outcome`.

use rand::Rng;
use rand_distr::{Binomial, Distribution};
use serde::{Deserialize, Serialize};

use crate::reliability::math::ln_gamma;

/// Errors raised by the ECC models; each names the parameter, the value and the allowed range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EccError {
    /// A parameter is outside its allowed range.
    #[error("parameter `{name}` = {value} is out of range; allowed: {allowed}")]
    OutOfRange {
        /// Parameter name.
        name: &'static str,
        /// Value supplied.
        value: f64,
        /// Allowed range.
        allowed: String,
    },
}

fn oor(name: &'static str, value: f64, allowed: impl Into<String>) -> EccError {
    EccError::OutOfRange {
        name,
        value,
        allowed: allowed.into(),
    }
}

/// Outcome of decoding one page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReadOutcome {
    /// Data delivered intact (no errors, or all corrected).
    Corrected,
    /// Errors beyond the code's capability: the read fails.
    Uncorrectable,
    /// Detect-only code (CRC) saw errors: reported, never corrected (FlexECC §2.2).
    DetectedOnly,
}

/// Extra time a read costs on top of the plain sense + transfer, and its outcome.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadCost {
    /// Extra soft-sensing time (LDPC), ns.
    pub extra_sense_ns: f64,
    /// Extra transfer time for soft-sensing data (LDPC), ns.
    pub extra_transfer_ns: f64,
    /// Decode / detect time, ns.
    pub decode_ns: f64,
    /// Soft-sensing levels used (0 = hard decision or not LDPC).
    pub soft_levels: u32,
    /// Full page re-reads (read retries, [`LevelCost::PageRead`]); each costs the page's own
    /// sense and transfer time, which the caller adds (it knows the page type).
    pub rereads: u32,
    /// Outcome.
    pub outcome: ReadOutcome,
}

impl ReadCost {
    /// Sum of the three time terms, ns.
    pub fn total_ns(&self) -> f64 {
        self.extra_sense_ns + self.extra_transfer_ns + self.decode_ns
    }
}

/// Reference latency a BCH code's timing is scaled from (FlexECC §2.2: "we use 10 µs as the
/// decoding latency of a BCH tolerating 6 bit errors out of a flash page").
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BchTiming {
    /// Codeword length of the reference code (bits).
    pub ref_n: u32,
    /// Correction capability of the reference code.
    pub ref_t: u32,
    /// Decode latency of the reference code for a *corrupted* page, ns.
    pub ref_corrupted_ns: f64,
    /// T_m / T_a, multiplication over addition time (FlexECC assumes 1, "typically one clock
    /// cycle").
    pub tm_over_ta: f64,
}

impl BchTiming {
    /// FlexECC hardware reference: t = 6 on an 8 KiB page, 10 µs corrupted decode (FlexECC
    /// §2.2 and Table 2), T_m = T_a (FlexECC §2.2).
    pub fn flexecc_hw() -> Self {
        BchTiming {
            ref_n: Bch::page_n(8 * 8192, 6, 17),
            ref_t: 6,
            ref_corrupted_ns: 10_000.0,
            tm_over_ta: 1.0,
        }
    }
}

/// Binary BCH(n, k, t) over GF(2^m) with a latency model from operation counts
/// (FlexECC §2.2, after Lin & Costello \[24\]):
/// a polynomial division (encode, CRC) = (n−1) additions + (n−1) multiplications;
/// syndromes = (n−1)t additions + nt multiplications; Berlekamp–Massey = 2t² of each;
/// Chien search = nt of each. An error-free page needs only the syndromes (eq. 4);
/// a corrupted page all three steps (eq. 5).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bch {
    /// Codeword length (bits; ≤ 2^m − 1, shortened codes allowed).
    pub n: u32,
    /// Message length (bits).
    pub k: u32,
    /// Correctable bits.
    pub t: u32,
    /// Field degree m of GF(2^m).
    pub m: u32,
    /// Time of one addition, ns (derived from the reference).
    pub ta_ns: f64,
    /// T_m / T_a.
    pub tm_over_ta: f64,
}

fn ops_poly(n: f64, r: f64) -> f64 {
    (n - 1.0) * (1.0 + r)
}
fn ops_syndromes(n: f64, t: f64, r: f64) -> f64 {
    (n - 1.0) * t + r * n * t
}
fn ops_full(n: f64, t: f64, r: f64) -> f64 {
    ops_syndromes(n, t, r) + 2.0 * t * t * (1.0 + r) + n * t * (1.0 + r)
}

impl Bch {
    /// Codeword length of a shortened BCH code protecting `data_bits` with capability `t`
    /// over GF(2^m): `data_bits + m·t`.
    pub fn page_n(data_bits: u32, t: u32, m: u32) -> u32 {
        data_bits + m * t
    }

    /// Build a code and its timing. Checks `3 ≤ m ≤ 31`, `n ≤ 2^m − 1`, `1 ≤ t`,
    /// `1 ≤ k < n`, `n − k ≤ m·t`.
    pub fn new(n: u32, k: u32, t: u32, m: u32, timing: &BchTiming) -> Result<Self, EccError> {
        if !(3..=31).contains(&m) {
            return Err(oor("m", f64::from(m), "3..=31"));
        }
        let nmax = (1u64 << m) - 1;
        if n < 2 || u64::from(n) > nmax {
            return Err(oor("n", f64::from(n), format!("2..={nmax} (2^m − 1)")));
        }
        if t == 0 || t >= n {
            return Err(oor("t", f64::from(t), format!("1..{n}")));
        }
        if k == 0 || k >= n {
            return Err(oor("k", f64::from(k), format!("1..{n}")));
        }
        if u64::from(n - k) > u64::from(m) * u64::from(t) {
            return Err(oor(
                "k",
                f64::from(k),
                format!("≥ n − m·t = {}", i64::from(n) - i64::from(m * t)),
            ));
        }
        if timing.ref_n < 2 || timing.ref_t == 0 {
            return Err(oor(
                "timing.ref_n/ref_t",
                f64::from(timing.ref_n),
                "ref_n ≥ 2, ref_t ≥ 1",
            ));
        }
        if !(timing.ref_corrupted_ns.is_finite() && timing.ref_corrupted_ns > 0.0) {
            return Err(oor(
                "timing.ref_corrupted_ns",
                timing.ref_corrupted_ns,
                "> 0 ns",
            ));
        }
        if !(timing.tm_over_ta.is_finite() && timing.tm_over_ta >= 0.0) {
            return Err(oor("timing.tm_over_ta", timing.tm_over_ta, "≥ 0"));
        }
        let r = timing.tm_over_ta;
        let ta_ns =
            timing.ref_corrupted_ns / ops_full(f64::from(timing.ref_n), f64::from(timing.ref_t), r);
        Ok(Bch {
            n,
            k,
            t,
            m,
            ta_ns,
            tm_over_ta: r,
        })
    }

    /// BCH for a page of `data_bits` with capability `t`: smallest m with
    /// `data_bits + m·t ≤ 2^m − 1`, shortened to `n = data_bits + m·t`.
    pub fn for_page(data_bits: u32, t: u32, timing: &BchTiming) -> Result<Self, EccError> {
        for m in 3..=31u32 {
            let n = u64::from(data_bits) + u64::from(m) * u64::from(t);
            if n < (1u64 << m) {
                return Self::new(n as u32, data_bits, t, m, timing);
            }
        }
        Err(oor(
            "data_bits",
            f64::from(data_bits),
            "small enough for GF(2^31)",
        ))
    }

    /// Encode time (one polynomial division, FlexECC eq. 2), ns.
    pub fn encode_ns(&self) -> f64 {
        ops_poly(f64::from(self.n), self.tm_over_ta) * self.ta_ns
    }
    /// Decode time of an error-free page (syndromes only), ns.
    pub fn decode_clean_ns(&self) -> f64 {
        ops_syndromes(f64::from(self.n), f64::from(self.t), self.tm_over_ta) * self.ta_ns
    }
    /// Decode time of a corrupted page (syndromes + Berlekamp–Massey + Chien), ns.
    pub fn decode_corrupted_ns(&self) -> f64 {
        ops_full(f64::from(self.n), f64::from(self.t), self.tm_over_ta) * self.ta_ns
    }
    /// FlexECC eq. 4: CRC-over-BCH speed-up for an error-free page.
    pub fn crc_speedup_correct(&self) -> f64 {
        let n = f64::from(self.n);
        ops_syndromes(n, f64::from(self.t), self.tm_over_ta) / ops_poly(n, self.tm_over_ta)
    }
    /// FlexECC eq. 5: CRC-over-BCH speed-up for a corrupted page.
    pub fn crc_speedup_error(&self) -> f64 {
        let n = f64::from(self.n);
        ops_full(n, f64::from(self.t), self.tm_over_ta) / ops_poly(n, self.tm_over_ta)
    }
    /// Decoding fails when the errors exceed t.
    pub fn fails(&self, errors: u32) -> bool {
        errors > self.t
    }
    /// UBER per information bit (Guo eq. 2.6): P(errors > t in n bits) / k.
    pub fn uber(&self, rber: f64) -> f64 {
        binomial_tail(u64::from(self.n), u64::from(self.t), rber) / f64::from(self.k)
    }
}

/// LDPC with progressive soft sensing (Guo §3.1, §3.6; Zhao et al. \[12\]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ldpc {
    /// Codeword bits (Guo §3.6: rate-8/9 LDPC over 4 KiB of user data → 4608 B).
    pub n_bits: u32,
    /// Hard-decision decode time, ns (Guo does not state one; supply from the design).
    pub hard_decode_ns: f64,
    /// Additional decode time per soft level, ns (not stated by Guo).
    pub soft_decode_ns_per_level: f64,
    /// Sensing time per extra level: 8 µs (Guo §3.6, from \[12\]).
    pub sense_ns_per_level: f64,
    /// Transfer time per extra level: 20 µs (Guo §3.6, from \[12\]).
    pub transfer_ns_per_level: f64,
    /// `thresholds[i]` = highest RBER decodable with `i` extra levels; `thresholds[0]` is the
    /// hard-decision limit 4e-3 (Guo §3.6.1, from \[12\]); past the last entry the page is
    /// uncorrectable.
    pub thresholds: Vec<f64>,
    /// What one extra level costs: a soft-sensing level (Guo) or a full read retry (IDA §V-F).
    pub level_cost: LevelCost,
}

/// What one extra LDPC level costs at read time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LevelCost {
    /// A soft-sensing level: [`LDPC_SENSE_NS`] of sensing and [`LDPC_TRANSFER_NS`] of transfer
    /// (Guo §3.6), plus the soft decode time.
    #[default]
    SoftSensing,
    /// A read retry (IDA §V-F: "retrying the page read with different voltage values"): the
    /// page is sensed again at its own page-type read latency (so an MSB retry costs an MSB
    /// read, an IDA-adjusted page's retry its faster latency), transferred and hard-decoded
    /// again. The engine adds the sensing and transfer ([`ReadCost::rereads`]).
    PageRead,
}

/// Guo §3.6.1: "the BER limit that triggers extra sensing levels is 4 × 10⁻³" \[12\].
pub const LDPC_HARD_LIMIT: f64 = 4e-3;
/// Guo §3.6: each extra sensing level costs 8 µs of sensing \[12\].
pub const LDPC_SENSE_NS: f64 = 8_000.0;
/// Guo §3.6: each extra sensing level costs 20 µs of data transfer \[12\].
pub const LDPC_TRANSFER_NS: f64 = 20_000.0;
/// Guo §3.1: MLC BER "reaches up to 10⁻²" at 2X nm, the regime soft LDPC is introduced for;
/// used as the floor of the last level's limit when fitting thresholds.
pub const LDPC_SOFT_FLOOR: f64 = 1e-2;

impl Ldpc {
    /// Validate and build.
    pub fn new(
        n_bits: u32,
        hard_decode_ns: f64,
        soft_decode_ns_per_level: f64,
        thresholds: Vec<f64>,
    ) -> Result<Self, EccError> {
        if n_bits == 0 {
            return Err(oor("n_bits", 0.0, "≥ 1"));
        }
        for (name, v) in [
            ("hard_decode_ns", hard_decode_ns),
            ("soft_decode_ns_per_level", soft_decode_ns_per_level),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(oor(name, v, "finite ≥ 0 ns"));
            }
        }
        if thresholds.is_empty() {
            return Err(oor(
                "thresholds",
                0.0,
                "at least one entry (the hard limit)",
            ));
        }
        for (i, &x) in thresholds.iter().enumerate() {
            if !(x.is_finite() && (0.0..=1.0).contains(&x)) || (i > 0 && x < thresholds[i - 1]) {
                return Err(oor(
                    "thresholds",
                    x,
                    "non-decreasing probabilities in [0, 1]",
                ));
            }
        }
        Ok(Ldpc {
            n_bits,
            hard_decode_ns,
            soft_decode_ns_per_level,
            sense_ns_per_level: LDPC_SENSE_NS,
            transfer_ns_per_level: LDPC_TRANSFER_NS,
            thresholds,
            level_cost: LevelCost::SoftSensing,
        })
    }

    /// The same code with extra levels costing `cost` (read retries instead of soft sensing).
    pub fn with_level_cost(mut self, cost: LevelCost) -> Self {
        self.level_cost = cost;
        self
    }

    /// Extra soft-sensing levels needed at `rber`, or `None` if uncorrectable.
    pub fn levels_for(&self, rber: f64) -> Option<u32> {
        self.thresholds
            .iter()
            .position(|&t| rber <= t)
            .map(|i| i as u32)
    }

    /// Fit level thresholds so that `levels_for(rber_i)` reproduces `target_i` for as many
    /// points as possible (ties broken by the smallest total level distance), with
    /// `thresholds[0]` fixed at `hard_limit` and levels non-decreasing in RBER. Each threshold
    /// is the geometric mean of the neighbouring points' RBERs; the last is
    /// `max(LDPC_SOFT_FLOOR, largest RBER)`. Used to derive the thresholds from the Vth
    /// model's RBER at the (P/E, retention) cells of Guo Table 6.
    #[allow(clippy::needless_range_loop)] // DP over two rows indexed by level
    pub fn fit_thresholds(
        points: &[(f64, u32)],
        hard_limit: f64,
        max_levels: u32,
    ) -> Result<Vec<f64>, EccError> {
        if max_levels == 0 {
            return Err(oor("max_levels", 0.0, "≥ 1"));
        }
        let mut pts: Vec<(f64, u32)> = points.to_vec();
        for p in &pts {
            if !(p.0.is_finite() && (0.0..=1.0).contains(&p.0)) {
                return Err(oor("points.rber", p.0, "[0, 1]"));
            }
        }
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let above: Vec<(f64, u32)> = pts.iter().copied().filter(|p| p.0 > hard_limit).collect();
        let nl = max_levels as usize;
        // dp[l] = best (score) with the last labelled point at level l (1..=max).
        let score = |lab: usize, tgt: u32| -> i64 {
            let d = (lab as i64 - i64::from(tgt)).abs();
            if d == 0 {
                1000
            } else {
                -d
            }
        };
        let mut labels = vec![0usize; above.len()];
        if !above.is_empty() {
            let mut dp = vec![vec![i64::MIN / 4; nl + 1]; above.len()];
            let mut from = vec![vec![0usize; nl + 1]; above.len()];
            for l in 1..=nl {
                dp[0][l] = score(l, above[0].1);
            }
            for i in 1..above.len() {
                let (mut best, mut arg) = (i64::MIN / 4, 1);
                for l in 1..=nl {
                    if dp[i - 1][l] > best {
                        best = dp[i - 1][l];
                        arg = l;
                    }
                    dp[i][l] = best + score(l, above[i].1);
                    from[i][l] = arg;
                }
            }
            let last = above.len() - 1;
            let mut l = (1..=nl)
                .max_by_key(|&l| (dp[last][l], -(l as i64)))
                .unwrap_or(1);
            for i in (0..above.len()).rev() {
                labels[i] = l;
                l = from[i][l];
            }
        }
        let top = pts.last().map_or(0.0, |p| p.0).max(LDPC_SOFT_FLOOR);
        let mut th = vec![hard_limit];
        for lev in 1..nl {
            let lo = above
                .iter()
                .zip(&labels)
                .filter(|(_, &lab)| lab <= lev)
                .map(|(p, _)| p.0)
                .fold(hard_limit, f64::max);
            let hi = above
                .iter()
                .zip(&labels)
                .filter(|(_, &lab)| lab > lev)
                .map(|(p, _)| p.0)
                .fold(top, f64::min);
            let t = (lo * hi).sqrt().max(*th.last().unwrap_or(&0.0));
            th.push(t);
        }
        th.push(top.max(*th.last().unwrap_or(&0.0)));
        Ok(th)
    }
}

/// Detect-only CRC (FlexECC Table 2: encode and check 0.8 µs each).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Crc {
    /// Codeword bits covered.
    pub n_bits: u32,
    /// Check time, ns (0.8 µs, FlexECC Table 2).
    pub detect_ns: f64,
}

/// FlexECC Table 2: CRC encoding and decoding 0.8 µs.
pub const CRC_NS: f64 = 800.0;

/// The code protecting a page, chosen at program time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum EccModel {
    /// No ECC: any error is an uncorrectable read.
    None {
        /// Page bits.
        n_bits: u32,
    },
    /// BCH.
    Bch(Bch),
    /// LDPC with soft sensing.
    Ldpc(Ldpc),
    /// CRC, detect only.
    Crc(Crc),
}

impl EccModel {
    /// Bits over which errors are drawn for one read.
    pub fn codeword_bits(&self) -> u32 {
        match self {
            EccModel::None { n_bits } => *n_bits,
            EccModel::Bch(b) => b.n,
            EccModel::Ldpc(l) => l.n_bits,
            EccModel::Crc(c) => c.n_bits,
        }
    }

    /// A representative error count of a page copy at quantile `v` ∈ [0, 1) of
    /// X ~ Binomial(codeword bits, `rber`), enough to decide [`EccModel::read_cost`]'s outcome:
    /// 0 when v ≥ P(X > 0); for BCH t + 1 when v < P(X > t); else 1. Monotone in `rber` for a
    /// fixed `v` (a copy that has errors keeps them as it ages).
    pub fn errors_at_quantile(&self, rber: f64, v: f64) -> u32 {
        let n = u64::from(self.codeword_bits());
        if v >= binomial_tail(n, 0, rber) {
            return 0;
        }
        if let EccModel::Bch(b) = self {
            if v < binomial_tail(n, u64::from(b.t), rber) {
                return b.t + 1;
            }
        }
        1
    }

    /// Cost and outcome of reading a page whose raw bit error rate is `rber` and on which
    /// `errors` bit errors were drawn.
    pub fn read_cost(&self, rber: f64, errors: u32) -> ReadCost {
        let mut c = ReadCost {
            extra_sense_ns: 0.0,
            extra_transfer_ns: 0.0,
            decode_ns: 0.0,
            soft_levels: 0,
            rereads: 0,
            outcome: ReadOutcome::Corrected,
        };
        match self {
            EccModel::None { .. } => {
                if errors > 0 {
                    c.outcome = ReadOutcome::Uncorrectable;
                }
            }
            EccModel::Bch(b) => {
                if errors == 0 {
                    c.decode_ns = b.decode_clean_ns();
                } else {
                    c.decode_ns = b.decode_corrupted_ns();
                    if b.fails(errors) {
                        c.outcome = ReadOutcome::Uncorrectable;
                    }
                }
            }
            EccModel::Ldpc(l) => {
                let (levels, ok) = match l.levels_for(rber) {
                    Some(v) => (v, true),
                    None => (l.thresholds.len().saturating_sub(1) as u32, false),
                };
                let lf = f64::from(levels);
                c.soft_levels = levels;
                match l.level_cost {
                    LevelCost::SoftSensing => {
                        c.extra_sense_ns = lf * l.sense_ns_per_level;
                        c.extra_transfer_ns = lf * l.transfer_ns_per_level;
                        c.decode_ns = l.hard_decode_ns + lf * l.soft_decode_ns_per_level;
                    }
                    LevelCost::PageRead => {
                        c.rereads = levels;
                        c.decode_ns = l.hard_decode_ns * (1.0 + lf);
                    }
                }
                if !ok && errors > 0 {
                    c.outcome = ReadOutcome::Uncorrectable;
                }
            }
            EccModel::Crc(k) => {
                c.decode_ns = k.detect_ns;
                if errors > 0 {
                    c.outcome = ReadOutcome::DetectedOnly;
                }
            }
        }
        c
    }
}

/// Draw the number of bit errors in `bits` bits at raw bit error rate `rber`:
/// Binomial(bits, rber) by `rand_distr` (BTPE, O(1) expected time). `rber` is clamped to
/// \[0, 1\]; NaN counts as 0. Saturates at `u32::MAX`.
pub fn draw_errors<R: Rng + ?Sized>(rng: &mut R, bits: u32, rber: f64) -> u32 {
    let p = if rber.is_nan() {
        0.0
    } else {
        rber.clamp(0.0, 1.0)
    };
    if p == 0.0 || bits == 0 {
        return 0;
    }
    match Binomial::new(u64::from(bits), p) {
        Ok(b) => u32::try_from(b.sample(rng)).unwrap_or(u32::MAX),
        Err(_) => 0,
    }
}

/// P(X > t) for X ~ Binomial(n, p), computed in log space: the smaller of the two tails is
/// summed term by term from its largest end (terms via ln Γ), so values down to ~1e-300 keep
/// full relative precision.
pub fn binomial_tail(n: u64, t: u64, p: f64) -> f64 {
    let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) };
    if t >= n || p == 0.0 {
        return 0.0;
    }
    if p == 1.0 {
        return 1.0;
    }
    let nf = n as f64;
    let (lp, lq) = (p.ln(), (-p).ln_1p());
    let ln_term = |i: u64| -> f64 {
        let i = i as f64;
        ln_gamma(nf + 1.0) - ln_gamma(i + 1.0) - ln_gamma(nf - i + 1.0) + i * lp + (nf - i) * lq
    };
    let mean = nf * p;
    // Sum terms from `start` stepping by `dir` until negligible; log-sum-exp.
    let sum_from = |start: u64, up: bool| -> f64 {
        let l0 = ln_term(start);
        let mut acc = 1.0f64;
        let mut i = start;
        let mut ratio_log = 0.0f64;
        loop {
            if up {
                if i >= n {
                    break;
                }
                // T(i+1)/T(i) = (n−i)/(i+1) · p/q
                ratio_log += ((nf - i as f64) / (i as f64 + 1.0)).ln() + lp - lq;
                i += 1;
            } else {
                if i == 0 {
                    break;
                }
                // T(i−1)/T(i) = i/(n−i+1) · q/p
                ratio_log += (i as f64 / (nf - i as f64 + 1.0)).ln() + lq - lp;
                i -= 1;
            }
            let term = ratio_log.exp();
            acc += term;
            if term < 1e-17 * acc {
                break;
            }
        }
        (l0 + acc.ln()).exp()
    };
    if (t as f64 + 1.0) >= mean {
        sum_from(t + 1, true).min(1.0)
    } else {
        (1.0 - sum_from(t, false)).clamp(0.0, 1.0)
    }
}

/// UBER by the binomial tail: `P(errors > t among n bits) / divisor`. Guo eq. 2.6 / 3.1
/// divides by the information length; FlexECC eq. 1 by the codeword length N.
pub fn uber(n: u64, t: u64, rber: f64, divisor: f64) -> f64 {
    binomial_tail(n, t, rber) / divisor
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binomial_tail_small_exact() {
        // n = 10, p = 0.1, P(X > 2) = 1 − (0.9^10 + 10·0.1·0.9^9 + 45·0.01·0.9^8)
        let exact = 1.0 - (0.9f64.powi(10) + 0.9f64.powi(9) + 0.45 * 0.9f64.powi(8));
        let v = binomial_tail(10, 2, 0.1);
        assert!((v - exact).abs() < 1e-12, "{v} vs {exact}");
        // Deep upper tail vs direct first term: P(X > 8) at n=4608·8, p=1e-5 ≈ C(n,9)p^9.
        let n = 36_864u64;
        let v = binomial_tail(n, 8, 1e-5);
        let first = (ln_gamma(n as f64 + 1.0) - ln_gamma(10.0) - ln_gamma(n as f64 - 8.0)
            + 9.0 * 1e-5f64.ln()
            + (n as f64 - 9.0) * (-1e-5f64).ln_1p())
        .exp();
        assert!(v >= first && v < first * 1.05, "{v} {first}");
        // Lower-tail branch: mean 100 ≫ t.
        let v = binomial_tail(10_000, 10, 0.01);
        assert!((1.0 - 1e-15..=1.0).contains(&v));
        // Lower-tail branch against a direct sum: n = 1000, p = 0.01, t = 5.
        let mut direct = 0.0;
        for i in 0..=5u64 {
            direct += (ln_gamma(1001.0) - ln_gamma(i as f64 + 1.0) - ln_gamma(1001.0 - i as f64)
                + i as f64 * 0.01f64.ln()
                + (1000.0 - i as f64) * 0.99f64.ln())
            .exp();
        }
        let v = binomial_tail(1000, 5, 0.01);
        assert!((v - (1.0 - direct)).abs() < 1e-12, "{v} {}", 1.0 - direct);
    }

    #[test]
    fn bch_rejects_bad_parameters() {
        let tm = BchTiming::flexecc_hw();
        assert!(Bch::new(100, 50, 2, 3, &tm).is_err()); // n > 2^3 − 1
        let e = Bch::new(1000, 990, 0, 10, &tm).unwrap_err();
        assert!(e.to_string().contains("`t`"), "{e}");
        assert!(Bch::new(1023, 900, 5, 10, &tm).is_err()); // n − k > m t
        assert!(Bch::new(1023, 973, 5, 10, &tm).is_ok());
    }
}
