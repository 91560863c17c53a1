//! Issue 11 audit fixes outside IDA: preconditioning does not feed a scheme's access history
//! (AGCR / TOS18), and periods given in trace time stretch with `host.time_scale`.

use crate::common::{rq, run};
use nandlab_core::trace::{HostRequest, Op};

const XIA: &str = include_str!("../../../python/nandlab/configs/xia-diffecc.toml");
const PS: u64 = 8192;

/// A request of the one page `lpn`.
fn req(t_ns: u64, op: Op, lpn: u64) -> HostRequest {
    rq(t_ns, op, lpn * PS, PS)
}

/// AGCR classifies a host write by the page's history in the run. Pages written by the
/// untimed fill before the trace have none: the trace's first write of each is "unknown"
/// (medium cost), not "write-only" as it was when the fill was recorded as host writes.
#[test]
fn preconditioning_fill_is_not_agcr_history() {
    // 512 pages read once (so the fill writes them), then each written once.
    let mut reqs: Vec<HostRequest> = (0..512).map(|l| req(l * 2_000_000, Op::Read, l)).collect();
    reqs.extend((0..512).map(|l| req(2_000_000_000 + l * 2_000_000, Op::Write, l)));
    let r = run(
        XIA,
        &["scheme.name=\"agcr\"", "device.blocks_per_plane=64"],
        reqs,
    );
    assert_eq!(r["precondition"]["filled_pages"], 512);
    let s = &r["scheme_stats"];
    assert_eq!(s["placed_write_only"], 0, "{s}");
    assert_eq!(s["placed_interleaved"], 512, "{s}"); // read in the trace, then written
    assert_eq!(s["placed_unknown"], 0, "{s}");
    // Written twice without a read in between: the second write is write-only.
    let mut reqs: Vec<HostRequest> = (0..256).map(|l| req(l * 2_000_000, Op::Write, l)).collect();
    reqs.extend((0..256).map(|l| req(1_000_000_000 + l * 2_000_000, Op::Write, l)));
    let r = run(
        XIA,
        &["scheme.name=\"agcr\"", "device.blocks_per_plane=64"],
        reqs,
    );
    let s = &r["scheme_stats"];
    assert_eq!(s["placed_unknown"], 256, "{s}");
    assert_eq!(s["placed_write_only"], 256, "{s}");
}

/// Periods are in trace time: with `host.time_scale = 10` the refresh period and scan stretch
/// with the arrivals, so the same blocks are refreshed and the report gives the effective
/// period.
#[test]
fn refresh_period_stretches_with_time_scale() {
    let tlc = r#"
[device]
cell = "tlc"
channels = 1
chips_per_channel = 1
dies_per_chip = 1
planes_per_die = 1
blocks_per_plane = 32
pages_per_block = 24
page_size_bytes = 8192
[timing]
read_us = [50.0, 100.0, 150.0]
program_us = [2300.0]
erase_us = 3000.0
channel_mt_s = 333.0
ecc_decode_us = 20.0
[precondition]
fill = "none"
[refresh]
period_s = 100
check_interval_s = 1
"#;
    // Block 0 written at t ≈ 0, read at 50 s (not due) and 150 s (due since 100 s).
    let mut reqs: Vec<HostRequest> = (0..24).map(|l| req(l * 10_000_000, Op::Write, l)).collect();
    reqs.push(req(50_000_000_000, Op::Read, 0));
    reqs.push(req(150_000_000_000, Op::Read, 1));
    let a = run(tlc, &[], reqs.clone());
    let b = run(tlc, &["host.time_scale=10"], reqs);
    assert_eq!(a["refresh"]["blocks_refreshed"], 1);
    assert_eq!(b["refresh"]["blocks_refreshed"], 1);
    assert_eq!(a["refresh"]["period_s"], 100.0);
    assert_eq!(b["refresh"]["period_s"], 1000.0);
    assert_eq!(b["refresh"]["check_interval_s"], 10.0);
    // Without the stretch, 1500 s of simulated time would have seen the block due by 100 s.
    assert!(b["sim"]["last_arrival_s"].as_f64().unwrap() > 1400.0);
}
