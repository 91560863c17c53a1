//! The crash test on a file-level trace prefix with its preconditioning (spec §5, §7 item 6):
//! `cargo run --release -p nandlab-core --example osd_crash_trace TRACE_fs.jsonl.gz CUTS N
//! [preset[:key=value,...]]...` (`variant=no_rollback`, `cut_only=program_index` and config
//! overrides as key=value) — the preconditioning runs once and every cut starts from a
//! clone of that device; cuts fall in the first N measured commands, and replay continues to
//! the end of them after recovery. Default presets: dmm, obfs, dmm without the diff cache,
//! dmm without the virtual tree, on 16 dies × 560 blocks (the pgbench_rw_fs footprint fills
//! ≈ 70 %, so GC runs).

use std::path::Path;

use nandlab_core::api::{osd_crash_test_trace, CrashSpec};
use nandlab_core::config::load_file;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let trace = Path::new(&a[1]);
    let cuts: u32 = a[2].parse().unwrap_or(100);
    let n: u64 = a[3].parse().unwrap_or(5000);
    let mut runs: Vec<String> = a[4..].to_vec();
    if runs.is_empty() {
        runs = [
            "dmm",
            "obfs",
            "dmm:osd.diff_cache_bytes=0",
            "dmm:osd.virtual_tree=false",
        ]
        .map(String::from)
        .to_vec();
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/nandlab/configs");
    for run in runs {
        let mut parts = run.split(':');
        let preset = parts.next().unwrap_or("dmm");
        let mut o = vec!["device.blocks_per_plane=560".to_string()];
        let mut variant = "full".to_string();
        let mut cut_only = None;
        for p in parts.flat_map(|p| p.split(',')) {
            if let Some(v) = p.strip_prefix("variant=") {
                variant = v.to_string();
            } else if let Some(v) = p.strip_prefix("cut_only=") {
                cut_only = Some(v.to_string());
            } else {
                o.push(p.to_string());
            }
        }
        let cfg = load_file(&dir.join(format!("{preset}.toml")), &o).unwrap();
        match osd_crash_test_trace(
            &cfg,
            trace,
            n,
            &CrashSpec {
                cuts,
                seed: 7,
                variant: &variant,
                cut_only: cut_only.as_deref(),
            },
        ) {
            Ok(v) => {
                let g = |k: &str| v.get(k).cloned().unwrap_or_default();
                println!(
                    "{run} {variant}: commands {} (window from {}), flash ops {}, cuts {}, \
                     failures {}, table {}, replay {}, continued {}, recovery cuts {} \
                     (mismatches {}), backup max {} (over {}), IC_OBJ {}, re-applied {}, \
                     recovery writes {}, recovery ≈ {} s, wall {} s, set-up CPU {} s, CPU per cut {} s\n  cuts by op {}\n  \
                     examples {}",
                    g("commands"),
                    g("window_start"),
                    g("flash_ops"),
                    g("cuts"),
                    g("failures"),
                    g("table_failures"),
                    g("replay_failures"),
                    g("continued_commands"),
                    g("recovery_cuts"),
                    g("recovery_cut_mismatches"),
                    g("backup_pages_max"),
                    g("backup_over_budget"),
                    g("ic_objects_mean"),
                    g("reapplied_pages_mean"),
                    g("recovery_writes_mean"),
                    g("recovery_time_s_mean"),
                    g("wall_s"),
                    g("setup_cpu_s"),
                    g("cpu_s_per_cut"),
                    g("cuts_by_op"),
                    g("failure_examples"),
                );
            }
            Err(e) => println!("{run}: error: {e}"),
        }
    }
}
