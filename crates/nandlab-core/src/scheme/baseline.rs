//! `baseline`: one program mode and one ECC for every page; host writes on stream 0 and GC
//! relocations on stream 1 (when the FTL has two or more streams), so relocated (colder) data
//! does not mix with fresh host data.
//!
//! Parameters (`[scheme.params]`):
//! * `mode` (u8, default 0): program mode id for all programs;
//! * `ecc` (u8, default 0): ECC id for all programs;
//! * `separate_gc_stream` (bool, default true).

use super::{Ctx, Placement, Scheme, Source};
use crate::config::ConfigError;
use crate::flash::Timing;

/// The baseline scheme.
#[derive(Clone, Debug)]
pub struct Baseline {
    mode: u8,
    ecc: u8,
    gc_stream: u8,
}

fn param_u8(params: &toml::Table, key: &str, max: usize) -> Result<u8, ConfigError> {
    match params.get(key) {
        None => Ok(0),
        Some(toml::Value::Integer(v)) if *v >= 0 && (*v as usize) < max => Ok(*v as u8),
        Some(v) => Err(ConfigError::Invalid {
            key: format!("scheme.params.{key}"),
            value: v.to_string(),
            msg: format!("allowed range is 0 ..= {}", max.saturating_sub(1)),
        }),
    }
}

impl Baseline {
    /// Build from `[scheme.params]`.
    pub fn new(params: &toml::Table, timing: &Timing, streams: u32) -> Result<Self, ConfigError> {
        for k in params.keys() {
            if !["mode", "ecc", "separate_gc_stream"].contains(&k.as_str()) {
                return Err(ConfigError::Invalid {
                    key: format!("scheme.params.{k}"),
                    value: params[k].to_string(),
                    msg: "unknown parameter of scheme `baseline` (known: mode, ecc, separate_gc_stream)"
                        .into(),
                });
            }
        }
        let separate = match params.get("separate_gc_stream") {
            None => true,
            Some(toml::Value::Boolean(b)) => *b,
            Some(v) => {
                return Err(ConfigError::Invalid {
                    key: "scheme.params.separate_gc_stream".into(),
                    value: v.to_string(),
                    msg: "must be true or false".into(),
                })
            }
        };
        Ok(Baseline {
            mode: param_u8(params, "mode", timing.modes.len())?,
            ecc: param_u8(params, "ecc", timing.eccs.len())?,
            gc_stream: if separate && streams > 1 { 1 } else { 0 },
        })
    }
}

impl Scheme for Baseline {
    fn name(&self) -> &'static str {
        "baseline"
    }

    fn placement(&mut self, _lpn: u32, source: Source, _ctx: &Ctx<'_>) -> Placement {
        Placement {
            stream: if source == Source::Host {
                0
            } else {
                self.gc_stream
            },
            mode: self.mode,
            ecc: self.ecc,
        }
    }
}
