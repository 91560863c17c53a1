//! Fast paths: the common line shapes of the two most used formats (MSR Cambridge CSV and the
//! canonical CSV, columns in the [`crate::trace`] module documentation) parsed in one pass.

use super::fields::{MAX_END_BYTES, MAX_REQUEST_BYTES};
use super::record::{Raw, Rec};
use crate::trace::{Op, TraceFormat};

// ----- fast paths --------------------------------------------------------------------------
//
// The common shape of the most used formats, parsed in one pass over the bytes (field split and
// number conversion together, no trimming, no error text). A line of any other shape — spaces,
// signs, more than 19 digits, an op word in another spelling, a zero size, an overflow, a
// field more or less than the format has — falls back to the full parser, which gives the same
// value or the precise error; the fast path accepts only lines the full parser reads the same
// way.
//
// Each fast parser reads from the start of `b` and returns the record with the index where
// its last field ends; it stops at the first `\n` or `\r` and never reads past one (every
// field is digits, an op word or a host name without them). [`fast_line`] requires the line
// to end there; the reader also runs them on its buffer directly ([`has_fast_path`]), taking
// the line end they stop at as the line's, so that a line of the common shape is split and
// parsed in one pass.

/// Formats with a fast parser ([`fast_canonical`], [`fast_msr`]).
#[inline]
pub(crate) fn has_fast_path(format: TraceFormat) -> bool {
    matches!(format, TraceFormat::Canonical | TraceFormat::Msr)
}

/// 10^n for n in 0..=8.
pub(super) const POW10: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// The value of 8 decimal digits, one per byte of `v` (already minus `'0'`), the first digit
/// in the lowest byte (the well-known SWAR reduction: pairs, then quads, then the 8).
#[inline(always)]
pub(super) fn swar_value8(v: u64) -> u64 {
    const MASK: u64 = 0x0000_00FF_0000_00FF;
    const MUL1: u64 = 100 + (1_000_000 << 32);
    const MUL2: u64 = 1 + (10_000 << 32);
    let v = v.wrapping_mul(10).wrapping_add(v >> 8);
    ((v & MASK)
        .wrapping_mul(MUL1)
        .wrapping_add(((v >> 16) & MASK).wrapping_mul(MUL2)))
        >> 32
}

/// 1 to 19 digits from `*i`, up to a `,`, `\n` or `\r` (not consumed) or the end of `b`; any
/// other byte fails. Reads 8 bytes at a time where 8 are left (the digits of a word found with
/// bit operations and converted at once), byte by byte at the end of `b`.
#[inline(always)]
pub(super) fn fast_uint(b: &[u8], i: &mut usize) -> Option<u64> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let start = *i;
    let mut j = start;
    let mut acc: u64 = 0;
    let mut ended = false;
    while let Some(w) = b.get(j..j + 8) {
        let mut x = [0u8; 8];
        x.copy_from_slice(w);
        // Each byte minus '0' (as XOR: digits become 0..=9, every other byte something else).
        let a = u64::from_le_bytes(x) ^ (ONES * b'0' as u64);
        // The high bit of each byte that is not a digit (no carry between bytes).
        let not_digit = (((a & (ONES * 0x7f)) + ONES * 0x76) | a) & (ONES * 0x80);
        let n = (not_digit.trailing_zeros() / 8) as usize; // 8 when all are digits
        if n > 0 {
            // The n digits, moved to the top bytes (zeros before them).
            let v = if n == 8 {
                a
            } else {
                (a & ((1u64 << (8 * n)) - 1)) << (8 * (8 - n))
            };
            // Wraps only past 19 digits, refused below.
            acc = acc.wrapping_mul(POW10[n]).wrapping_add(swar_value8(v));
            j += n;
        }
        if n < 8 {
            ended = true;
            break;
        }
        if j - start > 19 {
            return None;
        }
    }
    if !ended {
        while let Some(&c) = b.get(j) {
            let d = c.wrapping_sub(b'0');
            if d > 9 || j - start > 19 {
                break;
            }
            acc = acc.wrapping_mul(10).wrapping_add(d as u64);
            j += 1;
        }
    }
    // No digit, or 20 digits or more: the full parser has the value or the overflow error.
    if j == start || j - start > 19 {
        return None;
    }
    if let Some(&c) = b.get(j) {
        if !(c == b',' || c == b'\n' || c == b'\r') {
            return None;
        }
    }
    *i = j;
    Some(acc)
}

/// Digits of a field followed by its `,` (consumed).
#[inline(always)]
pub(super) fn fast_uint_comma(b: &[u8], i: &mut usize) -> Option<u64> {
    let v = fast_uint(b, i)?;
    (*b.get(*i)? == b',').then_some(())?;
    *i += 1;
    Some(v)
}

/// Skip a field of bytes above `,` (letters, digits, `_`, `-`, `.`: a host name) up to and
/// past its `,`. Any other byte (a space, a `\n` or `\r`) fails: the full parser reads the
/// line.
#[inline(always)]
pub(super) fn fast_skip(b: &[u8], i: &mut usize) -> Option<()> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let mut j = *i;
    // 8 bytes at a time: the high bit of each byte below 0x2d (`,` is 0x2c).
    while let Some(w) = b.get(j..j + 8) {
        let mut x = [0u8; 8];
        x.copy_from_slice(w);
        let x = u64::from_le_bytes(x);
        let low = !(((x & (ONES * 0x7f)) + ONES * (0x80 - 0x2d)) | x) & (ONES * 0x80);
        if low != 0 {
            j += (low.trailing_zeros() / 8) as usize;
            return (b[j] == b',').then(|| *i = j + 1);
        }
        j += 8;
    }
    let k = b.get(j..)?.iter().position(|&c| c <= b',')?;
    (b[j + k] == b',').then(|| *i = j + k + 1)
}

/// `R`/`W` (any case) followed by `,`.
#[inline(always)]
pub(super) fn fast_rw1(b: &[u8], i: &mut usize) -> Option<Op> {
    let op = match *b.get(*i)? {
        b'R' | b'r' => Op::Read,
        b'W' | b'w' => Op::Write,
        _ => return None,
    };
    (*b.get(*i + 1)? == b',').then_some(())?;
    *i += 2;
    Some(op)
}

/// `Read` / `Write` as MSR writes them, followed by `,`.
#[inline(always)]
pub(super) fn fast_rw_word(b: &[u8], i: &mut usize) -> Option<Op> {
    let rest = b.get(*i..)?;
    if rest.starts_with(b"Read,") {
        *i += 5;
        Some(Op::Read)
    } else if rest.starts_with(b"Write,") {
        *i += 6;
        Some(Op::Write)
    } else {
        None
    }
}

#[inline(always)]
pub(super) fn fast_request(
    time_ns: u64,
    op: Op,
    offset: u64,
    len: u64,
    device: u32,
) -> Option<Rec> {
    // Anything the full parser would reject (zero size, out of range) goes to it for the error.
    (len > 0 && len <= MAX_REQUEST_BYTES && offset <= MAX_END_BYTES - len).then_some(Rec::Req(
        Raw {
            time_ns,
            op,
            offset,
            len,
            device,
        },
    ))
}

/// Canonical `time_ns,op,offset_bytes,size_bytes`: exactly 4 fields.
#[inline(always)]
pub(crate) fn fast_canonical(b: &[u8]) -> Option<(Rec, usize)> {
    let mut i = 0;
    let time_ns = fast_uint_comma(b, &mut i)?;
    let op = fast_rw1(b, &mut i)?;
    let offset = fast_uint_comma(b, &mut i)?;
    let len = fast_uint(b, &mut i)?;
    Some((fast_request(time_ns, op, offset, len, 0)?, i))
}

/// MSR Cambridge `Timestamp,Hostname,DiskNumber,Type,Offset,Size[,ResponseTime]`: 6 fields, or
/// 7 with a ResponseTime of digits.
#[inline(always)]
pub(crate) fn fast_msr(b: &[u8]) -> Option<(Rec, usize)> {
    let mut i = 0;
    let time_ns = fast_uint_comma(b, &mut i)?.checked_mul(100)?;
    fast_skip(b, &mut i)?;
    let device = u32::try_from(fast_uint_comma(b, &mut i)?).ok()?;
    let op = fast_rw_word(b, &mut i)?;
    let offset = fast_uint_comma(b, &mut i)?;
    let len = fast_uint(b, &mut i)?;
    if b.get(i) == Some(&b',') {
        i += 1;
        fast_uint(b, &mut i)?; // ResponseTime
    }
    Some((fast_request(time_ns, op, offset, len, device)?, i))
}
