//! The optional per-interval time series (`stats.timeseries`) and latency CDFs
//! (`stats.latency_cdf`): their totals equal the report's, they do not change the model (the
//! report is the same with them on or off, apart from the echoed config), and they are
//! deterministic.

use crate::common::{f, simulate};
use nandlab_core::config::load;
use nandlab_core::trace::{HostRequest, Op};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde_json::Value;

const SMALL: &str = r#"
[device]
channels = 2
chips_per_channel = 2
pages_per_block = 32
page_size_bytes = 8192
logical_capacity_bytes = 33554432
op_percent_of_logical = 15
[timing]
read_us = [45.0]
program_us = [1300.0]
erase_us = 3800.0
channel_mt_s = 400.0
ecc_decode_us = 12.5
"#;

/// Random reads and writes, bursty enough to queue and to run GC.
fn workload(n: u64) -> Vec<HostRequest> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let ps = 8192u64;
    let pages = 33_554_432 / ps;
    let mut t = 0u64;
    (0..n)
        .map(|_| {
            t += rng.gen_range(0..400_000u64);
            let pg = rng.gen_range(1..=4u64);
            HostRequest {
                arrival_ns: t,
                op: if rng.gen_bool(0.7) {
                    Op::Write
                } else {
                    Op::Read
                },
                offset_bytes: rng.gen_range(0..pages - pg) * ps,
                len_bytes: pg * ps,
            }
        })
        .collect()
}

fn run(overrides: &[String], reqs: &[HostRequest]) -> Value {
    let cfg = load(SMALL, "<test>", overrides).expect("config");
    let r = simulate(cfg, reqs).expect("run");
    crate::without_wall_clock(r)
}

struct Rows {
    cols: Vec<String>,
    rows: Vec<Vec<f64>>,
}

impl Rows {
    fn read(path: &std::path::Path) -> Rows {
        let text = std::fs::read_to_string(path).expect("time series written");
        let mut lines = text.lines();
        let cols = lines
            .next()
            .unwrap()
            .split(',')
            .map(str::to_string)
            .collect();
        let rows = lines
            .map(|l| {
                l.split(',')
                    .map(|x| {
                        if x.is_empty() {
                            f64::NAN
                        } else {
                            x.parse().unwrap()
                        }
                    })
                    .collect()
            })
            .collect();
        Rows { cols, rows }
    }
    fn col(&self, name: &str) -> Vec<f64> {
        let i = self.cols.iter().position(|c| c == name).unwrap();
        self.rows.iter().map(|r| r[i]).collect()
    }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-12)
}

#[test]
fn totals_match_the_report_and_the_model_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("ts.csv");
    let reqs = workload(20_000);
    let off = run(&[], &reqs);
    let on = run(
        &[
            format!("stats.timeseries={:?}", csv.display().to_string()),
            "stats.timeseries_interval_ms=50".into(),
            "stats.latency_cdf=true".into(),
        ],
        &reqs,
    );
    assert!(f(&off, "gc.pages_moved") > 0.0, "the workload must run GC");
    assert!(
        f(&off, "host.wait.all.mean_us") > 0.0,
        "the workload must queue"
    );

    // Same model: everything but the echoed config and the added CDF is identical.
    let mut on_cmp = on.clone();
    on_cmp["config"]["stats"] = off["config"]["stats"].clone();
    let cdf = on_cmp["host"].as_object_mut().unwrap().remove("cdf");
    assert_eq!(on_cmp, off);
    assert!(off["config"]["stats"].get("timeseries").is_none());
    assert!(off["host"].get("cdf").is_none());

    // The CDF ends at the max and agrees with the percentiles.
    let cdf = cdf.expect("host.cdf");
    let all: Vec<f64> = cdf["all_us"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert!(all.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(*all.last().unwrap(), f(&off, "host.all.max_us"));
    let qi = cdf["quantiles"]
        .as_array()
        .unwrap()
        .iter()
        .position(|q| q.as_f64() == Some(0.99))
        .unwrap();
    assert_eq!(all[qi], f(&off, "host.all.p99_us"));

    // Time-series totals.
    let ts = Rows::read(&csv);
    let dur = ts.col("duration_s");
    let sum = |c: &str| ts.col(c).iter().sum::<f64>();
    let span = f(&off, "sim.span_s");
    assert!(
        close(dur.iter().sum::<f64>(), span, 1e-9),
        "rows cover the span"
    );
    assert_eq!(sum("reads") + sum("writes"), f(&off, "host.requests"));
    assert_eq!(sum("reads"), f(&off, "host.reads"));
    assert_eq!(sum("gc_moves"), f(&off, "gc.pages_moved"));
    assert_eq!(sum("erases"), f(&off, "flash.erases"));
    let bytes = f(&off, "host.read_bytes") + f(&off, "host.write_bytes");
    assert_eq!(sum("bytes"), bytes);
    // Die busy time and request time in the device are spread exactly over intervals.
    let util = ts.col("die_utilization");
    assert!(util.iter().all(|&u| (0.0..=1.0 + 1e-12).contains(&u)));
    let busy: f64 = util.iter().zip(&dur).map(|(u, d)| u * d).sum();
    assert!(close(busy / span, f(&off, "flash.die_utilization"), 1e-9));
    let qd: f64 = ts
        .col("queue_depth")
        .iter()
        .zip(&dur)
        .map(|(q, d)| q * d)
        .sum();
    let resp_s = f(&off, "host.mean_us") * f(&off, "host.requests") / 1e6;
    assert!(close(qd, resp_s, 1e-9), "{qd} vs {resp_s}");
    // Per-interval mean response, weighted by completions, is the report's mean.
    let done: Vec<f64> = ts
        .col("reads")
        .iter()
        .zip(ts.col("writes"))
        .map(|(r, w)| r + w)
        .collect();
    let m: f64 = ts
        .col("mean_us")
        .iter()
        .zip(&done)
        .filter(|(_, &n)| n > 0.0)
        .map(|(m, n)| m * n)
        .sum();
    assert!(close(
        m / f(&off, "host.requests"),
        f(&off, "host.mean_us"),
        1e-9
    ));
    for ((p99, max), n) in ts.col("p99_us").iter().zip(ts.col("max_us")).zip(&done) {
        // empty (NaN) exactly where nothing completed
        assert_eq!(*n == 0.0, max.is_nan());
        assert_eq!(*n == 0.0, p99.is_nan());
        if *n > 0.0 {
            assert!(*p99 <= max * 1.01 + 1e-9 && *p99 > 0.0);
        }
    }
    assert!(done.contains(&0.0), "some intervals are empty");

    // Deterministic: a second run writes the same bytes.
    let csv2 = dir.path().join("ts2.csv");
    run(
        &[
            format!("stats.timeseries={:?}", csv2.display().to_string()),
            "stats.timeseries_interval_ms=50".into(),
        ],
        &reqs,
    );
    assert_eq!(std::fs::read(&csv).unwrap(), std::fs::read(&csv2).unwrap());
}

#[test]
fn interval_without_a_path_is_an_error_naming_the_key() {
    let e = load(SMALL, "<test>", &["stats.timeseries_interval_ms=10".into()]).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("stats.timeseries_interval_ms"), "{msg}");
    assert!(msg.contains("stats.timeseries"), "{msg}");
    let e = load(
        SMALL,
        "<test>",
        &[
            "stats.timeseries=\"x.csv\"".into(),
            "stats.timeseries_interval_ms=0".into(),
        ],
    )
    .unwrap_err();
    assert!(e.to_string().contains("allowed range"), "{e}");
}
