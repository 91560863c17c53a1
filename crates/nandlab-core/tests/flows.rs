//! Concurrent flows (`[[host.flows]]`, issue 35; `src/host/flows.rs`, `src/engine/flows.rs`,
//! `src/api/flows.rs`): one flow is the single-trace run, arbitration orders commands exactly as
//! NVMe's round robin and weighted round robin do, logical ranges keep flows apart (or not), a
//! flow alone is faster than shared, and the configurations refused.

use std::path::{Path, PathBuf};

use nandlab_core::api::{run, RunRequest};
use nandlab_core::trace::TraceOptions;
use serde_json::Value;

use crate::common::SMALL_DEV;

fn preset(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../../python/nandlab/configs/{name}.toml"));
    std::fs::read_to_string(p).unwrap()
}

/// A run of `config_toml` with `overrides` over `flow_traces` (a single-trace run on
/// `flow_traces[0]` when there is one and the config has no flows).
fn run_with(config_toml: &str, overrides: &[&str], traces: &[&Path]) -> Result<Value, String> {
    let req = RunRequest {
        config_toml: config_toml.to_string(),
        config_path: None,
        overrides: overrides.iter().map(|s| s.to_string()).collect(),
        scheme: None,
        trace_path: traces[0].to_path_buf(),
        trace_options: TraceOptions::default(),
        flow_traces: traces.iter().map(|p| p.to_path_buf()).collect(),
    };
    run(&req, &mut |_, _, _| {})
        .map(|s| serde_json::from_str(&s).unwrap())
        .map_err(|e| e.to_string())
}

/// Write requests `(time_ns, op, offset, size)` as a CSV trace.
fn write_trace(dir: &Path, name: &str, reqs: &[(u64, char, u64, u64)]) -> PathBuf {
    let p = dir.join(name);
    let mut s = String::from("time_ns,op,offset_bytes,size_bytes\n");
    for (t, op, off, size) in reqs {
        s.push_str(&format!("{t},{op},{off},{size}\n"));
    }
    std::fs::write(&p, s).unwrap();
    p
}

/// A seeded mix of reads and writes of 4–64 KiB over 64 MiB, `gap_ns` apart on average.
fn mixed(n: u64, seed: u64, gap_ns: u64) -> Vec<(u64, char, u64, u64)> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut t = 0;
    (0..n)
        .map(|_| {
            t += next() % (2 * gap_ns);
            let op = if next() % 3 == 0 { 'W' } else { 'R' };
            let size = 4096 << (next() % 5);
            let off = (next() % (64 << 20)) / 4096 * 4096;
            (t, op, off, size)
        })
        .collect()
}

fn without(mut v: Value, keys: &[&str]) -> Value {
    let o = v.as_object_mut().unwrap();
    for k in keys {
        o.remove(*k);
    }
    v
}

fn mean_us(v: &Value) -> f64 {
    v["host"]["all"]["mean_us"].as_f64().unwrap()
}

#[test]
fn one_flow_is_the_single_trace_run() {
    let dir = tempfile::tempdir().unwrap();
    let t = write_trace(dir.path(), "a.csv", &mixed(3000, 1, 40_000));
    let cfg = preset("default");
    let one_flow = format!("{cfg}\n[[host.flows]]\n");
    for mode in ["open", "closed"] {
        let m = format!("host.mode=\"{mode}\"");
        let single = run_with(&cfg, &[&m], &[&t]).unwrap();
        let flows = run_with(&one_flow, &[&m], &[&t]).unwrap();
        assert_eq!(flows["flows"][0]["host"], single["host"], "{mode}");
        assert_eq!(flows["flows"][0]["name"], "a.csv");
        assert_eq!(
            flows["flows"][0]["trace"]["format"],
            single["trace"]["format"]
        );
        let keys = ["timing", "trace", "config", "flows"];
        assert_eq!(
            without(flows, &keys),
            without(single, &keys),
            "{mode}: one flow replays as the single trace"
        );
    }
}

#[test]
fn partitioned_flows_replay_as_one_trace_of_both_moved_to_their_ranges() {
    // Without waits in a host queue, arbitration decides nothing: two open-loop flows are the
    // single-trace replay of their requests merged by time, the second flow's offsets moved
    // to its range. Each flow's times count from its own first request (the trace reader's)
    // plus its start offset: B starts 2 ns in, and its times are 2 mod 4, A's 0 mod 4, so no
    // two requests arrive together.
    let dir = tempfile::tempdir().unwrap();
    let from_zero = |v: Vec<(u64, char, u64, u64)>| {
        let t0 = v[0].0;
        v.into_iter()
            .map(|(t, op, o, s)| (4 * (t - t0), op, o, s))
            .collect::<Vec<_>>()
    };
    let a = from_zero(mixed(2000, 5, 30_000));
    let b = from_zero(mixed(2000, 6, 30_000));
    let pa = write_trace(dir.path(), "a.csv", &a);
    let pb = write_trace(dir.path(), "b.csv", &b);
    let cfg = format!(
        "{}\n[[host.flows]]\n[[host.flows]]\nstart_offset_s = 2e-9\n",
        preset("default")
    );
    let flows = run_with(&cfg, &[], &[&pa, &pb]).unwrap();
    let base = flows["flows"][1]["logical_base_bytes"].as_u64().unwrap();
    assert!(base >= 64 << 20, "B's range starts after A's span: {base}");
    let mut merged: Vec<_> = a
        .iter()
        .copied()
        .chain(b.iter().map(|&(t, op, o, s)| (t + 2, op, o + base, s)))
        .collect();
    merged.sort_by_key(|r| r.0);
    let pm = write_trace(dir.path(), "m.csv", &merged);
    let single = run_with(&preset("default"), &[], &[&pm]).unwrap();
    let keys = ["timing", "trace", "config", "flows"];
    assert_eq!(without(flows, &keys), without(single, &keys));
}

/// Two flows of `n` reads each of LPN 0, all submitted at 0; the controller takes one command
/// at a time, so their order is the arbitration's alone.
fn arbitrated(arbitration: &str, extra: &[&str]) -> (f64, f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let reqs: Vec<_> = (0..6).map(|_| (0, 'R', 0, 4096)).collect();
    let a = write_trace(dir.path(), "a.csv", &reqs);
    let b = write_trace(dir.path(), "b.csv", &reqs);
    let cfg = format!(
        "{SMALL_DEV}\n[host]\nmax_outstanding = 1\narbitration = \"{arbitration}\"\n\
         [precondition]\nfill = \"touched\"\n"
    );
    let mut ov = vec!["host.flow_space=\"shared\""];
    ov.extend_from_slice(extra);
    let v = run_with(&cfg, &ov, &[&a, &b]).unwrap();
    // Every command is the same read: one service time S.
    let s = v["host"]["service"]["all"]["mean_us"].as_f64().unwrap();
    assert_eq!(v["host"]["service"]["all"]["max_us"].as_f64(), Some(s));
    (mean_us(&v["flows"][0]), mean_us(&v["flows"][1]), s)
}

#[test]
fn round_robin_alternates_and_weighted_round_robin_favours_the_heavier_class() {
    // Round robin: A B A B …: A's commands complete at S, 3S, …, 11S (mean 6S), B's at
    // 2S, …, 12S (mean 7S).
    let (a, b, s) = arbitrated("round_robin", &[]);
    assert!(s > 0.0);
    assert!((a - 6.0 * s).abs() < 1e-6 * s, "RR A {a} vs 6 × {s}");
    assert!((b - 7.0 * s).abs() < 1e-6 * s, "RR B {b} vs 7 × {s}");
    // WRR, A high (weight 2) and B low (weight 1): A A B A A B A A B B B B, so A at 1, 2, 4,
    // 5, 7, 8 (mean 4.5S) and B at 3, 6, 9, 10, 11, 12 (mean 8.5S).
    let prio = "host.flows=[{priority=\"high\"},{priority=\"low\"}]";
    let (a, b, s) = arbitrated("weighted_round_robin", &["host.wrr_weights=[2,1,1]", prio]);
    assert!((a - 4.5 * s).abs() < 1e-6 * s, "WRR A {a} vs 4.5 × {s}");
    assert!((b - 8.5 * s).abs() < 1e-6 * s, "WRR B {b} vs 8.5 × {s}");
    // Urgent before everything.
    let prio = "host.flows=[{priority=\"low\"},{priority=\"urgent\"}]";
    let (a, b, s) = arbitrated("weighted_round_robin", &[prio]);
    assert!((b - 3.5 * s).abs() < 1e-6 * s, "urgent B {b} vs 3.5 × {s}");
    assert!((a - 9.5 * s).abs() < 1e-6 * s, "low A {a} vs 9.5 × {s}");
}

#[test]
fn partitioned_flows_keep_their_data_apart_and_shared_ones_do_not() {
    let dir = tempfile::tempdir().unwrap();
    // A writes the first MiB; B reads it one second later.
    let w: Vec<_> = (0..16).map(|i| (i * 1000, 'W', i * 65536, 65536)).collect();
    let r: Vec<_> = (0..16).map(|i| (i * 1000, 'R', i * 65536, 65536)).collect();
    let a = write_trace(dir.path(), "w.csv", &w);
    let b = write_trace(dir.path(), "r.csv", &r);
    let cfg = format!(
        "{}\n[[host.flows]]\n[[host.flows]]\nstart_offset_s = 1.0\n",
        preset("default")
    );
    let none = "precondition.fill=\"none\"";
    let part = run_with(&cfg, &[none], &[&a, &b]).unwrap();
    let shared = run_with(&cfg, &[none, "host.flow_space=\"shared\""], &[&a, &b]).unwrap();
    let unmapped = |v: &Value| {
        v["flows"][1]["host"]["unmapped_read_pages"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(unmapped(&part), 256, "B's own range was never written");
    assert_eq!(unmapped(&shared), 0, "B reads what A wrote");
    assert_eq!(part["flows"][1]["logical_base_bytes"], 1 << 20);
    assert_eq!(part["flows"][0]["logical_range_bytes"], 1 << 20);
    assert_eq!(shared["flows"][1]["logical_base_bytes"], 0);
    // B starts a second later: its first read arrives at 1 s.
    assert!(part["sim"]["last_arrival_s"].as_f64().unwrap() >= 1.0);
}

#[test]
fn a_flow_alone_is_not_slower_than_shared_and_the_report_names_the_flows() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_trace(dir.path(), "a.csv", &mixed(4000, 2, 20_000));
    let b = write_trace(dir.path(), "b.csv", &mixed(4000, 3, 20_000));
    let cfg = preset("default");
    let both = run_with(&cfg, &[], &[&a, &b]).unwrap();
    let flows = both["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2);
    let total: u64 = flows
        .iter()
        .map(|f| f["host"]["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(total, both["host"]["requests"].as_u64().unwrap());
    assert_eq!(total, 8000);
    for (i, name) in ["a.csv", "b.csv"].iter().enumerate() {
        let only = format!("host.replay_only_flow=\"{name}\"");
        let alone = run_with(&cfg, &[&only], &[&a, &b]).unwrap();
        assert_eq!(alone["flows"][i]["replayed"], true);
        assert_eq!(alone["flows"][1 - i]["replayed"], false);
        assert_eq!(alone["flows"][1 - i]["host"]["requests"], 0);
        // the silent flow's trace is still described (its pre-pass read it)
        assert_eq!(
            alone["flows"][1 - i]["trace"]["counters"],
            both["flows"][1 - i]["trace"]["counters"]
        );
        // The same device: sized and preconditioned by both flows.
        assert_eq!(alone["device"], both["device"]);
        assert_eq!(alone["precondition"], both["precondition"]);
        let (shared, solo) = (mean_us(&flows[i]), mean_us(&alone["flows"][i]));
        assert!(
            shared >= solo * 0.99,
            "{name}: shared {shared} µs, alone {solo} µs"
        );
    }
}

#[test]
fn a_closed_loop_keeps_its_depth_through_trims() {
    // A trim holds no host slot; the closed loop must not lose queue depth to it.
    let dir = tempfile::tempdir().unwrap();
    let mut reqs = Vec::new();
    for i in 0..64u64 {
        reqs.push((i, 'D', i * 4096, 4096));
    }
    for i in 0..64u64 {
        reqs.push((100 + i, 'W', i * 4096, 4096));
    }
    let t = write_trace(dir.path(), "t.csv", &reqs);
    let cfg = preset("default");
    let ov = [
        "host.mode=\"closed\"",
        "host.queue_depth=4",
        "ftl.trim=true",
    ];
    let single = run_with(&cfg, &ov, &[&t]).unwrap();
    assert_eq!(single["host"]["writes"], 64, "every write replayed");
    let flows = run_with(&format!("{cfg}\n[[host.flows]]\n"), &ov, &[&t]).unwrap();
    assert_eq!(flows["flows"][0]["host"]["writes"], 64);
}

#[test]
fn refusals_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let t = write_trace(dir.path(), "a.csv", &mixed(10, 4, 1000));
    let cfg = preset("default");
    let two = format!("{cfg}\n[[host.flows]]\n[[host.flows]]\n");
    // Two flows spanning the whole 64 MiB of a fixed device: more than a half share each.
    let small = SMALL_DEV.to_string();
    let wide = write_trace(dir.path(), "wide.csv", &[(0, 'W', (64 << 20) - 4096, 4096)]);
    let cache = format!("{}\n[[host.flows]]\n[[host.flows]]\n", preset("flexecc"));
    for (config, ov, traces, want) in [
        (
            cfg.as_str(),
            vec!["host.arbitration=\"weighted_round_robin\""],
            vec![&t],
            "host.arbitration",
        ),
        (
            two.as_str(),
            vec!["host.flows=[{priority=\"high\"},{}]"],
            vec![&t, &t],
            "host.flows[0].priority",
        ),
        (
            two.as_str(),
            vec!["host.replay_only_flow=\"nope\""],
            vec![&t, &t],
            "host.replay_only_flow",
        ),
        (two.as_str(), vec![], vec![&t, &t, &t], "host.flows"),
        (two.as_str(), vec![], vec![], "host.flows[0].trace"),
        (
            small.as_str(),
            vec!["precondition.fill=\"touched\""],
            vec![&wide, &wide],
            "host.flow_space",
        ),
        (cache.as_str(), vec![], vec![&t, &t], "host.flows"),
    ] {
        let paths: Vec<&Path> = traces.iter().map(|p| p.as_path()).collect();
        let paths = if paths.is_empty() {
            vec![t.as_path()]
        } else {
            paths
        };
        let req_traces = if traces.is_empty() {
            &paths[..0]
        } else {
            &paths[..]
        };
        let err = match req_traces.len() {
            0 => {
                let req = RunRequest {
                    config_toml: config.to_string(),
                    config_path: None,
                    overrides: ov.iter().map(|s| s.to_string()).collect(),
                    scheme: None,
                    trace_path: t.clone(),
                    trace_options: TraceOptions::default(),
                    flow_traces: Vec::new(),
                };
                run(&req, &mut |_, _, _| {})
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
            _ => run_with(config, &ov, req_traces).map(|_| ()),
        }
        .expect_err(want);
        assert!(err.contains(want), "{want}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}
