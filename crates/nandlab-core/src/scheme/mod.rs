//! Flash-management schemes: one trait, one file per scheme (DESIGN §6).
//!
//! A scheme never mutates FTL state. It answers questions (where does this page go, in which
//! program mode, with which ECC) and returns [`Action`]s that the engine executes through the
//! normal scheduled path, so every extra read, rewrite or migration costs simulated time and
//! shows in the statistics.
//!
//! # Which scheme needs which hook
//!
//! | hook | called | used by |
//! |---|---|---|
//! | [`Scheme::placement`] | every page program: host write, GC move, rewrite | all: `baseline` (one mode, one ECC), `diffecc_wa` (mode + ECC from the read/write class), `agcr`/`tos18` (mode from access history), `efm`/`warm`/`hotis` (region stream), `flexlevel` (level configuration), `dpa` |
//! | [`Scheme::on_host_read`] | each page of a host read, after its PPN is known | `diffecc_wa` (rewrite hot LDPC pages as BCH), `efm` (migration checker), `flexlevel` (AccessEval), `agcr` (history) |
//! | [`Scheme::on_host_request`] | once per host request, before its pages | `diffecc_wa` (round-robin Bloom-filter pair, decay every 512 requests) |
//! | [`Scheme::on_host_write`] | each page of a host write, before placement | `diffecc_wa` (Bloom filters), `agcr`, `efm` (Read/Write_TBL, MRO), `hotis` |
//! | [`Scheme::on_tick`] | every [`Scheme::tick_period_ns`] of simulated time | `efm` (×0.2 decay every T, wear stages), `diffecc_wa` (filter decay is per request, not per tick), `flexlevel` |
//! | [`Scheme::on_cache_op`] | once per cache-layer request, before its pages (`[cache]`) | `flexecc` (DirtyWrite → BCH, CleanWrite → CRC, FlushRead marks) |
//! | [`Scheme::on_idle`] | open loop: after an arrival whose gap to the next exceeds [`Scheme::idle_threshold_ns`] | `flexecc` scrubber, `dpa` (delayed redundant-page writes) |
//! | [`Scheme::hidden_pages`] / [`Scheme::take_untimed`] | once before preconditioning / after each untimed host write | `dpa` (redundant tag and parity pages above the logical capacity) |
//! | [`Scheme::plan_refresh`] | per block due for data refresh (`[refresh] period_s`) | `ida` (voltage-adjust word lines), `warm`; default: move every valid page |
//! | [`Scheme::prefetch_lpn`] / [`Scheme::prefetch_mapped`] | a request read ahead / the request that arrives next, when [`Scheme::prefetches`] (hints only: nothing computed changes) | `dpa` (its per-LPN redundant-page map and the redundant page's record) |
//! | [`Scheme::gc_move`] | every valid page GC relocates | `flexecc` (flushed BCH → CRC), `efm` (keep region) |
//!
//! Schemes are picked by name from the config (`[scheme] name = "..."`, parameters under
//! `[scheme.params]`) through [`registry`].

pub mod agcr;
pub mod baseline;
pub mod diffecc_wa;
pub mod dpa;
pub mod efm;
pub mod flexecc;
pub mod flexlevel;
pub mod hotis;
pub mod ida;
pub mod migration;
pub mod params;
pub mod separator;
#[cfg(test)]
pub(crate) mod testutil;
pub mod warm;

use crate::config::ConfigError;
use crate::flash::{BlockLayout, PageType, Timing};
use crate::ftl::{Ftl, PageState};

/// Why a page is being programmed or read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Source {
    /// Host request.
    Host = 0,
    /// Garbage collection relocation.
    Gc = 1,
    /// Periodic data refresh.
    Refresh = 2,
    /// Scheme-requested migration or rewrite.
    Migration = 3,
    /// Idle-time scrubbing.
    Scrub = 4,
    /// Translation pages of a cached mapping table (`ftl.mapping = "cached"`, DFTL): their
    /// reads on a CMT miss or before a write-back, and their programs. The engine places
    /// them; a scheme is never asked.
    Mapping = 5,
}

impl Source {
    /// All sources, in report order.
    pub const ALL: [Source; 6] = [
        Source::Host,
        Source::Gc,
        Source::Refresh,
        Source::Migration,
        Source::Scrub,
        Source::Mapping,
    ];
    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Source::Host => "host",
            Source::Gc => "gc",
            Source::Refresh => "refresh",
            Source::Migration => "migration",
            Source::Scrub => "scrub",
            Source::Mapping => "mapping",
        }
    }
}

/// Where and how a page is programmed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Write stream (open block per plane) id, `< ftl.streams`.
    pub stream: u8,
    /// Program mode id (index into `Timing::modes`).
    pub mode: u8,
    /// ECC id (index into `Timing::eccs`).
    pub ecc: u8,
    /// Region (block pool) id, `< ftl.regions()`; 0 without `[regions]`. With regions the page
    /// is programmed in its region's program mode (`mode` is then ignored), and a GC move
    /// stays in its victim's region whatever the scheme asks.
    pub region: u8,
    /// Preferred page type in the open block ([`crate::ftl::Ftl::allocate_typed`]): the page
    /// lands on the block's next free page of that type when one is left; `None` fills the
    /// block in page order.
    pub page_type: Option<PageType>,
}

impl Placement {
    /// Stream 0, mode 0, ECC 0, region 0: the placeholder of transactions that program nothing
    /// (reads, erases).
    pub const NONE: Placement = Placement {
        stream: 0,
        mode: 0,
        ecc: 0,
        region: 0,
        page_type: None,
    };

    /// Mode 0, ECC 0, no page-type preference: the next page of `stream`'s open block in
    /// `region` (the placement of schemes that only choose where data goes).
    pub const fn in_region(stream: u8, region: u8) -> Placement {
        Placement {
            stream,
            region,
            ..Placement::NONE
        }
    }

    /// Mode 0, region 0, no page-type preference: the next page of `stream`'s open block,
    /// protected by `ecc` (the placement of schemes that only choose the code).
    pub const fn with_ecc(stream: u8, ecc: u8) -> Placement {
        Placement {
            stream,
            ecc,
            ..Placement::NONE
        }
    }
}

/// Background work a scheme asks for. Executed through the scheduler like GC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Read the current copy of `lpn` and program it again (placement asked with `source`).
    Rewrite {
        /// Logical page.
        lpn: u32,
        /// Source recorded for the read and the program.
        source: Source,
        /// Synchronous: when the action comes from a host request's hook (`on_host_read`,
        /// `on_request`), that request completes only after the rewrite's program does, so
        /// the rewrite's time is in its response. `false`: background work.
        wait: bool,
    },
    /// Verify-only check of `count` logical pages from `first_lpn` (wrapping at the logical
    /// capacity): each corrupted page of a detect-only code among them becomes known corrupted
    /// and is reported back through [`Scheme::on_verify`]. No flash time is charged (FlexECC
    /// §3.4 as written: the scrubber's thresholds involve only the CRC check time). Never a
    /// rewrite: nothing is reprogrammed.
    Verify {
        /// First logical page.
        first_lpn: u32,
        /// Pages checked.
        count: u32,
    },
    /// Fetch `lpn` from the backend disk (`cache.disk_us`) and program it again as clean data
    /// (the scheme's placement is asked with [`Source::Scrub`] after
    /// [`Scheme::on_cache_op`] with `CleanWrite`). Dropped when, by then, the LPN was
    /// reprogrammed (its copy is neither `expect_ppn` nor still corrupted).
    Fetch {
        /// Logical page.
        lpn: u32,
        /// The copy the fetch replaces.
        expect_ppn: u32,
    },
    /// Program a scheme-owned *hidden* page `lpn` (an LPN at or above the logical capacity,
    /// in the range [`Scheme::hidden_pages`] reserved) without reading anything first: the
    /// data is already in the controller (DPA-DRM's redundant tag pages and RAID-5 parity).
    /// The placement is asked with [`Source::Migration`]; the program is counted under that
    /// source. `wait`: the host request whose hook returned the action completes only after
    /// the program (a forced flush); `false`: background (idle-time) work.
    Program {
        /// Hidden logical page.
        lpn: u32,
        /// Synchronous (see [`Action::Rewrite`]).
        wait: bool,
    },
    /// Read the current copy of hidden page `lpn` (nothing when it is unmapped). `wait`: the
    /// read is part of the host request whose hook returned it (host priority, counted as a
    /// host flash read; the request completes when both its own pages and this read are
    /// done); `false`: a background read (source [`Source::Migration`]). Never reprogrammed.
    Read {
        /// Hidden logical page.
        lpn: u32,
        /// Synchronous.
        wait: bool,
    },
    /// Unmap hidden page `lpn` (its copy becomes invalid, space GC reclaims); no flash time.
    Unmap {
        /// Hidden logical page.
        lpn: u32,
    },
}

/// A page left in place by a word-line voltage adjustment (IDA §III-B).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdjustedPage {
    /// The page.
    pub ppn: u32,
    /// Page type it reads as afterwards (fewer sensings).
    pub read_type: PageType,
    /// Found corrupted at the read-back (IDA Fig. 7b step 8): its error-free copy, kept from
    /// the refresh's first read, is written to a new block.
    pub corrupt: bool,
}

/// What a data refresh of one block does (filled by [`Scheme::plan_refresh`]). The engine owns
/// one plan and clears it before each call, so planning allocates nothing.
#[derive(Clone, Debug)]
pub struct RefreshPlan {
    /// Word-line view of a block (pages of each word line, by bit).
    pub layout: BlockLayout,
    /// Valid pages to relocate to a new block of the same plane.
    pub moves: Vec<u32>,
    /// One page (any) of each word line voltage-adjusted in place; each costs one MSB program
    /// time on the die (IDA §III-B: "we conservatively set the voltage adjustment latency to
    /// the MSB write latency").
    pub adjust_wls: Vec<u32>,
    /// Valid pages left in place by the adjustments, with their new read type.
    pub adjusted: Vec<AdjustedPage>,
    /// Random stream of refresh planning, derived from the run's seed.
    pub rng: rand_xoshiro::Xoshiro256PlusPlus,
}

impl RefreshPlan {
    /// An empty plan for blocks of `layout`; `rng` from the run's seed.
    pub fn new(layout: BlockLayout, rng: rand_xoshiro::Xoshiro256PlusPlus) -> RefreshPlan {
        let ppb = layout.page_type.len();
        RefreshPlan {
            moves: Vec::with_capacity(ppb),
            adjust_wls: Vec::with_capacity(layout.word_lines()),
            adjusted: Vec::with_capacity(ppb),
            layout,
            rng,
        }
    }
    /// Forget the previous block's plan.
    pub fn clear(&mut self) {
        self.moves.clear();
        self.adjust_wls.clear();
        self.adjusted.clear();
    }
    /// The baseline refresh: move every valid page of `block`.
    pub fn move_all_valid(&mut self, ftl: &Ftl, block: u32) {
        ftl.valid_pages(block, &mut self.moves);
    }
    /// Valid flags of word line `w` of `block`, by bit (LSB first).
    pub fn wl_valid(&self, ftl: &Ftl, block: u32, w: usize) -> [bool; 4] {
        let base = block * ftl.geo.pages_per_block;
        let mut v = [false; 4];
        for (b, &p) in self.layout.wl(w).iter().enumerate() {
            v[b] = ftl.page_state(base + p) == PageState::Valid;
        }
        v
    }
}

/// The regions a scheme can place data in and their latencies (EFM §IV; `[regions]`), handed to
/// [`Scheme::set_regions`] once before preconditioning. Without `[regions]` there is one region
/// with the device's page-type-0 read and mode-0 program latencies.
#[derive(Clone, Debug, PartialEq)]
pub struct RegionInfo {
    /// Number of regions (index 0 = EFM's Region-1).
    pub n: usize,
    /// Number of wear stages.
    pub stages: usize,
    /// Read latency of region r at stage s, ns (`read_ns[r · stages + s]`); from
    /// `regions.read_us` (zeros when the reliability model gives read latencies and no table
    /// is configured).
    pub read_ns: Vec<u64>,
    /// Program latency of each region's program mode (LSB page), ns.
    pub program_ns: Vec<u64>,
    /// Whether regions are configured (`false`: the single implicit region).
    pub configured: bool,
}

impl RegionInfo {
    /// Read latency of region `r` at stage `s`, ns.
    #[inline]
    pub fn read(&self, r: usize, s: usize) -> u64 {
        self.read_ns[r * self.stages + s.min(self.stages - 1)]
    }
    /// The middle region ((n − 1) / 2: EFM's Region-2 of three).
    #[inline]
    pub fn middle(&self) -> u8 {
        ((self.n - 1) / 2) as u8
    }
    /// A single region with the given latencies.
    pub fn single(read_ns: u64, program_ns: u64) -> RegionInfo {
        RegionInfo {
            n: 1,
            stages: 1,
            read_ns: vec![read_ns],
            program_ns: vec![program_ns],
            configured: false,
        }
    }
}

/// What a scheme may need of the device beyond its regions, handed to
/// [`Scheme::validate_device`] once before preconditioning (issue 13, item 7: a scheme whose
/// needs the configuration does not meet is an error, never a silent baseline run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Program modes (`1 + [[timing.program_modes]]`).
    pub modes: usize,
    /// ECC kinds (`[[timing.ecc]]`, at least 1).
    pub eccs: usize,
    /// Bits per cell of the device's cell type (`device.cell`: 1 SLC … 4 QLC).
    pub bits_per_cell: usize,
    /// Configured regions (`[regions]`; 0 without).
    pub regions: usize,
    /// Data refresh runs during the replay (`refresh.period_s > 0`) or once before it
    /// (`precondition.refresh_before_replay`).
    pub refresh: bool,
    /// Closed-loop replay (`host.mode = "closed"`): no idle time between requests.
    pub closed_loop: bool,
    /// The controller DRAM data cache is on (`dram.capacity_bytes > 0`).
    pub dram: bool,
    /// Static (CWDP) allocation: the plane of a host write is a function of its LPN.
    pub static_allocation: bool,
    /// Dies in the device.
    pub dies: u32,
    /// Open blocks per plane (`ftl.streams`).
    pub streams: u32,
    /// Discards are applied (`ftl.trim`).
    pub trim: bool,
}

impl DeviceInfo {
    /// The device of configuration `cfg` with timing `timing`.
    pub fn new(cfg: &crate::config::Config, timing: &Timing) -> DeviceInfo {
        DeviceInfo {
            modes: timing.modes.len(),
            eccs: timing.eccs.len(),
            bits_per_cell: cfg.device.cell.bits(),
            regions: if cfg.regions.is_off() {
                0
            } else {
                cfg.regions.count()
            },
            refresh: !cfg.refresh.is_off() || cfg.precondition.refresh_before_replay,
            closed_loop: cfg.host.mode == crate::config::ReplayMode::Closed,
            dram: cfg.dram.capacity_bytes > 0,
            static_allocation: cfg.ftl.allocation == crate::config::Allocation::Static,
            dies: cfg.device.channels * cfg.device.chips_per_channel * cfg.device.dies_per_chip,
            streams: cfg.ftl.streams,
            trim: cfg.ftl.trim,
        }
    }

    /// The one-line error of scheme `scheme` whose need `need` the device does not meet;
    /// `preset` names the preset to use instead.
    pub fn mismatch(scheme: &str, need: &str, preset: &str) -> ConfigError {
        ConfigError::Invalid {
            key: "scheme.name".into(),
            value: format!("{scheme:?}"),
            msg: format!(
                "{scheme} needs {need}; this configuration would run it as the baseline. Use \
                 the preset `{preset}` (configs/{preset}.toml), or `-s baseline` on this one"
            ),
        }
    }

    /// Error unless the device has at least `n` regions (for region schemes: EFM, WARM,
    /// HotIS, TOS18), naming the `efm` preset.
    pub fn need_regions(&self, scheme: &str, n: usize) -> Result<(), ConfigError> {
        if self.regions >= n {
            return Ok(());
        }
        Err(DeviceInfo::mismatch(
            scheme,
            &format!(
                "a [regions] device with at least {n} regions (this one has {})",
                self.regions
            ),
            "efm",
        ))
    }
}

/// Region of preconditioned data for the `fill_region` parameter every region scheme takes:
/// negative = the middle region of `n`, else that region (clamped to `n − 1`).
#[inline]
pub fn fill_region(param: i64, n: usize) -> u8 {
    let n = n.max(1);
    if param < 0 {
        ((n - 1) / 2) as u8
    } else {
        (param as usize).min(n - 1) as u8
    }
}

/// Read-only view of the device a scheme decides from.
pub struct Ctx<'a> {
    /// Simulated time, ns.
    pub now_ns: u64,
    /// FTL state (page and block metadata).
    pub ftl: &'a Ftl,
    /// Operation latencies.
    pub timing: &'a Timing,
}

/// A flash-management policy. See the module documentation for the hook table.
pub trait Scheme: Send {
    /// Registry name.
    fn name(&self) -> &'static str;

    /// Placement of a page program of `lpn` for `source`.
    fn placement(&mut self, lpn: u32, source: Source, ctx: &Ctx<'_>) -> Placement;

    /// Whether the engine should call [`Scheme::prefetch_lpn`] and [`Scheme::prefetch_mapped`]
    /// (asked once; `false` saves the calls for schemes without per-LPN state).
    fn prefetches(&self) -> bool {
        false
    }

    /// Hint: a request read ahead (a few arrivals before it is served) touches `lpn` and up to
    /// 15 LPNs after it (one 64-byte line of `u32`s); prefetch the scheme's per-LPN state.
    /// Called with the engine's own L2P prefetch. Must not change anything computed.
    fn prefetch_lpn(&self, _lpn: u32) {}

    /// Hint: the request that arrives next (a read when `read`) touches `lpn` (its per-LPN
    /// line was prefetched by [`Scheme::prefetch_lpn`]); prefetch what that entry points to,
    /// in the scheme's state or in `ftl` (e.g. [`Ftl::prefetch_lpn`]). Must not change
    /// anything computed.
    fn prefetch_mapped(&self, _lpn: u32, _read: bool, _ftl: &Ftl) {}

    /// A host request arrived (called once, before the per-page hooks of its pages).
    fn on_host_request(&mut self, _op: crate::trace::Op, _first_lpn: u32, _pages: u32) {}

    /// A host request arrived, with the device view and room for background work (called
    /// right after [`Scheme::on_host_request`]; `pages` LPNs from `first_lpn`, wrapping at the
    /// logical capacity).
    fn on_request(
        &mut self,
        _op: crate::trace::Op,
        _first_lpn: u32,
        _pages: u32,
        _ctx: &Ctx<'_>,
        _actions: &mut Vec<Action>,
    ) {
    }

    /// The regions and their latencies (called once, before preconditioning).
    fn set_regions(&mut self, _info: &RegionInfo) {}

    /// Whether the scheme can run on this device (called right after
    /// [`Scheme::set_regions`]). A scheme whose needs the configuration does not meet returns
    /// an error naming the preset or setting to use instead, never a silent fallback.
    ///
    /// # Errors
    /// [`ConfigError`] naming the key and what to use.
    fn validate(&self, _info: &RegionInfo) -> Result<(), ConfigError> {
        Ok(())
    }

    /// Whether the scheme can run on this device's program modes, ECC kinds, cell type and
    /// refresh (called right after [`Scheme::validate`]): a scheme that would degenerate to
    /// the baseline here returns [`DeviceInfo::mismatch`], naming the preset to use.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] on `scheme.name`, naming the preset.
    fn validate_device(&self, _dev: &DeviceInfo) -> Result<(), ConfigError> {
        Ok(())
    }

    /// Hidden pages the scheme needs (called once, after [`Scheme::validate_device`], before
    /// preconditioning): LPNs `logical_pages ..` that the FTL maps like host data (GC moves
    /// them through [`Scheme::gc_move`]) but the host never addresses; the scheme programs,
    /// reads and unmaps them with [`Action::Program`], [`Action::Read`], [`Action::Unmap`].
    /// Default 0.
    ///
    /// # Errors
    /// [`ConfigError`] when the geometry cannot hold what the scheme needs.
    fn hidden_pages(
        &mut self,
        _geo: &crate::flash::Geometry,
        _logical_pages: u64,
    ) -> Result<u64, ConfigError> {
        Ok(0)
    }

    /// Work on hidden pages that preconditioning (untimed) must do now: called after each
    /// untimed write of a host LPN; [`Action::Program`] and [`Action::Unmap`] are applied
    /// untimed, reads are dropped (preconditioning takes no time). Default: none.
    fn take_untimed(&mut self, _out: &mut Vec<Action>) {}

    /// Placement of a page written by preconditioning (the fill before the trace); default
    /// asks [`Scheme::placement`] with [`Source::Host`]. Preconditioning is not the trace: a
    /// scheme that learns from host writes in `placement` overrides this so the fill does not
    /// feed its access history (see `agcr`).
    fn precondition_placement(&mut self, lpn: u32, ctx: &Ctx<'_>) -> Placement {
        self.placement(lpn, Source::Host, ctx)
    }

    /// A host write of `lpn` arrived (called before [`Scheme::placement`]).
    fn on_host_write(&mut self, _lpn: u32, _ctx: &Ctx<'_>) {}

    /// A host read of `lpn` stored at `ppn` arrived; push background work into `actions`.
    fn on_host_read(&mut self, _lpn: u32, _ppn: u32, _ctx: &Ctx<'_>, _actions: &mut Vec<Action>) {}

    /// Period of [`Scheme::on_tick`], ns; `None` (default) = never.
    fn tick_period_ns(&self) -> Option<u64> {
        None
    }

    /// Periodic work.
    fn on_tick(&mut self, _ctx: &Ctx<'_>, _actions: &mut Vec<Action>) {}

    /// `n` ≥ 2 ticks in a row on an idle device (no flash work, no request in flight, the
    /// next arrival after the last of them), in one call, so that a long idle gap does not
    /// cost one event per period. A scheme that implements it must leave exactly the state
    /// `n` calls of [`Scheme::on_tick`] would, and push no actions; it returns `n`. The
    /// default returns 0: not supported, the engine ticks once at a time.
    fn on_idle_ticks(&mut self, _n: u64, _ctx: &Ctx<'_>) -> u64 {
        0
    }

    /// The cache operation of the host request arriving next (called before
    /// [`Scheme::on_host_request`] when the request comes from the cache layer
    /// [`crate::host::cache`]; and with `CleanWrite` before the placement of a backend fetch).
    fn on_cache_op(&mut self, _op: crate::host::cache::CacheOp, _first_lpn: u32, _pages: u32) {}

    /// Idle gap (open loop) above which [`Scheme::on_idle`] is called, ns of simulated time;
    /// `None` (default) = never.
    fn idle_threshold_ns(&self) -> Option<u64> {
        None
    }

    /// Idle-time work: called right after a host arrival when the gap `idle_ns` (simulated
    /// ns) before the next arrival exceeds [`Scheme::idle_threshold_ns`] (open loop only;
    /// closed loop has no idle time).
    fn on_idle(&mut self, _idle_ns: u64, _ctx: &Ctx<'_>, _actions: &mut Vec<Action>) {}

    /// A [`Action::Verify`] found `lpn` (copy `ppn`) corrupted.
    fn on_verify(&mut self, _lpn: u32, _ppn: u32) {}

    /// Placement of a GC relocation of `lpn` from `ppn`; default asks [`Scheme::placement`]
    /// with [`Source::Gc`].
    fn gc_move(&mut self, lpn: u32, _ppn: u32, ctx: &Ctx<'_>) -> Placement {
        self.placement(lpn, Source::Gc, ctx)
    }

    /// Plan the data refresh of `block` (full, with valid data) into `plan` (cleared by the
    /// caller). Default: the baseline refresh, which moves every valid page.
    fn plan_refresh(&mut self, block: u32, ctx: &Ctx<'_>, plan: &mut RefreshPlan) {
        plan.move_all_valid(ctx.ftl, block);
    }

    /// Scheme-specific statistics for the report (a JSON object).
    fn stats(&self) -> serde_json::Value {
        serde_json::Value::Object(Default::default())
    }
}

/// Build a scheme by name with its `[scheme.params]`.
///
/// # Errors
/// [`ConfigError::Invalid`] for an unknown name (listing the known ones) or a bad parameter.
pub fn registry(
    name: &str,
    params: &toml::Table,
    timing: &Timing,
    streams: u32,
) -> Result<Box<dyn Scheme>, ConfigError> {
    match name {
        "baseline" => Ok(Box::new(baseline::Baseline::new(params, timing, streams)?)),
        "diffecc_wa" => Ok(Box::new(diffecc_wa::DiffEccWa::new(
            params, timing, streams,
        )?)),
        // The EFM paper's "TOS18" baseline is the journal version of AGCR (same scheme).
        "agcr" => Ok(Box::new(agcr::Agcr::new(params, timing, streams)?)),
        "tos18" => Ok(Box::new(
            agcr::Agcr::new(params, timing, streams)?.requiring_regions(),
        )),
        "ida" => Ok(Box::new(ida::Ida::new(params, timing, streams)?)),
        "efm" => Ok(Box::new(efm::Efm::new(params, timing, streams, true)?)),
        "efm_static" => Ok(Box::new(efm::Efm::new(params, timing, streams, false)?)),
        "warm" => Ok(Box::new(warm::Warm::new(params, timing, streams)?)),
        "hotis" => Ok(Box::new(hotis::Hotis::new(params, timing, streams)?)),
        "flexlevel" => Ok(Box::new(flexlevel::FlexLevel::new(
            params, timing, streams,
        )?)),
        "flexecc" => Ok(Box::new(flexecc::FlexEcc::new(params, timing, streams)?)),
        "dpa" => Ok(Box::new(dpa::Dpa::new(params, timing, streams)?)),
        other => Err(ConfigError::Invalid {
            key: "scheme.name".into(),
            value: format!("{other:?}"),
            msg: format!("unknown scheme; known: {}", NAMES.join(", ")),
        }),
    }
}

/// Names [`registry`] knows.
pub const NAMES: &[&str] = &[
    "baseline",
    "diffecc_wa",
    "agcr",
    "tos18",
    "ida",
    "efm",
    "efm_static",
    "warm",
    "hotis",
    "flexlevel",
    "flexecc",
    "dpa",
];
