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
//!   complete.rs: complete ─► host request done (response = last page done − arrival)
//!                         └► gc.rs (moves, erase) · refresh.rs · scheme rewrites
//! ```
//!
//! Files: this one (the engine's state and its construction), `replay.rs` (the replay loop:
//! arrivals against events, the timers, the end of the run), `host.rs` (a host request's arrival
//! split into transactions, and its completion), `actions.rs` (the scheme's actions), `dispatch.rs`
//! (what a transaction costs and does when it starts, and the FTL's answers to the scheduler),
//! `complete.rs` (what its end does), `gc.rs` (GC control), `refresh.rs` (data-refresh control),
//! `read_cost.rs` (the read-cost path: fixed latencies, region tables or the reliability model),
//! `regions.rs` (region tables and counters), `backend.rs` (cache-mode features: backend disk,
//! fetches, fault injection), `dram.rs` (the DRAM data cache), `precondition.rs` (untimed state
//! before the replay), `report.rs` (the JSON report).
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

/// The scheme's view of the engine ([`crate::scheme::Ctx`]) at the current time, or at
/// `now_ns` when given. A macro rather than a method, so that it borrows only the FTL and the
/// timing: the scheme beside them is borrowed mutably to take it.
macro_rules! scheme_ctx {
    ($engine:expr) => {
        scheme_ctx!($engine, $engine.now)
    };
    ($engine:expr, $now_ns:expr) => {
        crate::scheme::Ctx {
            now_ns: $now_ns,
            ftl: &$engine.ftl,
            timing: &$engine.timing,
        }
    };
}

mod actions;
mod backend;
mod complete;
mod dispatch;
mod dram;
pub mod flows;
mod gc;
mod host;
mod mapping;
mod precondition;
mod read_cost;
mod refresh;
mod regions;
mod replay;
mod report;

use std::io::Write;

use crate::config::{Allocation, Config};
use crate::error::NandlabError;
use crate::exec::Executor;
use crate::flash::{BlockLayout, Timing};
use crate::ftl::{Ftl, NONE};
use crate::host::cache::CacheOp;
use crate::reliability::faults::{Fault, FaultMode};
use crate::sched::Sched;
use crate::scheme::{Action, AdjustedPage, Placement, RefreshPlan, Scheme};
use crate::stats::Stats;
use crate::trace::Op;

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
/// A translation-page read of the cached mapping table is decoded (id = its load).
const EV_MAP: u64 = 9 << 32;
/// A host request's downstream link transfer ended: the device sees it (`[link]`).
const EV_LINK: u64 = 10 << 32;
const ID_MASK: u64 = (1 << 32) - 1;
/// The latest arrival a replay accepts, ns (2^62, 146 years): event times must stay far below
/// 2^64 (the event queue's empty marker) with every latency added.
pub const MAX_ARRIVAL_NS: u64 = 1 << 62;

/// The LPNs of a host request with their index in it: `pages` LPNs from `first`, wrapping
/// from the last logical page (`logical_pages` − 1) to 0. Shared by the host path
/// ([`Engine::issue_pages`]) and the cached mapping table's lookups and inserts; the same
/// counter, increment and compare per LPN as the loops it replaced.
#[derive(Clone, Copy, Debug)]
struct WrappingLpns {
    k: u64,
    pages: u64,
    next: u32,
    logical_pages: u64,
}

impl WrappingLpns {
    /// `pages` LPNs from `first`, wrapping at `logical_pages`.
    #[inline]
    fn new(first: u32, pages: u64, logical_pages: u64) -> WrappingLpns {
        WrappingLpns {
            k: 0,
            pages,
            next: first,
            logical_pages,
        }
    }
}

impl Iterator for WrappingLpns {
    /// (index in the request, LPN).
    type Item = (u64, u32);

    #[inline]
    fn next(&mut self) -> Option<(u64, u32)> {
        if self.k == self.pages {
            return None;
        }
        let k = self.k;
        self.k += 1;
        let lpn = self.next;
        self.next += 1;
        if self.next as u64 == self.logical_pages {
            self.next = 0;
        }
        Some((k, lpn))
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
    /// With a host link (`[link]`): the request's link transfer time so far, ns (service), and
    /// whether its completion has crossed the link (the second `finish_host` records it).
    link_ns: u32,
    link_done: bool,
    /// The flow the request came from (`[[host.flows]]`; 0 for a single trace).
    flow: u16,
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
    /// Cached mapping table (`ftl.mapping = "cached"`); `None` with the L2P in DRAM.
    map: Option<Box<mapping::MapRuntime>>,
    /// The host interface link (`[link]`; `None` without one).
    link: Option<Box<crate::host::link::Link>>,
    /// Concurrent flows (`[[host.flows]]`, `flows.rs`): per-flow statistics and outstanding
    /// requests; `None` for a single trace.
    flow_rt: Option<Box<flows::FlowRuntime>>,
    /// The flow of the request arriving now (0 for a single trace).
    arriving_flow: u16,
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
        let cached_map = cfg.ftl.mapping == crate::config::MappingTable::Cached;
        let mut ftl = Ftl::try_with_regions(
            geo.clone(),
            logical_pages,
            // A cached mapping table writes its translation pages on a stream of their own.
            cfg.ftl.streams + u32::from(cached_map),
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
        // Translation pages of a cached mapping table: hidden LPNs after the scheme's.
        let unit_bytes = geo.page_size_bytes as u64;
        let translation = if cached_map {
            logical_pages.div_ceil(unit_bytes / crate::ftl::cmt::TRANSLATION_ENTRY_BYTES)
        } else {
            0
        };
        if hidden + translation > 0 {
            if logical_pages + hidden + translation >= u32::MAX as u64 {
                return Err(NandlabError::Sim(format!(
                    "scheme `{}` needs {hidden} hidden pages and the mapping table \
                     {translation} translation pages above the {logical_pages} logical \
                     pages: more than 2^32 LPNs; use a smaller device.logical_capacity_bytes",
                    scheme.name()
                )));
            }
            ftl.extend_hidden(hidden + translation)
                .map_err(|e| table_error(e, &geo, logical_pages))?;
        }
        let map = if cached_map {
            let cmt = crate::ftl::cmt::Cmt::new(
                cfg.ftl.cmt_bytes,
                logical_pages,
                unit_bytes,
                (logical_pages + hidden) as u32,
            )
            .map_err(|e| table_error(e, &geo, logical_pages))?;
            Some(Box::new(mapping::MapRuntime::new(
                cmt,
                cfg.ftl.streams.min(255) as u8,
            )))
        } else {
            None
        };
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
            map,
            link: crate::host::link::Link::new(&cfg.link).map(Box::new),
            flow_rt: None,
            arriving_flow: 0,
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

    /// Check the FTL invariants (DESIGN §5).
    pub fn check_invariants(&self) -> Result<(), String> {
        self.ftl.check_invariants()
    }

    /// Arrival time of the last request replayed, ns.
    pub fn last_arrival_ns(&self) -> u64 {
        self.last_arrival_ns
    }
}
