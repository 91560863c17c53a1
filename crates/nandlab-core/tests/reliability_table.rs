//! RBER table: disk cache, interpolation.

use nandlab_core::reliability::table::{CacheStatus, RberTable, TableSpec};
use nandlab_core::reliability::vth::{LevelConfig, McOptions, DAY_S};

fn small_spec() -> TableSpec {
    TableSpec {
        pe: vec![2000.0, 4000.0, 6000.0],
        retention_s: vec![0.0, DAY_S, 30.0 * DAY_S],
        modes_dvpp: vec![0.15],
        levels: vec![LevelConfig::Normal],
        mc: McOptions {
            rel_half_width: 0.3,
            ..McOptions::default()
        },
        ..TableSpec::guo_default()
    }
}

#[test]
fn cache_hit_returns_identical_table() {
    let dir = tempfile::tempdir().unwrap();
    let spec = small_spec();
    let (a, s1) = RberTable::load_or_build(&spec, dir.path()).unwrap();
    assert_eq!(s1, CacheStatus::Built);
    assert!(dir.path().join(spec.file_name()).exists());
    let (b, s2) = RberTable::load_or_build(&spec, dir.path()).unwrap();
    assert_eq!(s2, CacheStatus::Hit);
    assert_eq!(a, b);
    for (x, y) in a.values.iter().zip(&b.values) {
        assert_eq!(x.to_bits(), y.to_bits());
    }
}

#[test]
fn different_parameters_use_a_different_file_and_corrupt_files_are_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let spec = small_spec();
    let mut other = small_spec();
    other.params.kd *= 2.0;
    assert_ne!(spec.file_name(), other.file_name());
    let mut seeded = small_spec();
    seeded.mc.seed += 1;
    assert_ne!(spec.file_name(), seeded.file_name());
    // Key is stable for equal specs.
    assert_eq!(spec.key(), small_spec().key());
    std::fs::write(dir.path().join(spec.file_name()), b"{not json").unwrap();
    let (_, s) = RberTable::load_or_build(&spec, dir.path()).unwrap();
    assert_eq!(s, CacheStatus::Built);
    let (_, s) = RberTable::load_or_build(&spec, dir.path()).unwrap();
    assert_eq!(s, CacheStatus::Hit);
}

#[test]
fn build_is_independent_of_thread_count() {
    let spec = small_spec();
    let a = RberTable::build_with_threads(&spec, 1).unwrap();
    let b = RberTable::build_with_threads(&spec, 3).unwrap();
    assert_eq!(a.values, b.values);
    assert_eq!(a.cells, b.cells);
}

#[test]
fn interpolation_exact_at_grid_points_and_monotone_between() {
    let spec = small_spec();
    let t = RberTable::build(&spec).unwrap();
    for (p, &pe) in spec.pe.iter().enumerate() {
        for (r, &ret) in spec.retention_s.iter().enumerate() {
            assert_eq!(t.rber(pe, ret, 0, 0), t.at(0, 0, p, r), "pe {pe} ret {ret}");
        }
    }
    // Along P/E at each retention grid value.
    for (r, &ret) in spec.retention_s.iter().enumerate() {
        for p in 0..spec.pe.len() - 1 {
            let (lo, hi) = (t.at(0, 0, p, r), t.at(0, 0, p + 1, r));
            let mut prev = lo;
            for k in 1..=50 {
                let pe = spec.pe[p] + (spec.pe[p + 1] - spec.pe[p]) * f64::from(k) / 50.0;
                let v = t.rber(pe, ret, 0, 0);
                assert!(v >= lo.min(hi) && v <= lo.max(hi));
                assert!(if hi >= lo { v >= prev } else { v <= prev }, "pe {pe}");
                prev = v;
            }
        }
    }
    // Along retention (log axis) at an off-grid P/E.
    for r in 0..spec.retention_s.len() - 1 {
        let pe = 5000.0;
        let (lo, hi) = (
            t.rber(pe, spec.retention_s[r], 0, 0),
            t.rber(pe, spec.retention_s[r + 1], 0, 0),
        );
        let mut prev = lo;
        for k in 1..=50 {
            let ret = spec.retention_s[r]
                + (spec.retention_s[r + 1] - spec.retention_s[r]) * f64::from(k) / 50.0;
            let v = t.rber(pe, ret, 0, 0);
            assert!(
                if hi >= lo {
                    v >= prev - 1e-18
                } else {
                    v <= prev + 1e-18
                },
                "ret {ret}"
            );
            prev = v;
        }
    }
    // Clamped outside the grid; bad indices and NaN do not panic.
    assert_eq!(t.rber(-5.0, 0.0, 0, 0), t.at(0, 0, 0, 0));
    assert_eq!(t.rber(1e9, 1e12, 0, 0), t.at(0, 0, 2, 2));
    assert_eq!(t.rber(1e9, 1e12, 7, 9), t.at(0, 0, 2, 2));
    assert!(t.rber(f64::NAN, f64::NAN, 0, 0).is_finite());
}

#[test]
fn invalid_spec_is_an_error() {
    let mut spec = small_spec();
    spec.pe = vec![3000.0, 1000.0];
    let e = RberTable::build(&spec).unwrap_err();
    assert!(e.to_string().contains("pe"), "{e}");
    let mut spec = small_spec();
    spec.retention_s.clear();
    assert!(RberTable::build(&spec).is_err());
}
