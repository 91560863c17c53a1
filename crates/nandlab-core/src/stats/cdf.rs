//! Optional latency CDFs in the report (`[stats] latency_cdf = true`): for each host request
//! class (`all`, `read`, `write`) the response time at [`CDF_QUANTILES`], read from the same HDR
//! histograms as the report's percentiles (3 significant digits), ending at the exact max. Built at report time, so it
//! costs nothing per request; off by default (the report is then unchanged).
//!
//! Report shape: `host.cdf = {"quantiles": [q…], "all_us": [v…], "read_us": [v…],
//! "write_us": [v…]}`: `v[i]` is the response time (µs) at or below which a fraction `q[i]`
//! of the class's requests completed (empty lists for an empty class).

use serde_json::{json, Value};

use super::{Latency, Stats};

/// Quantiles of the CDF: fine in the tail (1 − 10⁻⁴ … 1), every percent in the body.
pub const CDF_QUANTILES: &[f64] = &[
    0.0, 0.001, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1, 0.12, 0.14, 0.16,
    0.18, 0.2, 0.22, 0.24, 0.26, 0.28, 0.3, 0.32, 0.34, 0.36, 0.38, 0.4, 0.42, 0.44, 0.46, 0.48,
    0.5, 0.52, 0.54, 0.56, 0.58, 0.6, 0.62, 0.64, 0.66, 0.68, 0.7, 0.72, 0.74, 0.76, 0.78, 0.8,
    0.82, 0.84, 0.86, 0.88, 0.9, 0.91, 0.92, 0.93, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99, 0.995,
    0.999, 0.9995, 0.9999, 1.0,
];

impl Latency {
    /// Response time (µs) at each of [`CDF_QUANTILES`] (empty when there are no samples).
    pub fn cdf_us(&self) -> Vec<f64> {
        if self.count == 0 {
            return Vec::new();
        }
        // The last point is the exact max (as `max_us`); the histogram's bucket values above
        // it (rounding up within 3 significant digits) are capped at it.
        CDF_QUANTILES
            .iter()
            .map(|&q| {
                let v = if q >= 1.0 {
                    self.max_ns
                } else if q <= 0.0 {
                    self.hist.min()
                } else {
                    self.hist.value_at_quantile(q)
                };
                v.min(self.max_ns) as f64 / 1000.0
            })
            .collect()
    }
}

/// The `host.cdf` section (see the module doc).
pub fn cdf_report(s: &Stats) -> Value {
    let (rd, wr) = (s.reads(), s.writes());
    let all = Latency::merged(&rd.response, &wr.response);
    json!({
        "quantiles": CDF_QUANTILES,
        "all_us": all.cdf_us(),
        "read_us": rd.response.cdf_us(),
        "write_us": wr.response.cdf_us(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_is_monotone_and_ends_at_the_max() {
        let mut l = Latency::default();
        for v in 1..=10_000u64 {
            l.record(v * 100);
        }
        let c = l.cdf_us();
        assert_eq!(c.len(), CDF_QUANTILES.len());
        assert!(c.windows(2).all(|w| w[0] <= w[1]));
        assert!((c[c.len() - 1] - 1000.0).abs() <= 1.0);
        let med = c[CDF_QUANTILES.iter().position(|&q| q == 0.5).unwrap()];
        assert!((med - 500.0).abs() <= 1.0, "{med}");
        assert!(Latency::default().cdf_us().is_empty());
    }
}
