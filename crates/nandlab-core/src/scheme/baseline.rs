//! `baseline`: one program mode and one ECC for every page; host writes on stream 0 and GC
//! relocations on stream 1 (when the FTL has two or more streams), so relocated (colder) data
//! does not mix with fresh host data.
//!
//! Parameters (`[scheme.params]`):
//! * `mode` (u8, default 0): program mode id for all programs;
//! * `ecc` (u8, default 0): ECC id for all programs;
//! * `separate_gc_stream` (bool, default true).

use super::params::Params;
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

impl Baseline {
    /// Build from `[scheme.params]`.
    pub fn new(params: &toml::Table, timing: &Timing, streams: u32) -> Result<Self, ConfigError> {
        let p = Params::new("baseline", params);
        let b = Self::from_params(&p, timing, streams)?;
        p.finish()?;
        Ok(b)
    }

    /// Read the baseline keys from `p` (shared with schemes that extend the baseline).
    pub(crate) fn from_params(
        p: &Params<'_>,
        timing: &Timing,
        streams: u32,
    ) -> Result<Self, ConfigError> {
        let mode = p.usize("mode", 0, 0, timing.modes.len() - 1)? as u8;
        let ecc = p.usize("ecc", 0, 0, timing.eccs.len() - 1)? as u8;
        let separate = p.bool("separate_gc_stream", true)?;
        Ok(Baseline {
            mode,
            ecc,
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
            region: 0,
            page_type: None,
        }
    }
}
