//! `[host]`, `[precondition]`, `[scheme]` and `[stats]`: how the trace is replayed, the state the
//! drive starts in, the scheme and what is recorded.

use serde::{Deserialize, Serialize};

use super::error::{check_finite_in, invalid, ConfigError};

/// Replay mode.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ReplayMode {
    /// Open loop: requests arrive at their (scaled) timestamps.
    Open,
    /// Closed loop: `queue_depth` requests outstanding, timestamps ignored.
    Closed,
}

/// Host replay options.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct HostConfig {
    /// `open` or `closed`.
    pub mode: ReplayMode,
    /// Open loop: arrival times are multiplied by this (FlexECC's "ioscale"; > 1 slows the
    /// trace down). Periods given in trace time stretch with it, so a policy sees the same
    /// trace at any scale: scheme tick periods (e.g. EFM's T), `refresh.period_s` and
    /// `refresh.check_interval_s` are multiplied by it (the report's `refresh.period_s` is the
    /// effective value). Counts of requests or pages (Bloom-filter decay, MRO windows) are not.
    pub time_scale: f64,
    /// Closed loop: outstanding requests.
    pub queue_depth: u32,
    /// Replay at most this many requests (0 = all).
    pub max_requests: u64,
    /// Open loop: at most this many host requests outstanding in the device (the host's queue
    /// depth). A request arriving when the device holds this many waits in the host — its
    /// response time still counts from its trace timestamp — and is only read from the trace
    /// when a slot frees, so memory stays bounded however long an overload lasts.
    pub max_outstanding: u32,
    /// Concurrent flows (`[[host.flows]]`, [`crate::host::flows`]): several traces on one
    /// device, each on its own queue pair. Empty (the default): one trace. Left out of the
    /// serialized config when empty, as are the flow keys below at their defaults (reports
    /// of single-trace runs are unchanged).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<crate::host::flows::FlowConfig>,
    /// How the controller picks the next command among the flows' queues.
    #[serde(skip_serializing_if = "crate::host::flows::Arbitration::is_default")]
    pub arbitration: crate::host::flows::Arbitration,
    /// Weighted round robin: commands per round of the high, medium and low classes.
    #[serde(skip_serializing_if = "crate::host::flows::default_wrr_weights")]
    pub wrr_weights: [u32; 3],
    /// `partitioned` (each flow its own logical range) or `shared`.
    #[serde(skip_serializing_if = "crate::host::flows::FlowSpace::is_default")]
    pub flow_space: crate::host::flows::FlowSpace,
    /// Replay only the flow of this name; the others still size and precondition the device
    /// (a flow's run alone, for its slowdown). Empty: every flow.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub replay_only_flow: String,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            mode: ReplayMode::Open,
            time_scale: 1.0,
            queue_depth: 32,
            max_requests: 0,
            max_outstanding: 65536,
            flows: Vec::new(),
            arbitration: crate::host::flows::Arbitration::RoundRobin,
            wrr_weights: crate::host::flows::DEFAULT_WRR_WEIGHTS,
            flow_space: crate::host::flows::FlowSpace::Partitioned,
            replay_only_flow: String::new(),
        }
    }
}

/// What to write before replay.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Fill {
    /// Nothing: reads of never-written pages are served without a flash access.
    None,
    /// Every logical page the trace touches (read or written), in LPN order.
    Touched,
    /// The first `fill_fraction` of the logical space, sequentially.
    Fraction,
}

/// Preconditioning (untimed; not in the reported latencies or counters).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct PreconditionConfig {
    /// `none`, `touched` or `fraction`. With `touched` the untouched pages stay free, so a
    /// trace that does not overwrite its pages many times over never reaches GC (WA 1.0): age
    /// the device or fill a fraction to measure GC.
    pub fill: Fill,
    /// For `fill = "fraction"`: fraction of the logical pages, 0…1.
    pub fill_fraction: f64,
    /// Random page overwrites over the filled pages, as a multiple of the number of filled
    /// pages (0 = none).
    pub age_overwrites: f64,
    /// Keep overwriting in rounds of 10 % of the filled pages until GC has erased blocks in two
    /// rounds in a row whose write amplification differs by at most 1 % (capped by
    /// `age_overwrites` × filled pages when that is > 0, else by 10 × filled pages plus the
    /// free pages at the start, so that GC is reached).
    pub age_until_steady: bool,
    /// Initial P/E cycles of every block.
    pub initial_pe_cycles: u32,
    /// Blocks get initial P/E uniformly in `initial_pe_cycles ± initial_pe_spread`.
    pub initial_pe_spread: u32,
    /// Program ages of preconditioned data are spread uniformly over this window before the
    /// trace starts, seconds.
    pub initial_age_window_s: f64,
    /// After fill and aging, refresh every full block with data once, untimed, through the
    /// scheme's `plan_refresh` (IDA: voltage-adjust word lines): the replay starts in the
    /// state a past data refresh left, without refresh traffic in its latencies.
    pub refresh_before_replay: bool,
}

impl Default for PreconditionConfig {
    fn default() -> Self {
        PreconditionConfig {
            fill: Fill::Touched,
            fill_fraction: 1.0,
            age_overwrites: 0.0,
            age_until_steady: false,
            initial_pe_cycles: 0,
            initial_pe_spread: 0,
            initial_age_window_s: 0.0,
            refresh_before_replay: false,
        }
    }
}

/// Scheme selection.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SchemeConfig {
    /// Scheme name (see `scheme::registry`).
    pub name: String,
    /// Scheme parameters (each scheme declares and validates its own).
    pub params: toml::Table,
}

impl Default for SchemeConfig {
    fn default() -> Self {
        SchemeConfig {
            name: "baseline".into(),
            params: toml::Table::new(),
        }
    }
}

/// Statistics options.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
#[serde(default, deny_unknown_fields)]
pub struct StatsConfig {
    /// Write a per-request CSV log (arrival, op, offset, size, wait, service, response; ns)
    /// to this path (gzip when it ends in `.gz`).
    pub request_log: Option<String>,
    /// Write the per-interval time series (CSV; gzip when it ends in `.gz`) to this path
    /// (`stats::timeseries` documents the columns). Not serialised when unset, so reports
    /// without it are unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeseries: Option<String>,
    /// Interval of the time series, ms (default 1000; needs `timeseries`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeseries_interval_ms: Option<f64>,
    /// Add latency CDFs (`host.cdf`, `stats::cdf`) to the report.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub latency_cdf: bool,
}

impl StatsConfig {
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if let Some(ms) = self.timeseries_interval_ms {
            if self.timeseries.is_none() {
                return Err(invalid(
                    "stats.timeseries_interval_ms",
                    ms,
                    "applies only to a time series: set stats.timeseries to its output path",
                ));
            }
            check_finite_in(
                "stats.timeseries_interval_ms",
                ms,
                1e-6..=1e9,
                "allowed range is 1e-6 ..= 1e9 (1 ns to about 11.6 days)",
            )?;
        }
        Ok(())
    }
}
