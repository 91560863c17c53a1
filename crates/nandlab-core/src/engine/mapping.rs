//! The engine side of the cached mapping table (`ftl.mapping = "cached"`, issue 35; the
//! table's state and the DFTL rules it follows are [`crate::ftl::cmt`]): the flash operations
//! it costs, charged like any other.
//!
//! * A host request whose pages miss in the CMT holds its flash operations until the
//!   translation pages they need are read (one read per translation page, shared by every
//!   request that misses on it while the read is under way): the translation read is on the
//!   request's critical path and in its response. Reads are queued as host reads are (source
//!   `mapping`, served before background work). Our reading: the whole request waits for
//!   its last translation read (a controller resolves a command's addresses before issuing
//!   its flash operations); its hits do not start earlier.
//! * When the request's operations are issued, each of its entries is put in the CMT (a
//!   write's entry dirty); an eviction of a dirty entry writes its translation page back in
//!   the background: a read of the old copy (when there is one), then a program at a new
//!   place on the translation stream (stream `ftl.streams`, after the configured ones).
//! * GC and refresh moves and scheme rewrites dirty a cached entry; an entry not cached makes
//!   its translation page stale, and the stale pages are written back (read + program) when
//!   the next victim block is erased.
//! * Trims update the mapping as moves do.
//!
//! Counters (report `mapping`): CMT hits and misses per page lookup, translation reads on the
//! host path, write-back reads, translation-page programs (also in `flash_programs.mapping`,
//! so in the write amplification), and the share of programs they are.

use serde_json::{json, Value};

use super::{Engine, WrappingLpns, EV_MAP};
use crate::ftl::cmt::{Cmt, Evicted};
use crate::ftl::{NONE, UNMAPPED};
use crate::scheme::{Placement, Source};
use crate::trace::Op;

/// Owner bit of a write-back read (the rest is the translation page); without it the owner of
/// a translation read is its load.
const WRITE_BACK: u32 = 1 << 31;

/// A translation-page read under way and the host requests waiting for it.
#[derive(Clone, Debug, Default)]
struct Load {
    page: u32,
    /// Service time of its read (sense, transfer, decode), ns.
    service_ns: u64,
    waiters: Vec<u32>,
}

/// A host request waiting for translation reads: its LPN range and wrapped offset.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Waiting {
    first_lpn: u32,
    pages: u32,
    offset_bytes: u64,
    loads: u32,
    /// The longest service of the translation reads it waited for, ns: part of the
    /// request's service (not queue wait), added when it completes.
    translation_ns: u64,
}

/// The cached mapping table's runtime. See the module documentation.
#[derive(Debug)]
pub(super) struct MapRuntime {
    pub cmt: Cmt,
    /// Where translation pages are programmed.
    pub placement: Placement,
    /// Translation pages preconditioning wrote.
    pub preconditioned_pages: u64,
    /// Per translation page: its load under way, or NONE.
    loading: Vec<u32>,
    loads: Vec<Load>,
    load_free: Vec<u32>,
    /// Per host slot (same index as the engine's slots).
    waiting: Vec<Waiting>,
    stale: Vec<u32>,
    /// Translation reads on the host path (one per load).
    pub translation_reads: u64,
    /// Host requests that waited for a translation read.
    pub requests_waited: u64,
    /// Reads of a translation page's old copy before its write-back.
    pub writeback_reads: u64,
    /// Translation-page write-backs queued (evictions and stale-page updates).
    pub writebacks: u64,
    /// Of those, stale-page updates after a victim erase.
    pub stale_updates: u64,
}

impl MapRuntime {
    /// The runtime for `cmt`; translation pages go to `stream`.
    pub(super) fn new(cmt: Cmt, stream: u8) -> MapRuntime {
        let pages = cmt.pages as usize;
        MapRuntime {
            cmt,
            placement: Placement {
                stream,
                ..Placement::NONE
            },
            preconditioned_pages: 0,
            loading: vec![NONE; pages],
            loads: Vec::new(),
            load_free: Vec::new(),
            waiting: Vec::new(),
            stale: Vec::new(),
            translation_reads: 0,
            requests_waited: 0,
            writeback_reads: 0,
            writebacks: 0,
            stale_updates: 0,
        }
    }
}

impl Engine {
    /// Look the pages of host request `slot` (`pages` LPNs from `first`, wrapping) up in the
    /// CMT and start the translation reads its misses need. Returns `true` when the request
    /// waits for them (its operations are issued by [`Engine::map_load_done`]).
    pub(super) fn map_lookup(&mut self, slot: u32, first: u32, pages: u32, offset: u64) -> bool {
        if self.map.is_none() {
            return false;
        }
        let mut waits = 0u32;
        for (_, l) in WrappingLpns::new(first, pages as u64, self.logical_pages) {
            let m = self.map.as_mut().expect("cached mapping");
            if m.cmt.lookup(l) {
                continue;
            }
            let tp = m.cmt.page_of(l);
            let mut load = m.loading[tp as usize];
            if load == NONE {
                let tlpn = m.cmt.base + tp;
                let ppn = self.ftl.lookup(tlpn);
                if ppn == UNMAPPED {
                    // Never written: every entry of it is unmapped, nothing to read.
                    continue;
                }
                load = m.load_free.pop().unwrap_or_else(|| {
                    m.loads.push(Load::default());
                    (m.loads.len() - 1) as u32
                });
                m.loads[load as usize].page = tp;
                m.loads[load as usize].waiters.clear();
                m.loading[tp as usize] = load;
                m.translation_reads += 1;
                let die = self.enqueue_read(Source::Mapping, tlpn, ppn, load);
                self.dispatch(die);
            }
            let m = self.map.as_mut().expect("cached mapping");
            let w = &mut m.loads[load as usize].waiters;
            if !w.contains(&slot) {
                w.push(slot);
                waits += 1;
            }
        }
        let m = self.map.as_mut().expect("cached mapping");
        if m.waiting.len() <= slot as usize {
            m.waiting.resize(slot as usize + 1, Waiting::default());
        }
        m.waiting[slot as usize] = Waiting {
            first_lpn: first,
            pages,
            offset_bytes: offset,
            loads: waits,
            translation_ns: 0,
        };
        if waits == 0 {
            return false;
        }
        m.requests_waited += 1;
        // Held until its translation reads end (released by `map_issue`).
        self.slots[slot as usize].pending += 1;
        true
    }

    /// A translation read of owner `owner` ended on the die; its data is decoded at `end`
    /// after `service_ns` of service.
    pub(super) fn map_read_done(&mut self, owner: u32, end: u64, service_ns: u64) {
        if owner & WRITE_BACK != 0 {
            self.map_program(owner & !WRITE_BACK);
            return;
        }
        if let Some(m) = self.map.as_mut() {
            m.loads[owner as usize].service_ns = service_ns;
        }
        if end > self.now {
            self.push(end, EV_MAP | owner as u64);
        } else {
            self.map_load_done(owner);
        }
    }

    /// Load `load` is decoded: the requests that waited only for it issue their operations.
    pub(super) fn map_load_done(&mut self, load: u32) {
        let m = self.map.as_mut().expect("cached mapping");
        let l = &mut m.loads[load as usize];
        m.loading[l.page as usize] = NONE;
        let service = l.service_ns;
        let mut waiters = std::mem::take(&mut l.waiters);
        for &slot in &waiters {
            let m = self.map.as_mut().expect("cached mapping");
            let w = &mut m.waiting[slot as usize];
            w.loads -= 1;
            w.translation_ns = w.translation_ns.max(service);
            if w.loads == 0 {
                let w = *w;
                self.slots[slot as usize].pending -= 1;
                self.map_insert(slot, w.first_lpn, w.pages);
                self.issue_pages(slot, w.offset_bytes, w.first_lpn, w.pages as u64);
            }
        }
        // Free the load only now: the requests issued above may have started new loads.
        waiters.clear();
        let m = self.map.as_mut().expect("cached mapping");
        m.loads[load as usize].waiters = waiters;
        m.load_free.push(load);
    }

    /// Put the entries of request `slot` in the CMT (a write's dirty), writing back the
    /// translation pages of dirty entries evicted.
    pub(super) fn map_insert(&mut self, slot: u32, first: u32, pages: u32) {
        let write = self.slots[slot as usize].op == Op::Write;
        for (_, l) in WrappingLpns::new(first, pages as u64, self.logical_pages) {
            let m = self.map.as_mut().expect("cached mapping");
            if let Evicted::WriteBack(tp) = m.cmt.insert(l, write) {
                self.map_write_back(tp);
            }
        }
    }

    /// Service time host request `slot` spent on translation reads it waited for, ns (0
    /// without a cached mapping table).
    #[inline]
    pub(super) fn map_service_ns(&self, slot: u32) -> u64 {
        self.map
            .as_ref()
            .and_then(|m| m.waiting.get(slot as usize))
            .map_or(0, |w| w.translation_ns)
    }

    /// The mapping of data page `lpn` changed outside a host write (a move, a rewrite, a
    /// trim).
    #[inline]
    pub(super) fn map_moved(&mut self, lpn: u32) {
        if let Some(m) = self.map.as_mut() {
            if (lpn as u64) < self.logical_pages {
                m.cmt.moved(lpn);
            }
        }
    }

    /// A victim block was erased: write back the stale translation pages.
    pub(super) fn map_victim_erased(&mut self) {
        let Some(m) = self.map.as_mut() else { return };
        let mut stale = std::mem::take(&mut m.stale);
        m.cmt.take_stale(&mut stale);
        m.stale_updates += stale.len() as u64;
        for &tp in &stale {
            self.map_write_back(tp);
        }
        self.map.as_mut().expect("cached mapping").stale = stale;
    }

    /// Write translation page `tp` back: read its old copy (if any), then program it.
    fn map_write_back(&mut self, tp: u32) {
        let m = self.map.as_mut().expect("cached mapping");
        m.writebacks += 1;
        let tlpn = m.cmt.base + tp;
        let ppn = self.ftl.lookup(tlpn);
        if ppn == UNMAPPED {
            self.map_program(tp);
            return;
        }
        m.writeback_reads += 1;
        let die = self.enqueue_read(Source::Mapping, tlpn, ppn, WRITE_BACK | tp);
        self.dispatch(die);
    }

    /// Program translation page `tp` (background, on the translation stream).
    fn map_program(&mut self, tp: u32) {
        let m = self.map.as_ref().expect("cached mapping");
        let (tlpn, pl) = (m.cmt.base + tp, m.placement);
        let die = self.enqueue_program(Source::Mapping, tlpn, NONE, pl);
        if die == NONE {
            for d in 0..self.exec.dies() {
                self.dispatch(d);
            }
        } else {
            self.dispatch(die);
        }
    }

    /// The report's `mapping` block (`None` with the L2P in DRAM).
    pub(super) fn map_report(&self) -> Option<Value> {
        let m = self.map.as_ref()?;
        let c = &m.cmt;
        let lookups = c.hits + c.misses;
        let programs = self.stats.flash_programs.total();
        let tw = self.stats.flash_programs.mapping;
        Some(json!({
            "mapping": "cached",
            "cmt_bytes": self.cfg.ftl.cmt_bytes,
            "cmt_entries": c.capacity(),
            "entries_per_translation_page": c.entries_per_page,
            "translation_pages": c.pages,
            "translation_pages_preconditioned": m.preconditioned_pages,
            "lookups": lookups,
            "hits": c.hits,
            "misses": c.misses,
            "hit_rate": if lookups > 0 { c.hits as f64 / lookups as f64 } else { 0.0 },
            "translation_reads": m.translation_reads,
            "requests_waited": m.requests_waited,
            "writebacks": m.writebacks,
            "writeback_reads": m.writeback_reads,
            "stale_page_updates": m.stale_updates,
            "translation_programs": tw,
            "translation_program_share": if programs > 0 { tw as f64 / programs as f64 } else { 0.0 },
            "dirty_evictions": c.dirty_evictions,
            "clean_evictions": c.clean_evictions,
            "entries_written_back": c.entries_written_back,
            "uncached_moves": c.uncached_moves,
            "cached_entries_at_end": c.len(),
        }))
    }
}
