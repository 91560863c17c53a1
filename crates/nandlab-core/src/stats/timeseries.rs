//! Optional per-interval time series of a replay (`[stats] timeseries = "PATH"`,
//! `timeseries_interval_ms`, default 1000 ms): one CSV row per interval of simulated time with
//! host throughput, mean and p99 response, time-averaged queue depth, GC page moves, erases and
//! die utilisation. Off by default; when off the engine pays one `Option` test per completed
//! host request and per flash transaction, and the report is byte-identical.
//!
//! What each column counts (interval `i` covers `[i·Δ, (i+1)·Δ)` of simulated time, `Δ` the
//! interval; the last row ends at the end of the simulation and is shorter):
//!
//! | column | unit | meaning |
//! |---|---|---|
//! | `start_s`, `duration_s` | s | the interval |
//! | `reads`, `writes` | requests | host requests that completed in the interval |
//! | `bytes` | bytes | their bytes |
//! | `throughput_rps` | requests/s | `(reads + writes) / duration_s` |
//! | `throughput_mib_s` | MiB/s | `bytes / 2^20 / duration_s` |
//! | `mean_us`, `p99_us`, `max_us` | µs | response time of the requests that completed in the interval (p99 and max from an HDR histogram with 2 significant digits; empty in intervals without completions) |
//! | `queue_depth` | requests | time average over the interval of the host requests in the device (arrived, not completed): exact, each request's `[arrival, completion)` spread over the intervals it spans |
//! | `gc_moves` | pages | GC page relocations that completed in the interval |
//! | `erases` | blocks | block erases (all sources) that completed in the interval |
//! | `die_utilization` | 0–1 | busy time of all dies in the interval over `dies · duration_s` (a transaction's busy time is spread over the intervals it spans, so this is exact and never above 1) |
//!
//! Counts are attributed to the interval in which the operation *completes* (the report's
//! `gc.pages_moved` and `flash.erases` count operations when they are dispatched; their totals
//! are equal once the replay has drained). Rows stay in memory until the end of the replay
//! (about 100 bytes per interval, at most [`MAX_INTERVALS`] intervals).

use std::io::Write;

use hdrhistogram::Histogram;

use crate::config::StatsConfig;

/// Most intervals one run may have (about 100 MiB of rows).
pub const MAX_INTERVALS: u64 = 1 << 20;

/// Default interval, ms.
pub const DEFAULT_INTERVAL_MS: f64 = 1000.0;

#[derive(Clone, Copy, Debug, Default)]
struct Row {
    reads: u64,
    writes: u64,
    bytes: u64,
    resp_sum_ns: u64,
    p99_ns: u64,
    max_ns: u64,
    /// In-flight host-request time inside this interval from requests that start or end in it.
    inflight_partial_ns: i64,
    /// Change of the number of requests spanning whole intervals, from this interval on.
    inflight_step: i64,
    /// Die busy time inside this interval from transactions that start or end in it.
    busy_partial_ns: i64,
    /// Change of the number of transactions spanning whole intervals, from this interval on.
    busy_step: i64,
    gc_moves: u64,
    erases: u64,
}

/// The time-series state (see the module doc).
#[derive(Clone, Debug)]
pub struct TimeSeries {
    path: String,
    interval_ns: u64,
    dies: u32,
    rows: Vec<Row>,
    /// Response times of the completions of interval `cur`.
    hist: Histogram<u64>,
    cur: usize,
    /// Latest time seen beyond [`MAX_INTERVALS`] (0: none).
    overflow_ns: u64,
}

impl TimeSeries {
    /// The time series `cfg` asks for (`None` when `stats.timeseries` is not set). `dies` is
    /// the device's die count.
    pub fn from_config(cfg: &StatsConfig, dies: u32) -> Option<Box<TimeSeries>> {
        let path = cfg.timeseries.clone()?;
        let ms = cfg.timeseries_interval_ms.unwrap_or(DEFAULT_INTERVAL_MS);
        Some(Box::new(TimeSeries {
            path,
            interval_ns: ((ms * 1e6).round() as u64).max(1),
            dies: dies.max(1),
            rows: Vec::with_capacity(1024),
            // 1 ns … 1 hour, 2 significant digits (per-interval p99 to within 1 %).
            hist: Histogram::new_with_bounds(1, 3_600_000_000_000, 2)
                .map(|mut h| {
                    // Grows past 1 hour on demand: no response is clamped.
                    h.auto(true);
                    h
                })
                .expect("static bounds are valid"),
            cur: 0,
            overflow_ns: 0,
        }))
    }

    /// The output path (`stats.timeseries`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Make rows `..=i` exist; false (and remember `t_ns`) beyond [`MAX_INTERVALS`].
    #[inline]
    fn reach(&mut self, i: u64, t_ns: u64) -> bool {
        if i + 1 >= MAX_INTERVALS {
            self.overflow_ns = self.overflow_ns.max(t_ns);
            return false;
        }
        if i as usize + 1 >= self.rows.len() {
            self.rows.resize(i as usize + 2, Row::default());
        }
        true
    }

    /// Spread `[a, b)` over the intervals it covers through `partial`/`step` of the rows.
    #[inline]
    fn spread(&mut self, a: u64, b: u64, busy: bool) {
        let d = self.interval_ns;
        let (ia, ib) = (a / d, b / d);
        if !self.reach(ib, b) {
            return;
        }
        let (ia, ib) = (ia as usize, ib as usize);
        let add = |r: &mut Row, ns: u64, step: i64| {
            if busy {
                r.busy_partial_ns += ns as i64;
                r.busy_step += step;
            } else {
                r.inflight_partial_ns += ns as i64;
                r.inflight_step += step;
            }
        };
        if ia == ib {
            add(&mut self.rows[ia], b - a, 0);
        } else {
            add(&mut self.rows[ia], (ia as u64 + 1) * d - a, 0);
            add(&mut self.rows[ia + 1], 0, 1);
            add(&mut self.rows[ib], b - ib as u64 * d, -1);
        }
    }

    fn flush_hist(&mut self) {
        if !self.hist.is_empty() {
            if let Some(r) = self.rows.get_mut(self.cur) {
                r.p99_ns = self.hist.value_at_quantile(0.99);
                r.max_ns = self.hist.max();
            }
            self.hist.reset();
        }
    }

    /// A host request completed at `done_ns` (the engine's current time; completions come in
    /// non-decreasing time order).
    ///
    /// `#[cold]` and never inlined: the engine's hot path only tests the `Option` holding the
    /// time series, and the call (and its register spills) stay off that path when it is off.
    #[cold]
    #[inline(never)]
    pub fn host_done(&mut self, read: bool, arrival_ns: u64, done_ns: u64, len_bytes: u64) {
        self.spread(arrival_ns, done_ns, false);
        let i = done_ns / self.interval_ns;
        if !self.reach(i, done_ns) {
            return;
        }
        let i = i as usize;
        if i != self.cur {
            self.flush_hist();
            self.cur = i;
        }
        let resp = done_ns - arrival_ns;
        let r = &mut self.rows[i];
        if read {
            r.reads += 1;
        } else {
            r.writes += 1;
        }
        r.bytes += len_bytes;
        r.resp_sum_ns += resp;
        // Cannot fail: the histogram resizes to any value (0 is recorded as 1 ns).
        let _ = self.hist.record(resp.max(1));
    }

    /// A flash transaction held its die from `start_ns` to `end_ns`; `erase` / `gc_move` say
    /// whether it was a block erase / a GC page relocation. Cold, like [`Self::host_done`].
    #[cold]
    #[inline(never)]
    pub fn flash_done(&mut self, start_ns: u64, end_ns: u64, erase: bool, gc_move: bool) {
        self.spread(start_ns, end_ns, true);
        if erase || gc_move {
            let i = end_ns / self.interval_ns;
            if self.reach(i, end_ns) {
                let r = &mut self.rows[i as usize];
                r.erases += erase as u64;
                r.gc_moves += gc_move as u64;
            }
        }
    }

    /// Write the CSV (gzip when the path ends in `.gz`). `end_ns` is the end of the simulation
    /// (the last row ends there).
    ///
    /// # Errors
    /// A message naming `stats.timeseries` when the file cannot be written, or
    /// `stats.timeseries_interval_ms` when the run spans more than [`MAX_INTERVALS`].
    pub fn write(mut self, end_ns: u64) -> Result<usize, String> {
        let d = self.interval_ns;
        if self.overflow_ns > 0 {
            let need_ms = (self.overflow_ns as f64 / MAX_INTERVALS as f64 / 1e6).ceil();
            return Err(format!(
                "stats.timeseries_interval_ms = {}: the replay spans {:.1} s of simulated time, \
                 more than {MAX_INTERVALS} intervals; use at least {need_ms} ms",
                d as f64 / 1e6,
                self.overflow_ns as f64 / 1e9
            ));
        }
        self.flush_hist();
        let n = (self.rows.len().saturating_sub(1)).max(end_ns.div_ceil(d) as usize);
        self.rows.resize(n.max(1), Row::default());
        let err = |e: std::io::Error| format!("stats.timeseries: cannot write {}: {e}", self.path);
        let f = std::fs::File::create(&self.path).map_err(err)?;
        let mut w: Box<dyn Write> = if self.path.ends_with(".gz") {
            Box::new(flate2::write::GzEncoder::new(
                std::io::BufWriter::new(f),
                flate2::Compression::fast(),
            ))
        } else {
            Box::new(std::io::BufWriter::new(f))
        };
        writeln!(
            w,
            "start_s,duration_s,reads,writes,bytes,throughput_rps,throughput_mib_s,mean_us,\
             p99_us,max_us,queue_depth,gc_moves,erases,die_utilization"
        )
        .map_err(err)?;
        let (mut inflight, mut busy) = (0i64, 0i64);
        let rows = self.rows.len();
        for (i, r) in self.rows.iter().enumerate() {
            inflight += r.inflight_step;
            busy += r.busy_step;
            let start = i as u64 * d;
            let dur_ns = if i + 1 == rows && end_ns > start {
                (end_ns - start).min(d)
            } else {
                d
            };
            let dur = dur_ns as f64 / 1e9;
            let done = r.reads + r.writes;
            // Response-time columns are empty (null) in intervals without completions.
            let (mean_us, p99_us, max_us) = if done == 0 {
                (String::new(), String::new(), String::new())
            } else {
                (
                    (r.resp_sum_ns as f64 / done as f64 / 1e3).to_string(),
                    (r.p99_ns as f64 / 1e3).to_string(),
                    (r.max_ns as f64 / 1e3).to_string(),
                )
            };
            let qd = (r.inflight_partial_ns + inflight * d as i64) as f64 / dur_ns as f64;
            let util =
                (r.busy_partial_ns + busy * d as i64) as f64 / (dur_ns as f64 * self.dies as f64);
            writeln!(
                w,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                start as f64 / 1e9,
                dur,
                r.reads,
                r.writes,
                r.bytes,
                done as f64 / dur,
                r.bytes as f64 / (1u64 << 20) as f64 / dur,
                mean_us,
                p99_us,
                max_us,
                qd,
                r.gc_moves,
                r.erases,
                util
            )
            .map_err(err)?;
        }
        w.flush().map_err(err)?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(interval_ms: f64) -> TimeSeries {
        let cfg = StatsConfig {
            timeseries: Some("unused".into()),
            timeseries_interval_ms: Some(interval_ms),
            ..StatsConfig::default()
        };
        *TimeSeries::from_config(&cfg, 2).unwrap()
    }

    /// Area per interval from the partial/step encoding.
    fn areas(t: &TimeSeries, busy: bool) -> Vec<i64> {
        let mut run = 0;
        t.rows
            .iter()
            .map(|r| {
                let (p, s) = if busy {
                    (r.busy_partial_ns, r.busy_step)
                } else {
                    (r.inflight_partial_ns, r.inflight_step)
                };
                run += s;
                p + run * t.interval_ns as i64
            })
            .collect()
    }

    #[test]
    fn spread_is_exact_over_interval_boundaries() {
        let mut t = ts(1e-3); // 1 µs intervals
        t.spread(500, 3_200, true); // 500 + 1000 + 1000 + 200
        t.spread(1_000, 2_000, true); // exactly interval 1
        t.spread(2_100, 2_300, true);
        let a = areas(&t, true);
        assert_eq!(&a[..4], &[500, 2_000, 1_200, 200]);
        assert_eq!(a.iter().sum::<i64>(), 2_700 + 1_000 + 200);
    }

    #[test]
    fn overflow_is_an_error_naming_the_key() {
        let mut t = ts(1e-6); // 1 ns intervals
        t.host_done(true, 0, MAX_INTERVALS * 3, 4096);
        let e = t.write(MAX_INTERVALS * 3).unwrap_err();
        assert!(e.contains("stats.timeseries_interval_ms"), "{e}");
    }
}
