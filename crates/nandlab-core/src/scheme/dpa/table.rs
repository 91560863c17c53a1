//! DPA-DRM's redundant-page table (Guo §2.5, Fig. 8): one packed record per redundant page
//! (state, cached bit, live tags, tags in memory, parity page, list links), the hidden LPNs and
//! slots of redundant pages, and the LRU cache of redundant pages (R6 of the [`super`] module
//! documentation).

use super::*;

/// The getter and setter of each field of the packed per-id record (`red`): `name, set_name:
/// kind at OFFSET`, where a `byte` is a `u8`, a `flag` a byte read as `bool`, and a `word` a
/// little-endian `u32` from OFFSET on.
macro_rules! record_fields {
    ($($(#[$doc:meta])* $get:ident, $set:ident: $kind:ident at $at:ident;)*) => {$(
        $(#[$doc])*
        #[inline]
        pub(super) fn $get(&self, g: u32) -> record_fields!(@ty $kind) {
            record_fields!(@load $kind, self, g, $at)
        }

        #[inline]
        pub(super) fn $set(&mut self, g: u32, v: record_fields!(@ty $kind)) {
            record_fields!(@store $kind, self, g, $at, v)
        }
    )*};
    (@ty byte) => { u8 };
    (@ty flag) => { bool };
    (@ty word) => { u32 };
    (@load byte, $s:expr, $g:expr, $at:expr) => { $s.byte($g, $at) };
    (@load flag, $s:expr, $g:expr, $at:expr) => { $s.byte($g, $at) != 0 };
    (@load word, $s:expr, $g:expr, $at:expr) => { $s.word($g, $at) };
    (@store byte, $s:expr, $g:expr, $at:expr, $v:expr) => { $s.set_byte($g, $at, $v) };
    (@store flag, $s:expr, $g:expr, $at:expr, $v:expr) => { $s.set_byte($g, $at, $v as u8) };
    (@store word, $s:expr, $g:expr, $at:expr, $v:expr) => { $s.set_word($g, $at, $v) };
}

impl Dpa {
    // ----- per-id record (`red`)

    #[inline]
    pub(super) fn byte(&self, g: u32, i: usize) -> u8 {
        self.red[g as usize][i]
    }

    #[inline]
    pub(super) fn set_byte(&mut self, g: u32, i: usize, v: u8) {
        self.red[g as usize][i] = v;
    }

    #[inline]
    pub(super) fn word(&self, g: u32, at: usize) -> u32 {
        let r = &self.red[g as usize];
        u32::from_le_bytes([r[at], r[at + 1], r[at + 2], r[at + 3]])
    }

    #[inline]
    pub(super) fn set_word(&mut self, g: u32, at: usize, v: u32) {
        self.red[g as usize][at..at + 4].copy_from_slice(&v.to_le_bytes());
    }

    record_fields! {
        /// State (`ST_*`).
        st, set_st: byte at B_STATE;
        /// Whether `g` is in the redundant-page cache.
        cached, set_cached: flag at B_CACHED;
        /// Valid tags (data page) or flushed stripe members not yet dropped (parity page).
        live, set_live: byte at B_LIVE;
        /// Members listed (data page), or 1 = stripe open / 2 = programmed (parity page).
        nmem, set_nmem: byte at B_NMEM;
        /// The parity page of `g`'s stripe.
        parity, set_parity: word at W_PARITY;
        /// The id before `g` in the redundant-page cache's LRU list.
        prev, set_prev: word at W_PREV;
        /// The id after `g` in the redundant-page cache's LRU list.
        next, set_next: word at W_NEXT;
    }

    /// The hidden LPN of id g = s · planes + q + 1 (slot s of plane q):
    /// `base + s · planes + res_of_plane[q]`, i.e. `base + (g − 1) − q + res_of_plane[q]`.
    #[inline]
    pub(super) fn hidden_lpn(&self, g: u32) -> u32 {
        let q = self.plane_of_id(g);
        self.base
            .wrapping_add(g - 1)
            .wrapping_add(self.lpn_off[q as usize])
    }

    #[inline]
    pub(super) fn plane_of_id(&self, g: u32) -> u32 {
        self.planes_div.modulo(g - 1)
    }

    /// Slot (on its plane) of id `g`.
    #[inline]
    pub(super) fn slot_of_id(&self, g: u32) -> u32 {
        self.planes_div.quot(g - 1)
    }

    /// A free id on plane `q`: a released one, else a fresh one; NIL when the plane has none.
    #[inline]
    pub(super) fn slot_on(&mut self, q: u32) -> u32 {
        let s = match self.free[q as usize].pop() {
            Some(s) => s,
            None if self.fresh[q as usize] < self.slots => {
                self.fresh[q as usize] += 1;
                self.fresh[q as usize] - 1
            }
            None => return NIL,
        };
        s * self.planes + q + 1
    }

    #[inline]
    pub(super) fn group_of(&self, lpn: u32) -> u32 {
        self.die_of_res[self.planes_div.modulo(lpn) as usize]
    }

    /// A free id on a plane of die `die` (rotating from `rr[group]`); NIL when every plane
    /// of the die is out of slots (cannot happen with the sizing of `hidden_pages`).
    pub(super) fn take_slot(&mut self, group: u32, die: u32) -> u32 {
        for _ in 0..self.ppd {
            let q = die * self.ppd + self.rr[group as usize] % self.ppd;
            self.rr[group as usize] = (self.rr[group as usize] + 1) % self.ppd;
            let g = self.slot_on(q);
            if g != NIL {
                return g;
            }
        }
        NIL
    }

    pub(super) fn release(&mut self, g: u32) {
        self.cache_remove(g);
        // State ST_FREE, not cached, no tags, no members, no parity (the LRU links are dead).
        self.red[g as usize][..4].copy_from_slice(&[ST_FREE, 0, 0, 0]);
        self.set_parity(g, NIL);
        let q = self.plane_of_id(g);
        let s = self.slot_of_id(g);
        self.free[q as usize].push(s);
    }

    // ----- redundant-page cache (LRU)

    pub(super) fn cache_remove(&mut self, g: u32) {
        if !self.cached(g) {
            return;
        }
        let (p, n) = (self.prev(g), self.next(g));
        if p != NIL {
            self.set_next(p, n);
        } else {
            self.lru_head = n;
        }
        if n != NIL {
            self.set_prev(n, p);
        } else {
            self.lru_tail = p;
        }
        self.set_cached(g, false);
        self.cached -= 1;
    }

    pub(super) fn cache_insert(&mut self, g: u32) {
        if self.cache_cap == 0 {
            return;
        }
        self.cache_remove(g);
        if self.cached >= self.cache_cap {
            let t = self.lru_tail;
            self.cache_remove(t);
        }
        self.set_prev(g, NIL);
        self.set_next(g, self.lru_head);
        if self.lru_head != NIL {
            self.set_prev(self.lru_head, g);
        } else {
            self.lru_tail = g;
        }
        self.lru_head = g;
        self.set_cached(g, true);
        self.cached += 1;
    }
}
