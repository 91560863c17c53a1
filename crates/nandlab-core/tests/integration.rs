//! Every integration test of nandlab-core, in one test binary.
//!
//! One binary instead of one per file: the release profile links with thin LTO, about 20 CPU
//! seconds per test binary, which made `cargo test -p nandlab-core --release` (the README's
//! test command) spend minutes linking (issue 19, item 12). Each `tests/*.rs` file stays as it
//! was, compiled here as a module; run one with a filter: `cargo test --release -p
//! nandlab-core --test integration trace_formats::`.
//!
//! **Adding a test file:** add a `#[path]` line below, or `every_test_file_is_listed` fails
//! (Cargo.toml sets `autotests = false`, so an unlisted file would silently not run).

#[path = "address_map.rs"]
mod address_map;
#[path = "common.rs"]
mod common;
#[path = "device_model.rs"]
mod device_model;
#[path = "dpa_analyze.rs"]
mod dpa_analyze;
#[path = "dpa_codec.rs"]
mod dpa_codec;
#[path = "dpa_drm.rs"]
mod dpa_drm;
#[path = "ecc_models.rs"]
mod ecc_models;
#[path = "efm.rs"]
mod efm;
#[path = "engine_validation.rs"]
mod engine_validation;
#[path = "flexecc.rs"]
mod flexecc;
#[path = "flexlevel.rs"]
mod flexlevel;
#[path = "flows.rs"]
mod flows;
#[path = "fuzz.rs"]
mod fuzz;
#[path = "import_graph.rs"]
mod import_graph;
#[path = "link.rs"]
mod link;
#[path = "mapping.rs"]
mod mapping;
#[path = "osd.rs"]
mod osd;
#[path = "osd_crash.rs"]
mod osd_crash;
#[path = "osd_extents.rs"]
mod osd_extents;
#[path = "osd_objfs.rs"]
mod osd_objfs;
#[path = "periods_history.rs"]
mod periods_history;
#[path = "recipes.rs"]
mod recipes;
#[path = "refresh_ida.rs"]
mod refresh_ida;
#[path = "reliability_readpath.rs"]
mod reliability_readpath;
#[path = "reliability_report.rs"]
mod reliability_report;
#[path = "reliability_table.rs"]
mod reliability_table;
#[path = "reliability_vth.rs"]
mod reliability_vth;
#[path = "report_digests.rs"]
mod report_digests;
#[path = "robustness.rs"]
mod robustness;
#[path = "timeseries.rs"]
mod timeseries;
#[path = "trace_errors.rs"]
mod trace_errors;
#[path = "trace_formats.rs"]
mod trace_formats;
#[path = "trace_framing.rs"]
mod trace_framing;
#[path = "trace_reorder.rs"]
mod trace_reorder;
#[path = "trace_throughput.rs"]
mod trace_throughput;
#[path = "trace_tools.rs"]
mod trace_tools;

#[test]
fn every_test_file_is_listed() {
    let here = include_str!("integration.rs");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("tests/ is readable") {
        let path = entry.expect("a directory entry").path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if path.extension().is_some_and(|e| e == "rs")
            && name != "integration.rs"
            && !here.contains(&format!("#[path = \"{name}\"]"))
        {
            missing.push(name.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "tests/integration.rs does not include {missing:?}: add `#[path = \"NAME.rs\"] mod NAME;`"
    );
}

/// A run report without its wall-clock fields (`timing`): what two runs of the same inputs
/// must agree on byte for byte.
pub fn without_wall_clock(mut v: serde_json::Value) -> serde_json::Value {
    if let Some(o) = v.as_object_mut() {
        o.remove("timing");
    }
    v
}
