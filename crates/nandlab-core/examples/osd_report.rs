//! Object-device reports for comparing two builds byte for byte (a change that must not
//! alter the model keeps these identical):
//! `cargo run --release -p nandlab-core --example osd_report [TRACE_fs.jsonl.gz [N]]` —
//! DMMbench random 4 KiB writes on the dmm, obfs and yaffs2 presets shrunk so that GC runs,
//! and (with a trace) its preconditioning + first N commands on each; one JSON line each,
//! without the wall-clock keys.

use std::path::Path;

use nandlab_core::api::{osd_run_bench, osd_run_trace};
use nandlab_core::config::load_file;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/nandlab/configs");
    let trace = std::env::args().nth(1);
    let n: u64 = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    for preset in ["dmm", "obfs", "yaffs2"] {
        let small = ["device.blocks_per_plane=24", "device.pages_per_block=64"].map(String::from);
        let cfg = load_file(&dir.join(format!("{preset}.toml")), &small).unwrap();
        let mut v = osd_run_bench(&cfg, "rand_write", 4096, 32 << 20, 4 << 20).unwrap();
        if let Some(m) = v.as_object_mut() {
            m.remove("wall_s");
            m.remove("commands_per_s");
        }
        println!("{preset} dmmbench {v}");
        if let Some(t) = &trace {
            let cfg = load_file(&dir.join(format!("{preset}.toml")), &[]).unwrap();
            let mut v = osd_run_trace(&cfg, Path::new(t), n).unwrap();
            if let Some(m) = v.as_object_mut() {
                m.remove("wall_s");
                m.remove("commands_per_s");
            }
            println!("{preset} trace {v}");
        }
    }
}
