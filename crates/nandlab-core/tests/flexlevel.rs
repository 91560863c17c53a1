//! FlexLevel (issue 15): reduced-state regions (¾ of the pages per block, the capacity they
//! lose, capacity-aware sizing errors), Table 6 soft sensing in the read path, and the
//! `flexlevel` scheme moving IWFR data into reduced pages.

use crate::common::{f, rq, simulate};
use nandlab_core::config::{load, Config};
use nandlab_core::trace::{HostRequest, Op};
use serde_json::Value;

const FLEX: &str = include_str!("../../../python/nandlab/configs/flexlevel.toml");
const PS: u64 = 16384;

/// The flexlevel preset on a small device: 1 channel, 2 planes of 64 blocks.
const SMALL: &[&str] = &[
    "device.channels=1",
    "device.chips_per_channel=1",
    "device.dies_per_chip=1",
    "device.planes_per_die=2",
    "device.blocks_per_plane=64",
];

fn cfg(extra: &[&str]) -> Result<Config, String> {
    let ov: Vec<String> = SMALL.iter().chain(extra).map(|s| s.to_string()).collect();
    load(FLEX, "flexlevel.toml", &ov).map_err(|e| e.to_string())
}

fn run(c: Config, reqs: Vec<HostRequest>) -> Result<Value, String> {
    simulate(c, &reqs).map_err(|e| e.to_string())
}

/// A request of the one page `lpn`.
fn req(t_ns: u64, op: Op, lpn: u64) -> HostRequest {
    rq(t_ns, op, lpn * PS, PS)
}

#[test]
fn reduced_region_capacity_loss_is_exact() {
    let reqs = vec![req(0, Op::Read, 0)];
    // AccessEval device: 25 % of the blocks reduced, each holding 48 of 64 pages.
    let r = run(cfg(&["scheme.name=\"baseline\""]).unwrap(), reqs.clone()).unwrap();
    assert_eq!(
        r["device"]["region_pages_per_block"],
        serde_json::json!([64, 48])
    );
    assert!((f(&r, "device.capacity_loss_percent") - 6.25).abs() < 1e-9);
    // LevelAdjust-only: every block reduced, 25 % lost.
    let all = [
        "scheme.name=\"flexlevel\"",
        "scheme.params.variant=\"level_adjust_only\"",
        "regions.names=[\"reduced\"]",
        "regions.fractions=[1.0]",
        "regions.program_modes=[0]",
        "regions.read_us=[[36.0]]",
        "regions.bits_per_cell=[1.5]",
        "device.blocks_per_plane=0",
        "device.logical_capacity_bytes=268435456",
        "device.op_percent_of_logical=40",
        // 5 % left after the loss: a 5 % GC threshold would reserve all of it.
        "ftl.gc_threshold_pct=1",
    ];
    let r = run(cfg(&all).unwrap(), reqs).unwrap();
    assert!((f(&r, "device.capacity_loss_percent") - 25.0).abs() < 1e-9);
    // 1.4 × 0.75 = 1.05: 5 % over-provisioning after the loss (§3.6.2), up to block rounding.
    let op = f(&r, "device.op_percent_of_logical_effective");
    assert!((4.0..8.0).contains(&op), "{op}");
}

#[test]
fn reduced_layout_and_capacity_errors_name_the_key() {
    // 6 pages per block cannot be cut to ¾.
    let e = cfg(&["device.pages_per_block=6"]).unwrap_err();
    assert!(
        e.contains("regions.bits_per_cell[1]") && e.contains("4.5"),
        "{e}"
    );
    // All blocks reduced with 30 % over-provisioning: the data does not fit.
    let e = cfg(&[
        "regions.fractions=[0.01, 0.99]",
        "device.blocks_per_plane=0",
        "device.logical_capacity_bytes=1073741824",
    ])
    .and_then(|c| c.size_device(0).map(|_| ()).map_err(|e| e.to_string()))
    .unwrap_err();
    assert!(
        e.contains("regions.bits_per_cell") && e.contains("does not fit"),
        "{e}"
    );
    let e = cfg(&["regions.bits_per_cell=[2.0, 2.5]"]).unwrap_err();
    assert!(
        e.contains("regions.bits_per_cell[1]") && e.contains("≤ 2"),
        "{e}"
    );
}

/// Table 6 in the read path: at 6000 P/E a page one month old needs 6 extra levels (8 µs +
/// 20 µs each), one week old 4; a reduced-state page none.
#[test]
fn table6_soft_sensing_costs_exactly() {
    let base = [
        "scheme.name=\"baseline\"",
        "precondition.initial_age_window_s=0",
        "precondition.fill=\"none\"",
    ];
    // Write LPN 0 at t = 0 and read it at 1 d + 1 s: Table 6 row 6000, column 1 d → 1 level.
    let reqs = vec![req(0, Op::Write, 0), req(86_401_000_000_000, Op::Read, 0)];
    let r = run(cfg(&base).unwrap(), reqs.clone()).unwrap();
    let xfer = f(&r, "device.transfer_us");
    assert_eq!(r["reliability"]["model"], "table6");
    assert!((f(&r, "host.read_mean_us") - (44.0 + xfer + 28.0)).abs() < 1e-9);
    // A month and a day later: 6 levels.
    let reqs = vec![
        req(0, Op::Write, 0),
        req(2_678_400_000_000_000, Op::Read, 0),
    ];
    let r = run(cfg(&base).unwrap(), reqs).unwrap();
    assert!((f(&r, "host.read_mean_us") - (44.0 + xfer + 6.0 * 28.0)).abs() < 1e-9);
    assert_eq!(r["reliability"]["reads_by_soft_level"][6], 1);
    // The same page written to the reduced region (LevelAdjust-only): 36 µs, no level.
    let all = [
        "scheme.name=\"flexlevel\"",
        "scheme.params.variant=\"level_adjust_only\"",
        "regions.names=[\"reduced\"]",
        "regions.fractions=[1.0]",
        "regions.program_modes=[0]",
        "regions.read_us=[[36.0]]",
        "regions.bits_per_cell=[1.5]",
        "device.op_percent_of_logical=60",
        "precondition.initial_age_window_s=0",
        "precondition.fill=\"none\"",
    ];
    let reqs = vec![
        req(0, Op::Write, 0),
        req(2_678_400_000_000_000, Op::Read, 0),
    ];
    let r = run(cfg(&all).unwrap(), reqs).unwrap();
    assert!((f(&r, "host.read_mean_us") - (36.0 + xfer)).abs() < 1e-9);
}

/// AccessEval: data written before the trace and read repeatedly needs soft sensing (aged a
/// month at 6000 P/E), so it enters the IWFR pool on its first read, its overhead (L_f 4 × 2
/// for 6 levels) passes the threshold, and it migrates into reduced pages; later reads are
/// 36 µs with no extra level. A write moves it back to normal pages.
#[test]
fn access_eval_moves_iwfr_data_to_reduced_pages() {
    let mut reqs: Vec<HostRequest> = Vec::new();
    for i in 0..4u64 {
        reqs.push(req(i * 10_000_000, Op::Read, 3));
    }
    reqs.push(req(50_000_000, Op::Write, 3));
    reqs.push(req(60_000_000, Op::Read, 3));
    let c = cfg(&[
        "precondition.initial_age_window_s=0",
        "precondition.initial_pe_cycles=6000",
    ])
    .unwrap();
    // Fill data is written at time 0 with age 0: make it a month old by starting the trace a
    // month later.
    let month = 2_678_400_000_000_000u64;
    let reqs: Vec<HostRequest> = reqs
        .into_iter()
        .map(|mut r| {
            r.arrival_ns += month;
            r
        })
        .collect();
    let r = run(c, reqs).unwrap();
    let s = &r["scheme_stats"];
    assert_eq!(s["migrations_to_reduced"], 1, "{s}");
    assert_eq!(f(&r, "flash.programs_by_source.migration"), 1.0);
    // Reads 2-4 hit the reduced region (no extra level); the read after the write is a fresh
    // normal page (age 10 ms: no extra level either).
    assert_eq!(s["host_reads_reduced"], 3, "{s}");
    assert_eq!(s["reduced_cell_pages"], 0, "{s}"); // the write took it out
}

#[test]
fn flexlevel_without_regions_is_an_error_naming_the_preset() {
    let c = load(
        include_str!("../../../python/nandlab/configs/xia-diffecc.toml"),
        "x",
        &[
            "scheme.name=\"flexlevel\"".into(),
            "device.logical_capacity_bytes=1073741824".into(),
        ],
    )
    .unwrap();
    let e = run(c, vec![req(0, Op::Read, 0)]).unwrap_err();
    assert!(e.contains("flexlevel") && e.contains("preset"), "{e}");
}
