//! Measurements for issue #3 (printed; run with `--ignored --nocapture` in release mode),
//! plus the Table 11 ordering test.

use nandlab_core::ecc::{Bch, BchTiming, Ldpc, LDPC_HARD_LIMIT};
use nandlab_core::reliability::table::{CacheStatus, RberTable, TableSpec};
use nandlab_core::reliability::vth::{
    simulate, Condition, LevelConfig, McOptions, McResult, VthParams, DAY_S,
};

/// Guo Table 11 (retention BER; rows baseline, NUNMA 1–3 per P/E; columns 1 d, 2 d, 1 w, 1 mo).
const GUO_T11: [[[f64; 4]; 4]; 5] = [
    [
        [0.000638, 0.000715, 0.00103, 0.00184],
        [0.000370, 0.000453, 0.000827, 0.00149],
        [0.000167, 0.000173, 0.000243, 0.000330],
        [0.000120, 0.000133, 0.000167, 0.000181],
    ],
    [
        [0.00146, 0.00169, 0.00260, 0.00459],
        [0.000677, 0.000860, 0.00143, 0.00249],
        [0.000343, 0.000367, 0.000570, 0.000807],
        [0.000237, 0.000257, 0.000293, 0.000390],
    ],
    [
        [0.00229, 0.00284, 0.00456, 0.00778],
        [0.00117, 0.00149, 0.00240, 0.00402],
        [0.000443, 0.000633, 0.000820, 0.00150],
        [0.000327, 0.000343, 0.000457, 0.000633],
    ],
    [
        [0.00359, 0.00457, 0.00699, 0.0120],
        [0.00177, 0.00233, 0.00349, 0.00545],
        [0.000690, 0.000853, 0.00123, 0.00227],
        [0.000460, 0.000540, 0.000713, 0.00109],
    ],
    [
        [0.00484, 0.00613, 0.00961, 0.0161],
        [0.00218, 0.00288, 0.00446, 0.00672],
        [0.00100, 0.00131, 0.00192, 0.00324],
        [0.000623, 0.000627, 0.000973, 0.00151],
    ],
];
const T11_PE: [f64; 5] = [2000.0, 3000.0, 4000.0, 5000.0, 6000.0];
const T11_RET: [f64; 4] = [DAY_S, 2.0 * DAY_S, 7.0 * DAY_S, 30.0 * DAY_S];

fn configs() -> [LevelConfig; 4] {
    [
        LevelConfig::Normal,
        LevelConfig::nunma(1).unwrap(),
        LevelConfig::nunma(2).unwrap(),
        LevelConfig::nunma(3).unwrap(),
    ]
}

fn point(cfg: &LevelConfig, pe: f64, t: f64) -> McResult {
    point_with(&VthParams::guo_ch3_mlc(), cfg, pe, t)
}

fn point_with(p: &VthParams, cfg: &LevelConfig, pe: f64, t: f64) -> McResult {
    let c = Condition {
        pe,
        retention_s: t,
        dvpp: 0.15,
        reads: 0.0,
    };
    simulate(p, cfg, None, &c, &McOptions::default()).unwrap()
}

/// All 80 Table 11 points of the model: [pe][config][ret].
fn model_t11() -> Vec<Vec<Vec<McResult>>> {
    model_t11_with(VthParams::guo_ch3_mlc())
}

fn model_t11_with(p: VthParams) -> Vec<Vec<Vec<McResult>>> {
    T11_PE
        .iter()
        .map(|&pe| {
            configs()
                .iter()
                .map(|cfg| {
                    T11_RET
                        .iter()
                        .map(|&t| point_with(&p, cfg, pe, t))
                        .collect()
                })
                .collect()
        })
        .collect()
}

fn print_side_by_side(m: &[Vec<Vec<McResult>>], what: &str, f: fn(&McResult) -> f64) {
    let names = ["Baseline", "NUNMA 1", "NUNMA 2", "NUNMA 3"];
    println!("\n== {what}: model (model/thesis) ==");
    println!(
        "P/E   scheme    | 1 day              | 2 days             | 1 week             | 1 month"
    );
    let mut log_ratio_sum = [0.0f64; 4];
    for (p, pe) in T11_PE.iter().enumerate() {
        for c in 0..4 {
            let mut line = format!("{pe:<5} {:<9} |", names[c]);
            for r in 0..4 {
                let v = f(&m[p][c][r]);
                let ratio = v / GUO_T11[p][c][r];
                log_ratio_sum[c] += ratio.ln();
                line += &format!(" {v:.3e} ({ratio:5.2}x) |");
            }
            println!("{line}");
        }
    }
    for c in 0..4 {
        println!(
            "geometric-mean ratio model/thesis {}: {:.2}",
            names[c],
            (log_ratio_sum[c] / 20.0).exp()
        );
    }
    println!("ordering violations: {:?}", ordering_violations(m, f));
}

fn ordering_violations(m: &[Vec<Vec<McResult>>], f: fn(&McResult) -> f64) -> Vec<String> {
    let mut violations = Vec::new();
    for (p, pe) in T11_PE.iter().enumerate() {
        for (r, t) in T11_RET.iter().enumerate() {
            for c in 0..3 {
                let (a, b) = (f(&m[p][c][r]), f(&m[p][c + 1][r]));
                if a <= b {
                    violations.push(format!(
                        "P/E {pe}, {} d: config {c} {a:.3e} <= config {} {b:.3e}",
                        t / DAY_S,
                        c + 1
                    ));
                }
            }
        }
    }
    violations
}

#[test]
#[ignore = "measurement: prints Guo Table 11 side by side"]
fn print_table11() {
    let alt = model_t11_with(VthParams::guo_ch3_mlc().with_read_ref_margin(0.0).unwrap());
    println!("\n##### alternative reading: normal-state read references at the verify voltages");
    print_side_by_side(&alt, "total RBER (refs at verify)", |r| r.rber);
    print_side_by_side(&alt, "retention-time BER (refs at verify)", |r| {
        r.retention_rber
    });
    println!("\n##### default reading: read references 0.05 V below verify");
    let t0 = std::time::Instant::now();
    let m = model_t11();
    print_side_by_side(&m, "total RBER", |r| r.rber);
    print_side_by_side(
        &m,
        "retention-time BER (cells correct after programming)",
        |r| r.retention_rber,
    );
    print_side_by_side(&m, "program BER", |r| r.program_rber);
    let cells: u64 = m.iter().flatten().flatten().map(|r| r.cells).sum();
    let all_met = m.iter().flatten().flatten().all(|r| r.met_target);
    let worst = m
        .iter()
        .flatten()
        .flatten()
        .map(|r| r.ci95_half / r.rber)
        .fold(0.0, f64::max);
    let worst_ret = m
        .iter()
        .flatten()
        .flatten()
        .map(|r| r.retention_ci95_half / r.retention_rber)
        .fold(0.0, f64::max);
    println!(
        "80 points, {cells} cells in total, all met ±10% rule: {all_met}, worst rel. half-width {worst:.3} (retention component {worst_ret:.3}), {:?}",
        t0.elapsed()
    );
}

/// Guo Table 6 (extra LDPC soft-sensing levels); rows P/E 2000–6000, columns 0 d, 1 d, 2 d,
/// 1 week, 1 month. Used only as the fit target and for the comparison count.
const GUO_T6: [[u32; 5]; 5] = [
    [0, 0, 0, 0, 0],
    [0, 0, 0, 0, 1],
    [0, 0, 0, 1, 4],
    [0, 0, 1, 2, 4],
    [0, 1, 2, 4, 6],
];
const T6_RET: [f64; 5] = [0.0, DAY_S, 2.0 * DAY_S, 7.0 * DAY_S, 30.0 * DAY_S];

#[test]
#[ignore = "measurement: regenerates Guo Table 6 from the model's RBER"]
fn print_table6() {
    let mut pts = Vec::new();
    let mut rb = [[0.0; 5]; 5];
    for (p, &pe) in T11_PE.iter().enumerate() {
        for (r, &t) in T6_RET.iter().enumerate() {
            rb[p][r] = point(&LevelConfig::Normal, pe, t).rber;
            pts.push((rb[p][r], GUO_T6[p][r]));
        }
    }
    let th = Ldpc::fit_thresholds(&pts, LDPC_HARD_LIMIT, 6).unwrap();
    let ths: Vec<String> = th.iter().map(|x| format!("{x:.3e}")).collect();
    println!("fitted thresholds (max RBER for 0..6 extra levels): {ths:?}");
    let ldpc = Ldpc::new(4608 * 8, 0.0, 0.0, th).unwrap();
    let (mut exact, mut within1) = (0, 0);
    println!("P/E   | 0 day        | 1 day        | 2 day        | 1 week       | 1 month   (model RBER → levels [thesis])");
    for (p, pe) in T11_PE.iter().enumerate() {
        let mut line = format!("{pe:<5} |");
        for r in 0..5 {
            let lv = ldpc.levels_for(rb[p][r]).map_or(-1, |v| v as i64);
            let want = i64::from(GUO_T6[p][r]);
            exact += usize::from(lv == want);
            within1 += usize::from((lv - want).abs() <= 1);
            line += &format!(" {:.2e}→{lv} [{want}] |", rb[p][r]);
        }
        println!("{line}");
    }
    println!("Table 6: {exact}/25 exact, {within1}/25 within one level");
    // Same with the hard-decision limit only (no fit): how many of the 0-cells stay 0.
    let zeros_ok = (0..25)
        .filter(|&i| GUO_T6[i / 5][i % 5] == 0)
        .filter(|&i| rb[i / 5][i % 5] <= LDPC_HARD_LIMIT)
        .count();
    let zeros = (0..25).filter(|&i| GUO_T6[i / 5][i % 5] == 0).count();
    // Counterfactual, clearly not Guo's setting: if the hard-decision limit were also a free
    // parameter, how well could monotone thresholds on the model's RBER reproduce Table 6?
    let mut best = (0usize, 0usize, 0.0f64);
    let mut cands: Vec<f64> = pts.iter().map(|p| p.0).collect();
    cands.push(0.0);
    for &lim in &cands {
        let th = Ldpc::fit_thresholds(&pts, lim, 6).unwrap();
        let l = Ldpc::new(4608 * 8, 0.0, 0.0, th).unwrap();
        let ex = pts
            .iter()
            .filter(|(r, w)| l.levels_for(*r) == Some(*w))
            .count();
        let w1 = pts
            .iter()
            .filter(|(r, w)| {
                l.levels_for(*r)
                    .is_some_and(|v| (i64::from(v) - i64::from(*w)).abs() <= 1)
            })
            .count();
        if (ex, w1) > (best.0, best.1) {
            best = (ex, w1, lim);
        }
    }
    println!(
        "counterfactual with the hard limit fitted too: {}/25 exact, {}/25 within one (limit {:.3e})",
        best.0, best.1, best.2
    );
    println!("cells needing 0 levels in Guo with model RBER ≤ 4e-3: {zeros_ok}/{zeros}");
}

#[test]
#[ignore = "measurement: BCH latency ratios vs FlexECC §1 and eq. 4-5"]
fn print_bch() {
    let tm = BchTiming::flexecc_hw();
    let b6 = Bch::for_page(8 * 8192, 6, &tm).unwrap();
    let b12 = Bch::for_page(8 * 8192, 12, &tm).unwrap();
    println!(
        "BCH t=6  n={} m={}: encode {:.3} µs, clean {:.3} µs, corrupted {:.3} µs",
        b6.n,
        b6.m,
        b6.encode_ns() / 1e3,
        b6.decode_clean_ns() / 1e3,
        b6.decode_corrupted_ns() / 1e3
    );
    println!(
        "BCH t=12 n={} m={}: encode {:.3} µs, clean {:.3} µs, corrupted {:.3} µs",
        b12.n,
        b12.m,
        b12.encode_ns() / 1e3,
        b12.decode_clean_ns() / 1e3,
        b12.decode_corrupted_ns() / 1e3
    );
    println!(
        "ratio t=12/t=6 corrupted: {:.3} (FlexECC §1: software 180/90 = 2.00, hardware 17/10 = 1.70); clean: {:.3}",
        b12.decode_corrupted_ns() / b6.decode_corrupted_ns(),
        b12.decode_clean_ns() / b6.decode_clean_ns()
    );
    for b in [&b6, &b12] {
        println!(
            "t={}: CRC speed-up correct {:.3} (eq. 4, ≈ t = {}), corrupted {:.3} (eq. 5, ≈ 2t = {})",
            b.t,
            b.crc_speedup_correct(),
            b.t,
            b.crc_speedup_error(),
            2 * b.t
        );
    }
}

#[test]
#[ignore = "measurement: default table cold and warm (run in release mode)"]
fn print_table_timing() {
    let dir = tempfile::tempdir().unwrap();
    let spec = TableSpec::guo_default();
    let t0 = std::time::Instant::now();
    let (t, s) = RberTable::load_or_build(&spec, dir.path()).unwrap();
    let cold = t0.elapsed();
    assert_eq!(s, CacheStatus::Built);
    let t1 = std::time::Instant::now();
    let (t2, s2) = RberTable::load_or_build(&spec, dir.path()).unwrap();
    let warm = t1.elapsed();
    assert_eq!(s2, CacheStatus::Hit);
    assert_eq!(t, t2);
    let simulated: Vec<u64> = (0..t.values.len())
        .filter(|i| {
            let r = i % spec.retention_s.len();
            let p = (i / spec.retention_s.len()) % spec.pe.len();
            !(spec.pe[p] == 0.0 && r > 0)
        })
        .map(|i| t.cells[i])
        .collect();
    let cells: u64 = simulated.iter().sum();
    println!(
        "simulated points {}, cells per point min {} median {} max {}, threads {:?}",
        simulated.len(),
        simulated.iter().min().unwrap(),
        {
            let mut v = simulated.clone();
            v.sort_unstable();
            v[v.len() / 2]
        },
        simulated.iter().max().unwrap(),
        std::thread::available_parallelism().map(|n| n.get().min(4))
    );
    let unmet = t.met_target.iter().filter(|m| !**m).count();
    println!(
        "default table: {} points, {cells} cells simulated, {unmet} points missed the precision rule; cold {cold:?}, warm {warm:?}",
        t.values.len()
    );
    let t3 = std::time::Instant::now();
    let mut acc = 0.0;
    for i in 0..1_000_000u32 {
        acc += t.rber(
            f64::from(i % 6000),
            f64::from(i) * 3.0,
            (i % 2) as usize,
            (i % 4) as usize,
        );
    }
    println!("1e6 lookups: {:?} (checksum {acc:.3})", t3.elapsed());
}

/// Guo's ordering baseline > NUNMA 1 > NUNMA 2 > NUNMA 3 in every Table 11 column (§3.6.1),
/// on the total RBER and on the retention-time BER, under the alternative reading of the
/// normal-state read references (at the verify voltages; `VthParams::read_ref` explains why
/// it is not the default).
#[test]
fn table11_ordering_holds_with_read_refs_at_verify() {
    let m = model_t11_with(VthParams::guo_ch3_mlc().with_read_ref_margin(0.0).unwrap());
    for f in [|r: &McResult| r.rber, |r: &McResult| r.retention_rber] {
        let v = ordering_violations(&m, f);
        assert!(v.is_empty(), "{} violations:\n{}", v.len(), v.join("\n"));
    }
}

/// With the default reading (references 0.05 V below verify) the model gives NUNMA 1 a higher
/// RBER than the baseline in every column — the deviation reported in issue #3. This test pins
/// it, so a model change that alters it is noticed.
#[test]
fn default_reading_puts_nunma1_above_baseline() {
    let m = model_t11();
    let v = ordering_violations(&m, |r| r.rber);
    let base_vs_n1 = v.iter().filter(|s| s.contains("config 0")).count();
    assert_eq!(base_vs_n1, 20, "{v:?}");
}

/// The part of Guo's ordering the model does reproduce: NUNMA 1 > NUNMA 2 > NUNMA 3 in every
/// Table 11 column (retention-time BER and total RBER).
#[test]
fn table11_ordering_nunma1_nunma2_nunma3() {
    let m = model_t11();
    for f in [|r: &McResult| r.retention_rber, |r: &McResult| r.rber] {
        let v: Vec<String> = ordering_violations(&m, f)
            .into_iter()
            .filter(|s| !s.contains("config 0"))
            .collect();
        assert!(v.is_empty(), "{} violations:\n{}", v.len(), v.join("\n"));
    }
}

/// FlexLevel's premise (Guo §3.6.1, Table 11): reduced-state (NUNMA 3) cells stay below the
/// 4e-3 hard-decision limit of the LDPC code even at 6000 P/E and one month of retention, so
/// they need no soft sensing. (The model's normal-state baseline is below the limit there too,
/// 2.98e-3 against the thesis's 1.61e-2 — spec §0.3 — which is why FlexLevel's runs take their
/// soft-sensing levels from Table 6, `reliability.model = "table6"`.)
#[test]
fn nunma3_stays_below_the_hard_decision_limit_at_6000_pe_one_month() {
    const HARD_DECISION_LIMIT: f64 = 4e-3;
    let n3 = point(&LevelConfig::nunma(3).unwrap(), 6000.0, 30.0 * DAY_S);
    assert!(
        n3.rber < HARD_DECISION_LIMIT,
        "NUNMA 3 RBER {:.3e}",
        n3.rber
    );
}
