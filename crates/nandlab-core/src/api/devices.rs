//! The devices (SPC ASUs, DiskSim/MQSim devices, Tencent CBS volumes) of a multi-device trace:
//! the listing `nandlab trace stats` prints, and the hints errors give (which ids exist, which
//! to pick with `--device ID`).
//!
//! Works on the reader's public interface only: a merged trace places device *d* at
//! `base(d)` ([`TraceReader::device_bases`]), so a merged request's device is the last base at
//! or below its offset.

use std::path::Path;

use serde::Serialize;

use crate::config::human_bytes;
use crate::trace::{TraceError, TraceOptions, TraceReader};

/// One device of a multi-device trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceSummary {
    /// Device id as in the file (ASU, device, VolumeID): the value `--device` takes.
    pub device: u32,
    /// Requests.
    pub requests: u64,
    /// Read requests.
    pub reads: u64,
    /// Write requests.
    pub writes: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Highest byte touched on the device + 1 (its address space from 0), bytes.
    pub size_bytes: u64,
    /// Where the device starts in the merged address space, bytes.
    pub merged_base_bytes: u64,
}

/// The devices of the trace at `path`, ascending by id; empty for a single-device trace or a
/// format without devices. `opts.device` is ignored (all devices are listed).
///
/// # Errors
/// Those of [`TraceReader::open`] and [`TraceReader::next_request`].
pub fn devices(path: &Path, opts: &TraceOptions) -> Result<Vec<DeviceSummary>, TraceError> {
    let mut o = opts.clone();
    o.device = None;
    let mut rd = TraceReader::open(path, &o)?;
    if !rd.format().is_multi_device() || rd.device_bases().len() < 2 {
        return Ok(Vec::new());
    }
    let bases: Vec<u64> = rd.device_bases().iter().map(|&(_, b)| b).collect();
    let mut out: Vec<DeviceSummary> = rd
        .device_bases()
        .iter()
        .map(|&(device, base)| DeviceSummary {
            device,
            requests: 0,
            reads: 0,
            writes: 0,
            bytes_read: 0,
            bytes_written: 0,
            size_bytes: 0,
            merged_base_bytes: base,
        })
        .collect();
    while let Some(r) = rd.next_request()? {
        let i = bases
            .partition_point(|&b| b <= r.offset_bytes)
            .saturating_sub(1);
        let d = &mut out[i];
        d.requests += 1;
        r.op.tally(
            r.len_bytes,
            (&mut d.reads, &mut d.bytes_read),
            (&mut d.writes, &mut d.bytes_written),
        );
        let end = (r.offset_bytes - bases[i]).saturating_add(r.len_bytes);
        d.size_bytes = d.size_bytes.max(end);
    }
    Ok(out)
}

/// At most this many devices are named in an error message.
const HINT_DEVICES: usize = 5;

/// "N devices; the busiest: 1063 (1,234 requests, 12.0 GiB), …" for error messages, or
/// `None` when the trace has fewer than two devices (or cannot be read).
pub fn device_hint(path: &Path, opts: &TraceOptions) -> Option<String> {
    let mut devs = devices(path, opts).ok()?;
    if devs.len() < 2 {
        return None;
    }
    let n = devs.len();
    devs.sort_by(|a, b| b.requests.cmp(&a.requests).then(a.device.cmp(&b.device)));
    let top: Vec<String> = devs
        .iter()
        .take(HINT_DEVICES)
        .map(|d| {
            format!(
                "{} ({} request{}, {})",
                d.device,
                thousands(d.requests),
                if d.requests == 1 { "" } else { "s" },
                human_bytes(d.size_bytes)
            )
        })
        .collect();
    Some(format!(
        "{n} devices; the busiest: {}{}; `nandlab trace stats {}` lists them all",
        top.join(", "),
        if n > HINT_DEVICES { ", …" } else { "" },
        path.display()
    ))
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Add what a user needs to pick a device to an error met while reading or sizing a trace:
/// a device filter that kept no request names the ids that exist; a merged address space too
/// large for the device model says so and how to replay one device.
pub fn explain(err: super::NandlabError, path: &Path, opts: &TraceOptions) -> super::NandlabError {
    use super::NandlabError;
    match err {
        NandlabError::Trace(TraceError::NoRequests { file, detail }) => {
            let Some(d) = opts.device else {
                return NandlabError::Trace(TraceError::NoRequests { file, detail });
            };
            let listed = devices(path, opts).unwrap_or_default();
            if listed.iter().any(|x| x.device == d) || listed.is_empty() {
                return NandlabError::Trace(TraceError::NoRequests { file, detail });
            }
            let hint = device_hint(path, opts).unwrap_or_default();
            NandlabError::Trace(TraceError::NoRequests {
                file,
                detail: format!("{detail}; device {d} is not in this trace, which has {hint}"),
            })
        }
        NandlabError::Trace(TraceError::Address { file, request, msg }) => {
            // The pre-pass's source may not know the file's name.
            let file = if file.as_os_str() == "<trace>" {
                path.to_path_buf()
            } else {
                file
            };
            let hint = if opts.device.is_none() {
                device_hint(path, opts)
            } else {
                None
            };
            let msg = match hint {
                Some(hint) => format!(
                    "{msg}; or replay one device of this multi-device trace with --device ID \
                     (device= in Python): it has {hint}"
                ),
                None => msg,
            };
            NandlabError::Trace(TraceError::Address { file, request, msg })
        }
        NandlabError::Config(crate::config::ConfigError::Invalid { key, value, msg })
            if key == "device.logical_capacity_bytes"
                && value.starts_with("0 (auto")
                && opts.device.is_none() =>
        {
            match device_hint(path, opts) {
                Some(hint) => NandlabError::Trace(TraceError::InvalidOption {
                    file: path.to_path_buf(),
                    option: "device",
                    msg: format!(
                        "none given, so all devices are merged into one address space \
                         ({}), too large for the modelled SSD: {}. Pack what the trace \
                         touches (device.address_map = \"compact\" or \"auto\"), or replay \
                         one device with --device ID (device= in Python); this trace has {hint}",
                        value
                            .trim_start_matches("0 (auto: the trace's address space, ")
                            .trim_end_matches(')'),
                        msg.split(". ").next().unwrap_or(&msg)
                    ),
                }),
                None => {
                    NandlabError::Config(crate::config::ConfigError::Invalid { key, value, msg })
                }
            }
        }
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::NandlabError;

    /// Tencent CBS rows: `timestamp_s,offset_sectors,size_sectors,op,volume`.
    fn cbs(rows: &[(u64, u64, u32)]) -> tempfile::NamedTempFile {
        use std::io::Write;
        let mut f = tempfile::NamedTempFile::new().unwrap();
        for (i, &(off, size, vol)) in rows.iter().enumerate() {
            writeln!(
                f,
                "{},{off},{size},{},{vol}",
                1_538_323_200 + i as u64,
                i % 2
            )
            .unwrap();
        }
        f
    }

    #[test]
    fn devices_of_a_merged_trace_with_counts_and_sizes() {
        let f = cbs(&[(0, 8, 7), (100, 8, 9), (10, 16, 7), (2048, 8, 7)]);
        let opts = TraceOptions {
            format: Some(crate::trace::TraceFormat::Tencent),
            ..TraceOptions::default()
        };
        let d = devices(f.path(), &opts).unwrap();
        assert_eq!(d.iter().map(|x| x.device).collect::<Vec<_>>(), vec![7, 9]);
        assert_eq!((d[0].requests, d[1].requests), (3, 1));
        assert_eq!(d[0].size_bytes, 2056 * 512);
        assert_eq!(d[1].size_bytes, 108 * 512);
        assert_eq!(d[1].merged_base_bytes, 2 << 20); // device 7 rounded up to whole MiB
        let hint = device_hint(f.path(), &opts).unwrap();
        assert!(
            hint.starts_with("2 devices; the busiest: 7 (3 requests"),
            "{hint}"
        );
    }

    #[test]
    fn a_filter_that_keeps_nothing_names_the_devices_that_exist() {
        let f = cbs(&[(0, 8, 7), (100, 8, 9)]);
        let opts = TraceOptions {
            device: Some(0),
            ..TraceOptions::default()
        };
        let e = TraceReader::open(f.path(), &opts).unwrap_err();
        let e = explain(NandlabError::Trace(e), f.path(), &opts).to_string();
        assert!(
            e.contains("device 0 is not in this trace") && e.contains("7 (1 request,"),
            "{e}"
        );
    }
}
