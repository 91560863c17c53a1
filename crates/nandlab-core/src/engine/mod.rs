//! The discrete-event engine of the block device: owns simulated time and drives host, FTL,
//! scheme, scheduler and the flash executor.
//!
//! ```text
//!  RequestSource ─► Feed (reads 4 ahead; prefetch) ─► on_arrival ─► hil::Pager ─► scheme hooks
//!                                                                                │ Txn per page
//!   sched::Sched (per-die queues; SpaceView = the FTL) ◄─────────────────────────┘
//!        │ pick (priority)                       dispatch.rs: cost, allocate, program at start
//!        ▼
//!   exec::Executor: die runs of phases Array │ Bus(channel) │ Ctrl; EventQueue (die slots + timers)
//!        │ run finished
//!        ▼
//!   dispatch.rs: complete ─► host request done (response = last page done − arrival)
//!                         └► gc.rs (moves, erase) · refresh.rs · scheme rewrites
//! ```
//!
//! Files: `dispatch.rs` (what a transaction costs and does at start and end, and the FTL's
//! answers to the scheduler), `gc.rs` (GC control), `refresh.rs` (data-refresh control),
//! `read_cost.rs` (the read-cost path: fixed latencies, region tables or the reliability
//! model), `regions.rs` (region tables and counters), `precondition.rs` (untimed state before
//! the replay), `report.rs` (the JSON report).
//!
//! Time: the executor's [`crate::exec::EventQueue`] holds one pending event per die (the end of
//! its current phase or run) and the engine's timers (host completions after an ECC decode,
//! scheme ticks, refresh scans). Simultaneous events fire timers first (in the order they were
//! set), then dies by index, so the order does not depend on when an event was scheduled and a
//! run whose phases cannot interleave with another die's (its channel has no other die) is one
//! event. Host arrivals are not events: the next request is read from the source and compared
//! with the next event time, so traces stream in constant memory; arrivals at the same time as
//! an event come first.
//!
//! A die executes one transaction at a time as a short list of phases (see [`crate::exec`]).
//! A host read completes `decode` after its transfer ends (decoding holds neither die nor
//! channel); a write completes when its program ends.
//!
//! Speed (issue 12): per-page state is struct-of-arrays with a 2-bit state bitmap
//! ([`crate::ftl`]); queued transactions are 28-byte records stored inline in the die queues;
//! the L2P entries of the next requests and the page state of the next transaction of each die
//! are prefetched (module `prefetch`); divisions by geometry counts are multiplications
//! ([`crate::flash::DivU32`]); a trace is parsed once, on its own thread
//! ([`crate::host::spill`], [`crate::host::threaded`]). Issue 13 (the default TLC drive):
//! one-shot and multi-plane partners are taken in one pass over the queue window
//! ([`crate::sched::Sched::take_partners`]); the event queue finds the earliest die by a
//! branch-free scan of packed (time, slot) keys in groups of 8; per-page ECC and program-mode
//! arrays are not touched while they are uniform; and small values are never passed through
//! memory in a shape the CPU cannot store-forward (a 16-byte load of two 8-byte stores waits
//! for the store buffer, which the FTL's random L2P stores keep full: `perf record -e cpu-clock
//! --call-graph dwarf` found 10–12 % of the replay there). None of this changes a report.

mod backend;
mod dispatch;
mod dram;
mod gc;
mod precondition;
mod read_cost;
mod refresh;
mod regions;
mod report;

use std::io::Write;

use crate::config::{Allocation, Config, ReplayMode};
use crate::error::NandlabError;
use crate::exec::{Event, Executor};
use crate::flash::{BlockLayout, Timing};
use crate::ftl::{Ftl, NONE, UNMAPPED};
use crate::host::cache::CacheOp;
use crate::host::RequestSource;
use crate::reliability::faults::{Fault, FaultMode};
use crate::sched::{Sched, TxnKind};
use crate::scheme::{Action, AdjustedPage, Ctx, Placement, RefreshPlan, Scheme, Source};
use crate::stats::Stats;
use crate::trace::{HostRequest, Op};

pub use crate::rng::rng_stream;
pub use precondition::PreconditionReport;
use regions::RegionRuntime;

const EV_HOST: u64 = 2 << 32;
const EV_TICK: u64 = 3 << 32;
const EV_REFRESH: u64 = 4 << 32;
/// A backend-disk fetch returns (id = fetch slot).
const EV_BACKEND: u64 = 5 << 32;
/// The next fault injection is due.
const EV_FAULT: u64 = 6 << 32;
/// A host page served from the backend disk is done (id = host request slot).
const EV_DISK_READ: u64 = 7 << 32;
/// A die's hold on its host writes expires (superpage allocation; id = die).
const EV_SP_HOLD: u64 = 8 << 32;
const ID_MASK: u64 = (1 << 32) - 1;
const PROGRESS_EVERY: u64 = 1 << 16;
/// Requests read ahead of the one arriving next (prefetch distance).
const LOOKAHEAD: usize = 4;
/// The latest arrival a replay accepts, ns (2^62, 146 years): event times must stay far below
/// 2^64 (the event queue's empty marker) with every latency added.
pub const MAX_ARRIVAL_NS: u64 = 1 << 62;

/// The host request stream of a replay: reads ahead of arrival so that what the next requests
/// touch can be prefetched. A trace error met while reading ahead is held until the requests
/// before it have arrived, so a run fails at the same point as without read-ahead.
struct Feed {
    pulled: u64,
    max: u64,
    scale: f64,
    ahead: std::collections::VecDeque<(HostRequest, CacheOp)>,
    err: Option<NandlabError>,
    exhausted: bool,
}

impl Feed {
    /// The next request from `src` (at most `max`, arrival scaled by `host.time_scale`).
    #[inline]
    fn pull<S: RequestSource>(
        &mut self,
        src: &mut S,
    ) -> Result<Option<(HostRequest, CacheOp)>, NandlabError> {
        if self.pulled >= self.max {
            return Ok(None);
        }
        match src.next_request()? {
            Some(mut r) => {
                self.pulled += 1;
                let t = if self.scale != 1.0 {
                    r.arrival_ns as f64 * self.scale
                } else {
                    r.arrival_ns as f64
                };
                if t >= MAX_ARRIVAL_NS as f64 {
                    return Err(NandlabError::Sim(format!(
                        "host request {} arrives {} ns after the first (× host.time_scale = {}: \
                         {t:.3e} ns), beyond the simulated time range of 2^62 ns (146 years); \
                         check the trace's timestamps (unit, a corrupt line) or the time scale",
                        self.pulled, r.arrival_ns, self.scale
                    )));
                }
                if self.scale != 1.0 {
                    r.arrival_ns = t.round() as u64;
                }
                Ok(Some((r, src.tag())))
            }
            None => Ok(None),
        }
    }

    /// Read ahead up to [`LOOKAHEAD`] requests, calling `on_new` for each new one.
    #[inline]
    fn fill<S: RequestSource>(&mut self, src: &mut S, mut on_new: impl FnMut(&HostRequest)) {
        while self.ahead.len() < LOOKAHEAD && !self.exhausted {
            match self.pull(src) {
                Ok(Some(r)) => {
                    on_new(&r.0);
                    self.ahead.push_back(r);
                }
                Ok(None) => self.exhausted = true,
                Err(e) => {
                    self.err = Some(e);
                    self.exhausted = true;
                }
            }
        }
    }
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
    tag: CacheOp,
}

/// Read-modify-write reads of one host request: (LPN, the read's service ns) for its head and
/// tail page (`NONE` when unused). The page's service is its read's plus its program's (or
/// DRAM write's), so an RMW read counts as service, not as queue wait. Kept beside the host
/// slots (same index), only when `ftl.read_modify_write` is on: the slot itself stays small.
type RmwReads = [(u32, u64); 2];

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
    /// Dies, channels and the event queue.
    exec: Executor,
    now: u64,
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
    /// Arrival time of the next host request not yet arrived (open loop), ns.
    next_arrival_ns: Option<u64>,
    error: Option<NandlabError>,
    log: Option<Box<dyn Write>>,
    logical_pages: u64,
    /// Exclusive bounds of a valid placement (streams, modes, ECCs, regions; each ≤ 255 + 1
    /// by the config checks, so they fit the fields' types when one less).
    placement_limit: Placement,
    page_size: u64,
    pager: crate::hil::Pager,
    last_arrival_ns: u64,
    /// Preconditioning summary.
    pub precondition: PreconditionReport,
    /// Reliability model (`None`: fixed per-ECC latencies).
    pub read_model: Option<crate::reliability::runtime::ReadModel>,
    /// `reliability.model = "table6"`: per region, whether its cells are in the reduced state
    /// (no soft sensing); `None` otherwise.
    table6: Option<Vec<bool>>,
    /// Regions (`[regions]`); `None` without.
    rg: Option<RegionRuntime>,
    /// `ftl.read_modify_write`.
    /// FTL pages (mapping units) per flash page: `ftl.mapping_unit_bytes`, 1 without.
    units: u32,
    rmw_on: bool,
    /// Per host slot (same index as `slots`): its read-modify-write reads; empty when
    /// `rmw_on` is off.
    rmw: Vec<RmwReads>,
    /// `sched.multi_plane` on a device with more than one plane per die.
    mp_on: bool,
    /// `ftl.allocation = "superpage"`.
    sp_on: bool,
    /// `ftl.superpage_wait_us` in ns (0: never hold host writes).
    sp_wait_ns: u64,
    /// Per die: since when its queued host writes have waited for a full super-page
    /// (`u64::MAX`: no wait under way), and whether the expiry timer is set.
    sp_since: Vec<u64>,
    sp_armed: Vec<bool>,
    /// `timing.one_shot_program`: programs and GC moves run a word line at a time.
    os_on: bool,
    /// One-shot run scratch, one entry per plane of a die: pages taken, whether the plane
    /// can join, and its source senses (allocated once).
    os_taken: Vec<u8>,
    os_join: Vec<u8>,
    os_sense: Vec<u64>,
    /// Per plane of the die a run is staged on: the flash page (PPN ÷ units) its last sense
    /// read, so that the units of one page share one sense (`ftl.mapping_unit_bytes`);
    /// [`NONE`] = none yet.
    run_page: Vec<u32>,
    /// Multi-plane: dies whose dispatch waits until every page of the arriving request is
    /// queued (so its pages can pair).
    mp_dies: Vec<u32>,
    /// Multi-plane: the transactions of the run being completed.
    mp_done: Vec<crate::exec::Txn>,
    /// `sched.suspension`.
    susp_on: bool,
    /// Suspend latency of a program and of an erase, resume latency, ns; the cap.
    susp_ns: [u64; 3],
    susp_cap: u8,
    /// Suspend latency the next run staged on a die starts with (the read that suspended).
    susp_prefix_ns: u64,
    /// Controller DRAM data cache (`[dram]`); `None` without.
    dram: Option<Box<dram::Dram>>,
    /// Backend disk latency (`cache.disk_us`), ns; 0 without `[cache]`.
    disk_ns: u64,
    /// The scheme's idle threshold (open loop), ns.
    idle_threshold_ns: Option<u64>,
    /// [`Scheme::prefetches`]: call the scheme's prefetch hints beside the engine's own.
    scheme_prefetch: bool,
    /// Corrupted pages by LPN (`[faults]`); empty when off.
    faults: std::collections::BTreeMap<u32, Fault>,
    /// `[faults] mode = "model"`: page copies' errors come from the reliability model.
    model_faults: bool,
    /// Fault injection plan: (period P in pages, N injections, next injection index).
    fault_plan: Option<(u64, u64, u64)>,
    /// Scaled span of the replay faults are spread over, ns (see [`Engine::set_fault_span_ns`]).
    fault_span_ns: u64,
    /// LPNs faults are drawn from (cache slots).
    fault_pages: u64,
    /// Pending backend fetches: (LPN, expected PPN, reason 0 = refill / 1 = prefetch).
    fetches: Vec<(u32, u32, u8)>,
    fetch_free: Vec<u32>,
}
/// Refuse a device whose FTL tables would not fit in the memory this process may use
/// ([`crate::mem::budget_bytes`]: half of the machine's, within any address-space limit) with a
/// one-line error, before anything is allocated.
pub(crate) fn check_model_memory(
    cfg: &Config,
    geo: &crate::flash::Geometry,
    logical_pages: u64,
) -> Result<(), NandlabError> {
    // The FTL's tables, and the DRAM cache's per-LPN index when the cache is on.
    let dram = if cfg.dram.capacity_bytes >= geo.page_size_bytes as u64 {
        logical_pages * 4
    } else {
        0
    };
    let need = crate::ftl::Ftl::table_bytes(geo, logical_pages) + dram;
    crate::mem::check_budget(need).map_err(|why| {
        NandlabError::Config(crate::config::ConfigError::Invalid {
            key: "device".into(),
            value: format!(
                "{} logical, {} physical",
                crate::config::human_bytes(logical_pages * geo.page_size_bytes as u64),
                crate::config::human_bytes(geo.pages() * geo.page_size_bytes as u64)
            ),
            msg: format!(
                "{why}; model a smaller device (device.logical_capacity_bytes, with \
                 ftl.wrap_offsets = true to fold a large address space onto it; \
                 device.address_map = \"compact\" for a trace that touches little of its span) \
                 or larger pages (device.page_size_bytes)"
            ),
        })
    })
}

/// The error for a device table that cannot be allocated: its size and the ways to a smaller
/// model.
fn table_error(
    e: crate::mem::AllocError,
    geo: &crate::flash::Geometry,
    logical_pages: u64,
) -> NandlabError {
    NandlabError::Sim(format!(
        "{e}, for a device of {} logical / {} physical; model a smaller device \
         (device.logical_capacity_bytes, with ftl.wrap_offsets = true to fold a large address \
         space onto it; device.address_map = \"compact\" for a trace that touches little of \
         its span) or larger pages (device.page_size_bytes)",
        crate::config::human_bytes(logical_pages * geo.page_size_bytes as u64),
        crate::config::human_bytes(geo.physical_bytes()),
    ))
}

impl Engine {
    /// Build an engine for a sized device. `logical_pages` is the host-visible capacity.
    pub fn new(
        cfg: Config,
        geo: crate::flash::Geometry,
        logical_pages: u64,
        scheme: Box<dyn Scheme>,
    ) -> Result<Engine, NandlabError> {
        if cfg.osd.is_some() {
            return Err(crate::config::ConfigError::Invalid {
                key: "osd".into(),
                value: "[osd]".into(),
                msg: "this config describes an object-based device: replay object commands \
                      with `nandlab osd` (osd::run), or drop the [osd] section for a block trace"
                    .into(),
            }
            .into());
        }
        check_model_memory(&cfg, &geo, logical_pages)?;
        let timing = cfg.timing()?;
        let layout = cfg.layout();
        let read_model = crate::reliability::runtime::ReadModel::new(&cfg, &timing)?;
        let mut ftl = Ftl::try_with_regions(
            geo.clone(),
            logical_pages,
            cfg.ftl.streams,
            cfg.ftl.allocation,
            cfg.ftl.gc_victim,
            cfg.ftl.gc_threshold_pct,
            &cfg.regions.blocks_per_plane(geo.blocks_per_plane),
        )
        .map_err(|e| table_error(e, &geo, logical_pages))?;
        ftl.set_wear_stages(&cfg.regions.stage_pe);
        ftl.set_layout(layout.clone());
        ftl.set_region_pages(
            &cfg.regions
                .pages_per_block(geo.pages_per_block, geo.cell.bits()),
        );
        let units = cfg.map_units();
        if cfg.ftl.allocation == Allocation::Superpage {
            // A super-page holds a word line of every plane with one-shot programming, each
            // page as its mapping units.
            ftl.set_superpage_unit(
                if cfg.timing.one_shot_program {
                    geo.cell.bits() as u32
                } else {
                    1
                } * units,
            );
            ftl.set_map_units(units);
        }
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
            cache: crate::stats::CachePathStats {
                host_reads_by_ecc: vec![0; timing.eccs.len()],
                gc_moves_by_ecc: vec![0; timing.eccs.len() * timing.eccs.len()],
                ..Default::default()
            },
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
        scheme.validate_device(&crate::scheme::DeviceInfo::new(&cfg, &timing))?;
        let hidden = scheme.hidden_pages(&geo, logical_pages)?;
        if hidden > 0 {
            if logical_pages + hidden >= u32::MAX as u64 {
                return Err(NandlabError::Sim(format!(
                    "scheme `{}` needs {hidden} hidden pages above the {logical_pages} logical \
                     pages: more than 2^32 LPNs; use a smaller device.logical_capacity_bytes",
                    scheme.name()
                )));
            }
            ftl.extend_hidden(hidden)
                .map_err(|e| table_error(e, &geo, logical_pages))?;
        }
        let dram = if cfg.dram.capacity_bytes >= geo.page_size_bytes as u64 {
            let entries = (cfg.dram.capacity_bytes / geo.page_size_bytes as u64)
                .min(logical_pages)
                .min(u32::MAX as u64 >> 2) as u32;
            Some(Box::new(
                dram::Dram::new(
                    entries,
                    logical_pages,
                    (cfg.dram.access_us * 1000.0).round() as u64,
                )
                .map_err(|e| table_error(e, &geo, logical_pages))?,
            ))
        } else {
            None
        };
        let mut e = Engine {
            placement_limit: Placement {
                stream: cfg.ftl.streams.min(255) as u8,
                mode: timing.modes.len().min(255) as u8,
                ecc: timing.eccs.len().min(255) as u8,
                region: ftl.regions().min(255) as u8,
                page_type: None,
            },
            page_size: geo.page_size_bytes as u64,
            pager: crate::hil::Pager::new(geo.page_size_bytes as u64),
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
            exec: Executor::new(
                dies,
                geo.channels,
                if cfg.sched.multi_plane {
                    geo.planes_per_die
                } else {
                    1
                } * if cfg.timing.one_shot_program {
                    geo.cell.bits() as u32
                } else {
                    1
                } * units,
            ),
            now: 0,
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
            next_arrival_ns: None,
            error: None,
            log,
            logical_pages,
            last_arrival_ns: 0,
            precondition: PreconditionReport::default(),
            read_model,
            table6: (cfg.reliability.model == crate::config::ReliabilityModel::Table6).then(|| {
                (0..cfg.regions.count())
                    .map(|r| cfg.regions.reduced(r, geo.cell.bits()))
                    .collect()
            }),
            rg,
            units,
            rmw_on: cfg.ftl.read_modify_write,
            rmw: Vec::new(),
            mp_on: cfg.sched.multi_plane && geo.planes_per_die > 1,
            sp_on: cfg.ftl.allocation == Allocation::Superpage,
            sp_wait_ns: (cfg.ftl.superpage_wait_us * 1000.0).round() as u64,
            sp_since: vec![u64::MAX; dies as usize],
            sp_armed: vec![false; dies as usize],
            os_on: cfg.timing.one_shot_program,
            os_taken: vec![0; geo.planes_per_die as usize],
            os_join: vec![0; geo.planes_per_die as usize],
            os_sense: vec![0; geo.planes_per_die as usize],
            run_page: vec![NONE; geo.planes_per_die as usize],
            mp_dies: Vec::with_capacity(64),
            mp_done: Vec::with_capacity(geo.planes_per_die as usize * geo.cell.bits()),
            susp_on: cfg.sched.suspension,
            susp_ns: [
                (cfg.sched.suspend_program_us * 1000.0).round() as u64,
                (cfg.sched.suspend_erase_us * 1000.0).round() as u64,
                (cfg.sched.resume_us * 1000.0).round() as u64,
            ],
            susp_cap: cfg.sched.max_suspends_per_op.min(255) as u8,
            susp_prefix_ns: 0,
            dram,
            disk_ns: cfg.cache.as_ref().map_or(0, |c| c.disk_ns()),
            idle_threshold_ns: None,
            scheme_prefetch: false,
            faults: std::collections::BTreeMap::new(),
            model_faults: cfg.faults.mode == FaultMode::Model,
            fault_plan: None,
            fault_span_ns: 0,
            fault_pages: logical_pages,
            fetches: Vec::new(),
            fetch_free: Vec::new(),
            cfg,
        };
        e.idle_threshold_ns = e.scheme.idle_threshold_ns();
        // The replay loop takes an arrival at time t before every event at t (`run`), as
        // booking transfers ahead needs: same timing, one event fewer per read that no other
        // die's transfer overtakes.
        e.exec.set_book_ahead(true);
        e.scheme_prefetch = e.scheme.prefetches();
        if e.cfg.faults.mode == FaultMode::EveryNthBit {
            let p = e.cfg.faults.period_pages(e.page_size);
            e.fault_plan = Some((p, logical_pages / p, 0));
        }
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

    /// Set a timer (host completion, scheme tick, refresh scan) at `t`.
    #[inline]
    fn push(&mut self, t: u64, payload: u64) {
        self.exec.events.push_timer(t, payload);
    }

    #[inline]
    fn fail(&mut self, msg: String) {
        if self.error.is_none() {
            self.error = Some(NandlabError::Sim(msg));
        }
    }

    // ----- replay loop -----------------------------------------------------------------

    /// Replay every request of `src`. `total_hint` (0 = unknown) feeds
    /// `progress(Stage::Replay, done, total)`,
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
        let mut next_progress = PROGRESS_EVERY;
        if let Some(p) = self.tick_period_ns() {
            self.push(p, EV_TICK);
        }
        if self.rf_on {
            self.push(self.now, EV_REFRESH);
        }
        self.schedule_fault();
        let mut feed = Feed {
            pulled: 0,
            max,
            scale: self.cfg.host.time_scale,
            ahead: std::collections::VecDeque::with_capacity(LOOKAHEAD),
            err: None,
            exhausted: false,
        };
        match self.cfg.host.mode {
            ReplayMode::Open => {
                feed.fill(src, |r| self.prefetch_request(r));
                // The error of a request read ahead, once the requests before it have arrived
                // (a tuple pattern would take it, and drop it, while they are still ahead).
                if feed.ahead.is_empty() {
                    if let Some(e) = feed.err.take() {
                        return Err(e);
                    }
                }
                let mut next = feed.ahead.front().copied();
                let idle = self.idle_threshold_ns;
                self.next_arrival_ns = next.map(|(r, _)| r.arrival_ns);
                loop {
                    if let Some(e) = self.error.take() {
                        return Err(e);
                    }
                    if self.completed >= next_progress {
                        progress(crate::error::Stage::Replay, self.completed, total_hint);
                        next_progress += PROGRESS_EVERY;
                    }
                    let ev_t = self.exec.events.next_time();
                    let room = self.in_flight < self.cfg.host.max_outstanding as u64;
                    match (next, ev_t) {
                        (Some((r, tag)), t)
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
                            self.on_arrival(r, tag)?;
                            feed.ahead.pop_front();
                            if feed.ahead.is_empty() {
                                if let Some(e) = feed.err.take() {
                                    return Err(e);
                                }
                            }
                            feed.fill(src, |r| self.prefetch_request(r));
                            next = feed.ahead.front().copied();
                            self.next_arrival_ns = next.map(|(r, _)| r.arrival_ns);
                            match &next {
                                Some((r, _)) => {
                                    self.prefetch_pages(r);
                                    if let Some(th) = idle {
                                        let gap = r.arrival_ns.saturating_sub(self.now);
                                        if gap > th {
                                            self.idle(gap);
                                        }
                                    }
                                }
                                None => self.input_ended(),
                            }
                        }
                        (_, Some(_)) => {
                            if let Some((t, ev)) = self.exec.events.pop() {
                                self.now = t;
                                self.handle(ev);
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
                        progress(crate::error::Stage::Replay, self.completed, total_hint);
                        next_progress += PROGRESS_EVERY;
                    }
                    while self.to_issue > 0 && !self.input_done {
                        match feed.pull(src)? {
                            Some((mut r, tag)) => {
                                self.to_issue -= 1;
                                r.arrival_ns = self.now;
                                self.on_arrival(r, tag)?;
                            }
                            None => self.input_ended(),
                        }
                    }
                    match self.exec.events.pop() {
                        Some((t, ev)) => {
                            self.now = t;
                            self.handle(ev);
                        }
                        None => break,
                    }
                }
            }
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        progress(crate::error::Stage::Replay, self.completed, total_hint);
        if self.sched.queued() > 0 || self.in_flight > 0 || self.exec.any_busy() {
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
        self.stats.die_busy_ns.clone_from(&self.exec.die_busy_ns);
        self.stats
            .channel_busy_ns
            .clone_from(&self.exec.channel_busy_ns);
        if let Some(w) = self.log.as_mut() {
            w.flush()
                .map_err(|err| NandlabError::Sim(format!("stats.request_log: {err}")))?;
        }
        self.log = None;
        Ok(())
    }

    fn handle(&mut self, ev: Event) {
        self.stats.events += 1;
        let payload = match ev {
            Event::Die(die) => {
                if let Some(done) = self.exec.advance(die, self.now) {
                    self.complete(die, done);
                    self.exec.settle(die);
                }
                return;
            }
            Event::Timer(p) => p,
        };
        let id = (payload & ID_MASK) as u32;
        match payload & !ID_MASK {
            EV_HOST => self.finish_host(id),
            EV_BACKEND => self.fetch_returned(id),
            EV_FAULT => self.inject_fault(),
            EV_DISK_READ => {
                let d = self.disk_ns;
                self.host_page_done(id, self.now, d);
            }
            EV_SP_HOLD => {
                self.sp_armed[id as usize] = false;
                self.dispatch(id);
            }
            EV_TICK => {
                self.actions.clear();
                let ctx = Ctx {
                    now_ns: self.now,
                    ftl: &self.ftl,
                    timing: &self.timing,
                };
                // On an idle device, the ticks before the next arrival in one call (issue 20:
                // a year between two requests was 525,600 tick events at a 60 s period).
                let p = self.tick_period_ns().unwrap_or(u64::MAX);
                let idle = self.exec.events.is_empty() && self.in_flight == 0;
                let ahead = match self.next_arrival_ns {
                    Some(t) if idle && t > self.now => (t - self.now).div_ceil(p),
                    _ => 1,
                };
                let mut ticks = 1;
                if ahead >= 2 {
                    ticks = self.scheme.on_idle_ticks(ahead, &ctx);
                }
                if ticks < 2 {
                    ticks = 1;
                    self.scheme.on_tick(&ctx, &mut self.actions);
                    self.run_actions(NONE);
                }
                let busy = !self.exec.events.is_empty() || self.in_flight > 0;
                if self.tick_period_ns().is_some() && (busy || !self.input_done) {
                    self.push(self.now + ticks * p, EV_TICK);
                }
            }
            EV_REFRESH => {
                for plane in 0..self.ftl.geo.planes() {
                    self.maybe_refresh(plane);
                }
                // Scan while the host is active: refresh started after the last host request
                // would never end on a device that is always refreshing.
                // An empty heap with requests in flight is a stall: stop so `run` reports it.
                if !self.input_done || (self.in_flight > 0 && !self.exec.events.is_empty()) {
                    let dt = self.refresh_check_ns().max(1);
                    // On an idle device, skip the scans that cannot find anything: those
                    // before both the next arrival and the first block due (issue 20: a year
                    // of idle time was 36,500 scans of every block at a 1-day period). The
                    // scan grid stays the same.
                    let mut k = 1;
                    let idle = self.exec.events.is_empty()
                        && self.in_flight == 0
                        && self.rf_block.iter().all(|&b| b == NONE)
                        && !self.rf_deferred.iter().any(|&d| d);
                    if let (true, Some(arrival)) = (idle, self.next_arrival_ns) {
                        let next = self
                            .refresh_next_due_ns()
                            .map_or(arrival, |due| due.min(arrival));
                        if next > self.now {
                            k = (next - self.now).div_ceil(dt).max(1);
                        }
                    }
                    self.push(self.now + k * dt, EV_REFRESH);
                }
            }
            _ => self.fail(format!("internal error: unknown event {payload:#x}")),
        }
    }

    // ----- host side -----------------------------------------------------------------

    /// Prefetch the per-page state a read that arrives next will touch on dispatch (its L2P
    /// entries were prefetched when it was read ahead).
    #[inline(always)]
    fn prefetch_pages(&self, r: &HostRequest) {
        let read = r.op == Op::Read;
        if !read && !self.scheme_prefetch {
            return;
        }
        let first = r.offset_bytes / self.page_size;
        let last = (r.offset_bytes + r.len_bytes.max(1) - 1) / self.page_size;
        for lpn in first..=last.min(first + 15) {
            let lpn = (lpn % self.logical_pages) as u32;
            if read {
                self.ftl.prefetch_mapped(lpn);
            }
            if self.scheme_prefetch {
                self.scheme.prefetch_mapped(lpn, read, &self.ftl);
            }
        }
    }

    /// The host's requests have all arrived: no die holds its writes for a fuller super-page
    /// any more.
    fn input_ended(&mut self) {
        self.input_done = true;
        if self.sp_on && self.sp_wait_ns > 0 {
            for d in 0..self.exec.dies() {
                self.dispatch(d);
            }
        }
    }

    /// Superpage allocation: whether `die` holds its queued host writes now — fewer than the
    /// super-page's free slots are queued, they have waited less than `ftl.superpage_wait_us`,
    /// and more may come — so that they fill a super-page instead of a padded one (firmware
    /// keeps them in its write buffer). Sets the expiry timer of a new wait.
    fn superpage_hold(&mut self, die: u32) -> bool {
        let d = die as usize;
        let q = self.sched.writes_queued(die);
        if q == 0 {
            self.sp_since[d] = u64::MAX;
            return false;
        }
        if self.input_done {
            return false;
        }
        if self.sp_since[d] == u64::MAX {
            self.sp_since[d] = self.now;
        }
        let pool = self.ftl.pool(die * self.ftl.geo.planes_per_die, 0);
        let room = self.ftl.superpage_room(pool, 0, false) as usize;
        let deadline = self.sp_since[d].saturating_add(self.sp_wait_ns);
        if q >= room || self.now >= deadline {
            return false;
        }
        if !self.sp_armed[d] {
            self.sp_armed[d] = true;
            self.stats.device.superpage_holds += 1;
            self.push(deadline, EV_SP_HOLD | die as u64);
        }
        true
    }

    /// Prefetch the L2P entries of a request read ahead (its reads look them up on arrival,
    /// its writes when they are dispatched).
    #[inline]
    fn prefetch_request(&self, r: &HostRequest) {
        let first = r.offset_bytes / self.page_size;
        let last = (r.offset_bytes + r.len_bytes.max(1) - 1) / self.page_size;
        // One prefetch per 64-byte line of 16 entries.
        let mut lpn = first;
        while lpn <= last {
            let l = (lpn % self.logical_pages) as u32;
            self.ftl.prefetch_lpn(l);
            if self.scheme_prefetch {
                self.scheme.prefetch_lpn(l);
            }
            lpn = (lpn | 15) + 1;
        }
    }

    fn on_arrival(&mut self, r: HostRequest, tag: CacheOp) -> Result<(), NandlabError> {
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
        if tag != CacheOp::None && r.op != tag.op() {
            // The latency classes are merged from the tags by the tag's operation.
            return Err(NandlabError::Sim(format!(
                "internal error: a {:?} request tagged {} (a {:?} tag)",
                r.op,
                tag.name(),
                tag.op()
            )));
        }
        if r.op == Op::Trim {
            self.trim(offset, r.len_bytes);
            return Ok(());
        }
        let span = self.pager.span(offset, r.len_bytes);
        let slot = self.alloc_slot(HostSlot {
            arrival_ns: r.arrival_ns.min(self.now),
            offset_bytes: r.offset_bytes,
            len_bytes: r.len_bytes,
            op: r.op,
            pending: 0,
            done_ns: self.now,
            service_ns: 0,
            tag,
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
            Op::Trim => {}
        }
        self.actions.clear();
        let first = (span.first_lpn % self.logical_pages) as u32;
        if tag != CacheOp::None {
            self.scheme.on_cache_op(tag, first, span.pages as u32);
        }
        self.scheme.on_host_request(r.op, first, span.pages as u32);
        let ctx = Ctx {
            now_ns: self.now,
            ftl: &self.ftl,
            timing: &self.timing,
        };
        self.scheme
            .on_request(r.op, first, span.pages as u32, &ctx, &mut self.actions);
        // Read-modify-write: the first and last pages of a write may be partial.
        let head_partial = !offset.is_multiple_of(self.page_size);
        let tail_partial = !(offset + r.len_bytes).is_multiple_of(self.page_size);
        // LPNs from `first`, wrapping at the logical capacity.
        let mut next_lpn = first;
        for k in 0..span.pages {
            let lpn = next_lpn;
            next_lpn += 1;
            if next_lpn as u64 == self.logical_pages {
                next_lpn = 0;
            }
            match r.op {
                Op::Read => {
                    if let Some(d) = self.dram.as_mut() {
                        if d.read(lpn) {
                            let t = self.now + d.access_ns;
                            self.slot_done_at(slot, t);
                            continue;
                        }
                    }
                    let ppn = self.ftl.lookup(lpn);
                    if ppn == UNMAPPED {
                        self.stats.unmapped_read_pages += 1;
                        continue;
                    }
                    if !self.faults.is_empty() && self.known_corrupt_disk_read(lpn, ppn, slot) {
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
                    let die = self.sched.enqueue(
                        TxnKind::Read,
                        Source::Host,
                        lpn,
                        ppn,
                        plane,
                        slot,
                        Placement::NONE,
                    );
                    if self.mp_on {
                        self.mp_dies.push(die);
                    } else {
                        self.dispatch(die);
                    }
                }
                Op::Write => {
                    let ctx = Ctx {
                        now_ns: self.now,
                        ftl: &self.ftl,
                        timing: &self.timing,
                    };
                    self.scheme.on_host_write(lpn, &ctx);
                    if self.rmw_on
                        && ((k == 0 && head_partial) || (k + 1 == span.pages && tail_partial))
                        && !self.dram.as_ref().is_some_and(|d| d.cached(lpn))
                        && self.rmw_read(lpn, slot)
                    {
                        continue;
                    }
                    if self.dram.is_some() {
                        self.dram_write(lpn, slot, false);
                        continue;
                    }
                    let ctx = Ctx {
                        now_ns: self.now,
                        ftl: &self.ftl,
                        timing: &self.timing,
                    };
                    let pl = self.scheme.placement(lpn, Source::Host, &ctx);
                    if !self.placement_ok(pl) {
                        continue;
                    }
                    self.slots[slot as usize].pending += 1;
                    self.queue_host_program(lpn, slot, pl, NONE);
                }
                Op::Trim => {}
            }
        }
        // (Trims returned above.) Multi-plane: dispatch once every page is queued.
        if self.mp_on {
            while let Some(d) = self.mp_dies.pop() {
                self.dispatch(d);
            }
        }
        // Synchronous rewrites join the request before it can complete.
        self.run_actions(slot);
        if self.slots[slot as usize].pending == 0 {
            let done = self.slots[slot as usize].done_ns;
            if done > self.now {
                // Served from the DRAM cache: done after its access time.
                self.push(done, EV_HOST | slot as u64);
            } else {
                self.finish_host(slot);
            }
        }
        Ok(())
    }

    /// Queue the program of host page `lpn` of request `slot` (whose `pending` already counts
    /// it) and dispatch the die(s) that may take it, except `skip` (a die that dispatches
    /// itself next).
    #[inline]
    fn queue_host_program(&mut self, lpn: u32, slot: u32, pl: Placement, skip: u32) {
        let plane = match self.cfg.ftl.allocation {
            Allocation::Static | Allocation::Superpage => {
                self.ftl.plane_for_write_in(lpn, pl.region)
            }
            Allocation::Dynamic => NONE,
        };
        let die = self
            .sched
            .enqueue(TxnKind::Program, Source::Host, lpn, NONE, plane, slot, pl);
        if die == NONE {
            for d in 0..self.exec.dies() {
                if d != skip {
                    self.dispatch(d);
                }
            }
        } else if die != skip {
            if self.mp_on && skip == NONE {
                self.mp_dies.push(die);
            } else {
                self.dispatch(die);
            }
        }
    }

    /// Read-modify-write of a partial host write to page `lpn` of request `slot`: when the
    /// page is mapped, queue a host-priority read of it (its completion queues the program,
    /// [`Engine::rmw_program`]) and return `true`; an unmapped page has nothing to merge
    /// (`false`: program at once).
    fn rmw_read(&mut self, lpn: u32, slot: u32) -> bool {
        let ppn = self.ftl.lookup(lpn);
        if ppn == UNMAPPED {
            self.stats.device.rmw_unmapped += 1;
            return false;
        }
        self.stats.device.rmw_reads += 1;
        self.slots[slot as usize].pending += 1;
        let r = &mut self.rmw[slot as usize];
        let free = usize::from(r[0].0 != NONE);
        r[free] = (lpn, 0);
        let plane = self.ftl.plane_of_ppn(ppn);
        let die = self.sched.enqueue(
            TxnKind::Read,
            Source::Host,
            lpn,
            ppn,
            plane,
            slot,
            Placement::NONE,
        );
        self.dispatch(die);
        true
    }

    /// The read of a read-modify-write (on die `die`) ended and its data is decoded: program
    /// the merged page. The placement is asked now, when the data to program exists.
    fn rmw_program(&mut self, lpn: u32, slot: u32, die: u32) {
        let ctx = Ctx {
            now_ns: self.now,
            ftl: &self.ftl,
            timing: &self.timing,
        };
        if self.dram.is_some() {
            // The merged page enters the DRAM cache.
            self.dram_write(lpn, slot, true);
            return;
        }
        let pl = self.scheme.placement(lpn, Source::Host, &ctx);
        if !self.placement_ok(pl) {
            self.host_page_done(slot, self.now, 0);
            return;
        }
        self.queue_host_program(lpn, slot, pl, die);
    }

    /// A page of request `slot` is served at `t_ns` without a flash operation (a DRAM hit
    /// while the request is still being split: its `pending` is not involved).
    #[inline]
    fn slot_done_at(&mut self, slot: u32, t_ns: u64) {
        let s = &mut self.slots[slot as usize];
        s.done_ns = s.done_ns.max(t_ns);
        s.service_ns = s.service_ns.max(t_ns - self.now);
    }

    /// Host write of page `lpn` of request `slot` into the DRAM cache ([`dram`]); `counted`:
    /// the request's `pending` already counts the page (after an RMW read), else it is being
    /// split now.
    fn dram_write(&mut self, lpn: u32, slot: u32, counted: bool) {
        let d = self.dram.as_mut().expect("dram on");
        let access = d.access_ns;
        match d.write(lpn) {
            Some(e) => {
                if counted {
                    // `counted`: after an RMW read (RMW on).
                    let service = access + self.rmw_service(slot, lpn);
                    self.host_page_done(slot, self.now + access, service);
                } else {
                    self.slot_done_at(slot, self.now + access);
                }
                if e != NONE {
                    // While a request is split (not `counted`) its dies dispatch after it;
                    // after an RMW read (`counted`) every die is dispatched now (no die of
                    // that number exists to skip).
                    self.queue_flush(e, if counted { NONE - 1 } else { NONE });
                }
            }
            None => {
                d.backpressure_waits += 1;
                d.waiting.push_back((lpn, slot));
                if !counted {
                    self.slots[slot as usize].pending += 1;
                }
            }
        }
    }

    /// Queue the flash program of DRAM entry `e` (owner `FLUSH | e`); `skip` as in
    /// [`Engine::queue_host_program`].
    fn queue_flush(&mut self, e: u32, skip: u32) {
        let lpn = self.dram.as_ref().expect("dram on").lpn_of(e);
        let ctx = Ctx {
            now_ns: self.now,
            ftl: &self.ftl,
            timing: &self.timing,
        };
        let pl = self.scheme.placement(lpn, Source::Host, &ctx);
        if !self.placement_ok(pl) {
            return;
        }
        self.queue_host_program(lpn, dram::FLUSH | e, pl, skip);
    }

    /// The flush of DRAM entry `e` ended on die `die`: flush it again if it was rewritten,
    /// and give freed entries to writes waiting for one.
    pub(super) fn dram_flushed(&mut self, e: u32, die: u32) {
        let mut d = self.dram.as_mut().expect("dram on");
        if d.flushed(e) {
            self.queue_flush(e, die);
            return;
        }
        while let Some(&(lpn, slot)) = d.waiting.front() {
            let Some(x) = d.write(lpn) else {
                break;
            };
            d.waiting.pop_front();
            let access = d.access_ns;
            let service = access + self.rmw_service(slot, lpn);
            self.host_page_done(slot, self.now + access, service);
            if x != NONE {
                self.queue_flush(x, die);
            }
            d = self.dram.as_mut().expect("dram on");
        }
    }

    /// The service time of the read-modify-write read of page `lpn` of request `slot` (0 when
    /// the page had none, or RMW is off), to be added to the service of the page's program or
    /// DRAM write.
    #[inline]
    pub(super) fn rmw_service(&self, slot: u32, lpn: u32) -> u64 {
        if !self.rmw_on {
            return 0;
        }
        self.rmw[slot as usize]
            .iter()
            .find(|r| r.0 == lpn)
            .map_or(0, |r| r.1)
    }

    /// The read-modify-write read of page `lpn` of request `slot` took `service_ns`.
    #[inline]
    pub(super) fn rmw_read_done(&mut self, slot: u32, lpn: u32, service_ns: u64) {
        if let Some(r) = self.rmw[slot as usize].iter_mut().find(|r| r.0 == lpn) {
            r.1 = service_ns;
        }
    }

    /// Whether a host-sourced read of request `owner` is the read of a read-modify-write.
    #[inline]
    fn is_rmw_read(&self, owner: u32) -> bool {
        self.rmw_on && self.slots[owner as usize].op == Op::Write
    }

    /// A discard of `len_bytes` at `offset_bytes` (already wrapped): unmap every page it
    /// covers whole (a partial page keeps its data, as SSDs do); the invalidated pages are
    /// free space to GC. Takes no flash time and completes at once (not in the latency
    /// classes); counted in `sim.trim_*`. It applies to the mapping at its arrival: a write to
    /// the range still queued then lands after it (hosts order a discard after the writes it
    /// covers have completed).
    fn trim(&mut self, offset_bytes: u64, len_bytes: u64) {
        let ps = self.page_size;
        let first = offset_bytes.div_ceil(ps);
        let end = (offset_bytes + len_bytes) / ps;
        self.stats.device.trim_requests += 1;
        self.stats.device.trim_bytes += len_bytes;
        for lpn in first..end {
            let lpn = (lpn % self.logical_pages) as u32;
            if let Some(d) = self.dram.as_mut() {
                d.trim(lpn);
            }
            if self.ftl.trim(lpn) {
                self.stats.device.trimmed_pages += 1;
            }
        }
        if self.cfg.host.mode == ReplayMode::Closed {
            self.to_issue += 1;
        }
    }

    #[inline]
    fn placement_ok(&mut self, pl: Placement) -> bool {
        let l = self.placement_limit;
        if pl.stream < l.stream && pl.mode < l.mode && pl.ecc < l.ecc && pl.region < l.region {
            return true;
        }
        self.bad_placement(pl)
    }

    #[cold]
    fn bad_placement(&mut self, pl: Placement) -> bool {
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
        let i = match self.free_slots.pop() {
            Some(i) => {
                self.slots[i as usize] = s;
                i
            }
            None => {
                self.slots.push(s);
                if self.rmw_on {
                    self.rmw.push([(NONE, 0); 2]);
                }
                (self.slots.len() - 1) as u32
            }
        };
        if self.rmw_on {
            self.rmw[i as usize] = [(NONE, 0); 2];
        }
        i
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
        // Trims never hold a slot (`on_arrival` serves them at once). One record per request:
        // under its tag, or its class when untagged; report time merges (Stats::reads).
        self.stats
            .record_host(s.op != Op::Read, s.tag, response, wait, service);
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

    /// Queue the scheme's actions; a synchronous rewrite (`wait`) is tied to `owner` (a host
    /// request slot, or [`NONE`] outside a request: then it runs in the background).
    fn run_actions(&mut self, owner: u32) {
        let mut i = 0;
        while i < self.actions.len() {
            match self.actions[i] {
                Action::Rewrite { lpn, source, wait } => {
                    let ppn = self.ftl.lookup(lpn);
                    if ppn != UNMAPPED {
                        let owner = if wait { owner } else { NONE };
                        if owner != NONE {
                            self.slots[owner as usize].pending += 1;
                            self.stats.sync_rewrites += 1;
                        }
                        let plane = self.ftl.plane_of_ppn(ppn);
                        let die = self.sched.enqueue(
                            TxnKind::Read,
                            source,
                            lpn,
                            ppn,
                            plane,
                            owner,
                            Placement::NONE,
                        );
                        self.dispatch(die);
                    }
                }
                Action::Verify { first_lpn, count } => self.verify(first_lpn, count),
                Action::Fetch { lpn, expect_ppn } => self.queue_fetch(lpn, expect_ppn, 1, 0),
                Action::Program { lpn, wait } => {
                    if !self.hidden_ok(lpn) {
                        break;
                    }
                    let ctx = Ctx {
                        now_ns: self.now,
                        ftl: &self.ftl,
                        timing: &self.timing,
                    };
                    let pl = self.scheme.placement(lpn, Source::Migration, &ctx);
                    if self.placement_ok(pl) {
                        let owner = if wait { owner } else { NONE };
                        if owner != NONE {
                            self.slots[owner as usize].pending += 1;
                        }
                        let plane = self.ftl.plane_for_write_in(lpn, pl.region);
                        let die = self.sched.enqueue(
                            TxnKind::Program,
                            Source::Migration,
                            lpn,
                            NONE,
                            plane,
                            owner,
                            pl,
                        );
                        self.dispatch(die);
                    }
                }
                Action::Read { lpn, wait } => {
                    if !self.hidden_ok(lpn) {
                        break;
                    }
                    let ppn = self.ftl.lookup(lpn);
                    if ppn != UNMAPPED {
                        let owner = if wait { owner } else { NONE };
                        let source = if owner != NONE {
                            self.slots[owner as usize].pending += 1;
                            Source::Host
                        } else {
                            Source::Migration
                        };
                        let plane = self.ftl.plane_of_ppn(ppn);
                        let die = self.sched.enqueue(
                            TxnKind::Read,
                            source,
                            lpn,
                            ppn,
                            plane,
                            owner,
                            Placement::NONE,
                        );
                        self.dispatch(die);
                    }
                }
                Action::Unmap { lpn } => {
                    if !self.hidden_ok(lpn) {
                        break;
                    }
                    self.ftl.trim(lpn);
                }
            }
            i += 1;
        }
        self.actions.clear();
    }

    /// Whether `lpn` is a hidden page (at or above the logical capacity, inside the L2P); an
    /// internal error of the scheme otherwise.
    fn hidden_ok(&mut self, lpn: u32) -> bool {
        let total = self.ftl.lookup_len();
        if (lpn as u64) >= self.logical_pages && (lpn as usize) < total {
            return true;
        }
        let msg = format!(
            "internal error: scheme `{}` asked for hidden page {lpn} outside {} ..< {total}",
            self.scheme.name(),
            self.logical_pages
        );
        self.fail(msg);
        self.actions.clear();
        false
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
