//! The diff cache: DRAM that holds dirty leaf entries (or whole leaves past a threshold),
//! clean internal nodes for lookups and dirty onodes, and its eviction.
//!
//! Source: §4.4.4 and F32: eviction drops the clean internal pages of the LRU objects,
//! highest level first, then commits the LRU object's dirty metadata (leaves, internal
//! nodes, onode last).
//!
//! Readings (\[N\], spec §2): an entry costs `osd.diff_cache_entry_bytes`, a cached page the
//! page size, an onode `osd.onode_bytes`; a leaf is cached whole past
//! `osd.diff_cache_leaf_threshold` updated entries.

use super::*;

impl Device {
    /// Current diff-cache size, bytes.
    pub fn cache_bytes(&self) -> u64 {
        self.nodes.dirty_bytes
            + self.clean_pages * self.page as u64
            + self.dirty_onodes * self.o.onode_bytes as u64
    }

    pub(super) fn lru_remove(&mut self, s: u32) {
        let ob = &self.objs[s as usize];
        if !ob.in_lru {
            return;
        }
        let (p, n) = (ob.lru_prev, ob.lru_next);
        if p != NONE {
            self.objs[p as usize].lru_next = n;
        } else {
            self.lru_head = n;
        }
        if n != NONE {
            self.objs[n as usize].lru_prev = p;
        } else {
            self.lru_tail = p;
        }
        let ob = &mut self.objs[s as usize];
        ob.in_lru = false;
        ob.lru_prev = NONE;
        ob.lru_next = NONE;
    }

    pub(super) fn lru_front(&mut self, s: u32) {
        self.lru_remove(s);
        let h = self.lru_head;
        let ob = &mut self.objs[s as usize];
        ob.in_lru = true;
        ob.lru_prev = NONE;
        ob.lru_next = h;
        if h != NONE {
            self.objs[h as usize].lru_prev = s;
        } else {
            self.lru_tail = s;
        }
        self.lru_head = s;
    }

    pub(super) fn has_cache_state(&self, s: u32) -> bool {
        let ob = &self.objs[s as usize];
        ob.onode_dirty || !ob.clean_cached.is_empty() || !ob.dirty.is_empty()
    }

    /// Evict until the diff cache fits (§4.4.4): clean internal pages of the LRU objects,
    /// highest level first; then the LRU object's dirty metadata (leaves, internal nodes,
    /// onode last).
    pub(super) fn evict(&mut self) -> Result<(), OsdError> {
        let cap = self.o.diff_cache_bytes;
        while self.cache_bytes() > cap {
            if self.clean_pages > 0 {
                let mut s = self.lru_tail;
                while s != NONE && self.objs[s as usize].clean_cached.is_empty() {
                    s = self.objs[s as usize].lru_prev;
                }
                if s != NONE {
                    let mut cc = std::mem::take(&mut self.objs[s as usize].clean_cached);
                    let nodes = &self.nodes;
                    cc.sort_unstable_by_key(|&id| nodes.nodes[id as usize].level);
                    while let Some(_id) = cc.pop() {
                        self.clean_pages -= 1;
                        self.counters.cache_dropped_pages += 1;
                        if self.cache_bytes() <= cap {
                            break;
                        }
                    }
                    self.objs[s as usize].clean_cached = cc;
                    if !self.has_cache_state(s) {
                        self.lru_remove(s);
                    }
                    continue;
                }
            }
            let mut s = self.lru_tail;
            while s != NONE && !self.has_cache_state(s) {
                let p = self.objs[s as usize].lru_prev;
                self.lru_remove(s);
                s = p;
            }
            if s == NONE {
                break;
            }
            self.counters.cache_evicted_objects += 1;
            self.flush_objects(&[s], |_| Src::CacheEvict)?;
            self.write_pending_onodes()?;
            let ob = &mut self.objs[s as usize];
            ob.dirty.clear();
            let n = ob.clean_cached.len() as u64;
            ob.clean_cached.clear();
            self.clean_pages -= n;
            self.lru_remove(s);
        }
        Ok(())
    }
}
