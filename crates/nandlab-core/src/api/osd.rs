//! Object-device runs for the Python front and Rust users: a file-level trace through the
//! host layer [`crate::osd::objfs`] onto the object device ([`crate::osd::run`]).

use std::path::Path;
use std::time::Instant;

use serde_json::{json, Value};

use crate::config::Config;
use crate::host::threaded::fill_batch;
use crate::osd::objfs::ObjfsSource;
use crate::osd::{OsdCommand, OsdReport, RunOpts};
use crate::trace::{fs_stats, TraceError};

use super::NandlabError;

/// Load a configuration from TOML text with `key=value` overrides.
///
/// # Errors
/// [`NandlabError::Config`] for a syntax error, an unknown key or an out-of-range value.
pub fn osd_config(
    config_toml: &str,
    config_path: Option<&Path>,
    overrides: &[String],
) -> Result<Config, NandlabError> {
    let origin = config_path.map_or_else(|| "<config>".to_string(), |p| p.display().to_string());
    Ok(crate::config::load(config_toml, &origin, overrides)?)
}

/// The report of an object-device run as JSON: the device's [`OsdReport`], plus `wall_s`,
/// `commands_per_s` (measured and preconditioning commands over the wall time), and what the
/// caller adds (`objfs`, `trace`, `bench`).
fn report_json(report: &OsdReport, wall_s: f64, all_commands: u64) -> Result<Value, NandlabError> {
    let mut v = serde_json::to_value(report)
        .map_err(|e| NandlabError::Sim(format!("cannot serialise the object report: {e}")))?;
    if let Value::Object(m) = &mut v {
        m.insert("wall_s".into(), json!(wall_s));
        m.insert(
            "commands_per_s".into(),
            json!(if wall_s > 0.0 {
                all_commands as f64 / wall_s
            } else {
                0.0
            }),
        );
    }
    Ok(v)
}

/// Commands per batch handed from the translator thread to the replay.
const BATCH: usize = 4096;
/// Batches in flight.
const DEPTH: usize = 4;

/// The translator ([`ObjfsSource`]: the preconditioning pass, decompression, parsing and the
/// host layer) on its own thread, handing commands over in batches through a bounded channel,
/// so that translating overlaps the device's simulation. The commands, their order and the
/// errors are exactly the source's; memory stays bounded (a few batches in flight).
struct Translator {
    rx: std::sync::mpsc::Receiver<Result<Vec<OsdCommand>, TraceError>>,
    recycle: std::sync::mpsc::Sender<Vec<OsdCommand>>,
    batch: Vec<OsdCommand>,
    pos: usize,
    done: bool,
    worker: Option<std::thread::JoinHandle<Option<ObjfsSource>>>,
}

impl Translator {
    fn spawn(trace: &Path, cfg: &crate::osd::objfs::ObjfsConfig) -> Translator {
        let (tx, rx) = std::sync::mpsc::sync_channel(DEPTH);
        let (recycle, spent) = std::sync::mpsc::channel::<Vec<OsdCommand>>();
        let (trace, cfg) = (trace.to_path_buf(), cfg.clone());
        let worker = std::thread::Builder::new()
            .name("nandlab-objfs".into())
            .spawn(move || {
                let mut src = match ObjfsSource::open(&trace, &cfg) {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return None;
                    }
                };
                loop {
                    let (b, more) = fill_batch(&spent, BATCH, || src.next_command());
                    let full = match more {
                        Ok(full) => full,
                        Err(e) => {
                            if !b.is_empty() {
                                let _ = tx.send(Ok(b));
                            }
                            let _ = tx.send(Err(e));
                            return Some(src);
                        }
                    };
                    if !b.is_empty() && tx.send(Ok(b)).is_err() {
                        return Some(src); // the replay stopped (limit reached or error)
                    }
                    if !full {
                        return Some(src);
                    }
                }
            })
            .ok();
        Translator {
            rx,
            recycle,
            batch: Vec::new(),
            pos: 0,
            done: false,
            worker,
        }
    }

    /// Stop the worker and take back the source (`None` if it never opened).
    fn finish(mut self) -> Option<ObjfsSource> {
        // dropping the receiver makes the worker's next send fail, so it ends
        let (_, dummy) = std::sync::mpsc::sync_channel(0);
        drop(std::mem::replace(&mut self.rx, dummy));
        self.worker.take().and_then(|w| w.join().ok().flatten())
    }
}

impl Iterator for Translator {
    type Item = Result<OsdCommand, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(&c) = self.batch.get(self.pos) {
                self.pos += 1;
                return Some(Ok(c));
            }
            if self.done {
                return None;
            }
            match self.rx.recv() {
                Ok(Ok(b)) => {
                    let spent = std::mem::replace(&mut self.batch, b);
                    let _ = self.recycle.send(spent);
                    self.pos = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Err(_) => {
                    self.done = true;
                    return None;
                }
            }
        }
    }
}

/// Replay the file-level trace `trace` (`*_fs.jsonl[.gz|.zst]`) on the object device `cfg`
/// describes (`[osd]`), translated by `[objfs]`. `max_commands` (0 = all) limits the measured
/// commands. Returns the report (see `docs/report.md`, "The object-device report"), with an
/// `objfs` section ([`crate::osd::objfs::ObjfsCounters`]) and `trace` = {`file`, `records`}.
///
/// # Errors
/// [`NandlabError::Trace`] for a malformed line (file, line, field), [`NandlabError::Config`]
/// for an invalid configuration (no `[osd]` section, …), [`NandlabError::Sim`] when the device
/// fails (e.g. it runs out of space).
pub fn osd_run_trace(cfg: &Config, trace: &Path, max_commands: u64) -> Result<Value, NandlabError> {
    let t0 = Instant::now();
    // a bad [objfs] section is a config error before any reading
    crate::osd::objfs::Objfs::new(&cfg.objfs)?;
    let mut emitted = 0u64;
    let (report, src) = if max_commands == 0 && cfg.host.max_requests == 0 {
        // the whole trace: translate on a second thread
        let mut tr = Translator::spawn(trace, &cfg.objfs);
        let result = crate::osd::run(
            cfg,
            (&mut tr).inspect(|_| emitted += 1),
            &RunOpts { max_commands },
        );
        let src = tr.finish();
        let report = result?;
        let src = src.ok_or_else(|| {
            NandlabError::Sim(format!("{}: the trace translator stopped", trace.display()))
        })?;
        (report, src)
    } else {
        // a prefix: translate in step with the replay, so that the host layer's counters stop
        // exactly where the replay does (a thread would run ahead by a timing-dependent amount)
        let mut src = ObjfsSource::open(trace, &cfg.objfs)?;
        let report = crate::osd::run(
            cfg,
            (&mut src).inspect(|_| emitted += 1),
            &RunOpts { max_commands },
        )?;
        (report, src)
    };
    let wall_s = t0.elapsed().as_secs_f64();
    let mut v = report_json(&report, wall_s, emitted)?;
    let counters = src.objfs().counters();
    if let Value::Object(m) = &mut v {
        m.insert(
            "objfs".into(),
            serde_json::to_value(&counters)
                .map_err(|e| NandlabError::Sim(format!("cannot serialise objfs counters: {e}")))?,
        );
        m.insert(
            "trace".into(),
            json!({
                "file": trace.display().to_string(),
                "records": src.reader().counters().records,
            }),
        );
    }
    Ok(v)
}

/// Replay `commands` (e.g. a DMMbench generator) on the object device `cfg` describes; the
/// report as JSON (without the `objfs` and `trace` sections).
///
/// # Errors
/// As [`osd_run_trace`].
pub fn osd_run_commands<I>(
    cfg: &Config,
    commands: I,
    max_commands: u64,
) -> Result<Value, NandlabError>
where
    I: IntoIterator<Item = Result<OsdCommand, TraceError>>,
{
    let t0 = Instant::now();
    let mut emitted = 0u64;
    let counted = commands.into_iter().inspect(|_| emitted += 1);
    let report = crate::osd::run(cfg, counted, &RunOpts { max_commands })?;
    report_json(&report, t0.elapsed().as_secs_f64(), emitted)
}

/// Run DMMbench (Guo §4.6.1; [`crate::osd::bench::DmmBench`]) on the object device `cfg`
/// describes: `pattern` (`seq_write`, `seq_read`, `rand_write`, `rand_read`) with
/// `request_bytes` per access moving `total_bytes`, on a file of `file_bytes` (0 = the total).
/// The report gets a `bench` section echoing these.
///
/// # Errors
/// [`NandlabError::Config`] for an unknown pattern or a size of 0 / a total below one request;
/// otherwise as [`osd_run_trace`].
/// DMMbench `pattern` with `request_bytes` per access and `total_bytes` moved, seeded by the
/// config's seed; a config error naming the key for an unknown pattern or impossible sizes.
fn dmm_bench(
    cfg: &Config,
    pattern: &str,
    request_bytes: u64,
    total_bytes: u64,
) -> Result<crate::osd::bench::DmmBench, NandlabError> {
    use crate::config::ConfigError;
    use crate::osd::bench::{DmmBench, Pattern};
    let bad = |key: &str, value: String, msg: &str| {
        NandlabError::Config(ConfigError::Invalid {
            key: key.into(),
            value,
            msg: msg.into(),
        })
    };
    let pat = Pattern::parse(pattern).ok_or_else(|| {
        bad(
            "bench.pattern",
            format!("{pattern:?}"),
            "unknown DMMbench pattern (use seq_write, seq_read, rand_write or rand_read)",
        )
    })?;
    if request_bytes == 0 {
        return Err(bad(
            "bench.request_bytes",
            "0".into(),
            "must be ≥ 1 byte (the thesis uses 4 KiB … 1 MiB)",
        ));
    }
    if total_bytes < request_bytes {
        return Err(bad(
            "bench.total_bytes",
            total_bytes.to_string(),
            &format!("must be at least one request ({request_bytes} B)"),
        ));
    }
    Ok(DmmBench::new(pat, request_bytes, total_bytes, cfg.seed))
}

pub fn osd_run_bench(
    cfg: &Config,
    pattern: &str,
    request_bytes: u64,
    total_bytes: u64,
    file_bytes: u64,
) -> Result<Value, NandlabError> {
    let mut b = dmm_bench(cfg, pattern, request_bytes, total_bytes)?;
    b.file_bytes = file_bytes;
    let mut v = osd_run_commands(cfg, b.commands().map(Ok), 0)?;
    if let Value::Object(m) = &mut v {
        m.insert(
            "bench".into(),
            json!({
                "pattern": b.pattern.name(),
                "request_bytes": request_bytes,
                "total_bytes": total_bytes,
                "file_bytes": if file_bytes > 0 { file_bytes } else { total_bytes },
            }),
        );
    }
    Ok(v)
}

/// Table-17-style statistics of a file-level trace ([`crate::trace::FsTraceStats`]) as JSON,
/// with `file`.
///
/// # Errors
/// [`NandlabError::Trace`] for an unreadable file or a malformed line.
pub fn fs_trace_stats(path: &Path) -> Result<Value, NandlabError> {
    let st = fs_stats(path)?;
    let mut v = serde_json::to_value(&st)
        .map_err(|e| NandlabError::Sim(format!("cannot serialise trace statistics: {e}")))?;
    if let Value::Object(m) = &mut v {
        m.insert("file".into(), json!(path.display().to_string()));
    }
    Ok(v)
}

/// The recovery variant named `name`: `full`, or a deliberately broken one (`no_capacitor`,
/// `no_rollback`, `no_reapply`: the negative controls of spec §7 item 6; `no_reachability`:
/// the negative control of the rebuilt-table checks).
///
/// # Errors
/// [`NandlabError::Config`] naming the allowed names.
pub fn crash_variant(name: &str) -> Result<crate::osd::Variant, NandlabError> {
    let mut v = crate::osd::Variant::FULL;
    match name {
        "full" => {}
        "no_capacitor" => v.capacitor = false,
        "no_rollback" => v.rollback = false,
        "no_reapply" => v.reapply = false,
        "no_reachability" => v.reachability = false,
        "no_onode_buffer" => v.onode_buffer = false,
        other => {
            return Err(NandlabError::Config(crate::config::ConfigError::Invalid {
                key: "crash.variant".into(),
                value: format!("{other:?}"),
                msg: "use full, no_capacitor, no_rollback, no_reapply, no_reachability or \
                      no_onode_buffer"
                    .into(),
            }))
        }
    }
    Ok(v)
}

/// What a power-cut test runs: `cuts` seeded cuts (seed `seed`), recovery `variant`
/// ([`crash_variant`]), and `cut_only`: draw the cuts only among the flash operations whose
/// class (`program_<type>_<source>` or `erase`, the keys of `cuts_by_op`) contains this text,
/// e.g. `program_index` or `cache_evict` ([`crate::osd::CrashOpts::cut_only`]).
#[derive(Clone, Copy, Debug)]
pub struct CrashSpec<'a> {
    pub cuts: u32,
    pub seed: u64,
    pub variant: &'a str,
    pub cut_only: Option<&'a str>,
}

impl CrashSpec<'_> {
    /// The crash test on `cmds` with cuts from command `window_start` on, as a JSON report
    /// (`t0`: when the caller started, for `wall_s`) with the `extra` keys (what the commands
    /// were) added after its own.
    fn run<const N: usize>(
        &self,
        cfg: &Config,
        cmds: &[OsdCommand],
        window_start: usize,
        t0: Instant,
        extra: [(&str, Value); N],
    ) -> Result<Value, NandlabError> {
        let opts = crate::osd::CrashOpts {
            window_start,
            cut_only: self.cut_only.map(String::from),
            ..Default::default()
        };
        let v = crash_variant(self.variant)?;
        let rep = crate::osd::crash_test_with(cfg, cmds, self.cuts, self.seed, v, &opts)?;
        let mut out = crash_json(
            &rep,
            self.variant,
            self.cut_only,
            t0.elapsed().as_secs_f64(),
        )?;
        if let Value::Object(m) = &mut out {
            for (k, v) in extra {
                m.insert(k.into(), v);
            }
        }
        Ok(out)
    }
}

fn crash_json(
    rep: &crate::osd::CrashReport,
    variant: &str,
    cut_only: Option<&str>,
    wall_s: f64,
) -> Result<Value, NandlabError> {
    let mut v = serde_json::to_value(rep)
        .map_err(|e| NandlabError::Sim(format!("cannot serialise the crash report: {e}")))?;
    if let Value::Object(m) = &mut v {
        m.insert("variant_name".into(), json!(variant));
        m.insert("cut_only".into(), json!(cut_only));
        m.insert("wall_s".into(), json!(wall_s));
    }
    Ok(v)
}

/// Power-cut test ([`crate::osd::crash_test_with`]) on the file-level trace `trace`: the
/// preconditioning commands (run once; each cut starts from a clone of the device after
/// them) and the first `max_commands` measured ones (0 = all: the whole trace is held in
/// memory, so use a prefix), `cuts` seeded cuts among the measured commands' flash
/// operations, recovery `variant`
/// ([`crash_variant`]). The report gets `objfs` (the host layer's counters over the prefix:
/// `host_dirty_peak_bytes` is the most host-cache data a cut could lose above the device) and
/// `trace`.
///
/// # Errors
/// As [`osd_run_trace`]; [`NandlabError::Config`] for an unknown variant, or a `cut_only`
/// that no flash operation of the window matches (the error lists the classes present).
pub fn osd_crash_test_trace(
    cfg: &Config,
    trace: &Path,
    max_commands: u64,
    spec: &CrashSpec<'_>,
) -> Result<Value, NandlabError> {
    let t0 = Instant::now();
    crash_variant(spec.variant)?; // before reading the trace
    let mut src = ObjfsSource::open(trace, &cfg.objfs)?;
    let mut cmds = Vec::new();
    let mut measured = 0u64;
    while let Some(c) = src.next_command()? {
        if !c.precondition {
            if max_commands > 0 && measured == max_commands {
                break;
            }
            measured += 1;
        }
        cmds.push(c);
    }
    // The preconditioning runs once; every cut starts from a clone of the device after it.
    let window_start = cmds.iter().take_while(|c| c.precondition).count();
    let objfs = serde_json::to_value(src.objfs().counters())
        .map_err(|e| NandlabError::Sim(format!("cannot serialise objfs counters: {e}")))?;
    let read = json!({"file": trace.display().to_string(),
                       "records": src.reader().counters().records,
                       "measured_commands": measured});
    spec.run(
        cfg,
        &cmds,
        window_start,
        t0,
        [("objfs", objfs), ("trace", read)],
    )
}

/// The crash test's small device: `cfg`'s design and page size on 4 dies of 24 blocks of 64
/// pages (2-block chunks: 12 per die, 12 MiB at 2 KiB pages), 4 tail buffers, and — where the
/// design has them — a 16 KiB diff cache and a 1 KiB MLGC table, so that chunk GC, MLGC
/// eviction and diff-cache eviction all happen within a few thousand commands of
/// [`osd_crash_test_mixed`]. Returned as `--set` overrides (applied before the user's), so a
/// report can list them.
pub fn crash_small_device(cfg: &Config) -> Vec<String> {
    let mut o: Vec<String> = [
        "device.channels=4",
        "device.chips_per_channel=1",
        "device.dies_per_chip=1",
        "device.pages_per_block=64",
        "device.blocks_per_plane=24",
        "osd.chunk_blocks=2",
        "osd.tail_buffers=4",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    let osd = cfg.osd.clone().unwrap_or_default();
    if osd.mlgc {
        o.push("osd.mlgc_table_bytes=1024".into());
    }
    if osd.diff_cache_bytes > 0 {
        o.push("osd.diff_cache_bytes=16384".into());
    }
    o
}

/// Power-cut test on the mixed workload ([`crate::osd::mixed`]): `commands` seeded commands
/// over `objects` objects (sizes in units of the device's page), as `spec` says.
///
/// # Errors
/// [`NandlabError::Config`] for an unknown variant or an unmatched `cut_only`;
/// [`NandlabError::Sim`] if the device refuses a command (e.g. out of space).
pub fn osd_crash_test_mixed(
    cfg: &Config,
    commands: u64,
    objects: u64,
    spec: &CrashSpec<'_>,
) -> Result<Value, NandlabError> {
    let t0 = Instant::now();
    crash_variant(spec.variant)?;
    let cmds = crate::osd::mixed::commands(
        cfg.seed,
        commands as usize,
        objects,
        cfg.device.page_size_bytes as u64,
    );
    let mixed = json!({"commands": commands, "objects": objects, "seed": cfg.seed});
    spec.run(cfg, &cmds, 0, t0, [("mixed", mixed)])
}

/// Power-cut test on DMMbench (`pattern`, `request_bytes`, `total_bytes` as
/// [`osd_run_bench`]) as `spec` says.
///
/// # Errors
/// As [`osd_run_bench`]; [`NandlabError::Config`] for an unknown variant or an unmatched
/// `cut_only`.
pub fn osd_crash_test_bench(
    cfg: &Config,
    pattern: &str,
    request_bytes: u64,
    total_bytes: u64,
    spec: &CrashSpec<'_>,
) -> Result<Value, NandlabError> {
    let t0 = Instant::now();
    crash_variant(spec.variant)?;
    let b = dmm_bench(cfg, pattern, request_bytes, total_bytes)?;
    let cmds: Vec<OsdCommand> = b.commands().collect();
    let bench = json!({"pattern": b.pattern.name(), "request_bytes": request_bytes,
                       "total_bytes": total_bytes});
    spec.run(cfg, &cmds, 0, t0, [("bench", bench)])
}
