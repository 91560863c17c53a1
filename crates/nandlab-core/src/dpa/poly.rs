//! Scrambling polynomials over GF(2): Guo Table 4, the sets of the Fig. 10 sweeps, and a
//! primitivity test.
//!
//! A polynomial is a `u32` whose bit k is the coefficient of x^k (`0x1C0B1` =
//! x^16 + x^15 + x^14 + x^7 + x^5 + x^4 + 1).

use super::DpaError;

/// Guo Table 4 (§2.4): the 64 order-16 polynomials DPA-PPU scrambles with, in tag order.
///
/// Readings (spec `dpa-flexlevel.md` §0.5, §1.3):
/// * #10 and #12 are printed with "x^1 + x^1" between x^12 and x^9; we read x^11 + x^10, which
///   makes all 64 primitive, #10 the reciprocal of #21, and the term counts exactly 16 each of
///   5/7/9/13 terms (the test `table4_structure` checks all three).
/// * #29 = #25 and #30 = #27 as printed, although Table 5's rows for them differ. They are kept
///   as printed: the encoder breaks ties towards the lowest tag, so tags 29 and 30 are never
///   chosen.
pub const TABLE4: [u32; 64] = [
    0x1C0B1, 0x11A07, 0x105EB, 0x108DF, 0x1107F, 0x1169B, 0x11747, 0x133D1, // 0-7
    0x1196B, 0x1C371, 0x13F81, 0x1CF21, 0x19E61, 0x1B1E1, 0x111DB, 0x1DC91, // 8-15
    0x11C85, 0x12871, 0x121B1, 0x122B1, 0x101BF, 0x103F9, 0x14931, 0x18931, // 16-23
    0x11923, 0x11893, 0x1188D, 0x184D1, 0x11643, 0x11893, 0x184D1, 0x1C151, // 24-31
    0x1002D, 0x16801, 0x10039, 0x13801, 0x10053, 0x19401, 0x101A1, 0x10B01, // 32-39
    0x10215, 0x15081, 0x10219, 0x13081, 0x10225, 0x14881, 0x10285, 0x14281, // 40-47
    0x11DFF, 0x1FF71, 0x11FBF, 0x1FBF1, 0x12EFF, 0x1FEE9, 0x139FF, 0x1FF39, // 48-55
    0x13BEF, 0x1EFB9, 0x13EDF, 0x1F6F9, 0x13EFB, 0x1BEF9, 0x14BFF, 0x1FFA5, // 56-63
];

/// Largest polynomial set a codec takes (tags are stored in one byte).
pub const MAX_POLYNOMIALS: usize = 256;
/// Lowest and highest polynomial order accepted.
pub const ORDER_RANGE: (u32, u32) = (2, 16);
/// Default number of polynomials (Guo §2.6: 64).
pub const DEFAULT_POLYNOMIALS: usize = 64;

/// Degree of `p` (`None` for the zero polynomial).
pub fn degree(p: u32) -> Option<u32> {
    if p == 0 {
        None
    } else {
        Some(31 - p.leading_zeros())
    }
}

/// The reciprocal polynomial x^deg · p(1/x).
pub fn reciprocal(p: u32) -> u32 {
    match degree(p) {
        None => 0,
        Some(d) => p.reverse_bits() >> (31 - d),
    }
}

/// `a · b mod m` over GF(2) (deg m ≤ 31).
fn mulmod(a: u64, b: u64, m: u64, deg: u32) -> u64 {
    let mut r = 0u64;
    let mut a = a;
    let mut b = b;
    while b != 0 {
        if b & 1 == 1 {
            r ^= a;
        }
        b >>= 1;
        a <<= 1;
        if (a >> deg) & 1 == 1 {
            a ^= m;
        }
    }
    r
}

/// x^e mod m over GF(2).
fn xpow(e: u64, m: u64, deg: u32) -> u64 {
    let mut result = 1u64;
    // x mod m: x itself unless m has degree 1.
    let mut base = if deg == 1 { 2 ^ m } else { 2 };
    let mut e = e;
    while e > 0 {
        if e & 1 == 1 {
            result = mulmod(result, base, m, deg);
        }
        base = mulmod(base, base, m, deg);
        e >>= 1;
    }
    result
}

fn prime_factors(mut n: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut f = 2u64;
    while f * f <= n {
        if n.is_multiple_of(f) {
            out.push(f);
            while n.is_multiple_of(f) {
                n /= f;
            }
        }
        f += 1;
    }
    if n > 1 {
        out.push(n);
    }
    out
}

/// Whether `p` (degree 1..=31, constant term 1) is primitive: x has multiplicative order
/// 2^d − 1 modulo p. (A reducible p has fewer than 2^d − 1 units, so this also proves p
/// irreducible.)
pub fn is_primitive(p: u32) -> bool {
    let Some(d) = degree(p) else { return false };
    if d == 0 || p & 1 == 0 {
        return false;
    }
    let m = u64::from(p);
    let order = (1u64 << d) - 1;
    if xpow(order, m, d) != 1 {
        return false;
    }
    prime_factors(order)
        .into_iter()
        .all(|r| xpow(order / r, m, d) != 1)
}

/// Number of polynomials available at `order`: all degree-`order` polynomials with a constant
/// term (2^(order−1)); for order 16 Table 4 plus every other primitive degree-16 polynomial.
pub fn available(order: u32) -> usize {
    if order == 16 {
        MAX_POLYNOMIALS
    } else {
        1usize << (order - 1).min(20)
    }
}

/// The polynomial set of a scrambler with polynomials of `order` (Guo Fig. 10(a)) and
/// `count` polynomials (Fig. 10(b)); `count = None` takes the default, min(64, available).
///
/// Readings (spec §1.2 "Sweeps (R)"; the thesis lists only Table 4):
/// * order 16, count ≤ 64: the first `count` polynomials of [`TABLE4`];
/// * order 16, count > 64: Table 4 followed by further primitive degree-16 polynomials in
///   ascending order (skipping those already in Table 4);
/// * order k < 16: every degree-k polynomial with a constant term, in ascending order, capped
///   at `count` (order 4 has 8, order 8 has 128).
///
/// # Errors
/// [`DpaError::Param`] when `order` is outside 2..=16, `count` is 0, above 256, or above what
/// the order offers (the message names the maximum).
pub fn polynomial_set(order: u32, count: Option<usize>) -> Result<Vec<u32>, DpaError> {
    if !(ORDER_RANGE.0..=ORDER_RANGE.1).contains(&order) {
        return Err(DpaError::Param {
            name: "order",
            value: order.to_string(),
            allowed: format!("{}..={}", ORDER_RANGE.0, ORDER_RANGE.1),
        });
    }
    let avail = available(order);
    let n = count.unwrap_or(DEFAULT_POLYNOMIALS.min(avail));
    if n == 0 || n > MAX_POLYNOMIALS || n > avail {
        return Err(DpaError::Param {
            name: "polynomials",
            value: n.to_string(),
            allowed: format!(
                "1..={} at order {order} (order k offers 2^(k-1) polynomials; order 16 up to {MAX_POLYNOMIALS})",
                avail.min(MAX_POLYNOMIALS)
            ),
        });
    }
    if order == 16 {
        let mut out: Vec<u32> = TABLE4.iter().copied().take(n).collect();
        let mut p = (1u32 << 16) | 1;
        while out.len() < n {
            if is_primitive(p) && !TABLE4.contains(&p) {
                out.push(p);
            }
            p += 2;
        }
        Ok(out)
    } else {
        let lo = (1u32 << order) | 1;
        Ok((0..n as u32).map(|i| lo + 2 * i).collect())
    }
}

/// Bits needed to store one tag of a set of `n` polynomials (⌈log2 n⌉; Guo §2.4: 6 for 64).
pub fn tag_bits(n: usize) -> u32 {
    if n <= 1 {
        0
    } else {
        usize::BITS - (n - 1).leading_zeros()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primitivity_of_known_polynomials() {
        // x^4 + x + 1 is primitive; x^4 + x^3 + x^2 + x + 1 is irreducible, not primitive
        // (order 5); x^4 + 1 = (x + 1)^4 is reducible.
        assert!(is_primitive(0b10011));
        assert!(!is_primitive(0b11111));
        assert!(!is_primitive(0b10001));
        // CRC-16-CCITT x^16 + x^12 + x^5 + 1 = (x + 1)·(primitive), not primitive.
        assert!(!is_primitive(0x11021));
        // x^16 + x^5 + x^3 + x^2 + 1 (Table 4 #32) is primitive.
        assert!(is_primitive(0x1002D));
        // Count of primitive polynomials of degree 8: φ(255)/8 = 16.
        let n8 = (0x101u32..0x200)
            .step_by(2)
            .filter(|&p| is_primitive(p))
            .count();
        assert_eq!(n8, 16);
    }

    #[test]
    fn sets_follow_the_readings() {
        assert_eq!(polynomial_set(16, None).unwrap(), TABLE4.to_vec());
        assert_eq!(polynomial_set(4, None).unwrap().len(), 8);
        assert_eq!(polynomial_set(8, None).unwrap().len(), 64);
        let s = polynomial_set(16, Some(256)).unwrap();
        assert_eq!(s.len(), 256);
        assert!(s[64..]
            .iter()
            .all(|&p| is_primitive(p) && !TABLE4.contains(&p)));
        assert!(s[64..].windows(2).all(|w| w[0] < w[1]));
        let e = polynomial_set(4, Some(64)).unwrap_err().to_string();
        assert!(e.contains("1..=8"), "{e}");
        assert!(polynomial_set(17, None).is_err());
        assert!(polynomial_set(16, Some(0)).is_err());
        assert_eq!(tag_bits(64), 6);
        assert_eq!(tag_bits(256), 8);
        assert_eq!(tag_bits(8), 3);
        assert_eq!(tag_bits(9), 4);
    }
}
