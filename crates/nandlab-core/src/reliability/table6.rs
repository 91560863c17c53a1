//! Guo's Table 6: extra LDPC soft-sensing levels of an MLC page by P/E cycles and data age
//! (thesis §3.2, Table 6; used as the level source of FlexLevel's experiments, §3.6.2: "Extra
//! sensing levels can be obtained based on the simulation results in Table 6").
//!
//! Lookup (our reading, the thesis gives only the grid): the last row whose P/E is ≤ the
//! block's P/E and the last column whose age is ≤ the page's age (floor on both axes); below
//! 2000 P/E or at age 0 the first row / column; beyond the grid the last ones. Reduced-state
//! (NUNMA 3) pages need no extra level (§3.6.2: "In reduced state cells, NUNMA 3 configuration
//! is adopted and no extra sensing overhead is introduced").

/// Extra soft-sensing levels; rows P/E 2000–6000 (step 1000), columns age 0 d, 1 d, 2 d,
/// 1 week, 1 month.
pub const LEVELS: [[u32; 5]; 5] = [
    [0, 0, 0, 0, 0],
    [0, 0, 0, 0, 1],
    [0, 0, 0, 1, 4],
    [0, 0, 1, 2, 4],
    [0, 1, 2, 4, 6],
];
/// P/E axis of [`LEVELS`].
pub const PE: [f64; 5] = [2000.0, 3000.0, 4000.0, 5000.0, 6000.0];
/// Age axis of [`LEVELS`], s.
pub const AGE_S: [f64; 5] = [0.0, 86_400.0, 172_800.0, 604_800.0, 2_592_000.0];

/// Extra sensing levels of a normal-state page of a block with `pe` P/E cycles holding data
/// `age_s` seconds old (floor lookup, module doc).
#[inline]
pub fn levels(pe: f64, age_s: f64) -> u32 {
    let row = PE.iter().rposition(|&p| pe >= p).unwrap_or(0);
    let col = AGE_S.iter().rposition(|&a| age_s >= a).unwrap_or(0);
    LEVELS[row][col]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_lookup_on_both_axes() {
        assert_eq!(levels(6000.0, 30.0 * 86_400.0), 6);
        assert_eq!(levels(6500.0, 1e9), 6);
        assert_eq!(levels(5999.0, 30.0 * 86_400.0), 4);
        assert_eq!(levels(6000.0, 604_799.0), 2);
        assert_eq!(levels(3000.0, 2_592_000.0), 1);
        assert_eq!(levels(1000.0, 1e9), 0);
        assert_eq!(levels(6000.0, 0.0), 0);
        assert_eq!(levels(6000.0, -5.0), 0);
    }
}
