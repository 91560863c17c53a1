//! The controller's DRAM data cache (`[dram]`, issue 13 item 3): a write-back cache of host
//! pages in front of the flash, as MQSim's data cache manager and SSD controllers have.
//!
//! * A host write page goes into DRAM and is acknowledged `dram.access_us` later; its flash
//!   program (the flush) is queued at once, in the background, with the scheme's placement
//!   asked when it is queued. A page rewritten while its flush is queued or running is flushed
//!   once more when that flush ends (rewrites in between coalesce into one program).
//! * A host read of a cached page (dirty or clean) is served from DRAM in `dram.access_us`,
//!   without a flash read.
//! * Flushed pages stay cached (clean) and are evicted least recently used first when a new
//!   page needs an entry. When every entry is dirty, the write waits (back-pressure) until a
//!   flush ends; its response then includes the wait.
//! * A partial-page write miss with `ftl.read_modify_write` reads the page from flash first
//!   and then enters the cache.
//!
//! What it does not model: the DRAM's own bandwidth and queueing (each access takes
//! `access_us`, in parallel), read caching of flash reads (reads do not fill the cache),
//! flush on power loss, and a discard of a page whose flush is queued (the flush still
//! programs it; a clean cached page is dropped).
//!
//! State: one entry index per LPN (`NONE` when not cached) and per entry its LPN, state and a
//! doubly linked LRU list of clean entries, all allocated once; no allocation per request.

use crate::ftl::NONE;

/// Flush tokens: the owner of a flush program is `FLUSH | entry` (host slots stay below).
pub(super) const FLUSH: u32 = 1 << 31;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Free,
    Clean,
    /// Flush queued or running.
    Flushing,
    /// Rewritten while flushing: flush again when the flush ends.
    Redirty,
}

/// The cache's state and counters.
#[derive(Debug)]
pub(super) struct Dram {
    /// Per LPN: its entry, or NONE.
    slot_of: Vec<u32>,
    lpn: Vec<u32>,
    state: Vec<State>,
    /// LRU list of clean entries (head = most recent).
    lru: crate::mem::LruList,
    free: Vec<u32>,
    /// Writes waiting for an entry (LPN, host slot), oldest first.
    pub waiting: std::collections::VecDeque<(u32, u32)>,
    /// Page access time, ns.
    pub access_ns: u64,
    /// Counters.
    pub write_hits: u64,
    pub write_misses: u64,
    pub read_hits: u64,
    pub read_misses: u64,
    pub flushes: u64,
    pub evictions: u64,
    pub backpressure_waits: u64,
}

impl Dram {
    /// A cache of `entries` pages for `logical_pages` LPNs.
    ///
    /// # Errors
    /// [`crate::mem::AllocError`] when a table cannot be allocated.
    pub fn new(
        entries: u32,
        logical_pages: u64,
        access_ns: u64,
    ) -> Result<Dram, crate::mem::AllocError> {
        use crate::mem::filled;
        let n = entries as usize;
        Ok(Dram {
            slot_of: filled(
                logical_pages as usize,
                NONE,
                "the DRAM cache's per-LPN index",
            )?,
            lpn: filled(n, NONE, "the DRAM cache's entries")?,
            state: filled(n, State::Free, "the DRAM cache's entries")?,
            lru: crate::mem::LruList::new(n, "the DRAM cache's LRU list")?,
            free: (0..entries).rev().collect(),
            waiting: std::collections::VecDeque::with_capacity(1024),
            access_ns,
            write_hits: 0,
            write_misses: 0,
            read_hits: 0,
            read_misses: 0,
            flushes: 0,
            evictions: 0,
            backpressure_waits: 0,
        })
    }

    /// Whether `lpn` is cached (no counting, no recency change).
    #[inline]
    pub fn cached(&self, lpn: u32) -> bool {
        self.slot_of[lpn as usize] != NONE
    }

    /// Whether `lpn` is cached (a read hit); refreshes its recency.
    #[inline]
    pub fn read(&mut self, lpn: u32) -> bool {
        let e = self.slot_of[lpn as usize];
        if e == NONE {
            self.read_misses += 1;
            return false;
        }
        self.read_hits += 1;
        if self.state[e as usize] == State::Clean {
            self.lru.unlink(e);
            self.lru.push_front(e);
        }
        true
    }

    /// A host write of `lpn`. Returns `Some(entry)` when a flush of the entry must be queued,
    /// `Some(NONE)` when the write is absorbed (a rewrite of a page already flushing), and
    /// `None` when no entry is free (back-pressure: the caller queues the write).
    pub fn write(&mut self, lpn: u32) -> Option<u32> {
        let e = self.slot_of[lpn as usize];
        if e != NONE {
            self.write_hits += 1;
            return match self.state[e as usize] {
                State::Clean => {
                    self.lru.unlink(e);
                    self.state[e as usize] = State::Flushing;
                    Some(e)
                }
                _ => {
                    self.state[e as usize] = State::Redirty;
                    Some(NONE)
                }
            };
        }
        let e = match self.free.pop() {
            Some(e) => e,
            None => {
                // Evict the least recently used clean page.
                let e = self.lru.tail();
                if e == NONE {
                    return None;
                }
                self.lru.unlink(e);
                self.slot_of[self.lpn[e as usize] as usize] = NONE;
                self.evictions += 1;
                e
            }
        };
        self.write_misses += 1;
        self.lpn[e as usize] = lpn;
        self.slot_of[lpn as usize] = e;
        self.state[e as usize] = State::Flushing;
        Some(e)
    }

    /// Number of entries (pages).
    pub fn entries(&self) -> usize {
        self.lpn.len()
    }

    /// LPN of entry `e`.
    #[inline]
    pub fn lpn_of(&self, e: u32) -> u32 {
        self.lpn[e as usize]
    }

    /// The flush of entry `e` ended. Returns whether it must be flushed again (rewritten
    /// meanwhile); otherwise it is clean now.
    pub fn flushed(&mut self, e: u32) -> bool {
        self.flushes += 1;
        if self.state[e as usize] == State::Redirty {
            self.state[e as usize] = State::Flushing;
            return true;
        }
        self.state[e as usize] = State::Clean;
        self.lru.push_front(e);
        false
    }

    /// A discard of `lpn`: drop it when clean (a flushing page keeps its flush).
    pub fn trim(&mut self, lpn: u32) {
        let e = self.slot_of[lpn as usize];
        if e != NONE && self.state[e as usize] == State::Clean {
            self.lru.unlink(e);
            self.slot_of[lpn as usize] = NONE;
            self.state[e as usize] = State::Free;
            self.free.push(e);
        }
    }
}
