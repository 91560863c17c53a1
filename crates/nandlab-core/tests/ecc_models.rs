//! ECC models: BCH timing vs FlexECC, LDPC soft sensing, CRC, UBER, error draws, read cost.

use nandlab_core::ecc::{
    binomial_tail, draw_errors, uber, Bch, BchTiming, Crc, EccModel, Ldpc, ReadOutcome, CRC_NS,
    LDPC_HARD_LIMIT, LDPC_SENSE_NS, LDPC_TRANSFER_NS,
};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

fn bch(t: u32) -> Bch {
    Bch::for_page(8 * 8192, t, &BchTiming::flexecc_hw()).unwrap()
}

#[test]
fn bch_reproduces_flexecc_table2_from_one_reference() {
    // Only the corrupted-page latency at t = 6 (10 µs) is given; the clean-page decode
    // (Table 2: 5 µs) and the encode (Table 2: 0.8 µs) follow from the operation counts.
    let b = bch(6);
    assert_eq!(b.m, 17);
    assert!((b.decode_corrupted_ns() - 10_000.0).abs() < 1e-6);
    assert!(
        (b.decode_clean_ns() / 5_000.0 - 1.0).abs() < 0.01,
        "{}",
        b.decode_clean_ns()
    );
    assert!(
        (b.encode_ns() / 800.0 - 1.0).abs() < 0.05,
        "{}",
        b.encode_ns()
    );
}

#[test]
fn bch_t12_vs_t6_ratio_and_crc_speedups() {
    let (b6, b12) = (bch(6), bch(12));
    let ratio = b12.decode_corrupted_ns() / b6.decode_corrupted_ns();
    // FlexECC §1: software 90 → 180 µs (2.0), hardware 10 → 17 µs (1.7). The op-count model
    // is linear in t, so it follows the software ratio.
    assert!((ratio - 2.0).abs() < 0.01, "{ratio}");
    for b in [&b6, &b12] {
        let (n, t) = (f64::from(b.n), f64::from(b.t));
        // Closed forms of eq. 4-5 with T_m = T_a.
        let s4 = (2.0 * n - 1.0) * t / (2.0 * (n - 1.0));
        let s5 = (4.0 * n * t + 4.0 * t * t - t) / (2.0 * (n - 1.0));
        assert!((b.crc_speedup_correct() - s4).abs() < 1e-9);
        assert!((b.crc_speedup_error() - s5).abs() < 1e-9);
        assert!((b.crc_speedup_correct() / t - 1.0).abs() < 0.01);
        assert!((b.crc_speedup_error() / (2.0 * t) - 1.0).abs() < 0.01);
    }
}

#[test]
fn bch_read_cost_and_failure() {
    let b = bch(8);
    let m = EccModel::Bch(b);
    let clean = m.read_cost(1e-4, 0);
    assert_eq!(clean.outcome, ReadOutcome::Corrected);
    assert_eq!(clean.decode_ns, b.decode_clean_ns());
    let fixed = m.read_cost(1e-4, 8);
    assert_eq!(fixed.outcome, ReadOutcome::Corrected);
    assert_eq!(fixed.decode_ns, b.decode_corrupted_ns());
    assert!(!b.fails(8) && b.fails(9));
    assert_eq!(m.read_cost(1e-4, 9).outcome, ReadOutcome::Uncorrectable);
    assert_eq!(clean.extra_sense_ns + clean.extra_transfer_ns, 0.0);
}

#[test]
fn crc_detects_but_never_corrects() {
    let m = EccModel::Crc(Crc {
        n_bits: 8 * 8192,
        detect_ns: CRC_NS,
    });
    let ok = m.read_cost(1e-3, 0);
    assert_eq!(ok.outcome, ReadOutcome::Corrected);
    assert_eq!(ok.decode_ns, 800.0);
    let bad = m.read_cost(1e-3, 1);
    assert_eq!(bad.outcome, ReadOutcome::DetectedOnly);
    assert_eq!(bad.total_ns(), 800.0);
}

#[test]
fn ldpc_levels_costs_and_uncorrectable() {
    let th = vec![LDPC_HARD_LIMIT, 5e-3, 6e-3, 7e-3, 8e-3, 9e-3, 1e-2];
    let l = Ldpc::new(4608 * 8, 2_000.0, 1_000.0, th).unwrap();
    assert_eq!(l.levels_for(1e-3), Some(0));
    assert_eq!(l.levels_for(4e-3), Some(0));
    assert_eq!(l.levels_for(4.5e-3), Some(1));
    assert_eq!(l.levels_for(9.5e-3), Some(6));
    assert_eq!(l.levels_for(2e-2), None);
    let m = EccModel::Ldpc(l);
    // A worn, old page vs a fresh one: the difference is exactly the sensing, transfer and
    // decode terms of the extra levels (Guo §3.6: 8 µs + 20 µs per level).
    let fresh = m.read_cost(5e-4, 3);
    let old = m.read_cost(8.5e-3, 300);
    assert_eq!(fresh.soft_levels, 0);
    assert_eq!(old.soft_levels, 5);
    assert_eq!(old.extra_sense_ns, 5.0 * LDPC_SENSE_NS);
    assert_eq!(old.extra_transfer_ns, 5.0 * LDPC_TRANSFER_NS);
    assert_eq!(
        old.total_ns() - fresh.total_ns(),
        5.0 * (8_000.0 + 20_000.0 + 1_000.0)
    );
    let dead = m.read_cost(5e-2, 2000);
    assert_eq!(dead.outcome, ReadOutcome::Uncorrectable);
    assert_eq!(dead.soft_levels, 6);
    assert!(Ldpc::new(100, 0.0, 0.0, vec![5e-3, 4e-3]).is_err());
    assert!(Ldpc::new(100, -1.0, 0.0, vec![4e-3]).is_err());
}

#[test]
fn threshold_fit_reproduces_a_consistent_table() {
    // Monotone synthetic data with gaps in the level sequence (like Table 6: no 3 or 5).
    let pts = [
        (1e-3, 0),
        (3e-3, 0),
        (4.5e-3, 1),
        (5e-3, 1),
        (6e-3, 2),
        (7e-3, 4),
        (8e-3, 4),
        (9e-3, 6),
    ];
    let th = Ldpc::fit_thresholds(&pts, LDPC_HARD_LIMIT, 6).unwrap();
    assert_eq!(th.len(), 7);
    assert_eq!(th[0], LDPC_HARD_LIMIT);
    assert!(th.windows(2).all(|w| w[0] <= w[1]), "{th:?}");
    let l = Ldpc::new(1000, 0.0, 0.0, th).unwrap();
    for (r, want) in pts {
        assert_eq!(l.levels_for(r), Some(want), "rber {r}");
    }
    // Inconsistent data: the fit maximises matches.
    let pts = [(5e-3, 2), (6e-3, 1), (7e-3, 2)];
    let th = Ldpc::fit_thresholds(&pts, LDPC_HARD_LIMIT, 6).unwrap();
    let l = Ldpc::new(1000, 0.0, 0.0, th).unwrap();
    let ok = pts
        .iter()
        .filter(|(r, w)| l.levels_for(*r) == Some(*w))
        .count();
    assert_eq!(ok, 2);
}

#[test]
fn uber_behaves() {
    // Guo ch. 2: BCH (4312, 4208, 8).
    let a = uber(4312, 8, 1e-4, 4208.0);
    let b = uber(4312, 8, 1e-3, 4208.0);
    let c = uber(4312, 12, 1e-3, 4208.0);
    assert!(a > 0.0 && a < b && c < b, "{a} {b} {c}");
    // Independent direct sum of the binomial terms (recurrence in plain f64).
    let (n, p) = (4312.0f64, 1e-4f64);
    let mut term = (1.0 - p).powf(n);
    let mut tail = 0.0;
    for i in 0..60 {
        if i >= 9 {
            tail += term;
        }
        term *= (n - f64::from(i)) / f64::from(i + 1) * p / (1.0 - p);
    }
    assert!(
        (a / (tail / 4208.0) - 1.0).abs() < 1e-9,
        "{a} vs {}",
        tail / 4208.0
    );
    assert_eq!(binomial_tail(100, 100, 0.5), 0.0);
    assert_eq!(binomial_tail(100, 5, 0.0), 0.0);
    assert_eq!(binomial_tail(100, 5, 1.0), 1.0);
    assert_eq!(binomial_tail(100, 5, f64::NAN), 0.0);
    let bc = bch(8);
    assert!((bc.uber(1e-4) - uber(u64::from(bc.n), 8, 1e-4, f64::from(bc.k))).abs() < 1e-300);
}

#[test]
fn draw_errors_is_binomial_and_deterministic() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let (bits, p) = (36_864u32, 1e-3);
    let n = 20_000;
    let xs: Vec<f64> = (0..n)
        .map(|_| f64::from(draw_errors(&mut rng, bits, p)))
        .collect();
    let mean = xs.iter().sum::<f64>() / f64::from(n);
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / f64::from(n - 1);
    let (m0, v0) = (f64::from(bits) * p, f64::from(bits) * p * (1.0 - p));
    assert!(
        (mean - m0).abs() < 4.0 * (v0 / f64::from(n)).sqrt(),
        "{mean} {m0}"
    );
    assert!((var / v0 - 1.0).abs() < 0.05, "{var} {v0}");
    let mut r1 = Xoshiro256PlusPlus::seed_from_u64(1);
    let mut r2 = Xoshiro256PlusPlus::seed_from_u64(1);
    for _ in 0..100 {
        assert_eq!(
            draw_errors(&mut r1, bits, 3e-3),
            draw_errors(&mut r2, bits, 3e-3)
        );
    }
    assert_eq!(draw_errors(&mut r1, bits, 0.0), 0);
    assert_eq!(draw_errors(&mut r1, bits, f64::NAN), 0);
    assert_eq!(draw_errors(&mut r1, bits, 2.0), bits);
    assert_eq!(draw_errors(&mut r1, 0, 0.5), 0);
}
