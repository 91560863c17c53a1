//! Power cuts on the object device (spec `dmm.md` §7 item 6, issues 17 and 30): recovery keeps
//! every acknowledged write under every design, within the capacitor's budget, and the crash
//! test catches the broken variants. Moved from `osd.rs`, whose devices and designs it uses.

use crate::osd::{as_commands, cfg, design_cfg, preset, DESIGNS};
use nandlab_core::osd::mixed::random_ops;
use nandlab_core::osd::{Device, OsdCommand};

/// Power cuts at seeded flash operations (mid-program, mid-erase, GC, MLGC and diff-cache
/// eviction among them): recovery gives back every acknowledged byte, no removed object, for
/// every design; a second cut inside recovery changes nothing.
#[test]
fn crash_recovery_keeps_every_acknowledged_write() {
    use nandlab_core::osd::{crash_test, Variant};
    let mut classes = std::collections::BTreeMap::new();
    // YAFFS2-like included: a truncate writes a shrink header, which its scan applies to
    // every older data page and GC keeps while older discarded pages exist (issue 17).
    for (name, osd) in DESIGNS.iter() {
        let c = design_cfg(16, osd, "backup_flush_pages = 16");
        let cmds = as_commands(&random_ops(5, 4000, 12, 512));
        let r = crash_test(&c, &cmds, 60, 1, Variant::FULL).unwrap();
        eprintln!(
            "{name}: {} failures, {} table, {} replay, {} continued; {:?}",
            r.failures,
            r.table_failures,
            r.replay_failures,
            r.continued_commands,
            r.failure_examples
        );
        assert_eq!(r.cuts, 60);
        assert_eq!(
            r.failures, 0,
            "{name}: {} of {} cuts lost data: {:?}",
            r.failures, r.cuts, r.failure_examples
        );
        assert_eq!(r.recovery_cut_mismatches, 0);
        assert!(r.recovery_cuts > 0);
        // The recovered device's tables equal the truth derived from flash, its valid counts
        // reachability, and replay goes on on it to the end of the commands.
        assert_eq!(r.table_failures, 0, "{name}: {:?}", r.failure_examples);
        assert_eq!(r.replay_failures, 0, "{name}: {:?}", r.failure_examples);
        assert!(
            r.continued_commands > 60 * 1000,
            "{name}: {}",
            r.continued_commands
        );
        assert_eq!(r.backup_over_budget, 0, "{name}");
        for (k, n) in r.cuts_by_op {
            *classes.entry(k).or_insert(0) += n;
        }
    }
    // Cuts landed in GC moves, erases, and the metadata writes of every kind.
    for want in [
        "_gc",
        "erase",
        "program_index",
        "program_onode",
        "program_data",
    ] {
        assert!(
            classes.keys().any(|k| k.contains(want)),
            "{want}: {classes:?}"
        );
    }
}

/// Issue 17: many small objects whose metadata the diff cache keeps in DRAM (far more
/// dirty onodes than the capacitor can program). The device writes back early so that the
/// capacitor-backed flush always fits `osd.backup_flush_pages` (§4.4.5; spec §7 item 6): no
/// cut is over the budget and none loses acknowledged data.
#[test]
fn crash_with_many_small_objects_stays_within_the_backup_budget() {
    use nandlab_core::osd::{crash_test, Variant};
    let osd = "mlgc = true\nmlgc_table_bytes = 256\nvirtual_tree = true\n\
               diff_cache_bytes = 16384\nchunk_blocks = 2\ntail_buffers = 4\n\
               backup_flush_pages = 16";
    let c = cfg(512, 24, osd);
    let cmds = as_commands(&random_ops(11, 3000, 300, 512));
    let r = crash_test(&c, &cmds, 60, 3, Variant::FULL).unwrap();
    assert_eq!(r.cuts, 60);
    assert_eq!(r.backup_over_budget, 0, "max {} pages", r.backup_pages_max);
    assert_eq!(
        r.failures, 0,
        "{} of {} cuts lost data: {:?}",
        r.failures, r.cuts, r.failure_examples
    );
}

/// The negative controls of spec §7 item 6 fail the same test: no capacitor flush, no LCS
/// rollback, no data re-apply.
#[test]
fn crash_test_catches_the_broken_variants() {
    use nandlab_core::osd::{crash_test, Variant};
    // Small nodes (8 entries): leaves split and merge often, also inside evictions.
    let osd = "mlgc = true\nmlgc_table_bytes = 256\nvirtual_tree = true\ndiff_cache_bytes = 4096\n\
               leaf_entry_bytes = 64\ninternal_entry_va_bytes = 64";
    let c = design_cfg(24, osd, "backup_flush_pages = 16");
    let cmds = as_commands(&random_ops(5, 1500, 12, 512));
    for v in [
        Variant {
            capacitor: false,
            ..Variant::FULL
        },
        Variant {
            rollback: false,
            ..Variant::FULL
        },
        Variant {
            reapply: false,
            ..Variant::FULL
        },
        Variant {
            onode_buffer: false,
            ..Variant::FULL
        },
    ] {
        let r = crash_test(&c, &cmds, 200, 2, v).unwrap();
        assert!(r.failures > 0, "{v:?} went unnoticed in {} cuts", r.cuts);
    }
    // The onode write buffer left out of the capacitor flush loses OBFS's onode updates too.
    let obfs = design_cfg(24, "", "backup_flush_pages = 16");
    let v = Variant {
        onode_buffer: false,
        ..Variant::FULL
    };
    let r = crash_test(&obfs, &cmds, 200, 2, v).unwrap();
    assert!(
        r.failures > 0,
        "OBFS {v:?} went unnoticed in {} cuts",
        r.cuts
    );
    // Valid counts and the page table taken from what flash left instead of reachability:
    // the table checks catch it.
    let v = Variant {
        reachability: false,
        ..Variant::FULL
    };
    let r = crash_test(&c, &cmds, 200, 2, v).unwrap();
    assert_eq!(r.failures, 0, "{:?}", r.failure_examples);
    assert!(
        r.table_failures > 0,
        "{v:?} went unnoticed in {} cuts",
        r.cuts
    );
}

/// Issue 17: on DMMbench random 4 KiB writes the LCS rollback matters only where an index
/// page newer than the object's last onode is on flash: under the Table 16 diff cache
/// (2 MiB) the single benchmark file's index is never written at all (the cache holds it,
/// the capacitor flush and the data re-apply cover it), and leaf rewrites alone are covered
/// by the re-apply. With F44's smallest diff cache (16 KiB) evictions write leaves and their
/// splits (in the sequential fill), and cuts drawn among the index programs land between a
/// split leaf and its parent: the variant without rollback loses data there, the full
/// design does not.
/// DMM with F44's smallest diff cache (16 KiB) on a small device, and DMMbench random 4 KiB
/// writes (32 MiB moved) on a 4 MiB file: index pages are written throughout, so rollback
/// matters.
fn small_dmm_16k_random() -> (
    nandlab_core::config::Config,
    nandlab_core::osd::bench::DmmBench,
) {
    use nandlab_core::osd::bench::{DmmBench, Pattern};
    let c = preset(
        "dmm",
        &[
            "device.blocks_per_plane=24",
            "device.pages_per_block=64",
            "osd.tail_buffers=8",
            "osd.diff_cache_bytes=16384",
        ],
    );
    let mut b = DmmBench::new(Pattern::RandWrite, 4096, 32 << 20, 42);
    b.file_bytes = 4 << 20;
    (c, b)
}

#[test]
fn crash_test_catches_no_rollback_on_dmmbench_random() {
    use nandlab_core::osd::{crash_test_with, CrashOpts, Variant};
    let (c, b) = small_dmm_16k_random();
    let cmds: Vec<OsdCommand> = b.commands().collect();
    let opts = CrashOpts {
        cut_only: Some("program_index".into()),
        ..CrashOpts::default()
    };
    let full = crash_test_with(&c, &cmds, 300, 7, Variant::FULL, &opts).unwrap();
    assert!(full.cut_candidates > 0);
    assert_eq!(full.failures, 0, "{:?}", full.failure_examples);
    let broken = Variant {
        rollback: false,
        ..Variant::FULL
    };
    let r = crash_test_with(&c, &cmds, 300, 7, broken, &opts).unwrap();
    assert!(
        r.failures > 0,
        "no rollback went unnoticed in {} cuts",
        r.cuts
    );
}

/// Issue 17: a separator at a non-first position of a clean internal node never changes in
/// DRAM alone. Removing a leaf's smallest key, then inserting below its new smallest key,
/// used to raise the root's separator without dirtying the root, so the root's flash copy
/// routed those keys to another leaf than the DRAM tree put them in.
#[test]
fn a_clean_parent_keeps_its_separators_when_a_child_s_smallest_key_changes() {
    use nandlab_core::osd::tree::{leaf_val, Change, Nodes};
    let mut t = Nodes::new(4, 4);
    let mut root = t.alloc(0, 0);
    let mut ch = Change::default();
    for k in [0u64, 10, 20, 30, 40] {
        t.upsert(&mut root, k, leaf_val(k as u32, 1), &mut ch);
    }
    assert_eq!(ch.splits, 1);
    assert_eq!(t.nodes[root as usize].keys, vec![0, 20]);
    // Everything written: every node clean, as after a flush.
    for id in 0..t.nodes.len() as u32 {
        if !t.nodes[id as usize].free {
            t.clean(id);
        }
    }
    t.remove(&mut root, 20, &mut ch);
    t.upsert(&mut root, 25, leaf_val(25, 1), &mut ch);
    let r = &t.nodes[root as usize];
    assert_eq!(r.dirty, 0, "the root was not rewritten");
    assert_eq!(
        r.keys,
        vec![0, 20],
        "so its separators are those of its flash copy"
    );
    for k in [0u64, 10, 25, 30, 40] {
        assert_eq!(t.get(root, k), Some(leaf_val(k as u32, 1)), "key {k}");
    }
    assert_eq!(t.get(root, 20), None);
}

/// Issue 17, the case that found it: DMMbench random with a 16 KiB diff cache, power cut at
/// flash operation 9,070 (an index program of a diff-cache eviction). Recovery drops every
/// entry of one leaf (their data pages were superseded after the LCS and erased by GC) and
/// re-applies the newer pages into it; the recovered tables must equal flash. Before the fix
/// the root's separator for that leaf was 342 in DRAM and 340 on flash.
#[test]
fn recovery_re_apply_into_an_emptied_leaf_keeps_the_root_equal_to_flash() {
    use nandlab_core::osd::crash::recover;
    use nandlab_core::osd::{OsdError, Variant};
    let (c, b) = small_dmm_16k_random();
    let mut dev = Device::new(&c).unwrap();
    dev.record_contents();
    dev.cut_at = 9070;
    let mut cut = false;
    for (i, cmd) in b.commands().enumerate() {
        dev.write_id = i as u64 + 1;
        match dev.execute(&cmd.op) {
            Ok(()) => {}
            Err(OsdError::PowerCut { .. }) => {
                cut = true;
                break;
            }
            Err(e) => panic!("command {i}: {e}"),
        }
    }
    assert!(cut);
    dev.power_loss(true);
    let img = dev.into_image();
    let leaf_cap = 2048 / 12;
    let rec = recover(&img, Variant::FULL, leaf_cap);
    assert!(rec.reapplied_pages > 0);
    let mut d = Device::from_recovery(&c, img, &rec).unwrap();
    d.finish_recovery(&rec).unwrap();
    d.check_reachability().unwrap();
    d.check_tables().unwrap();
}

/// Issue 17: the crash harness runs every cut on one reference and rolls it back; the journal
/// restores it exactly (creates, removes, writes and truncates).
#[test]
fn the_journaled_reference_rolls_back_exactly() {
    use nandlab_core::osd::crash::Reference;
    let ops = random_ops(3, 3000, 20, 512);
    let mut r = Reference::default();
    for (i, op) in ops[..1000].iter().enumerate() {
        r.apply(op, i as u64 + 1, 512);
    }
    let base = r.objects.clone();
    r.journal();
    for (i, op) in ops[1000..2000].iter().enumerate() {
        r.apply(op, i as u64 + 1001, 512);
    }
    let mid = r.objects.clone();
    let mark = r.mark();
    r.apply(&ops[2000], 2001, 512);
    let after = r.objects.clone();
    r.undo_to(mark);
    assert_eq!(r.objects, mid);
    r.apply(&ops[2000], 2001, 512);
    assert_eq!(r.objects, after);
    r.undo_to(0);
    assert_eq!(r.objects, base);
}

/// The crash test's default workload (the mixed commands on the small device, issue 30)
/// reaches every class of flash operation its help names: host programs of each page type,
/// GC of data, index and onodes, erases, and — where the design has them — MLGC eviction and
/// diff-cache eviction; `cut_only` finds each class.
#[test]
fn crash_default_workload_reaches_every_operation_class() {
    use nandlab_core::osd::{crash_test_with, CrashOpts, Variant};
    for (name, want) in [
        (
            "dmm",
            &[
                "program_data_host",
                "program_index",
                "program_onode",
                "_gc",
                "mlgc",
                "cache_evict",
                "erase",
            ][..],
        ),
        (
            "obfs",
            &[
                "program_data_host",
                "program_index_host",
                "program_onode_host",
                "_gc",
                "erase",
            ][..],
        ),
        (
            "yaffs2",
            &["program_data_host", "program_onode", "_gc", "erase"][..],
        ),
        (
            "dmm-extent",
            &["program_data_host", "program_index", "_gc", "erase"][..],
        ),
    ] {
        let (p, extra) = match name {
            "dmm-extent" => ("dmm", &["osd.virtual_tree=false"][..]),
            _ => (name, &[][..]),
        };
        let c0 = preset(p, extra);
        let mut o = nandlab_core::api::crash_small_device(&c0);
        o.extend(extra.iter().map(|s| s.to_string()));
        let o: Vec<&str> = o.iter().map(String::as_str).collect();
        let c = preset(p, &o);
        let cmds = nandlab_core::osd::mixed::commands(c.seed, 6000, 48, 2048);
        // 300 cuts (30 second cuts in recovery): before GC committed its moves during
        // recovery's write-back and programmed the onode write buffer before erasing, 6 of
        // them recovered a different state on the DMM preset, and 2 on the extent tree.
        let cuts = if p == "dmm" { 300 } else { 20 };
        let r = crash_test_with(&c, &cmds, cuts, 7, Variant::FULL, &CrashOpts::default()).unwrap();
        assert_eq!(
            r.failures + r.table_failures + r.replay_failures + r.recovery_cut_mismatches,
            0,
            "{name}: {:?}",
            r.failure_examples
        );
        for w in want {
            assert!(
                r.ops_by_class.keys().any(|k| k.contains(w)),
                "{name}: no {w} operation in {:?}",
                r.ops_by_class
            );
        }
    }
}
