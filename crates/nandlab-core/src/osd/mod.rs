//! The object-based flash device (OSD) front end: object commands in, flash transactions out,
//! on the shared flash executor ([`crate::exec`]) and per-die scheduler ([`crate::sched`]).
//!
//! Source: Guo's dissertation, chapter 4 (`papers/guo-dissertation-dpa-flexlevel-dmm.txt`), and
//! the implementation spec `specs/dmm.md`. The command set is the thesis's Table 15.
//!
//! ```text
//!  file-level trace (fsjsonl) ─► host objfs (namespace, page cache) ─┐
//!  DMMbench generator ([`bench`]) ───────────────────────────────────┼─► OsdCommand stream
//!                                                                    ▼
//!     osd::device (onodes, extent / virtual B+ tree, chunks, GC, MLGC, diff cache) ─► Plan
//!                                                                    ▼
//!     osd::replay: stages of the plan ─► exec::Executor + sched::Sched (dies, channels)
//! ```
//!
//! # Using it
//!
//! ```
//! use nandlab_core::config::load;
//! use nandlab_core::osd::{run, OsdCommand, OsdOp, RunOpts};
//!
//! let cfg = load(
//!     r#"
//! [device]
//! cell = "slc"
//! channels = 4
//! pages_per_block = 64
//! page_size_bytes = 2048
//! blocks_per_plane = 64
//! [timing]
//! read_us = [50.0]
//! program_us = [900.0]
//! erase_us = 1500.0
//! channel_mt_s = 100000.0
//! [host]
//! mode = "closed"
//! queue_depth = 1
//! [osd]
//! "#,
//!     "<doc>",
//!     &[],
//! )
//! .unwrap();
//! let cmd = |op| Ok(OsdCommand { arrival_ns: 0, op, precondition: false });
//! let cmds = vec![
//!     cmd(OsdOp::Create { oid: 7 }),
//!     cmd(OsdOp::Write { oid: 7, offset_bytes: 0, len_bytes: 4096 }),
//! ];
//! let report = run(&cfg, cmds, &RunOpts::default()).unwrap();
//! // OBFS (every DMM piece off): CREATE puts an onode version into the onode write buffer;
//! // the 4 KiB write programs two data pages (in parallel on two dies), then buffers the
//! // onode again, whose two inline extents map them. The buffer (20 onodes of 100 B to a
//! // 2 KiB page) is programmed when full, on a FLUSH of the object, and at power loss.
//! assert_eq!(report.page_writes.data.host, 2);
//! assert_eq!(report.page_writes.onode.host, 0);
//! assert_eq!(report.gc.onodes_buffered, 2);
//! assert_eq!(report.page_writes.index.total, 0);
//! ```
//!
//! Host side: [`objfs`] turns a file-level trace ([`crate::trace::fsjsonl`]) into object
//! commands (spec `dmm.md` §5).
//!
//! API (stable; the CLI and the Python binding call these):
//!
//! * [`run`]`(cfg: &Config, commands: impl IntoIterator<Item = Result<OsdCommand,
//!   TraceError>>, opts: &RunOpts) -> Result<OsdReport, NandlabError>` — replay, open loop by
//!   arrival × `host.time_scale` or closed loop at `host.queue_depth`; preconditioning
//!   commands (`precondition = true`) first, untimed; [`OsdReport`] is `serde::Serialize`
//!   (keys in `docs/report.md`);
//! * [`replay()`] — the same on a [`Device`] the caller keeps (tests inspect it);
//! * [`bench::DmmBench`]`::new(pattern, request_bytes, total_bytes, seed).commands()` —
//!   DMMbench;
//! * [`crash_test`]`(cfg, &[OsdCommand], cuts, seed, Variant) -> Result<CrashReport, _>` —
//!   seeded power cuts, recovery ([`crash::recover`]) and the check against acknowledged
//!   writes; [`Variant::FULL`] or a negative control.
//!
//! # The data path (A2, §4.5.4.2)
//!
//! A WRITE (`nand_write_obj`) is planned in stages, each a set of flash operations that run
//! in parallel, a stage starting when the one before has finished:
//!
//! 1. read the onode (global index → onode page), unless DRAM holds it;
//! 2. read the index path root → leaf (one stage per level), unless cached;
//! 3. read-before-write of a partial page over existing data (§4.5.4.1);
//! 4. program the data pages, round-robin over dies (§4.6.2) — new partial-page data waits in
//!    a page-size tail buffer until the page is full, the object is flushed, or the buffer is
//!    needed (§4.5.4.1);
//! 5. program the dirty index nodes, all in one stage (A2 l.24–39 flushes an object's index
//!    as one operation; addresses are allocated first, so parents hold the new ones): in the
//!    extent tree every written node dirties its parent and the root its onode (the cascade
//!    of F27); in the virtual tree only the page table changes (§4.4.3);
//! 6. put the onodes into the onode write buffer, packed `page / onode_bytes` to a page
//!    (A2 l.40–48; §4.5.4.1's page-size buffer, §4.6.2 "several write operations to onodes
//!    ... incur one page write"): it is programmed when full, so the onodes of many commands
//!    share a program; also on a FLUSH of an object with a version in it, when GC under the
//!    extent tree needs the index pages it pins, and by the capacitor at power loss
//!    (readings \[N\], issue 30). Every version takes a slot (a newer one of the same object
//!    leaves a stale slot), so onode writes follow the onode updates, as F39(c) and F40(c)
//!    show; per-object index pages are whole nodes and are not buffered (their merging is
//!    the diff cache's, §4.4.4).
//!
//! GC runs when the die about to receive a page has fewer clean chunks than
//! `osd.gc_clean_chunks` (A2 l.10/26/42): greedy (fewest valid pages, §4.5.4.1), its reads,
//! moves and erases become stages before the program that needed the space, and the moved
//! pages' metadata updates join the command's index and onode stages (§4.5.4.2). With the diff
//! cache (§4.4.4) stages 5–6 are deferred: the dirty entries, nodes and onodes stay in DRAM
//! until eviction, which runs at the end of the command that overfilled the cache.
//!
//! READ: onode, index path, data pages (a 4 KiB read ≈ 3 page reads, §4.6.2). GET_ATTRIBUTE:
//! the onode. SET_ATTRIBUTE: the onode read, then an onode write. REMOVE and TRUNCATE
//! invalidate data and free index nodes (the thesis does not describe them, spec §1 \[N\]);
//! REMOVE writes a tombstone onode.
//!
//! Every page carries OOB metadata (F34): type, object id, SN (global, +1 per page program),
//! and per type the page index and valid length (data), VA (index) or onode count (onode).
//!
//! # Readings the thesis leaves open (\[N\], as `specs/dmm.md` lists them)
//!
//! * Onode = 100 B (§4.2 "about one hundred"), 20 per 2 KiB page; ≤ 2 extents inline in the
//!   onode before an object gets a B+ tree (spec §1).
//! * Leaf entry 12 B ⟨offset, length, PA⟩; internal entry 7 B (PA) / 6 B (VA) (§4.4.3.3). A
//!   leaf entry is a multi-page extent (issue 30; F40's three page reads for a 4 KB read of
//!   DMMbench's large file, and a 32 KB read costing the same, need one): the host data
//!   stream numbers its pages across the dies of a *stripe* (one open data chunk per die),
//!   so consecutive pages written round-robin over the dies are consecutive addresses and
//!   the data stays striped; page `j` of an extent at PA `p` is `Stripes::nth(p, j)`. A
//!   page overwritten, moved by GC or unmapped cuts its extent; a page written right after
//!   (or before) an extent at the next stripe address joins it. GC's data moves go to a
//!   fourth stream (one open chunk per die) so the host stripes stay in step. Each data
//!   page's OOB carries its chunk's stripe number and first die, so recovery rebuilds the
//!   stripe table from flash; every page an extent reaches is checked against its OOB
//!   (object, page index) before recovery takes it ([`device`]'s `stripes` module).
//! * Chunk = `chunk_blocks` consecutive blocks of one die; each (die, page type) has one open
//!   chunk; GC is per die; `T_chunk` = `gc_clean_chunks` (no value in §4.6.1).
//! * B+ tree: split in half; merge into the left (else right) sibling under half full when the
//!   two fit in one node; no redistribution; a root with one child collapses.
//! * Table 13, row "insertion with split": the thesis gives `2l+1+(H−1)` for the extent tree.
//!   The split nodes, their new siblings and the parent of the top split are `2l+1` pages, and
//!   the cascade above that parent is `H−l−1` more, so the count is `l+H` (its own worst case
//!   `2H+1` at `l = H` contradicts `2l+1+(H−1) = 3H`). We implement the tree and report the
//!   count it gives; the test states both.
//! * Diff cache: 12 B per cached leaf entry, a whole page beyond 16 entries of one leaf, 2 KiB
//!   per cached internal page, 100 B per dirty onode; a *hit* is an index operation (a
//!   command that looks up or updates an object's tree) served without reading an index page
//!   from flash. Cached internal pages whose node is later merged away are not dropped at
//!   once (they leave at eviction).
//! * Tail buffers: `tail_buffers` page buffers, the least recently started flushed when all
//!   are in use.
//! * GC of an onode page moves its valid onodes only (for OBFS a valid onode page is wholly
//!   valid, so this is a page move).
//! * YAFFS2-like (spec §3): one header page per object rewritten on every attribute change,
//!   the file index in RAM only (reported as 4 B per mapped page), one log for all types,
//!   partial pages programmed at once (read-modify-write over old data).
//! * Power failure (§4.4.5; [`crash`]): the capacitor flush writes the tail buffers, then
//!   IC_OBJ and the DRAM onode of every object with state newer than its last committed onode
//!   (not only the dirty onodes of the diff cache: also onodes queued for writing when the
//!   power failed). Comparisons in Algorithm 1 use the content SN (`data_sn`, kept by GC
//!   moves). Tombstones stay valid (GC moves them) so an older onode cannot resurface; a
//!   removed object's tail buffer stays until its tombstone is durable. GC commits the
//!   metadata of what it moved before erasing its victim, except with the virtual tree and
//!   the diff cache (page table, OOB and re-apply cover it). The back-up set always fits
//!   `osd.backup_flush_pages` (the thesis's premise, §4.4.5; how it is kept so is not
//!   described): an O(1) upper bound of it (tail buffers in use + packed IC_OBJ entries and
//!   onodes of the objects with uncommitted state) is kept within the budget less 3 pages by
//!   writing back the oldest uncommitted objects after each command and, with the virtual
//!   tree and the diff cache, by committing GC-moved objects between moves (issue 17).
//!   Under the diff cache TRUNCATE
//!   commits the object's metadata at once: re-applying data from the OOB cannot undo a
//!   truncation. Recovery rebuilds a running device (valid counts by reachability; a chunk
//!   programmed up to a write pointer is reopened, any other used chunk is closed) and writes
//!   back each IC_OBJ object's index and onode; the capacitor flush stays valid until that is
//!   done and an object whose newest onode is newer than its LCS leaves IC_OBJ, so an
//!   interrupted recovery is simply redone. An index page superseded after an object's
//!   last commit stays on flash (its chunk is not a GC victim) until its next commit, so the
//!   committed tree a cut falls back to is whole. A commit is an onode write or, under the
//!   virtual tree (the root VA in the onode does not change), a flush that leaves the
//!   object's tree clean with no onode change and no buffered data; IC_OBJ records the SN
//!   of the last commit as the LCS (issue 17: before, such objects stayed uncommitted until
//!   a rare onode write, their old index pages pinned from GC). A commit
//!   (A2's flush, a GC commit, a diff-cache eviction) writes every dirty node of the object
//!   first, again if a GC inside the flush dirtied some; a GC move that finds no clean chunk
//!   uses another stream's open chunk of the die (issue 17). YAFFS2-like recovery is a tag
//!   scan. A truncate that shrinks an object writes its header as a *shrink header*
//!   (YAFFS2's `is_shrink`, learnt from its public documentation and mailing list): the scan
//!   cuts every data page older than a shrink header to that header's size, so a truncated
//!   page cannot come back from an older chunk. YAFFS2 keeps a block holding a shrink header
//!   from GC until no older block holds discarded pages; GC here is per die, where that rule
//!   can leave a die without a victim, so GC instead copies a superseded shrink header out of
//!   its victim (content SN and flag kept, the copy not valid) while a chunk older than the
//!   truncate holds discarded pages, and drops it after (issue 17). The crash tests include
//!   YAFFS2-like.
//! * Response time is the device's time per command; data-page transfers use
//!   `timing.channel_mt_s` (Table 16 has none: its preset sets the fastest rate the config allows, 100,000 MT/s: 20 ns per 2 KiB page).

pub mod bench;
pub mod command;
pub mod config;
pub mod crash;
pub mod device;
pub mod mixed;
pub mod objfs;
pub mod replay;
pub mod tree;

pub use command::{ObjectId, OsdCommand, OsdOp};
pub use config::{Design, OsdConfig};
pub use crash::{crash_test, crash_test_with, CrashOpts, CrashReport, Variant};
pub use device::{Device, OsdError};
pub use replay::{replay, run, OsdReport, RunOpts};
