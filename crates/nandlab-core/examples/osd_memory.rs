//! Memory of the object device against trace length (issue 17: memory flat in trace
//! length): `cargo run --release -p nandlab-core --example osd_memory PRESET
//! TRACE_fs.jsonl.gz N…` replays the preconditioning and the first N commands (0 = all) of
//! a file-level trace on the preset (dmm, obfs, yaffs2) for each N, and prints the valid
//! pages on the device and the per-page state the simulator keeps for them. Measure the
//! process's peak RSS with `/usr/bin/time -f %M` around one N at a time.

use std::path::Path;

use nandlab_core::config::load_file;
use nandlab_core::osd::objfs::ObjfsSource;
use nandlab_core::osd::{replay, Device, RunOpts};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/nandlab/configs");
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 4 {
        return Err("usage: osd_memory PRESET TRACE_fs.jsonl.gz N...".into());
    }
    let cfg = load_file(&dir.join(format!("{}.toml", a[1])), &[])?;
    for n in &a[3..] {
        let n: u64 = n.parse()?;
        let mut src = ObjfsSource::open(Path::new(&a[2]), &cfg.objfs)?;
        let mut dev = Device::new(&cfg)?;
        let r = replay(&cfg, &mut dev, &mut src, &RunOpts { max_commands: n })?;
        let (chunks, rows) = dev.sparse_chunks();
        println!(
            "{} commands: {} valid pages, page state {:.1} MB ({:.1} B per valid page), \
             {chunks} sparse chunks with {rows} rows",
            r.commands,
            dev.valid_pages(),
            dev.page_state_bytes() as f64 / 1e6,
            dev.page_state_bytes() as f64 / dev.valid_pages().max(1) as f64,
        );
    }
    Ok(())
}
