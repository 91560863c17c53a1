//! Entry points used by the Python front (`crates/nandlab-py`) and by Rust users.
//!
//! Every function here takes plain data and returns serialisable results or a
//! [`NandlabError`]; none of them panics on user input.

use std::path::{Path, PathBuf};

use std::time::Instant;

mod devices;
mod dpa;
mod flows;
mod osd;
pub use dpa::{dpa_analyze, dpa_lifetime, dpa_polynomials, dpa_summarize};
pub use osd::{
    crash_small_device, crash_variant, fs_trace_stats, osd_config, osd_crash_test_bench,
    osd_crash_test_mixed, osd_crash_test_trace, osd_run_bench, osd_run_commands, osd_run_trace,
    CrashSpec,
};
mod reliability;
pub use devices::{device_hint, devices, DeviceSummary};
pub use reliability::{
    ecc_table, rber_table, GUO_TABLE6_LEVELS, GUO_TABLE6_PE, GUO_TABLE6_RETENTION_S,
};

use crate::config::{AddressMapMode, Config, Fill};
use crate::engine::Engine;
use crate::host::address_map::{self, AddressMap};
use crate::host::spill::SpillWriter;
use crate::host::threaded::ThreadedSource;
use crate::host::{prepass_with, PrepassOptions, RequestSource};
use crate::trace::{GenParams, TraceOptions, TraceReader};

pub use crate::error::{NandlabError, ProgressFn, Stage};

/// Requests (pre-pass) or page writes (preconditioning) between two progress reports.
const PROGRESS_EVERY: u64 = 1 << 16;

/// What to simulate.
#[derive(Clone, Debug)]
pub struct RunRequest {
    /// TOML text of the configuration.
    pub config_toml: String,
    /// Where the TOML came from (for error messages); `None` for a string.
    pub config_path: Option<PathBuf>,
    /// `key=value` overrides applied to the TOML before validation; keys are dotted paths
    /// (`ftl.gc_threshold_pct=10`), values TOML literals.
    pub overrides: Vec<String>,
    /// Scheme name overriding `scheme.name` of the config.
    pub scheme: Option<String>,
    /// The trace file.
    pub trace_path: PathBuf,
    /// How to read it.
    pub trace_options: TraceOptions,
    /// Concurrent flows' traces (`nandlab run -t A -t B`): with two or more, or with
    /// `[[host.flows]]` in the config, the run replays flows ([`crate::host::flows`]) and
    /// `trace_path` is not read; one per flow that names no trace. Empty: none.
    pub flow_traces: Vec<PathBuf>,
}

/// Run one simulation and return the JSON report (see `engine::report`).
///
/// # Errors
/// [`NandlabError::Config`] for a bad config or override, [`NandlabError::Trace`] for a bad
/// trace, [`NandlabError::Sim`] when the simulation cannot proceed.
pub fn run(req: &RunRequest, progress: &mut ProgressFn<'_>) -> Result<String, NandlabError> {
    let origin = req
        .config_path
        .as_ref()
        .map_or_else(|| "<config>".to_string(), |p| p.display().to_string());
    let mut overrides = req.overrides.clone();
    if let Some(s) = &req.scheme {
        overrides.push(format!("scheme.name={}", toml::Value::String(s.clone())));
    }
    let mut table = crate::config::parse_table(&req.config_toml, &origin)?;
    if req.flow_traces.len() > 1 {
        flows::default_flows(&mut table, req.flow_traces.len());
    }
    let cfg = crate::config::load_table(&table, &origin, &overrides)?;
    // Discards become requests only with `ftl.trim` (otherwise skipped and counted, as before).
    let mut topts = req.trace_options.clone();
    topts.discards = cfg.ftl.trim;
    let topts = &topts;
    if !cfg.host.flows.is_empty() || req.flow_traces.len() > 1 {
        let traces = flows::flow_traces(&cfg, &req.flow_traces)?;
        let report = flows::simulate_flows(cfg, &traces, topts, progress)?;
        return serde_json::to_string_pretty(&report).map_err(|e| NandlabError::Sim(e.to_string()));
    }
    // Parsing runs on its own thread (the machine's second core), overlapping the pre-pass or
    // the replay that consumes it. Not when the replay stops early: the report's trace counters
    // then describe what was replayed, which only the consuming thread knows.
    let report = if cfg.host.max_requests == 0 {
        let mut open = || {
            Ok(ThreadedSource::spawn(TraceReader::open(
                &req.trace_path,
                topts,
            )?))
        };
        simulate_source(cfg, &mut open, serde_json::Value::Null, progress)
            .map_err(|e| devices::explain(e, &req.trace_path, &req.trace_options))?
    } else {
        let mut open = || Ok(TraceReader::open(&req.trace_path, topts)?);
        simulate_source(cfg, &mut open, serde_json::Value::Null, progress)
            .map_err(|e| devices::explain(e, &req.trace_path, &req.trace_options))?
    };
    serde_json::to_string_pretty(&report).map_err(|e| NandlabError::Sim(e.to_string()))
}

/// Check a configuration without a trace: parse it, apply the overrides and `scheme`, validate
/// every key and build the scheme (which validates its parameters). Returns the scheme name the
/// run would use. Used to reject a sweep's bad grid before any run starts.
///
/// # Errors
/// [`NandlabError::Config`] naming the key, value and allowed range.
pub fn check_config(
    config_toml: &str,
    config_path: Option<&Path>,
    overrides: &[String],
    scheme: Option<&str>,
) -> Result<String, NandlabError> {
    let origin = config_path.map_or_else(|| "<config>".to_string(), |p| p.display().to_string());
    let table = crate::config::parse_table(config_toml, &origin)?;
    check_table(&table, &origin, overrides, scheme)
}

/// [`check_config`] of many override sets and schemes on one configuration, parsed once: the
/// result of each `(overrides, scheme)` in order. A sweep's grid of 65,536 runs is checked in
/// seconds this way (parsing the preset's text dominated one check).
///
/// # Errors
/// A TOML syntax error of `config_toml` (for all runs); per run, as [`check_config`].
pub fn check_configs(
    config_toml: &str,
    config_path: Option<&Path>,
    runs: &[(Vec<String>, Option<String>)],
) -> Result<Vec<Result<String, NandlabError>>, NandlabError> {
    let origin = config_path.map_or_else(|| "<config>".to_string(), |p| p.display().to_string());
    let table = crate::config::parse_table(config_toml, &origin)?;
    Ok(runs
        .iter()
        .map(|(ov, scheme)| check_table(&table, &origin, ov, scheme.as_deref()))
        .collect())
}

fn check_table(
    table: &toml::Table,
    origin: &str,
    overrides: &[String],
    scheme: Option<&str>,
) -> Result<String, NandlabError> {
    let mut overrides = overrides.to_vec();
    if let Some(s) = scheme {
        overrides.push(format!(
            "scheme.name={}",
            toml::Value::String(s.to_string())
        ));
    }
    let cfg = crate::config::load_table(table, origin, &overrides)?;
    let timing = cfg.timing()?;
    let scheme = crate::scheme::registry(
        &cfg.scheme.name,
        &cfg.scheme.params,
        &timing,
        cfg.ftl.streams,
    )?;
    scheme.validate_device(&crate::scheme::DeviceInfo::new(&cfg, &timing))?;
    Ok(cfg.scheme.name)
}

/// Every key a configuration file accepts (see [`crate::config::accepted_keys`]).
pub fn config_keys() -> Vec<String> {
    crate::config::accepted_keys()
}

/// The `[scheme.params]` keys scheme `scheme` reads, found by building it on the configuration
/// `config_toml` with an unknown probe parameter (the scheme's error lists the keys it knows).
///
/// # Errors
/// [`NandlabError::Config`] when the configuration is invalid or the scheme cannot be built on
/// it for another reason (e.g. it needs program modes the configuration lacks).
pub fn scheme_param_keys(config_toml: &str, scheme: &str) -> Result<Vec<String>, NandlabError> {
    let cfg = crate::config::load(config_toml, "<config>", &[])?;
    let mut params = toml::Table::new();
    params.insert("__nandlab_probe__".into(), toml::Value::Integer(0));
    let err = match crate::scheme::registry(scheme, &params, &cfg.timing()?, cfg.ftl.streams) {
        Ok(_) => return Ok(Vec::new()),
        Err(e) => e,
    };
    match &err {
        crate::config::ConfigError::Invalid { key, msg, .. }
            if key == "scheme.params.__nandlab_probe__" =>
        {
            let known = msg
                .split("(known: ")
                .nth(1)
                .map(|r| r.trim_end_matches(')'))
                .unwrap_or("");
            Ok(known
                .split(", ")
                .filter(|k| !k.is_empty() && *k != "__nandlab_probe__")
                .map(str::to_string)
                .collect())
        }
        _ => Err(err.into()),
    }
}

/// Run a simulation of `cfg` over the requests `open()` yields. When the device is sized from
/// the trace or the fill needs the touched pages, a pre-pass reads the source first; the
/// replay then reads the requests the pre-pass kept in a spill file ([`crate::host::spill`]),
/// so a trace is parsed once. (`open()` is called once, or twice when no temporary file can be
/// created or `host.max_requests` limits the replay.) `trace` is echoed into the report.
/// Returns the report as a JSON value.
///
/// # Errors
/// Whatever `open` or the source returns, and [`NandlabError::Sim`] from the engine.
pub fn simulate_source<S: RequestSource>(
    cfg: Config,
    open: &mut dyn FnMut() -> Result<S, NandlabError>,
    trace: serde_json::Value,
    progress: &mut ProgressFn<'_>,
) -> Result<serde_json::Value, NandlabError> {
    if cfg.cache.is_some() {
        return simulate_cached(cfg, open, trace, progress);
    }
    let t0 = Instant::now();
    let plan = SizingPlan::of(&cfg)?;
    // The pre-pass keeps the requests for the replay unless the replay stops early (the
    // source's counters then describe the part replayed, as without a pre-pass).
    let mut spill = None;
    let mut pre_src = None;
    let pre = match plan.opts {
        Some(opts) => {
            let mut src = open()?;
            let keep = cfg.host.max_requests == 0;
            let (pre, kept) = prepass_keeping(&mut src, opts, keep, progress)?;
            spill = kept;
            pre_src = Some(src);
            Some(pre)
        }
        None => None,
    };
    let (geo, logical_pages, map, pre) = plan.size(&cfg, pre)?;
    let mut engine = new_engine(cfg, geo, logical_pages)?;
    engine.precondition(pre.as_ref(), progress)?;
    debug_assert_eq!(engine.check_invariants(), Ok(()));
    let total = pre.as_ref().map_or(0, |p| p.requests);
    let t1 = Instant::now();
    let amap = map.as_ref().map(|m| &m.map);
    let described = match (spill, pre_src) {
        (Some(w), Some(pre_src)) => {
            engine.run(&mut Mapped::new(w.into_source()?, amap), total, progress)?;
            pre_src.describe()
        }
        _ => {
            let mut src = Mapped::new(open()?, amap);
            engine.run(&mut src, total, progress)?;
            src.describe()
        }
    };
    debug_assert_eq!(engine.check_invariants(), Ok(()));
    let mut report = finish_report(&mut engine, trace, described, t0, t1)?;
    report["device"]["address_map"] = match &map {
        None => serde_json::json!({"mode": "dense"}),
        Some(m) => m.report(logical_pages * plan.ps),
    };
    Ok(report)
}

/// One pass over `src` with `opts`, reporting progress; with `keep`, the requests are kept
/// for the replay in a spill file (`None` when it cannot be created: the replay then reads the
/// source again).
fn prepass_keeping<S: RequestSource>(
    src: &mut S,
    opts: PrepassOptions,
    keep: bool,
    progress: &mut ProgressFn<'_>,
) -> Result<(crate::host::Prepass, Option<SpillWriter>), NandlabError> {
    let mut kept = if keep { SpillWriter::new().ok() } else { None };
    let mut n = 0u64;
    let pre = prepass_with(src, opts, |r| {
        n += 1;
        if n.is_multiple_of(PROGRESS_EVERY) {
            progress(Stage::Prepass, n, 0);
        }
        match &mut kept {
            Some(w) => w.push(r),
            None => Ok(()),
        }
    })?;
    progress(Stage::Prepass, n, 0);
    Ok((pre, kept))
}

/// How a run's device is sized and what its pre-pass collects: sized from the trace
/// (`device.blocks_per_plane = 0` and `device.logical_capacity_bytes = 0`) or by the config,
/// with a dense or compact address map ([`address_map`]).
struct SizingPlan {
    auto_size: bool,
    /// The configured device (geometry, logical pages) when not sized from the trace.
    fixed: Option<(crate::flash::Geometry, u64)>,
    /// What the pre-pass collects; `None`: no pre-pass.
    opts: Option<PrepassOptions>,
    mode: AddressMapMode,
    chunk_bytes: u64,
    /// Mapping-page size, bytes.
    ps: u64,
    want_touched: bool,
}

impl SizingPlan {
    /// The plan for `cfg`.
    ///
    /// # Errors
    /// [`NandlabError::Config`] for a compact map with `ftl.wrap_offsets`, or a device the
    /// config cannot size.
    fn of(cfg: &Config) -> Result<SizingPlan, NandlabError> {
        let auto_size = cfg.device.blocks_per_plane == 0 && cfg.device.logical_capacity_bytes == 0;
        let want_touched = cfg.precondition.fill == Fill::Touched;
        let ps = cfg.map_page_bytes() as u64;
        let mode = cfg.device.address_map;
        if mode == AddressMapMode::Compact && cfg.ftl.wrap_offsets {
            return Err(crate::config::ConfigError::Invalid {
                key: "device.address_map".into(),
                value: "\"compact\"".into(),
                msg: "the compact map packs the touched address space and ftl.wrap_offsets = true \
                      folds it onto a fixed capacity; use one of them"
                    .into(),
            }
            .into());
        }
        let chunk_bytes = address_map::chunk_bytes(ps);
        let (fixed, opts) = if auto_size {
            let opts = PrepassOptions {
                page_size_bytes: want_touched.then_some(ps),
                wrap_pages: None,
                chunk_bytes: (mode != AddressMapMode::Dense).then_some(chunk_bytes),
            };
            (None, Some(opts))
        } else {
            let (g, l) = cfg.size_device(0)?;
            let compact = mode == AddressMapMode::Compact;
            let opts = (want_touched || compact).then(|| PrepassOptions {
                page_size_bytes: want_touched.then_some(ps),
                wrap_pages: cfg.ftl.wrap_offsets.then_some(l),
                chunk_bytes: compact.then_some(chunk_bytes),
            });
            (Some((g, l)), opts)
        };
        Ok(SizingPlan {
            auto_size,
            fixed,
            opts,
            mode,
            chunk_bytes,
            ps,
            want_touched,
        })
    }

    /// The device after the pre-pass `pre` (`None` when the plan has none): geometry, logical
    /// pages, the compact address map when one is used, and the pre-pass (its touched pages
    /// moved to the compact space).
    ///
    /// # Errors
    /// [`NandlabError::Config`] when the device cannot be sized or the touched space exceeds a
    /// configured capacity.
    #[allow(clippy::type_complexity)]
    fn size(
        &self,
        cfg: &Config,
        pre: Option<crate::host::Prepass>,
    ) -> Result<
        (
            crate::flash::Geometry,
            u64,
            Option<MapReport>,
            Option<crate::host::Prepass>,
        ),
        NandlabError,
    > {
        let (ps, chunk_bytes, want_touched) = (self.ps, self.chunk_bytes, self.want_touched);
        if self.auto_size {
            let mut pre = pre.expect("a device sized from the trace has a pre-pass");
            let dense = cfg.size_device(pre.max_end_bytes);
            let sparse =
                pre.chunks.saturating_mul(chunk_bytes).saturating_mul(2) <= pre.max_end_bytes;
            let compact = match self.mode {
                AddressMapMode::Dense => false,
                AddressMapMode::Compact => true,
                AddressMapMode::Auto => {
                    sparse
                        && match &dense {
                            Ok((g, l)) => {
                                crate::ftl::Ftl::table_bytes(g, *l)
                                    > crate::config::DENSE_MAP_MAX_TABLE_BYTES
                            }
                            Err(_) => true,
                        }
                }
            };
            if compact {
                let m = AddressMap::new(&pre.touched_chunks, chunk_bytes);
                let (g, l) = cfg.size_device(m.compact_bytes())?;
                if want_touched {
                    pre.touched = m.map_pages(&pre.touched, ps);
                }
                let map = MapReport {
                    map: m,
                    span_bytes: pre.max_end_bytes,
                    nominal_logical_bytes: dense
                        .as_ref()
                        .map(|(_, l)| l * ps)
                        .unwrap_or(pre.max_end_bytes.max(cfg.device.min_logical_capacity_bytes)),
                };
                return Ok((g, l, Some(map), Some(pre)));
            }
            let (g, l) = dense?;
            return Ok((g, l, None, Some(pre)));
        }
        let (g, l) = self.fixed.clone().expect("a configured device");
        let mut map = None;
        let pre = match pre {
            Some(mut pre) if self.mode == AddressMapMode::Compact => {
                let m = AddressMap::new(&pre.touched_chunks, chunk_bytes);
                if m.compact_bytes() > l * ps {
                    return Err(crate::config::ConfigError::Invalid {
                        key: "device.address_map".into(),
                        value: "\"compact\"".into(),
                        msg: format!(
                            "the trace touches {} ({} chunks of {}), more than the configured \
                             logical capacity of {}; raise the capacity or leave it to the trace \
                             (device.logical_capacity_bytes = 0 and device.blocks_per_plane = 0)",
                            crate::config::human_bytes(m.compact_bytes()),
                            m.chunks(),
                            crate::config::human_bytes(chunk_bytes),
                            crate::config::human_bytes(l * ps)
                        ),
                    }
                    .into());
                }
                if want_touched {
                    pre.touched = m.map_pages(&pre.touched, ps);
                }
                map = Some(MapReport {
                    map: m,
                    span_bytes: pre.max_end_bytes,
                    nominal_logical_bytes: l * ps,
                });
                Some(pre)
            }
            p => p,
        };
        Ok((g, l, map, pre))
    }
}

/// A compact address map in use, and what the report says of it.
struct MapReport {
    map: AddressMap,
    /// The trace's address span (highest byte touched), bytes.
    span_bytes: u64,
    /// The logical capacity a dense device would have had, bytes.
    nominal_logical_bytes: u64,
}

impl MapReport {
    fn report(&self, modelled_logical_bytes: u64) -> serde_json::Value {
        let m = &self.map;
        serde_json::json!({
            "mode": "compact",
            "chunk_bytes": m.chunk_bytes(),
            "touched_chunks": m.chunks(),
            "touched_bytes": m.compact_bytes(),
            "trace_span_bytes": self.span_bytes,
            "nominal_logical_bytes": self.nominal_logical_bytes,
            "modelled_logical_bytes": modelled_logical_bytes,
            "note": format!(
                "compact address map: the {} chunks of {} the trace touches ({}) of its {} \
                 span are packed in address order; the modelled device holds {} of logical \
                 space (not the nominal {}), so GC, preconditioning and over-provisioning act \
                 on that; the untouched span is not modelled",
                m.chunks(),
                crate::config::human_bytes(m.chunk_bytes()),
                crate::config::human_bytes(m.compact_bytes()),
                crate::config::human_bytes(self.span_bytes),
                crate::config::human_bytes(modelled_logical_bytes),
                crate::config::human_bytes(self.nominal_logical_bytes),
            ),
        })
    }
}

/// The replay's source, its offsets moved by a compact [`AddressMap`] when there is one.
struct Mapped<'m, S> {
    src: S,
    map: Option<&'m AddressMap>,
}

impl<'m, S: RequestSource> Mapped<'m, S> {
    fn new(src: S, map: Option<&'m AddressMap>) -> Self {
        Mapped { src, map }
    }
}

impl<S: RequestSource> RequestSource for Mapped<'_, S> {
    #[inline]
    fn next_request(
        &mut self,
    ) -> Result<Option<crate::trace::HostRequest>, crate::trace::TraceError> {
        let mut r = self.src.next_request()?;
        if let (Some(m), Some(q)) = (self.map, r.as_mut()) {
            q.offset_bytes = m
                .map(q.offset_bytes)
                .ok_or_else(|| crate::trace::TraceError::Io {
                    file: self.src.describe()["path"]
                        .as_str()
                        .unwrap_or("<trace>")
                        .into(),
                    msg: format!(
                        "a request at offset {} bytes is in a part of the address space the \
                     pre-pass did not see (the file changed between the two passes?)",
                        q.offset_bytes
                    ),
                })?;
        }
        Ok(r)
    }

    fn tag(&self) -> crate::host::cache::CacheOp {
        self.src.tag()
    }

    fn describe(&self) -> serde_json::Value {
        self.src.describe()
    }
}

/// Parse a trace without simulating: returns `{"requests": n, "wall_s": s, ...}` as JSON
/// (the baseline of the `bench` ratio).
pub fn parse_only(path: &Path, opts: &TraceOptions) -> Result<String, NandlabError> {
    let t0 = Instant::now();
    let mut r =
        TraceReader::open(path, opts).map_err(|e| devices::explain(e.into(), path, opts))?;
    let mut n = 0u64;
    let mut bytes = 0u64;
    while let Some(q) = r.next_request()? {
        n += 1;
        bytes = bytes.wrapping_add(q.len_bytes);
    }
    let wall = t0.elapsed().as_secs_f64();
    Ok(serde_json::json!({
        "requests": n,
        "bytes": bytes,
        "wall_s": wall,
        "requests_per_s": if wall > 0.0 { n as f64 / wall } else { 0.0 },
        "format": r.format(),
        "counters": r.counters(),
    })
    .to_string())
}

/// Table-II-style statistics of a trace (see `trace::stats`), as JSON, plus `devices`: the
/// devices of a multi-device trace (ids, requests, sizes; see [`devices`]), `[]` otherwise.
pub fn trace_stats(
    path: &Path,
    opts: &TraceOptions,
    page_size_bytes: u64,
) -> Result<String, NandlabError> {
    let s = crate::trace::stats(path, opts, page_size_bytes)
        .map_err(|e| devices::explain(e.into(), path, opts))?;
    let mut v = serde_json::to_value(&s).map_err(|e| NandlabError::Sim(e.to_string()))?;
    v["devices"] =
        serde_json::to_value(devices(path, opts)?).map_err(|e| NandlabError::Sim(e.to_string()))?;
    serde_json::to_string_pretty(&v).map_err(|e| NandlabError::Sim(e.to_string()))
}

/// Convert a trace to canonical CSV (gzip when `output` ends in `.gz`); returns requests written.
pub fn trace_convert(
    input: &Path,
    opts: &TraceOptions,
    output: &Path,
) -> Result<u64, NandlabError> {
    crate::trace::convert(input, opts, output).map_err(|e| devices::explain(e.into(), input, opts))
}

/// Generate a synthetic trace from `GenParams` given as JSON (missing keys take defaults);
/// returns requests written.
///
/// # Errors
/// [`NandlabError::Config`] for malformed or out-of-range parameters.
pub fn trace_generate(params_json: &str, output: &Path) -> Result<u64, NandlabError> {
    let p: GenParams =
        serde_json::from_str(params_json).map_err(|e| crate::config::ConfigError::Syntax {
            file: "<generator parameters>".into(),
            msg: e.to_string(),
        })?;
    Ok(crate::trace::generate(&p, output)?)
}

/// A JSON request of the table and analysis entry points (`what`: `rber`, `ecc`, `dpa` …),
/// a malformed one as [`ConfigError::Syntax`](crate::config::ConfigError::Syntax) in
/// `<{what} request>`. Shared by the `dpa` and `reliability` APIs.
fn parse_request<T: serde::de::DeserializeOwned>(
    json: &str,
    what: &str,
) -> Result<T, NandlabError> {
    serde_json::from_str(json).map_err(|e| {
        NandlabError::Config(crate::config::ConfigError::Syntax {
            file: format!("<{what} request>"),
            msg: e.to_string(),
        })
    })
}

/// The cache and device of a `[cache]` run ([`cache_sizing`]).
struct CacheSizing {
    /// Whether the primary trace was read once before (footprint and span).
    need_prepass: bool,
    /// Distinct pages the primary trace touches (0 without the pre-pass).
    footprint: u64,
    /// Last arrival of the primary trace, ns of trace time (0 without the pre-pass).
    last_ns: u64,
    /// Cache slots (the SSD's logical pages the cache uses).
    slots: u64,
    geo: crate::flash::Geometry,
    logical_pages: u64,
}

/// A new engine for `cfg` on a sized device (`logical_pages` host-visible), running the scheme
/// `cfg` names.
fn new_engine(
    cfg: Config,
    geo: crate::flash::Geometry,
    logical_pages: u64,
) -> Result<Engine, NandlabError> {
    let scheme = crate::scheme::registry(
        &cfg.scheme.name,
        &cfg.scheme.params,
        &cfg.timing()?,
        cfg.ftl.streams,
    )?;
    Engine::new(cfg, geo, logical_pages, scheme)
}

/// The end of a replay: write the time series (when on), then build the report with the wall
/// and replay times since `t0` and `t1`, and the caller's description of the trace (`trace`)
/// merged with the source's own (`described`: its keys are added to an object `trace`, and
/// either stands alone when the other is null).
fn finish_report(
    engine: &mut Engine,
    trace: serde_json::Value,
    described: serde_json::Value,
    t0: Instant,
    t1: Instant,
) -> Result<serde_json::Value, NandlabError> {
    if let Some(ts) = engine.stats.timeseries.take() {
        ts.write(engine.now_ns()).map_err(NandlabError::Sim)?;
    }
    let replay = t1.elapsed().as_secs_f64();
    let wall = t0.elapsed().as_secs_f64();
    let trace = match (trace, described) {
        (serde_json::Value::Null, d) => d,
        (t, serde_json::Value::Null) => t,
        (mut t, serde_json::Value::Object(d)) => {
            if let serde_json::Value::Object(m) = &mut t {
                m.extend(d);
            }
            t
        }
        (t, _) => t,
    };
    Ok(engine.report(trace, wall, replay))
}

/// Cache slots and the device for `cfg` with `[cache]` `cc`: a pre-pass over the primary
/// trace finds its footprint and span when the cache is a fraction of the footprint, the
/// device is sized from the cache, or faults need the span.
fn cache_sizing<S: RequestSource>(
    cfg: &Config,
    cc: &crate::host::cache::CacheConfig,
    open: &mut dyn FnMut() -> Result<S, NandlabError>,
) -> Result<CacheSizing, NandlabError> {
    let ps = cfg.map_page_bytes() as u64;
    let auto_size = cfg.device.blocks_per_plane == 0 && cfg.device.logical_capacity_bytes == 0;
    // Pre-pass: footprint (distinct pages) and the last arrival; only when the cache size is a
    // fraction of the footprint, the device is sized from the cache, or faults need the span.
    let need_prepass = cc.size_bytes == 0 || auto_size || !cfg.faults.is_off();
    let mut touched: Vec<u64> = Vec::new();
    let (mut footprint, mut last_ns) = (0u64, 0u64);
    let mut src = if need_prepass { Some(open()?) } else { None };
    while let Some(r) = match src.as_mut() {
        Some(s) => s.next_request()?,
        None => None,
    } {
        last_ns = last_ns.max(r.arrival_ns);
        let sp = crate::hil::span(r.offset_bytes, r.len_bytes, ps);
        for lpn in sp.first_lpn..sp.first_lpn + sp.pages {
            let w = (lpn / 64) as usize;
            if w >= touched.len() {
                touched.resize((w + 1).next_power_of_two(), 0);
            }
            let bit = 1u64 << (lpn % 64);
            footprint += u64::from(touched[w] & bit == 0);
            touched[w] |= bit;
        }
    }
    drop(touched);
    drop(src);
    let slots = cc.slots(ps, footprint);
    let (geo, logical_pages) = cfg.size_device(if auto_size { slots * ps } else { 0 })?;
    if logical_pages < slots {
        return Err(crate::config::ConfigError::Invalid {
            key: if cc.size_bytes > 0 {
                "cache.size_bytes".into()
            } else {
                "cache.size_fraction_of_footprint".into()
            },
            value: format!("{} bytes ({slots} slots)", slots * ps),
            msg: format!(
                "the cache does not fit the device's logical capacity of {logical_pages} pages; \
                 lower the cache size or raise device.logical_capacity_bytes"
            ),
        }
        .into());
    }
    Ok(CacheSizing {
        need_prepass,
        footprint,
        last_ns,
        slots,
        geo,
        logical_pages,
    })
}

/// Write the tagged 4 KiB SSD operations the cache layer makes of `req`'s trace (its config
/// must have `[cache]`; the cache is sized as in a run) to `output` as canonical CSV
/// (`time_ns,op,offset_bytes,size_bytes`, trace time: a replay scales it by
/// `host.time_scale` as the cached run does). Replayed without `[cache]` on the same device,
/// it is the same flash work as the cached run for a scheme that ignores tags (`baseline`),
/// so the two CPU times measure the cache layer (`nandlab bench --cache`, issue 14). Returns
/// `{"ops": n, "slots": s, "ops_by_tag": [...]}` as JSON.
///
/// # Errors
/// [`NandlabError::Config`] without `[cache]` or for a bad config, trace errors, and write
/// errors as [`NandlabError::Sim`] naming the output file.
pub fn cache_stream(req: &RunRequest, output: &Path) -> Result<String, NandlabError> {
    use std::io::Write;
    let origin = req
        .config_path
        .as_ref()
        .map_or_else(|| "<config>".to_string(), |p| p.display().to_string());
    let cfg = crate::config::load(&req.config_toml, &origin, &req.overrides)?;
    let Some(cc) = cfg.cache.clone() else {
        return Err(crate::config::ConfigError::Invalid {
            key: "cache".into(),
            value: "(no [cache] section)".into(),
            msg: "the cache stream needs a config with a [cache] section (e.g. the flexecc \
                  preset)"
                .into(),
        }
        .into());
    };
    let mut topts = req.trace_options.clone();
    topts.discards = cfg.ftl.trim;
    let mut open = || Ok(TraceReader::open(&req.trace_path, &topts)?);
    let sizing = cache_sizing(&cfg, &cc, &mut open)?;
    let ps = cfg.map_page_bytes() as u64;
    let mut cs =
        crate::host::cache::CacheSource::new(open()?, &cc, sizing.slots, ps, cfg.host.time_scale);
    let werr = |e: std::io::Error| NandlabError::Sim(format!("{}: {e}", output.display()));
    let mut w =
        std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(output).map_err(werr)?);
    writeln!(w, "time_ns,op,offset_bytes,size_bytes").map_err(werr)?;
    let mut n = 0u64;
    while let Some(r) = cs.next_request()? {
        let op = if r.op == crate::trace::Op::Read {
            'R'
        } else {
            'W'
        };
        writeln!(
            w,
            "{},{op},{},{}",
            r.arrival_ns, r.offset_bytes, r.len_bytes
        )
        .map_err(werr)?;
        n += 1;
    }
    w.flush().map_err(werr)?;
    Ok(serde_json::json!({
        "ops": n,
        "slots": sizing.slots,
        "ops_by_tag": cs.counters.ops_by_tag,
    })
    .to_string())
}

/// [`simulate_source`] with `[cache]`: the SSD is a cache in front of a disk
/// ([`crate::host::cache`]). A pre-pass over the primary trace finds its footprint (distinct
/// pages) and span; the cache has `cache.size_bytes` or `size_fraction_of_footprint` of it in
/// slots, which are the SSD's logical pages (an auto-sized device is sized from them). The
/// replay reads the trace again through the cache manager. The report gains
/// `cache.manager` (the manager's counters, Table 1's read share).
fn simulate_cached<S: RequestSource>(
    cfg: Config,
    open: &mut dyn FnMut() -> Result<S, NandlabError>,
    trace: serde_json::Value,
    progress: &mut ProgressFn<'_>,
) -> Result<serde_json::Value, NandlabError> {
    use crate::host::cache::CacheSource;
    let t0 = Instant::now();
    let cc = cfg.cache.clone().expect("cache mode");
    let ps = cfg.map_page_bytes() as u64;
    if cfg.precondition.fill == Fill::Touched {
        return Err(crate::config::ConfigError::Invalid {
            key: "precondition.fill".into(),
            value: "\"touched\"".into(),
            msg: "with [cache] the SSD's logical pages are cache slots, not trace addresses; \
                  use \"none\" (a cold cache, FlexECC §4) or \"fraction\""
                .into(),
        }
        .into());
    }
    let sizing = cache_sizing(&cfg, &cc, open)?;
    let slots = sizing.slots;
    let scale = cfg.host.time_scale;
    let mut engine = new_engine(cfg, sizing.geo, sizing.logical_pages)?;
    engine.precondition(None, progress)?;
    engine.set_fault_space((sizing.last_ns as f64 * scale).round() as u64, slots);
    let t1 = Instant::now();
    let mut cs = CacheSource::new(open()?, &cc, slots, ps, scale);
    engine.run(&mut cs, 0, progress)?;
    debug_assert_eq!(engine.check_invariants(), Ok(()));
    let described = cs.describe();
    let mut report = finish_report(&mut engine, trace, described, t0, t1)?;
    let c = cs.counters;
    report["cache"]["manager"] = serde_json::json!({
        "footprint_pages": sizing.need_prepass.then_some(sizing.footprint),
        "slots": slots,
        "size_bytes": slots * ps,
        "flush_period_s": cc.flush_period_s,
        "flush_max_per_s": cc.flush_max_per_s,
        "write_through": cc.write_through,
        "bypass": cc.bypass,
        "bypass_seq_threshold_bytes": cc.bypass_seq_threshold_bytes,
        "counters": c,
        "ssd_read_share_percent": c.ssd_read_share_percent(),
        "dirty_at_end": cs.dirty_blocks(),
    });
    Ok(report)
}
