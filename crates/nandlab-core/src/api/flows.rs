//! Runs of concurrent flows (`[[host.flows]]`, `nandlab run -t A -t B`; the model is in
//! [`crate::host::flows`], the replay loop in `engine/flows.rs`).
//!
//! Each flow's trace is read once in a pre-pass (kept in a spill file for the replay, as a
//! single trace is): its span and touched pages place it in its logical range
//! (`host.flow_space`), and the flows' touched space, moved to their ranges, sizes the device
//! and its preconditioning exactly as one trace's would.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{json, Value};

use super::{devices, finish_report, new_engine, prepass_keeping, NandlabError, ProgressFn};
use super::{MapReport, SizingPlan};
use crate::config::{Config, ConfigError, ReplayMode};
use crate::engine::flows::FlowInput;
use crate::host::address_map::AddressMap;
use crate::host::flows::{Arbiter, Arbitration, FlowSpace};
use crate::host::threaded::ThreadedSource;
use crate::host::{Prepass, RequestSource};
use crate::trace::{HostRequest, TraceError, TraceOptions, TraceReader};

/// A config without `[[host.flows]]` run with `n` traces: `n` flows of default settings
/// (before validation, so that the flow keys of `[host]` apply to them).
pub(super) fn default_flows(table: &mut toml::Table, n: usize) {
    let host = table
        .entry("host")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if let toml::Value::Table(h) = host {
        h.entry("flows")
            .or_insert_with(|| toml::Value::Array(vec![toml::Value::Table(toml::Table::new()); n]));
    }
}

/// The flows' trace files: from `[[host.flows]] trace` or, when the flows name none, from
/// `traces` (one per flow, in order).
///
/// # Errors
/// [`NandlabError::Config`] when traces are given both ways, or their counts differ.
pub(super) fn flow_traces(cfg: &Config, traces: &[PathBuf]) -> Result<Vec<PathBuf>, NandlabError> {
    let flows = &cfg.host.flows;
    let named = flows.iter().filter(|f| !f.trace.is_empty()).count();
    if traces.is_empty() {
        if let Some(i) = flows.iter().position(|f| f.trace.is_empty()) {
            return Err(ConfigError::Invalid {
                key: format!("host.flows[{i}].trace"),
                value: "\"\"".into(),
                msg: "a flow needs a trace: set it, or give one trace per flow on the command \
                      line (nandlab run -t A -t B)"
                    .into(),
            }
            .into());
        }
        return Ok(flows.iter().map(|f| PathBuf::from(&f.trace)).collect());
    }
    if named > 0 || traces.len() != flows.len() {
        return Err(ConfigError::Invalid {
            key: "host.flows".into(),
            value: format!("{} flows, {} naming a trace", flows.len(), named),
            msg: format!(
                "{} traces were given on the command line: give one per flow, to flows that \
                 name none, or none and set host.flows[i].trace",
                traces.len()
            ),
        }
        .into());
    }
    Ok(traces.to_vec())
}

/// The flows' names: `[[host.flows]] name`, else the trace file's name (with `-i` when an
/// earlier flow has it).
fn flow_names(cfg: &Config, traces: &[PathBuf]) -> Vec<String> {
    let mut names: Vec<String> = Vec::with_capacity(traces.len());
    for (i, (f, t)) in cfg.host.flows.iter().zip(traces).enumerate() {
        let mut name = if f.name.is_empty() {
            t.file_name()
                .map_or_else(|| format!("flow{i}"), |n| n.to_string_lossy().into_owned())
        } else {
            f.name.clone()
        };
        let explicit = |j: usize, g: &crate::host::flows::FlowConfig| j != i && g.name == name;
        if names.contains(&name)
            || cfg
                .host
                .flows
                .iter()
                .enumerate()
                .any(|(j, g)| explicit(j, g))
        {
            name = format!("{name}-{i}");
        }
        names.push(name);
    }
    names
}

/// A flow's requests moved to its logical range (and through the compact address map when the
/// run uses one).
struct FlowSrc<'m> {
    inner: Box<dyn RequestSource + 'm>,
    path: PathBuf,
    name: String,
    /// Start of the flow's range, bytes.
    base: u64,
    /// Length of the range (`None`: shared, the whole space), bytes.
    range: Option<u64>,
    /// `ftl.wrap_offsets`: offsets wrap within the range.
    wrap: bool,
    map: Option<&'m AddressMap>,
}

impl FlowSrc<'_> {
    #[cold]
    fn beyond(&self, r: &HostRequest, range: u64, msg: &str) -> TraceError {
        TraceError::Io {
            file: self.path.clone(),
            msg: format!(
                "flow {:?}: a request at offset {} bytes (+{} bytes) {msg} of the flow's logical \
                 range of {} bytes (host.flow_space = \"partitioned\" on a device of fixed \
                 capacity gives each flow an equal share); set ftl.wrap_offsets = true, \
                 host.flow_space = \"shared\", or a larger device.logical_capacity_bytes",
                self.name, r.offset_bytes, r.len_bytes, range
            ),
        }
    }
}

impl RequestSource for FlowSrc<'_> {
    #[inline]
    fn next_request(&mut self) -> Result<Option<HostRequest>, TraceError> {
        let Some(mut r) = self.inner.next_request()? else {
            return Ok(None);
        };
        if let Some(range) = self.range {
            if r.offset_bytes.saturating_add(r.len_bytes) > range {
                if !self.wrap {
                    return Err(self.beyond(&r, range, "ends beyond the end"));
                }
                let off = r.offset_bytes % range;
                if off + r.len_bytes > range {
                    return Err(self.beyond(&r, range, "wrapped, crosses the end"));
                }
                r.offset_bytes = off;
            }
        }
        r.offset_bytes += self.base;
        if let Some(m) = self.map {
            r.offset_bytes = m.map(r.offset_bytes).ok_or_else(|| TraceError::Io {
                file: self.path.clone(),
                msg: format!(
                    "a request at offset {} bytes is in a part of the address space the \
                     pre-pass did not see (the file changed between the two passes?)",
                    r.offset_bytes
                ),
            })?;
        }
        Ok(Some(r))
    }

    fn describe(&self) -> Value {
        self.inner.describe()
    }
}

/// Open flow trace `path` (on its own parsing thread when `threaded`).
fn open_trace<'a>(
    path: &Path,
    topts: &TraceOptions,
    threaded: bool,
) -> Result<Box<dyn RequestSource + 'a>, NandlabError> {
    let r = TraceReader::open(path, topts).map_err(|e| devices::explain(e.into(), path, topts))?;
    Ok(if threaded {
        Box::new(ThreadedSource::spawn(r))
    } else {
        Box::new(r)
    })
}

/// Replay the flows of `cfg` (traces from [`flow_traces`]) and return the report: the run's
/// blocks as for one trace, `trace.flows` (each trace's description) and `flows` (per flow:
/// name, trace, queue settings, logical range and its `host` block).
///
/// # Errors
/// As [`super::simulate_source`]; [`NandlabError::Config`] for `host.replay_only_flow` naming
/// no flow, or a device of fixed capacity too small to give each flow a range.
pub(super) fn simulate_flows(
    cfg: Config,
    traces: &[PathBuf],
    topts: &TraceOptions,
    progress: &mut ProgressFn<'_>,
) -> Result<Value, NandlabError> {
    let t0 = Instant::now();
    let n = traces.len();
    let names = flow_names(&cfg, traces);
    let only = match cfg.host.replay_only_flow.as_str() {
        "" => None,
        want => Some(
            names
                .iter()
                .position(|n| n == want)
                .ok_or_else(|| ConfigError::Invalid {
                    key: "host.replay_only_flow".into(),
                    value: format!("{want:?}"),
                    msg: format!("names no flow; the flows are {names:?}"),
                })?,
        ),
    };
    let plan = SizingPlan::of(&cfg)?;
    let threaded = cfg.host.max_requests == 0;
    let partitioned = cfg.host.flow_space == FlowSpace::Partitioned;
    let chunk = plan.chunk_bytes;
    // A device of fixed capacity: each partitioned flow an equal share, in whole chunks.
    let fixed_range = match (&plan.fixed, partitioned) {
        (Some((_, l)), true) => {
            let range = l * plan.ps / n as u64 / chunk * chunk;
            if range == 0 {
                return Err(ConfigError::Invalid {
                    key: "host.flow_space".into(),
                    value: "\"partitioned\"".into(),
                    msg: format!(
                        "{} of logical space cannot give {n} flows a range of at least {} \
                         each: raise device.logical_capacity_bytes or use \"shared\"",
                        crate::config::human_bytes(l * plan.ps),
                        crate::config::human_bytes(chunk)
                    ),
                }
                .into());
            }
            Some(range)
        }
        _ => None,
    };
    // Pre-pass of each flow, in its own addresses (wrapped within its range, when wrapping).
    let mut pres: Vec<Option<(Prepass, Option<crate::host::spill::SpillWriter>, Value)>> =
        Vec::with_capacity(n);
    for path in traces {
        pres.push(match plan.opts {
            Some(mut opts) => {
                if let (Some(range), Some(_)) = (fixed_range, opts.wrap_pages) {
                    opts.wrap_pages = Some(range / plan.ps);
                }
                let mut src = open_trace(path, topts, threaded)?;
                let (pre, kept) = prepass_keeping(&mut src, opts, threaded, progress)?;
                Some((pre, kept, src.describe()))
            }
            None => None,
        });
    }
    // The flows' ranges.
    let mut bases = vec![0u64; n];
    let mut ranges: Vec<Option<u64>> = vec![fixed_range; n];
    if partitioned && fixed_range.is_none() {
        // Sized from the traces: each flow's span, rounded up to whole chunks.
        let mut next = 0u64;
        for (i, p) in pres.iter().enumerate() {
            let span = p.as_ref().map_or(0, |(p, _, _)| p.max_end_bytes);
            let range = span.div_ceil(chunk).max(1) * chunk;
            bases[i] = next;
            ranges[i] = Some(range);
            next += range;
        }
    } else if let Some(range) = fixed_range {
        for (i, b) in bases.iter_mut().enumerate() {
            *b = i as u64 * range;
        }
        if !cfg.ftl.wrap_offsets {
            for (i, p) in pres.iter().enumerate() {
                if let Some((p, _, _)) = p {
                    if p.max_end_bytes > range {
                        return Err(ConfigError::Invalid {
                            key: "host.flow_space".into(),
                            value: "\"partitioned\"".into(),
                            msg: format!(
                                "flow {:?} ({}) spans {}, more than its share of {} of the \
                                 configured logical capacity; set ftl.wrap_offsets = true, \
                                 host.flow_space = \"shared\", or a larger \
                                 device.logical_capacity_bytes",
                                names[i],
                                traces[i].display(),
                                crate::config::human_bytes(p.max_end_bytes),
                                crate::config::human_bytes(range)
                            ),
                        }
                        .into());
                    }
                }
            }
        }
    }
    // The flows' pre-passes as one, in the device's addresses.
    let merged = if pres.iter().all(Option::is_some) && n > 0 {
        let mut m = Prepass::default();
        for (i, p) in pres.iter().enumerate() {
            let (p, _, _) = p.as_ref().expect("every flow has a pre-pass");
            m.requests += p.requests;
            m.max_end_bytes = m.max_end_bytes.max(bases[i] + p.max_end_bytes);
            m.touched.or_shifted(&p.touched, bases[i] / plan.ps);
            m.touched_chunks
                .or_shifted(&p.touched_chunks, bases[i] / chunk);
        }
        m.chunks = m.touched_chunks.count();
        Some(m)
    } else {
        None
    };
    let (geo, logical_pages, map, pre) = plan.size(&cfg, merged)?;
    let mut engine = new_engine(cfg.clone(), geo, logical_pages)?;
    engine.precondition(pre.as_ref(), progress)?;
    let t1 = Instant::now();
    let amap = map.as_ref().map(|m: &MapReport| &m.map);
    // The flows replayed: all, or the one of `host.replay_only_flow`.
    let replayed: Vec<usize> = match only {
        Some(i) => vec![i],
        None => (0..n).collect(),
    };
    // Each flow's trace as its pre-pass read it (a flow left silent by
    // `host.replay_only_flow` too); without a pre-pass, as the replay reads it, or its path.
    let mut described: Vec<Value> = (0..n)
        .map(|i| match &pres[i] {
            Some((_, _, d)) => d.clone(),
            None => json!({ "path": traces[i].display().to_string() }),
        })
        .collect();
    // A flow replayed from its pre-pass's spill is described by the pre-pass (as one trace
    // is); one read again (`host.max_requests`, or no pre-pass) by what the replay read.
    let mut from_spill = vec![false; n];
    let mut inputs = Vec::with_capacity(replayed.len());
    for &i in &replayed {
        let fc = &cfg.host.flows[i];
        let inner: Box<dyn RequestSource> = match pres[i].take() {
            Some((_, Some(w), _)) => {
                from_spill[i] = true;
                Box::new(w.into_source()?)
            }
            _ => open_trace(&traces[i], topts, threaded)?,
        };
        let mode = fc.mode.unwrap_or(cfg.host.mode);
        let queue_depth = match (fc.queue_depth, mode) {
            (0, ReplayMode::Open) => cfg.host.max_outstanding,
            (0, ReplayMode::Closed) => cfg.host.queue_depth,
            (q, _) => q,
        };
        inputs.push(FlowInput {
            src: FlowSrc {
                inner,
                path: traces[i].clone(),
                name: names[i].clone(),
                base: bases[i],
                range: ranges[i],
                wrap: cfg.ftl.wrap_offsets,
                map: amap,
            },
            mode,
            queue_depth,
            start_ns: (fc.start_offset_s * 1e9).round() as u64,
        });
    }
    let classes: Vec<_> = replayed
        .iter()
        .map(|&i| cfg.host.flows[i].priority)
        .collect();
    let arbiter = Arbiter::new(cfg.host.arbitration, &classes, cfg.host.wrr_weights);
    let ids: Vec<u16> = replayed.iter().map(|&i| i as u16).collect();
    let total = pre.as_ref().map_or(0, |p| p.requests);
    engine.run_flows(&mut inputs, &ids, n, arbiter, total, progress)?;
    for (k, &i) in replayed.iter().enumerate() {
        if !from_spill[i] {
            described[i] = inputs[k].src.describe();
        }
    }
    drop(inputs);
    let mut report = finish_report(
        &mut engine,
        json!({ "flows": described }),
        Value::Null,
        t0,
        t1,
    )?;
    report["device"]["address_map"] = match &map {
        None => json!({"mode": "dense"}),
        Some(m) => m.report(logical_pages * plan.ps),
    };
    let wrr = cfg.host.arbitration == Arbitration::WeightedRoundRobin;
    if let Some(flows) = report["flows"].as_array_mut() {
        for (i, f) in flows.iter_mut().enumerate() {
            let fc = &cfg.host.flows[i];
            let mode = fc.mode.unwrap_or(cfg.host.mode);
            let qd = match (fc.queue_depth, mode) {
                (0, ReplayMode::Open) => cfg.host.max_outstanding,
                (0, ReplayMode::Closed) => cfg.host.queue_depth,
                (q, _) => q,
            };
            let o = f.as_object_mut().expect("a flow block");
            o.insert("name".into(), json!(names[i]));
            o.insert("trace".into(), described[i].clone());
            o.insert("replayed".into(), json!(replayed.contains(&i)));
            o.insert("mode".into(), json!(mode));
            o.insert("queue_depth".into(), json!(qd));
            o.insert("start_offset_s".into(), json!(fc.start_offset_s));
            if wrr {
                o.insert("priority".into(), json!(fc.priority));
            }
            o.insert("logical_base_bytes".into(), json!(bases[i]));
            o.insert("logical_range_bytes".into(), json!(ranges[i]));
        }
    }
    Ok(report)
}
