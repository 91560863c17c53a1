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

/// The stage of a run a progress report is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The sizing pre-pass over the trace: `done` requests read, `total` 0 (unknown).
    Prepass,
    /// Preconditioning (untimed fill, aging, refresh): `done` of `total` page writes planned
    /// (aging until steady may stop before `total`).
    Precondition,
    /// The replay: `done` of `total` host requests (`total` 0 when unknown).
    Replay,
}

impl Stage {
    /// Lower-case name (`prepass`, `precondition`, `replay`).
    pub fn name(self) -> &'static str {
        match self {
            Stage::Prepass => "prepass",
            Stage::Precondition => "precondition",
            Stage::Replay => "replay",
        }
    }
}

/// Progress of a run: `(stage, done, total)`; see [`Stage`] for the units of each stage.
pub type ProgressFn<'a> = dyn FnMut(Stage, u64, u64) + 'a;
