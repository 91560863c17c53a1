//! The reliability model in the engine's read path: a worn, aged page costs more than a fresh
//! one by exactly the sensing / transfer / decode terms of the code model.

use nandlab_core::api::simulate_source;
use nandlab_core::config::load;
use nandlab_core::engine::Engine;
use nandlab_core::host::VecSource;
use nandlab_core::scheme::registry;
use nandlab_core::trace::{HostRequest, Op};
use serde_json::Value;

const DAY_NS: u64 = 86_400 * 1_000_000_000;

fn base(cache: &std::path::Path, thresholds: &str) -> String {
    base_with(cache, thresholds, "soft_sensing")
}

fn base_with(cache: &std::path::Path, thresholds: &str, level_cost: &str) -> String {
    format!(
        r#"
[device]
channels = 1
pages_per_block = 64
page_size_bytes = 8192
logical_capacity_bytes = 268435456
[timing]
read_us = [45.0]
ecc_decode_us = 0.0
[reliability]
model = "vth"
cache_dir = "{}"
pe_grid = [0.0, 6000.0]
retention_grid_s = [0.0, 2592000.0]
codes = [{{ code = "ldpc", hard_decode_us = 5.0, soft_decode_us_per_level = 2.0, thresholds = {thresholds}, level_cost = "{level_cost}" }}]
[precondition]
fill = "none"
"#,
        cache.display()
    )
}

fn one_read(cfg_text: &str, pe: u32, read_at_ns: u64) -> Value {
    let cfg = load(
        cfg_text,
        "<t>",
        &[
            format!("precondition.initial_pe_cycles={pe}"),
            "ftl.streams=1".into(),
        ],
    )
    .unwrap();
    let reqs = vec![
        HostRequest {
            arrival_ns: 0,
            op: Op::Write,
            offset_bytes: 0,
            len_bytes: 8192,
        },
        HostRequest {
            arrival_ns: read_at_ns,
            op: Op::Read,
            offset_bytes: 0,
            len_bytes: 8192,
        },
    ];
    let mut open = || Ok(VecSource::new(reqs.clone()));
    simulate_source(cfg, &mut open, Value::Null, &mut |_, _, _| {}).unwrap()
}

#[test]
fn worn_aged_page_costs_exactly_the_soft_sensing_terms_more() {
    let dir = tempfile::tempdir().unwrap();
    // First learn the model's RBER at both corners (this builds and caches the table).
    let probe = load(&base(dir.path(), "[0.5]"), "<t>", &[]).unwrap();
    let (geo, logical) = probe.size_device(0).unwrap();
    let scheme = registry("baseline", &Default::default(), &probe.timing().unwrap(), 2).unwrap();
    let e = Engine::new(probe, geo, logical, scheme).unwrap();
    let rm = e.read_model.as_ref().unwrap();
    let fresh = rm.rber(0, 1.0, 0);
    let aged = rm.rber(6000, 30.0 * 86_400.0, 0);
    assert!(aged > 10.0 * fresh, "aged {aged:e} vs fresh {fresh:e}");
    // A hard-decision limit between the two: the aged page needs exactly one soft level.
    let limit = (fresh * aged).sqrt();
    let text = base(dir.path(), &format!("[{limit:e}, 0.5]"));
    let a = one_read(&text, 0, 10_000_000);
    let b = one_read(&text, 6000, 30 * DAY_NS);
    assert_eq!(a["reliability"]["table_cache"], "hit");
    assert_eq!(
        a["reliability"]["reads_by_soft_level"],
        serde_json::json!([1])
    );
    assert_eq!(
        b["reliability"]["reads_by_soft_level"],
        serde_json::json!([0, 1])
    );
    let ra = a["host"]["read_mean_us"].as_f64().unwrap();
    let rb = b["host"]["read_mean_us"].as_f64().unwrap();
    // One level: 8 µs sensing + 20 µs transfer (Guo §3.6) + 2 µs soft decode.
    assert!(
        ((rb - ra) - 30.0).abs() < 1e-6,
        "aged {rb} µs vs fresh {ra} µs"
    );
    // Fresh read = 45 sense + 20.48 transfer + 5 hard decode.
    assert!((ra - (45.0 + 20.48 + 5.0)).abs() < 1e-6, "{ra}");
}

#[test]
fn xia_preset_runs_in_both_read_cost_modes_and_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../python/nandlab/configs/xia-diffecc.toml"),
    )
    .unwrap();
    let mut reqs = Vec::new();
    for i in 0..400u64 {
        reqs.push(HostRequest {
            arrival_ns: i * 2_000_000,
            op: if i % 3 == 0 { Op::Read } else { Op::Write },
            offset_bytes: (i % 50) * 8192,
            len_bytes: 8192,
        });
    }
    for model in ["none", "vth"] {
        let cfg = load(
            &text,
            "xia-diffecc.toml",
            &[
                format!("reliability.model=\"{model}\""),
                format!("reliability.cache_dir=\"{}\"", dir.path().display()),
                "reliability.pe_grid=[0.0, 6000.0]".into(),
                "reliability.retention_grid_s=[0.0, 2592000.0]".into(),
                "scheme.name=\"diffecc_wa\"".into(),
                "device.logical_capacity_bytes=268435456".into(),
                "precondition.initial_pe_cycles=3000".into(),
            ],
        )
        .unwrap();
        let mut open = || Ok(VecSource::new(reqs.clone()));
        let r = simulate_source(cfg, &mut open, Value::Null, &mut |_, _, _| {}).unwrap();
        assert_eq!(r["reliability"]["model"], model);
        assert!(r["host"]["requests"].as_u64() == Some(400));
        if model == "vth" {
            assert!(r["reliability"]["reads"].as_u64().unwrap() > 0);
            assert!(r["reliability"]["mean_rber"].as_f64().unwrap() > 0.0);
            // Low-cost pages: ΔVpp doubled (650 µs vs 1300 µs).
            assert_eq!(r["reliability"]["mode_dvpp_v"][1], 0.3);
        }
    }
}

/// IDA §V-F read retry: with `level_cost = "page_read"` each extra level is a full re-read of
/// the page — its own sense time, its transfer and another hard decode.
#[test]
fn read_retry_costs_whole_rereads() {
    let dir = tempfile::tempdir().unwrap();
    let probe = load(&base(dir.path(), "[0.5]"), "<t>", &[]).unwrap();
    let (geo, logical) = probe.size_device(0).unwrap();
    let scheme = registry("baseline", &Default::default(), &probe.timing().unwrap(), 2).unwrap();
    let e = Engine::new(probe, geo, logical, scheme).unwrap();
    let rm = e.read_model.as_ref().unwrap();
    let fresh = rm.rber(0, 1.0, 0);
    let aged = rm.rber(6000, 30.0 * 86_400.0, 0);
    // Two limits between fresh and aged: the aged page needs exactly two retries.
    let l0 = fresh * 1.5;
    let l1 = fresh * 2.0;
    assert!(aged > l1 * 1.5);
    let text = base_with(dir.path(), &format!("[{l0:e}, {l1:e}, 0.5]"), "page_read");
    let a = one_read(&text, 0, 10_000_000);
    let b = one_read(&text, 6000, 30 * DAY_NS);
    assert_eq!(a["reliability"]["read_retries"], 0);
    assert_eq!(b["reliability"]["read_retries"], 2);
    let ra = a["host"]["read_mean_us"].as_f64().unwrap();
    let rb = b["host"]["read_mean_us"].as_f64().unwrap();
    // Each retry: 45 µs sense + 20.48 µs transfer + 5 µs hard decode.
    let one = 45.0 + 20.48 + 5.0;
    assert!((ra - one).abs() < 1e-6, "{ra}");
    assert!(
        (rb - 3.0 * one).abs() < 1e-6,
        "aged {rb} µs vs fresh {ra} µs"
    );
}

fn model_of(text: &str, extra: &[&str]) -> Engine {
    let ov: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    let cfg = load(text, "<t>", &ov).unwrap();
    let (geo, logical) = cfg.size_device(0).unwrap();
    let scheme = registry("baseline", &Default::default(), &cfg.timing().unwrap(), 2).unwrap();
    Engine::new(cfg, geo, logical, scheme).unwrap()
}

/// `reliability.mode_levels`: a program mode can write FlexLevel reduced-state pages (NUNMA 3,
/// Guo Table 10), whose RBER the model puts well below a normal page's at the same wear and
/// age; modes without an entry use `level_config`.
#[test]
fn program_mode_carries_its_level_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{}\n[[timing.program_modes]]\nname = \"reduced\"\nprogram_us = [1300.0]\n",
        base(dir.path(), "[0.5]")
    );
    let e = model_of(&text, &["reliability.mode_levels=[0, 3]"]);
    let rm = e.read_model.as_ref().unwrap();
    let normal = rm.rber(6000, 30.0 * 86_400.0, 0);
    let reduced = rm.rber(6000, 30.0 * 86_400.0, 1);
    assert!(
        reduced < 0.5 * normal,
        "NUNMA 3 {reduced:e} vs normal {normal:e}"
    );
    let cfg = load(&text, "<t>", &["reliability.mode_levels=[0]".to_string()]).unwrap();
    let (geo, logical) = cfg.size_device(0).unwrap();
    let scheme = registry("baseline", &Default::default(), &cfg.timing().unwrap(), 2).unwrap();
    let err = Engine::new(cfg, geo, logical, scheme)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("reliability.mode_levels"), "{err}");
}

/// `reliability.read_disturb_grid`: RBER grows with the reads of the block since erase (Guo
/// eq. 2.8–2.9) and is interpolated between the grid's tables; without a grid reads are
/// ignored.
#[test]
fn read_disturb_raises_rber_with_reads_since_erase() {
    let dir = tempfile::tempdir().unwrap();
    let text = base(dir.path(), "[0.5]");
    let e = model_of(&text, &["reliability.read_disturb_grid=[0.0, 1000000.0]"]);
    let rm = e.read_model.as_ref().unwrap();
    let (pe, t) = (6000, 86_400.0);
    let r0 = rm.rber_at(pe, t, 0, 0);
    let r_mid = rm.rber_at(pe, t, 0, 1000);
    let r1 = rm.rber_at(pe, t, 0, 1_000_000);
    assert!(r1 > r0, "{r0:e} → {r1:e}");
    assert!(r0 <= r_mid && r_mid <= r1);
    assert_eq!(rm.rber_at(pe, t, 0, 5_000_000), r1, "clamped past the grid");
    let off = model_of(&text, &[]);
    let rm = off.read_model.as_ref().unwrap();
    assert_eq!(rm.rber_at(pe, t, 0, 1_000_000), rm.rber_at(pe, t, 0, 0));
}
