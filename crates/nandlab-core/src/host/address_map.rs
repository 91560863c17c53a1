//! The compact logical address map: a trace whose address span is far larger than what it
//! touches is replayed on a device sized for what it touches.
//!
//! Public traces often address a few GiB scattered over a span of TiB: a SYSTOR'17 LUN of
//! 4.5 TiB touched by 999 requests, MQSim's tpcc trace over 2.7 TiB. A device sized from the
//! span needs FTL tables in proportion to the span (and a whole-space fill writes all of it),
//! so such a trace could not be replayed in bounded memory. With the compact map, the sizing
//! pre-pass records which *chunks* of [`CHUNK_TARGET_BYTES`] (rounded to whole pages) the
//! trace touches, and the replay moves every request from its chunk to that chunk's rank among
//! the touched chunks: the touched chunks, in address order, become one contiguous logical
//! space. The map keeps the order of addresses and the offset within a chunk, so a request
//! stays one contiguous range (the chunks it covers are all touched, hence consecutive in the
//! compact space), page alignment and read-modify-write boundaries are unchanged, and
//! sequential runs stay sequential.
//!
//! What the compact map changes, and the report says (`device.address_map`): the modelled
//! device holds the touched chunks (at least `device.min_logical_capacity_bytes`) plus the
//! configured over-provisioning, not the whole span; the untouched part of the span is not
//! modelled. A whole-space fill (`precondition.fill = "fraction"`) and aging then act on the
//! touched chunks, i.e. on a full device of that size; a real drive whose untouched space
//! holds cold data that GC never moves behaves like this only when that data is segregated
//! from the trace's (greedy GC keeps fully valid blocks out of its victims, but aging over the
//! whole span would mix them). That reading is stated wherever the run is shown.
//!
//! Memory: a two-level bitmap with a per-word rank, allocated only around touched chunks
//! (a leaf of 32,768 chunks = 6 KiB), so a 256 TiB span costs at most 64 KiB of leaf pointers.

use super::TouchedPages;

/// Target chunk size: the granularity at which untouched address space is left out, bytes.
/// Rounded to a whole number of pages ([`chunk_bytes`]).
pub const CHUNK_TARGET_BYTES: u64 = 1 << 20;

/// The chunk size for pages of `page_size_bytes`: the largest multiple of the page size not
/// above [`CHUNK_TARGET_BYTES`] (at least one page).
pub fn chunk_bytes(page_size_bytes: u64) -> u64 {
    (CHUNK_TARGET_BYTES / page_size_bytes).max(1) * page_size_bytes
}

const LEAF_WORDS: usize = 512;
const LEAF_CHUNKS: u64 = LEAF_WORDS as u64 * 64;

/// One leaf: which of its chunks are touched, and the compact index of each word's first
/// chunk.
#[derive(Clone, Debug)]
struct RankLeaf {
    bits: [u64; LEAF_WORDS],
    rank: [u64; LEAF_WORDS],
}

/// Order-preserving map from the trace's byte offsets to a compact logical space holding only
/// the touched chunks. See the module documentation.
#[derive(Clone, Debug)]
pub struct AddressMap {
    chunk_bytes: u64,
    leaves: Vec<Option<Box<RankLeaf>>>,
    chunks: u64,
}

impl AddressMap {
    /// Build the map of the chunks in `touched` (chunk indices of `chunk_bytes` each).
    pub fn new(touched: &TouchedPages, chunk_bytes: u64) -> AddressMap {
        let mut leaves = Vec::with_capacity(touched.leaf_count());
        let mut next = 0u64;
        for leaf in touched.leaves() {
            leaves.push(leaf.map(|bits| {
                let mut rank = [0u64; LEAF_WORDS];
                for (w, r) in rank.iter_mut().enumerate() {
                    *r = next;
                    next += bits[w].count_ones() as u64;
                }
                Box::new(RankLeaf { bits: *bits, rank })
            }));
        }
        AddressMap {
            chunk_bytes,
            leaves,
            chunks: next,
        }
    }

    /// Chunk size, bytes.
    pub fn chunk_bytes(&self) -> u64 {
        self.chunk_bytes
    }

    /// Touched chunks (the compact space is `chunks() × chunk_bytes()` bytes).
    pub fn chunks(&self) -> u64 {
        self.chunks
    }

    /// Bytes of the compact space.
    pub fn compact_bytes(&self) -> u64 {
        self.chunks * self.chunk_bytes
    }

    /// The compact offset of `offset_bytes`, or `None` when its chunk was not touched in the
    /// pre-pass (a source that changed between the passes).
    #[inline]
    pub fn map(&self, offset_bytes: u64) -> Option<u64> {
        let c = offset_bytes / self.chunk_bytes;
        let leaf = self.leaves.get((c / LEAF_CHUNKS) as usize)?.as_ref()?;
        let w = ((c % LEAF_CHUNKS) / 64) as usize;
        let bit = c % 64;
        let word = leaf.bits[w];
        if word >> bit & 1 == 0 {
            return None;
        }
        let rank = leaf.rank[w] + (word & ((1u64 << bit) - 1)).count_ones() as u64;
        Some(rank * self.chunk_bytes + offset_bytes % self.chunk_bytes)
    }

    /// The touched pages `pages` (LPNs of `page_size_bytes` in the trace's space) as LPNs of
    /// the compact space. Pages in untouched chunks (none, for a bitmap from the same pre-pass)
    /// are left out.
    pub fn map_pages(&self, pages: &TouchedPages, page_size_bytes: u64) -> TouchedPages {
        let per_chunk = self.chunk_bytes / page_size_bytes;
        let mut out = TouchedPages::default();
        for (leaf_i, leaf) in self.leaves.iter().enumerate() {
            let Some(leaf) = leaf else { continue };
            for (w, &word) in leaf.bits.iter().enumerate() {
                let mut m = word;
                while m != 0 {
                    let bit = m.trailing_zeros() as u64;
                    m &= m - 1;
                    let c = leaf_i as u64 * LEAF_CHUNKS + w as u64 * 64 + bit;
                    let rank = leaf.rank[w] + (word & ((1u64 << bit) - 1)).count_ones() as u64;
                    for k in 0..per_chunk {
                        if pages.get(c * per_chunk + k) {
                            out.set(rank * per_chunk + k);
                        }
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_whole_pages() {
        assert_eq!(chunk_bytes(8192), 1 << 20);
        assert_eq!(chunk_bytes(16384), 1 << 20);
        assert_eq!(chunk_bytes(12288), 85 * 12288);
        assert_eq!(chunk_bytes(4 << 20), 4 << 20);
    }

    #[test]
    fn map_keeps_order_and_offsets_and_packs_touched_chunks() {
        let cb = 1u64 << 20;
        let mut t = TouchedPages::default();
        // chunks 3, 4, 70,000 and 2^30 (1 PiB: far apart, several leaves)
        for c in [3u64, 4, 70_000, 1 << 30] {
            t.set(c);
        }
        let m = AddressMap::new(&t, cb);
        assert_eq!(m.chunks(), 4);
        assert_eq!(m.map(3 * cb + 17), Some(17));
        assert_eq!(m.map(4 * cb), Some(cb));
        // a request crossing from chunk 3 into 4 stays contiguous
        assert_eq!(m.map(4 * cb - 1), Some(cb - 1));
        assert_eq!(m.map(70_000 * cb + 5), Some(2 * cb + 5));
        assert_eq!(m.map((1 << 30) * cb + cb - 1), Some(4 * cb - 1));
        assert_eq!(m.map(5 * cb), None);
        assert_eq!(m.map(u64::MAX), None);
    }

    #[test]
    fn pages_follow_their_chunks() {
        let (cb, ps) = (1u64 << 20, 8192u64);
        let mut chunks = TouchedPages::default();
        let mut pages = TouchedPages::default();
        for off in [10 * cb + 3 * ps, 500 * cb] {
            chunks.set(off / cb);
            pages.set(off / ps);
        }
        let m = AddressMap::new(&chunks, cb);
        let mp = m.map_pages(&pages, ps);
        let per = cb / ps;
        assert!(mp.get(3));
        assert!(mp.get(per));
        assert_eq!((0..4 * per).filter(|&p| mp.get(p)).count(), 2);
    }
}
