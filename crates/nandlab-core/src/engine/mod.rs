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

mod precondition;
mod report;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write;

use crate::api::NandlabError;
use crate::config::{Allocation, Config, ReplayMode};
use crate::flash::{BlockLayout, Timing};
use crate::ftl::{Ftl, PageState, NONE, UNMAPPED};
use crate::host::RequestSource;
use crate::sched::{Sched, TxnKind};
use crate::scheme::{Action, AdjustedPage, Ctx, Placement, RefreshPlan, Scheme, Source};
use crate::stats::Stats;
use crate::trace::{HostRequest, Op};

pub use precondition::{rng_stream, PreconditionReport};

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

/// Flat per-region tables of the engine's hot path (`[regions]`).
#[derive(Clone, Debug)]
struct RegionRuntime {
    /// Regions.
    n: usize,
    /// Wear stages.
    stages: usize,
    /// Program mode of each region.
    mode: Vec<u8>,
    /// Read latency by `region · stages + stage`, ns (table source).
    read_ns: Vec<u64>,
    /// Read latency comes from the table (else from the reliability model).
    table: bool,
    /// Whether region r is a lowest-read-latency region at stage s (`r · stages + s`).
    opt_read: Vec<bool>,
    /// Whether region r is a lowest-program-latency region.
    opt_write: Vec<bool>,
    /// Wear stage when the replay started.
    stage_at_start: usize,
    mean_pe_at_start: f64,
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
        ftl.set_layout(layout.clone());
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
            timeseries: crate::stats::TimeSeries::from_config(&cfg.stats, dies),
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
        let region_info = match &rg {
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
        };
        scheme.set_regions(&region_info);
        scheme.validate(&region_info)?;
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
            rf_period_s: (cfg.refresh.period_s * cfg.host.time_scale).round() as i64,
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
    /// The scheme's tick period in simulated ns: periods are given in trace time, so they
    /// stretch with `host.time_scale` like the trace's inter-arrival times (≥ 1 ns).
    fn tick_period_ns(&self) -> Option<u64> {
        let k = self.cfg.host.time_scale;
        self.scheme
            .tick_period_ns()
            .map(|p| ((p as f64 * k).round() as u64).max(1))
    }

    /// Refresh scan interval in simulated ns (trace time × `host.time_scale`).
    fn refresh_check_ns(&self) -> u64 {
        (self.cfg.refresh.check_interval_ns() as f64 * self.cfg.host.time_scale).round() as u64
    }

    fn push(&mut self, t: u64, payload: u64) {
        self.heap.push(Reverse((t, self.ev_seq, payload)));
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
        progress: &mut crate::api::ProgressFn<'_>,
    ) -> Result<(), NandlabError> {
        let max = match self.cfg.host.max_requests {
            0 => u64::MAX,
            n => n,
        };
        let total_hint = total_hint.min(max);
        self.note_start_stage();
        let mut pulled = 0u64;
        let mut next_progress = PROGRESS_EVERY;
        if let Some(p) = self.tick_period_ns() {
            self.push(p, EV_TICK);
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
                if let Some(p) = self.tick_period_ns() {
                    if busy || !self.input_done {
                        self.push(self.now + p, EV_TICK);
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
                    let dt = self.refresh_check_ns();
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
        if let Some(ts) = self.stats.timeseries.as_mut() {
            ts.host_done(s.op == Op::Read, s.arrival_ns, s.done_ns, s.len_bytes);
        }
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
                        self.stats.refresh.moves_by_page_type[src_pt as usize][dst_pt as usize] +=
                            1;
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
        if let Some(ts) = self.stats.timeseries.as_mut() {
            let gc_move = t.kind == TxnKind::Move && t.source != Source::Refresh;
            ts.flash_done(t.start_ns, self.now, t.kind == TxnKind::Erase, gc_move);
        }
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
        let Ok(ppn) = self.ftl.allocate_typed(
            t.plane,
            t.placement.region,
            t.placement.stream,
            host,
            self.now,
            t.placement.page_type,
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

    /// The program mode of a page placed by `pl`: its region's with `[regions]`, else the
    /// scheme's.
    #[inline]
    fn region_mode(&self, pl: Placement) -> u8 {
        match &self.rg {
            Some(rg) => rg.mode[pl.region as usize],
            None => pl.mode,
        }
    }

    /// `" region NAME"` for messages (empty without regions).
    fn region_note(&self, region: u8) -> String {
        if self.rg.is_some() {
            format!(" region {}", self.cfg.regions.name(region as usize))
        } else {
            String::new()
        }
    }

    /// Per-region read counters and the EFM Fig. 6 breakdown of a read of `ppn` costing
    /// `ns` of flash time.
    fn count_region_read(&mut self, source: Source, ppn: u32, ns: u64) {
        let Some(rg) = &self.rg else { return };
        let r = self.ftl.block_region(self.ftl.geo.block_of_ppn(ppn)) as usize;
        let st = &mut self.stats.regions;
        st.reads[r] += 1;
        match source {
            Source::Host => {
                st.host_reads[r] += 1;
                if rg.opt_read[r * rg.stages + self.ftl.wear_stage()] {
                    st.optimal_ns += ns;
                } else {
                    st.nonoptimal_read_ns += ns;
                }
            }
            Source::Migration => st.migration_ns += ns,
            Source::Gc => st.gc_ns += ns,
            _ => st.other_ns += ns,
        }
    }

    /// Per-region program counters and the Fig. 6 breakdown of a program costing `ns`.
    fn count_region_program(&mut self, source: Source, region: u8, ns: u64) {
        let Some(rg) = &self.rg else { return };
        let r = region as usize;
        let st = &mut self.stats.regions;
        st.programs[r] += 1;
        match source {
            Source::Host => {
                st.host_programs[r] += 1;
                if rg.opt_write[r] {
                    st.optimal_ns += ns;
                } else {
                    st.nonoptimal_write_ns += ns;
                }
            }
            Source::Migration => st.migration_ns += ns,
            Source::Gc => st.gc_ns += ns,
            _ => st.other_ns += ns,
        }
    }

    #[inline]
    fn count_read(&mut self, source: Source, ecc: u8, pt: crate::flash::PageType) {
        self.stats.flash_reads.add(source);
        self.stats.reads_by_ecc[ecc as usize] += 1;
        self.stats.reads_by_page_type[pt as usize] += 1;
    }

    /// Sense, transfer and decode time of a read of `ppn` (page type `pt`, ECC `ecc`), ns:
    /// from the fixed per-ECC latencies, or from the reliability model (which also counts the
    /// read's RBER, soft-sensing levels and outcome).
    fn read_cost(&mut self, ppn: u32, pt: crate::flash::PageType, ecc: u8) -> (u64, u64, u64) {
        let xfer = self.timing.transfer_ns;
        if let Some(rg) = &self.rg {
            if rg.table {
                // EFM Tables II-III: the region's read latency at the current wear stage
                // replaces the page-type sense time; the ECC's extra sensing and decode add.
                let r = self.ftl.block_region(self.ftl.geo.block_of_ppn(ppn)) as usize;
                let e = &self.timing.eccs[ecc as usize];
                return (
                    rg.read_ns[r * rg.stages + self.ftl.wear_stage()] + e.extra_sense_ns,
                    xfer,
                    e.decode_ns,
                );
            }
        }
        let Some(rm) = self.read_model.as_mut() else {
            return (
                self.timing.sense_ns(pt, ecc),
                xfer,
                self.timing.decode_ns(ecc),
            );
        };
        let block = self.ftl.geo.block_of_ppn(ppn);
        let pe = self.ftl.block_erases(block);
        let age_s = self.now as f64 / 1e9 - self.ftl.page_program_s(ppn) as f64;
        let mode = self.ftl.page_mode(ppn);
        let reads = self.ftl.block_reads(block);
        let (rber, c) = rm.read(pe, age_s, mode, ecc, reads);
        let r = &mut self.stats.reliability;
        r.reads += 1;
        r.rber_sum += rber;
        r.reads_by_soft_level[(c.soft_levels as usize).min(15)] += 1;
        r.read_retries += u64::from(c.rereads);
        match c.outcome {
            crate::ecc::ReadOutcome::Corrected => {}
            crate::ecc::ReadOutcome::Uncorrectable => r.uncorrectable += 1,
            crate::ecc::ReadOutcome::DetectedOnly => r.detected_only += 1,
        }
        let tries = 1 + u64::from(c.rereads);
        (
            tries * self.timing.read_ns[pt as usize] + c.extra_sense_ns.round() as u64,
            tries * xfer + c.extra_transfer_ns.round() as u64,
            c.decode_ns.round() as u64,
        )
    }

    /// Page type a read of `ppn` (layout type `pt`) senses as: the IDA-adjusted type when its
    /// word line was voltage-adjusted. Counts host MSB reads by lower-page validity (IDA
    /// Fig. 4) and reads of adjusted pages.
    #[inline]
    fn read_type(
        &mut self,
        ppn: u32,
        pt: crate::flash::PageType,
        source: Source,
    ) -> crate::flash::PageType {
        let adj = self.ftl.page_read_type(ppn);
        if let Some(rt) = adj {
            self.stats.refresh.adjusted_reads_by_type[rt as usize] += 1;
        }
        if self.rf_on && source == Source::Host && pt == crate::flash::PageType::Msb {
            let ppb = self.ftl.geo.pages_per_block;
            let base = ppn - ppn % ppb;
            let wl = self.layout.word_line[(ppn % ppb) as usize] as usize;
            let mut idx = 0;
            for (b, &p) in self.layout.wl(wl).iter().enumerate().take(2) {
                if self.layout.bits > b + 1 && self.ftl.page_state(base + p) == PageState::Valid {
                    idx |= 1 << b;
                }
            }
            let r = &mut self.stats.refresh;
            r.host_msb_reads_by_lower_valid[idx] += 1;
            r.host_msb_reads_adjusted += adj.is_some() as u64;
        }
        adj.unwrap_or(pt)
    }

    // ----- data refresh ------------------------------------------------------------------

    /// Start the refresh of the oldest due block of `plane` (IDA §III-C; Table II
    /// "remapping-based refresh"), unless one runs there already or the plane is short of free
    /// blocks (then it waits for GC: refresh is background work). Due blocks with no valid
    /// data are skipped and their refresh clock restarts.
    fn maybe_refresh(&mut self, plane: u32) {
        let p = plane as usize;
        if !self.rf_on || self.rf_block[p] != NONE {
            return;
        }
        // Room for the refresh's own destination block beyond the GC reserve: refresh and GC
        // moves share the plane's relocation stream.
        if self.ftl.free_blocks(plane) <= self.ftl.gc_threshold_blocks {
            self.rf_deferred[p] = true;
            return;
        }
        self.rf_deferred[p] = false;
        let now_s = (self.now / 1_000_000_000) as i64;
        let bpp = self.ftl.geo.blocks_per_plane;
        let mut best = NONE;
        let mut best_s = i64::MAX;
        for b in plane * bpp..(plane + 1) * bpp {
            if self.ftl.block_state(b) != crate::ftl::BlockState::Full {
                continue;
            }
            let t = self.ftl.block_data_s(b) as i64;
            if now_s - t < self.rf_period_s {
                continue;
            }
            if self.ftl.block_valid(b) == 0 {
                self.stats.refresh.skipped_empty += 1;
                self.ftl.set_block_data_s(b, now_s as i32);
                continue;
            }
            if t < best_s {
                best_s = t;
                best = b;
            }
        }
        if best != NONE {
            self.start_refresh(plane, best);
        }
    }

    fn start_refresh(&mut self, plane: u32, block: u32) {
        let p = plane as usize;
        if !self.ftl.claim_for_refresh(block) {
            return;
        }
        self.rf_block[p] = block;
        self.rf_phase[p] = 1;
        self.stats.refresh.blocks_refreshed += 1;
        self.rf_plan.clear();
        let ctx = Ctx {
            now_ns: self.now,
            ftl: &self.ftl,
            timing: &self.timing,
        };
        self.scheme.plan_refresh(block, &ctx, &mut self.rf_plan);
        let mut pending = 0u32;
        let mut die = NONE;
        for i in 0..self.rf_plan.moves.len() {
            let src = self.rf_plan.moves[i];
            let lpn = self.ftl.page_lpn(src);
            let Some(d) = self.enqueue_refresh_move(lpn, src, plane) else {
                return;
            };
            die = d;
            pending += 1;
        }
        // Step 1 of Fig. 7b reads every valid page, also those then kept in place.
        self.rf_adjusted[p].clear();
        for i in 0..self.rf_plan.adjusted.len() {
            let a = self.rf_plan.adjusted[i];
            self.rf_adjusted[p].push(a);
            let lpn = self.ftl.page_lpn(a.ppn);
            die = self.enqueue_refresh_read(lpn, a.ppn, plane);
            pending += 1;
        }
        for i in 0..self.rf_plan.adjust_wls.len() {
            let ppn = self.rf_plan.adjust_wls[i];
            die = self
                .sched
                .enqueue(
                    TxnKind::Adjust,
                    Source::Refresh,
                    0,
                    ppn,
                    plane,
                    NONE,
                    Placement::NONE,
                )
                .1;
            pending += 1;
        }
        let r = &mut self.stats.refresh;
        r.wordlines_adjusted += self.rf_plan.adjust_wls.len() as u64;
        r.pages_adjusted += self.rf_plan.adjusted.len() as u64;
        r.blocks_adjusted += !self.rf_plan.adjust_wls.is_empty() as u64;
        self.rf_pending[p] = pending;
        if pending == 0 {
            self.finish_refresh(plane);
        } else if die != NONE {
            self.dispatch(die);
        }
    }

    /// One refresh transaction of `plane` finished (or was cancelled).
    fn refresh_step_done(&mut self, plane: u32) {
        let p = plane as usize;
        self.rf_pending[p] -= 1;
        if self.rf_pending[p] > 0 {
            return;
        }
        if self.rf_phase[p] == 2 || self.rf_adjusted[p].is_empty() {
            self.finish_refresh(plane);
            return;
        }
        // Adjustments done: the kept pages now read faster; read each back (Fig. 7b step 5);
        // a corrupted one is rewritten from its error-free copy (step 8), which costs a move
        // (read back, decode, program to a new block).
        self.rf_phase[p] = 2;
        let mut pending = 0;
        let mut die = NONE;
        for i in 0..self.rf_adjusted[p].len() {
            let a = self.rf_adjusted[p][i];
            if self.ftl.page_state(a.ppn) != PageState::Valid {
                continue;
            }
            self.ftl.set_page_read_type(a.ppn, a.read_type);
            let lpn = self.ftl.page_lpn(a.ppn);
            self.stats.refresh.readbacks += 1;
            if a.corrupt {
                let Some(d) = self.enqueue_refresh_move(lpn, a.ppn, plane) else {
                    return;
                };
                die = d;
            } else {
                die = self.enqueue_refresh_read(lpn, a.ppn, plane);
            }
            pending += 1;
        }
        self.rf_pending[p] = pending;
        if pending == 0 {
            self.finish_refresh(plane);
        } else if die != NONE {
            self.dispatch(die);
        }
    }

    /// Queue the refresh relocation of `ppn` (holding `lpn`) on `plane`, placed by the scheme
    /// for [`Source::Refresh`]; returns its die, or `None` after a bad placement (the run has
    /// failed).
    fn enqueue_refresh_move(&mut self, lpn: u32, ppn: u32, plane: u32) -> Option<u32> {
        let ctx = Ctx {
            now_ns: self.now,
            ftl: &self.ftl,
            timing: &self.timing,
        };
        let pl = self.scheme.placement(lpn, Source::Refresh, &ctx);
        if !self.placement_ok(pl) {
            return None;
        }
        Some(
            self.sched
                .enqueue(TxnKind::Move, Source::Refresh, lpn, ppn, plane, NONE, pl)
                .1,
        )
    }

    /// Queue a refresh read of `ppn` (holding `lpn`) on `plane`; returns its die.
    fn enqueue_refresh_read(&mut self, lpn: u32, ppn: u32, plane: u32) -> u32 {
        self.sched
            .enqueue(
                TxnKind::Read,
                Source::Refresh,
                lpn,
                ppn,
                plane,
                NONE,
                Placement::NONE,
            )
            .1
    }

    /// The refresh of `plane`'s block is over: it returns to the full blocks (GC reclaims it
    /// when empty, IDA §III-C "reclaimed by GC (later)"); an adjusted block is an IDA block
    /// whose refresh clock restarts (its cells were reprogrammed).
    fn finish_refresh(&mut self, plane: u32) {
        let p = plane as usize;
        let block = self.rf_block[p];
        if !self.rf_adjusted[p].is_empty() {
            self.ftl.mark_ida(block);
        }
        self.ftl
            .set_block_data_s(block, (self.now / 1_000_000_000) as i32);
        self.ftl.unclaim_victim(block);
        self.rf_block[p] = NONE;
        self.rf_phase[p] = 0;
        self.rf_adjusted[p].clear();
        self.maybe_gc(plane);
        self.maybe_refresh(plane);
    }

    // ----- GC ----------------------------------------------------------------------------

    /// Start GC in `pool` (a plane without regions) when it is short of free blocks.
    fn maybe_gc(&mut self, pool: u32) {
        let p = pool as usize;
        if self.gc_active[p] || !self.ftl.needs_gc(pool) {
            return;
        }
        let Some(victim) = self.ftl.select_victim(pool, self.now) else {
            return;
        };
        let plane = self.ftl.plane_of_pool(pool);
        let region = self.ftl.block_region(victim);
        let ppb = self.ftl.geo.pages_per_block;
        if self.ftl.block_valid(victim) == ppb && self.ftl.allocation() == Allocation::Dynamic {
            // Nothing to reclaim here now; dynamic allocation steers writes to other planes
            // until host overwrites invalidate data in this one.
            self.ftl.unclaim_victim(victim);
            return;
        }
        if self.ftl.block_valid(victim) == ppb {
            self.gc_zero_gain[p] += 1;
            if self.gc_zero_gain[p] > self.ftl.geo.blocks_per_plane {
                let what = if self.rg.is_some() {
                    format!("plane {plane}{}", self.region_note(region))
                } else {
                    format!("plane {plane}")
                };
                self.fail(format!(
                    "GC cannot reclaim space on {what}: every victim is fully valid (the \
                     logical data does not fit the physical capacity less the GC reserve); \
                     raise device.op_percent_of_logical or lower ftl.gc_threshold_pct{}",
                    if self.rg.is_some() {
                        ", or give the region a larger share (regions.fractions)"
                    } else {
                        ""
                    }
                ));
                return;
            }
        } else {
            self.gc_zero_gain[p] = 0;
        }
        self.gc_active[p] = true;
        self.gc_victim[p] = victim;
        self.stats.gc_invocations += 1;
        self.stats.gc_victim_valid_sum += self.ftl.block_valid(victim) as u64;
        self.scratch.clear();
        self.ftl.valid_pages(victim, &mut self.scratch);
        self.gc_pending[p] = self.scratch.len() as u32;
        for i in 0..self.scratch.len() {
            let src = self.scratch[i];
            let lpn = self.ftl.page_lpn(src);
            let ctx = Ctx {
                now_ns: self.now,
                ftl: &self.ftl,
                timing: &self.timing,
            };
            let mut pl = self.scheme.gc_move(lpn, src, &ctx);
            // GC keeps a block's region (DESIGN §6, regions are block pools).
            pl.region = region;
            if !self.placement_ok(pl) {
                return;
            }
            self.sched
                .enqueue(TxnKind::Move, Source::Gc, lpn, src, plane, NONE, pl);
        }
        if self.gc_pending[p] == 0 {
            self.enqueue_erase(pool);
        }
    }

    fn move_done(&mut self, pool: u32) {
        let p = pool as usize;
        self.gc_pending[p] -= 1;
        if self.gc_pending[p] == 0 {
            self.enqueue_erase(pool);
        }
    }

    fn enqueue_erase(&mut self, pool: u32) {
        let victim = self.gc_victim[pool as usize];
        let plane = self.ftl.plane_of_pool(pool);
        let region = self.ftl.block_region(victim);
        self.sched.enqueue(
            TxnKind::Erase,
            Source::Gc,
            0,
            victim,
            plane,
            NONE,
            Placement {
                region,
                ..Placement::NONE
            },
        );
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

impl RegionRuntime {
    fn new(cfg: &crate::config::RegionsConfig, timing: &Timing) -> Option<RegionRuntime> {
        if cfg.is_off() {
            return None;
        }
        let n = cfg.count();
        let stages = cfg.stages();
        let mode: Vec<u8> = cfg.program_modes.iter().map(|&m| m as u8).collect();
        let table = cfg.read_latency == crate::config::RegionReadLatency::Table;
        let mut read_ns = vec![0u64; n * stages];
        for (r, row) in cfg.read_us.iter().enumerate().take(n) {
            for (s, &us) in row.iter().enumerate().take(stages) {
                read_ns[r * stages + s] = (us * 1000.0).round() as u64;
            }
        }
        let mut opt_read = vec![false; n * stages];
        for s in 0..stages {
            let best = (0..n).map(|r| read_ns[r * stages + s]).min().unwrap_or(0);
            for r in 0..n {
                opt_read[r * stages + s] = read_ns[r * stages + s] == best;
            }
        }
        let prog = |r: usize| timing.program_ns(crate::flash::PageType::Lsb, mode[r]);
        let best_w = (0..n).map(prog).min().unwrap_or(0);
        let opt_write = (0..n).map(|r| prog(r) == best_w).collect();
        Some(RegionRuntime {
            n,
            stages,
            mode,
            read_ns,
            table,
            opt_read,
            opt_write,
            stage_at_start: 0,
            mean_pe_at_start: 0.0,
        })
    }
}
