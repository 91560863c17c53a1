//! API of `nandlab dpa` and `nandlab reproduce dpa`: DPA-PPU analysis of files, summaries and
//! profiles, the lifetime model, polynomial sets. JSON in, JSON out (see [`crate::dpa`]).

use super::{parse_request as parse, NandlabError};
use crate::config::ConfigError;
use crate::dpa::analyze::{analyze, summarize, AnalyzeRequest, FileStats};
use crate::dpa::lifetime::{lifetime, LifetimeRequest};
use crate::dpa::DpaError;

fn to_err(e: DpaError) -> NandlabError {
    match e {
        DpaError::Param {
            name,
            value,
            allowed,
        } => NandlabError::Config(ConfigError::Invalid {
            key: name.into(),
            value,
            msg: format!("allowed: {allowed}"),
        }),
        DpaError::File { path, msg } => NandlabError::Sim(format!("{path}: {msg}")),
        DpaError::Reliability(m) => NandlabError::Config(ConfigError::Invalid {
            key: "reliability".into(),
            value: String::new(),
            msg: m,
        }),
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String, NandlabError> {
    serde_json::to_string(v).map_err(|e| NandlabError::Sim(e.to_string()))
}

/// Analyse files ([`crate::dpa::analyze::analyze`]); `progress(bytes done, bytes total)`.
/// Files that cannot be read carry an `error` in the result; the others are analysed.
///
/// # Errors
/// [`NandlabError::Config`] for a malformed request or a bad configuration.
pub fn dpa_analyze(
    req_json: &str,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<String, NandlabError> {
    let req: AnalyzeRequest = parse(req_json, "dpa analyze")?;
    let res = analyze(&req, progress).map_err(to_err)?;
    to_json(&res)
}

/// Add up analysed files (a JSON list of the `files` entries of [`dpa_analyze`]) and give the
/// profile of each configuration ([`crate::dpa::analyze::summarize`]).
///
/// # Errors
/// [`NandlabError::Config`] for malformed input or files with different configurations.
pub fn dpa_summarize(files_json: &str) -> Result<String, NandlabError> {
    let files: Vec<FileStats> = parse(files_json, "dpa summarize")?;
    to_json(&summarize(&files).map_err(to_err)?)
}

/// The lifetime model ([`crate::dpa::lifetime::lifetime`]).
///
/// # Errors
/// [`NandlabError::Config`] for a malformed request or a parameter out of range.
pub fn dpa_lifetime(req_json: &str) -> Result<String, NandlabError> {
    let text = if req_json.trim().is_empty() {
        "{}"
    } else {
        req_json
    };
    let req: LifetimeRequest = parse(text, "dpa lifetime")?;
    to_json(&lifetime(&req).map_err(to_err)?)
}

/// The polynomial set of an order and count ([`crate::dpa::poly::polynomial_set`]).
///
/// # Errors
/// [`NandlabError::Config`] for an order or count out of range.
pub fn dpa_polynomials(order: u32, count: Option<usize>) -> Result<Vec<u32>, NandlabError> {
    crate::dpa::poly::polynomial_set(order, count).map_err(to_err)
}
