//! EFM (issue 5): eq. 4 thresholds, Algorithm 3 on hand-built MRO patterns, the combination
//! rule, the migration checker firing exactly at its threshold, the period-T decay, wear-stage
//! latencies, a two-region device by configuration alone, and reports without `[regions]`
//! unchanged by the region machinery.

use crate::common::simulate;
use nandlab_core::config::{load, Allocation, Config, VictimPolicy};
use nandlab_core::flash::{CellType, Geometry, Timing};
use nandlab_core::ftl::Ftl;
use nandlab_core::scheme::efm::{combine, lt_classify, lt_thresholds, mig_threshold, st_classify};
use nandlab_core::scheme::{registry, Action, Ctx, RegionInfo, Scheme, Source};
use nandlab_core::trace::{HostRequest, Op};
use serde_json::Value;

const EFM_TOML: &str = include_str!("../../../python/nandlab/configs/efm.toml");

/// The efm preset on a small device (2 planes of 96 blocks of 8 pages).
const SMALL: &[&str] = &[
    "device.channels=1",
    "device.chips_per_channel=1",
    "device.dies_per_chip=1",
    "device.planes_per_die=2",
    "device.blocks_per_plane=96",
    "device.pages_per_block=8",
    "ftl.allocation=\"static\"",
];

fn cfg(extra: &[&str]) -> Config {
    let ov: Vec<String> = SMALL.iter().chain(extra).map(|s| s.to_string()).collect();
    load(EFM_TOML, "efm.toml", &ov).expect("config")
}

fn run(c: Config, reqs: Vec<HostRequest>) -> Value {
    simulate(c, &reqs).expect("run")
}

fn req(t_ns: u64, op: Op, lpn: u64, pages: u64) -> HostRequest {
    HostRequest {
        arrival_ns: t_ns,
        op,
        offset_bytes: lpn * 4096,
        len_bytes: pages * 4096,
    }
}

/// Table II "regular" (= Table III Stage-3): read 270/170/70 µs, program 450/600/800 µs.
const T_R: [f64; 3] = [270.0, 170.0, 70.0];
const T_P: [f64; 3] = [450.0, 600.0, 800.0];

#[test]
fn eq4_thresholds_from_latencies() {
    let th = lt_thresholds(&T_R, &T_P);
    // θ_12 = (170 − 270)/(450 − 600) = 2/3, θ_23 = (70 − 170)/(600 − 800) = 1/2.
    assert!((th[0] - 2.0 / 3.0).abs() < 1e-12, "{th:?}");
    assert!((th[1] - 0.5).abs() < 1e-12, "{th:?}");
    // Y/X above θ_12: Region-1; between θ_23 and θ_12: Region-2; below θ_23: Region-3.
    let x = 1000.0;
    assert_eq!(lt_classify(0.67 * x, x, &T_R, &T_P), 0);
    assert_eq!(lt_classify(0.66 * x, x, &T_R, &T_P), 1);
    assert_eq!(lt_classify(0.51 * x, x, &T_R, &T_P), 1);
    assert_eq!(lt_classify(0.49 * x, x, &T_R, &T_P), 2);
    // Exactly at a threshold both regions cost the same: the slower-write one is kept.
    assert_eq!(lt_classify(2.0, 3.0, &T_R, &T_P), 1);
    // Only writes / only reads / nothing.
    assert_eq!(lt_classify(5.0, 0.0, &T_R, &T_P), 0);
    assert_eq!(lt_classify(0.0, 5.0, &T_R, &T_P), 2);
    assert_eq!(lt_classify(0.0, 0.0, &T_R, &T_P), 1);
    // Stage 1 (Table III): 150/110/70 → θ = 0.267, 0.2; Stage 4: 350/210/70 → 0.933, 0.7.
    let th1 = lt_thresholds(&[150.0, 110.0, 70.0], &T_P);
    assert!((th1[0] - 40.0 / 150.0).abs() < 1e-12 && (th1[1] - 0.2).abs() < 1e-12);
    let th4 = lt_thresholds(&[350.0, 210.0, 70.0], &T_P);
    assert!((th4[0] - 140.0 / 150.0).abs() < 1e-12 && (th4[1] - 0.7).abs() < 1e-12);
    // A block with Y/X = 0.5 is Region-2 at Stage 1 but Region-3 at Stage 4.
    assert_eq!(lt_classify(50.0, 100.0, &[150.0, 110.0, 70.0], &T_P), 0);
    assert_eq!(lt_classify(50.0, 100.0, &[350.0, 210.0, 70.0], &T_P), 2);
}

#[test]
fn algorithm3_on_mro_patterns() {
    let st = |m: u32| st_classify(m, 7, 5, 2, 3);
    assert_eq!(st(0b111_1100), 2); // 5 reads of 7: read-intensive
    assert_eq!(st(0b111_1111), 2);
    assert_eq!(st(0b000_0011), 0); // 2 reads: write-intensive
    assert_eq!(st(0b000_0000), 0);
    assert_eq!(st(0b001_0110), 1); // 3 reads: interleaved
                                   // 4 reads: the prose's "four of seven" would say read-intensive; Algorithm 3 says Region-2.
    assert_eq!(st(0b111_1000), 1);
    // Only the last 7 operations count.
    assert_eq!(st(0b1111_0000_0011), 0);
    // Two regions: the middle class falls to Region-1.
    assert_eq!(st_classify(0b001_0110, 7, 5, 2, 2), 0);
}

#[test]
fn combine_rule() {
    assert_eq!(combine(0, 2, 3), 1);
    assert_eq!(combine(2, 0, 3), 1);
    assert_eq!(combine(0, 1, 3), 0);
    assert_eq!(combine(1, 2, 3), 1);
    assert_eq!(combine(2, 1, 3), 2);
    assert_eq!(combine(2, 2, 3), 2);
    assert_eq!(combine(1, 0, 2), 1);
}

fn geo() -> Geometry {
    Geometry {
        channels: 1,
        chips_per_channel: 1,
        dies_per_chip: 1,
        planes_per_die: 1,
        blocks_per_plane: 60,
        pages_per_block: 4,
        page_size_bytes: 4096,
        cell: CellType::Mlc,
    }
}

fn timing() -> Timing {
    load(EFM_TOML, "efm.toml", &[]).unwrap().timing().unwrap()
}

fn info() -> RegionInfo {
    // Stage-3 latencies only (one stage), ns.
    RegionInfo {
        n: 3,
        stages: 1,
        read_ns: vec![270_000, 170_000, 70_000],
        program_ns: vec![450_000, 600_000, 800_000],
        configured: true,
    }
}

/// An FTL of three 20-block regions with LPNs 0..3 (logical block 0) programmed in Region-1.
fn ftl_block0_in_region1() -> Ftl {
    let mut f = Ftl::with_regions(
        geo(),
        160,
        2,
        Allocation::Static,
        VictimPolicy::Greedy,
        5.0,
        &[20, 20, 20],
    );
    for lpn in 0..3 {
        let ppn = f.allocate_in(0, 0, 0, true, 0).unwrap();
        f.program(ppn, lpn, 1, 0, 0);
    }
    f
}

fn read_block0(s: &mut dyn Scheme, f: &Ftl, t: &Timing) -> Vec<Action> {
    let ctx = Ctx {
        now_ns: 0,
        ftl: f,
        timing: t,
    };
    let mut a = Vec::new();
    s.on_request(Op::Read, 0, 1, &ctx, &mut a);
    a
}

#[test]
fn migration_fires_exactly_at_the_threshold() {
    let t = timing();
    let f = ftl_block0_in_region1();
    let mut p = toml::Table::new();
    p.insert("mig_threshold".into(), toml::Value::Integer(3));
    let mut s = registry("efm", &p, &t, 2).unwrap();
    s.set_regions(&info());
    // Reads 1–2: LT = Region-3 (reads only), ST = Region-1 (≤ 2 reads in MRO) → combined
    // Region-2: no count. From read 3 on ST = Region-2 → Region-3, counted: 3 → 1, 4 → 2,
    // 5 → 3 = threshold.
    for i in 1..=4 {
        assert!(read_block0(s.as_mut(), &f, &t).is_empty(), "read {i}");
    }
    let a = read_block0(s.as_mut(), &f, &t);
    let lpns: Vec<u32> = a
        .iter()
        .map(|x| match x {
            Action::Rewrite { lpn, source, .. } => {
                assert_eq!(*source, Source::Migration);
                *lpn
            }
            other => panic!("unexpected action {other:?}"),
        })
        .collect();
    assert_eq!(lpns, vec![0, 1, 2], "the block's three valid pages migrate");
    let ctx = Ctx {
        now_ns: 0,
        ftl: &f,
        timing: &t,
    };
    assert_eq!(s.placement(0, Source::Migration, &ctx).region, 2);
    // The block is now mapped to Region-3: further reads count nothing.
    assert!(read_block0(s.as_mut(), &f, &t).is_empty());
    assert_eq!(s.stats()["migrations"], 1);
    assert_eq!(s.stats()["migrated_pages"], 3);
}

#[test]
fn migration_threshold_formula() {
    // 3 pages from Region-2 (170 µs) to Region-3 (70 µs read, 800 µs program):
    // 3 · (170 + 800) / (2 · 100) = 14.55 reads.
    let thr = mig_threshold(3, 170.0, 70.0, 800.0);
    assert!((thr - 14.55).abs() < 1e-9, "{thr}");
    assert!(mig_threshold(3, 70.0, 70.0, 800.0).is_infinite());
    // With the formula, block 0 (three pages in Region-1, Reg_mapping Region-2 by the fill
    // default) migrates at the first counted read reaching ⌈14.55⌉ = 15, i.e. read 17.
    let t = timing();
    let f = ftl_block0_in_region1();
    let mut s = registry("efm", &toml::Table::new(), &t, 2).unwrap();
    s.set_regions(&info());
    for i in 1..=16 {
        assert!(read_block0(s.as_mut(), &f, &t).is_empty(), "read {i}");
    }
    assert_eq!(read_block0(s.as_mut(), &f, &t).len(), 3);
}

#[test]
fn tables_decay_every_period() {
    let t = timing();
    let f = ftl_block0_in_region1();
    let mut p = toml::Table::new();
    p.insert("period_s".into(), toml::Value::Float(2.5));
    let mut e = nandlab_core::scheme::efm::Efm::new(&p, &t, 2, true).unwrap();
    e.set_regions(&info());
    assert_eq!(e.tick_period_ns(), Some(2_500_000_000));
    let ctx = Ctx {
        now_ns: 0,
        ftl: &f,
        timing: &t,
    };
    let mut a = Vec::new();
    e.on_request(Op::Write, 0, 2, &ctx, &mut a);
    e.on_request(Op::Read, 1, 3, &ctx, &mut a);
    let (r, w, mro, _, _) = e.block_state(0);
    assert_eq!((r, w, mro), (3.0, 2.0, 0b01));
    e.on_tick(&ctx, &mut a);
    let (r, w, mro, _, _) = e.block_state(0);
    assert!((r - 0.6).abs() < 1e-6 && (w - 0.4).abs() < 1e-6, "{r} {w}");
    assert_eq!(mro, 0b01, "the MRO register is not decayed");
    e.on_tick(&ctx, &mut a);
    assert!((e.block_state(0).0 - 0.12).abs() < 1e-6);
    // In a run: one decay per period of simulated time.
    let c = cfg(&["scheme.params.period_s=0.5", "precondition.fill=\"none\""]);
    let reqs: Vec<HostRequest> = (0..40)
        .map(|i| req(i * 100_000_000, Op::Write, i % 8, 1))
        .collect();
    let r = run(c, reqs);
    let decays = r["scheme_stats"]["decays"].as_u64().unwrap();
    assert!(
        (7..=8).contains(&decays),
        "{decays} decays over 3.9 s at T = 0.5 s"
    );
}

#[test]
fn latency_sensor_follows_wear_stages() {
    // Stage boundaries 0/1000/2000/3000; the device starts at 3000 P/E (Stage 4).
    // One read in each of 20 logical blocks: no block is read often enough to migrate.
    let reqs: Vec<HostRequest> = (0..20)
        .map(|i| req(i * 1_000_000, Op::Read, i * 8, 1))
        .collect();
    for (scheme, read_us) in [
        ("efm", [350.0, 210.0, 70.0]),
        ("efm_static", [150.0, 110.0, 70.0]),
    ] {
        let c = cfg(&[
            &format!("scheme.name=\"{scheme}\""),
            "precondition.initial_pe_cycles=3000",
        ]);
        let r = run(c, reqs.clone());
        assert_eq!(r["regions"]["stage_at_start"], 3);
        let got: Vec<f64> = r["scheme_stats"]["classifier_read_us"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(got, read_us, "{scheme}");
        // The device reads at Stage-4 latencies whatever the classifier believes: preconditioned
        // data sits in Region-2 (210 µs) + a 10.24 µs transfer.
        let mean = r["host"]["read_mean_us"].as_f64().unwrap();
        assert!((mean - 220.24).abs() < 1.0, "{scheme}: {mean}");
    }
}

#[test]
fn two_region_device_by_configuration_only() {
    let c = cfg(&[
        "regions.names=[\"fast_write\", \"fast_read\"]",
        "regions.fractions=[0.5, 0.5]",
        "regions.program_modes=[1, 2]",
        "regions.read_us=[[150, 210, 270, 350], [70, 70, 70, 70]]",
        "regions.wear_weight=[0.8, 1.0]",
        "precondition.fill=\"none\"",
    ]);
    // Logical block 0 (8 LPNs) is only written, block 1 only read after one write.
    let mut reqs = Vec::new();
    for i in 0..30u64 {
        reqs.push(req(i * 2_000_000, Op::Write, i % 8, 1));
    }
    reqs.push(req(70_000_000, Op::Write, 8, 8));
    for i in 0..60u64 {
        reqs.push(req(80_000_000 + i * 2_000_000, Op::Read, 8 + i % 8, 1));
    }
    let r = run(c, reqs);
    let g = &r["regions"];
    assert_eq!(g["count"], 2);
    assert_eq!(g["names"], serde_json::json!(["fast_write", "fast_read"]));
    assert_eq!(g["blocks_per_plane"], serde_json::json!([48, 48]));
    assert_eq!(g["program_us"], serde_json::json!([450.0, 800.0]));
    assert_eq!(g["read_us_at_start"], serde_json::json!([270.0, 70.0]));
    // Write-only block → fast-write region; the read-only block (its one write counted as a
    // write) lands in the fast-write region too. Its reads make eq. 4 prefer the fast-read
    // region from the 14th read on (8·450 + 14·270 = 8·800 + 14·70), and the migration
    // checker moves it after ⌈8·(270 + 800)/(2·200)⌉ = 22 counted reads.
    let host_programs = g["host_programs"].as_array().unwrap();
    assert_eq!(host_programs[0], 38);
    assert_eq!(host_programs[1], 0);
    assert!(
        r["scheme_stats"]["migrations"].as_u64().unwrap() >= 1,
        "{r:#}"
    );
    assert!(g["host_reads"][1].as_u64().unwrap() > 0);
    assert_eq!(r["scheme_stats"]["migrations"], 1);
    assert_eq!(g["programs"], serde_json::json!([38, 8]));
    // Reduced effective wearing on the fast-write region: 38 programs there at weight 0.8
    // and 8 migrated at 1: 46 / 38.4 − 1.
    let lt = g["lifetime_gain_by_programs"].as_f64().unwrap();
    assert!((lt - (46.0 / 38.4 - 1.0)).abs() < 1e-9, "{lt}");
}

#[test]
fn region_config_errors_name_the_key() {
    let e = load(
        EFM_TOML,
        "x",
        &["regions.fractions=[0.5, 0.6, -0.1]".to_string()],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("regions.fractions"), "{e}");
    let e = load(EFM_TOML, "x", &["regions.program_modes=[1, 0]".to_string()])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("regions.program_modes") && e.contains("one entry per region"),
        "{e}"
    );
    let e = load(
        EFM_TOML,
        "x",
        &["regions.program_modes=[1, 0, 7]".to_string()],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("regions.program_modes[2]") && e.contains("0 ..= 2"),
        "{e}"
    );
    let e = load(
        EFM_TOML,
        "x",
        &["regions.read_us=[[1,2,3,4],[1,2,3],[1,2,3,4]]".to_string()],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("regions.read_us[1]") && e.contains("wear stage"),
        "{e}"
    );
    let e = load(
        EFM_TOML,
        "x",
        &["regions.read_latency=\"model\"".to_string()],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("reliability.model"), "{e}");
    // A region too small for its GC reserve is an error at sizing, not a stall.
    let c = cfg(&["regions.fractions=[0.02, 0.49, 0.49]"]);
    let e = c.size_device(0).unwrap_err().to_string();
    assert!(
        e.contains("regions.fractions") && e.contains("region1"),
        "{e}"
    );
}

#[test]
fn regions_survive_gc_and_keep_invariants() {
    // A small two-plane device written over several times: GC runs in every region; blocks
    // keep their region, and the FTL invariants hold.
    let c = cfg(&[
        "device.blocks_per_plane=60",
        "precondition.fill=\"none\"",
        "precondition.initial_pe_cycles=0",
    ]);
    let mut reqs = Vec::new();
    let mut t = 0u64;
    let mut x = 12345u64;
    for _ in 0..6000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let lpn = (x >> 33) % 200;
        let op = if (x >> 20).is_multiple_of(3) {
            Op::Read
        } else {
            Op::Write
        };
        reqs.push(req(t, op, lpn, 1));
        t += 400_000;
    }
    let r = run(c, reqs);
    let erases = r["regions"]["erases"].as_array().unwrap();
    assert!(r["flash"]["erases"].as_u64().unwrap() > 0, "{r:#}");
    let sum: u64 = erases.iter().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(sum, r["flash"]["erases"].as_u64().unwrap());
    // Wear stage moved: 0 P/E at start; mean P/E grows with the erases.
    assert!(r["regions"]["mean_pe_at_end"].as_f64().unwrap() > 0.0);
}

#[test]
fn no_regions_report_has_no_region_section() {
    let ov = vec![
        "precondition.fill=\"none\"".to_string(),
        "device.blocks_per_plane=64".to_string(),
    ];
    let c = load("", "<default>", &ov).unwrap();
    let reqs: Vec<HostRequest> = (0..50)
        .map(|i| {
            req(
                i * 1_000_000,
                if i % 2 == 0 { Op::Write } else { Op::Read },
                i,
                1,
            )
        })
        .collect();
    let r = run(c, reqs);
    assert!(r.get("regions").is_none());
    assert!(r["config"].get("regions").is_none());
}

#[test]
fn region_read_latency_from_the_reliability_model() {
    // read_latency = "model": a page's RBER (hence its ECC cost) follows its region's program
    // mode ΔVpp; the report says which source the run used.
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().display().to_string();
    let c = cfg(&[
        "reliability.model=\"vth\"",
        &format!("reliability.cache_dir={}", toml::Value::String(cache)),
        "reliability.pe_grid=[0.0, 6000.0]",
        "reliability.retention_grid_s=[0.0, 2592000.0]",
        "regions.read_latency=\"model\"",
    ]);
    let reqs: Vec<HostRequest> = (0..40)
        .map(|i| {
            let op = if i < 20 { Op::Write } else { Op::Read };
            req(i * 1_000_000, op, (i % 20) * 8, 1)
        })
        .collect();
    let r = run(c, reqs);
    let g = &r["regions"];
    assert!(
        g["read_latency_source"]
            .as_str()
            .unwrap()
            .starts_with("model"),
        "{g:#}"
    );
    assert!(g["read_us_at_start"].is_null());
    assert_eq!(r["reliability"]["model"], "vth");
    // Region modes 1, 0, 2 (450, 600, 800 µs) give ΔVpp 0.2, 0.15, 0.1125 V (t ∝ 1/ΔVpp).
    let dv = r["reliability"]["mode_dvpp_v"].as_array().unwrap();
    assert!((dv[1].as_f64().unwrap() - 0.2).abs() < 1e-9, "{dv:?}");
    assert!(r["reliability"]["reads"].as_u64().unwrap() >= 20);
}

#[test]
fn one_region_with_the_device_latencies_equals_no_regions() {
    // A single region holding every block, programmed in mode 0 and read at the device's read
    // latency, is the device without regions: same latencies, same GC, same counts.
    let base = [
        "precondition.fill=\"none\"",
        "device.blocks_per_plane=20",
        "device.op_percent_of_logical=40",
        "device.channels=2",
        "ftl.wrap_offsets=true",
    ];
    let mut reqs = Vec::new();
    let mut x = 99u64;
    for i in 0..20000u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let op = if (x >> 40).is_multiple_of(4) {
            Op::Read
        } else {
            Op::Write
        };
        reqs.push(req(i * 300_000, op, (x >> 33) % 6000, 1 + (x >> 60) % 2));
    }
    let plain: Vec<String> = base.iter().map(|s| s.to_string()).collect();
    let a = run(load("", "<d>", &plain).unwrap(), reqs.clone());
    let mut one = plain.clone();
    one.extend(
        [
            "regions.fractions=[1.0]",
            "regions.program_modes=[0]",
            "regions.read_us=[[45.0]]",
        ]
        .map(String::from),
    );
    let b = run(load("", "<d>", &one).unwrap(), reqs);
    assert!(a["gc"]["invocations"].as_u64().unwrap() > 0, "GC must run");
    for k in ["host", "flash", "gc", "write_amplification", "wear"] {
        assert_eq!(a[k], b[k], "{k}");
    }
    assert_eq!(b["regions"]["count"], 1);
}

/// Migration behaviour of the EFM baselines (issue 11, our reconstruction): TOS18 migrates a
/// page on its second read (read since written → read-only → Region-3). In the background the
/// read that triggers it completes at its own read time; with `migration_sync` it completes
/// only after the migration's read and program, exactly that much later. `block` granularity
/// moves the whole logical block (8 LPNs here).
#[test]
fn synchronous_migration_is_in_the_read_response() {
    // LPNs 0..8 written before the trace (Region-2, the fill region); LPN 0 read three times,
    // 10 ms apart (an idle device between reads).
    let reqs: Vec<HostRequest> = (0..8)
        .map(|l| req(l * 1000, Op::Read, l, 1))
        .chain((0..3).map(|i| req(10_000_000 * (i + 1), Op::Read, 0, 1)))
        .collect();
    let r = |extra: &[&str]| {
        let mut ov = vec!["scheme.name=\"tos18\""];
        ov.extend(extra);
        run(cfg(&ov), reqs.clone())
    };
    let bg = r(&[]);
    let sync = r(&["scheme.params.migration_sync=true"]);
    let f = |v: &Value, p: &str| -> f64 {
        p.split('.')
            .fold(v, |c, k| &c[k])
            .as_f64()
            .unwrap_or_else(|| panic!("{p}"))
    };
    // The first eight reads set each page's read bit; the 9th read is LPN 0's second: it
    // migrates LPN 0 (one page) to Region-3; the 10th and 11th read it there.
    for v in [&bg, &sync] {
        assert_eq!(f(v, "scheme_stats.region_migrations"), 1.0);
        assert_eq!(f(v, "flash.programs_by_source.migration"), 1.0);
    }
    assert!(bg.get("sync_rewrites").is_none());
    assert_eq!(f(&sync, "sync_rewrites"), 1.0);
    let xfer = f(&bg, "device.transfer_us");
    // Stage 3 (the preset's): Region-2 read 170 µs, Region-3 program 800 µs (Table II).
    let migration_us = (170.0 + xfer) + (xfer + 800.0);
    let total = |v: &Value| f(v, "host.read.mean_us") * f(v, "host.reads");
    let extra = total(&sync) - total(&bg);
    assert!(
        (extra - migration_us).abs() < 1e-6,
        "sync adds {extra} µs, want {migration_us}"
    );
    // Block granularity: all 8 pages of the logical block move on that read.
    let blk = r(&["scheme.params.migration_granularity=\"block\""]);
    assert_eq!(f(&blk, "flash.programs_by_source.migration"), 8.0);
    assert_eq!(f(&blk, "scheme_stats.block_migrations"), 1.0);
}

/// HOTIS's read migration (our reconstruction, off by default): data never written in the
/// trace is cold, so its first read moves it to the fast-read region; rewritten (hot) data
/// stays.
#[test]
fn hotis_read_migration_moves_cold_data() {
    let reqs: Vec<HostRequest> = vec![
        req(0, Op::Write, 1, 1),
        req(1_000_000, Op::Write, 1, 1),
        req(10_000_000, Op::Read, 0, 1), // cold (never written): migrates
        req(20_000_000, Op::Read, 1, 1), // written twice just now: hot, stays
        req(30_000_000, Op::Read, 0, 1), // already in Region-3
    ];
    let r = |extra: &[&str]| {
        let mut ov = vec!["scheme.name=\"hotis\""];
        ov.extend(extra);
        run(cfg(&ov), reqs.clone())
    };
    let off = r(&[]);
    assert!(off["scheme_stats"].get("region_migrations").is_none());
    assert_eq!(off["flash"]["programs_by_source"]["migration"], 0);
    let on = r(&["scheme.params.read_migration=true"]);
    assert_eq!(on["scheme_stats"]["region_migrations"], 1);
    assert_eq!(on["flash"]["programs_by_source"]["migration"], 1);
    assert_eq!(on["regions"]["host_reads"][2], 1); // the third read of LPN 0, in Region-3
}

/// Issue 20, item 4: a year of idle time between two requests costs one call, not 525,600
/// tick events (it ran for minutes), and leaves the state the ticks one at a time leave: the
/// decay count is every period elapsed, and the same run with the idle gap split by requests
/// every few periods (where the device is busy at some ticks) reports the same decays.
#[test]
fn idle_ticks_do_not_step_through_a_year() {
    const YEAR_NS: u64 = 365 * 86_400 * 1_000_000_000;
    let r = run(
        cfg(&[]),
        vec![req(0, Op::Write, 0, 1), req(YEAR_NS, Op::Read, 0, 1)],
    );
    let period_ns = 60 * 1_000_000_000u64;
    let decays = r["scheme_stats"]["decays"].as_u64().unwrap();
    // Ticks at 60 s, 120 s, … through the second arrival (and while its read is served).
    assert!(
        (YEAR_NS / period_ns..=YEAR_NS / period_ns + 1).contains(&decays),
        "{decays}"
    );
    assert!(r["sim"]["events"].as_u64().unwrap() < 100, "{}", r["sim"]);
    // Requests every 3.5 periods: some ticks are coalesced (2–4 at a time), some not; every
    // elapsed period is still one decay.
    let reqs: Vec<HostRequest> = (0..40u64)
        .map(|i| {
            let op = if i % 3 == 0 { Op::Write } else { Op::Read };
            req(i * 7 * period_ns / 2, op, i % 5, 1)
        })
        .collect();
    let last = 39 * 7 * period_ns / 2;
    let r = run(cfg(&[]), reqs);
    let decays = r["scheme_stats"]["decays"].as_u64().unwrap();
    assert!(
        (last / period_ns..=last / period_ns + 1).contains(&decays),
        "{decays} decays over {} periods",
        last / period_ns
    );
}
