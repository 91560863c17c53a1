//! PyO3 bindings of `nandlab-core`: the extension module `nandlab._core`.
//!
//! Every function takes plain Python values (strings, ints, JSON text), releases the GIL for
//! the duration of the core call and maps [`NandlabError`] to the Python exceptions
//! `TraceError` / `ConfigError` (subclasses of `ValueError`) and `SimError` (`RuntimeError`).
//!
//! Interrupts: during [`run`] the progress closure re-acquires the GIL at most every
//! [`PROGRESS_INTERVAL`] and checks for pending signals (Ctrl-C) and calls the Python progress
//! callback. If either raises, the exception is remembered and the run is abandoned by
//! unwinding out of the core with a private payload (`resume_unwind`, which does not print a
//! panic message); the remembered exception is then re-raised in Python. The core is
//! single-threaded and calls the progress function on the thread that called `run`, which is
//! what makes this safe. A genuine panic in the core becomes a `SimError` ("internal error").

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nandlab_core::api::{self, NandlabError, RunRequest, Stage};
use nandlab_core::trace::TraceOptions;
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

mod dpa;
mod osd;

create_exception!(
    nandlab,
    TraceError,
    PyValueError,
    "A trace could not be read: names the file and, where there is one, line and field."
);
create_exception!(
    nandlab,
    ConfigError,
    PyValueError,
    "A configuration is invalid: names the key, the value and the allowed range."
);
create_exception!(
    nandlab,
    SimError,
    PyRuntimeError,
    "The simulation failed for a reason other than bad trace or config input."
);

/// Minimum time between two calls of the Python progress callback (and signal checks).
const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// Payload used to abandon a run when the progress callback raised.
struct Abandon;

fn to_pyerr(err: NandlabError) -> PyErr {
    let msg = err.to_string();
    match err {
        NandlabError::Trace(_) => TraceError::new_err(msg),
        NandlabError::Config(_) => ConfigError::new_err(msg),
        NandlabError::Sim(_) => SimError::new_err(msg),
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Run `f` with the GIL released, turning a core panic into a `SimError`.
fn call_core<T, F>(py: Python<'_>, what: &str, f: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> Result<T, NandlabError> + Send,
{
    let out = py.allow_threads(|| panic::catch_unwind(AssertUnwindSafe(f)));
    match out {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(to_pyerr(e)),
        Err(payload) => Err(SimError::new_err(format!(
            "internal error in {what}: {}",
            panic_message(payload.as_ref())
        ))),
    }
}

fn parse_trace_options(json: &str) -> PyResult<TraceOptions> {
    let text = if json.trim().is_empty() { "{}" } else { json };
    serde_json::from_str::<TraceOptions>(text)
        .map_err(|e| TraceError::new_err(format!("invalid trace options {text}: {e}")))
}

/// Run one simulation; returns the JSON report.
///
/// `progress(done, total)` is called from time to time (at most every 100 ms) with the number
/// of host requests replayed so far and the total (0 when unknown); `setup_progress(stage,
/// done, total)` likewise for the set-up before the replay (`stage` "prepass": requests read,
/// total 0; "precondition": page writes of at most `total`). An exception raised by either (or
/// a pending KeyboardInterrupt) stops the run and is re-raised. `flow_traces`: the traces of
/// concurrent flows (`nandlab run -t A -t B`, `[[host.flows]]`; `trace_path` is then unused).
#[pyfunction]
#[pyo3(signature = (config_toml, config_path, overrides, scheme, trace_path, trace_options_json, progress=None, setup_progress=None, flow_traces=None))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    config_toml: String,
    config_path: Option<PathBuf>,
    overrides: Vec<String>,
    scheme: Option<String>,
    trace_path: PathBuf,
    trace_options_json: &str,
    progress: Option<PyObject>,
    setup_progress: Option<PyObject>,
    flow_traces: Option<Vec<PathBuf>>,
) -> PyResult<String> {
    let trace_options = parse_trace_options(trace_options_json)?;
    let req = RunRequest {
        config_toml,
        config_path,
        overrides,
        scheme,
        trace_path,
        trace_options,
        flow_traces: flow_traces.unwrap_or_default(),
    };
    let mut pending: Option<PyErr> = None;
    let out = py.allow_threads(|| {
        let mut last: Option<Instant> = None;
        let mut last_stage = Stage::Replay;
        let mut cb = |stage: Stage, done: u64, total: u64| {
            let now = Instant::now();
            let finished = total != 0 && done >= total;
            if let Some(t) = last {
                if stage == last_stage && !finished && now.duration_since(t) < PROGRESS_INTERVAL {
                    return;
                }
            }
            last = Some(now);
            last_stage = stage;
            let res = Python::with_gil(|py| -> PyResult<()> {
                py.check_signals()?;
                match stage {
                    Stage::Replay => {
                        if let Some(f) = &progress {
                            f.call1(py, (done, total))?;
                        }
                    }
                    _ => {
                        if let Some(f) = &setup_progress {
                            f.call1(py, (stage.name(), done, total))?;
                        }
                    }
                }
                Ok(())
            });
            if let Err(e) = res {
                pending = Some(e);
                panic::resume_unwind(Box::new(Abandon));
            }
        };
        panic::catch_unwind(AssertUnwindSafe(|| api::run(&req, &mut cb)))
    });
    if let Some(e) = pending {
        return Err(e);
    }
    match out {
        Ok(Ok(report)) => Ok(report),
        Ok(Err(e)) => Err(to_pyerr(e)),
        Err(payload) => Err(SimError::new_err(format!(
            "internal error in run: {}",
            panic_message(payload.as_ref())
        ))),
    }
}

/// Validate a configuration (overrides and scheme applied, scheme parameters checked) without
/// running it; returns the scheme name the run would use. Raises `ConfigError`.
#[pyfunction]
#[pyo3(signature = (config_toml, config_path, overrides, scheme=None))]
fn check_config(
    py: Python<'_>,
    config_toml: String,
    config_path: Option<PathBuf>,
    overrides: Vec<String>,
    scheme: Option<String>,
) -> PyResult<String> {
    call_core(py, "check_config", || {
        api::check_config(
            &config_toml,
            config_path.as_deref(),
            &overrides,
            scheme.as_deref(),
        )
    })
}

/// [`check_config`] of many runs on one configuration, parsed once: `runs` is a list of
/// `(overrides, scheme)`; returns, per run in order, `(True, scheme name)` or `(False, error
/// message)`. Raises `ConfigError` for a TOML syntax error of the configuration itself.
#[pyfunction]
#[pyo3(signature = (config_toml, config_path, runs))]
fn check_configs(
    py: Python<'_>,
    config_toml: String,
    config_path: Option<PathBuf>,
    runs: Vec<(Vec<String>, Option<String>)>,
) -> PyResult<Vec<(bool, String)>> {
    call_core(py, "check_configs", || {
        api::check_configs(&config_toml, config_path.as_deref(), &runs).map(|v| {
            v.into_iter()
                .map(|r| match r {
                    Ok(s) => (true, s),
                    Err(e) => (false, e.to_string()),
                })
                .collect()
        })
    })
}

/// Every key a configuration accepts, as dotted paths (`timing.ecc[].name` for entries of an
/// array of tables).
#[pyfunction]
fn config_keys() -> Vec<String> {
    api::config_keys()
}

/// The `[scheme.params]` keys of `scheme` when built on the configuration `config_toml`.
#[pyfunction]
fn scheme_param_keys(py: Python<'_>, config_toml: String, scheme: String) -> PyResult<Vec<String>> {
    call_core(py, "scheme_param_keys", || {
        api::scheme_param_keys(&config_toml, &scheme)
    })
}

/// Names of the schemes the core knows.
#[pyfunction]
fn scheme_names() -> Vec<&'static str> {
    nandlab_core::scheme::NAMES.to_vec()
}

/// Parse a trace without simulating; returns `{"requests": n, "wall_s": s}` as JSON.
#[pyfunction]
fn parse_only(py: Python<'_>, path: PathBuf, trace_options_json: &str) -> PyResult<String> {
    let opts = parse_trace_options(trace_options_json)?;
    call_core(py, "parse_only", || {
        api::parse_only(Path::new(&path), &opts)
    })
}

/// Table-II-style statistics of a trace, as JSON.
#[pyfunction]
fn trace_stats(
    py: Python<'_>,
    path: PathBuf,
    trace_options_json: &str,
    page_size_bytes: u64,
) -> PyResult<String> {
    let opts = parse_trace_options(trace_options_json)?;
    if page_size_bytes == 0 {
        return Err(ConfigError::new_err(
            "page_size_bytes = 0: must be a positive number of bytes",
        ));
    }
    call_core(py, "trace_stats", || {
        api::trace_stats(&path, &opts, page_size_bytes)
    })
}

/// Convert a trace to canonical CSV (gzip when `output` ends in `.gz`); returns requests written.
#[pyfunction]
fn trace_convert(
    py: Python<'_>,
    input: PathBuf,
    trace_options_json: &str,
    output: PathBuf,
) -> PyResult<u64> {
    let opts = parse_trace_options(trace_options_json)?;
    call_core(py, "trace_convert", || {
        api::trace_convert(&input, &opts, &output)
    })
}

/// Generate a synthetic trace from generator parameters given as JSON; returns requests written.
#[pyfunction]
fn trace_generate(py: Python<'_>, params_json: String, output: PathBuf) -> PyResult<u64> {
    call_core(py, "trace_generate", || {
        api::trace_generate(&params_json, &output)
    })
}

/// Write the tagged SSD operations the cache layer makes of a trace (config with `[cache]`) to
/// `output` as canonical CSV; returns `{"ops", "slots", "ops_by_tag"}` as JSON.
#[pyfunction]
#[pyo3(signature = (config_toml, config_path, overrides, trace_path, trace_options_json, output))]
fn cache_stream(
    py: Python<'_>,
    config_toml: String,
    config_path: Option<PathBuf>,
    overrides: Vec<String>,
    trace_path: PathBuf,
    trace_options_json: &str,
    output: PathBuf,
) -> PyResult<String> {
    let trace_options = parse_trace_options(trace_options_json)?;
    let req = RunRequest {
        config_toml,
        config_path,
        overrides,
        scheme: None,
        trace_path,
        trace_options,
        flow_traces: Vec::new(),
    };
    call_core(py, "cache_stream", || api::cache_stream(&req, &output))
}

/// RBER tables (Guo Table 11 / Table 6 layouts) from the Vth model; request and result JSON.
#[pyfunction]
fn rber_table(py: Python<'_>, request_json: String) -> PyResult<String> {
    call_core(py, "rber_table", || api::rber_table(&request_json))
}

/// ECC latencies and UBER; request and result JSON.
#[pyfunction]
fn ecc_table(py: Python<'_>, request_json: String) -> PyResult<String> {
    call_core(py, "ecc_table", || api::ecc_table(&request_json))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("TraceError", py.get_type::<TraceError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("SimError", py.get_type::<SimError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(cache_stream, m)?)?;
    m.add_function(wrap_pyfunction!(parse_only, m)?)?;
    m.add_function(wrap_pyfunction!(trace_stats, m)?)?;
    m.add_function(wrap_pyfunction!(trace_convert, m)?)?;
    m.add_function(wrap_pyfunction!(trace_generate, m)?)?;
    m.add_function(wrap_pyfunction!(rber_table, m)?)?;
    m.add_function(wrap_pyfunction!(ecc_table, m)?)?;
    m.add_function(wrap_pyfunction!(check_config, m)?)?;
    m.add_function(wrap_pyfunction!(check_configs, m)?)?;
    m.add_function(wrap_pyfunction!(scheme_names, m)?)?;
    m.add_function(wrap_pyfunction!(config_keys, m)?)?;
    m.add_function(wrap_pyfunction!(scheme_param_keys, m)?)?;
    dpa::register(m)?;
    osd::register(m)?;
    Ok(())
}
