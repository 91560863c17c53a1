//! The timing the core runs on (ns), derived from `[timing]`, and the block layout.

use super::error::{check_us, invalid, ConfigError};
use super::Config;
use crate::flash::{BlockLayout, EccTiming, ProgramModeTiming, Timing};

pub(crate) fn us_to_ns(v: f64) -> u64 {
    (v * 1000.0).round() as u64
}

pub(crate) fn per_type_ns(key: &str, v: &[f64], bits: usize) -> Result<[u64; 4], ConfigError> {
    if v.len() != 1 && v.len() != bits {
        return Err(invalid(
            key,
            format!("{v:?}"),
            format!("give one value or one per page type ({bits} for this cell type)"),
        ));
    }
    let mut out = [0u64; 4];
    for (i, o) in out.iter_mut().enumerate() {
        let x = if v.len() == 1 {
            v[0]
        } else {
            v[i.min(bits - 1)]
        };
        check_us(key, x)?;
        *o = us_to_ns(x);
    }
    Ok(out)
}

impl Config {
    /// Resolve the timing in ns for the core.
    pub fn timing(&self) -> Result<Timing, ConfigError> {
        let bits = self.device.cell.bits();
        let t = &self.timing;
        let mut modes = vec![ProgramModeTiming {
            name: t.program_mode_name.clone(),
            program_ns: per_type_ns("timing.program_us", &t.program_us, bits)?,
        }];
        for (i, m) in t.program_modes.iter().enumerate() {
            modes.push(ProgramModeTiming {
                name: m.name.clone(),
                program_ns: per_type_ns(
                    &format!("timing.program_modes[{i}].program_us"),
                    &m.program_us,
                    bits,
                )?,
            });
        }
        let mut eccs = vec![EccTiming {
            name: t.ecc_name.clone(),
            decode_ns: us_to_ns(t.ecc_decode_us),
            extra_sense_ns: 0,
            decode_corrupted_ns: us_to_ns(t.ecc_decode_corrupted_us),
            encode_ns: us_to_ns(t.ecc_encode_us),
            detect_only: false,
        }];
        for e in &t.ecc {
            eccs.push(EccTiming {
                name: e.name.clone(),
                decode_ns: us_to_ns(e.decode_us),
                extra_sense_ns: us_to_ns(e.extra_sense_us),
                decode_corrupted_ns: us_to_ns(e.decode_corrupted_us),
                encode_ns: us_to_ns(e.encode_us),
                detect_only: e.detect_only,
            });
        }
        let bytes_per_s = t.channel_mt_s * 1e6 * t.channel_width_bytes as f64;
        // One FTL page's transfer: the mapping unit's bytes (a part moves any column range of
        // its page register), the page's without sub-page mapping.
        let transfer_ns = (self.map_page_bytes() as f64 / bytes_per_s * 1e9).round() as u64;
        Ok(Timing {
            read_ns: per_type_ns("timing.read_us", &t.read_us, bits)?,
            modes,
            eccs,
            erase_ns: us_to_ns(t.erase_us),
            transfer_ns,
        })
    }

    /// Block layout for the configured cell type and page order.
    ///
    /// With a mapping unit smaller than the page ([`Config::map_units`] = U > 1) this is the
    /// FTL's view: each physical page's word line and page type repeated for its U units.
    pub fn layout(&self) -> BlockLayout {
        BlockLayout::new(
            self.device.pages_per_block as usize,
            self.device.cell.bits(),
            self.device.page_order,
        )
        .with_units(self.map_units() as usize)
    }
}
