//! DMMbench (Guo §4.6.1–4.6.2) on the Table 16 presets, with the simulator's speed:
//! `cargo run --release -p nandlab-core --example osd_dmmbench [total_MiB] [key=value ...]`
//! (the total per access type is also the file size; `key=value` overrides every preset, as
//! `--set`, e.g. `osd.inline_pages=0`).
//!
//! Prints, per design and access type, the mean response of the data commands, page writes
//! by type, GC writes and erases, and object commands per second of wall time.

use std::path::Path;
use std::time::Instant;

use nandlab_core::config::load_file;
use nandlab_core::osd::bench::{DmmBench, Pattern};
use nandlab_core::osd::{run, RunOpts};

fn main() {
    let total_mib: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(64);
    let overrides: Vec<String> = std::env::args().skip(2).collect();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/nandlab/configs");
    println!("total {total_mib} MiB per type (and file size); overrides {overrides:?}");
    println!(
        "{:7} {:10} {:>7} {:>10} {:>10} {:>8} {:>8} {:>8} {:>8} {:>7} {:>9}",
        "design",
        "type",
        "req_KiB",
        "data_us",
        "all_us",
        "data_w",
        "index_w",
        "onode_w",
        "gc_w",
        "erases",
        "cmds/s"
    );
    for design in ["obfs", "dmm", "yaffs2"] {
        let cfg = match load_file(&dir.join(format!("{design}.toml")), &overrides) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(2);
            }
        };
        for (pattern, req_kib) in [
            (Pattern::SeqWrite, 4),
            (Pattern::SeqWrite, 32),
            (Pattern::SeqWrite, 256),
            (Pattern::RandWrite, 4),
            (Pattern::SeqRead, 4),
            (Pattern::SeqRead, 32),
            (Pattern::SeqRead, 1024),
            (Pattern::RandRead, 4),
        ] {
            let b = DmmBench::new(pattern, req_kib << 10, total_mib << 20, cfg.seed);
            let t = Instant::now();
            let r = run(&cfg, b.commands().map(Ok), &RunOpts::default()).unwrap();
            let wall = t.elapsed().as_secs_f64();
            let key = if matches!(pattern, Pattern::SeqWrite | Pattern::RandWrite) {
                "write"
            } else {
                "read"
            };
            let gc = r.page_writes.data.gc + r.page_writes.index.gc + r.page_writes.onode.gc;
            println!(
                "{:7} {:10} {:>7} {:>10.1} {:>10.1} {:>8} {:>8} {:>8} {:>8} {:>7} {:>9.0}",
                design,
                pattern.name(),
                req_kib,
                r.response[key].mean_us.unwrap_or(0.0),
                r.response["all"].mean_us.unwrap_or(0.0),
                r.page_writes.data.total,
                r.page_writes.index.total,
                r.page_writes.onode.total,
                gc,
                r.erases.total,
                (r.commands + r.precondition.commands) as f64 / wall
            );
        }
    }
}
