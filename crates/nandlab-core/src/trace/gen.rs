//! Synthetic trace generator (canonical CSV).

use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp, Zipf};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::convert::{CanonicalWriter, FileSink};
use super::{HostRequest, Op, TraceError};

/// Parameters of [`generate`]. Every field has a default (serde fills missing ones).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GenParams {
    /// Number of requests (default 1 000 000).
    pub requests: u64,
    /// Address space, bytes: every request lies in `[0, span_bytes)` (default 16 GiB).
    pub span_bytes: u64,
    /// Offsets are multiples of this, bytes (default 4096).
    pub align_bytes: u64,
    /// Probability that a request is a write, 0..=1 (default 0.7).
    pub write_fraction: f64,
    /// Request sizes in bytes, chosen uniformly (default 4, 8, 16, 32, 64 KiB).
    pub sizes_bytes: Vec<u64>,
    /// Mean arrival rate, requests per second; arrivals are Poisson (exponential gaps)
    /// (default 2000).
    pub iops: f64,
    /// RNG seed (Xoshiro256++), default 42. Same parameters → byte-identical file.
    pub seed: u64,
    /// Address skew: 0 (default) draws offsets uniformly; s > 0 draws the `align_bytes` slot
    /// of a request from a Zipf distribution with exponent s over the span's slots, rank r at
    /// offset (r − 1) · align_bytes (the hottest addresses are the lowest; FlexECC's R_75 /
    /// R_90 micro-workloads need a skewed working set so that an SSD cache hits).
    pub zipf_exponent: f64,
}

impl Default for GenParams {
    fn default() -> Self {
        GenParams {
            requests: 1_000_000,
            span_bytes: 16 << 30,
            align_bytes: 4096,
            write_fraction: 0.7,
            sizes_bytes: vec![4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10],
            iops: 2000.0,
            seed: 42,
            zipf_exponent: 0.0,
        }
    }
}

fn invalid(path: &Path, option: &'static str, msg: String) -> TraceError {
    TraceError::InvalidOption {
        file: path.to_path_buf(),
        option,
        msg,
    }
}

impl GenParams {
    fn validate(&self, out: &Path) -> Result<(), TraceError> {
        if self.requests == 0 {
            return Err(invalid(
                out,
                "requests",
                "value 0; expected at least 1".into(),
            ));
        }
        if self.align_bytes == 0 {
            return Err(invalid(out, "align_bytes", "value 0; expected > 0".into()));
        }
        if !(0.0..=1.0).contains(&self.write_fraction) {
            return Err(invalid(
                out,
                "write_fraction",
                format!("value {}; expected 0..=1", self.write_fraction),
            ));
        }
        if !(self.iops.is_finite() && self.iops > 0.0) {
            return Err(invalid(
                out,
                "iops",
                format!("value {}; expected a finite rate > 0", self.iops),
            ));
        }
        if !(self.zipf_exponent.is_finite() && (0.0..=10.0).contains(&self.zipf_exponent)) {
            return Err(invalid(
                out,
                "zipf_exponent",
                format!(
                    "value {}; expected 0..=10 (0 = uniform)",
                    self.zipf_exponent
                ),
            ));
        }
        if self.sizes_bytes.is_empty() {
            return Err(invalid(
                out,
                "sizes_bytes",
                "empty; expected at least one size".into(),
            ));
        }
        for &s in &self.sizes_bytes {
            if s == 0 || s > self.span_bytes {
                return Err(invalid(
                    out,
                    "sizes_bytes",
                    format!(
                        "value {s}; expected 0 < size <= span_bytes ({})",
                        self.span_bytes
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Write a synthetic trace to `out_path` as canonical CSV (gzip if the name ends in `.gz`):
/// Poisson arrivals at `iops` starting at 0 ns, op write with probability `write_fraction`,
/// size uniform over `sizes_bytes`, offset uniform over the multiples of `align_bytes` with
/// `offset + size <= span_bytes` (or Zipf-distributed with `zipf_exponent` > 0, clamped to the
/// same bound). Returns the number of requests written.
///
/// Errors: [`TraceError::InvalidOption`] naming the bad parameter; [`TraceError::Io`].
pub fn generate(params: &GenParams, out_path: &Path) -> Result<u64, TraceError> {
    params.validate(out_path)?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(params.seed);
    let exp = Exp::new(params.iops)
        .map_err(|e| invalid(out_path, "iops", format!("value {}: {e}", params.iops)))?;
    let zipf = if params.zipf_exponent > 0.0 {
        let slots = (params.span_bytes / params.align_bytes).max(1);
        Some(Zipf::new(slots, params.zipf_exponent).map_err(|e| {
            invalid(
                out_path,
                "zipf_exponent",
                format!("{}: {e}", params.zipf_exponent),
            )
        })?)
    } else {
        None
    };
    let sink = FileSink::create(out_path)?;
    let mut w = CanonicalWriter::new(sink, out_path)?;
    let mut t_s = 0.0f64;
    for i in 0..params.requests {
        if i > 0 {
            t_s += exp.sample(&mut rng);
        }
        let op = if rng.gen_bool(params.write_fraction) {
            Op::Write
        } else {
            Op::Read
        };
        let size = params.sizes_bytes[rng.gen_range(0..params.sizes_bytes.len())];
        let slots = (params.span_bytes - size) / params.align_bytes;
        let slot = match &zipf {
            Some(z) => (z.sample(&mut rng) as u64 - 1).min(slots),
            None => rng.gen_range(0..=slots),
        };
        let offset = slot * params.align_bytes;
        w.write(&HostRequest {
            arrival_ns: (t_s * 1e9) as u64,
            op,
            offset_bytes: offset,
            len_bytes: size,
        })?;
    }
    let n = w.written;
    w.finish()?.close(out_path)?;
    Ok(n)
}
