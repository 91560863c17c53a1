//! RBER tables: the Vth model evaluated once over a grid of (program mode ΔVpp × level
//! configuration × P/E cycles × retention time), cached on disk as JSON and interpolated at
//! run time.
//!
//! Interpolation is bilinear in (P/E, `ln(1 + t/t0)`): the retention axis is the logarithmic
//! variable of eq. 2.3–2.4 itself, which is finite at t = 0 (a plain `ln t` is not). Queries
//! outside the grid are clamped to its edges. The lookup does a binary search on each (small)
//! axis and allocates nothing.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::math::fnv1a64;
use super::vth::{simulate, Condition, LevelConfig, McOptions, McResult, VthParams, DAY_S};
use super::{check_range, ReliabilityError};

/// Bumped whenever the model's code changes results, so stale caches are not reused.
pub const MODEL_VERSION: u32 = 1;

/// Everything that determines a table. Its JSON serialisation is hashed for the cache name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableSpec {
    /// Device parameters.
    pub params: VthParams,
    /// P/E grid (ascending, ≥ 0).
    pub pe: Vec<f64>,
    /// Retention grid in seconds (ascending, ≥ 0).
    pub retention_s: Vec<f64>,
    /// Program modes, by ISPP step ΔVpp (V).
    pub modes_dvpp: Vec<f64>,
    /// Level configurations.
    pub levels: Vec<LevelConfig>,
    /// Data pattern for normal-state configurations (`None` = uniform). Reduced-state
    /// configurations always use uniform 3-bit values.
    pub pattern: Option<Vec<f64>>,
    /// Reads since erase (read disturb) assumed for the whole table.
    pub reads: f64,
    /// Monte-Carlo options.
    pub mc: McOptions,
}

impl TableSpec {
    /// The default table: Guo ch. 3 MLC; P/E 0–6000 step 1000 (Guo Tables 6 and 11 span
    /// 2000–6000); retention 0, 1 h, 1 d, 2 d, 1 week, 1 month (30 d), 3 months, 1 year
    /// (Tables 6/11 columns plus a margin); ΔVpp 0.15 V (Guo §3.2 normal program mode) and
    /// 0.30 V (the doubled-step fast mode of Guo §2.2.1 / Xia & Xiao's low-cost mode);
    /// normal state and NUNMA 1–3 (Table 10).
    pub fn guo_default() -> Self {
        TableSpec {
            params: VthParams::guo_ch3_mlc(),
            pe: (0..=6).map(|i| 1000.0 * f64::from(i)).collect(),
            retention_s: vec![
                0.0,
                3600.0,
                DAY_S,
                2.0 * DAY_S,
                7.0 * DAY_S,
                30.0 * DAY_S,
                90.0 * DAY_S,
                365.0 * DAY_S,
            ],
            modes_dvpp: vec![0.15, 0.30],
            levels: vec![
                LevelConfig::Normal,
                LevelConfig::Reduced {
                    verify: [2.71, 3.61],
                    read_ref: [2.65, 3.55],
                },
                LevelConfig::Reduced {
                    verify: [2.70, 3.65],
                    read_ref: [2.65, 3.55],
                },
                LevelConfig::Reduced {
                    verify: [2.75, 3.70],
                    read_ref: [2.65, 3.55],
                },
            ],
            pattern: None,
            reads: 0.0,
            mc: McOptions::default(),
        }
    }

    fn validate(&self) -> Result<(), ReliabilityError> {
        self.params.validate()?;
        axis("pe", &self.pe, 1e7)?;
        axis("retention_s", &self.retention_s, 1e10)?;
        if self.modes_dvpp.is_empty() || self.levels.is_empty() {
            return Err(ReliabilityError::BadLength {
                name: "modes_dvpp/levels",
                len: 0,
                expected: "at least one entry".into(),
            });
        }
        for &d in &self.modes_dvpp {
            check_range("modes_dvpp", d, 0.0, 2.0, "[0, 2] V")?;
        }
        Ok(())
    }

    /// Set the program-mode axis from [`super::modes::ProgramMode`]s (mode index `i` of
    /// [`RberTable::rber`] is `modes[i]`).
    pub fn with_modes(mut self, modes: &[super::modes::ProgramMode]) -> Self {
        self.modes_dvpp = modes.iter().map(|m| m.dvpp).collect();
        self
    }

    /// Stable 64-bit key of this spec (FNV-1a of its JSON with [`MODEL_VERSION`]).
    pub fn key(&self) -> u64 {
        let json = serde_json::to_string(&(MODEL_VERSION, self)).unwrap_or_default();
        fnv1a64(json.as_bytes())
    }

    /// Cache file name for this spec.
    pub fn file_name(&self) -> String {
        format!("rber-{:016x}.json", self.key())
    }
}

pub(crate) fn axis(name: &'static str, v: &[f64], hi: f64) -> Result<(), ReliabilityError> {
    if v.is_empty() {
        return Err(ReliabilityError::BadLength {
            name,
            len: 0,
            expected: "at least one grid point".into(),
        });
    }
    for (i, &x) in v.iter().enumerate() {
        check_range(name, x, 0.0, hi, "ascending, non-negative grid values")?;
        if i > 0 && x <= v[i - 1] {
            return Err(ReliabilityError::OutOfRange {
                name,
                value: x,
                allowed: "strictly ascending grid values",
            });
        }
    }
    Ok(())
}

/// Where a table came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheStatus {
    /// Loaded from the cache file.
    Hit,
    /// Computed and written to the cache.
    Built,
}

/// A computed RBER table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RberTable {
    /// Hex key of the spec ([`TableSpec::key`]); a cache file is used only if it matches.
    pub key: String,
    /// The spec it was computed from.
    pub spec: TableSpec,
    /// RBER values, index `((mode·L + level)·P + pe)·R + ret`. Stored as IEEE bit patterns
    /// in the JSON so the cache round-trips exactly.
    #[serde(with = "f64_bits")]
    pub values: Vec<f64>,
    /// 95 % half-widths, same layout.
    #[serde(with = "f64_bits")]
    pub ci95_half: Vec<f64>,
    /// Cells simulated per point, same layout.
    pub cells: Vec<u64>,
    /// Whether each point met the precision rule, same layout.
    pub met_target: Vec<bool>,
    /// Retention axis transformed to `ln(1 + t/t0)`.
    #[serde(with = "f64_bits")]
    x_ret: Vec<f64>,
    /// Seconds it took to build (0 for points copied from an equivalent point).
    pub build_seconds: f64,
}

impl RberTable {
    fn idx(&self, mode: usize, level: usize, p: usize, r: usize) -> usize {
        let s = &self.spec;
        ((mode * s.levels.len() + level) * s.pe.len() + p) * s.retention_s.len() + r
    }

    /// Compute the table (no cache) on up to `threads` worker threads. Every point has its
    /// own seed (derived from `spec.mc.seed` and the point's index), so the result does not
    /// depend on the thread count or scheduling.
    pub fn build_with_threads(spec: &TableSpec, threads: usize) -> Result<Self, ReliabilityError> {
        spec.validate()?;
        let t0 = Instant::now();
        let (nm, nl, np, nr) = (
            spec.modes_dvpp.len(),
            spec.levels.len(),
            spec.pe.len(),
            spec.retention_s.len(),
        );
        let n = nm * nl * np * nr;
        let x_ret = spec
            .retention_s
            .iter()
            .map(|t| (t / spec.params.t0_s).ln_1p())
            .collect();
        let mut t = RberTable {
            key: format!("{:016x}", spec.key()),
            spec: spec.clone(),
            values: vec![0.0; n],
            ci95_half: vec![0.0; n],
            cells: vec![0; n],
            met_target: vec![false; n],
            x_ret,
            build_seconds: 0.0,
        };
        let coords = |i: usize| -> (usize, usize, usize, usize) {
            (
                i / (nl * np * nr),
                (i / (np * nr)) % nl,
                (i / nr) % np,
                i % nr,
            )
        };
        // At N = 0 retention (∝ N^0.3, N^0.4) and read disturb (∝ N^0.3) vanish, so only the
        // first retention column is simulated there and then copied.
        let todo: Vec<usize> = (0..n)
            .filter(|&i| {
                let (_, _, p, r) = coords(i);
                !(spec.pe[p] == 0.0 && r > 0)
            })
            .collect();
        let run = |i: usize| -> Result<(usize, McResult), ReliabilityError> {
            let (m, l, p, r) = coords(i);
            let cfg = &spec.levels[l];
            let pattern = match cfg {
                LevelConfig::Normal => spec.pattern.as_deref(),
                LevelConfig::Reduced { .. } => None,
            };
            let cond = Condition {
                pe: spec.pe[p],
                retention_s: spec.retention_s[r],
                dvpp: spec.modes_dvpp[m],
                reads: spec.reads,
            };
            let mut mc = spec.mc;
            mc.seed = spec
                .mc
                .seed
                .wrapping_add((i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            Ok((i, simulate(&spec.params, cfg, pattern, &cond, &mc)?))
        };
        let next = AtomicUsize::new(0);
        let threads = threads.clamp(1, 64);
        type Chunk = Result<Vec<(usize, McResult)>, ReliabilityError>;
        let results: Vec<Chunk> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| -> Chunk {
                        let mut out = Vec::new();
                        loop {
                            let k = next.fetch_add(1, Ordering::Relaxed);
                            if k >= todo.len() {
                                break;
                            }
                            out.push(run(todo[k])?);
                        }
                        Ok(out)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(ReliabilityError::Cache {
                            path: String::new(),
                            msg: "table worker thread panicked".into(),
                        })
                    })
                })
                .collect()
        });
        for r in results {
            for (i, res) in r? {
                t.values[i] = res.rber;
                t.ci95_half[i] = res.ci95_half;
                t.cells[i] = res.cells;
                t.met_target[i] = res.met_target;
            }
        }
        for i in 0..n {
            let (m, l, p, r) = coords(i);
            if spec.pe[p] == 0.0 && r > 0 {
                let j = t.idx(m, l, p, 0);
                t.values[i] = t.values[j];
                t.ci95_half[i] = t.ci95_half[j];
                t.cells[i] = t.cells[j];
                t.met_target[i] = t.met_target[j];
            }
        }
        t.build_seconds = t0.elapsed().as_secs_f64();
        Ok(t)
    }

    /// Compute the table (no cache) on the available cores (at most 4).
    pub fn build(spec: &TableSpec) -> Result<Self, ReliabilityError> {
        let th = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        Self::build_with_threads(spec, th)
    }

    /// Load the table for `spec` from `cache_dir` if present and matching, else build it and
    /// write it there (creating the directory).
    pub fn load_or_build(
        spec: &TableSpec,
        cache_dir: &Path,
    ) -> Result<(Self, CacheStatus), ReliabilityError> {
        spec.validate()?;
        let path = cache_dir.join(spec.file_name());
        if let Ok(bytes) = std::fs::read(&path) {
            if let Ok(mut t) = serde_json::from_slice::<RberTable>(&bytes) {
                // The key hashes the exact JSON of the caller's spec; the stored spec is only
                // informative (decimal JSON may not round-trip the last bit of every float).
                if t.key == format!("{:016x}", spec.key()) && t.consistent() {
                    t.spec = spec.clone();
                    return Ok((t, CacheStatus::Hit));
                }
            }
        }
        let t = Self::build(spec)?;
        t.write(&path)?;
        Ok((t, CacheStatus::Built))
    }

    fn consistent(&self) -> bool {
        let n = self.spec.modes_dvpp.len()
            * self.spec.levels.len()
            * self.spec.pe.len()
            * self.spec.retention_s.len();
        self.values.len() == n
            && self.ci95_half.len() == n
            && self.cells.len() == n
            && self.met_target.len() == n
            && self.x_ret.len() == self.spec.retention_s.len()
    }

    fn write(&self, path: &PathBuf) -> Result<(), ReliabilityError> {
        let err = |msg: String| ReliabilityError::Cache {
            path: path.display().to_string(),
            msg,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| err(e.to_string()))?;
        }
        let json = serde_json::to_vec(self).map_err(|e| err(e.to_string()))?;
        // Write-then-rename so a concurrent reader never sees a partial file.
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, json).map_err(|e| err(e.to_string()))?;
        std::fs::rename(&tmp, path).map_err(|e| err(e.to_string()))
    }

    /// Grid value at indices (no interpolation).
    pub fn at(&self, mode: usize, level: usize, pe_i: usize, ret_i: usize) -> f64 {
        self.values[self.idx(mode, level, pe_i, ret_i)]
    }

    /// Interpolated RBER at (`pe`, `retention_s`) for program mode index `mode` and level
    /// configuration index `level`. Out-of-range indices are clamped to the last entry;
    /// coordinates are clamped to the grid. O(log grid) with no allocation.
    pub fn rber(&self, pe: f64, retention_s: f64, mode: usize, level: usize) -> f64 {
        let s = &self.spec;
        let mode = mode.min(s.modes_dvpp.len() - 1);
        let level = level.min(s.levels.len() - 1);
        let x = (retention_s.max(0.0) / s.params.t0_s).ln_1p();
        let (p0, p1, fp) = bracket(&s.pe, if pe.is_nan() { 0.0 } else { pe });
        let (r0, r1, fr) = bracket(&self.x_ret, if x.is_nan() { 0.0 } else { x });
        let v00 = self.at(mode, level, p0, r0);
        let v01 = self.at(mode, level, p0, r1);
        let v10 = self.at(mode, level, p1, r0);
        let v11 = self.at(mode, level, p1, r1);
        let a = v00 + (v01 - v00) * fr;
        let b = v10 + (v11 - v10) * fr;
        a + (b - a) * fp
    }

    /// Retention-axis points as `ln(1 + t/t0)`.
    pub fn retention_axis(&self) -> &[f64] {
        &self.x_ret
    }
}

/// Lower and upper grid index around `x` and the fraction between them (clamped).
fn bracket(axis: &[f64], x: f64) -> (usize, usize, f64) {
    let n = axis.len();
    if n == 1 || x <= axis[0] {
        return (0, 0, 0.0);
    }
    if x >= axis[n - 1] {
        return (n - 1, n - 1, 0.0);
    }
    let hi = axis.partition_point(|&a| a <= x);
    let lo = hi - 1;
    (lo, hi, (x - axis[lo]) / (axis[hi] - axis[lo]))
}

/// Serialise `Vec<f64>` as the IEEE-754 bit patterns (exact round trip through JSON).
mod f64_bits {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(v: &[f64], s: S) -> Result<S::Ok, S::Error> {
        v.iter()
            .map(|x| x.to_bits())
            .collect::<Vec<u64>>()
            .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        Ok(Vec::<u64>::deserialize(d)?
            .into_iter()
            .map(f64::from_bits)
            .collect())
    }
}
