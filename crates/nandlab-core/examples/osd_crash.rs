//! The full crash-test count (spec §5, §7 item 6): `cargo run --release -p nandlab-core
//! --example osd_crash [cuts] [MiB|mixed] [designs]` — every design and every broken variant
//! on DMMbench random 4 KiB writes, on the Table 16 presets shrunk so that GC runs (16 dies ×
//! 24 blocks of 64 pages; chunks of 4 blocks); with `mixed`, on `osd crash-test`'s default
//! workload instead (6,000 mixed commands over 48 objects on the small device,
//! `api::crash_small_device`). `designs`: a comma list of run numbers to do (default all).

use std::path::Path;
use std::time::Instant;

use nandlab_core::config::load_file;
use nandlab_core::osd::bench::{DmmBench, Pattern};
use nandlab_core::osd::{crash_test, crash_test_with, CrashOpts, OsdCommand, Variant};

fn main() {
    let cuts: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/nandlab/configs");
    let small = [
        "device.blocks_per_plane=24",
        "device.pages_per_block=64",
        "osd.tail_buffers=8",
    ]
    .map(String::from);
    let total_mib: u64 = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(32);
    let mixed = std::env::args().nth(2).as_deref() == Some("mixed");
    let only: Option<Vec<usize>> = std::env::args()
        .nth(3)
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect());
    let cmds: Vec<OsdCommand> = if mixed {
        nandlab_core::osd::mixed::commands(42, 6000, 48, 2048)
    } else {
        let mut b = DmmBench::new(Pattern::RandWrite, 4096, total_mib << 20, 42);
        b.file_bytes = 4 << 20;
        b.commands().collect()
    };
    // The small device of each run: the DMMbench shrink, or the crash test's default.
    let small_for = |preset: &str, extra: &[String]| -> Vec<String> {
        if !mixed {
            return small.to_vec();
        }
        let c0 = load_file(&dir.join(format!("{preset}.toml")), extra).unwrap();
        nandlab_core::api::crash_small_device(&c0)
    };
    let full = Variant::FULL;
    let runs: Vec<(&str, Vec<String>, Variant)> = vec![
        ("obfs", vec![], full),
        ("yaffs2", vec![], full),
        ("dmm", vec![], full),
        ("dmm", vec!["osd.diff_cache_bytes=0".into()], full),
        ("dmm", vec!["osd.virtual_tree=false".into()], full),
        (
            "dmm",
            vec![],
            Variant {
                capacitor: false,
                ..full
            },
        ),
        (
            "dmm",
            vec![],
            Variant {
                rollback: false,
                ..full
            },
        ),
        (
            "dmm",
            vec![],
            Variant {
                reapply: false,
                ..full
            },
        ),
        (
            "dmm",
            vec![],
            Variant {
                onode_buffer: false,
                ..full
            },
        ),
        (
            "obfs",
            vec![],
            Variant {
                onode_buffer: false,
                ..full
            },
        ),
    ];
    println!("{} commands per run, {cuts} cuts each", cmds.len());
    // F44's smallest diff cache, cuts among the index programs: where the LCS rollback
    // matters on this workload (issue 17).
    for v in [
        full,
        Variant {
            rollback: false,
            ..full
        },
    ] {
        if only.as_ref().is_some_and(|v| !v.contains(&0)) {
            continue;
        }
        let mut o = small_for("dmm", &[]);
        o.push("osd.diff_cache_bytes=16384".into());
        let cfg = load_file(&dir.join("dmm.toml"), &o).unwrap();
        let opts = CrashOpts {
            cut_only: Some("program_index".into()),
            ..CrashOpts::default()
        };
        let t = Instant::now();
        match crash_test_with(&cfg, &cmds, cuts, 7, v, &opts) {
            Ok(r) => println!(
                "dmm [16 KiB diff cache, cuts at index programs] {v:?}: {} of {} flash ops \
                 candidates, {} cuts, {} failures, {} table failures, {} replay failures, \
                 {} recovery cuts ({} mismatches), {:.1} s wall\n    first failure: {:?}",
                r.cut_candidates,
                r.flash_ops,
                r.cuts,
                r.failures,
                r.table_failures,
                r.replay_failures,
                r.recovery_cuts,
                r.recovery_cut_mismatches,
                t.elapsed().as_secs_f64(),
                r.failure_examples.first()
            ),
            Err(e) => println!("dmm 16 KiB {v:?}: error: {e}"),
        }
    }
    for (i, (preset, extra, v)) in runs.into_iter().enumerate() {
        if only.as_ref().is_some_and(|v| !v.contains(&(i + 1))) {
            continue;
        }
        let mut o = small_for(preset, &extra);
        o.extend(extra.iter().cloned());
        let cfg = load_file(&dir.join(format!("{preset}.toml")), &o).unwrap();
        let t = Instant::now();
        let r = match crash_test(&cfg, &cmds, cuts, 7, v) {
            Ok(r) => r,
            Err(e) => {
                println!("{preset:7} {extra:?} {v:?}: error: {e}");
                continue;
            }
        };
        println!(
            "{preset:7} {extra:?} {v:?}: {} flash ops, {} cuts, {} failures, {} recovery cuts \
             ({} mismatches), backup ≤ {} pages ({} over budget), IC_OBJ {:.1}, re-applied \
             {:.1} pages, recovery ≈ {:.3} s, {} table failures, {} replay failures ({} commands replayed after recovery), {:.1} s wall, {:.4} CPU s per cut\n    cuts by op: {:?}\n    failures: {:?}",
            r.flash_ops,
            r.cuts,
            r.failures,
            r.recovery_cuts,
            r.recovery_cut_mismatches,
            r.backup_pages_max,
            r.backup_over_budget,
            r.ic_objects_mean,
            r.reapplied_pages_mean,
            r.recovery_time_s_mean,
            r.table_failures,
            r.replay_failures,
            r.continued_commands,
            t.elapsed().as_secs_f64(),
            r.cpu_s_per_cut,
            r.cuts_by_op,
            r.failure_examples
        );
    }
}
