//! ReduceCode: 3 bits in two 3-level cells (FlexLevel's reduced state, Guo's thesis §3.4.1,
//! Tables 7–8, eq. 3.2–3.8, Fig. 17), as a bit-level codec of whole word lines.
//!
//! # The code (Table 7)
//!
//! Two neighbouring cells of a reduced-state word line hold one 3-bit symbol `b2 b1 b0`
//! (`b2` = MSB) in levels L0..L2 (the top MLC level L3 is never used, which is where the wide
//! read margins come from):
//!
//! | symbol | 000 | 001 | 010 | 011 | 100 | 101 | 110 | 111 |
//! |---|---|---|---|---|---|---|---|---|
//! | (cell I, cell II) | (0,0) | (0,1) | (1,0) | (1,1) | (2,2) | (0,2) | (2,0) | (2,1) |
//!
//! The level pair (1,2) is unused and decodes to 000 (eq. 3.6–3.8). For uniform data the level
//! mix is L0 : L1 : L2 = 6 : 5 : 5 (of 16 cells).
//!
//! **The thesis's error claim is not exact.** §3.4.1 says a one-level distortion of a cell costs
//! one bit. Of the 21 one-level distortions that stay within L0..L2, 17 cost one bit and **4 cost
//! two**: 011 (1,1)→(1,2), 101 (0,2)→(1,2), 100 (2,2)→(2,1) and 111 (2,1)→(2,2)
//! ([`distortions`] lists them; a unit test pins the set). No mapping that leaves (1,2) unused
//! can avoid this (the 3×3 grid's bipartite parity), so it is a property of the code, not of
//! Table 7's particular assignment.
//!
//! # Word-line layout (Fig. 17a; our reading of the cell order)
//!
//! Cells pair with their even (or odd) neighbour: in each group of four bit lines
//! `4g .. 4g+3`, cells `(4g, 4g+2)` form even pair `g` and `(4g+1, 4g+3)` odd pair `g` (cell I
//! is the lower bit line). A word line of `C` cells (a multiple of 4) holds three pages of
//! `C / 2` bits each, instead of the four pages of an even/odd bit-line MLC word line:
//! * **lower page**: the two LSBs of every even pair (bit `2g` = `b1`, bit `2g+1` = `b0` of
//!   even pair `g`);
//! * **middle page**: the two LSBs of every odd pair, likewise;
//! * **upper page**: the MSBs of all pairs (bit `2g` = even pair `g`, bit `2g+1` = odd pair
//!   `g`).
//!
//! So a reduced-state block holds ¾ of a normal block's pages (Table 12: 64 → 48 per block).
//! Page bits are taken MSB-first within each byte.
//!
//! # Two-step program (Fig. 17b, Table 8)
//!
//! Step 1 programs the lower (even pairs) or middle (odd pairs) page: cell I goes to L1 when
//! `b1 = 1`, cell II when `b0 = 1`. Step 2 programs the upper page: pairs whose MSB is 0 keep
//! their levels; pairs whose MSB is 1 move per Table 8 (00 → (2,2), 01 → (0,2), 10 → (2,0),
//! 11 → (2,1)). Levels never fall ([`program_step2`] asserts what a test checks
//! exhaustively), and the final levels are Table 7's.
//!
//! # Not modelled
//!
//! Read references and the Vth physics of the reduced state live in [`super::vth`]
//! (NUNMA 1–3, Table 10); this module is the digital code only.

/// ReduceCode encoder (Guo Table 7 / eq. 3.2–3.5): 3-bit value → (level of cell I, II).
#[allow(clippy::nonminimal_bool)] // literal transcription of Guo's logic equations
pub fn reduce_encode(v: u8) -> (u8, u8) {
    let b2 = (v >> 2) & 1 == 1;
    let b1 = (v >> 1) & 1 == 1;
    let b0 = v & 1 == 1;
    let v11 = (b2 && b1) || (b2 && !b0);
    let v10 = !b2 && b1;
    let v21 = b2 && !b1;
    let v20 = (!b2 && b0) || (b1 && b0);
    (
        (u8::from(v11) << 1) | u8::from(v10),
        (u8::from(v21) << 1) | u8::from(v20),
    )
}

/// ReduceCode decoder (Guo eq. 3.6–3.8): levels (I, II) in 0..3 → 3-bit value. The unused
/// combination (1, 2) decodes to whatever the logic gives (000).
#[allow(clippy::nonminimal_bool)] // literal transcription of Guo's logic equations
pub fn reduce_decode(l1: u8, l2: u8) -> u8 {
    let v11 = (l1 >> 1) & 1 == 1;
    let v10 = l1 & 1 == 1;
    let v21 = (l2 >> 1) & 1 == 1;
    let v20 = l2 & 1 == 1;
    let b2 = (v11 && !v10 && !v21) || (!v10 && v21 && !v20);
    let b1 = (v11 ^ v10) && !v21;
    let b0 = (!v11 && !v21 && v20) || (!v10 && !v21 && v20) || (!v11 && !v10 && v21 && !v20);
    (u8::from(b2) << 2) | (u8::from(b1) << 1) | u8::from(b0)
}

/// Levels of a pair after program step 1 (Table 8): cell I = `b1`, cell II = `b0` (L1 for a
/// 1 bit).
#[inline]
pub fn program_step1(v: u8) -> (u8, u8) {
    ((v >> 1) & 1, v & 1)
}

/// Levels of a pair after program step 2 (Table 8), from its step-1 levels and its MSB: an MSB
/// of 0 leaves them; an MSB of 1 moves 00 → (2,2), 01 → (0,2), 10 → (2,0), 11 → (2,1).
#[inline]
pub fn program_step2(step1: (u8, u8), msb: bool) -> (u8, u8) {
    if !msb {
        return step1;
    }
    match step1 {
        (0, 0) => (2, 2),
        (0, 1) => (0, 2),
        (1, 0) => (2, 0),
        _ => (2, 1),
    }
}

/// A one-level distortion of one cell of a symbol: `symbol` stored as `from`, read as `to`,
/// costing `bit_errors` bits after [`reduce_decode`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Distortion {
    /// The stored 3-bit symbol.
    pub symbol: u8,
    /// Its levels (cell I, cell II).
    pub from: (u8, u8),
    /// The levels read after one cell moved by one level (within L0..L2).
    pub to: (u8, u8),
    /// Bits wrong after decoding.
    pub bit_errors: u32,
}

/// Every one-level distortion of every symbol that stays within L0..L2 (21 of them).
pub fn distortions() -> Vec<Distortion> {
    let mut out = Vec::with_capacity(21);
    for symbol in 0..8u8 {
        let from = reduce_encode(symbol);
        let (a, b) = (from.0 as i8, from.1 as i8);
        for (da, db) in [(-1i8, 0i8), (1, 0), (0, -1), (0, 1)] {
            let (x, y) = (a + da, b + db);
            if (0..=2).contains(&x) && (0..=2).contains(&y) {
                let to = (x as u8, y as u8);
                out.push(Distortion {
                    symbol,
                    from,
                    to,
                    bit_errors: (reduce_decode(to.0, to.1) ^ symbol).count_ones(),
                });
            }
        }
    }
    out
}

/// Errors of the word-line codec.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReduceCodeError {
    /// The three pages must have the same length.
    #[error("ReduceCode pages must have equal lengths (lower {lower}, middle {middle}, upper {upper} bytes)")]
    PageLengths {
        /// Lower-page bytes.
        lower: usize,
        /// Middle-page bytes.
        middle: usize,
        /// Upper-page bytes.
        upper: usize,
    },
    /// A word line's cell count must be 16 × the page size in bytes.
    #[error("a ReduceCode word line of {cells} cells cannot hold pages of {page_bytes} bytes (needs {needed} cells)")]
    Cells {
        /// Cells given.
        cells: usize,
        /// Page size, bytes.
        page_bytes: usize,
        /// Cells needed.
        needed: usize,
    },
    /// A level above L2 (the reduced state has three levels).
    #[error("cell {cell} is at level {level}; a reduced-state cell has levels 0..=2")]
    Level {
        /// Bit line.
        cell: usize,
        /// Level read.
        level: u8,
    },
}

#[inline]
fn bit(page: &[u8], i: usize) -> u8 {
    (page[i / 8] >> (7 - i % 8)) & 1
}

#[inline]
fn set_bit(page: &mut [u8], i: usize, v: u8) {
    page[i / 8] |= (v & 1) << (7 - i % 8);
}

/// Cell levels of a reduced-state word line holding `lower`, `middle` and `upper` (equal
/// lengths of `P` bytes; `16·P` cells), by the Fig. 17 layout and Table 7 (module doc).
/// Shape: one level (0..=2) per bit line.
///
/// # Errors
/// [`ReduceCodeError::PageLengths`] if the pages differ in length.
pub fn encode_wordline(
    lower: &[u8],
    middle: &[u8],
    upper: &[u8],
) -> Result<Vec<u8>, ReduceCodeError> {
    let mut levels = Vec::new();
    encode_wordline_into(lower, middle, upper, &mut levels)?;
    Ok(levels)
}

/// [`encode_wordline`] into a reused buffer (cleared first).
///
/// # Errors
/// [`ReduceCodeError::PageLengths`] if the pages differ in length.
pub fn encode_wordline_into(
    lower: &[u8],
    middle: &[u8],
    upper: &[u8],
    levels: &mut Vec<u8>,
) -> Result<(), ReduceCodeError> {
    if lower.len() != middle.len() || lower.len() != upper.len() {
        return Err(ReduceCodeError::PageLengths {
            lower: lower.len(),
            middle: middle.len(),
            upper: upper.len(),
        });
    }
    let groups = lower.len() * 4; // a byte of each LSB page covers 4 pairs = 4 groups' worth
    levels.clear();
    levels.resize(groups * 4, 0);
    for g in 0..groups {
        for (odd, lsb_page) in [(0usize, lower), (1, middle)] {
            let v = (bit(upper, 2 * g + odd) << 2)
                | (bit(lsb_page, 2 * g) << 1)
                | bit(lsb_page, 2 * g + 1);
            let (a, b) = reduce_encode(v);
            levels[4 * g + odd] = a;
            levels[4 * g + odd + 2] = b;
        }
    }
    Ok(())
}

/// The three pages (lower, middle, upper) of a reduced-state word line read at `levels`
/// (module doc's layout; the unused pair (1,2) reads as 000).
///
/// # Errors
/// [`ReduceCodeError::Cells`] if the cell count is not a multiple of 16;
/// [`ReduceCodeError::Level`] for a level above 2.
pub fn decode_wordline(levels: &[u8]) -> Result<[Vec<u8>; 3], ReduceCodeError> {
    if !levels.len().is_multiple_of(16) {
        return Err(ReduceCodeError::Cells {
            cells: levels.len(),
            page_bytes: levels.len() / 16,
            needed: (levels.len() / 16 + 1) * 16,
        });
    }
    if let Some((cell, &level)) = levels.iter().enumerate().find(|(_, &l)| l > 2) {
        return Err(ReduceCodeError::Level { cell, level });
    }
    let p = levels.len() / 16;
    let (mut lower, mut middle, mut upper) = (vec![0u8; p], vec![0u8; p], vec![0u8; p]);
    for g in 0..levels.len() / 4 {
        for (odd, lsb_page) in [(0usize, &mut lower), (1, &mut middle)] {
            let v = reduce_decode(levels[4 * g + odd], levels[4 * g + odd + 2]);
            set_bit(lsb_page, 2 * g, (v >> 1) & 1);
            set_bit(lsb_page, 2 * g + 1, v & 1);
            set_bit(&mut upper, 2 * g + odd, v >> 2);
        }
    }
    Ok([lower, middle, upper])
}

/// Levels after each step of the two-step program of a word line (Table 8): after the lower
/// and middle pages (step 1) and after the upper page (step 2). Shapes as
/// [`encode_wordline`].
///
/// # Errors
/// [`ReduceCodeError::PageLengths`] if the pages differ in length.
pub fn program_wordline(
    lower: &[u8],
    middle: &[u8],
    upper: &[u8],
) -> Result<[Vec<u8>; 2], ReduceCodeError> {
    let mut fin = Vec::new();
    encode_wordline_into(lower, middle, upper, &mut fin)?;
    let mut step1 = vec![0u8; fin.len()];
    let mut step2 = vec![0u8; fin.len()];
    for g in 0..fin.len() / 4 {
        for (odd, lsb_page) in [(0usize, lower), (1, middle)] {
            let v = (bit(lsb_page, 2 * g) << 1) | bit(lsb_page, 2 * g + 1);
            let s1 = program_step1(v);
            let s2 = program_step2(s1, bit(upper, 2 * g + odd) == 1);
            step1[4 * g + odd] = s1.0;
            step1[4 * g + odd + 2] = s1.1;
            step2[4 * g + odd] = s2.0;
            step2[4 * g + odd + 2] = s2.1;
        }
    }
    Ok([step1, step2])
}

/// Number of cells at L0, L1 and L2.
pub fn level_mix(levels: &[u8]) -> [u64; 3] {
    let mut m = [0u64; 3];
    for &l in levels {
        if let Some(c) = m.get_mut(l as usize) {
            *c += 1;
        }
    }
    m
}

/// Guo Table 7: (3-bit value, level of the first cell, level of the second cell), the table
/// the unit tests of ReduceCode and of the Vth model check against.
#[cfg(test)]
pub(crate) const TABLE7: [(u8, u8, u8); 8] = [
    (0b000, 0, 0),
    (0b001, 0, 1),
    (0b010, 1, 0),
    (0b011, 1, 1),
    (0b100, 2, 2),
    (0b101, 0, 2),
    (0b110, 2, 0),
    (0b111, 2, 1),
];

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn table7_and_the_unused_pair() {
        for (v, a, b) in TABLE7 {
            assert_eq!(reduce_encode(v), (a, b), "encode {v:03b}");
            assert_eq!(reduce_decode(a, b), v, "decode {a}{b}");
        }
        assert_eq!(reduce_decode(1, 2), 0b000);
        // The eight symbols use every level pair but (1,2).
        let used: std::collections::HashSet<_> = (0..8).map(reduce_encode).collect();
        assert_eq!(used.len(), 8);
        assert!(!used.contains(&(1, 2)));
    }

    #[test]
    fn exactly_four_one_level_distortions_cost_two_bits() {
        let d = distortions();
        assert_eq!(d.len(), 21);
        type Case = (u8, (u8, u8), (u8, u8));
        let two: Vec<Case> = d
            .iter()
            .filter(|x| x.bit_errors == 2)
            .map(|x| (x.symbol, x.from, x.to))
            .collect();
        assert_eq!(
            two,
            vec![
                (0b011, (1, 1), (1, 2)),
                (0b100, (2, 2), (2, 1)),
                (0b101, (0, 2), (1, 2)),
                (0b111, (2, 1), (2, 2)),
            ]
        );
        assert!(d.iter().all(|x| x.bit_errors >= 1 && x.bit_errors <= 2));
        // Of the 10 downward distortions only 100's costs two bits.
        let down: Vec<_> = d
            .iter()
            .filter(|x| x.to.0 + x.to.1 < x.from.0 + x.from.1)
            .collect();
        assert_eq!(down.len(), 10);
        assert_eq!(down.iter().filter(|x| x.bit_errors == 2).count(), 1);
    }

    #[test]
    fn two_step_program_reaches_table7_and_never_lowers_a_level() {
        for v in 0..8u8 {
            let s1 = program_step1(v & 3);
            let s2 = program_step2(s1, v >> 2 == 1);
            assert_eq!(s2, reduce_encode(v), "{v:03b}");
            assert!(s2.0 >= s1.0 && s2.1 >= s1.1, "{v:03b}: {s1:?} -> {s2:?}");
        }
        assert_eq!(program_step1(0b10), (1, 0));
        assert_eq!(program_step1(0b01), (0, 1));
    }

    #[test]
    fn uniform_data_level_mix_is_6_5_5() {
        // All 64 combinations of (upper bit, lower two bits) per pair, in every position.
        let mut levels = Vec::new();
        for v in 0..8u8 {
            let (a, b) = reduce_encode(v);
            levels.extend([a, b]);
        }
        assert_eq!(level_mix(&levels), [6, 5, 5]);
    }

    #[test]
    fn layout_of_one_group() {
        // lower = 10 (b1=1,b0=0), middle = 01, upper: even MSB 1, odd MSB 0 (first bits).
        let lower = [0b1000_0000u8, 0, 0, 0];
        let middle = [0b0100_0000u8, 0, 0, 0];
        let upper = [0b1000_0000u8, 0, 0, 0];
        let l = encode_wordline(&lower, &middle, &upper).unwrap();
        assert_eq!(l.len(), 64);
        // Even pair 0 = cells (0, 2): symbol 110 → (2,0); odd pair 0 = cells (1, 3): 001 →
        // (0,1).
        assert_eq!(&l[..4], &[2, 0, 0, 1]);
        assert!(l[4..].iter().all(|&x| x == 0));
    }

    #[test]
    fn bad_inputs_are_errors() {
        assert!(matches!(
            encode_wordline(&[0; 4], &[0; 4], &[0; 3]),
            Err(ReduceCodeError::PageLengths { .. })
        ));
        assert!(matches!(
            decode_wordline(&[0; 15]),
            Err(ReduceCodeError::Cells { .. })
        ));
        let mut l = vec![0u8; 16];
        l[5] = 3;
        assert_eq!(
            decode_wordline(&l),
            Err(ReduceCodeError::Level { cell: 5, level: 3 })
        );
    }

    proptest! {
        #[test]
        fn wordline_round_trip(
            pages in (1usize..64).prop_flat_map(|p| (
                proptest::collection::vec(any::<u8>(), p),
                proptest::collection::vec(any::<u8>(), p),
                proptest::collection::vec(any::<u8>(), p),
            ))
        ) {
            let (lo, mi, up) = pages;
            let levels = encode_wordline(&lo, &mi, &up).unwrap();
            prop_assert_eq!(levels.len(), 16 * lo.len());
            prop_assert!(levels.iter().all(|&x| x <= 2));
            let [a, b, c] = decode_wordline(&levels).unwrap();
            prop_assert_eq!(&a, &lo);
            prop_assert_eq!(&b, &mi);
            prop_assert_eq!(&c, &up);
            let [s1, s2] = program_wordline(&lo, &mi, &up).unwrap();
            prop_assert_eq!(&s2, &levels);
            prop_assert!(s1.iter().zip(&s2).all(|(x, y)| x <= y));
            prop_assert!(s1.iter().all(|&x| x <= 1));
        }

        /// Whatever the data, the unused pair (1,2) never appears.
        #[test]
        fn unused_pair_never_written(lo in any::<[u8; 8]>(), mi in any::<[u8; 8]>(), up in any::<[u8; 8]>()) {
            let l = encode_wordline(&lo, &mi, &up).unwrap();
            for g in 0..l.len() / 4 {
                for odd in 0..2 {
                    prop_assert_ne!((l[4 * g + odd], l[4 * g + odd + 2]), (1, 2));
                }
            }
        }
    }
}
