//! Entry points used by the Python front (`crates/nandlab-py`) and by Rust users.
//!
//! Every function here takes plain data and returns serialisable results or a
//! [`NandlabError`]; none of them panics on user input.

use std::path::{Path, PathBuf};

use crate::trace::{TraceError, TraceOptions};

/// Top-level error of the public API. Maps to Python `nandlab.TraceError`,
/// `nandlab.ConfigError` and `nandlab.SimError`.
#[derive(Debug, thiserror::Error)]
pub enum NandlabError {
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("{0}")]
    Sim(String),
}

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
}

/// Progress of a run: `(done, total)` in host requests; `total` is 0 when unknown.
pub type ProgressFn<'a> = dyn FnMut(u64, u64) + 'a;

/// Run one simulation and return the JSON report (see `stats::RunReport`).
pub fn run(req: &RunRequest, progress: &mut ProgressFn<'_>) -> Result<String, NandlabError> {
    let _ = (req, progress);
    todo!("engine")
}

/// Parse a trace without simulating: returns `{"requests": n, "wall_s": s}` as JSON.
pub fn parse_only(path: &Path, opts: &TraceOptions) -> Result<String, NandlabError> {
    let _ = (path, opts);
    todo!("trace")
}

/// Table-II-style statistics of a trace (see `trace::stats`), as JSON.
pub fn trace_stats(
    path: &Path,
    opts: &TraceOptions,
    page_size_bytes: u64,
) -> Result<String, NandlabError> {
    let _ = (path, opts, page_size_bytes);
    todo!("trace")
}

/// Convert a trace to canonical CSV (gzip when `output` ends in `.gz`); returns requests written.
pub fn trace_convert(input: &Path, opts: &TraceOptions, output: &Path) -> Result<u64, NandlabError> {
    let _ = (input, opts, output);
    todo!("trace")
}

/// Generate a synthetic trace from `GenParams` given as JSON (missing keys take defaults);
/// returns requests written.
pub fn trace_generate(params_json: &str, output: &Path) -> Result<u64, NandlabError> {
    let _ = (params_json, output);
    todo!("trace")
}
