//! Flash model: geometry, physical addresses, page types and operation timing.
//!
//! # Addressing
//!
//! The device is `channels × chips_per_channel × dies_per_chip × planes_per_die` planes of
//! `blocks_per_plane × pages_per_block` pages. Identifiers are flat:
//!
//! ```text
//! die   = (channel · chips_per_channel + chip) · dies_per_chip + die_in_chip
//! plane = die · planes_per_die + plane_in_die
//! block = plane · blocks_per_plane + block_in_plane        (global block id)
//! PPN   = block · pages_per_block + page_in_block           (u32)
//! ```
//!
//! # Timing
//!
//! A page read holds its die for `sense(page type) + transfer`, then the controller decodes
//! (`decode` of the page's ECC) without holding the die or the channel. A page program holds
//! the die for `transfer + program(page type, mode)`. An erase holds it for `erase`. A transfer
//! also holds the die's channel. Transfer time = `page_size_bytes / (channel_mt_s · 10⁶ ·
//! channel_width_bytes)`.
//!
//! # What it does not model
//!
//! Cache-register pipelining (cache read / cache program), multi-plane operations, suspend/resume
//! of programs and erases, command/address cycles on the bus, and controller DRAM. Each of these
//! shortens some latencies on real devices; nandlab's numbers are for the plain operation set.

use serde::{Deserialize, Serialize};

/// Cell type: bits per cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CellType {
    /// 1 bit per cell.
    Slc,
    /// 2 bits per cell (LSB, MSB pages).
    Mlc,
    /// 3 bits per cell (LSB, CSB, MSB pages).
    Tlc,
    /// 4 bits per cell (LSB, CSB, MSB, TSB pages).
    Qlc,
}

impl CellType {
    /// Bits per cell = pages per word line.
    pub fn bits(self) -> usize {
        match self {
            CellType::Slc => 1,
            CellType::Mlc => 2,
            CellType::Tlc => 3,
            CellType::Qlc => 4,
        }
    }
}

/// Page type within a word line. For MLC the types are LSB and MSB (index 0 and 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PageType {
    /// Least significant bit page (fastest read).
    Lsb = 0,
    /// Centre significant bit page (TLC/QLC).
    Csb = 1,
    /// Most significant bit page.
    Msb = 2,
    /// Top significant bit page (QLC).
    Tsb = 3,
}

impl PageType {
    /// The page type of bit `bit` (0 = lowest) of a cell with `bits` bits.
    pub fn of_bit(bit: usize, bits: usize) -> PageType {
        match (bits, bit) {
            (1, _) => PageType::Lsb,
            (2, 0) => PageType::Lsb,
            (2, _) => PageType::Msb,
            (3, 0) => PageType::Lsb,
            (3, 1) => PageType::Csb,
            (3, _) => PageType::Msb,
            (_, 0) => PageType::Lsb,
            (_, 1) => PageType::Csb,
            (_, 2) => PageType::Msb,
            _ => PageType::Tsb,
        }
    }

    /// The bit (0 = lowest) of a `bits`-bit cell this page type stores: the inverse of
    /// [`PageType::of_bit`] (MLC's MSB is bit 1).
    pub fn bit(self, bits: usize) -> usize {
        match (bits, self) {
            (2, PageType::Msb) => 1,
            (_, t) => t as usize,
        }
    }

    /// Short name (`"lsb"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            PageType::Lsb => "lsb",
            PageType::Csb => "csb",
            PageType::Msb => "msb",
            PageType::Tsb => "tsb",
        }
    }
}

/// Order in which the pages of a block map onto word lines and bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PageOrder {
    /// Page `p` is bit `p mod bits` of word line `p / bits` (all bits of a word line in a row).
    #[default]
    Sequential,
    /// Shadow (staggered) programming: the lower pages of word line `w + 1` are programmed
    /// before the upper page of word line `w`, as MLC/TLC parts do to limit coupling. For MLC
    /// the order is LSB0, LSB1, MSB0, LSB2, MSB1, …; for TLC LSB0, LSB1, CSB0, LSB2, CSB1, MSB0, …
    Staggered,
}

/// Per-page layout of a block: word line and page type of each page index.
#[derive(Clone, Debug)]
pub struct BlockLayout {
    /// Word line of page `p`.
    pub word_line: Vec<u32>,
    /// Page type of page `p`.
    pub page_type: Vec<PageType>,
    /// Bits per cell (pages per word line).
    pub bits: usize,
    /// Word-line view: `wl_pages[w][bit]` = page index of bit `bit` (0 = LSB) of word line `w`
    /// (entries ≥ `bits` unused).
    pub wl_pages: Vec<[u32; 4]>,
}

impl BlockLayout {
    /// Build the layout of a block of `pages` pages, `bits` per cell, in `order`.
    ///
    /// `pages` must be a multiple of `bits` (checked by the config validation).
    pub fn new(pages: usize, bits: usize, order: PageOrder) -> BlockLayout {
        let mut word_line = vec![0u32; pages];
        let mut page_type = vec![PageType::Lsb; pages];
        match order {
            PageOrder::Sequential => {
                for p in 0..pages {
                    word_line[p] = (p / bits) as u32;
                    page_type[p] = PageType::of_bit(p % bits, bits);
                }
            }
            PageOrder::Staggered => {
                // Program step s covers bit b of word line s - b (for every b with a valid
                // word line): a diagonal sweep over (word line, bit).
                let wls = pages / bits;
                let mut p = 0;
                let mut s = 0usize;
                while p < pages {
                    for b in 0..bits {
                        if s >= b && s - b < wls {
                            word_line[p] = (s - b) as u32;
                            page_type[p] = PageType::of_bit(b, bits);
                            p += 1;
                        }
                    }
                    s += 1;
                }
            }
        }
        let mut wl_pages = vec![[u32::MAX; 4]; pages / bits.max(1)];
        for p in 0..pages {
            let w = word_line[p] as usize;
            let bit = page_type[p].bit(bits);
            if w < wl_pages.len() && bit < 4 {
                wl_pages[w][bit] = p as u32;
            }
        }
        BlockLayout {
            word_line,
            page_type,
            bits,
            wl_pages,
        }
    }

    /// The layout the FTL sees when it maps `units` units per page (`ftl.mapping_unit_bytes`):
    /// every page's word line and page type repeated for each of its units, so FTL page
    /// `p` is unit `p % units` of physical page `p / units`. `wl_pages` names each bit's
    /// first unit. `units` = 1: the layout itself.
    pub fn with_units(self, units: usize) -> BlockLayout {
        if units <= 1 {
            return self;
        }
        let rep = |v: &[u32]| {
            v.iter()
                .flat_map(|&x| std::iter::repeat_n(x, units))
                .collect()
        };
        BlockLayout {
            word_line: rep(&self.word_line),
            page_type: self
                .page_type
                .iter()
                .flat_map(|&t| std::iter::repeat_n(t, units))
                .collect(),
            bits: self.bits,
            wl_pages: self
                .wl_pages
                .iter()
                .map(|w| w.map(|p| if p == u32::MAX { p } else { p * units as u32 }))
                .collect(),
        }
    }

    /// Word lines per block.
    #[inline]
    pub fn word_lines(&self) -> usize {
        self.wl_pages.len()
    }

    /// Page indices of word line `w`, LSB first (`bits` entries).
    #[inline]
    pub fn wl(&self, w: usize) -> &[u32] {
        &self.wl_pages[w][..self.bits.min(4)]
    }
}

/// Division of `u32` values by a divisor fixed at run time (a geometry count), without the
/// division instruction: a shift for powers of two, else the multiply-high method of Lemire,
/// Kaser & Kurz, "Faster Remainder by Direct Computation" (2019), exact for every 32-bit
/// numerator and divisor. The hot paths divide page numbers by pages per block, blocks per
/// plane, and so on, several times per transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DivU32 {
    d: u32,
    /// ⌈2⁶⁴ / d⌉ (unused for powers of two).
    m: u64,
    /// log2(d) for powers of two, else 64.
    shift: u32,
}

impl DivU32 {
    /// A divider by `d` (`d` ≥ 1; 0 is treated as 1).
    pub fn new(d: u32) -> DivU32 {
        let d = d.max(1);
        if d.is_power_of_two() {
            DivU32 {
                d,
                m: 0,
                shift: d.trailing_zeros(),
            }
        } else {
            DivU32 {
                d,
                m: u64::MAX / d as u64 + 1,
                shift: 64,
            }
        }
    }

    /// The divisor.
    #[inline]
    pub fn divisor(self) -> u32 {
        self.d
    }

    /// `n / d`.
    #[inline]
    pub fn quot(self, n: u32) -> u32 {
        if self.shift < 64 {
            n >> self.shift
        } else {
            ((self.m as u128 * n as u128) >> 64) as u32
        }
    }

    /// `n % d`.
    #[inline]
    pub fn modulo(self, n: u32) -> u32 {
        if self.shift < 64 {
            n & (self.d - 1)
        } else {
            let low = self.m.wrapping_mul(n as u64);
            ((low as u128 * self.d as u128) >> 64) as u32
        }
    }
}

/// Device geometry with derived counts. All counts are ≥ 1 (validated by the config).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Geometry {
    /// Channels (buses).
    pub channels: u32,
    /// Chips (packages) per channel.
    pub chips_per_channel: u32,
    /// Dies per chip.
    pub dies_per_chip: u32,
    /// Planes per die.
    pub planes_per_die: u32,
    /// Blocks per plane.
    pub blocks_per_plane: u32,
    /// Pages per block.
    pub pages_per_block: u32,
    /// Page size in bytes.
    pub page_size_bytes: u32,
    /// Cell type.
    pub cell: CellType,
}

impl Geometry {
    /// Number of dies.
    pub fn dies(&self) -> u32 {
        self.channels * self.chips_per_channel * self.dies_per_chip
    }
    /// Number of planes.
    pub fn planes(&self) -> u32 {
        self.dies() * self.planes_per_die
    }
    /// Number of blocks.
    pub fn blocks(&self) -> u32 {
        self.planes() * self.blocks_per_plane
    }
    /// Number of physical pages (fits u32: checked by the config validation).
    pub fn pages(&self) -> u64 {
        self.blocks() as u64 * self.pages_per_block as u64
    }
    /// Physical capacity in bytes.
    pub fn physical_bytes(&self) -> u64 {
        self.pages() * self.page_size_bytes as u64
    }
    /// Die of a plane.
    #[inline]
    pub fn die_of_plane(&self, plane: u32) -> u32 {
        plane / self.planes_per_die
    }
    /// Channel of a die.
    #[inline]
    pub fn channel_of_die(&self, die: u32) -> u32 {
        die / (self.chips_per_channel * self.dies_per_chip)
    }
    /// Plane of a global block id.
    #[inline]
    pub fn plane_of_block(&self, block: u32) -> u32 {
        block / self.blocks_per_plane
    }
    /// Global block of a PPN.
    #[inline]
    pub fn block_of_ppn(&self, ppn: u32) -> u32 {
        ppn / self.pages_per_block
    }
    /// Page index within its block.
    #[inline]
    pub fn page_in_block(&self, ppn: u32) -> u32 {
        ppn % self.pages_per_block
    }
    /// The plane that static CWDP striping assigns to `lpn`: channel first, then chip, die,
    /// plane (IDA paper Table II; MQSim's "CWDP" allocation scheme).
    #[inline]
    pub fn cwdp_plane(&self, lpn: u32) -> u32 {
        let c = lpn % self.channels;
        let r = lpn / self.channels;
        let w = r % self.chips_per_channel;
        let r = r / self.chips_per_channel;
        let d = r % self.dies_per_chip;
        let r = r / self.dies_per_chip;
        let p = r % self.planes_per_die;
        let die = (c * self.chips_per_channel + w) * self.dies_per_chip + d;
        die * self.planes_per_die + p
    }
    /// Decode a PPN to (channel, chip, die in chip, plane in die, block in plane, page).
    pub fn decode(&self, ppn: u32) -> [u32; 6] {
        let page = ppn % self.pages_per_block;
        let block = ppn / self.pages_per_block;
        let plane = block / self.blocks_per_plane;
        let blk = block % self.blocks_per_plane;
        let die = plane / self.planes_per_die;
        let pl = plane % self.planes_per_die;
        let dpc = self.dies_per_chip;
        let d = die % dpc;
        let chip_flat = die / dpc;
        let chip = chip_flat % self.chips_per_channel;
        let ch = chip_flat / self.chips_per_channel;
        [ch, chip, d, pl, blk, page]
    }
}

/// A program mode: one ISPP setting with its program latency per page type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProgramModeTiming {
    /// Name used in reports (`"normal"`, `"low_cost"`, ...).
    pub name: String,
    /// Program latency per page type, ns.
    pub program_ns: [u64; 4],
}

/// An ECC kind as the timing model sees it: a fixed decode latency (the reliability issue
/// replaces this by a model of the page's state).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EccTiming {
    /// Name used in reports (`"bch"`, `"ldpc"`, ...).
    pub name: String,
    /// Decode latency, ns.
    pub decode_ns: u64,
    /// Extra array sensing time added to reads of pages with this ECC, ns.
    pub extra_sense_ns: u64,
    /// Decode latency of a page with bit errors, ns (FlexECC Table 2: BCH 10 µs); 0 = same as
    /// `decode_ns`. Used by fault injection (`[faults]`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub decode_corrupted_ns: u64,
    /// Encode latency before a program, ns (FlexECC Table 2: 0.8 µs for BCH and CRC); 0 = none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub encode_ns: u64,
    /// Detection only (CRC): a corrupted page is not corrected; in cache mode it is served
    /// again from the backend disk (FlexECC §3.1).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub detect_only: bool,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Operation timing in nanoseconds, resolved from the config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Array read (sense) latency per page type, ns.
    pub read_ns: [u64; 4],
    /// Program modes; index 0 is the default mode.
    pub modes: Vec<ProgramModeTiming>,
    /// ECC kinds; index 0 is the default ECC.
    pub eccs: Vec<EccTiming>,
    /// Block erase latency, ns.
    pub erase_ns: u64,
    /// Channel transfer of one page, ns.
    pub transfer_ns: u64,
}

impl Timing {
    /// Sense time of a read of a page of type `t` with ECC `ecc`, ns.
    #[inline]
    pub fn sense_ns(&self, t: PageType, ecc: u8) -> u64 {
        self.read_ns[t as usize] + self.eccs[ecc as usize].extra_sense_ns
    }
    /// Program time of a page of type `t` in mode `mode`, ns.
    #[inline]
    pub fn program_ns(&self, t: PageType, mode: u8) -> u64 {
        self.modes[mode as usize].program_ns[t as usize]
    }
    /// Decode time of ECC `ecc`, ns.
    #[inline]
    pub fn decode_ns(&self, ecc: u8) -> u64 {
        self.eccs[ecc as usize].decode_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo() -> Geometry {
        Geometry {
            channels: 4,
            chips_per_channel: 2,
            dies_per_chip: 2,
            planes_per_die: 2,
            blocks_per_plane: 10,
            pages_per_block: 6,
            page_size_bytes: 4096,
            cell: CellType::Tlc,
        }
    }

    proptest::proptest! {
        #[test]
        fn div_u32_is_exact(d in 1u32.., n: u32) {
            let f = DivU32::new(d);
            proptest::prop_assert_eq!(f.quot(n), n / d);
            proptest::prop_assert_eq!(f.modulo(n), n % d);
        }
    }

    #[test]
    fn div_u32_edges() {
        for d in [1u32, 2, 3, 7, 128, 129, 810, u32::MAX - 1, u32::MAX] {
            let f = DivU32::new(d);
            for n in [0u32, 1, d - 1, d, d.wrapping_add(1), u32::MAX - 1, u32::MAX] {
                assert_eq!((f.quot(n), f.modulo(n)), (n / d, n % d), "{n} / {d}");
            }
        }
    }

    #[test]
    fn cwdp_stripes_channel_first() {
        let g = geo();
        // Consecutive LPNs land on consecutive channels.
        let chans: Vec<u32> = (0..4)
            .map(|l| g.channel_of_die(g.die_of_plane(g.cwdp_plane(l))))
            .collect();
        assert_eq!(chans, vec![0, 1, 2, 3]);
        // LPN 4 goes to chip 1 of channel 0.
        let p = g.cwdp_plane(4);
        let ppn = p * g.blocks_per_plane * g.pages_per_block;
        assert_eq!(g.decode(ppn)[..4], [0, 1, 0, 0]);
        // Every plane is used exactly once per stripe of `planes` LPNs.
        let mut seen = vec![0; g.planes() as usize];
        for l in 0..g.planes() {
            seen[g.cwdp_plane(l) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c == 1));
    }

    #[test]
    fn decode_roundtrip() {
        let g = geo();
        for ppn in [0u32, 7, 59, 60, 1234, g.pages() as u32 - 1] {
            let [ch, chip, d, pl, blk, page] = g.decode(ppn);
            let die = (ch * g.chips_per_channel + chip) * g.dies_per_chip + d;
            let plane = die * g.planes_per_die + pl;
            let back = (plane * g.blocks_per_plane + blk) * g.pages_per_block + page;
            assert_eq!(back, ppn);
        }
    }

    #[test]
    fn word_line_view_matches_layout() {
        for order in [PageOrder::Sequential, PageOrder::Staggered] {
            for bits in 1..=4usize {
                let l = BlockLayout::new(12 * bits, bits, order);
                assert_eq!(l.word_lines(), 12);
                for w in 0..12 {
                    let pages = l.wl(w);
                    assert_eq!(pages.len(), bits);
                    for (b, &p) in pages.iter().enumerate() {
                        assert_eq!(l.word_line[p as usize] as usize, w);
                        assert_eq!(l.page_type[p as usize], PageType::of_bit(b, bits));
                    }
                }
            }
        }
    }

    #[test]
    fn staggered_layout_is_a_permutation() {
        for bits in 1..=4 {
            let pages = bits * 8;
            let l = BlockLayout::new(pages, bits, PageOrder::Staggered);
            let mut seen = std::collections::HashSet::new();
            for p in 0..pages {
                assert!(seen.insert((l.word_line[p], l.page_type[p] as u8)));
            }
            assert_eq!(seen.len(), pages);
        }
        let l = BlockLayout::new(6, 2, PageOrder::Staggered);
        let names: Vec<_> = (0..6)
            .map(|p| format!("{}{}", l.page_type[p].name(), l.word_line[p]))
            .collect();
        assert_eq!(names, ["lsb0", "lsb1", "msb0", "lsb2", "msb1", "msb2"]);
    }
}
