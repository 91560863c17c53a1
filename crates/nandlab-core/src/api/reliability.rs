//! API of `nandlab rber` and `nandlab ecc`: RBER tables in Guo's layouts and ECC latencies.

use std::path::PathBuf;
use std::time::Instant;

use serde::Deserialize;
use serde_json::json;

use super::{parse_request, NandlabError};
use crate::config::ConfigError;
use crate::ecc::{Bch, BchTiming, Ldpc, CRC_NS, LDPC_HARD_LIMIT, LDPC_SENSE_NS, LDPC_TRANSFER_NS};
use crate::reliability::table::{CacheStatus, RberTable, TableSpec};
use crate::reliability::vth::{LevelConfig, VthParams};

/// Guo Table 6 (extra LDPC soft-sensing levels; rows P/E, columns retention): used here as
/// the target when fitting the soft-sensing thresholds to the model's RBER (Guo §3.6), never
/// as a result. See [`crate::reliability::table6`].
pub use crate::reliability::table6::{
    AGE_S as GUO_TABLE6_RETENTION_S, LEVELS as GUO_TABLE6_LEVELS, PE as GUO_TABLE6_PE,
};

/// ISPP step of Guo's Table 6 (the normal program mode, §3.2), V.
const TABLE6_DVPP_V: f64 = 0.15;

fn bad(key: &str, value: impl std::fmt::Display, msg: impl Into<String>) -> NandlabError {
    NandlabError::Config(ConfigError::Invalid {
        key: key.into(),
        value: value.to_string(),
        msg: msg.into(),
    })
}

/// Request of [`rber_table`].
#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RberRequest {
    /// `mlc` or `tlc`.
    pub cell: String,
    /// P/E cycles.
    pub pe: Vec<f64>,
    /// Retention times, s.
    pub retention_s: Vec<f64>,
    /// Program modes by ISPP step, V.
    pub dvpp_v: Vec<f64>,
    /// Level configurations: `normal`, `nunma1`, `nunma2`, `nunma3`.
    pub levels: Vec<String>,
    /// Cache directory.
    pub cache_dir: String,
    /// Normal-state gap between verify voltage and lower read reference, V.
    pub read_ref_margin_v: f64,
}

impl Default for RberRequest {
    fn default() -> Self {
        RberRequest {
            cell: "mlc".into(),
            pe: GUO_TABLE6_PE.to_vec(),
            retention_s: GUO_TABLE6_RETENTION_S.to_vec(),
            dvpp_v: vec![0.15],
            levels: vec![
                "normal".into(),
                "nunma1".into(),
                "nunma2".into(),
                "nunma3".into(),
            ],
            cache_dir: String::new(),
            read_ref_margin_v: crate::reliability::vth::NORMAL_READ_REF_MARGIN_V,
        }
    }
}

/// RBER over the requested grid (Guo Table 11 layout: rows P/E × level, columns retention)
/// and the soft-sensing levels of Guo Table 6 derived from the model's RBER. JSON in, JSON out.
///
/// # Errors
/// [`NandlabError::Config`] naming the bad field.
pub fn rber_table(req_json: &str) -> Result<String, NandlabError> {
    let req: RberRequest = parse_request(req_json, "rber")?;
    let params = match req.cell.as_str() {
        "mlc" => VthParams::guo_ch3_mlc(),
        "tlc" => VthParams::tlc(),
        other => return Err(bad("cell", other, "allowed: mlc, tlc")),
    }
    .with_read_ref_margin(req.read_ref_margin_v)
    .map_err(|e| bad("read_ref_margin_v", req.read_ref_margin_v, e.to_string()))?;
    let mut levels = Vec::new();
    for l in &req.levels {
        levels.push(match l.as_str() {
            "normal" => LevelConfig::Normal,
            "nunma1" => LevelConfig::nunma(1).map_err(|e| bad("levels", l, e.to_string()))?,
            "nunma2" => LevelConfig::nunma(2).map_err(|e| bad("levels", l, e.to_string()))?,
            "nunma3" => LevelConfig::nunma(3).map_err(|e| bad("levels", l, e.to_string()))?,
            other => {
                return Err(bad(
                    "levels",
                    other,
                    "allowed: normal, nunma1, nunma2, nunma3",
                ))
            }
        });
        if req.cell == "tlc" && l != "normal" {
            return Err(bad(
                "levels",
                l,
                "reduced-state configurations are MLC only",
            ));
        }
    }
    let mut spec = TableSpec::guo_default();
    spec.params = params;
    spec.pe = req.pe.clone();
    spec.retention_s = req.retention_s.clone();
    spec.modes_dvpp = req.dvpp_v.clone();
    spec.levels = levels;
    let dir = if req.cache_dir.is_empty() {
        crate::reliability::runtime::cache_dir(&crate::config::Config::default())
    } else {
        PathBuf::from(&req.cache_dir)
    };
    let t0 = Instant::now();
    let (table, status) = RberTable::load_or_build(&spec, &dir)
        .map_err(|e| bad("rber", dir.display(), e.to_string()))?;
    let wall = t0.elapsed().as_secs_f64();
    let mut rows = Vec::new();
    for (m, &dvpp) in req.dvpp_v.iter().enumerate() {
        for (l, name) in req.levels.iter().enumerate() {
            for (p, &pe) in req.pe.iter().enumerate() {
                for (r, &ret) in req.retention_s.iter().enumerate() {
                    let i =
                        ((m * req.levels.len() + l) * req.pe.len() + p) * req.retention_s.len() + r;
                    rows.push(json!({
                        "dvpp_v": dvpp, "level": name, "pe": pe, "retention_s": ret,
                        "rber": table.at(m, l, p, r),
                        "ci95_half": table.ci95_half.get(i).copied(),
                        "cells": table.cells.get(i).copied(),
                    }));
                }
            }
        }
    }
    // Guo Table 6: soft-sensing levels of MLC pages at the normal state and ΔVpp 0.15 V
    // (Guo §3.2), always on the thesis's full grid (P/E 2000–6000 × age 0–1 month) whatever
    // grid, modes and levels were asked for, with thresholds fitted (hard limit fixed at
    // 4e-3) to Table 6 over the model's RBER at Table 6's cells. Only the cell type and the
    // read-reference margin (the model itself) change it.
    let soft = if req.cell != "mlc" {
        serde_json::Value::Null
    } else {
        // Its own table (normal level, Table 6's grid, ΔVpp 0.15), never the request's: the
        // Monte-Carlo draws of a table depend on its whole spec, so sharing the request's
        // table would make the comparison depend on the grid asked for.
        let mut s6 = spec.clone();
        s6.pe = GUO_TABLE6_PE.to_vec();
        s6.retention_s = GUO_TABLE6_RETENTION_S.to_vec();
        s6.modes_dvpp = vec![TABLE6_DVPP_V];
        s6.levels = vec![LevelConfig::Normal];
        let (t6, _) = RberTable::load_or_build(&s6, &dir)
            .map_err(|e| bad("rber", dir.display(), e.to_string()))?;
        let (t6, l) = (&t6, 0);
        let mut pts = Vec::new();
        for (p, &pe) in GUO_TABLE6_PE.iter().enumerate() {
            for (r, &ret) in GUO_TABLE6_RETENTION_S.iter().enumerate() {
                pts.push((t6.rber(pe, ret, 0, l), GUO_TABLE6_LEVELS[p][r]));
            }
        }
        let th = Ldpc::fit_thresholds(&pts, LDPC_HARD_LIMIT, 6)
            .map_err(|e| bad("thresholds", "", e.to_string()))?;
        let ldpc = Ldpc::new(8 * 4608, 0.0, 0.0, th.clone())
            .map_err(|e| bad("thresholds", "", e.to_string()))?;
        let mut cells = Vec::new();
        let (mut exact, mut within1) = (0, 0);
        for (p, &pe) in GUO_TABLE6_PE.iter().enumerate() {
            for (r, &ret) in GUO_TABLE6_RETENTION_S.iter().enumerate() {
                let rb = t6.rber(pe, ret, 0, l);
                let lv = ldpc.levels_for(rb).map_or(-1, i64::from);
                let want = i64::from(GUO_TABLE6_LEVELS[p][r]);
                exact += usize::from(lv == want);
                within1 += usize::from((lv - want).abs() <= 1);
                cells.push(json!({"pe": pe, "retention_s": ret, "rber": rb,
                    "levels": lv, "guo_levels": want}));
            }
        }
        json!({"thresholds": th, "hard_limit": LDPC_HARD_LIMIT,
               "dvpp_v": TABLE6_DVPP_V, "level": "normal",
               "exact": exact, "within_one": within1, "cells": cells})
    };
    Ok(json!({
        "cell": req.cell,
        "table_cache": match status { CacheStatus::Hit => "hit", CacheStatus::Built => "built" },
        "wall_s": wall,
        "rows": rows,
        "soft_sensing": soft,
    })
    .to_string())
}

/// Request of [`ecc_table`].
#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EccRequest {
    /// Page (data) size, bytes.
    pub page_size_bytes: u32,
    /// BCH capabilities to tabulate.
    pub t: Vec<u32>,
    /// RBERs for the UBER columns.
    pub rber: Vec<f64>,
}

impl Default for EccRequest {
    fn default() -> Self {
        EccRequest {
            page_size_bytes: 8192,
            t: vec![6, 12, 24, 40],
            rber: vec![1e-5, 1e-4, 1e-3, 4e-3],
        }
    }
}

/// BCH encode/decode latency (FlexECC §2.2, eq. 4–5, scaled from 10 µs at t = 6), CRC and
/// LDPC per-level costs, and UBER per code and RBER (binomial tail, Guo eq. 2.6). JSON in,
/// JSON out.
pub fn ecc_table(req_json: &str) -> Result<String, NandlabError> {
    let req: EccRequest = parse_request(req_json, "ecc")?;
    if req.page_size_bytes == 0 || req.page_size_bytes > 1 << 20 {
        return Err(bad(
            "page_size_bytes",
            req.page_size_bytes,
            "allowed 1 ..= 1 MiB",
        ));
    }
    for &r in &req.rber {
        if !(r.is_finite() && (0.0..=0.5).contains(&r)) {
            return Err(bad("rber", r, "allowed 0 ..= 0.5"));
        }
    }
    let bits = 8 * req.page_size_bytes;
    let mut rows = Vec::new();
    for &t in &req.t {
        let b = Bch::for_page(bits, t, &BchTiming::flexecc_hw())
            .map_err(|e| bad("t", t, e.to_string()))?;
        let ub: Vec<_> = req
            .rber
            .iter()
            .map(|&r| json!({"rber": r, "uber": b.uber(r)}))
            .collect();
        rows.push(json!({
            "code": "bch", "t": t, "n": b.n, "k": b.k, "m": b.m,
            "encode_us": b.encode_ns() / 1000.0,
            "decode_clean_us": b.decode_clean_ns() / 1000.0,
            "decode_corrupted_us": b.decode_corrupted_ns() / 1000.0,
            "crc_speedup_correct": b.crc_speedup_correct(),
            "crc_speedup_error": b.crc_speedup_error(),
            "uber": ub,
        }));
    }
    rows.push(json!({"code": "crc", "detect_us": CRC_NS / 1000.0,
        "note": "detect only: a corrupted page is reported, never corrected"}));
    rows.push(json!({"code": "ldpc", "hard_limit_rber": LDPC_HARD_LIMIT,
        "sense_us_per_level": LDPC_SENSE_NS / 1000.0,
        "transfer_us_per_level": LDPC_TRANSFER_NS / 1000.0}));
    Ok(json!({"page_size_bytes": req.page_size_bytes, "rows": rows}).to_string())
}
