//! `[ftl]`, `[sched]` and `[dram]`: the controller — allocation, GC, mapping unit, scheduling
//! priority, multi-plane and suspension, the DRAM data cache.

use serde::{Deserialize, Serialize};

/// Where host writes are placed.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Allocation {
    /// Static striping over LPN: channel first, then chip, die, plane (CWDP).
    Static,
    /// Dynamic: each page program goes to the next plane round-robin.
    Dynamic,
    /// Super-pages, as firmware writes (issue 29): LPNs are striped over dies as with
    /// `static`; within a die the planes are allocated in lockstep — a superblock is the block
    /// of the same index on every plane, filled super-page by super-page (the same page offset
    /// on every plane; with one-shot programming the word line's pages on every plane) — so
    /// every program and GC copy is plane-parallel by construction, and GC collects whole
    /// superblocks. See [`crate::ftl`].
    Superpage,
}

/// GC victim selection policy.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum VictimPolicy {
    /// Fewest valid pages.
    Greedy,
    /// Oldest full block (in the order blocks were filled).
    Fifo,
    /// Maximise age·(1 − u)/(2u) (Kawaguchi et al.; age = time since the block filled).
    CostBenefit,
}

/// FTL options.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FtlConfig {
    /// `static` (CWDP) or `dynamic` allocation.
    pub allocation: Allocation,
    /// GC runs on a plane while its free blocks are fewer than this percent of its blocks.
    pub gc_threshold_pct: f64,
    /// Victim selection.
    pub gc_victim: VictimPolicy,
    /// Valid-page moves use copyback (no channel transfer) when true.
    pub copyback: bool,
    /// With `copyback`, a move still decodes and re-encodes the page in the controller
    /// (sense, decode + encode, program; no transfer). FlexECC §4.3 needs this: its GC saving
    /// is decode time, which a pure copy-back would hide (spec §1.5).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub copyback_decode: bool,
    /// Offsets beyond the logical capacity wrap around (DiskSim habit) instead of failing.
    pub wrap_offsets: bool,
    /// Number of write streams (open blocks per plane). Stream 0 = host, 1 = GC by default.
    pub streams: u32,
    /// Read-modify-write: a host write that covers part of a page whose LPN is mapped reads
    /// the page first and programs the merged page after the read (and its decode) ends, as
    /// SSD firmware and MQSim do; a partial write to an unmapped page programs at once.
    /// `false` (every paper preset): a partial write programs the full page at once.
    pub read_modify_write: bool,
    /// TRIM / discard: traces' discards (blkparse `D`, op `D` in the canonical CSV and
    /// SYSTOR) unmap the pages they cover whole; `false`: readers skip them and count them in
    /// `trace.non_request_skipped`, as before.
    pub trim: bool,
    /// With `allocation = "superpage"`: how long a die holds host writes that do not fill its
    /// super-page yet, µs (firmware keeps them in its write buffer until a super-page is
    /// full); after it, or at the end of the trace, the super-page is programmed padded. 0 =
    /// never hold (program what is queued, padded). Our reading: no public source gives a
    /// controller's flush timeout.
    pub superpage_wait_us: f64,
    /// Mapping unit, bytes: the logical page the FTL maps (its L2P entry), 0 = the flash page
    /// (`device.page_size_bytes`; every paper preset). A smaller unit that divides the page
    /// (e.g. 4096 on a 16 KiB-page part) is how firmware maps a current part: each unit has its
    /// own L2P entry, a flash page holds `page_size_bytes / mapping_unit_bytes` units written in
    /// arrival order, a 4 KiB host write is one unit (no read-modify-write of the page), a read
    /// senses the page once and moves only its units over the channel, and GC copies units.
    /// Needs `allocation = "superpage"` (the units fill super-pages). See [`crate::ftl`].
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub mapping_unit_bytes: u32,
    /// Where the L2P lives: `dram` (the whole table in the controller's DRAM; every paper
    /// preset and the default drive) or `cached` (DFTL, ASPLOS 2009: the table in flash as
    /// translation pages, `cmt_bytes` of it cached; see [`crate::ftl::cmt`]).
    #[serde(skip_serializing_if = "MappingTable::is_dram")]
    pub mapping: MappingTable,
    /// With `mapping = "cached"`: DRAM for cached mapping entries, bytes (8 B per entry: LPN
    /// and PPN). 0 with `mapping = "dram"`.
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub cmt_bytes: u64,
}

/// Where the L2P table lives (`ftl.mapping`).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MappingTable {
    /// The whole table in DRAM.
    #[default]
    Dram,
    /// Translation pages in flash, a cached mapping table in DRAM (DFTL).
    Cached,
}

impl MappingTable {
    fn is_dram(&self) -> bool {
        *self == MappingTable::Dram
    }
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

impl Default for FtlConfig {
    fn default() -> Self {
        FtlConfig {
            allocation: Allocation::Static,
            gc_threshold_pct: 5.0,
            gc_victim: VictimPolicy::Greedy,
            copyback: false,
            copyback_decode: false,
            wrap_offsets: false,
            streams: 2,
            read_modify_write: false,
            trim: false,
            superpage_wait_us: 1_000_000.0,
            mapping_unit_bytes: 0,
            mapping: MappingTable::Dram,
            cmt_bytes: 0,
        }
    }
}

/// Scheduling priority.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Host reads first, then background (GC, refresh, migration), then host writes.
    ReadFirst,
    /// First come, first served across all kinds.
    Fifo,
}

/// Scheduler options.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SchedConfig {
    /// `read_first` or `fifo`.
    pub priority: Priority,
    /// Multi-plane operations: reads of the same page offset, programs at the same page
    /// offset and erases on different planes of a die run as one operation (one array time,
    /// the transfers back to back); `false` (every paper preset): one plane at a time.
    pub multi_plane: bool,
    /// With `multi_plane`: host reads of *any* page offsets on different planes of a die run
    /// together (independent plane reads: Micron's 176-tier parts read "four independent
    /// multiplane page read addresses", Pekny et al., ISSCC 2022); `false`: only reads of the
    /// same page offset pair up (MQSim's multi-plane rule).
    pub independent_plane_reads: bool,
    /// Program/erase suspension: a host read queued at a die busy programming or erasing
    /// suspends the operation (after `suspend_program_us` / `suspend_erase_us`), runs, and the
    /// operation resumes (`resume_us`) with the array time it had left. Needs `read_first`.
    pub suspension: bool,
    /// Most suspensions of one program or erase (1 … 255).
    pub max_suspends_per_op: u32,
    /// Time to suspend a program before the read can start, µs.
    pub suspend_program_us: f64,
    /// Time to suspend an erase before the read can start, µs.
    pub suspend_erase_us: f64,
    /// Time to resume the suspended operation, µs (added to its remaining array time).
    pub resume_us: f64,
}

impl Default for SchedConfig {
    fn default() -> Self {
        SchedConfig {
            priority: Priority::ReadFirst,
            multi_plane: false,
            independent_plane_reads: false,
            suspension: false,
            max_suspends_per_op: 1,
            suspend_program_us: 0.0,
            suspend_erase_us: 0.0,
            resume_us: 0.0,
        }
    }
}

/// The controller's DRAM data cache (`[dram]`): a write-back cache of host pages. A host
/// write page is acknowledged once in DRAM (`access_us`) and flushed to flash at once in the
/// background (the flash program of a page rewritten while its flush runs is issued again when
/// that flush ends: rewrites coalesce); a host read of a cached page is served from DRAM.
/// Flushed pages stay cached (clean) until evicted, least recently used first. A write that
/// finds every entry dirty waits until a flush ends (back-pressure). Off (`capacity_bytes =
/// 0`, every paper preset): writes complete when their program ends, as before.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DramConfig {
    /// Cache size in bytes (whole pages; 0 = no cache).
    pub capacity_bytes: u64,
    /// Time to move one page between the host interface and DRAM, µs (a hit's service time).
    pub access_us: f64,
}

impl Default for DramConfig {
    fn default() -> Self {
        DramConfig {
            capacity_bytes: 0,
            access_us: 0.0,
        }
    }
}
