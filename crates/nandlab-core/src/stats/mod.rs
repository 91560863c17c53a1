//! Statistics: counters and HDR latency histograms, declared beside what they count, and the
//! JSON report (`engine::report`) built from them.
//!
//! Latencies are recorded in ns into `hdrhistogram` histograms (3 significant digits: a
//! percentile is within 0.1 % of the exact value), and reported in µs: mean (exact, from the
//! sum), p50, p90, p99, p99.9 (from the histogram) and max (exact, tracked beside the
//! histogram). A histogram covers 1 ns … 1 hour from the start and grows its range when a
//! sample lies beyond it (a saturated run's responses of hours), so no sample is ever clamped
//! and every percentile is right for any latency the simulation produces. A distribution without samples
//! (the writes of a read-only trace) has no mean, percentiles or max: they are `None`, `null`
//! in the JSON report, never 0.

use hdrhistogram::Histogram;
use serde::Serialize;

pub mod cdf;
pub mod timeseries;

pub use timeseries::TimeSeries;

use crate::scheme::Source;

/// The range a histogram covers from the start (1 hour); it grows past it on demand.
const HIST_INITIAL_MAX_NS: u64 = 3_600_000_000_000;

/// One latency distribution.
#[derive(Clone, Debug)]
pub struct Latency {
    hist: Histogram<u64>,
    sum_ns: u128,
    count: u64,
    /// The largest sample, exact (the histogram's max is rounded to its bucket).
    max_ns: u64,
}

impl Default for Latency {
    fn default() -> Self {
        let mut hist =
            Histogram::new_with_bounds(1, HIST_INITIAL_MAX_NS, 3).expect("static bounds are valid");
        hist.auto(true);
        Latency {
            hist,
            sum_ns: 0,
            count: 0,
            max_ns: 0,
        }
    }
}

/// Summary of a [`Latency`], µs; the statistics are `None` (JSON `null`) without samples.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LatencySummary {
    /// Samples.
    pub count: u64,
    /// Exact mean, µs.
    pub mean_us: Option<f64>,
    /// Median, µs.
    pub p50_us: Option<f64>,
    /// 90th percentile, µs.
    pub p90_us: Option<f64>,
    /// 99th percentile, µs.
    pub p99_us: Option<f64>,
    /// 99.9th percentile, µs.
    pub p999_us: Option<f64>,
    /// Maximum, µs (exact).
    pub max_us: Option<f64>,
}

impl Latency {
    /// Record one sample, ns.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.sum_ns += ns as u128;
        self.count += 1;
        self.max_ns = self.max_ns.max(ns);
        // Cannot fail: the histogram resizes to any u64 value it is given (0 is recorded as
        // 1 ns, its lowest discernible value).
        let _ = self.hist.record(ns.max(1));
    }

    /// Exact mean in µs (0 when empty).
    pub fn mean_us(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64 / 1000.0
        }
    }

    /// The distribution of `a`'s and `b`'s samples together (for the all-requests class,
    /// built at report time instead of recorded per request).
    pub fn merged(a: &Latency, b: &Latency) -> Latency {
        let mut hist = a.hist.clone();
        // Cannot fail: the histogram resizes to `b`'s range.
        let _ = hist.add(&b.hist);
        Latency {
            hist,
            sum_ns: a.sum_ns + b.sum_ns,
            count: a.count + b.count,
            max_ns: a.max_ns.max(b.max_ns),
        }
    }

    /// Add every sample of `other` (exact, as [`Latency::merged`]).
    pub fn absorb(&mut self, other: &Latency) {
        if other.count == 0 {
            return;
        }
        // Cannot fail: the histogram resizes to `other`'s range.
        let _ = self.hist.add(&other.hist);
        self.sum_ns += other.sum_ns;
        self.count += other.count;
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// The distribution of the samples of every part together, without copying when at most
    /// one part has samples (the first part when none has). Exact: the same counts, sum, max
    /// and histogram as recording every sample into one distribution.
    pub fn merged_all<'a>(parts: &[&'a Latency]) -> std::borrow::Cow<'a, Latency> {
        let mut some = parts.iter().filter(|l| l.count > 0);
        let Some(first) = some.next() else {
            return std::borrow::Cow::Borrowed(parts[0]);
        };
        let mut out = std::borrow::Cow::Borrowed(*first);
        for l in some {
            out = std::borrow::Cow::Owned(Latency::merged(&out, l));
        }
        out
    }

    /// Summary in µs (statistics `None` without samples).
    pub fn summary(&self) -> LatencySummary {
        let some = self.count > 0;
        // A bucket's upper edge can lie above the largest sample: no percentile above the max.
        let q =
            |p: f64| some.then(|| self.hist.value_at_quantile(p).min(self.max_ns) as f64 / 1000.0);
        LatencySummary {
            count: self.count,
            mean_us: some.then(|| self.mean_us()),
            p50_us: q(0.5),
            p90_us: q(0.9),
            p99_us: q(0.99),
            p999_us: q(0.999),
            max_us: some.then(|| self.max_ns as f64 / 1000.0),
        }
    }
}

/// Response, queue wait and service distributions of one request class.
#[derive(Clone, Debug, Default)]
pub struct ClassLatency {
    /// Response time = completion − arrival.
    pub response: Latency,
    /// Queue wait = response − service.
    pub wait: Latency,
    /// Service = the longest of the request's flash transactions from dispatch to completion.
    pub service: Latency,
}

impl ClassLatency {
    /// Add every sample of `other` (exact).
    pub fn absorb(&mut self, other: &ClassLatency) {
        self.response.absorb(&other.response);
        self.wait.absorb(&other.wait);
        self.service.absorb(&other.service);
    }

    /// Record one request.
    #[inline]
    pub fn record(&mut self, response_ns: u64, wait_ns: u64, service_ns: u64) {
        self.response.record(response_ns);
        self.wait.record(wait_ns);
        self.service.record(service_ns);
    }
}

/// One request class's distributions, borrowed or merged at report time
/// ([`Stats::reads`], [`Stats::writes`]).
pub struct ClassView<'a> {
    /// Response time.
    pub response: std::borrow::Cow<'a, Latency>,
    /// Queue wait.
    pub wait: std::borrow::Cow<'a, Latency>,
    /// Service.
    pub service: std::borrow::Cow<'a, Latency>,
}

impl<'a> ClassView<'a> {
    fn of(parts: &[&'a ClassLatency]) -> ClassView<'a> {
        let pick = |f: fn(&'a ClassLatency) -> &'a Latency| {
            let v: Vec<&'a Latency> = parts.iter().map(|c| f(c)).collect();
            Latency::merged_all(&v)
        };
        ClassView {
            response: pick(|c| &c.response),
            wait: pick(|c| &c.wait),
            service: pick(|c| &c.service),
        }
    }
}

/// Operation counts by source.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct BySource {
    /// Host requests.
    pub host: u64,
    /// Garbage collection.
    pub gc: u64,
    /// Data refresh.
    pub refresh: u64,
    /// Scheme migrations and rewrites.
    pub migration: u64,
    /// Scrubbing.
    pub scrub: u64,
    /// Translation pages of a cached mapping table (reported only with one).
    #[serde(skip_serializing_if = "is_zero")]
    pub mapping: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl BySource {
    /// Add one to `source`'s counter.
    #[inline]
    pub fn add(&mut self, source: Source) {
        match source {
            Source::Host => self.host += 1,
            Source::Gc => self.gc += 1,
            Source::Refresh => self.refresh += 1,
            Source::Migration => self.migration += 1,
            Source::Scrub => self.scrub += 1,
            Source::Mapping => self.mapping += 1,
        }
    }
    /// Sum over sources.
    pub fn total(&self) -> u64 {
        self.host + self.gc + self.refresh + self.migration + self.scrub + self.mapping
    }
}

/// Reliability-model counters (only with `reliability.model = "vth"`).
#[derive(Clone, Debug, Default)]
pub struct ReliabilityStats {
    /// Page reads whose RBER the model evaluated.
    pub reads: u64,
    /// Sum of their RBERs (for the mean).
    pub rber_sum: f64,
    /// Reads by number of extra LDPC soft-sensing levels (0 = hard decision / not LDPC).
    pub reads_by_soft_level: [u64; 16],
    /// Full page re-reads (LDPC `level_cost = "page_read"`, IDA §V-F read retries).
    pub read_retries: u64,
    /// Reads the code could not correct.
    pub uncorrectable: u64,
    /// Reads a detect-only code (CRC) found corrupted.
    pub detected_only: u64,
}

/// Counters of the device features of issue 13 (each reported only when its feature is on,
/// so reports of runs without them are unchanged).
#[derive(Clone, Debug, Default)]
pub struct DeviceStats {
    /// Read-modify-write: flash reads of mapped pages a partial-page host write merged into.
    pub rmw_reads: u64,
    /// Partial-page host writes to unmapped pages (programmed without a read).
    pub rmw_unmapped: u64,
    /// Multi-plane reads, programs and erases (operations of ≥ 2 planes).
    pub multi_plane_ops: [u64; 3],
    /// Transactions those operations served.
    pub multi_plane_txns: u64,
    /// Suspensions of programs and of erases by host reads.
    pub suspensions: [u64; 2],
    /// One-shot programming: program operations (word-line runs of host programs and of GC
    /// moves), and the pages they programmed.
    pub one_shot_ops: [u64; 2],
    /// Pages those operations programmed (host programs, GC moves).
    pub one_shot_pages: [u64; 2],
    /// Discard (TRIM) requests replayed.
    pub trim_requests: u64,
    /// Bytes they covered.
    pub trim_bytes: u64,
    /// Mapped pages they unmapped.
    pub trimmed_pages: u64,
    /// Superpage runs (`ftl.allocation = "superpage"`) of host-side programs and of GC moves.
    pub superpage_runs: [u64; 2],
    /// Data pages those runs programmed (host-side programs, GC moves).
    pub superpage_pages: [u64; 2],
    /// Of those, the pages programmed in runs over two planes or more.
    pub superpage_multi_plane_pages: [u64; 2],
    /// Pages padded (programmed with no data) to complete super-pages (host-side, GC).
    pub superpage_padded_pages: [u64; 2],
    /// Times a die held its host programs to fill a super-page (`ftl.superpage_wait_us`).
    pub superpage_holds: u64,
}

/// Counters the engine keeps while replaying.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Simulated time the last host request completed, ns.
    pub last_completion_ns: u64,
    /// Host reads without a cache tag. The class of all reads is [`Stats::reads`]: a tagged
    /// request is recorded once, under its tag ([`CachePathStats::by_tag`]), and the classes
    /// are merged from both at report time (issue 14: three histogram records per request
    /// instead of six).
    pub untagged_read: ClassLatency,
    /// Host writes without a cache tag (all writes: [`Stats::writes`]).
    pub untagged_write: ClassLatency,
    /// Host read pages.
    pub read_pages: u64,
    /// Host write pages.
    pub write_pages: u64,
    /// Host bytes read.
    pub read_bytes: u64,
    /// Host bytes written.
    pub write_bytes: u64,
    /// Host read pages of LPNs never written: served without a flash access.
    pub unmapped_read_pages: u64,
    /// Requests whose offset wrapped around the logical capacity.
    pub wrapped_requests: u64,
    /// Open-loop requests that waited in the host because `host.max_outstanding` were in the
    /// device.
    pub host_throttled: u64,
    /// Flash page reads by source.
    pub flash_reads: BySource,
    /// Flash page programs by source.
    pub flash_programs: BySource,
    /// Flash block erases by source.
    pub flash_erases: BySource,
    /// Programs per program-mode id.
    pub programs_by_mode: Vec<u64>,
    /// Reads per ECC id.
    pub reads_by_ecc: Vec<u64>,
    /// Reads per page type (LSB, CSB, MSB, TSB).
    pub reads_by_page_type: [u64; 4],
    /// GC victim selections.
    pub gc_invocations: u64,
    /// Valid pages GC relocated.
    pub gc_pages_moved: u64,
    /// Relocations skipped because the host overwrote the page first.
    pub gc_moves_cancelled: u64,
    /// Sum of victims' valid pages at selection.
    pub gc_victim_valid_sum: u64,
    /// Scheme-requested rewrites completed.
    pub rewrites: u64,
    /// Rewrites a host request waited for (`Action::Rewrite { wait: true }`), queued.
    pub sync_rewrites: u64,
    /// Device-feature counters (issue 13).
    pub device: DeviceStats,
    /// Busy time per die, ns.
    pub die_busy_ns: Vec<u64>,
    /// Busy time per channel, ns.
    pub channel_busy_ns: Vec<u64>,
    /// Events processed.
    pub events: u64,
    /// Reliability-model counters.
    pub reliability: ReliabilityStats,
    /// Data-refresh and IDA counters.
    pub refresh: RefreshStats,
    /// Per-region counters (reported only with `[regions]`).
    pub regions: RegionStats,
    /// Per-interval time series (`stats.timeseries`; `None` when off).
    pub timeseries: Option<Box<TimeSeries>>,
    /// Cache path, backend disk and fault counters.
    pub cache: CachePathStats,
}

/// Per-region counters and the flash-time breakdown of EFM Fig. 6 (only with `[regions]`).
///
/// Breakdown (our reading of Fig. 6, in flash time: the array, transfer and decode time of each
/// operation, without queueing): a host read served by a region with the lowest read latency at
/// the current wear stage, and a host write programmed into a region with the lowest program
/// latency, are "optimal"; other host reads / writes are "non-optimal R" / "non-optimal W";
/// scheme migrations (reads and programs) are "migration". GC and other background work are
/// counted apart.
#[derive(Clone, Debug, Default)]
pub struct RegionStats {
    /// Flash reads of pages in each region (all sources).
    pub reads: Vec<u64>,
    /// Host reads of pages in each region.
    pub host_reads: Vec<u64>,
    /// Page programs into each region (all sources).
    pub programs: Vec<u64>,
    /// Host page programs into each region.
    pub host_programs: Vec<u64>,
    /// Block erases in each region.
    pub erases: Vec<u64>,
    /// Flash time of host reads and writes in their optimal region, ns.
    pub optimal_ns: u64,
    /// Flash time of host reads outside a lowest-read-latency region, ns.
    pub nonoptimal_read_ns: u64,
    /// Flash time of host writes outside a lowest-program-latency region, ns.
    pub nonoptimal_write_ns: u64,
    /// Flash time of scheme migrations (reads and programs), ns.
    pub migration_ns: u64,
    /// Flash time of GC reads and programs, ns.
    pub gc_ns: u64,
    /// Flash time of other background reads and programs, ns.
    pub other_ns: u64,
}

impl RegionStats {
    /// Zeroed counters for `n` regions.
    pub fn new(n: usize) -> RegionStats {
        RegionStats {
            reads: vec![0; n],
            host_reads: vec![0; n],
            programs: vec![0; n],
            host_programs: vec![0; n],
            erases: vec![0; n],
            ..RegionStats::default()
        }
    }

    /// Add `ns` of flash time of work other than the host's to its part of the breakdown:
    /// migration, GC, or other.
    #[inline]
    pub fn add_background(&mut self, source: Source, ns: u64) {
        match source {
            Source::Migration => self.migration_ns += ns,
            Source::Gc => self.gc_ns += ns,
            _ => self.other_ns += ns,
        }
    }
}

/// Data-refresh counters (reported only while `[refresh]` is on).
#[derive(Clone, Debug, Default)]
pub struct RefreshStats {
    /// Refreshes started (blocks with valid data).
    pub blocks_refreshed: u64,
    /// Refreshes that voltage-adjusted at least one word line (the block became an IDA block).
    pub blocks_adjusted: u64,
    /// Due blocks with no valid data: skipped (their refresh clock restarts).
    pub skipped_empty: u64,
    /// Valid pages moved to a new block.
    pub pages_moved: u64,
    /// Moves skipped because the host overwrote the page first.
    pub moves_cancelled: u64,
    /// Word lines voltage-adjusted in place.
    pub wordlines_adjusted: u64,
    /// Valid pages left in place by adjustments (N_target).
    pub pages_adjusted: u64,
    /// Adjusted pages read back after the adjustment (IDA Fig. 7b step 5).
    pub readbacks: u64,
    /// Adjusted pages found corrupted and written to a new block (N_error, step 8).
    pub pages_rewritten: u64,
    /// Reads of adjusted pages, by the page type they read as (LSB, CSB, MSB, TSB).
    pub adjusted_reads_by_type: [u64; 4],
    /// Host reads of MSB pages by validity of the lower pages of their word line (IDA Fig. 4):
    /// index bit 0 = LSB valid, bit 1 = CSB valid (TLC; MLC uses bit 0 only).
    pub host_msb_reads_by_lower_valid: [u64; 4],
    /// Host reads of MSB pages served at an adjusted (faster) latency.
    pub host_msb_reads_adjusted: u64,
    /// Pages moved (planned moves and corrupted rewrites) by source page type and the type of
    /// the page they land on: `[from][to]`, LSB, CSB, MSB, TSB.
    pub moves_by_page_type: [[u64; 4]; 4],
}

/// `{from: {to: count}}` over the `bits` page types of a cell, from a `[from][to]` matrix of
/// page relocations (IDA §III-C: where moved LSB data lands).
pub fn page_type_matrix_json(m: &[[u64; 4]; 4], bits: usize) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    for from in 0..bits {
        let f = crate::flash::PageType::of_bit(from, bits);
        let mut row = serde_json::Map::new();
        for to in 0..bits {
            let t = crate::flash::PageType::of_bit(to, bits);
            row.insert(t.name().into(), m[f as usize][t as usize].into());
        }
        out.insert(f.name().into(), serde_json::Value::Object(row));
    }
    serde_json::Value::Object(out)
}

/// Erase-count distribution.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct EraseDistribution {
    /// Minimum erase count over blocks.
    pub min: u32,
    /// Mean.
    pub mean: f64,
    /// Maximum.
    pub max: u32,
    /// Population standard deviation.
    pub std: f64,
}

impl EraseDistribution {
    /// Summarise per-block erase counts.
    pub fn of(counts: &[u32]) -> EraseDistribution {
        if counts.is_empty() {
            return EraseDistribution {
                min: 0,
                mean: 0.0,
                max: 0,
                std: 0.0,
            };
        }
        let n = counts.len() as f64;
        let mean = counts.iter().map(|&c| c as f64).sum::<f64>() / n;
        let var = counts
            .iter()
            .map(|&c| (c as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        EraseDistribution {
            min: *counts.iter().min().unwrap_or(&0),
            mean,
            max: *counts.iter().max().unwrap_or(&0),
            std: var.sqrt(),
        }
    }
}

/// The `host` section of the report (stable field names: scripts depend on them).
#[derive(Clone, Debug, Serialize)]
pub struct HostReport {
    /// Host requests completed.
    pub requests: u64,
    /// Read requests.
    pub reads: u64,
    /// Write requests.
    pub writes: u64,
    /// Read pages.
    pub read_pages: u64,
    /// Write pages.
    pub write_pages: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Read pages of never-written LPNs (no flash access).
    pub unmapped_read_pages: u64,
    /// Requests whose offset wrapped (with `ftl.wrap_offsets`).
    pub wrapped_requests: u64,
    /// Requests that waited in the host for a free queue slot (`host.max_outstanding`).
    pub throttled_requests: u64,
    /// Mean response of all requests, µs.
    pub mean_us: Option<f64>,
    /// Mean read response, µs.
    pub read_mean_us: Option<f64>,
    /// Mean write response, µs.
    pub write_mean_us: Option<f64>,
    /// p99 read response, µs.
    pub read_p99_us: Option<f64>,
    /// p99 write response, µs.
    pub write_p99_us: Option<f64>,
    /// Response distribution of all requests.
    pub all: LatencySummary,
    /// Response distribution of reads.
    pub read: LatencySummary,
    /// Response distribution of writes.
    pub write: LatencySummary,
    /// Queue-wait distributions.
    pub wait: ClassSummaries,
    /// Service distributions.
    pub service: ClassSummaries,
}

/// Per-class summaries.
#[derive(Clone, Debug, Serialize)]
pub struct ClassSummaries {
    /// All requests.
    pub all: LatencySummary,
    /// Reads.
    pub read: LatencySummary,
    /// Writes.
    pub write: LatencySummary,
}

impl Stats {
    /// Record a completed host request: `write` (else a read), its cache tag (the tag's
    /// operation is the request's, [`crate::host::cache::CacheOp::op`]), response, queue
    /// wait and service, ns. Each request goes into one [`ClassLatency`].
    #[inline]
    pub fn record_host(
        &mut self,
        write: bool,
        tag: crate::host::cache::CacheOp,
        response_ns: u64,
        wait_ns: u64,
        service_ns: u64,
    ) {
        let c = if tag != crate::host::cache::CacheOp::None {
            &mut self.cache.by_tag[tag as usize]
        } else if write {
            &mut self.untagged_write
        } else {
            &mut self.untagged_read
        };
        c.record(response_ns, wait_ns, service_ns);
    }

    /// Count a host request reaching the device: `op`, its bytes and the pages it spans.
    #[inline]
    pub fn count_request(&mut self, op: crate::trace::Op, len_bytes: u64, pages: u64) {
        use crate::trace::Op;
        match op {
            Op::Read => {
                self.read_bytes += len_bytes;
                self.read_pages += pages;
            }
            Op::Write => {
                self.write_bytes += len_bytes;
                self.write_pages += pages;
            }
            Op::Trim => {}
        }
    }

    /// All host reads: the untagged ones and the read tags (HostRead, FlushRead).
    pub fn reads(&self) -> ClassView<'_> {
        use crate::host::cache::CacheOp;
        let t = &self.cache.by_tag;
        ClassView::of(&[
            &self.untagged_read,
            &t[CacheOp::HostRead as usize],
            &t[CacheOp::FlushRead as usize],
        ])
    }

    /// All host writes: the untagged ones and the write tags (DirtyWrite, CleanWrite).
    pub fn writes(&self) -> ClassView<'_> {
        use crate::host::cache::CacheOp;
        let t = &self.cache.by_tag;
        ClassView::of(&[
            &self.untagged_write,
            &t[CacheOp::DirtyWrite as usize],
            &t[CacheOp::CleanWrite as usize],
        ])
    }
}

/// Build the `host` section.
pub fn host_report(s: &Stats) -> HostReport {
    let (rd, wr) = (s.reads(), s.writes());
    let r = rd.response.summary();
    let w = wr.response.summary();
    let a = Latency::merged(&rd.response, &wr.response).summary();
    HostReport {
        requests: a.count,
        reads: r.count,
        writes: w.count,
        read_pages: s.read_pages,
        write_pages: s.write_pages,
        read_bytes: s.read_bytes,
        write_bytes: s.write_bytes,
        unmapped_read_pages: s.unmapped_read_pages,
        wrapped_requests: s.wrapped_requests,
        throttled_requests: s.host_throttled,
        mean_us: a.mean_us,
        read_mean_us: r.mean_us,
        write_mean_us: w.mean_us,
        read_p99_us: r.p99_us,
        write_p99_us: w.p99_us,
        wait: ClassSummaries {
            all: Latency::merged(&rd.wait, &wr.wait).summary(),
            read: rd.wait.summary(),
            write: wr.wait.summary(),
        },
        service: ClassSummaries {
            all: Latency::merged(&rd.service, &wr.service).summary(),
            read: rd.service.summary(),
            write: wr.service.summary(),
        },
        all: a,
        read: r,
        write: w,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_summary_is_exact_mean_and_close_percentiles() {
        let mut l = Latency::default();
        for v in 1..=1000u64 {
            l.record(v * 1000);
        }
        let s = l.summary();
        assert_eq!(s.count, 1000);
        let (mean, p50) = (s.mean_us.unwrap(), s.p50_us.unwrap());
        assert!((mean - 500.5).abs() < 1e-9);
        assert!((p50 - 500.0).abs() <= 1.0, "{p50}");
        assert!((s.p99_us.unwrap() - 990.0).abs() <= 1.0, "{:?}", s.p99_us);
        assert!((s.max_us.unwrap() - 1000.0).abs() <= 1.0);
    }

    #[test]
    fn merging_parts_equals_recording_into_one() {
        // Issue 14: the read/write classes are merged from per-tag distributions at report
        // time; that must be exactly the distribution of recording every sample once.
        let mut one = Latency::default();
        let mut parts = [Latency::default(), Latency::default(), Latency::default()];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Spread over ns … hours, some above the histogram's 1-hour bound.
            let v = (x % 5_000_000_000_000) >> (x % 40);
            one.record(v);
            parts[(i % 7 % 3) as usize].record(v);
        }
        let refs: Vec<&Latency> = parts.iter().collect();
        let m = Latency::merged_all(&refs);
        assert_eq!(m.summary(), one.summary());
        assert_eq!(m.cdf_us(), one.cdf_us());
        // Empty parts are skipped without a copy; all empty gives an empty distribution.
        let e = Latency::default();
        assert!(matches!(
            Latency::merged_all(&[&e, &parts[1], &e]),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(Latency::merged_all(&[&e, &e]).summary().count, 0);
    }

    #[test]
    fn a_distribution_without_samples_has_no_statistics() {
        let s = Latency::default().summary();
        assert_eq!(s.count, 0);
        assert_eq!(
            (s.mean_us, s.p50_us, s.p99_us, s.max_us),
            (None, None, None, None)
        );
        let j = serde_json::to_value(&s).unwrap();
        assert!(j["mean_us"].is_null() && j["p90_us"].is_null(), "{j}");
    }

    #[test]
    fn erase_distribution() {
        let d = EraseDistribution::of(&[1, 3, 5]);
        assert_eq!((d.min, d.max), (1, 5));
        assert!((d.mean - 3.0).abs() < 1e-12);
        assert!((d.std - (8.0f64 / 3.0).sqrt()).abs() < 1e-12);
    }
}

/// Counters of the SSD-as-cache path (`[cache]`, FlexECC), of the backend disk and of fault
/// injection (`[faults]`). Reported (section `cache`) only when one of them is on, so reports
/// of plain runs are unchanged.
#[derive(Clone, Debug, Default)]
pub struct CachePathStats {
    /// Latency per cache tag ([`crate::host::cache::CacheOp`] order: untagged, host_read,
    /// flush_read, dirty_write, clean_write).
    pub by_tag: [ClassLatency; 5],
    /// Flash page reads of host-path requests (any tag) per ECC id of the page read
    /// (FlexECC Table 3 BCH_READ / CRC_READ).
    pub host_reads_by_ecc: Vec<u64>,
    /// GC relocations per (source page ECC id, destination ECC id): entry `src · n + dst`
    /// (Table 3 CRC_MOVED, BCH2CRC, BCH_MOVED).
    pub gc_moves_by_ecc: Vec<u64>,
    /// Die time of GC relocations and erases (FlexECC Fig. 5 "cleaning time"), ns.
    pub cleaning_ns: u64,
    /// Undetected corrupted pages of a detect-only code read by the host: served again from
    /// the backend disk (Table 4 "Disk Access").
    pub disk_accesses: u64,
    /// Host reads of pages already known corrupted: served from the backend disk only.
    pub known_corrupt_disk_reads: u64,
    /// Corrupted pages of a correcting code read by the host, first read only (Table 4 "BCH
    /// Decoded").
    pub corrected_reads: u64,
    /// Host reads of copies with more errors than their correcting code corrects, served from
    /// the backend disk (`[faults] mode = "model"` only).
    pub uncorrectable_reads: u64,
    /// Backend fetches queued (disk read then CleanWrite), by reason: `[refill, prefetch]`.
    pub fetches: [u64; 2],
    /// Fetches dropped because the page was rewritten before the disk read returned.
    pub fetches_cancelled: u64,
    /// Fetches whose CleanWrite was programmed, by reason (`[refill, prefetch]`; Table 4
    /// "Prefetched" is the second).
    pub fetch_programs: [u64; 2],
    /// Idle gaps handed to the scheme (`Scheme::on_idle`).
    pub idle_calls: u64,
    /// Idle time handed to the scheme, ns.
    pub idle_ns: u64,
    /// Pages the scheme verified (`Action::Verify`), and those found corrupted.
    pub verified_pages: u64,
    /// Corrupted pages found by verification.
    pub verify_found: u64,
    /// Corruptions injected (Table 4 "Corruptions").
    pub corruptions: u64,
    /// Corruptions injected into a page of a detect-only code.
    pub corruptions_detect_only: u64,
    /// Injections that found no mapped page.
    pub corruptions_skipped: u64,
    /// Corrupted pages GC relocated with a correcting read (the flag is cleared).
    pub gc_corrected: u64,
    /// Corrupted detect-only pages GC relocated as they are (the flag follows, now known).
    pub gc_carried: u64,
}
