//! The discrete-event engine: owns simulated time and drives host, FTL, scheme, scheduler and
//! flash timing.
//!
//! ```text
//!  RequestSource ──► on_arrival ──► hil::span ──► scheme hooks ──► Sched (per-die queues)
//!                                                                    │ pick (priority)
//!      heap of (time, seq, event) ◄── die phases: Array │ Bus(channel) │ Ctrl
//!                                                                    │ complete
//!           host request done (response = last page done − arrival) ◄┘ GC moves / erase
//! ```
//!
//! One binary heap of `(time_ns, seq, payload)` (seq keeps ties in insertion order, so runs are
//! deterministic). Host arrivals are not in the heap: the next request is pulled lazily from the
//! source and compared with the heap top, so traces stream in constant memory.
//!
//! A die executes one transaction at a time as a short list of phases: `Array` (the die alone:
//! sense, program, erase), `Bus` (the die and its channel: page transfer; dies wait FIFO for a
//! busy channel) and `Ctrl` (the die waits for the controller: ECC decode of a GC move).
//! Consecutive phases that need no decision at a later time share one event (a write —
//! transfer then program — is one event; a read — sense, then transfer — is two, because the
//! channel is requested only when the sense ends). A host
//! read completes `decode` after its transfer ends (decoding holds neither die nor channel); a
//! write completes when its program ends.

mod gc;
mod precondition;
mod read_cost;
mod refresh;
mod regions;
mod report;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write;

use crate::config::{Allocation, Config, ReplayMode};
use crate::error::NandlabError;
use crate::flash::{BlockLayout, Timing};
use crate::ftl::{Ftl, PageState, NONE, UNMAPPED};
use crate::host::RequestSource;
use crate::sched::{Sched, TxnKind};
use crate::scheme::{Action, AdjustedPage, Ctx, Placement, RefreshPlan, Scheme, Source};
use crate::stats::Stats;
use crate::trace::{HostRequest, Op};

pub use crate::rng::rng_stream;
pub use precondition::PreconditionReport;
use regions::RegionRuntime;

const EV_DIE: u64 = 1 << 32;
const EV_HOST: u64 = 2 << 32;
const EV_TICK: u64 = 3 << 32;
const EV_REFRESH: u64 = 4 << 32;
const ID_MASK: u64 = (1 << 32) - 1;
const PROGRESS_EVERY: u64 = 1 << 16;

#[derive(Clone, Copy, Debug)]
enum Phase {
    Array(u64),
    Bus(u64),
    Ctrl(u64),
}

#[derive(Clone, Copy, Debug)]
struct DieRun {
    txn: u32,
    phases: [Phase; 5],
    n: u8,
    i: u8,
}

impl DieRun {
    const IDLE: DieRun = DieRun {
        txn: NONE,
        phases: [Phase::Array(0); 5],
        n: 0,
        i: 0,
    };
}

#[derive(Clone, Copy, Debug)]
struct HostSlot {
    arrival_ns: u64,
    offset_bytes: u64,
    len_bytes: u64,
    op: Op,
    pending: u32,
    done_ns: u64,
    service_ns: u64,
}

/// A simulation of one device, one scheme, one run.
pub struct Engine {
    cfg: Config,
    /// FTL state (public for tests and reports).
    pub ftl: Ftl,
    timing: Timing,
    layout: BlockLayout,
    scheme: Box<dyn Scheme>,
    sched: Sched,
    /// Statistics of the timed replay.
    pub stats: Stats,
    heap: BinaryHeap<Reverse<(u64, u64, u64)>>,
    ev_seq: u64,
    now: u64,
    dies: Vec<DieRun>,
    /// Time each channel is free from (a FIFO timeline).
    chan_free_at: Vec<u64>,
    slots: Vec<HostSlot>,
    free_slots: Vec<u32>,
    gc_active: Vec<bool>,
    gc_pending: Vec<u32>,
    gc_victim: Vec<u32>,
    gc_zero_gain: Vec<u32>,
    actions: Vec<Action>,
    scratch: Vec<u32>,
    /// Data refresh on (`refresh.period_s > 0`).
    rf_on: bool,
    rf_period_s: i64,
    /// Per plane: block being refreshed, or NONE.
    rf_block: Vec<u32>,
    /// Per plane: refresh transactions outstanding in the current phase.
    rf_pending: Vec<u32>,
    /// Per plane: 1 = read / move / adjust, 2 = read-back of adjusted pages.
    rf_phase: Vec<u8>,
    /// Per plane: a due block waits for free space (GC) before its refresh starts.
    rf_deferred: Vec<bool>,
    /// Per plane: pages the current refresh adjusts in place.
    rf_adjusted: Vec<Vec<AdjustedPage>>,
    rf_plan: RefreshPlan,
    completed: u64,
    in_flight: u64,
    to_issue: u64,
    input_done: bool,
    error: Option<NandlabError>,
    log: Option<Box<dyn Write>>,
    logical_pages: u64,
    page_size: u64,
    last_arrival_ns: u64,
    /// Preconditioning summary.
    pub precondition: PreconditionReport,
    /// Reliability model (`None`: fixed per-ECC latencies).
    pub read_model: Option<crate::reliability::runtime::ReadModel>,
    /// Regions (`[regions]`); `None` without.
    rg: Option<RegionRuntime>,
}
impl Engine {
    /// Build an engine for a sized device. `logical_pages` is the host-visible capacity.
    pub fn new(
        cfg: Config,
        geo: crate::flash::Geometry,
        logical_pages: u64,
        scheme: Box<dyn Scheme>,
    ) -> Result<Engine, NandlabError> {
        let timing = cfg.timing()?;
        let layout = cfg.layout();
        let read_model = crate::reliability::runtime::ReadModel::new(&cfg, &timing)?;
        let mut ftl = Ftl::with_regions(
            geo.clone(),
            logical_pages,
            cfg.ftl.streams,
            cfg.ftl.allocation,
            cfg.ftl.gc_victim,
            cfg.ftl.gc_threshold_pct,
            &cfg.regions.blocks_per_plane(geo.blocks_per_plane),
        );
        ftl.set_wear_stages(&cfg.regions.stage_pe);
        let rg = RegionRuntime::new(&cfg.regions, &timing);
        let dies = geo.dies();
        let planes = geo.planes() as usize;
        let pools = ftl.pools() as usize;
        let ppb = geo.pages_per_block as usize;
        let rf_on = !cfg.refresh.is_off();
        let rf_plan = RefreshPlan::new(layout.clone(), rng_stream(cfg.seed, 4));
        let stats = Stats {
            programs_by_mode: vec![0; timing.modes.len()],
            reads_by_ecc: vec![0; timing.eccs.len()],
            regions: crate::stats::RegionStats::new(ftl.regions() as usize),
            die_busy_ns: vec![0; dies as usize],
            channel_busy_ns: vec![0; geo.channels as usize],
            ..Stats::default()
        };
        let log: Option<Box<dyn Write>> = match &cfg.stats.request_log {
            None => None,
            Some(path) => {
                let f = std::fs::File::create(path).map_err(|e| {
                    NandlabError::Sim(format!("stats.request_log: cannot create {path}: {e}"))
                })?;
                let w: Box<dyn Write> = if path.ends_with(".gz") {
                    Box::new(flate2::write::GzEncoder::new(
                        std::io::BufWriter::with_capacity(1 << 20, f),
                        flate2::Compression::fast(),
                    ))
                } else {
                    Box::new(std::io::BufWriter::with_capacity(1 << 20, f))
                };
                Some(w)
            }
        };
        let mut scheme = scheme;
        scheme.set_regions(&match &rg {
            Some(rg) => crate::scheme::RegionInfo {
                n: rg.n,
                stages: rg.stages,
                read_ns: rg.read_ns.clone(),
                program_ns: rg
                    .mode
                    .iter()
                    .map(|&m| timing.program_ns(crate::flash::PageType::Lsb, m))
                    .collect(),
                configured: true,
            },
            None => crate::scheme::RegionInfo::single(
                timing.read_ns[0],
                timing.program_ns(crate::flash::PageType::Lsb, 0),
            ),
        });
        let mut e = Engine {
            page_size: geo.page_size_bytes as u64,
            sched: Sched::new(
                dies,
                geo.planes_per_die,
                cfg.sched.priority,
                cfg.ftl.allocation == Allocation::Dynamic,
            ),
            ftl,
            timing,
            layout,
            scheme,
            stats,
            heap: BinaryHeap::with_capacity(1024),
            ev_seq: 0,
            now: 0,
            dies: vec![DieRun::IDLE; dies as usize],
            chan_free_at: vec![0; geo.channels as usize],
            slots: Vec::with_capacity(1024),
            free_slots: Vec::with_capacity(1024),
            gc_active: vec![false; pools],
            gc_pending: vec![0; pools],
            gc_victim: vec![NONE; pools],
            gc_zero_gain: vec![0; pools],
            actions: Vec::with_capacity(16),
            scratch: Vec::with_capacity(geo.pages_per_block as usize),
            rf_on,
            rf_period_s: cfg.refresh.period_s.round() as i64,
            rf_block: vec![NONE; planes],
            rf_pending: vec![0; planes],
            rf_phase: vec![0; planes],
            rf_deferred: vec![false; planes],
            rf_adjusted: (0..if rf_on { planes } else { 0 })
                .map(|_| Vec::with_capacity(ppb))
                .collect(),
            rf_plan,
            completed: 0,
            in_flight: 0,
            to_issue: 0,
            input_done: false,
            error: None,
            log,
            logical_pages,
            last_arrival_ns: 0,
            precondition: PreconditionReport::default(),
            read_model,
            rg,
            cfg,
        };
        if let Some(w) = e.log.as_mut() {
            writeln!(
                w,
                "arrival_ns,op,offset_bytes,len_bytes,wait_ns,service_ns,response_ns"
            )
            .map_err(|err| NandlabError::Sim(format!("stats.request_log: {err}")))?;
        }
        Ok(e)
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }
    /// The resolved timing.
    pub fn timing(&self) -> &Timing {
        &self.timing
    }
    /// The scheme.
    pub fn scheme(&self) -> &dyn Scheme {
        self.scheme.as_ref()
    }
    /// Simulated time now, ns.
    pub fn now_ns(&self) -> u64 {
        self.now
    }
    /// Host requests completed.
    pub fn completed(&self) -> u64 {
        self.completed
    }
    /// Logical capacity, pages.
    pub fn logical_pages(&self) -> u64 {
        self.logical_pages
    }

    #[inline]
    fn push(&mut self, t: u64, payload: u64) {
        // Simultaneous events: timers (host completions, ticks, refresh scans) first in the
        // order they were set, then dies by index (a die has at most one pending event).
        let tie = if payload & !ID_MASK == EV_DIE {
            (1 << 63) | (payload & ID_MASK)
        } else {
            self.ev_seq
        };
        self.heap.push(Reverse((t, tie, payload)));
        self.ev_seq += 1;
    }

    #[inline]
    fn fail(&mut self, msg: String) {
        if self.error.is_none() {
            self.error = Some(NandlabError::Sim(msg));
        }
    }

    // ----- replay loop -----------------------------------------------------------------

    /// Replay every request of `src`. `total_hint` (0 = unknown) feeds `progress(done, total)`,
    /// called every 65,536 completed requests and once at the end.
    ///
    /// # Errors
    /// Trace errors from the source; [`NandlabError::Sim`] for a request beyond the logical
    /// capacity (without `wrap_offsets`), a device that cannot reclaim space, or a stall.
    pub fn run<S: RequestSource>(
        &mut self,
        src: &mut S,
        total_hint: u64,
        progress: &mut crate::error::ProgressFn<'_>,
    ) -> Result<(), NandlabError> {
        let max = match self.cfg.host.max_requests {
            0 => u64::MAX,
            n => n,
        };
        let total_hint = total_hint.min(max);
        self.note_start_stage();
        let mut pulled = 0u64;
        let mut next_progress = PROGRESS_EVERY;
        if let Some(p) = self.scheme.tick_period_ns() {
            self.push(p.max(1), EV_TICK);
        }
        if self.rf_on {
            self.push(self.now, EV_REFRESH);
        }
        let scale = self.cfg.host.time_scale;
        let mut pull = |src: &mut S| -> Result<Option<HostRequest>, NandlabError> {
            if pulled >= max {
                return Ok(None);
            }
            let r = src.next_request()?;
            if let Some(mut r) = r {
                pulled += 1;
                if scale != 1.0 {
                    r.arrival_ns = (r.arrival_ns as f64 * scale).round() as u64;
                }
                return Ok(Some(r));
            }
            Ok(None)
        };
        match self.cfg.host.mode {
            ReplayMode::Open => {
                let mut next = pull(src)?;
                loop {
                    if let Some(e) = self.error.take() {
                        return Err(e);
                    }
                    if self.completed >= next_progress {
                        progress(self.completed, total_hint);
                        next_progress += PROGRESS_EVERY;
                    }
                    let ev_t = self.heap.peek().map(|Reverse((t, _, _))| *t);
                    let room = self.in_flight < self.cfg.host.max_outstanding as u64;
                    match (next, ev_t) {
                        (Some(r), t)
                            if (room || t.is_none()) && t.is_none_or(|t| r.arrival_ns <= t) =>
                        {
                            if !room {
                                self.fail(format!(
                                    "internal error: {} requests outstanding and no event pending",
                                    self.in_flight
                                ));
                                continue;
                            }
                            if r.arrival_ns < self.now {
                                self.stats.host_throttled += 1;
                            }
                            self.now = self.now.max(r.arrival_ns);
                            self.on_arrival(r)?;
                            next = pull(src)?;
                            if next.is_none() {
                                self.input_done = true;
                            }
                        }
                        (_, Some(_)) => {
                            if let Some(Reverse((t, _, p))) = self.heap.pop() {
                                self.now = t;
                                self.handle(p);
                            }
                        }
                        _ => break,
                    }
                }
            }
            ReplayMode::Closed => {
                self.to_issue = self.cfg.host.queue_depth as u64;
                loop {
                    if let Some(e) = self.error.take() {
                        return Err(e);
                    }
                    if self.completed >= next_progress {
                        progress(self.completed, total_hint);
                        next_progress += PROGRESS_EVERY;
                    }
                    while self.to_issue > 0 && !self.input_done {
                        match pull(src)? {
                            Some(mut r) => {
                                self.to_issue -= 1;
                                r.arrival_ns = self.now;
                                self.on_arrival(r)?;
                            }
                            None => self.input_done = true,
                        }
                    }
                    match self.heap.pop() {
                        Some(Reverse((t, _, p))) => {
                            self.now = t;
                            self.handle(p);
                        }
                        None => break,
                    }
                }
            }
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        progress(self.completed, total_hint);
        if self.sched.queued() > 0 || self.in_flight > 0 || self.dies.iter().any(|d| d.txn != NONE)
        {
            return Err(NandlabError::Sim(format!(
                "simulation stalled at t = {} ns with {} queued flash transactions and {} host \
                 requests in flight (free blocks per plane: {:?})",
                self.now,
                self.sched.queued(),
                self.in_flight,
                (0..self.ftl.geo.planes())
                    .map(|p| self.ftl.free_blocks(p))
                    .take(16)
                    .collect::<Vec<_>>()
            )));
        }
        if let Some(w) = self.log.as_mut() {
            w.flush()
                .map_err(|err| NandlabError::Sim(format!("stats.request_log: {err}")))?;
        }
        self.log = None;
        Ok(())
    }

    fn handle(&mut self, payload: u64) {
        self.stats.events += 1;
        let id = (payload & ID_MASK) as u32;
        match payload & !ID_MASK {
            EV_DIE => self.on_phase_done(id),
            EV_HOST => self.finish_host(id),
            EV_TICK => {
                self.actions.clear();
                let ctx = Ctx {
                    now_ns: self.now,
                    ftl: &self.ftl,
                    timing: &self.timing,
                };
                self.scheme.on_tick(&ctx, &mut self.actions);
                self.run_actions();
                let busy = !self.heap.is_empty() || self.in_flight > 0;
                if let Some(p) = self.scheme.tick_period_ns() {
                    if busy || !self.input_done {
                        self.push(self.now + p.max(1), EV_TICK);
                    }
                }
            }
            EV_REFRESH => {
                for plane in 0..self.ftl.geo.planes() {
                    self.maybe_refresh(plane);
                }
                // Scan while the host is active: refresh started after the last host request
                // would never end on a device that is always refreshing.
                // An empty heap with requests in flight is a stall: stop so `run` reports it.
                if !self.input_done || (self.in_flight > 0 && !self.heap.is_empty()) {
                    let dt = self.cfg.refresh.check_interval_ns();
                    self.push(self.now + dt, EV_REFRESH);
                }
            }
            _ => self.fail(format!("internal error: unknown event {payload:#x}")),
        }
    }

    // ----- host side -----------------------------------------------------------------

    fn on_arrival(&mut self, r: HostRequest) -> Result<(), NandlabError> {
        self.last_arrival_ns = r.arrival_ns;
        let logical_bytes = self.logical_pages * self.page_size;
        let mut offset = r.offset_bytes;
        if offset.saturating_add(r.len_bytes) > logical_bytes {
            if self.cfg.ftl.wrap_offsets {
                offset %= logical_bytes;
                self.stats.wrapped_requests += 1;
            } else {
                return Err(NandlabError::Sim(format!(
                    "request at offset {} bytes (+{} bytes, arrival {} ns) ends beyond the \
                     logical capacity of {} bytes; set ftl.wrap_offsets = true or a larger \
                     device.logical_capacity_bytes",
                    r.offset_bytes, r.len_bytes, r.arrival_ns, logical_bytes
                )));
            }
        }
        let span = crate::hil::span(offset, r.len_bytes, self.page_size);
        let slot = self.alloc_slot(HostSlot {
            arrival_ns: r.arrival_ns.min(self.now),
            offset_bytes: r.offset_bytes,
            len_bytes: r.len_bytes,
            op: r.op,
            pending: 0,
            done_ns: self.now,
            service_ns: 0,
        });
        self.in_flight += 1;
        match r.op {
            Op::Read => {
                self.stats.read_bytes += r.len_bytes;
                self.stats.read_pages += span.pages;
            }
            Op::Write => {
                self.stats.write_bytes += r.len_bytes;
                self.stats.write_pages += span.pages;
            }
        }
        self.actions.clear();
        let first = (span.first_lpn % self.logical_pages) as u32;
        self.scheme.on_host_request(r.op, first, span.pages as u32);
        let ctx = Ctx {
            now_ns: self.now,
            ftl: &self.ftl,
            timing: &self.timing,
        };
        self.scheme
            .on_request(r.op, first, span.pages as u32, &ctx, &mut self.actions);
        for i in 0..span.pages {
            let lpn = ((span.first_lpn + i) % self.logical_pages) as u32;
            match r.op {
                Op::Read => {
                    let ppn = self.ftl.lookup(lpn);
                    if ppn == UNMAPPED {
                        self.stats.unmapped_read_pages += 1;
                        continue;
                    }
                    let ctx = Ctx {
                        now_ns: self.now,
                        ftl: &self.ftl,
                        timing: &self.timing,
                    };
                    self.scheme.on_host_read(lpn, ppn, &ctx, &mut self.actions);
                    let plane = self.ftl.plane_of_ppn(ppn);
                    self.slots[slot as usize].pending += 1;
                    let (_, die) = self.sched.enqueue(
                        TxnKind::Read,
                        Source::Host,
                        lpn,
                        ppn,
                        plane,
                        slot,
                        Placement::NONE,
                    );
                    self.dispatch(die);
                }
                Op::Write => {
                    let ctx = Ctx {
                        now_ns: self.now,
                        ftl: &self.ftl,
                        timing: &self.timing,
                    };
                    self.scheme.on_host_write(lpn, &ctx);
                    let pl = self.scheme.placement(lpn, Source::Host, &ctx);
                    if !self.placement_ok(pl) {
                        continue;
                    }
                    let plane = match self.cfg.ftl.allocation {
                        Allocation::Static => self.ftl.plane_for_write_in(lpn, pl.region),
                        Allocation::Dynamic => NONE,
                    };
                    self.slots[slot as usize].pending += 1;
                    let (_, die) = self.sched.enqueue(
                        TxnKind::Program,
                        Source::Host,
                        lpn,
                        NONE,
                        plane,
                        slot,
                        pl,
                    );
                    if die == NONE {
                        for d in 0..self.dies.len() as u32 {
                            self.dispatch(d);
                        }
                    } else {
                        self.dispatch(die);
                    }
                }
            }
        }
        if self.slots[slot as usize].pending == 0 {
            self.finish_host(slot);
        }
        self.run_actions();
        Ok(())
    }

    fn placement_ok(&mut self, pl: Placement) -> bool {
        if (pl.stream as u32) < self.cfg.ftl.streams
            && (pl.mode as usize) < self.timing.modes.len()
            && (pl.ecc as usize) < self.timing.eccs.len()
            && (pl.region as u32) < self.ftl.regions()
        {
            return true;
        }
        let msg = format!(
            "scheme `{}` returned placement {pl:?} outside ftl.streams = {}, {} program modes, \
             {} ECC kinds, {} regions",
            self.scheme.name(),
            self.cfg.ftl.streams,
            self.timing.modes.len(),
            self.timing.eccs.len(),
            self.ftl.regions()
        );
        self.fail(msg);
        false
    }

    fn alloc_slot(&mut self, s: HostSlot) -> u32 {
        match self.free_slots.pop() {
            Some(i) => {
                self.slots[i as usize] = s;
                i
            }
            None => {
                self.slots.push(s);
                (self.slots.len() - 1) as u32
            }
        }
    }

    #[inline]
    fn host_page_done(&mut self, slot: u32, done_ns: u64, service_ns: u64) {
        let s = &mut self.slots[slot as usize];
        s.pending -= 1;
        s.done_ns = s.done_ns.max(done_ns);
        s.service_ns = s.service_ns.max(service_ns);
        if s.pending == 0 {
            if s.done_ns > self.now {
                let t = s.done_ns;
                self.push(t, EV_HOST | slot as u64);
            } else {
                self.finish_host(slot);
            }
        }
    }

    fn finish_host(&mut self, slot: u32) {
        let s = self.slots[slot as usize];
        let response = s.done_ns - s.arrival_ns;
        self.stats.last_completion_ns = self.stats.last_completion_ns.max(s.done_ns);
        let service = s.service_ns.min(response);
        let wait = response - service;
        let class = match s.op {
            Op::Read => &mut self.stats.read,
            Op::Write => &mut self.stats.write,
        };
        class.response.record(response);
        class.wait.record(wait);
        class.service.record(service);
        if let Some(w) = self.log.as_mut() {
            let op = if s.op == Op::Read { 'R' } else { 'W' };
            if let Err(err) = writeln!(
                w,
                "{},{},{},{},{},{},{}",
                s.arrival_ns, op, s.offset_bytes, s.len_bytes, wait, service, response
            ) {
                self.log = None;
                self.fail(format!("stats.request_log: {err}"));
            }
        }
        self.free_slots.push(slot);
        self.completed += 1;
        self.in_flight -= 1;
        if self.cfg.host.mode == ReplayMode::Closed {
            self.to_issue += 1;
        }
    }

    fn run_actions(&mut self) {
        let mut i = 0;
        while i < self.actions.len() {
            match self.actions[i] {
                Action::Rewrite { lpn, source } => {
                    let ppn = self.ftl.lookup(lpn);
                    if ppn != UNMAPPED {
                        let plane = self.ftl.plane_of_ppn(ppn);
                        let (_, die) = self.sched.enqueue(
                            TxnKind::Read,
                            source,
                            lpn,
                            ppn,
                            plane,
                            NONE,
                            Placement::NONE,
                        );
                        self.dispatch(die);
                    }
                }
            }
            i += 1;
        }
        self.actions.clear();
    }

    // ----- dies, channels -------------------------------------------------------------

    fn dispatch(&mut self, die: u32) {
        loop {
            if self.dies[die as usize].txn != NONE {
                return;
            }
            let Some(id) = self.sched.pick(die, &self.ftl) else {
                return;
            };
            let now = self.now;
            let t = *self.sched.txn(id);
            let xfer = self.timing.transfer_ns;
            let ppb = self.ftl.geo.pages_per_block;
            let mut run = DieRun {
                txn: id,
                ..DieRun::IDLE
            };
            match t.kind {
                TxnKind::Read => {
                    let pt = self.layout.page_type[(t.ppn % ppb) as usize];
                    let ecc = self.ftl.page_ecc(t.ppn);
                    let rt = self.read_type(t.ppn, pt, t.source);
                    let (sense, bus, decode) = self.read_cost(t.ppn, rt, ecc);
                    self.ftl.note_read(t.ppn);
                    self.count_read(t.source, ecc, pt);
                    if self.rg.is_some() {
                        self.count_region_read(t.source, t.ppn, sense + bus + decode);
                    }
                    run.phases[0] = Phase::Array(sense);
                    run.phases[1] = Phase::Bus(bus);
                    run.n = 2;
                    let tm = self.sched.txn_mut(id);
                    tm.placement.ecc = ecc;
                    tm.decode_ns = decode;
                }
                TxnKind::Program => {
                    let Some((ppn, pt, mode)) = self.program_page(&t, t.source) else {
                        return;
                    };
                    let prog = self.timing.program_ns(pt, mode);
                    run.phases[0] = Phase::Bus(xfer);
                    run.phases[1] = Phase::Array(prog);
                    run.n = 2;
                    self.sched.txn_mut(id).ppn = ppn;
                    if self.rg.is_some() {
                        self.count_region_program(t.source, t.placement.region, xfer + prog);
                    }
                    self.maybe_gc(self.ftl.pool(t.plane, t.placement.region));
                }
                TxnKind::Move => {
                    if self.ftl.page_state(t.ppn) != PageState::Valid
                        || self.ftl.lookup(t.lpn) != t.ppn
                    {
                        self.sched.release(id);
                        if t.source == Source::Refresh {
                            self.stats.refresh.moves_cancelled += 1;
                            self.refresh_step_done(t.plane);
                        } else {
                            self.stats.gc_moves_cancelled += 1;
                            self.move_done(self.ftl.pool(t.plane, t.placement.region));
                        }
                        continue;
                    }
                    let src_pt = self.layout.page_type[(t.ppn % ppb) as usize];
                    let ecc = self.ftl.page_ecc(t.ppn);
                    let rt = self.read_type(t.ppn, src_pt, t.source);
                    let (sense, bus, decode) = self.read_cost(t.ppn, rt, ecc);
                    if self.rg.is_some() {
                        self.count_region_read(t.source, t.ppn, sense + bus + decode);
                    }
                    let Some((dst, dst_pt, dst_mode)) = self.program_page(&t, t.source) else {
                        return;
                    };
                    self.count_read(t.source, ecc, src_pt);
                    if t.source == Source::Refresh {
                        if self.rf_phase[t.plane as usize] == 2 {
                            self.stats.refresh.pages_rewritten += 1;
                        } else {
                            self.stats.refresh.pages_moved += 1;
                        }
                    } else {
                        self.stats.gc_pages_moved += 1;
                    }
                    run.phases[0] = Phase::Array(sense);
                    let mut n = 1;
                    if !self.cfg.ftl.copyback {
                        run.phases[1] = Phase::Bus(bus);
                        run.phases[2] = Phase::Ctrl(decode);
                        run.phases[3] = Phase::Bus(xfer);
                        n = 4;
                    }
                    let prog = self.timing.program_ns(dst_pt, dst_mode);
                    run.phases[n] = Phase::Array(prog);
                    run.n = n as u8 + 1;
                    self.sched.txn_mut(id).ppn = dst;
                    if self.rg.is_some() {
                        self.count_region_program(t.source, t.placement.region, xfer + prog);
                    }
                    if t.source == Source::Refresh {
                        self.maybe_gc(t.plane);
                    }
                }
                TxnKind::Adjust => {
                    // IDA §III-B: "we conservatively set the voltage adjustment latency to the
                    // MSB write latency".
                    let mode = self.ftl.page_mode(t.ppn);
                    run.phases[0] =
                        Phase::Array(self.timing.program_ns(crate::flash::PageType::Msb, mode));
                    run.n = 1;
                }
                TxnKind::Erase => {
                    self.stats.flash_erases.add(t.source);
                    if self.rg.is_some() {
                        self.stats.regions.erases[t.placement.region as usize] += 1;
                    }
                    run.phases[0] = Phase::Array(self.timing.erase_ns);
                    run.n = 1;
                }
            }
            self.sched.txn_mut(id).start_ns = now;
            self.dies[die as usize] = run;
            self.start_phase(die);
            return;
        }
    }

    /// Run the die's phases from `run.i` as far as possible without an event: array and
    /// controller phases just advance the die's clock; a bus phase requested *now* reserves the
    /// channel at `max(now, channel free)`. The channel is a timeline served in request order —
    /// requests are made in simulated-time order, so this is exactly a FIFO channel queue. A bus
    /// phase needed later (after a sense) waits for an event at that time, so that requests
    /// from other dies made in between are served first.
    fn start_phase(&mut self, die: u32) {
        let ch = self.ftl.geo.channel_of_die(die) as usize;
        let now = self.now;
        let mut t = now;
        let run = &mut self.dies[die as usize];
        while run.i < run.n {
            match run.phases[run.i as usize] {
                Phase::Array(d) | Phase::Ctrl(d) => t += d,
                Phase::Bus(d) => {
                    if t > now {
                        break;
                    }
                    let s = t.max(self.chan_free_at[ch]);
                    self.chan_free_at[ch] = s + d;
                    self.stats.channel_busy_ns[ch] += d;
                    t = s + d;
                }
            }
            run.i += 1;
        }
        self.push(t, EV_DIE | die as u64);
    }

    fn on_phase_done(&mut self, die: u32) {
        let run = &self.dies[die as usize];
        if run.i < run.n {
            self.start_phase(die);
        } else {
            self.complete(die);
        }
    }

    fn complete(&mut self, die: u32) {
        let id = self.dies[die as usize].txn;
        self.dies[die as usize] = DieRun::IDLE;
        let t = *self.sched.txn(id);
        self.sched.release(id);
        let service = self.now - t.start_ns;
        self.stats.die_busy_ns[die as usize] += service;
        match t.kind {
            TxnKind::Read => {
                let done = self.now + t.decode_ns;
                if t.source == Source::Host {
                    self.host_page_done(t.req, done, done - t.start_ns);
                } else if t.source == Source::Refresh {
                    self.refresh_step_done(t.plane);
                } else if self.ftl.lookup(t.lpn) == t.ppn {
                    // Second half of a scheme rewrite: program the data again.
                    let ctx = Ctx {
                        now_ns: self.now,
                        ftl: &self.ftl,
                        timing: &self.timing,
                    };
                    let pl = self.scheme.placement(t.lpn, t.source, &ctx);
                    if self.placement_ok(pl) {
                        let plane = self.ftl.plane_for_write_in(t.lpn, pl.region);
                        let (_, d2) = self.sched.enqueue(
                            TxnKind::Program,
                            t.source,
                            t.lpn,
                            NONE,
                            plane,
                            NONE,
                            pl,
                        );
                        if d2 != die {
                            self.dispatch(d2);
                        }
                    }
                }
            }
            TxnKind::Program => {
                if t.source == Source::Host {
                    self.host_page_done(t.req, self.now, service);
                } else {
                    self.stats.rewrites += 1;
                }
            }
            TxnKind::Move if t.source == Source::Refresh => self.refresh_step_done(t.plane),
            TxnKind::Move => self.move_done(self.ftl.pool(t.plane, t.placement.region)),
            TxnKind::Adjust => self.refresh_step_done(t.plane),
            TxnKind::Erase => {
                self.ftl.erase(t.ppn);
                let pool = self.ftl.pool(t.plane, t.placement.region);
                self.gc_active[pool as usize] = false;
                self.gc_victim[pool as usize] = NONE;
                self.maybe_gc(pool);
                let plane = t.plane as usize;
                if self.rf_on && self.rf_deferred[plane] {
                    self.maybe_refresh(t.plane);
                }
                if self.cfg.ftl.allocation == Allocation::Dynamic {
                    // Space came back: waiting host writes may fit any idle die now.
                    for d in 0..self.dies.len() as u32 {
                        self.dispatch(d);
                    }
                }
            }
        }
        self.dispatch(die);
    }

    /// Allocate and program the page of a program or GC-move transaction at dispatch; counts
    /// the program. Returns the new PPN and its page type (`None` after an internal error).
    fn program_page(
        &mut self,
        t: &crate::sched::Txn,
        source: Source,
    ) -> Option<(u32, crate::flash::PageType, u8)> {
        // With regions, scheme migrations may not take a pool's last free block either.
        let host = source == Source::Host || (source == Source::Migration && self.rg.is_some());
        let Ok(ppn) = self.ftl.allocate_in(
            t.plane,
            t.placement.region,
            t.placement.stream,
            host,
            self.now,
        ) else {
            self.fail(format!(
                "internal error: {source:?} program dispatched on plane {}{} without space",
                t.plane,
                self.region_note(t.placement.region)
            ));
            return None;
        };
        let time_s = (self.now / 1_000_000_000) as i32;
        let mode = self.region_mode(t.placement);
        self.ftl.program(ppn, t.lpn, mode, t.placement.ecc, time_s);
        self.stats.flash_programs.add(source);
        self.stats.programs_by_mode[mode as usize] += 1;
        let ppb = self.ftl.geo.pages_per_block;
        Some((ppn, self.layout.page_type[(ppn % ppb) as usize], mode))
    }

    /// Check the FTL invariants (DESIGN §5).
    pub fn check_invariants(&self) -> Result<(), String> {
        self.ftl.check_invariants()
    }

    /// Arrival time of the last request replayed, ns.
    pub fn last_arrival_ns(&self) -> u64 {
        self.last_arrival_ns
    }

    /// Note the wear stage the replay starts in (after preconditioning).
    fn note_start_stage(&mut self) {
        let (stage, pe) = (self.ftl.wear_stage(), self.ftl.mean_pe());
        if let Some(rg) = self.rg.as_mut() {
            rg.stage_at_start = stage;
            rg.mean_pe_at_start = pe;
        }
    }
}
