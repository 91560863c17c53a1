//! Read/write separator: V read/write Bloom-filter pairs (Xia & Xiao §IV-A, after Park & Du's
//! multiple Bloom filters for hot-data identification).
//!
//! * V pairs (default 4) of M-bit filters (default 2048), K hash functions (default 2).
//! * Each host request selects the next pair round-robin; each of its pages sets K bits in that
//!   pair's read or write filter ("Each time, one BF will be selected from the V BFs in a
//!   round-robin manner", §IV-A; Fig. 3 advances one pair per request).
//! * Every `decay_requests` requests (default 512) the oldest pair — the one reset longest ago —
//!   is cleared and becomes the newest.
//! * Recency weights (default 2, 1.5, 1, 0.5) go from the most recently reset pair to the
//!   oldest; read (write) hotness of an LPN = sum of the weights of the read (write) filters
//!   that contain it (all K bits set).
//!
//! Memory: 2·V·M bits (2 KiB by default) whatever the device size.

use serde::Serialize;

/// Separator parameters (`[scheme.params]` keys of the same names).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeparatorParams {
    /// Filter pairs V.
    pub filters: usize,
    /// Bits per filter M.
    pub bits: usize,
    /// Hash functions K.
    pub hashes: usize,
    /// Requests between decays.
    pub decay_requests: u64,
    /// Recency weights, newest first (length V).
    pub weights: Vec<f64>,
}

impl Default for SeparatorParams {
    fn default() -> Self {
        SeparatorParams {
            filters: 4,
            bits: 2048,
            hashes: 2,
            decay_requests: 512,
            weights: vec![2.0, 1.5, 1.0, 0.5],
        }
    }
}

/// Access class of an LPN (§IV-A bullets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// read_hotness > 0, write_hotness = 0.
    ReadOnly,
    /// read_hotness = 0, write_hotness > 0.
    WriteOnly,
    /// Both > 0.
    Overlapped,
    /// Neither filter knows the LPN (decayed or never seen).
    Unknown,
}

/// The separator state.
#[derive(Clone, Debug)]
pub struct Separator {
    p: SeparatorParams,
    words: usize,
    /// `read[i]`, `write[i]`: filter bit arrays of pair `i`.
    read: Vec<Vec<u64>>,
    write: Vec<Vec<u64>>,
    current: usize,
    newest: usize,
    requests: u64,
}

#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Separator {
    /// Empty filters.
    pub fn new(p: SeparatorParams) -> Separator {
        let words = p.bits.div_ceil(64);
        Separator {
            read: vec![vec![0; words]; p.filters],
            write: vec![vec![0; words]; p.filters],
            words,
            current: p.filters - 1,
            // Pair 0 counts as the most recently reset, so pair 1 is reset first.
            newest: 0,
            requests: 0,
            p,
        }
    }

    #[inline]
    fn bit(&self, lpn: u32, j: usize) -> usize {
        (mix(lpn as u64 ^ (j as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)) % self.p.bits as u64)
            as usize
    }

    /// Start a host request: select the next pair; decay every `decay_requests` requests.
    pub fn begin_request(&mut self) {
        self.requests += 1;
        if self.p.decay_requests > 0 && self.requests.is_multiple_of(self.p.decay_requests) {
            let oldest = (self.newest + 1) % self.p.filters;
            self.read[oldest].fill(0);
            self.write[oldest].fill(0);
            self.newest = oldest;
        }
        self.current = (self.current + 1) % self.p.filters;
    }

    /// Record a page access of the current request.
    pub fn record(&mut self, lpn: u32, is_write: bool) {
        for j in 0..self.p.hashes {
            let b = self.bit(lpn, j);
            let f = if is_write {
                &mut self.write[self.current]
            } else {
                &mut self.read[self.current]
            };
            f[b / 64] |= 1 << (b % 64);
        }
    }

    fn contains(&self, f: &[u64], lpn: u32) -> bool {
        (0..self.p.hashes).all(|j| {
            let b = self.bit(lpn, j);
            f[b / 64] >> (b % 64) & 1 == 1
        })
    }

    /// Weight of pair `i`: by how recently it was reset (newest first).
    fn weight(&self, i: usize) -> f64 {
        let rank = (self.newest + self.p.filters - i) % self.p.filters;
        self.p.weights[rank]
    }

    /// (read hotness, write hotness) of `lpn`.
    pub fn hotness(&self, lpn: u32) -> (f64, f64) {
        let mut r = 0.0;
        let mut w = 0.0;
        for i in 0..self.p.filters {
            if self.contains(&self.read[i], lpn) {
                r += self.weight(i);
            }
            if self.contains(&self.write[i], lpn) {
                w += self.weight(i);
            }
        }
        (r, w)
    }

    /// Class of `lpn` from its hotness.
    pub fn classify(&self, lpn: u32) -> Class {
        match self.hotness(lpn) {
            (r, w) if r > 0.0 && w > 0.0 => Class::Overlapped,
            (r, _) if r > 0.0 => Class::ReadOnly,
            (_, w) if w > 0.0 => Class::WriteOnly,
            _ => Class::Unknown,
        }
    }

    /// Memory of the filters, bytes.
    pub fn memory_bytes(&self) -> usize {
        2 * self.p.filters * self.words * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sep() -> Separator {
        Separator::new(SeparatorParams::default())
    }

    #[test]
    fn classes_from_hand_built_sequences() {
        let mut s = sep();
        s.begin_request();
        s.record(10, true);
        s.begin_request();
        s.record(20, false);
        s.begin_request();
        s.record(30, true);
        s.begin_request();
        s.record(30, false);
        assert_eq!(s.classify(10), Class::WriteOnly);
        assert_eq!(s.classify(20), Class::ReadOnly);
        assert_eq!(s.classify(30), Class::Overlapped);
        assert_eq!(s.classify(40), Class::Unknown);
        assert_eq!(s.memory_bytes(), 2048);
    }

    #[test]
    fn hotness_sums_recency_weights_and_frequency() {
        let mut s = sep();
        // Four requests, one per pair, all writing LPN 7.
        for _ in 0..4 {
            s.begin_request();
            s.record(7, true);
        }
        assert_eq!(s.hotness(7), (0.0, 2.0 + 1.5 + 1.0 + 0.5));
        let mut s = sep();
        s.begin_request();
        s.record(7, false); // pair 0, the "newest" before any decay: weight 2
        assert_eq!(s.hotness(7), (2.0, 0.0));
    }

    #[test]
    fn decay_resets_the_oldest_pair_every_period() {
        let mut s = Separator::new(SeparatorParams {
            decay_requests: 4,
            ..Default::default()
        });
        s.begin_request(); // request 1 → pair 0
        s.record(5, true);
        // Requests 2–4 go to pairs 1–3; request 4 decays pair 1 (the oldest) first.
        for _ in 0..3 {
            s.begin_request();
        }
        // Pair 0 is now second-newest (pair 1 was just reset): weight 1.5.
        assert_eq!(s.hotness(5), (0.0, 1.5));
        // Three more periods reset pairs 2, 3 and then 0: LPN 5 is forgotten.
        for _ in 0..12 {
            s.begin_request();
        }
        assert_eq!(s.classify(5), Class::Unknown);
    }
}
