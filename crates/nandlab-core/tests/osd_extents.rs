//! Multi-page extents on the object device (issue 30, item 2): an extent spanning the dies is
//! read with the right pages, overwrites and GC moves split it, recovery rebuilds it. Moved
//! from `osd.rs`, whose devices and designs it uses.

use crate::osd::{as_commands, cfg, design_cfg, DESIGNS};
use nandlab_core::osd::{Device, OsdOp};

/// The data PPNs programmed by the last command, in program order.
fn programs(d: &Device) -> Vec<u32> {
    use nandlab_core::osd::device::OpKind;
    (0..d.plan.stages())
        .flat_map(|k| d.plan.stage(k).iter())
        .filter(|o| o.kind == OpKind::Program)
        .map(|o| o.ppn)
        .collect()
}

/// The PPNs read by the last command.
fn reads(d: &Device) -> Vec<u32> {
    use nandlab_core::osd::device::OpKind;
    (0..d.plan.stages())
        .flat_map(|k| d.plan.stage(k).iter())
        .filter(|o| o.kind == OpKind::Read)
        .map(|o| o.ppn)
        .collect()
}

/// Write-id of every byte range of `oid` as the device reads it back.
fn logical_of(d: &mut Device, oid: u64) -> std::collections::BTreeMap<u64, Vec<(u32, u32, u64)>> {
    d.logical().remove(&oid).map(|o| o.1).unwrap_or_default()
}

/// A sequential 8-page write on 4 dies is one leaf entry ⟨0, 4 KiB, PA⟩ whose pages lie on
/// every die (two per die, in program order), and a read of any of its pages reads exactly
/// the page that write programmed there.
#[test]
fn an_extent_spanning_dies_is_read_with_the_right_pages() {
    for osd in ["", "virtual_tree = true\ndiff_cache_bytes = 4096"] {
        let c = cfg(512, 16, &format!("chunk_blocks = 1\n{osd}"));
        let mut d = Device::new(&c).unwrap();
        d.record_contents();
        d.execute(&OsdOp::Create { oid: 1 }).unwrap();
        d.write_id = 7;
        d.execute(&OsdOp::Write {
            oid: 1,
            offset_bytes: 0,
            len_bytes: 8 * 512,
        })
        .unwrap();
        let progs = programs(&d);
        let data: Vec<u32> = progs[..8].to_vec();
        // One entry for the 8 pages, at the first page's PA.
        assert_eq!(d.extents(1), vec![(0, data[0], 8 * 512)], "{osd}");
        // Its pages are striped: page k where the k-th program went, 2 pages on each die.
        let map = d.data_map(1);
        assert_eq!(
            map.iter().map(|&(k, p, l)| (k, p, l)).collect::<Vec<_>>(),
            (0..8)
                .map(|k| (k, data[k as usize], 512))
                .collect::<Vec<_>>()
        );
        let ppc = 64; // 1-block chunks of 64 pages, 16 to a die
        let per_die = 16;
        let mut dies = [0; 4];
        for &p in &data {
            dies[(p / ppc / per_die) as usize] += 1;
        }
        assert_eq!(dies, [2; 4]);
        // Reads: each page alone, then all of them.
        for k in 0..8u64 {
            d.execute(&OsdOp::Read {
                oid: 1,
                offset_bytes: k * 512 + 100,
                len_bytes: 10,
            })
            .unwrap();
            let r = reads(&d);
            assert_eq!(r.last(), Some(&data[k as usize]), "page {k}");
            assert!(!r[..r.len() - 1].contains(&data[k as usize]));
        }
        d.execute(&OsdOp::Read {
            oid: 1,
            offset_bytes: 0,
            len_bytes: 8 * 512,
        })
        .unwrap();
        let mut r: Vec<u32> = reads(&d).into_iter().filter(|p| data.contains(p)).collect();
        r.sort_unstable();
        let mut want = data.clone();
        want.sort_unstable();
        assert_eq!(r, want);
        let l = logical_of(&mut d, 1);
        assert_eq!(l.len(), 8);
        assert!(l.values().all(|s| s == &vec![(0, 512, 7)]));
        d.check().unwrap();
        d.check_reachability().unwrap();
    }
}

/// Overwriting a page in the middle of an extent cuts it in three: the pages before and
/// after keep their places (the right part starts at the old page 4's PA), the new page is
/// an entry of its own, and only the old page 3 is invalidated. Rewriting the range
/// sequentially joins it into one extent again; unmapping a middle page (truncate, then
/// rewrite around) cuts it too.
#[test]
fn an_overwrite_in_the_middle_of_an_extent_splits_it() {
    let c = cfg(512, 16, "chunk_blocks = 1");
    let mut d = Device::new(&c).unwrap();
    d.record_contents();
    d.execute(&OsdOp::Create { oid: 1 }).unwrap();
    d.write_id = 1;
    d.execute(&OsdOp::Write {
        oid: 1,
        offset_bytes: 0,
        len_bytes: 8 * 512,
    })
    .unwrap();
    let data: Vec<u32> = programs(&d)[..8].to_vec();
    d.write_id = 2;
    d.execute(&OsdOp::Write {
        oid: 1,
        offset_bytes: 3 * 512,
        len_bytes: 512,
    })
    .unwrap();
    let new = programs(&d)[0];
    assert_eq!(
        d.extents(1),
        vec![(0, data[0], 3 * 512), (3, new, 512), (4, data[4], 4 * 512)]
    );
    let map = d.data_map(1);
    for &(k, p, _) in &map {
        let want = if k == 3 { new } else { data[k as usize] };
        assert_eq!(p, want, "page {k}");
    }
    assert!(!d.page_valid(data[3]));
    assert!(data
        .iter()
        .enumerate()
        .all(|(k, &p)| k == 3 || d.page_valid(p)));
    let l = logical_of(&mut d, 1);
    for (k, s) in &l {
        assert_eq!(s, &vec![(0, 512, if *k == 3 { 2 } else { 1 })], "page {k}");
    }
    // A partial overwrite (read-before-write) of page 5 cuts the right part again.
    d.write_id = 3;
    d.execute(&OsdOp::Write {
        oid: 1,
        offset_bytes: 5 * 512 + 10,
        len_bytes: 20,
    })
    .unwrap();
    let e = d.extents(1);
    assert_eq!(e.len(), 5, "{e:?}");
    assert_eq!(e[3].0, 5);
    assert_eq!(e[4], (6, data[6], 2 * 512));
    let l = logical_of(&mut d, 1);
    assert_eq!(l[&5], vec![(0, 10, 1), (10, 30, 3), (30, 512, 1)]);
    // Sequential rewrite of everything: one extent again.
    d.write_id = 4;
    d.execute(&OsdOp::Write {
        oid: 1,
        offset_bytes: 0,
        len_bytes: 8 * 512,
    })
    .unwrap();
    let p = programs(&d);
    assert_eq!(d.extents(1), vec![(0, p[0], 8 * 512)]);
    // A truncate into the extent's last page keeps the extent and shortens it.
    d.execute(&OsdOp::Truncate {
        oid: 1,
        size_bytes: 7 * 512 + 100,
    })
    .unwrap();
    assert_eq!(d.extents(1), vec![(0, p[0], 7 * 512 + 100)]);
    d.check().unwrap();
    d.check_reachability().unwrap();
}

/// GC moving pages of an extent: the moved pages leave it (each an entry at its new PA: GC
/// programs the pages of one die one after another, where the stripe numbering does not
/// run), the extent is cut around them, and the object reads back unchanged. On a 4-die
/// device of 8 one-block chunks per die, object 1's 8 pages open the first chunk of every
/// die, object 2 fills the rest of them and is removed, and object 3 then fills the device
/// with live data, so that those chunks (2 valid pages each) are GC's best victims.
#[test]
fn gc_moving_pages_of_an_extent_splits_it() {
    for osd in [
        "",
        "virtual_tree = true",
        "mlgc = true\ndiff_cache_bytes = 4096",
    ] {
        let c = cfg(512, 8, &format!("{osd}\nchunk_blocks = 1"));
        let mut d = Device::new(&c).unwrap();
        d.record_contents();
        for oid in 1..=3 {
            d.execute(&OsdOp::Create { oid }).unwrap();
        }
        d.write_id = 1;
        d.execute(&OsdOp::Write {
            oid: 1,
            offset_bytes: 0,
            len_bytes: 8 * 512,
        })
        .unwrap();
        let data: Vec<u32> = programs(&d)[..8].to_vec();
        assert_eq!(d.extents(1).len(), 1);
        d.write_id = 2;
        d.execute(&OsdOp::Write {
            oid: 2,
            offset_bytes: 0,
            len_bytes: 4 * 62 * 512,
        })
        .unwrap();
        d.execute(&OsdOp::Remove { oid: 2 }).unwrap();
        let mut moved = false;
        for round in 0..60u64 {
            d.write_id = 3 + round;
            d.execute(&OsdOp::Write {
                oid: 3,
                offset_bytes: round * 32 * 512,
                len_bytes: 32 * 512,
            })
            .unwrap();
            let map = d.data_map(1);
            if map.iter().any(|&(k, p, _)| p != data[k as usize]) {
                moved = true;
                break;
            }
        }
        assert!(moved, "{osd}: GC never moved a page of object 1");
        assert!(d.counters.writes[0][1] > 0, "{osd}: data GC writes");
        let map = d.data_map(1);
        assert_eq!(map.len(), 8);
        let e = d.extents(1);
        assert!(e.len() > 1, "{osd}: {e:?}");
        // The entries cover pages 0..8 exactly, and each moved page is an entry of its own.
        let mut next = 0;
        for &(k, _, l) in &e {
            assert_eq!(k, next, "{osd}: {e:?}");
            next = k + (l as u64).div_ceil(512);
        }
        assert_eq!(next, 8);
        for &(k, p, _) in &map {
            assert!(d.page_valid(p), "{osd}: page {k}");
            if p != data[k as usize] {
                assert!(e.contains(&(k, p, 512)), "{osd}: moved page {k}: {e:?}");
            }
        }
        let l = logical_of(&mut d, 1);
        assert_eq!(l.len(), 8);
        assert!(l.values().all(|s| s == &vec![(0, 512, 1)]), "{osd}");
        d.check().unwrap();
        d.check_reachability().unwrap();
    }
}

/// Recovery after a cut in the middle of the pages of a write that overwrites the middle of
/// an extent: the acknowledged 16-page extent of object 1 comes back from its leaf entry
/// (its pages found through the stripe numbering, checked against their OOB), the pages the
/// cut write landed are re-applied over it, the untouched object 2 gets exactly its extents
/// back, and the recovered tables equal flash. Then cuts at every data program of a
/// workload of multi-page writes (crash harness): nothing acknowledged is lost.
#[test]
fn recovery_after_a_cut_in_the_middle_of_an_extent_rebuilds_it() {
    use nandlab_core::osd::crash::recover;
    for osd in [
        "",
        "virtual_tree = true\ndiff_cache_bytes = 4096\nmlgc = true",
    ] {
        let c = cfg(512, 16, &format!("chunk_blocks = 1\n{osd}"));
        for cut_after in 1..8u64 {
            let mut d = Device::new(&c).unwrap();
            d.record_contents();
            d.execute(&OsdOp::Create { oid: 1 }).unwrap();
            d.execute(&OsdOp::Create { oid: 2 }).unwrap();
            d.write_id = 1;
            d.execute(&OsdOp::Write {
                oid: 1,
                offset_bytes: 0,
                len_bytes: 16 * 512,
            })
            .unwrap();
            let data: Vec<u32> = programs(&d)[..16].to_vec();
            d.write_id = 2;
            d.execute(&OsdOp::Write {
                oid: 2,
                offset_bytes: 0,
                len_bytes: 12 * 512,
            })
            .unwrap();
            d.execute(&OsdOp::Flush { oid: 1 }).unwrap();
            d.execute(&OsdOp::Flush { oid: 2 }).unwrap();
            let ext2 = d.extents(2);
            assert_eq!(ext2.len(), 1);
            // Overwrite pages 4..12 of object 1, cut after `cut_after` data programs.
            d.write_id = 3;
            d.cut_at = d.flash_ops + cut_after;
            let r = d.execute(&OsdOp::Write {
                oid: 1,
                offset_bytes: 4 * 512,
                len_bytes: 8 * 512,
            });
            assert!(r.is_err(), "cut");
            d.power_loss(true);
            let img = d.into_image();
            let rec = recover(&img, nandlab_core::osd::Variant::FULL, 512 / 12);
            let mut d = Device::from_recovery(&c, img, &rec).unwrap();
            d.finish_recovery(&rec).unwrap();
            d.check_tables().unwrap();
            d.check_reachability().unwrap();
            d.check().unwrap();
            assert_eq!(d.extents(2), ext2, "{osd} cut {cut_after}: object 2");
            let l = logical_of(&mut d, 1);
            assert_eq!(l.len(), 16);
            // The landed pages of the cut write (`cut_after` of them, in page order) are new,
            // the rest old: each page wholly one or the other.
            for (k, s) in &l {
                let new = (4..4 + cut_after).contains(k);
                assert_eq!(
                    s,
                    &vec![(0, 512, if new { 3 } else { 1 })],
                    "{osd} page {k}"
                );
            }
            // The old extent's pages outside the overwritten range are where they were, as
            // extents: pages 0..4 one entry at the first page's PA.
            let e = d.extents(1);
            assert_eq!(e[0], (0, data[0], 4 * 512), "{osd} cut {cut_after}: {e:?}");
            let map = d.data_map(1);
            for &(k, p, _) in &map {
                if !(4..4 + cut_after).contains(&k) {
                    assert_eq!(p, data[k as usize], "{osd} page {k}");
                }
            }
        }
    }
    // The crash harness, cuts only at host data programs of multi-page writes.
    use nandlab_core::osd::{crash_test_with, CrashOpts, Variant};
    let mut ops = Vec::new();
    for oid in 1..=6u64 {
        ops.push(OsdOp::Create { oid });
    }
    for i in 0..300u64 {
        let oid = 1 + i % 6;
        let pages = 1 + (i * 7) % 13;
        ops.push(OsdOp::Write {
            oid,
            offset_bytes: ((i * 5) % 24) * 512,
            len_bytes: pages * 512,
        });
        if i % 17 == 0 {
            ops.push(OsdOp::Flush { oid });
        }
    }
    let cmds = as_commands(&ops);
    for (name, osd) in DESIGNS {
        let c = design_cfg(16, osd, "backup_flush_pages = 16");
        let opts = CrashOpts {
            cut_only: Some("program_data_host".into()),
            ..CrashOpts::default()
        };
        let r = crash_test_with(&c, &cmds, 40, 3, Variant::FULL, &opts).unwrap();
        assert_eq!(
            (r.failures, r.table_failures, r.replay_failures),
            (0, 0, 0),
            "{name}: {:?}",
            r.failure_examples
        );
    }
}
