//! The object-device runs behind `nandlab reproduce dmm`'s trace figures, one compact line
//! each, for measuring a model change without the Python front end:
//! `cargo run --release -p nandlab-core --example osd_runs TRACE_fs.jsonl.gz [N] [RUN]...` —
//! RUN is `preset[:key=value,...]` (default: the Fig. 42–45 set of `reproduce dmm`: obfs,
//! dmm, yaffs2, MLGC 16 KiB … 4 MiB, extent and virtual tree at 1 MiB, diff cache 16 KiB …
//! 2 MiB); the device gets the blocks per die `reproduce dmm` gives the trace (its
//! footprint ≈ 70 % of the capacity). N = 0 (default): the whole trace. `--blocks=B` gives
//! the blocks per die and skips the pass over the trace that finds them (for timing runs).

use std::path::Path;

use nandlab_core::api::{fs_trace_stats, osd_run_trace};
use nandlab_core::config::load_file;
use serde_json::Value;

fn onfd(mlgc: Option<&str>, vt: bool, dc: &str) -> String {
    format!(
        "obfs:osd.mlgc={},osd.mlgc_table_bytes={},osd.virtual_tree={vt},osd.diff_cache_bytes={dc}",
        mlgc.is_some(),
        mlgc.unwrap_or("0")
    )
}

fn main() {
    let mut a: Vec<String> = std::env::args().collect();
    let given: Option<u64> = a
        .iter()
        .position(|s| s.starts_with("--blocks="))
        .map(|i| a.remove(i)[9..].parse().expect("--blocks=B"));
    let trace = Path::new(&a[1]);
    let n: u64 = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut runs: Vec<String> = a.iter().skip(3).cloned().collect();
    if runs.is_empty() {
        runs = vec!["obfs".into(), "dmm".into(), "yaffs2".into()];
        for s in ["16KiB", "64KiB", "256KiB", "1MiB", "4MiB"] {
            runs.push(onfd(Some(s), false, "0"));
        }
        runs.push(onfd(Some("1MiB"), false, "0"));
        runs.push(onfd(Some("1MiB"), true, "0"));
        for s in ["16KiB", "64KiB", "256KiB", "1MiB", "2MiB"] {
            runs.push(onfd(Some("1MiB"), true, s));
        }
    }
    let blocks = given.unwrap_or_else(|| {
        let st = fs_trace_stats(trace).unwrap();
        let foot = st["footprint_bytes"].as_u64().unwrap();
        let per_block = 16u64 * 256 * 2048;
        let blocks = (foot as f64 / 0.70 / per_block as f64).ceil() as u64;
        4 * blocks.max(64).div_ceil(4)
    });
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/nandlab/configs");
    println!("{} : {blocks} blocks per die", trace.display());
    for run in runs {
        let mut parts = run.split(':');
        let preset = parts.next().unwrap_or("dmm");
        let mut o = vec![format!("device.blocks_per_plane={blocks}")];
        o.extend(parts.flat_map(|p| p.split(',')).map(String::from));
        let cfg = load_file(&dir.join(format!("{preset}.toml")), &o).unwrap();
        let v = match osd_run_trace(&cfg, trace, n) {
            Ok(v) => v,
            Err(e) => {
                println!("{run}: error: {e}");
                continue;
            }
        };
        let g = |p: &str| -> Value { v.pointer(p).cloned().unwrap_or(Value::Null) };
        println!(
            "{run}\n  writes {} (data {} index {} onode {}) | index host {} gc {} evict {} | \
             onode host {} gc {} mlgc {} evict {} | erases {} | write {:.3} ms all {:.3} ms | \
             gc {} | hit {} | {:.2} M cmd/s",
            g("/page_writes/total"),
            g("/page_writes/data/total"),
            g("/page_writes/index/total"),
            g("/page_writes/onode/total"),
            g("/page_writes/index/host"),
            g("/page_writes/index/gc"),
            g("/page_writes/index/cache_evict"),
            g("/page_writes/onode/host"),
            g("/page_writes/onode/gc"),
            g("/page_writes/onode/mlgc"),
            g("/page_writes/onode/cache_evict"),
            g("/erases/total"),
            g("/response/write/mean_us").as_f64().unwrap_or(0.0) / 1e3,
            g("/response/all/mean_us").as_f64().unwrap_or(0.0) / 1e3,
            g("/gc"),
            g("/diff_cache/hit_rate"),
            g("/commands_per_s").as_f64().unwrap_or(0.0) / 1e6,
        );
    }
}
