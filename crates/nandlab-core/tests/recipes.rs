//! The recipes of `docs/architecture.md`, followed as written (issue 31). Every `rust` block of
//! that page is a piece of this file (`python/tests/test_doc_examples.py` checks that each
//! block is found here, line for line), so the page cannot drift from what runs.
//!
//! * **Add a scheme**: the toy scheme `toy` (host writes in a faster program mode) as the
//!   recipe's file `src/scheme/toy.rs` would hold it, picked by name from a config through the
//!   recipe's registry arm, run on a small device and compared with the baseline.
//! * **Add a trace format**: a toy format read outside the crate (a
//!   [`nandlab_core::host::RequestSource`]), replayed through `api::simulate_source` and
//!   compared with the same requests in canonical CSV read by the crate's own
//!   `trace::TraceReader`; its errors name file, line and field.

use nandlab_core::api::{simulate_source, NandlabError};
use nandlab_core::config::{load, Config, ConfigError};
use nandlab_core::engine::Engine;
use nandlab_core::flash::Timing;
use nandlab_core::host::VecSource;
use nandlab_core::scheme::Scheme;
use nandlab_core::trace::{sniff_format, HostRequest, Op, TraceError, TraceFormat, TraceReader};
use serde_json::Value;

// ----- recipe (a): add a scheme --------------------------------------------------------------

mod toy {
    //! `toy`: every host write in a fast program mode, GC moves in the normal mode 0.
    //!
    //! Parameters (`[scheme.params]`):
    //! * `mode` (default 1): program mode id of host writes (`[[timing.program_modes]]`).
    use nandlab_core::config::ConfigError;
    use nandlab_core::flash::Timing;
    use nandlab_core::scheme::params::Params;
    use nandlab_core::scheme::{Ctx, DeviceInfo, Placement, Scheme, Source};

    /// The toy scheme.
    pub struct Toy {
        mode: u8,
        host_programs: u64,
    }

    impl Toy {
        /// Build from `[scheme.params]` (an unknown key is an error).
        pub fn new(
            params: &toml::Table,
            timing: &Timing,
            _streams: u32,
        ) -> Result<Toy, ConfigError> {
            let p = Params::new("toy", params);
            let mode = p.usize("mode", 1, 0, timing.modes.len() - 1)? as u8;
            p.finish()?;
            Ok(Toy {
                mode,
                host_programs: 0,
            })
        }
    }

    impl Scheme for Toy {
        fn name(&self) -> &'static str {
            "toy"
        }

        fn placement(&mut self, _lpn: u32, source: Source, _ctx: &Ctx<'_>) -> Placement {
            let host = source == Source::Host;
            self.host_programs += u64::from(host);
            Placement {
                mode: if host { self.mode } else { 0 },
                ..Placement::NONE
            }
        }

        fn validate_device(&self, dev: &DeviceInfo) -> Result<(), ConfigError> {
            if dev.modes < 2 {
                let need = "a second program mode ([[timing.program_modes]])";
                return Err(DeviceInfo::mismatch("toy", need, "xia-diffecc"));
            }
            Ok(())
        }

        fn stats(&self) -> serde_json::Value {
            serde_json::json!({ "host_programs": self.host_programs })
        }
    }
}

/// The crate's `scheme::registry`, with the arm the recipe adds to it in front.
fn registry(
    name: &str,
    params: &toml::Table,
    timing: &Timing,
    streams: u32,
) -> Result<Box<dyn Scheme>, ConfigError> {
    match name {
        "toy" => Ok(Box::new(toy::Toy::new(params, timing, streams)?)),
        other => nandlab_core::scheme::registry(other, params, timing, streams),
    }
}

/// A run of `cfg` over `reqs` as `api::simulate_source` does it, for a device of fixed size
/// (`device.logical_capacity_bytes`) and no preconditioning fill: the scheme named by the
/// config comes from [`registry`].
fn run(cfg: Config, reqs: &[HostRequest]) -> Result<Value, NandlabError> {
    let (geo, logical_pages) = cfg.size_device(0)?;
    let timing = cfg.timing()?;
    let scheme = registry(
        &cfg.scheme.name,
        &cfg.scheme.params,
        &timing,
        cfg.ftl.streams,
    )?;
    let mut engine = Engine::new(cfg, geo, logical_pages, scheme)?;
    engine.precondition(None, &mut |_, _, _| {})?;
    engine.run(&mut VecSource::new(reqs.to_vec()), 0, &mut |_, _, _| {})?;
    Ok(engine.report(Value::Null, 0.0, 0.0))
}

/// One plane of MLC, 16 MiB logical, a second program mode at half the program time.
const TOY_DEVICE: &str = r#"
[device]
channels = 1
pages_per_block = 64
page_size_bytes = 8192
logical_capacity_bytes = 16777216
[timing]
read_us = [50.0, 90.0]
program_us = [1300.0]
ecc_decode_us = 0.0
[[timing.program_modes]]
name = "fast"
program_us = [650.0]
[precondition]
fill = "none"
[scheme]
name = "toy"
"#;

/// 20 one-page writes 10 ms apart (none waits for another), then a read of each.
fn writes_then_reads() -> Vec<HostRequest> {
    let req = |i: u64, op| HostRequest {
        arrival_ns: i * 10_000_000,
        op,
        offset_bytes: (i % 20) * 8192,
        len_bytes: 8192,
    };
    (0..40)
        .map(|i| req(i, if i < 20 { Op::Write } else { Op::Read }))
        .collect()
}

#[test]
fn toy_scheme_is_picked_by_name_and_programs_host_writes_fast() {
    let cfg = load(TOY_DEVICE, "<toy>", &[]).expect("config");
    let reqs = writes_then_reads();
    let toy = run(cfg.clone(), &reqs).expect("toy run");
    let base_cfg = load(TOY_DEVICE, "<toy>", &["scheme.name=\"baseline\"".into()]).unwrap();
    let base = run(base_cfg, &reqs).expect("baseline run");

    assert_eq!(toy["scheme"], "toy");
    assert_eq!(base["scheme"], "baseline");
    // Every host write went to the fast mode, none to the normal one; the baseline the other
    // way round.
    assert_eq!(toy["flash"]["programs_by_mode"]["fast"], 20);
    assert_eq!(toy["flash"]["programs_by_mode"]["normal"], 0);
    assert_eq!(base["flash"]["programs_by_mode"]["fast"], 0);
    assert_eq!(base["flash"]["programs_by_mode"]["normal"], 20);
    assert_eq!(toy["scheme_stats"]["host_programs"], 20);
    // Unqueued writes cost one program plus the transfer: 650 µs instead of 1300 µs.
    let xfer = toy["device"]["transfer_us"].as_f64().unwrap();
    let write_us = |r: &Value| r["host"]["write_mean_us"].as_f64().unwrap();
    assert!(
        (write_us(&toy) - (650.0 + xfer)).abs() < 1e-6,
        "{}",
        write_us(&toy)
    );
    assert!(
        (write_us(&base) - (1300.0 + xfer)).abs() < 1e-6,
        "{}",
        write_us(&base)
    );
    // Reads are untouched by the scheme.
    assert_eq!(toy["host"]["read_mean_us"], base["host"]["read_mean_us"]);
}

#[test]
fn toy_scheme_params_and_device_needs_are_errors_not_silent_baselines() {
    // An unknown parameter names its key and the ones the scheme reads.
    let cfg = load(TOY_DEVICE, "<toy>", &["scheme.params.speed=2".into()]).unwrap();
    let err = run(cfg, &[]).unwrap_err().to_string();
    assert!(
        err.contains("scheme.params.speed") && err.contains("mode"),
        "{err}"
    );
    // A mode the device does not have is out of range.
    let cfg = load(TOY_DEVICE, "<toy>", &["scheme.params.mode=2".into()]).unwrap();
    let err = run(cfg, &[]).unwrap_err().to_string();
    assert!(
        err.contains("scheme.params.mode") && err.contains("0 ..= 1"),
        "{err}"
    );
    // A device with one program mode cannot run it: the error names the preset to use.
    let one_mode = TOY_DEVICE.replace(
        "[[timing.program_modes]]\nname = \"fast\"\nprogram_us = [650.0]\n",
        "",
    );
    let cfg = load(&one_mode, "<toy>", &[]).unwrap();
    let err = run(cfg, &[]).unwrap_err().to_string();
    assert!(
        err.contains("scheme.name") && err.contains("xia-diffecc"),
        "{err}"
    );
    // The crate's own names still go through the crate's registry; an unknown one lists them.
    let cfg = load(TOY_DEVICE, "<toy>", &["scheme.name=\"nope\"".into()]).unwrap();
    let err = run(cfg, &[]).unwrap_err().to_string();
    assert!(
        err.contains("unknown scheme") && err.contains("baseline"),
        "{err}"
    );
}

// ----- recipe (b): add a trace format --------------------------------------------------------

mod tiny {
    //! A toy trace format, `tiny`: one request a line, `time_us op block blocks`,
    //! whitespace-separated; `op` is `R` or `W`, a block is 4 KiB; `#` starts a comment line.
    //! Read strictly: a line with a field missing, a field too many, a bad number or op, a
    //! zero size or a time earlier than the line before is an error naming file, line and field.
    use std::io::BufRead;
    use std::path::{Path, PathBuf};

    use nandlab_core::host::RequestSource;
    use nandlab_core::trace::{HostRequest, Op, TraceError};

    const COLUMNS: [&str; 4] = ["time_us", "op", "block", "blocks"];

    /// A streaming reader of a `tiny` file.
    pub struct TinyReader {
        lines: std::io::Lines<std::io::BufReader<std::fs::File>>,
        path: PathBuf,
        line: u64,
        first_us: Option<u64>,
        last_us: u64,
        requests: u64,
    }

    impl TinyReader {
        /// Open `path`.
        pub fn open(path: &Path) -> Result<TinyReader, TraceError> {
            let file = std::fs::File::open(path).map_err(|e| TraceError::Io {
                file: path.into(),
                msg: e.to_string(),
            })?;
            Ok(TinyReader {
                lines: std::io::BufReader::new(file).lines(),
                path: path.into(),
                line: 0,
                first_us: None,
                last_us: 0,
                requests: 0,
            })
        }

        fn error(&self, field: &'static str, msg: String) -> TraceError {
            let (file, line) = (self.path.clone(), self.line);
            TraceError::Parse {
                file,
                line,
                field,
                msg,
            }
        }

        fn number(&self, field: &'static str, v: Option<&str>) -> Result<u64, TraceError> {
            let v = v.ok_or_else(|| self.error(field, "missing".into()))?;
            v.parse()
                .map_err(|_| self.error(field, format!("{v:?} is not a non-negative integer")))
        }
    }

    impl RequestSource for TinyReader {
        fn next_request(&mut self) -> Result<Option<HostRequest>, TraceError> {
            loop {
                let Some(text) = self.lines.next() else {
                    return Ok(None);
                };
                self.line += 1;
                let text = text.map_err(|e| TraceError::Io {
                    file: self.path.clone(),
                    msg: format!("line {}: {e}", self.line),
                })?;
                if text.trim().is_empty() || text.trim_start().starts_with('#') {
                    continue;
                }
                let mut f = text.split_whitespace();
                let time_us = self.number(COLUMNS[0], f.next())?;
                let op = match f.next() {
                    Some("R") => Op::Read,
                    Some("W") => Op::Write,
                    v => return Err(self.error(COLUMNS[1], format!("{v:?}: expected R or W"))),
                };
                let block = self.number(COLUMNS[2], f.next())?;
                let blocks = self.number(COLUMNS[3], f.next())?;
                if let Some(extra) = f.next() {
                    return Err(self.error(COLUMNS[3], format!("a field too many: {extra:?}")));
                }
                if blocks == 0 {
                    return Err(self.error(COLUMNS[3], "0: a request has a size".into()));
                }
                if time_us < self.last_us {
                    let msg = format!("{time_us} is earlier than {} before it", self.last_us);
                    return Err(self.error(COLUMNS[0], msg));
                }
                self.last_us = time_us;
                let first = *self.first_us.get_or_insert(time_us);
                self.requests += 1;
                return Ok(Some(HostRequest {
                    arrival_ns: (time_us - first) * 1000,
                    op,
                    offset_bytes: block * 4096,
                    len_bytes: blocks * 4096,
                }));
            }
        }

        fn describe(&self) -> serde_json::Value {
            serde_json::json!({
                "path": self.path.display().to_string(),
                "format": "tiny",
                "requests": self.requests,
            })
        }
    }
}

/// A small `tiny` trace: a comment, 200 requests (writes and reads of 1–4 blocks over 2 MiB,
/// 250 µs apart starting at 1 s) and a blank line.
fn tiny_text() -> String {
    let mut s = String::from("# time_us op block blocks\n");
    for i in 0..200u64 {
        let op = if i % 3 == 0 { "R" } else { "W" };
        s += &format!(
            "{} {op} {} {}\n",
            1_000_000 + i * 250,
            (i * 37) % 512,
            1 + i % 4
        );
    }
    s + "\n"
}

/// The canonical CSV of the same requests (`time_ns,op,offset_bytes,size_bytes`).
fn canonical_text() -> String {
    let mut s = String::from("time_ns,op,offset_bytes,size_bytes\n");
    for i in 0..200u64 {
        let op = if i % 3 == 0 { "R" } else { "W" };
        let (off, len) = ((i * 37) % 512 * 4096, (1 + i % 4) * 4096);
        s += &format!("{},{op},{off},{len}\n", i * 250_000);
    }
    s
}

/// Two channels of MLC, 16 MiB logical; the touched pages written before the replay.
const FORMAT_DEVICE: &str = r#"
[device]
channels = 2
pages_per_block = 64
page_size_bytes = 4096
logical_capacity_bytes = 16777216
[timing]
read_us = [50.0, 90.0]
program_us = [1300.0]
"#;

fn without(mut report: Value, keys: &[&str]) -> Value {
    for k in keys {
        report.as_object_mut().unwrap().remove(*k);
    }
    report
}

#[test]
fn tiny_format_replays_as_its_canonical_csv_does() {
    use nandlab_core::host::RequestSource;
    use tiny::TinyReader;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.tiny");
    std::fs::write(&path, tiny_text()).unwrap();
    let canon = dir.path().join("t.csv");
    std::fs::write(&canon, canonical_text()).unwrap();

    // The toy reader and the crate's reader of the canonical CSV yield the same requests.
    let mut ours = TinyReader::open(&path).unwrap();
    let mut theirs = TraceReader::open(&canon, &Default::default()).unwrap();
    assert_eq!(sniff_format(&canon).unwrap(), TraceFormat::Canonical);
    let mut n = 0;
    while let Some(r) = ours.next_request().unwrap() {
        assert_eq!(Some(r), theirs.next_request().unwrap(), "request {n}");
        n += 1;
    }
    assert_eq!((n, theirs.next_request().unwrap()), (200, None));
    assert_eq!(ours.describe()["requests"], 200);

    // Replayed through the public API (pre-pass, sizing, preconditioning, replay).
    let cfg = load(FORMAT_DEVICE, "<format>", &[]).unwrap();
    let mut open = || Ok(TinyReader::open(&path)?);
    let report = simulate_source(cfg.clone(), &mut open, Value::Null, &mut |_, _, _| {}).unwrap();
    assert_eq!(report["host"]["requests"], 200);
    assert_eq!(report["trace"]["format"], "tiny");

    let mut open_csv = || Ok(TraceReader::open(&canon, &Default::default())?);
    let csv = simulate_source(cfg, &mut open_csv, Value::Null, &mut |_, _, _| {}).unwrap();
    assert_eq!(
        without(report, &["trace", "timing"]),
        without(csv, &["trace", "timing"])
    );
}

#[test]
fn tiny_format_errors_name_file_line_and_field() {
    use nandlab_core::host::RequestSource;
    use tiny::TinyReader;

    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("0 W 0 1\n10 X 0 1\n", 2, "op"),
        ("0 W 0 1\n\n10 R 0\n", 3, "blocks"),
        ("0 W 0 1 2\n", 1, "blocks"),
        ("0 W 0 0\n", 1, "blocks"),
        ("# c\n0 W -1 1\n", 2, "block"),
        ("10 W 0 1\n5 R 0 1\n", 2, "time_us"),
    ];
    for (text, line, field) in cases {
        let path = dir.path().join("bad.tiny");
        std::fs::write(&path, text).unwrap();
        let mut rd = TinyReader::open(&path).unwrap();
        let err = loop {
            match rd.next_request() {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("{text:?}: read without an error"),
                Err(e) => break e,
            }
        };
        match &err {
            TraceError::Parse {
                file,
                line: l,
                field: f,
                ..
            } => assert_eq!((file, *l, *f), (&path, line, field), "{text:?}: {err}"),
            other => panic!("{text:?}: {other}"),
        }
        assert!(err
            .to_string()
            .starts_with(&format!("{}: line {line}: field `{field}`", path.display())));
    }
}
