//! The `[osd]` config section: which object-device design runs and the sizes of its tables.
//!
//! Geometry and timing come from `[device]` and `[timing]` (the object device shares them with
//! the block device); replay mode, time scale and queue depth from `[host]`. Only what is
//! particular to the object device is here. Constants cite Guo ch. 4 and `specs/dmm.md`.

use serde::{Deserialize, Serialize};

use crate::config::device::{DeviceConfig, TimingConfig};
use crate::config::error::{check_range as range, invalid, ConfigError};
use crate::config::ftl::{DramConfig, SchedConfig};

/// Which device design (spec §3).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Design {
    /// The object-based NAND flash device of §4.1.2 (OBFS \[19\] when every DMM piece is off;
    /// DMM with MLGC, the virtual B+ tree and the diff cache switched on).
    Onfd,
    /// YAFFS2-like (spec §3 \[N\]): one object-header page per object, the file index (tnode
    /// tree) in RAM only, one log for every page type, greedy GC of the dirtiest chunk.
    Yaffs2,
}

impl Design {
    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Design::Onfd => "onfd",
            Design::Yaffs2 => "yaffs2",
        }
    }
}

/// `[osd]`: the object device.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct OsdConfig {
    /// `onfd` (OBFS / DMM) or `yaffs2`.
    pub design: Design,
    /// Blocks per chunk, the GC unit (§4.6.1: 2 MB = 4 × 512 KB blocks).
    pub chunk_blocks: u32,
    /// GC runs on a die while it has fewer clean chunks than this (A2 l.10 `T_chunk`; the
    /// thesis gives no value, §4.6.1 "low thresholds" \[N\]). At least 2: one chunk is the
    /// reserve GC writes its moves into.
    pub gc_clean_chunks: u32,
    /// Onode size, bytes (§4.2 "about one hundred bytes").
    pub onode_bytes: u32,
    /// Data pages an onode maps inline (at most two extents) before the object gets a B+ tree
    /// (spec §1 \[N\]: 2). The thesis's onode holds the inode and the index root's address
    /// (§4.1, F37); only "small-sized objects have data and onode stored together without
    /// per-object index" (§4.6.3.2), and DMMbench's "one large file" writes data, per-object
    /// index and onode with every 4 KB write and reads onode, index and data (§4.6.2). So the
    /// bound counts the object's pages, not its extents: the spec's "K = 2 inline extents" was
    /// read when an extent was one page; with multi-page extents two extents would map any
    /// sequentially written file and no large object would have an index (decided from this
    /// text before DMMbench was re-run; `docs/osd.md`).
    pub inline_pages: u32,
    /// Leaf entry ⟨offset, length, PA⟩, bytes (spec §1 \[N\]: 12).
    pub leaf_entry_bytes: u32,
    /// Internal entry ⟨offset, child PA⟩ of the extent tree, bytes (§4.4.3.3: 7).
    pub internal_entry_pa_bytes: u32,
    /// Internal entry ⟨offset, child VA⟩ of the virtual tree, bytes (§4.4.3.3: 6).
    pub internal_entry_va_bytes: u32,
    /// MLGC (§4.4.2): byte-level GC of packed onodes. `false` = OBFS: an onode update migrates
    /// the other valid onodes of its page at once (§4.2).
    pub mlgc: bool,
    /// Byte-level GC table size, bytes (8 B per ⟨PPN, offset, length⟩ entry, §4.4.2);
    /// §4.6.3.4's DMM default is 4 MB (§4.6.3.2–3 use 1 MB). 0 with `mlgc` evicts at once.
    pub mlgc_table_bytes: u64,
    /// Virtual B+ tree (§4.4.3): internal entries and the onode hold VAs mapped by a DRAM page
    /// table; a node rewrite or move changes only the page table.
    pub virtual_tree: bool,
    /// Most VAs the two-level page table maps (spec §2 \[N\]: 4 B PTE, 1 MB at 2 TB / 8 KB ⇒
    /// 262,144).
    pub page_table_max_vas: u32,
    /// Diff cache size, bytes (§4.4.4; DMM default 2 MB, §4.6.3.4); 0 = no diff cache: the
    /// index and onode are written at the end of every command (A2).
    pub diff_cache_bytes: u64,
    /// Updated entries of one leaf beyond which the whole leaf page is cached (§4.4.4; the
    /// thesis gives no value, spec \[N\]: 16).
    pub diff_cache_leaf_threshold: u32,
    /// DRAM size of one cached leaf entry, bytes (spec \[N\]: 12).
    pub diff_cache_entry_bytes: u32,
    /// Tail buffers for new partial-page data (§4.5.4.1: "stored in a page-size data buffer");
    /// the least recently started one is flushed when all are taken (the thesis gives no
    /// count \[N\]).
    pub tail_buffers: u32,
    /// Pages the capacitor-backed flush may program at power loss (spec §5 \[N\]).
    pub backup_flush_pages: u32,
}

impl Default for OsdConfig {
    fn default() -> Self {
        OsdConfig {
            design: Design::Onfd,
            chunk_blocks: 4,
            gc_clean_chunks: 2,
            onode_bytes: 100,
            inline_pages: 2,
            leaf_entry_bytes: 12,
            internal_entry_pa_bytes: 7,
            internal_entry_va_bytes: 6,
            mlgc: false,
            mlgc_table_bytes: 0,
            virtual_tree: false,
            page_table_max_vas: 262_144,
            diff_cache_bytes: 0,
            diff_cache_leaf_threshold: 16,
            diff_cache_entry_bytes: 12,
            tail_buffers: 64,
            backup_flush_pages: 64,
        }
    }
}

impl OsdConfig {
    /// Check the section against itself and against the rest of the config (the device
    /// features the object device does not model are errors naming the setting to use).
    pub fn validate(
        &self,
        d: &DeviceConfig,
        sched: &SchedConfig,
        timing: &TimingConfig,
        dram: &DramConfig,
    ) -> Result<(), ConfigError> {
        range("osd.chunk_blocks", self.chunk_blocks, 1, 1 << 16)?;
        range("osd.gc_clean_chunks", self.gc_clean_chunks, 2, 1 << 16)?;
        range("osd.onode_bytes", self.onode_bytes, 16, d.page_size_bytes)?;
        range("osd.inline_pages", self.inline_pages, 0, 2)?;
        range("osd.leaf_entry_bytes", self.leaf_entry_bytes, 4, 64)?;
        range(
            "osd.internal_entry_pa_bytes",
            self.internal_entry_pa_bytes,
            4,
            64,
        )?;
        range(
            "osd.internal_entry_va_bytes",
            self.internal_entry_va_bytes,
            4,
            64,
        )?;
        range(
            "osd.page_table_max_vas",
            self.page_table_max_vas,
            1,
            1 << 30,
        )?;
        range(
            "osd.diff_cache_leaf_threshold",
            self.diff_cache_leaf_threshold,
            1,
            1 << 16,
        )?;
        range(
            "osd.diff_cache_entry_bytes",
            self.diff_cache_entry_bytes,
            1,
            1024,
        )?;
        range("osd.tail_buffers", self.tail_buffers, 1, 1 << 20)?;
        range(
            "osd.backup_flush_pages",
            self.backup_flush_pages,
            0,
            1 << 20,
        )?;
        if self.backup_flush_pages < 3 {
            // The device keeps its uncommitted state 3 pages below the budget (issue 17).
            return Err(invalid(
                "osd.backup_flush_pages",
                self.backup_flush_pages,
                "the capacitor flush needs room for one command's tail buffer and records \
                 beyond what the device keeps uncommitted (3 pages): use 3 or more",
            ));
        }
        range("osd.mlgc_table_bytes", self.mlgc_table_bytes, 0, 1 << 36)?;
        range("osd.diff_cache_bytes", self.diff_cache_bytes, 0, 1 << 36)?;
        let ps = d.page_size_bytes;
        for (key, e) in [
            ("osd.leaf_entry_bytes", self.leaf_entry_bytes),
            ("osd.internal_entry_pa_bytes", self.internal_entry_pa_bytes),
            ("osd.internal_entry_va_bytes", self.internal_entry_va_bytes),
        ] {
            if ps / e < 4 {
                return Err(invalid(
                    key,
                    e,
                    format!(
                        "a {ps}-byte page holds fewer than 4 entries: a B+ tree node needs at \
                         least 4 (lower the entry size or raise device.page_size_bytes)"
                    ),
                ));
            }
        }
        if !self.mlgc && self.mlgc_table_bytes > 0 {
            return Err(invalid(
                "osd.mlgc_table_bytes",
                self.mlgc_table_bytes,
                "a byte-level GC table without MLGC: set osd.mlgc = true, or 0 for OBFS",
            ));
        }
        if self.design == Design::Yaffs2 {
            for (key, on) in [
                ("osd.mlgc", self.mlgc),
                ("osd.virtual_tree", self.virtual_tree),
                ("osd.diff_cache_bytes", self.diff_cache_bytes > 0),
            ] {
                if on {
                    return Err(invalid(
                        key,
                        "on",
                        "YAFFS2 has no packed onodes, on-flash index or diff cache: turn it off \
                         or use osd.design = \"onfd\"",
                    ));
                }
            }
        }
        if d.planes_per_die != 1 {
            return Err(invalid(
                "device.planes_per_die",
                d.planes_per_die,
                "the object device (ObjNandSim, §4.5.3) has one plane per die: use 1",
            ));
        }
        if d.blocks_per_plane == 0 {
            return Err(invalid(
                "device.blocks_per_plane",
                0,
                "the object device is sized by its geometry, not by a trace: set the blocks per \
                 die (Table 16: 8192)",
            ));
        }
        if !d.blocks_per_plane.is_multiple_of(self.chunk_blocks) {
            return Err(invalid(
                "osd.chunk_blocks",
                self.chunk_blocks,
                format!(
                    "device.blocks_per_plane = {} is not a whole number of chunks: use a divisor",
                    d.blocks_per_plane
                ),
            ));
        }
        let chunks = d.blocks_per_plane / self.chunk_blocks;
        if chunks < self.gc_clean_chunks + 4 {
            return Err(invalid(
                "osd.gc_clean_chunks",
                self.gc_clean_chunks,
                format!(
                    "a die has {chunks} chunks: GC needs its clean-chunk reserve plus one open \
                     chunk per page type; use a smaller chunk or more blocks"
                ),
            ));
        }
        let pages = d.blocks_per_plane as u64
            * d.pages_per_block as u64
            * d.channels as u64
            * d.chips_per_channel as u64
            * d.dies_per_chip as u64;
        if pages >= u32::MAX as u64 {
            return Err(invalid(
                "device.blocks_per_plane",
                d.blocks_per_plane,
                "the object device numbers pages with 32 bits: fewer than 2^32 pages in all",
            ));
        }
        if sched.multi_plane || sched.suspension || timing.one_shot_program {
            return Err(invalid(
                if sched.multi_plane {
                    "sched.multi_plane"
                } else if sched.suspension {
                    "sched.suspension"
                } else {
                    "timing.one_shot_program"
                },
                true,
                "the object device does not model it: set it to false",
            ));
        }
        if dram.capacity_bytes > 0 {
            return Err(invalid(
                "dram.capacity_bytes",
                dram.capacity_bytes,
                "the object device caches metadata in its diff cache, never data (§4.4.4): \
                 use 0 and osd.diff_cache_bytes",
            ));
        }
        Ok(())
    }
}
