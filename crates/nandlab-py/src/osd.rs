//! Python bindings of the object device (`nandlab osd`, Guo ch. 4): a file-level trace through
//! the host layer `objfs` onto the OSD, and the statistics of a file-level trace. Every call
//! releases the GIL (like `run`) and maps core errors to `TraceError` / `ConfigError` /
//! `SimError`.

use std::path::PathBuf;

use nandlab_core::api;
use pyo3::prelude::*;

use super::call_core;

/// Replay the file-level trace `trace_path` on the object device of the configuration (which
/// needs an `[osd]` section: presets `dmm`, `obfs`, `yaffs2`); `max_commands` (0 = all)
/// limits the measured commands. Returns the report as JSON.
#[pyfunction]
#[pyo3(signature = (config_toml, config_path, overrides, trace_path, max_commands=0))]
fn osd_run(
    py: Python<'_>,
    config_toml: String,
    config_path: Option<PathBuf>,
    overrides: Vec<String>,
    trace_path: PathBuf,
    max_commands: u64,
) -> PyResult<String> {
    call_core(py, "osd_run", || {
        let cfg = api::osd_config(&config_toml, config_path.as_deref(), &overrides)?;
        let v = api::osd_run_trace(&cfg, &trace_path, max_commands)?;
        Ok(v.to_string())
    })
}

/// Run DMMbench (`pattern` = seq_write / seq_read / rand_write / rand_read, `request_bytes`
/// per access, `total_bytes` moved, `file_bytes` file size with 0 = the total) on the object
/// device of the configuration. Returns the report as JSON.
#[pyfunction]
#[pyo3(signature = (config_toml, config_path, overrides, pattern, request_bytes, total_bytes, file_bytes=0))]
#[allow(clippy::too_many_arguments)]
fn osd_bench(
    py: Python<'_>,
    config_toml: String,
    config_path: Option<PathBuf>,
    overrides: Vec<String>,
    pattern: String,
    request_bytes: u64,
    total_bytes: u64,
    file_bytes: u64,
) -> PyResult<String> {
    call_core(py, "osd_bench", || {
        let cfg = api::osd_config(&config_toml, config_path.as_deref(), &overrides)?;
        let v = api::osd_run_bench(&cfg, &pattern, request_bytes, total_bytes, file_bytes)?;
        Ok(v.to_string())
    })
}

/// Table-17-style statistics of a file-level trace (`*_fs.jsonl[.gz]`), as JSON.
#[pyfunction]
fn fs_trace_stats(py: Python<'_>, path: PathBuf) -> PyResult<String> {
    call_core(py, "fs_trace_stats", || {
        Ok(api::fs_trace_stats(&path)?.to_string())
    })
}

/// Power-cut test: `cuts` seeded cuts over the commands of the file-level trace `trace_path`
/// (preconditioning plus the first `max_commands`), or, without a trace, of the mixed
/// workload when `pattern` is `"mixed"` (`mixed_commands` commands over `mixed_objects`
/// objects) or else of DMMbench (`pattern`, `request_bytes`, `total_bytes`); recovery
/// `variant` = full / no_capacitor / no_rollback / no_reapply / no_reachability /
/// no_onode_buffer; `cut_only`: cut only flash operations whose class contains this text;
/// `small_device`: the crash test's small device (`api::crash_small_device`, applied before
/// `overrides`). Returns the crash report as JSON (with `device_overrides`).
#[pyfunction]
#[pyo3(signature = (config_toml, config_path, overrides, trace_path, max_commands, pattern, request_bytes, total_bytes, cuts, seed, variant, cut_only=None, small_device=false, mixed_commands=0, mixed_objects=0))]
#[allow(clippy::too_many_arguments)]
fn osd_crash_test(
    py: Python<'_>,
    config_toml: String,
    config_path: Option<PathBuf>,
    overrides: Vec<String>,
    trace_path: Option<PathBuf>,
    max_commands: u64,
    pattern: String,
    request_bytes: u64,
    total_bytes: u64,
    cuts: u32,
    seed: u64,
    variant: String,
    cut_only: Option<String>,
    small_device: bool,
    mixed_commands: u64,
    mixed_objects: u64,
) -> PyResult<String> {
    call_core(py, "osd_crash_test", || {
        let mut cfg = api::osd_config(&config_toml, config_path.as_deref(), &overrides)?;
        let mut device_overrides = Vec::new();
        if small_device {
            device_overrides = api::crash_small_device(&cfg);
            let all: Vec<String> = device_overrides.iter().chain(&overrides).cloned().collect();
            cfg = api::osd_config(&config_toml, config_path.as_deref(), &all)?;
        }
        let spec = api::CrashSpec {
            cuts,
            seed,
            variant: &variant,
            cut_only: cut_only.as_deref(),
        };
        let mut v = match &trace_path {
            Some(t) => api::osd_crash_test_trace(&cfg, t, max_commands, &spec)?,
            None if pattern == "mixed" => {
                api::osd_crash_test_mixed(&cfg, mixed_commands, mixed_objects, &spec)?
            }
            None => api::osd_crash_test_bench(&cfg, &pattern, request_bytes, total_bytes, &spec)?,
        };
        if let serde_json::Value::Object(m) = &mut v {
            m.insert("device_overrides".into(), device_overrides.into());
        }
        Ok(v.to_string())
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(osd_run, m)?)?;
    m.add_function(wrap_pyfunction!(fs_trace_stats, m)?)?;
    m.add_function(wrap_pyfunction!(osd_bench, m)?)?;
    m.add_function(wrap_pyfunction!(osd_crash_test, m)?)?;
    Ok(())
}
