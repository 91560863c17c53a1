//! The cached mapping table (`ftl.mapping = "cached"`, issue 35): a demand-based page-level
//! FTL after DFTL (Gupta, Kim and Urgaonkar, "DFTL: a flash translation layer employing
//! demand-based selective caching of page-level address mappings", ASPLOS 2009), the model
//! MQSim's CMT and FlashSim's DFTL implement.
//!
//! The whole L2P lives in flash as *translation pages*; the controller's DRAM holds the
//! global translation directory (GTD: where each translation page is) and a cache of
//! `ftl.cmt_bytes` of single mapping entries (the CMT). This module is the CMT's state; the
//! engine charges the flash operations it asks for:
//!
//! * **Lookup** (every host read and write page): a cached entry is a hit. A miss needs the
//!   entry's translation page read from flash before the request's flash operations start
//!   (DFTL §3.2: "it needs to be fetched into the CMT"), unless that page was never written
//!   (every entry in it unmapped: nothing to read). Requests missing on a translation page
//!   whose read is already under way wait for that read instead of reading it again.
//! * **Insert** after the read: the entry becomes the most recently used. A full cache evicts
//!   the least recently used entry; a dirty victim is written back: its translation page is
//!   read, updated and programmed at a new place (DFTL §3.2), and every other dirty entry of
//!   that page in the cache is written with it and becomes clean (DFTL §3.4 "batch
//!   updates").
//! * **Host writes** dirty their entry (the mapping changes when the page is programmed).
//! * **GC, refresh and scheme rewrites** move pages: a cached entry becomes dirty; an entry not
//!   cached makes its translation page *stale*, and the stale pages are updated (read, update,
//!   program) when the victim block is erased — one update per translation page per victim
//!   (DFTL §3.4 "lazy copying and batch updates"). Moving a translation page itself only
//!   changes the GTD (DRAM): no extra flash operation.
//!
//! Sizes (our reading; DFTL and MQSim): a cached entry costs 8 bytes (LPN and PPN, 4 each), so
//! the cache holds `cmt_bytes / 8` entries; a translation page holds the PPNs (4 bytes each) of
//! `mapping unit / 4` consecutive LPNs (512 on a 2 KiB page, DFTL's example; 1,024 per 4 KiB
//! mapping unit on the default drive). Translation pages are hidden LPNs above the logical
//! capacity (and above a scheme's own hidden pages), written on their own stream, and
//! collected by GC like data pages.
//!
//! What it does not model: DFTL's segmented LRU (plain LRU here), the GTD's own persistence
//! (it is DRAM, rebuilt from the translation pages' spare areas at boot), prefetching of
//! neighbouring entries (TPFTL, SFTL), and power loss.
//!
//! State: one `u32` per LPN (its cache slot + 1, 0 = not cached; allocated zeroed, so only the
//! touched part is backed) and per slot its LPN, dirty bit and LRU links, allocated once.

use crate::ftl::NONE;
use crate::mem::{filled, zeroed, AllocError, LruList};

/// Bytes a cached mapping entry takes in the CMT (LPN + PPN).
pub const CMT_ENTRY_BYTES: u64 = 8;
/// Bytes a mapping entry takes in a translation page (a PPN).
pub const TRANSLATION_ENTRY_BYTES: u64 = 4;

/// What evicting an entry asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evicted {
    /// Nothing to write (clean victim, or the cache had room).
    Nothing,
    /// Write back this translation page (its dirty entries are clean now).
    WriteBack(u32),
}

/// The cached mapping table's state and counters. See the module documentation.
#[derive(Clone, Debug)]
pub struct Cmt {
    /// Entries the cache holds at most.
    capacity: u32,
    /// Mapping entries per translation page.
    pub entries_per_page: u32,
    /// Hidden LPN of translation page 0.
    pub base: u32,
    /// Translation pages (⌈logical pages / entries per page⌉).
    pub pages: u32,
    /// Per LPN: cache slot + 1 (0: not cached).
    slot_of: Vec<u32>,
    lpn: Vec<u32>,
    dirty: Vec<bool>,
    /// LRU list of the slots in use (head = most recently used).
    lru: LruList,
    used: u32,
    /// Per translation page: whether an update outside the cache (a move of an entry that is
    /// not cached) waits for the next victim erase.
    stale: Vec<bool>,
    /// The stale pages, in the order they became stale.
    stale_list: Vec<u32>,
    /// Counters (reported under `mapping`).
    pub hits: u64,
    pub misses: u64,
    pub clean_evictions: u64,
    pub dirty_evictions: u64,
    /// Entries written back with an evicted dirty entry's page (batch updates), the victim
    /// included.
    pub entries_written_back: u64,
    /// Moves of entries not cached (each makes its translation page stale).
    pub uncached_moves: u64,
}

impl Cmt {
    /// A cache of `cmt_bytes` for `logical_pages` LPNs whose translation pages are the hidden
    /// LPNs from `base`, each holding `unit_bytes / 4` entries.
    ///
    /// # Errors
    /// [`AllocError`] when the tables cannot be allocated.
    pub fn new(
        cmt_bytes: u64,
        logical_pages: u64,
        unit_bytes: u64,
        base: u32,
    ) -> Result<Cmt, AllocError> {
        let capacity = (cmt_bytes / CMT_ENTRY_BYTES).clamp(1, u32::MAX as u64 - 1) as u32;
        let epp = (unit_bytes / TRANSLATION_ENTRY_BYTES).max(1) as u32;
        let pages = logical_pages.div_ceil(epp as u64) as u32;
        let cap = capacity.min(logical_pages.max(1) as u32) as usize;
        Ok(Cmt {
            capacity,
            entries_per_page: epp,
            base,
            pages,
            slot_of: zeroed(logical_pages as usize, "the CMT's per-LPN slots")?,
            lpn: filled(cap, NONE, "the CMT entries")?,
            dirty: filled(cap, false, "the CMT dirty bits")?,
            lru: LruList::new(cap, "the CMT LRU list")?,
            used: 0,
            stale: filled(pages as usize, false, "the stale translation pages")?,
            stale_list: Vec::new(),
            hits: 0,
            misses: 0,
            clean_evictions: 0,
            dirty_evictions: 0,
            entries_written_back: 0,
            uncached_moves: 0,
        })
    }

    /// Entries the cache holds at most.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// The translation page (its index) holding `lpn`'s entry.
    #[inline]
    pub fn page_of(&self, lpn: u32) -> u32 {
        lpn / self.entries_per_page
    }

    /// Whether `lpn`'s entry is cached (no LRU change).
    #[inline]
    pub fn cached(&self, lpn: u32) -> bool {
        self.slot_of[lpn as usize] != 0
    }

    /// Look `lpn` up: a hit moves it to the front and is counted; a miss is counted.
    pub fn lookup(&mut self, lpn: u32) -> bool {
        let s = self.slot_of[lpn as usize];
        if s == 0 {
            self.misses += 1;
            false
        } else {
            self.hits += 1;
            self.lru.move_to_front(s - 1);
            true
        }
    }

    /// Put `lpn`'s entry in the cache as the most recently used (clean unless `dirty`; an
    /// entry already cached only moves to the front and takes `dirty` if set). A full cache
    /// first evicts its least recently used entry: a dirty victim's translation page is
    /// returned for write-back, with every dirty entry of that page now clean.
    pub fn insert(&mut self, lpn: u32, dirty: bool) -> Evicted {
        let s = self.slot_of[lpn as usize];
        if s != 0 {
            self.lru.move_to_front(s - 1);
            if dirty {
                self.dirty[s as usize - 1] = true;
            }
            return Evicted::Nothing;
        }
        let mut out = Evicted::Nothing;
        let slot = if (self.used as usize) < self.lpn.len() {
            self.used += 1;
            self.used - 1
        } else {
            let v = self.lru.tail();
            self.lru.unlink(v);
            let old = self.lpn[v as usize];
            self.slot_of[old as usize] = 0;
            if self.dirty[v as usize] {
                self.dirty_evictions += 1;
                self.entries_written_back += 1;
                let tp = self.page_of(old);
                self.clean_page(tp);
                out = Evicted::WriteBack(tp);
            } else {
                self.clean_evictions += 1;
            }
            v
        };
        self.lpn[slot as usize] = lpn;
        self.dirty[slot as usize] = dirty;
        self.slot_of[lpn as usize] = slot + 1;
        self.lru.push_front(slot);
        out
    }

    /// Every cached dirty entry of translation page `tp` becomes clean (written back with it).
    fn clean_page(&mut self, tp: u32) {
        let lo = tp as usize * self.entries_per_page as usize;
        let hi = (lo + self.entries_per_page as usize).min(self.slot_of.len());
        for l in lo..hi {
            let s = self.slot_of[l];
            if s != 0 && self.dirty[s as usize - 1] {
                self.dirty[s as usize - 1] = false;
                self.entries_written_back += 1;
            }
        }
        // Its own update is in this write: no longer stale.
        if self.stale[tp as usize] {
            self.stale[tp as usize] = false;
        }
    }

    /// The mapping of `lpn` changed outside a host write (a GC or refresh move, a scheme
    /// rewrite, a trim): a cached entry becomes dirty; otherwise its translation page becomes
    /// stale (updated at the next victim erase, [`Cmt::take_stale`]).
    pub fn moved(&mut self, lpn: u32) {
        let s = self.slot_of[lpn as usize];
        if s != 0 {
            self.dirty[s as usize - 1] = true;
        } else {
            self.uncached_moves += 1;
            let tp = self.page_of(lpn);
            if !self.stale[tp as usize] {
                self.stale[tp as usize] = true;
                self.stale_list.push(tp);
            }
        }
    }

    /// The stale translation pages to update now (a victim block was erased), oldest first,
    /// into `out`; each also takes the cached dirty entries of its page (batch update).
    pub fn take_stale(&mut self, out: &mut Vec<u32>) {
        out.clear();
        let list = std::mem::take(&mut self.stale_list);
        for &tp in &list {
            if self.stale[tp as usize] {
                self.stale[tp as usize] = false;
                self.clean_page(tp);
                out.push(tp);
            }
        }
        self.stale_list = list;
        self.stale_list.clear();
    }

    /// Entries cached now.
    pub fn len(&self) -> u32 {
        self.used
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.used == 0
    }

    /// Dirty entries cached now.
    pub fn dirty_entries(&self) -> u64 {
        (0..self.used as usize).filter(|&s| self.dirty[s]).count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_eviction_writes_back_the_victims_page_with_its_dirty_neighbours() {
        // 3 entries, 4 entries per translation page (16-byte unit).
        let mut c = Cmt::new(24, 64, 16, 1000).unwrap();
        assert_eq!((c.capacity(), c.entries_per_page, c.pages), (3, 4, 16));
        assert!(!c.lookup(1));
        assert_eq!(c.insert(1, true), Evicted::Nothing);
        assert_eq!(c.insert(2, true), Evicted::Nothing);
        assert_eq!(c.insert(9, false), Evicted::Nothing);
        assert!(c.lookup(1)); // 1 is the most recent: 2 is the LRU
        assert_eq!(c.insert(20, false), Evicted::WriteBack(0));
        // 1 (same page as 2) was written with it: clean, so its eviction writes nothing.
        assert!(!c.cached(2));
        assert_eq!(c.dirty_entries(), 0);
        assert_eq!(c.entries_written_back, 2);
        assert_eq!(c.insert(21, false), Evicted::Nothing); // evicts 9 (clean)
        assert_eq!(c.insert(22, false), Evicted::Nothing); // evicts 1 (clean now)
        assert_eq!(
            (c.hits, c.misses, c.dirty_evictions, c.clean_evictions),
            (1, 1, 1, 2)
        );
    }

    #[test]
    fn moves_of_uncached_entries_make_their_page_stale_once() {
        let mut c = Cmt::new(16, 64, 16, 1000).unwrap();
        c.insert(5, false);
        c.moved(5);
        assert_eq!(c.dirty_entries(), 1);
        c.moved(40);
        c.moved(41);
        c.moved(6);
        let mut out = Vec::new();
        c.take_stale(&mut out);
        // Page 10 (LPNs 40–43) and page 1 (4–7: 6 stale, 5 cached and dirty).
        assert_eq!(out, vec![10, 1]);
        assert_eq!(c.dirty_entries(), 0);
        c.take_stale(&mut out);
        assert!(out.is_empty());
    }
}
