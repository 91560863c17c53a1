//! Unit tests of the Vth model (moved from `vth.rs` when it was split by subject).

use super::params::gray_map;
use super::*;

#[test]
fn reduce_code_matches_table7() {
    // Guo Table 7, through the ReduceCode functions the model re-exports.
    for (v, a, b) in crate::reliability::reducecode::TABLE7 {
        assert_eq!(reduce_encode(v), (a, b), "encode {v:03b}");
        assert_eq!(reduce_decode(a, b), v, "decode {a}{b}");
    }
}

#[test]
fn gray_maps_are_gray() {
    for l in [4usize, 8] {
        let g = gray_map(l);
        for i in 1..l {
            assert_eq!((g[i] ^ g[i - 1]).count_ones(), 1);
        }
    }
    assert_eq!(gray_map(4), vec![0b11, 0b10, 0b00, 0b01]);
}

#[test]
fn bad_input_is_an_error_naming_the_parameter() {
    let p = VthParams::guo_ch3_mlc();
    let c = Condition {
        pe: -1.0,
        retention_s: 0.0,
        dvpp: 0.15,
        reads: 0.0,
    };
    let e = simulate(&p, &LevelConfig::Normal, None, &c, &McOptions::default()).unwrap_err();
    assert!(e.to_string().contains("pe"), "{e}");
    let c = Condition { pe: 10.0, ..c };
    let e = simulate(
        &p,
        &LevelConfig::Normal,
        Some(&[1.0; 3]),
        &c,
        &McOptions::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("pattern"), "{e}");
    assert!(LevelConfig::nunma(4).is_err());
}
