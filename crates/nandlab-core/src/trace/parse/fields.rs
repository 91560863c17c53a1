//! The field cursor over a delimited line, number conversion (integers, decimals, scaled
//! units), the request checks (size and end address limits) and the errors that name the field
//! and its value: what every format's full parser (`formats.rs`, `blkparse.rs`) reads its fields
//! with. The formats' columns and units are tabled in the [`crate::trace`] module documentation.

use super::record::{FieldError, Raw, Rec};
use crate::trace::Op;

pub(super) fn show(v: &[u8]) -> String {
    let s = String::from_utf8_lossy(&v[..v.len().min(256)]);
    if s.chars().count() > 64 || v.len() > 256 {
        let t: String = s.chars().take(64).collect();
        format!("{t:?}…")
    } else {
        format!("{s:?}")
    }
}

#[cold]
pub(super) fn bad(field: &'static str, v: &[u8], problem: &str, expected: &str) -> FieldError {
    FieldError {
        field,
        msg: format!("value {}: {problem}; expected {expected}", show(v)),
    }
}

#[cold]
pub(super) fn missing(field: &'static str, columns: &str) -> FieldError {
    FieldError {
        field,
        msg: format!("missing: the line has too few fields; expected the columns `{columns}`"),
    }
}

/// Cursor over delimiter-separated fields.
pub(crate) struct Fields<'a> {
    pub(super) rest: &'a [u8],
    done: bool,
    ws: bool,
}

impl<'a> Fields<'a> {
    pub(crate) fn csv(line: &'a [u8]) -> Self {
        Fields {
            rest: line,
            done: false,
            ws: false,
        }
    }
    pub(crate) fn ws(line: &'a [u8]) -> Self {
        Fields {
            rest: line,
            done: false,
            ws: true,
        }
    }

    #[inline]
    pub(crate) fn next_field(&mut self) -> Option<&'a [u8]> {
        if self.ws {
            let r = self.rest;
            let s = r.iter().position(|&c| c != b' ' && c != b'\t')?;
            let r = &r[s..];
            let e = r
                .iter()
                .position(|&c| c == b' ' || c == b'\t')
                .unwrap_or(r.len());
            self.rest = &r[e..];
            Some(&r[..e])
        } else {
            if self.done {
                return None;
            }
            let r = self.rest;
            match r.iter().position(|&c| c == b',') {
                Some(i) => {
                    self.rest = &r[i + 1..];
                    Some(&r[..i])
                }
                None => {
                    self.done = true;
                    Some(r)
                }
            }
        }
    }

    #[inline]
    pub(super) fn get(
        &mut self,
        field: &'static str,
        columns: &str,
    ) -> Result<&'a [u8], FieldError> {
        self.next_field().ok_or_else(|| missing(field, columns))
    }

    /// The rest of the line, after the fields taken so far (for CSV, after their comma).
    pub(super) fn rest(&self) -> &'a [u8] {
        if self.done {
            &self.rest[self.rest.len()..]
        } else {
            self.rest
        }
    }

    /// The line must end here: more fields than the format has are an error quoting them (a
    /// record glued to this one by a lost line break is never dropped).
    #[inline]
    pub(super) fn end(&mut self, columns: &str) -> Result<(), FieldError> {
        let rest = self.rest();
        if self.next_field().is_none() {
            return Ok(());
        }
        Err(extra(rest, !self.ws, columns))
    }
}

/// Name of the pseudo-field of framing errors (text after the last column, a record in a
/// comment, a cut last line).
pub(crate) const END_FIELD: &str = "end of record";

#[cold]
pub(super) fn extra(rest: &[u8], comma: bool, columns: &str) -> FieldError {
    let mut text = Vec::with_capacity(rest.len() + 1);
    if comma {
        text.push(b',');
    }
    text.extend_from_slice(rest.trim_ascii());
    FieldError {
        field: END_FIELD,
        msg: format!(
            "extra text {} after the last column; expected exactly the columns `{columns}` \
             (two records on one line? a lost line break)",
            show(&text)
        ),
    }
}

#[derive(Debug)]
pub(super) enum NumErr {
    Empty,
    Negative,
    Invalid,
    Overflow,
}

impl NumErr {
    pub(super) fn problem(&self) -> &'static str {
        match self {
            NumErr::Empty => "empty",
            NumErr::Negative => "negative",
            NumErr::Invalid => "not a number",
            NumErr::Overflow => "too large",
        }
    }
}

#[inline]
pub(super) fn trim(v: &[u8]) -> &[u8] {
    v.trim_ascii()
}

#[inline]
pub(super) fn digits_u64(v: &[u8]) -> Result<u64, NumErr> {
    if v.is_empty() {
        return Err(NumErr::Empty);
    }
    if v.len() <= 19 {
        let mut acc: u64 = 0;
        for &c in v {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                return Err(NumErr::Invalid);
            }
            acc = acc * 10 + d as u64;
        }
        Ok(acc)
    } else {
        let mut acc: u64 = 0;
        for &c in v {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                return Err(NumErr::Invalid);
            }
            acc = acc
                .checked_mul(10)
                .and_then(|a| a.checked_add(d as u64))
                .ok_or(NumErr::Overflow)?;
        }
        Ok(acc)
    }
}

#[inline]
pub(super) fn num_u64(v: &[u8]) -> Result<u64, NumErr> {
    match digits_u64(v) {
        Ok(x) => Ok(x),
        Err(e) => {
            let t = trim(v);
            let t = t.strip_prefix(b"+").unwrap_or(t);
            if let Some(rest) = t.strip_prefix(b"-") {
                return if digits_u64(rest).is_ok() || decimal(rest, 0).is_ok() {
                    Err(NumErr::Negative)
                } else {
                    Err(NumErr::Invalid)
                };
            }
            if t.len() != v.len() {
                digits_u64(t)
            } else {
                Err(e)
            }
        }
    }
}

/// Non-negative decimal number `int[.frac]` scaled by 10^scale, truncated. No exponent.
pub(super) fn decimal(v: &[u8], scale: u32) -> Result<u64, NumErr> {
    let v = trim(v);
    let v = v.strip_prefix(b"+").unwrap_or(v);
    if v.is_empty() {
        return Err(NumErr::Empty);
    }
    if let Some(rest) = v.strip_prefix(b"-") {
        return if decimal(rest, scale).is_ok() {
            Err(NumErr::Negative)
        } else {
            Err(NumErr::Invalid)
        };
    }
    let (int, frac) = match memchr::memchr(b'.', v) {
        Some(i) => (&v[..i], &v[i + 1..]),
        None => (v, &v[v.len()..]),
    };
    if int.is_empty() && frac.is_empty() {
        return Err(NumErr::Invalid);
    }
    let ip = if int.is_empty() { 0 } else { digits_u64(int)? };
    let mut fp: u64 = 0;
    for (k, &c) in frac.iter().enumerate() {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return Err(NumErr::Invalid);
        }
        if (k as u32) < scale {
            fp = fp * 10 + d as u64;
        }
    }
    let nf = frac.len().min(scale as usize) as u32;
    fp *= 10u64.pow(scale - nf);
    ip.checked_mul(10u64.pow(scale))
        .and_then(|x| x.checked_add(fp))
        .ok_or(NumErr::Overflow)
}

#[inline]
pub(super) fn int_field(v: &[u8], field: &'static str, expected: &str) -> Result<u64, FieldError> {
    num_u64(v).map_err(|e| bad(field, v, e.problem(), expected))
}

#[inline]
pub(super) fn dec_field(
    v: &[u8],
    scale: u32,
    field: &'static str,
    expected: &str,
) -> Result<u64, FieldError> {
    // Fast path: plain integer.
    if let Ok(x) = digits_u64(v) {
        return x
            .checked_mul(10u64.pow(scale))
            .ok_or_else(|| bad(field, v, "too large", expected));
    }
    decimal(v, scale).map_err(|e| bad(field, v, e.problem(), expected))
}

#[inline]
pub(super) fn dev_field(v: &[u8], field: &'static str) -> Result<u32, FieldError> {
    let x = int_field(v, field, "a non-negative integer device number")?;
    u32::try_from(x).map_err(|_| bad(field, v, "too large", "a device number below 2^32"))
}

#[inline]
pub(super) fn scaled(
    x: u64,
    mul: u64,
    v: &[u8],
    field: &'static str,
    expected: &str,
) -> Result<u64, FieldError> {
    x.checked_mul(mul)
        .ok_or_else(|| bad(field, v, "too large", expected))
}

#[inline]
pub(super) fn size_field(
    v: &[u8],
    unit: u64,
    field: &'static str,
    expected: &str,
) -> Result<u64, FieldError> {
    let x = int_field(v, field, expected)?;
    if x == 0 {
        return Err(bad(
            field,
            v,
            "zero-length request (this format defines no zero-length commands; fix or drop the line)",
            expected,
        ));
    }
    scaled(x, unit, v, field, expected)
}

/// A parsed request, after checking that `offset + len` fits 2^64 (`v`/`field`: the offset
/// field, for the error).
#[inline]
pub(super) fn request(
    time_ns: u64,
    op: Op,
    offset: u64,
    len: u64,
    device: u32,
    v: &[u8],
    field: &'static str,
) -> Result<Rec, FieldError> {
    end_check(offset, len, v, field)?;
    Ok(Rec::Req(Raw {
        time_ns,
        op,
        offset,
        len,
        device,
    }))
}

/// The largest request nandlab accepts, bytes (64 GiB: far above any block I/O or discard a
/// real trace holds; a larger size is a corrupt line, and replaying it would take hours).
pub const MAX_REQUEST_BYTES: u64 = 1 << 36;
/// The highest end address nandlab accepts, bytes (256 TiB = 2^32 pages of 64 KiB: beyond it
/// no page size gives a 32-bit page number).
pub const MAX_END_BYTES: u64 = 1 << 48;

#[inline]
pub(super) fn end_check(
    offset: u64,
    len: u64,
    v: &[u8],
    field: &'static str,
) -> Result<(), FieldError> {
    if len > MAX_REQUEST_BYTES {
        return Err(bad(
            field,
            v,
            &format!("its request's size, {len} bytes, is above 64 GiB"),
            "a size of at most 68719476736 bytes",
        ));
    }
    match offset.checked_add(len) {
        Some(end) if end <= MAX_END_BYTES => Ok(()),
        _ => Err(bad(
            field,
            v,
            "offset + size beyond 2^48 bytes (256 TiB), more than a device model can address",
            "an offset below 281474976710656 bytes",
        )),
    }
}

#[inline]
pub(super) fn rw_word(v: &[u8], field: &'static str, expected: &str) -> Result<Op, FieldError> {
    let t = trim(v);
    if t.eq_ignore_ascii_case(b"read") || t.eq_ignore_ascii_case(b"r") {
        Ok(Op::Read)
    } else if t.eq_ignore_ascii_case(b"write") || t.eq_ignore_ascii_case(b"w") {
        Ok(Op::Write)
    } else if [&b"d"[..], b"t", b"trim", b"discard"]
        .iter()
        .any(|w| t.eq_ignore_ascii_case(w))
    {
        Ok(Op::Trim)
    } else {
        Err(bad(field, v, "unknown op", expected))
    }
}
