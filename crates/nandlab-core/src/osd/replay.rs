//! Replay of object commands on the shared flash executor, and the run report.
//!
//! Each command is applied to the device model when it is issued ([`Device::execute`]); its
//! plan's stages then run on [`crate::sched::Sched`] + [`crate::exec::Executor`]: every
//! operation of a stage is queued on its die at once, the next stage when the last one of the
//! stage has finished, and the command completes with its last stage. Open loop: a command is
//! issued at its arrival time × `host.time_scale`; closed loop: `host.queue_depth` commands are
//! outstanding, the next one issued when one completes.

use std::collections::BTreeMap;

use serde::Serialize;

use super::command::OsdCommand;
use super::device::{Counters, Device, DramUse, OpKind, Plan, Src, SRC_NAMES, TYPE_NAMES};
use crate::config::{Config, ReplayMode};
use crate::error::NandlabError;
use crate::exec::{Event, Executor, Phase, Txn, TxnKind};
use crate::flash::{PageType, Timing};
use crate::sched::{Sched, SpaceView};
use crate::scheme::{Placement, Source};
use crate::stats::{Latency, LatencySummary};
use crate::trace::TraceError;

/// Options of a replay beyond the config.
#[derive(Clone, Debug, Default)]
pub struct RunOpts {
    /// Replay at most this many (measured) commands; 0 = all (`host.max_requests` applies
    /// too).
    pub max_commands: u64,
}

/// Counts of one page type by source.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct BySource {
    pub host: u64,
    pub gc: u64,
    pub mlgc: u64,
    pub cache_evict: u64,
    pub recovery: u64,
    pub total: u64,
}

impl BySource {
    fn of(v: &[u64; 5]) -> BySource {
        BySource {
            host: v[0],
            gc: v[1],
            mlgc: v[2],
            cache_evict: v[3],
            recovery: v[4],
            total: v.iter().sum(),
        }
    }
}

/// Page counts by type.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ByType {
    pub data: BySource,
    pub index: BySource,
    pub onode: BySource,
    pub total: u64,
}

impl ByType {
    fn of(v: &[[u64; 5]; 3]) -> ByType {
        let (data, index, onode) = (
            BySource::of(&v[0]),
            BySource::of(&v[1]),
            BySource::of(&v[2]),
        );
        let total = data.total + index.total + onode.total;
        ByType {
            data,
            index,
            onode,
            total,
        }
    }
}

/// The design that ran.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct DesignReport {
    /// `onfd` or `yaffs2`.
    pub design: String,
    /// `obfs`, `dmm`, `yaffs2`, or `onfd` with the pieces below (an ablation).
    pub name: String,
    pub mlgc: bool,
    pub mlgc_table_bytes: u64,
    pub virtual_tree: bool,
    pub diff_cache_bytes: u64,
}

/// GC and partial-write activity.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct GcReport {
    pub chunks_reclaimed: u64,
    pub mlgc_evictions: u64,
    pub mlgc_moved_bytes: u64,
    pub survivor_onodes_moved: u64,
    pub read_modify_writes: u64,
    pub tail_buffer_flushes: u64,
    /// Superseded index pages GC copied because an uncommitted object's last consistent
    /// state may still reach them (virtual tree; issue 30).
    pub pinned_index_pages_moved: u64,
    /// Onode versions put into the onode write buffer, buffer pages programmed before they
    /// were full, and of those the ones GC needed (issue 30).
    pub onodes_buffered: u64,
    pub onode_buffer_early_pages: u64,
    pub onode_buffer_gc_pages: u64,
}

/// Diff cache.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CacheReport {
    /// Index operations served without an index page read from flash / all (`null` without
    /// index operations).
    pub hit_rate: Option<f64>,
    pub index_ops: u64,
    pub index_hits: u64,
    pub evicted_objects: u64,
    pub dropped_clean_pages: u64,
}

/// Peak DRAM use next to each table's bound.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct DramReport {
    #[serde(flatten)]
    pub peak: DramUse,
    pub gc_table_capacity_bytes: u64,
    pub diff_cache_capacity_bytes: u64,
    /// 4 B per VA up to `osd.page_table_max_vas`, plus the directory.
    pub page_table_bound_bytes: u64,
}

/// Erase counts over blocks.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct EraseReport {
    pub total: u64,
    pub max_per_block: u32,
    pub mean_per_block: f64,
}

/// Untimed preconditioning (files that exist before the trace, spec §5).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct PreconditionReport {
    pub commands: u64,
    pub page_writes: u64,
    pub erases: u64,
}

/// The report of one object-device run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct OsdReport {
    pub design: DesignReport,
    /// Measured commands, and by type.
    pub commands: u64,
    pub commands_by_type: BTreeMap<String, u64>,
    /// Simulated time of the replay, s.
    pub sim_time_s: f64,
    pub page_writes: ByType,
    pub page_reads: ByType,
    pub erases: EraseReport,
    pub gc: GcReport,
    /// Response time per command type (`create`, `remove`, `read`, `write`, `get_attr`,
    /// `set_attr`, `truncate`, `flush`) and over all (`all`).
    pub response: BTreeMap<String, LatencySummary>,
    pub diff_cache: CacheReport,
    pub dram: DramReport,
    pub precondition: PreconditionReport,
}

const KINDS: [&str; 8] = [
    "create", "remove", "read", "write", "get_attr", "set_attr", "truncate", "flush",
];

fn kind_index(name: &str) -> usize {
    KINDS.iter().position(|&k| k == name).unwrap_or(0)
}

/// The scheduler's view of space: the device allocated every page when it planned the
/// command, so everything can start.
struct Roomy;

impl SpaceView for Roomy {
    fn can_start(&self, _: &Txn) -> bool {
        true
    }
    fn plane_urgent(&self, _: u32) -> bool {
        false
    }
    fn write_plane(&self, _: &Txn, first: u32, _: u32, _: u32) -> Option<u32> {
        Some(first)
    }
}

#[derive(Default)]
struct Slot {
    arrival_ns: u64,
    kind: u8,
    plan: Plan,
    stage: usize,
    outstanding: u32,
}

struct Sim {
    sched: Sched,
    exec: Executor,
    timing: Timing,
    page_type: Vec<PageType>,
    ppb: u32,
    slots: Vec<Slot>,
    free_slots: Vec<u32>,
    lat: Vec<Latency>,
    all: Latency,
    in_flight: u32,
}

impl Sim {
    fn dispatch(&mut self, die: u32, now: u64) {
        if self.exec.busy(die) {
            return;
        }
        let Some(t) = self.sched.pick(die, &Roomy) else {
            return;
        };
        self.exec.stage(die, 0, t);
        let pt = self.page_type[(t.ppn % self.ppb) as usize];
        let tm = &self.timing;
        match t.kind {
            TxnKind::Read => {
                self.exec.push_phase(die, Phase::Array(tm.sense_ns(pt, 0)));
                self.exec.push_phase(die, Phase::Bus(tm.transfer_ns));
                let dec = tm.decode_ns(0);
                if dec > 0 {
                    self.exec.push_phase(die, Phase::Ctrl(dec));
                }
            }
            TxnKind::Erase => self.exec.push_phase(die, Phase::Array(tm.erase_ns)),
            _ => {
                self.exec.push_phase(die, Phase::Bus(tm.transfer_ns));
                self.exec
                    .push_phase(die, Phase::Array(tm.program_ns(pt, 0)));
            }
        }
        self.exec.start(die, 1, 0, now);
    }

    fn start_stage(&mut self, s: u32, now: u64) {
        let slot = &self.slots[s as usize];
        let k = slot.stage;
        let a = if k == 0 {
            0
        } else {
            slot.plan.ends[k - 1] as usize
        };
        let b = slot.plan.ends[k] as usize;
        self.slots[s as usize].outstanding = (b - a) as u32;
        for i in a..b {
            let op = self.slots[s as usize].plan.ops[i];
            let kind = match op.kind {
                OpKind::Read => TxnKind::Read,
                OpKind::Program => TxnKind::Program,
                OpKind::Erase => TxnKind::Erase,
            };
            let source = if op.src == Src::Host {
                Source::Host
            } else {
                Source::Gc
            };
            self.sched
                .enqueue(kind, source, 0, op.ppn, op.die, s, Placement::NONE);
        }
        for i in a..b {
            let die = self.slots[s as usize].plan.ops[i].die;
            self.dispatch(die, now);
        }
    }

    fn complete(&mut self, s: u32, now: u64) {
        let slot = &self.slots[s as usize];
        let rt = now - slot.arrival_ns;
        self.lat[slot.kind as usize].record(rt);
        self.all.record(rt);
        self.free_slots.push(s);
        self.in_flight -= 1;
    }

    fn txn_done(&mut self, s: u32, now: u64) {
        let slot = &mut self.slots[s as usize];
        slot.outstanding -= 1;
        if slot.outstanding > 0 {
            return;
        }
        slot.stage += 1;
        if slot.stage < slot.plan.stages() {
            self.start_stage(s, now);
        } else {
            self.complete(s, now);
        }
    }

    fn issue(&mut self, dev: &Device, arrival_ns: u64, kind: u8, now: u64) {
        self.in_flight += 1;
        let s = match self.free_slots.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Slot::default());
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[s as usize];
        slot.arrival_ns = arrival_ns;
        slot.kind = kind;
        slot.stage = 0;
        slot.plan.ops.clear();
        slot.plan.ops.extend_from_slice(&dev.plan.ops);
        slot.plan.ends.clear();
        slot.plan.ends.extend_from_slice(&dev.plan.ends);
        if slot.plan.stages() == 0 {
            self.complete(s, now);
        } else {
            self.start_stage(s, now);
        }
    }

    fn step(&mut self) -> Option<u64> {
        let (now, ev) = self.exec.events.pop()?;
        if let Event::Die(d) = ev {
            if self.exec.advance(d, now).is_some() {
                let t = self.exec.done_txn(d, 0);
                self.txn_done(t.owner, now);
                self.dispatch(d, now);
                self.exec.settle(d);
            }
        }
        Some(now)
    }
}

/// The name of the design a config describes (`obfs`, `dmm`, `yaffs2`, or `onfd`).
pub fn design_report(cfg: &Config) -> DesignReport {
    let o = cfg.osd.clone().unwrap_or_default();
    let name = match o.design {
        super::config::Design::Yaffs2 => "yaffs2",
        _ if !o.mlgc && !o.virtual_tree && o.diff_cache_bytes == 0 => "obfs",
        _ if o.mlgc && o.virtual_tree && o.diff_cache_bytes > 0 => "dmm",
        _ => "onfd",
    };
    DesignReport {
        design: o.design.name().into(),
        name: name.into(),
        mlgc: o.mlgc,
        mlgc_table_bytes: o.mlgc_table_bytes,
        virtual_tree: o.virtual_tree,
        diff_cache_bytes: o.diff_cache_bytes,
    }
}

/// Replay `commands` on the object device `cfg` describes. See the module documentation.
pub fn run<I>(cfg: &Config, commands: I, opts: &RunOpts) -> Result<OsdReport, NandlabError>
where
    I: IntoIterator<Item = Result<OsdCommand, TraceError>>,
{
    let mut dev = Device::new(cfg)?;
    replay(cfg, &mut dev, commands, opts)
}

/// [`run`] on a given device (tests inspect it afterwards).
pub fn replay<I>(
    cfg: &Config,
    dev: &mut Device,
    commands: I,
    opts: &RunOpts,
) -> Result<OsdReport, NandlabError>
where
    I: IntoIterator<Item = Result<OsdCommand, TraceError>>,
{
    let timing = cfg.timing()?;
    let layout = cfg.layout();
    let d = &cfg.device;
    let dies = dev.dies();
    let mut sim = Sim {
        sched: Sched::new(dies, 1, cfg.sched.priority, false),
        exec: Executor::new(dies, d.channels, 1),
        timing,
        page_type: layout.page_type.clone(),
        ppb: d.pages_per_block,
        slots: Vec::new(),
        free_slots: Vec::new(),
        lat: (0..KINDS.len()).map(|_| Latency::default()).collect(),
        all: Latency::default(),
        in_flight: 0,
    };
    let closed = cfg.host.mode == ReplayMode::Closed;
    let qd = cfg.host.queue_depth.max(1);
    let scale = cfg.host.time_scale;
    let limit = match (opts.max_commands, cfg.host.max_requests) {
        (0, m) | (m, 0) => m,
        (a, b) => a.min(b),
    };
    let mut it = commands.into_iter();
    let mut pre: Option<(Counters, u64)> = None;
    let mut pre_cmds = 0u64;
    let mut measured = 0u64;
    let mut by_type = [0u64; KINDS.len()];
    let mut next: Option<OsdCommand> = None;
    let mut exhausted = false;
    let mut now = 0u64;
    let mut last_arrival = 0u64;
    loop {
        if next.is_none() && !exhausted {
            match it.next() {
                None => exhausted = true,
                Some(r) => {
                    let c = r?;
                    if c.precondition {
                        if pre.is_some() {
                            return Err(NandlabError::Sim(format!(
                                "object command {}: a preconditioning command after the \
                                 measured replay started (precondition commands come first)",
                                pre_cmds + measured + 1
                            )));
                        }
                        dev.execute(&c.op)?;
                        pre_cmds += 1;
                        continue;
                    }
                    if limit > 0 && measured >= limit {
                        exhausted = true;
                    } else {
                        next = Some(c);
                    }
                }
            }
        }
        if let Some(c) = next {
            let ready = if closed {
                (sim.in_flight < qd).then_some(now)
            } else {
                let arr = (c.arrival_ns as f64 * scale).round() as u64;
                if arr < last_arrival {
                    return Err(NandlabError::Sim(format!(
                        "object command {}: arrival {} ns is before the previous command's {} \
                         ns (commands must be in time order)",
                        pre_cmds + measured + 1,
                        c.arrival_ns,
                        last_arrival
                    )));
                }
                match sim.exec.events.next_time() {
                    Some(t) if t < arr => None,
                    _ => Some(arr),
                }
            };
            if let Some(t) = ready {
                if pre.is_none() {
                    pre = Some((std::mem::take(&mut dev.counters), erases(dev)));
                }
                now = now.max(t);
                last_arrival = t;
                dev.execute(&c.op)?;
                let k = kind_index(c.op.name());
                by_type[k] += 1;
                measured += 1;
                sim.issue(dev, if closed { now } else { t }, k as u8, now);
                next = None;
                continue;
            }
        }
        match sim.step() {
            Some(t) => now = now.max(t),
            None => {
                if next.is_none() && exhausted {
                    break;
                }
            }
        }
    }
    let (pre_counters, _) = pre.unwrap_or_default();
    let c = &dev.counters;
    let o = cfg.osd.clone().unwrap_or_default();
    let erase_counts = &dev.erase_count;
    let total_erases: u64 = c.erases;
    let mut response = BTreeMap::new();
    for (k, name) in KINDS.iter().enumerate() {
        if sim.lat[k].summary().count > 0 {
            response.insert(name.to_string(), sim.lat[k].summary());
        }
    }
    response.insert("all".into(), sim.all.summary());
    let _ = (SRC_NAMES, TYPE_NAMES);
    Ok(OsdReport {
        design: design_report(cfg),
        commands: measured,
        commands_by_type: KINDS
            .iter()
            .zip(by_type)
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| (k.to_string(), n))
            .collect(),
        sim_time_s: now as f64 / 1e9,
        page_writes: ByType::of(&c.writes),
        page_reads: ByType::of(&c.reads),
        erases: EraseReport {
            total: total_erases,
            max_per_block: erase_counts.iter().copied().max().unwrap_or(0),
            mean_per_block: erase_counts.iter().map(|&e| e as f64).sum::<f64>()
                / erase_counts.len().max(1) as f64,
        },
        gc: GcReport {
            chunks_reclaimed: c.gc_chunks,
            mlgc_evictions: c.mlgc_evictions,
            mlgc_moved_bytes: c.mlgc_moved_bytes,
            survivor_onodes_moved: c.survivor_onodes,
            read_modify_writes: c.rmw,
            tail_buffer_flushes: c.tail_flushes,
            pinned_index_pages_moved: c.pinned_moves,
            onodes_buffered: c.onodes_buffered,
            onode_buffer_early_pages: c.onode_buffer_early,
            onode_buffer_gc_pages: c.onode_buffer_gc,
        },
        response,
        diff_cache: CacheReport {
            hit_rate: (c.index_ops > 0).then(|| c.index_hits as f64 / c.index_ops as f64),
            index_ops: c.index_ops,
            index_hits: c.index_hits,
            evicted_objects: c.cache_evicted_objects,
            dropped_clean_pages: c.cache_dropped_pages,
        },
        dram: DramReport {
            peak: dev.dram.clone(),
            gc_table_capacity_bytes: o.mlgc_table_bytes,
            diff_cache_capacity_bytes: o.diff_cache_bytes,
            page_table_bound_bytes: o.page_table_max_vas as u64 * 4
                + (o.page_table_max_vas as u64).div_ceil(1024) * 8,
        },
        precondition: PreconditionReport {
            commands: pre_cmds,
            page_writes: pre_counters.writes.iter().flatten().sum(),
            erases: pre_counters.erases,
        },
    })
}

fn erases(dev: &Device) -> u64 {
    dev.counters.erases
}
