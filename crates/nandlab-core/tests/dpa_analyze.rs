//! `dpa::analyze` and `dpa::lifetime`: counts on files made by the test, per-file errors,
//! summaries, the lifetime model's direction (eq. 2.7) and its cache, `simulate_split`, and
//! the `[dpa]` config section.

use nandlab_core::dpa::analyze::{analyze, summarize, AnalyzeRequest, CodecSpec};
use nandlab_core::dpa::lifetime::{lifetime, CodeSpec, LifetimeRequest, ProfileSpec};
use nandlab_core::reliability::vth::{
    simulate, simulate_split, Condition, LevelConfig, McOptions, VthParams,
};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn write(dir: &std::path::Path, name: &str, data: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    p.display().to_string()
}

#[test]
fn analysis_counts_errors_and_summaries() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
    let random: Vec<u8> = (0..(128 << 10) + 13).map(|_| rng.gen()).collect();
    let f_rand = write(dir.path(), "r.bin", &random);
    let f_zero = write(dir.path(), "z.bin", &vec![0u8; 3 * 4096]);
    let f_ff = write(dir.path(), "f.bin", &vec![0xFFu8; 2 * 4096]);
    let f_empty = write(dir.path(), "e.bin", &[]);
    let f_short = write(dir.path(), "s.bin", &[1, 2, 3]);
    let f_dir = dir.path().display().to_string();
    let f_missing = dir.path().join("nope").display().to_string();
    let req = AnalyzeRequest {
        files: vec![
            f_rand.clone(),
            f_zero.clone(),
            f_empty,
            f_dir,
            f_missing,
            f_short,
            f_ff.clone(),
        ],
        configs: vec![CodecSpec::guo(4), CodecSpec::guo(8)],
        ..AnalyzeRequest::default()
    };
    let mut last = (0, 0);
    let res = analyze(&req, &mut |a, b| last = (a, b)).unwrap();
    let errors: Vec<_> = res.files.iter().filter_map(|f| f.error.clone()).collect();
    assert_eq!(errors.len(), 4, "{errors:?}");
    assert!(errors[0].contains("empty"));
    assert!(errors[1].contains("directory"));
    assert!(errors[2].contains("cannot read"));
    assert!(errors[3].contains("shorter than one 8-byte chunk"));
    assert_eq!(last.0, last.1);
    let r = &res.files[0];
    // The tail is cut to a whole number of the largest chunk (8 B): 8 analysed in a short 33rd
    // page, 5 skipped.
    assert_eq!(r.bytes, (128 << 10) + 8);
    assert_eq!(r.skipped_bytes, 5);
    assert_eq!(r.pages, 33);
    // 16 pairs of pages, 4096·8 cells each.
    assert_eq!(r.raw_cells.iter().sum::<u64>(), 16 * 4096 * 8);
    assert_eq!(r.configs[1].chunks, (128 << 10) / 8 + 1);
    assert_eq!(r.configs[0].chunks, (128 << 10) / 4 + 2);
    // Zero pages: path A, stored all ones (L0); the odd third page is not paired.
    let z = &res.files[1];
    assert_eq!(z.configs[1].path_a_pages, 3);
    assert_eq!(z.configs[1].selected_ones, 0);
    assert_eq!(z.configs[1].stored_cells, [0, 0, 0, 4096 * 8]);
    // All-ones pages: de-correlation leaves 8 ones per page (byte 0).
    let f = &res.files[6];
    assert_eq!(f.decorrelated_ones, 16);
    assert_eq!(f.configs[1].selected_ones, 16);
    let s = summarize(&res.files).unwrap();
    assert_eq!(s.files, 3);
    assert_eq!(s.stats.bytes, (128 << 10) + 8 + 5 * 4096);
    let p8 = &s.profiles[1];
    assert!(p8.stored_ones_ratio > 0.6 && p8.path_a_share > 0.0);
    let only_rand = summarize(&res.files[..1]).unwrap();
    let scr: Vec<f64> = only_rand
        .profiles
        .iter()
        .map(|p| p.scrambled_ones_ratio)
        .collect();
    assert!(
        (0.28..=0.33).contains(&scr[0]) && (0.33..=0.38).contains(&scr[1]),
        "{scr:?}"
    );
    // Bad configuration: an error before any file is read.
    let bad = AnalyzeRequest {
        configs: vec![CodecSpec::guo(12)],
        ..req.clone()
    };
    assert!(analyze(&bad, &mut |_, _| {})
        .unwrap_err()
        .to_string()
        .contains("chunk_bytes"));
    let bad = AnalyzeRequest {
        page_size_bytes: 100,
        ..req
    };
    assert!(analyze(&bad, &mut |_, _| {}).is_err());
}

#[test]
fn simulate_split_with_victims_as_neighbours_is_simulate() {
    let p = VthParams::guo_ch2_mlc();
    let c = Condition {
        pe: 5000.0,
        retention_s: 86_400.0 * 30.0,
        dvpp: 0.3,
        reads: 0.0,
    };
    let o = McOptions {
        max_samples: 1 << 16,
        ..McOptions::default()
    };
    let pat = [0.4, 0.3, 0.2, 0.1];
    let a = simulate(&p, &LevelConfig::Normal, Some(&pat), &c, &o).unwrap();
    let b = simulate_split(&p, &LevelConfig::Normal, Some(&pat), Some(&pat), &c, &o).unwrap();
    assert_eq!(a, b);
    // A one-hot victim distribution measures that level only.
    let l3 = simulate_split(
        &p,
        &LevelConfig::Normal,
        Some(&[0.0, 0.0, 0.0, 1.0]),
        Some(&[0.25; 4]),
        &c,
        &o,
    )
    .unwrap();
    assert!(l3.per_level_share[3] > 0.999, "{:?}", l3.per_level_share);
    assert!(simulate_split(
        &p,
        &LevelConfig::nunma(3).unwrap(),
        None,
        Some(&[0.25; 4]),
        &c,
        &o
    )
    .is_err());
}

fn profiles() -> Vec<ProfileSpec> {
    let ind = |p1: f64| {
        let p0 = 1.0 - p1;
        [p0 * p0, p0 * p1, p1 * p0, p1 * p1]
    };
    vec![
        ProfileSpec {
            name: "baseline".into(),
            patterns: [0.25; 4],
            code: CodeSpec::BASELINE,
            full_pattern: true,
        },
        ProfileSpec {
            name: "8 B".into(),
            patterns: ind(0.69),
            code: CodeSpec::DPA,
            full_pattern: false,
        },
        ProfileSpec {
            name: "4 B".into(),
            patterns: ind(0.77),
            code: CodeSpec::DPA,
            full_pattern: true,
        },
    ]
}

#[test]
fn lifetime_eq27_direction_full_pattern_and_cache() {
    let dir = tempfile::tempdir().unwrap();
    let req = LifetimeRequest {
        pe: vec![3000.0, 4000.0, 5000.0, 6000.0, 7000.0],
        profiles: profiles(),
        rel_half_width: 0.3,
        rber_floor: 1e-5,
        read_disturb_reads: 1.0,
        full_pattern: true,
        threads: 2,
        cache_dir: dir.path().display().to_string(),
        ..LifetimeRequest::default()
    };
    let r = lifetime(&req).unwrap();
    let life: Vec<f64> = r.lifetimes.iter().map(|l| l.lifetime_pe.unwrap()).collect();
    assert!(life[2] >= life[1] && life[1] > life[0], "{life:?}");
    // Level probabilities follow the printed map: L3 = "00".
    assert!((r.lifetimes[1].levels[3] - 0.31 * 0.31).abs() < 1e-12);
    // Full pattern only where asked.
    assert!(r.lifetimes[1].full_pattern_lifetime_pe.is_none());
    assert!(r.points[0].profiles[0].full_pattern.is_some());
    // Read disturb is reported and left out of F.
    let p = &r.points[2].profiles[0];
    assert!(p.f_rd.unwrap() > p.f);
    // Cache: the same request computes nothing; the thread count does not matter.
    let again = lifetime(&LifetimeRequest {
        threads: 1,
        ..req.clone()
    })
    .unwrap();
    assert_eq!(again.mc_computed, 0);
    assert_eq!(again.lifetimes, r.lifetimes);
    let fresh = lifetime(&LifetimeRequest {
        threads: 1,
        cache_dir: "none".into(),
        ..req.clone()
    })
    .unwrap();
    assert_eq!(fresh.lifetimes, r.lifetimes);
    // Bad input names the parameter.
    let e = lifetime(&LifetimeRequest {
        pe: vec![],
        ..req.clone()
    })
    .unwrap_err();
    assert!(e.to_string().contains("pe"), "{e}");
    let mut bad = req;
    bad.profiles[0].code.k = 99_999;
    assert!(lifetime(&bad).unwrap_err().to_string().contains("code"));
}

#[test]
fn dpa_config_section_validates_and_stays_out_of_default_reports() {
    use nandlab_core::config::load;
    let c = load("", "<test>", &[]).unwrap();
    assert!(c.dpa.is_default());
    let json = serde_json::to_value(&c).unwrap();
    assert!(json.get("dpa").is_none());
    let c = load("[dpa]\nchunk_bytes = 4\n", "<test>", &[]).unwrap();
    assert_eq!(c.dpa.chunk_bytes, 4);
    assert!(serde_json::to_value(&c).unwrap().get("dpa").is_some());
    let e = load("[dpa]\nchunk_bytes = 12\n", "<test>", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("dpa.chunk_bytes") && e.contains("12"), "{e}");
    let e = load("[dpa]\npolynomials = 300\n", "<test>", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("dpa.polynomials"), "{e}");
    let e = load("[dpa]\nbogus = 1\n", "<test>", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("bogus"), "{e}");
    let preset = include_str!("../../../python/nandlab/configs/dpa.toml");
    let c = load(preset, "dpa.toml", &[]).unwrap();
    assert_eq!(c.dpa.code.n, 4312);
    assert_eq!(c.device.page_size_bytes, 4096);
}
