//! The crate's top-level error and progress types, shared by the API, the engine and every
//! front end (they belong to none of them, so no module imports another just for these).

/// Top-level error of the public API. Maps to Python `nandlab.TraceError`,
/// `nandlab.ConfigError` and `nandlab.SimError`.
#[derive(Debug, thiserror::Error)]
pub enum NandlabError {
    #[error(transparent)]
    Trace(#[from] crate::trace::TraceError),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("{0}")]
    Sim(String),
}

/// Progress of a run: `(done, total)` in host requests; `total` is 0 when unknown.
pub type ProgressFn<'a> = dyn FnMut(u64, u64) + 'a;
