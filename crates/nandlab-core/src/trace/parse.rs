//! Per-format line parsers: bytes in, one record out, no allocation unless there is an error.

use super::{BlkparseEvent, Op, TraceFormat};

pub(crate) const SECTOR: u64 = 512;

/// A parsed request before device mapping, reordering and rebasing. `time_ns` is absolute
/// (as in the file, converted to ns).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Raw {
    pub time_ns: u64,
    pub op: Op,
    pub offset: u64,
    pub len: u64,
    pub device: u32,
}

/// What a data line turned out to be.
pub(crate) enum Rec {
    Req(Raw),
    /// A documented zero-length command (blkparse flush, vSCSI with transfer length 0).
    ZeroSize,
    /// Not a request: a vSCSI command other than READ/WRITE, or a blkparse event that is not a
    /// request (`Some(i)`: its action is [`BLK_ACTIONS`]`[i]`; a discard or a `D` event
    /// without data direction counts under its own action).
    NonRequest(Option<u8>),
    /// blkparse: a line that is not an event (its first token is not `maj,min`); the reader
    /// decides whether it is blkparse's own text ([`blk_text_starts_summary`]) or an error.
    Text,
}

/// blkparse's actions (`blkparse.c`, `dump_trace_fs` / `handle_notify`, blktrace 1.3): `A`
/// remap, `B` bounce, `C` complete, `D` issue, `F` front merge, `G` get request, `I` insert,
/// `M` back merge, `P` plug, `Q` queue, `R` requeue, `S` sleep, `U` unplug, `UT` unplug on
/// timer, `X` split, `m` message, `ZP` / `ZU` zone plug / unplug. Index
/// [`BLK_TEXT`] counts blkparse's own text lines (`Input file … added`, the summary).
pub const BLK_ACTIONS: [&str; 19] = [
    "A", "B", "C", "D", "F", "G", "I", "M", "P", "Q", "R", "S", "U", "UT", "X", "m", "ZP", "ZU",
    "text",
];
/// Index of blkparse's own text lines in [`BLK_ACTIONS`].
pub(crate) const BLK_TEXT: u8 = 18;

fn blk_action(tok: &[u8]) -> Option<u8> {
    BLK_ACTIONS[..BLK_TEXT as usize]
        .iter()
        .position(|a| a.as_bytes() == tok)
        .map(|i| i as u8)
}

/// A field-level error; the reader adds file and line.
#[derive(Debug)]
pub(crate) struct FieldError {
    pub field: &'static str,
    pub msg: String,
}

fn show(v: &[u8]) -> String {
    let s = String::from_utf8_lossy(&v[..v.len().min(256)]);
    if s.chars().count() > 64 || v.len() > 256 {
        let t: String = s.chars().take(64).collect();
        format!("{t:?}…")
    } else {
        format!("{s:?}")
    }
}

#[cold]
fn bad(field: &'static str, v: &[u8], problem: &str, expected: &str) -> FieldError {
    FieldError {
        field,
        msg: format!("value {}: {problem}; expected {expected}", show(v)),
    }
}

#[cold]
fn missing(field: &'static str, columns: &str) -> FieldError {
    FieldError {
        field,
        msg: format!("missing: the line has too few fields; expected the columns `{columns}`"),
    }
}

/// Cursor over delimiter-separated fields.
pub(crate) struct Fields<'a> {
    rest: &'a [u8],
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
    fn get(&mut self, field: &'static str, columns: &str) -> Result<&'a [u8], FieldError> {
        self.next_field().ok_or_else(|| missing(field, columns))
    }

    /// The rest of the line, after the fields taken so far (for CSV, after their comma).
    fn rest(&self) -> &'a [u8] {
        if self.done {
            &self.rest[self.rest.len()..]
        } else {
            self.rest
        }
    }

    /// The line must end here: more fields than the format has are an error quoting them (a
    /// record glued to this one by a lost line break is never dropped).
    #[inline]
    fn end(&mut self, columns: &str) -> Result<(), FieldError> {
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
fn extra(rest: &[u8], comma: bool, columns: &str) -> FieldError {
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
enum NumErr {
    Empty,
    Negative,
    Invalid,
    Overflow,
}

impl NumErr {
    fn problem(&self) -> &'static str {
        match self {
            NumErr::Empty => "empty",
            NumErr::Negative => "negative",
            NumErr::Invalid => "not a number",
            NumErr::Overflow => "too large",
        }
    }
}

#[inline]
fn trim(v: &[u8]) -> &[u8] {
    v.trim_ascii()
}

#[inline]
fn digits_u64(v: &[u8]) -> Result<u64, NumErr> {
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
fn num_u64(v: &[u8]) -> Result<u64, NumErr> {
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
fn decimal(v: &[u8], scale: u32) -> Result<u64, NumErr> {
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
fn int_field(v: &[u8], field: &'static str, expected: &str) -> Result<u64, FieldError> {
    num_u64(v).map_err(|e| bad(field, v, e.problem(), expected))
}

#[inline]
fn dec_field(v: &[u8], scale: u32, field: &'static str, expected: &str) -> Result<u64, FieldError> {
    // Fast path: plain integer.
    if let Ok(x) = digits_u64(v) {
        return x
            .checked_mul(10u64.pow(scale))
            .ok_or_else(|| bad(field, v, "too large", expected));
    }
    decimal(v, scale).map_err(|e| bad(field, v, e.problem(), expected))
}

#[inline]
fn dev_field(v: &[u8], field: &'static str) -> Result<u32, FieldError> {
    let x = int_field(v, field, "a non-negative integer device number")?;
    u32::try_from(x).map_err(|_| bad(field, v, "too large", "a device number below 2^32"))
}

#[inline]
fn scaled(
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
fn size_field(v: &[u8], unit: u64, field: &'static str, expected: &str) -> Result<u64, FieldError> {
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
fn request(
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
fn end_check(offset: u64, len: u64, v: &[u8], field: &'static str) -> Result<(), FieldError> {
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
fn rw_word(v: &[u8], field: &'static str, expected: &str) -> Result<Op, FieldError> {
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

const MSR_COLS: &str = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime";
const SPC_COLS: &str = "ASU,LBA,Size,Opcode,Timestamp";
const DISKSIM_COLS: &str = "time_ms device lba_sectors size_sectors flags";
const MQSIM_COLS: &str = "time_ns device lba_sectors size_sectors op";
const BLK_COLS: &str = "maj,min cpu seq time pid action RWBS sector + nsectors [process]";
const CANON_COLS: &str = "time_ns,op,offset_bytes,size_bytes";
const SYSTOR_COLS: &str = "Timestamp,Response,IOType,LUN,Offset,Size";
const TENCENT_COLS: &str = "Timestamp,Offset,Size,IOType,VolumeID";
const VSCSI_COLS: &str = "version,time_us,op_hex,size_bytes,lbn";

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
const POW10: [u64; 9] = [
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
fn swar_value8(v: u64) -> u64 {
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
fn fast_uint(b: &[u8], i: &mut usize) -> Option<u64> {
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
fn fast_uint_comma(b: &[u8], i: &mut usize) -> Option<u64> {
    let v = fast_uint(b, i)?;
    (*b.get(*i)? == b',').then_some(())?;
    *i += 1;
    Some(v)
}

/// Skip a field of bytes above `,` (letters, digits, `_`, `-`, `.`: a host name) up to and
/// past its `,`. Any other byte (a space, a `\n` or `\r`) fails: the full parser reads the
/// line.
#[inline(always)]
fn fast_skip(b: &[u8], i: &mut usize) -> Option<()> {
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
fn fast_rw1(b: &[u8], i: &mut usize) -> Option<Op> {
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
fn fast_rw_word(b: &[u8], i: &mut usize) -> Option<Op> {
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
fn fast_request(time_ns: u64, op: Op, offset: u64, len: u64, device: u32) -> Option<Rec> {
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

/// A fast parser on one whole line: the record if the line ends where the record does.
#[inline(always)]
fn fast_line(parse: impl Fn(&[u8]) -> Option<(Rec, usize)>, b: &[u8]) -> Option<Rec> {
    let (r, i) = parse(b)?;
    (i == b.len()).then_some(r)
}

/// Parse one data line (not blank, not comment, not header) of `format`. `last`: the line is
/// the end of the file without a line ending (blkparse then accepts a process name cut before
/// its `]`). Always inlined into the per-line loops (a call per line costs ~3 % of a parse;
/// with a second caller, the file-level reader, the inliner stopped inlining it).
#[inline(always)]
pub(crate) fn parse_line(
    format: TraceFormat,
    line: &[u8],
    blk_event: BlkparseEvent,
    last: bool,
) -> Result<Rec, FieldError> {
    let fast = match format {
        TraceFormat::Canonical => fast_line(fast_canonical, line),
        TraceFormat::Msr => fast_line(fast_msr, line),
        _ => None,
    };
    if let Some(r) = fast {
        return Ok(r);
    }
    parse_line_full(format, line, blk_event, last)
}

/// The full parser of every format: values, or the error naming field and value.
#[cold]
fn parse_line_full(
    format: TraceFormat,
    line: &[u8],
    blk_event: BlkparseEvent,
    last: bool,
) -> Result<Rec, FieldError> {
    match format {
        TraceFormat::Msr => parse_msr(line),
        TraceFormat::Spc => parse_spc(line),
        TraceFormat::Disksim => parse_disksim(line),
        TraceFormat::Mqsim => parse_mqsim(line),
        TraceFormat::Blkparse => parse_blkparse(line, blk_event, last),
        TraceFormat::Canonical => parse_canonical(line),
        TraceFormat::Systor => parse_systor(line),
        TraceFormat::Tencent => parse_tencent(line),
        TraceFormat::Vscsi => parse_vscsi(line),
    }
}

/// The columns of `format`, as its errors name them.
pub(crate) fn columns(format: TraceFormat) -> &'static str {
    match format {
        TraceFormat::Msr => MSR_COLS,
        TraceFormat::Spc => SPC_COLS,
        TraceFormat::Disksim => DISKSIM_COLS,
        TraceFormat::Mqsim => MQSIM_COLS,
        TraceFormat::Blkparse => BLK_COLS,
        TraceFormat::Canonical => CANON_COLS,
        TraceFormat::Systor => SYSTOR_COLS,
        TraceFormat::Tencent => TENCENT_COLS,
        TraceFormat::Vscsi => VSCSI_COLS,
    }
}

// ----- headers -----------------------------------------------------------------------------

/// Accepted names of each column of a format's header line, compared after
/// [`header_name`]'s normalisation; a header has one of the format's field counts.
fn header_columns(format: TraceFormat) -> &'static [&'static [&'static str]] {
    const TIME: &[&str] = &["timestamp", "time"];
    const RW: &[&str] = &["iotype", "type", "op", "optype", "opcode"];
    match format {
        TraceFormat::Msr => &[
            TIME,
            &["hostname", "host"],
            &["disknumber", "disk", "diskno", "devicenumber", "device"],
            RW,
            &["offset"],
            &["size"],
            &["responsetime", "response", "latency"],
        ],
        TraceFormat::Spc => &[&["asu"], &["lba"], &["size"], RW, TIME],
        TraceFormat::Disksim => &[
            &["timems", "time", "arrivaltime"],
            &["device", "devno", "devicenumber"],
            &["lbasectors", "lba", "blkno", "block", "blocknumber", "lsn"],
            &["sizesectors", "size", "blocks", "reqsize"],
            &["flags"],
        ],
        TraceFormat::Mqsim => &[
            &["timens", "time", "arrivaltime"],
            &["device", "devno", "devicenumber"],
            &["lbasectors", "lba", "blkno", "block", "blocknumber", "lsn"],
            &["sizesectors", "size", "blocks", "reqsize"],
            &["op", "type", "iotype"],
        ],
        TraceFormat::Blkparse => &[],
        TraceFormat::Canonical => &[&["timens"], &["op"], &["offsetbytes"], &["sizebytes"]],
        TraceFormat::Systor => &[
            TIME,
            &["response", "responsetime"],
            RW,
            &["lun"],
            &["offset"],
            &["size"],
        ],
        TraceFormat::Tencent => &[
            TIME,
            &["offset"],
            &["size"],
            RW,
            &["volumeid", "volume", "volid"],
        ],
        TraceFormat::Vscsi => &[
            &["version"],
            &["timeus", "time", "timestamp"],
            &["ophex", "op", "opcode"],
            &["sizebytes", "size"],
            &["lbn", "lba"],
        ],
    }
}

/// A column name as compared: ASCII lower case, without quotes, spaces, `_` and `-`, and
/// without a unit in parentheses (`Offset(bytes)` → `offset`).
fn header_name(v: &[u8]) -> String {
    let v = match memchr::memchr(b'(', v) {
        Some(i) => &v[..i],
        None => v,
    };
    v.iter()
        .filter(|c| !matches!(c, b'"' | b'\'' | b' ' | b'\t' | b'_' | b'-'))
        .map(|c| c.to_ascii_lowercase() as char)
        .collect()
}

/// Is `line` a header of `format`: one of its field counts, each column one of its known
/// names (case-insensitive; see [`header_columns`])? A line that is not is data, and a bad
/// one an error: a damaged first record is never skipped as a header.
pub(crate) fn is_header(format: TraceFormat, line: &[u8]) -> bool {
    let cols = header_columns(format);
    if cols.is_empty() {
        return false;
    }
    let mut f = match format {
        TraceFormat::Disksim | TraceFormat::Mqsim => Fields::ws(line),
        _ => Fields::csv(line),
    };
    let min = match format {
        TraceFormat::Msr => 6,
        _ => cols.len(),
    };
    let mut n = 0;
    while let Some(v) = f.next_field() {
        if n == cols.len() || !cols[n].contains(&header_name(v).as_str()) {
            return false;
        }
        n += 1;
    }
    n >= min
}

// ----- the end of the file -----------------------------------------------------------------

/// Could the last field of `line`, the file's last line without a line ending, be a number
/// cut short (read smaller than written)? Yes when the line ends in a digit or `.`, except
/// for MQSim, whose last field is the one-digit op (a cut leaves it empty: an error anyway).
pub(crate) fn cut_risk(format: TraceFormat, line: &[u8]) -> bool {
    format != TraceFormat::Mqsim && matches!(line.last(), Some(b'0'..=b'9' | b'.'))
}

/// The error for a last line without a line ending whose last field may be a cut number (or
/// that holds only blanks: the file cut after the indentation of a record).
#[cold]
pub(crate) fn cut_error(format: TraceFormat, line: &[u8]) -> FieldError {
    let start = line
        .iter()
        .rposition(|&c| matches!(c, b',' | b' ' | b'\t'))
        .map_or(0, |i| i + 1);
    let what = if line.trim_ascii().is_empty() {
        "holds only blanks: the file may have been cut at the start of a record".to_string()
    } else {
        format!(
            "ends in the number {}, which may have been cut short with the file",
            show(&line[start..])
        )
    };
    FieldError {
        field: END_FIELD,
        msg: format!(
            "the last line has no line ending and {what} (format {format}); expected a line \
             ending after it: complete the file, or accept the line as written with \
             --allow-unterminated (allow_unterminated = true)"
        ),
    }
}

// ----- parsers -----------------------------------------------------------------------------

#[inline]
fn parse_msr(line: &[u8]) -> Result<Rec, FieldError> {
    let c = MSR_COLS;
    let mut f = Fields::csv(line);
    let ts = f.get("Timestamp", c)?;
    let ticks = int_field(
        ts,
        "Timestamp",
        "a non-negative integer (100 ns FILETIME ticks)",
    )?;
    let time_ns = scaled(ticks, 100, ts, "Timestamp", "a FILETIME below 2^64 ns")?;
    f.get("Hostname", c)?;
    let d = f.get("DiskNumber", c)?;
    let device = dev_field(d, "DiskNumber")?;
    let op = rw_word(f.get("Type", c)?, "Type", "`Read` or `Write`")?;
    let o = f.get("Offset", c)?;
    let offset = int_field(o, "Offset", "a non-negative integer (bytes)")?;
    let s = f.get("Size", c)?;
    let len = size_field(s, 1, "Size", "a positive integer (bytes)")?;
    // The optional ResponseTime: not used, but checked, so that a glued record is not dropped.
    if let Some(r) = f.next_field() {
        int_field(
            r,
            "ResponseTime",
            "a non-negative integer (100 ns ticks), or no 7th column",
        )?;
    }
    f.end(c)?;
    request(time_ns, op, offset, len, device, o, "Offset")
}

fn parse_spc(line: &[u8]) -> Result<Rec, FieldError> {
    let c = SPC_COLS;
    let mut f = Fields::csv(line);
    let device = dev_field(f.get("ASU", c)?, "ASU")?;
    let l = f.get("LBA", c)?;
    let lba = int_field(l, "LBA", "a non-negative integer (512 B sectors)")?;
    let offset = scaled(lba, SECTOR, l, "LBA", "an LBA below 2^55")?;
    let s = f.get("Size", c)?;
    let len = size_field(s, 1, "Size", "a positive integer (bytes)")?;
    let op = match trim(f.get("Opcode", c)?) {
        b"r" | b"R" => Op::Read,
        b"w" | b"W" => Op::Write,
        other => return Err(bad("Opcode", other, "unknown op", "`r`, `w`, `R` or `W`")),
    };
    let t = f.get("Timestamp", c)?;
    let time_ns = dec_field(t, 9, "Timestamp", "non-negative seconds (e.g. 0.026214)")?;
    f.end(c)?;
    request(time_ns, op, offset, len, device, l, "LBA")
}

/// Shared by DiskSim and MQSim: `time device lba size op`.
fn parse_ws5(line: &[u8], disksim: bool) -> Result<Rec, FieldError> {
    let c = if disksim { DISKSIM_COLS } else { MQSIM_COLS };
    let mut f = Fields::ws(line);
    let t = f.get("time", c)?;
    let time_ns = if disksim {
        dec_field(t, 6, "time", "non-negative milliseconds (e.g. 7961.833)")?
    } else {
        int_field(t, "time", "a non-negative integer (ns)")?
    };
    let device = dev_field(f.get("device", c)?, "device")?;
    let l = f.get("lba", c)?;
    let lba = int_field(l, "lba", "a non-negative integer (512 B sectors)")?;
    let offset = scaled(lba, SECTOR, l, "lba", "an LBA below 2^55")?;
    let s = f.get("size", c)?;
    let len = size_field(s, SECTOR, "size", "a positive integer (512 B sectors)")?;
    let op = if disksim {
        let v = f.get("flags", c)?;
        let flags = int_field(v, "flags", "a non-negative integer (bit 0 set = read)")?;
        if flags & 1 == 1 {
            Op::Read
        } else {
            Op::Write
        }
    } else {
        let v = f.get("op", c)?;
        match trim(v) {
            b"1" => Op::Read,
            b"0" => Op::Write,
            _ => return Err(bad("op", v, "unknown op", "`1` (read) or `0` (write)")),
        }
    };
    f.end(c)?;
    request(time_ns, op, offset, len, device, l, "lba")
}

fn parse_disksim(line: &[u8]) -> Result<Rec, FieldError> {
    parse_ws5(line, true)
}

fn parse_mqsim(line: &[u8]) -> Result<Rec, FieldError> {
    parse_ws5(line, false)
}

/// `maj,min` device token of blkparse.
pub(crate) fn is_blk_dev(tok: &[u8]) -> bool {
    match memchr::memchr(b',', tok) {
        Some(i) => {
            let (a, b) = (&tok[..i], &tok[i + 1..]);
            !a.is_empty()
                && !b.is_empty()
                && a.iter().all(u8::is_ascii_digit)
                && b.iter().all(u8::is_ascii_digit)
        }
        None => false,
    }
}

/// Does a blkparse text line (not an event) start blkparse's summary: `CPU<n> (maj,min):`,
/// `Total (maj,min):`, or a per-process block `name (pid)` (`blkparse -s`)? The reader skips
/// these and every non-event line after them up to the next event, and `Input file … added`
/// lines ([`blk_text_is_input`]); any other non-event line is an error.
pub(crate) fn blk_text_starts_summary(line: &[u8]) -> bool {
    let t = line.trim_ascii();
    if t.starts_with(b"Input file ") && t.ends_with(b" added") {
        return false;
    }
    let cpu = t.strip_prefix(b"CPU").is_some_and(|r| {
        let d = r.iter().take_while(|c| c.is_ascii_digit()).count();
        d > 0 && r[d..].starts_with(b" (")
    });
    let process = t.ends_with(b")")
        && t[..t.len() - 1]
            .iter()
            .rposition(|&c| c == b'(')
            .is_some_and(|i| {
                i > 1
                    && t[i - 1] == b' '
                    && t[i + 1..t.len() - 1].iter().all(u8::is_ascii_digit)
                    && i + 1 < t.len() - 1
            });
    cpu || process || t.starts_with(b"Total (")
}

/// `Input file NAME added`: what blkparse prints before the events, once per input file.
pub(crate) fn blk_text_is_input(line: &[u8]) -> bool {
    let t = line.trim_ascii();
    t.starts_with(b"Input file ") && t.ends_with(b" added")
}

/// The 4 header fields after `maj,min` look like an event's (`cpu seq time pid`)?
fn blk_event_follows(f: &Fields<'_>) -> bool {
    let mut g = Fields::ws(f.rest);
    let int =
        |v: Option<&[u8]>| v.is_some_and(|v| !v.is_empty() && v.iter().all(u8::is_ascii_digit));
    int(g.next_field())
        && int(g.next_field())
        && g.next_field().is_some_and(|t| decimal(t, 9).is_ok())
        && int(g.next_field())
}

/// RWBS of blkparse (`fill_rwbs`): `F` flush, one of `D` discard (`E` secure erase), `W`,
/// `R`, `N` none, then `F` FUA, `A` ahead, `S` sync, `M` meta.
fn blk_op(rwbs: &[u8]) -> Result<Option<Op>, FieldError> {
    let ok = !rwbs.is_empty()
        && rwbs.len() <= 8
        && rwbs.iter().all(|c| b"FDEWRNASM".contains(c))
        && !(rwbs.contains(&b'R') && rwbs.contains(&b'W'));
    if !ok {
        return Err(bad(
            "RWBS",
            rwbs,
            "not an RWBS",
            "blkparse's RWBS: letters of F D E W R N A S M with at most one of R and W \
             (e.g. W, RA, FWS, D, N)",
        ));
    }
    Ok(if rwbs.contains(&b'D') {
        Some(Op::Trim) // discard: skipped by the reader unless discards are asked for
    } else if rwbs.contains(&b'R') {
        Some(Op::Read)
    } else if rwbs.contains(&b'W') {
        Some(Op::Write)
    } else {
        None
    })
}

fn parse_blkparse(line: &[u8], ev: BlkparseEvent, last: bool) -> Result<Rec, FieldError> {
    let c = BLK_COLS;
    let mut f = Fields::ws(line);
    match f.next_field() {
        Some(d) if is_blk_dev(d) => {}
        // blkparse's own text (Input file … added, the summary), or an error: the reader
        // decides.
        _ => return Ok(Rec::Text),
    }
    let v = f.get("cpu", c)?;
    int_field(v, "cpu", "a non-negative integer (CPU number)")?;
    let v = f.get("seq", c)?;
    int_field(v, "seq", "a non-negative integer (sequence number)")?;
    let t = f.get("time", c)?;
    let time_ns = dec_field(t, 9, "time", "non-negative seconds (e.g. 0.000000000)")?;
    let v = f.get("pid", c)?;
    int_field(v, "pid", "a non-negative integer (process id)")?;
    let a = f.get("action", c)?;
    let Some(action) = blk_action(a) else {
        return Err(bad(
            "action",
            a,
            "unknown blkparse action",
            &format!("one of {}", BLK_ACTIONS[..BLK_TEXT as usize].join(" ")),
        ));
    };
    let rwbs = f.get("RWBS", c)?;
    let op = blk_op(rwbs)?;
    // Another event on the same line (a lost line break): never drop it with this one.
    let mut g = Fields::ws(f.rest);
    while let Some(tok) = g.next_field() {
        if is_blk_dev(tok) && blk_event_follows(&g) {
            let at = line.len() - g.rest.len() - tok.len();
            return Err(extra(&line[at..], false, c));
        }
    }
    let want: &[u8] = match ev {
        BlkparseEvent::Issue => b"D",
        BlkparseEvent::Queue => b"Q",
    };
    if a != want {
        return Ok(Rec::NonRequest(Some(action)));
    }
    let Some(op) = op else {
        // `N`: no data direction (a flush, a SCSI command without data).
        return Ok(Rec::NonRequest(Some(action)));
    };
    let sec = match f.next_field() {
        Some(s) if !s.starts_with(b"[") => s,
        // No sector: a flush / barrier without data.
        _ => return Ok(Rec::ZeroSize),
    };
    let sector = int_field(sec, "sector", "a non-negative integer (512 B sectors)")?;
    let plus = f.get("+", c)?;
    if plus != b"+" {
        return Err(bad(
            "+",
            plus,
            "unexpected token",
            "`+` between sector and nsectors",
        ));
    }
    let n = f.get("nsectors", c)?;
    let nsec = int_field(n, "nsectors", "a non-negative integer (512 B sectors)")?;
    // What may follow: `(elapsed)` (blkparse -t), then `[process]` (at most 16 bytes, the
    // kernel's TASK_COMM_LEN), and nothing else.
    let mut rest = f.rest.trim_ascii();
    if let Some(r) = rest.strip_prefix(b"(") {
        let close = memchr::memchr(b')', r)
            .filter(|&k| r[..k].trim_ascii().iter().all(u8::is_ascii_digit) && k > 0);
        match close {
            Some(k) => rest = r[k + 1..].trim_ascii(),
            None => {
                return Err(bad(
                    "elapsed",
                    rest,
                    "not an elapsed time",
                    "`(ns)` or the process `[name]` after nsectors",
                ))
            }
        }
    }
    let name_ok = match rest {
        [] => true,
        [b'[', inner @ .., b']'] => inner.len() <= 16,
        // The file's last line, cut inside the process name: the request is complete.
        [b'[', inner @ ..] => last && inner.len() <= 16 && !inner.contains(&b']'),
        _ => false,
    };
    if !name_ok {
        return Err(bad(
            "process",
            rest,
            "unexpected text after nsectors",
            "nothing more than `[process name]` (at most 16 characters)",
        ));
    }
    if nsec == 0 {
        return Ok(Rec::ZeroSize);
    }
    let offset = scaled(sector, SECTOR, sec, "sector", "a sector below 2^55")?;
    let len = scaled(nsec, SECTOR, n, "nsectors", "fewer than 2^55 sectors")?;
    request(time_ns, op, offset, len, 0, sec, "sector")
}

fn parse_canonical(line: &[u8]) -> Result<Rec, FieldError> {
    let c = CANON_COLS;
    let mut f = Fields::csv(line);
    let time_ns = int_field(
        f.get("time_ns", c)?,
        "time_ns",
        "a non-negative integer (ns)",
    )?;
    let op = rw_word(f.get("op", c)?, "op", "`R` or `W`")?;
    let o = f.get("offset_bytes", c)?;
    let offset = int_field(o, "offset_bytes", "a non-negative integer (bytes)")?;
    let len = size_field(
        f.get("size_bytes", c)?,
        1,
        "size_bytes",
        "a positive integer (bytes)",
    )?;
    f.end(c)?;
    request(time_ns, op, offset, len, 0, o, "offset_bytes")
}

fn parse_systor(line: &[u8]) -> Result<Rec, FieldError> {
    let c = SYSTOR_COLS;
    let mut f = Fields::csv(line);
    let t = f.get("Timestamp", c)?;
    let time_ns = dec_field(t, 9, "Timestamp", "non-negative epoch seconds")?;
    // Not used, but checked: a damaged line is not read as a request.
    let r = f.get("Response", c)?;
    dec_field(r, 9, "Response", "non-negative seconds (e.g. 0.000806)")?;
    let op = rw_word(f.get("IOType", c)?, "IOType", "`R` or `W`")?;
    let device = dev_field(f.get("LUN", c)?, "LUN")?;
    let o = f.get("Offset", c)?;
    let offset = int_field(o, "Offset", "a non-negative integer (bytes)")?;
    let len = size_field(f.get("Size", c)?, 1, "Size", "a positive integer (bytes)")?;
    f.end(c)?;
    request(time_ns, op, offset, len, device, o, "Offset")
}

fn parse_tencent(line: &[u8]) -> Result<Rec, FieldError> {
    let c = TENCENT_COLS;
    let mut f = Fields::csv(line);
    let t = f.get("Timestamp", c)?;
    let time_ns = dec_field(t, 9, "Timestamp", "non-negative epoch seconds")?;
    let o = f.get("Offset", c)?;
    let off_sec = int_field(o, "Offset", "a non-negative integer (512 B sectors)")?;
    let offset = scaled(off_sec, SECTOR, o, "Offset", "an offset below 2^55 sectors")?;
    let len = size_field(
        f.get("Size", c)?,
        SECTOR,
        "Size",
        "a positive integer (512 B sectors)",
    )?;
    let v = f.get("IOType", c)?;
    let op = match trim(v) {
        b"0" => Op::Read,
        b"1" => Op::Write,
        _ => return Err(bad("IOType", v, "unknown op", "`0` (read) or `1` (write)")),
    };
    let device = dev_field(f.get("VolumeID", c)?, "VolumeID")?;
    f.end(c)?;
    request(time_ns, op, offset, len, device, o, "Offset")
}

fn parse_vscsi(line: &[u8]) -> Result<Rec, FieldError> {
    let c = VSCSI_COLS;
    let mut f = Fields::csv(line);
    let v = f.get("version", c)?;
    int_field(v, "version", "a non-negative integer")?;
    let t = f.get("time_us", c)?;
    let us = int_field(t, "time_us", "a non-negative integer (µs)")?;
    let time_ns = scaled(us, 1000, t, "time_us", "a time below 2^64 ns")?;
    let o = f.get("op_hex", c)?;
    let ot = trim(o);
    let ot = ot
        .strip_prefix(b"0x")
        .or_else(|| ot.strip_prefix(b"0X"))
        .unwrap_or(ot);
    let code = if !ot.is_empty() && ot.len() <= 2 && ot.iter().all(u8::is_ascii_hexdigit) {
        ot.iter().fold(0u8, |a, &h| {
            a * 16 + (h as char).to_digit(16).unwrap_or(0) as u8
        })
    } else {
        return Err(bad(
            "op_hex",
            o,
            "not a hex SCSI opcode",
            "a SCSI opcode in hex (28 READ(10), 2a WRITE(10), ...)",
        ));
    };
    let op = match code {
        0x08 | 0x28 | 0x88 => Some(Op::Read),
        0x0a | 0x2a | 0x8a => Some(Op::Write),
        _ => None,
    };
    let s = f.get("size_bytes", c)?;
    let size = int_field(s, "size_bytes", "a non-negative integer (bytes)")?;
    let l = f.get("lbn", c)?;
    let lbn = int_field(l, "lbn", "a non-negative integer (512 B sectors)")?;
    f.end(c)?;
    let Some(op) = op else {
        return Ok(Rec::NonRequest(None));
    };
    if size == 0 {
        return Ok(Rec::ZeroSize);
    }
    let offset = scaled(lbn, SECTOR, l, "lbn", "an LBN below 2^55")?;
    request(time_ns, op, offset, size, 0, l, "lbn")
}

/// For a comment line: the start of a request of `format` glued onto its end (a lost line
/// break after the comment), if any. Tries every start of a number after a non-digit.
pub(crate) fn record_in_comment(
    format: TraceFormat,
    line: &[u8],
    blk_event: BlkparseEvent,
) -> Option<usize> {
    // A record is far shorter than this; looking further back only costs time.
    let from = line.len().saturating_sub(1024).max(1);
    (from..line.len()).find(|&j| {
        line[j].is_ascii_digit()
            && !line[j - 1].is_ascii_digit()
            && line[j - 1] != b'.'
            && matches!(
                parse_line_full(format, &line[j..], blk_event, false),
                Ok(Rec::Req(_))
            )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: &Rec, b: &Rec) -> bool {
        match (a, b) {
            (Rec::Req(x), Rec::Req(y)) => {
                (x.time_ns, x.op, x.offset, x.len, x.device)
                    == (y.time_ns, y.op, y.offset, y.len, y.device)
            }
            _ => false,
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// Whatever the fast paths accept, the full parser reads the same way.
        #[test]
        fn fast_paths_agree_with_the_full_parser(
            n in proptest::collection::vec(
                proptest::prop_oneof![
                    8 => "[0-9]{1,19}",
                    1 => "[0-9]{20,21}|",
                    1 => "[ +-]?[0-9]{1,3}|0{1,3}",
                ],
                5,
            ),
            op in proptest::prop_oneof![4 => "[RrWw]|Read|Write", 1 => "read|W |x"],
            host in "[a-z0-9]{0,4}| ",
            tail in ",[0-9,]{0,8}|\\r| |",
        ) {
            let canon = format!("{},{op},{},{}{tail}", n[0], n[1], n[2]);
            let msr = format!("{},{host},{},{op},{},{}{tail}", n[0], n[3], n[1], n[2]);
            for (fmt, line) in [(TraceFormat::Canonical, canon), (TraceFormat::Msr, msr)] {
                let b = line.as_bytes();
                let fast = match fmt {
                    TraceFormat::Canonical => fc(b),
                    _ => fm(b),
                };
                if let Some(f) = fast {
                    let full = parse_line_full(fmt, b, BlkparseEvent::default(), false);
                    proptest::prop_assert!(
                        full.as_ref().is_ok_and(|r| same(r, &f)),
                        "{fmt}: {line:?}"
                    );
                }
            }
        }

        /// The field-count rule: a line of plain digits with the format's field count is taken
        /// by the fast path, one with a field more or less by neither parser.
        #[test]
        fn fast_paths_keep_the_field_count(
            n in proptest::collection::vec("[1-9][0-9]{0,9}", 8),
            op in "[RW]",
            extra in 0usize..3,
            missing in 0usize..2,
            response_time in proptest::bool::ANY,
        ) {
            let mut canon: Vec<String> =
                vec![n[0].clone(), op.clone(), n[1].clone(), n[2].clone()];
            let word = if op == "R" { "Read" } else { "Write" };
            let mut msr: Vec<String> = vec![
                n[0].clone(), "hm".into(), "0".into(), word.into(), n[1].clone(), n[2].clone(),
            ];
            if response_time {
                msr.push(n[3].clone());
            }
            for k in 0..extra {
                canon.push(n[4 + k].clone());
                msr.push(n[4 + k].clone());
            }
            for _ in 0..missing {
                canon.pop();
                msr.pop();
            }
            // An MSR line of 7 fields less one is the 6-field form, still exact.
            let msr_exact = (6..=7).contains(&msr.len());
            let canon_exact = canon.len() == 4;
            for (fmt, fields, exact) in [
                (TraceFormat::Canonical, canon, canon_exact),
                (TraceFormat::Msr, msr, msr_exact),
            ] {
                let line = fields.join(",");
                let b = line.as_bytes();
                let fast = match fmt {
                    TraceFormat::Canonical => fc(b),
                    _ => fm(b),
                };
                let full = parse_line_full(fmt, b, BlkparseEvent::default(), false);
                proptest::prop_assert_eq!(fast.is_some(), exact, "{}: {:?}", fmt, line);
                proptest::prop_assert_eq!(full.is_ok(), exact, "{}: {:?}", fmt, line);
            }
        }
    }

    fn fc(b: &[u8]) -> Option<Rec> {
        fast_line(fast_canonical, b)
    }

    fn fm(b: &[u8]) -> Option<Rec> {
        fast_line(fast_msr, b)
    }

    #[test]
    fn fast_uint_reads_every_length_and_end() {
        for len in 1..=21usize {
            for seed in 0..40u64 {
                let digits: String = (0..len)
                    .map(|k| {
                        let d = (seed.wrapping_mul(2654435761).wrapping_add(k as u64 * 97)
                            >> (k % 7))
                            % 10;
                        char::from(b'0' + d as u8)
                    })
                    .collect();
                let want = if len <= 19 {
                    digits.parse::<u64>().ok()
                } else {
                    None
                };
                for tail in [
                    "",
                    ",",
                    "\n",
                    "\r\n",
                    ",1,2,3,4,5,6,7,8,9",
                    "\n12345678901",
                    "x",
                    " ",
                ] {
                    let line = format!("{digits}{tail}");
                    let mut i = 0;
                    let got = fast_uint(line.as_bytes(), &mut i);
                    let ok_tail = tail.is_empty() || tail.starts_with([',', '\n', '\r']);
                    let expect = if ok_tail { want } else { None };
                    assert_eq!(got, expect, "{line:?}");
                    if got.is_some() {
                        assert_eq!(i, len, "{line:?}");
                    }
                    // Not at the start of the slice.
                    let line2 = format!("R,{line}");
                    let mut i = 2;
                    assert_eq!(fast_uint(line2.as_bytes(), &mut i), expect, "{line2:?}");
                }
            }
        }
        let mut i = 0;
        assert_eq!(fast_uint(b"", &mut i), None);
        assert_eq!(fast_uint(b",5", &mut i), None);
        let mut i = 0;
        assert_eq!(fast_uint(b"\xff\xfa12345678", &mut i), None);
        let mut i = 0;
        assert_eq!(fast_uint(b"12\xfa45678,", &mut i), None);
    }

    #[test]
    fn fast_paths_take_the_common_lines() {
        assert!(fc(b"362968,R,3568545792,32768").is_some());
        assert!(fm(b"128166372003061629,hm,0,Read,3154464768,4096,4999").is_some());
        // Zero size and overflow are left to the full parser's errors.
        assert!(fc(b"1,W,0,0").is_none());
        assert!(fc(b"1,W,18446744073709551615,1").is_none());
        assert!(fc(b"1,W,0,68719476737").is_none());
        assert!(fc(b"1,W,281474976710656,1").is_none());
        // A field more than the format has, even empty, is left to the full parser's error.
        assert!(fc(b"1,W,0,512,").is_none());
        assert!(fc(b"1,W,0,512,7").is_none());
        assert!(fm(b"128166372003061629,hm,0,Read,3154464768,4096").is_some());
        assert!(fm(b"128166372003061629,hm,0,Read,3154464768,4096,").is_none());
        assert!(fm(b"128166372003061629,hm,0,Read,3154464768,4096,4999,1").is_none());
    }

    #[test]
    fn extra_fields_are_errors_naming_the_text() {
        let e = |f, l: &str| match parse_line_full(f, l.as_bytes(), BlkparseEvent::Issue, false) {
            Err(e) => format!("{}: {}", e.field, e.msg),
            Ok(_) => panic!("{f}: {l:?} accepted"),
        };
        let m = e(TraceFormat::Canonical, "1,W,0,512,");
        assert!(m.starts_with(END_FIELD) && m.contains("\",\""), "{m}");
        let m = e(
            TraceFormat::Msr,
            "128166385295514878,hm,0,Write,11855351808,512,2617,128166385295515175,hm",
        );
        assert!(m.contains("\",128166385295515175,hm\""), "{m}");
        let m = e(TraceFormat::Mqsim, "0 0 303567 7 0 26214000 0 303574 7 0");
        assert!(m.contains("\"26214000 0 303574 7 0\""), "{m}");
        let m = e(
            TraceFormat::Msr,
            "128166385295514878,hm,0,Write,11855351808,512,26x",
        );
        assert!(m.starts_with("ResponseTime"), "{m}");
        let m = e(
            TraceFormat::Systor,
            "1456095145.133076000,,R,0,899056122368,131072",
        );
        assert!(m.starts_with("Response"), "{m}");
    }

    #[test]
    fn headers_are_the_formats_column_names() {
        use TraceFormat::*;
        let yes: [(TraceFormat, &str); 9] = [
            (
                Msr,
                "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime",
            ),
            (
                Msr,
                "timestamp,hostname,disk_number,type,offset(bytes),size(bytes)",
            ),
            (Spc, "ASU,LBA,Size,Opcode,Timestamp"),
            (Canonical, "time_ns,op,offset_bytes,size_bytes"),
            (Systor, "Timestamp,Response,IOType,LUN,Offset,Size"),
            (Tencent, "Timestamp,Offset,Size,IOType,VolumeID"),
            (Vscsi, "version,time,op,size,lbn"),
            (Disksim, "time_ms device lba_sectors size_sectors flags"),
            (Mqsim, "time_ns device lba size op"),
        ];
        for (f, l) in yes {
            assert!(is_header(f, l.as_bytes()), "{f}: {l:?}");
        }
        let no: [(TraceFormat, &str); 7] = [
            // damaged first records
            (Msr, "1281663852955x4663,hm,0,Write,9056014336,2048,2833"),
            (Spc, "O,303567,3584,w,0.000000"),
            (Tencent, "l538323200,4247200,128,1,1058"),
            (Mqsim, "O 0 303567 7 0"),
            (Disksim, "x7961.833 0 20228336 8 0"),
            // a header with a column more, or of another format
            (Canonical, "time_ns,op,offset_bytes,size_bytes,x"),
            (Msr, "ASU,LBA,Size,Opcode,Timestamp"),
        ];
        for (f, l) in no {
            assert!(!is_header(f, l.as_bytes()), "{f}: {l:?}");
        }
        assert!(!is_header(Blkparse, b"maj,min cpu seq time pid action"));
    }

    #[test]
    fn blkparse_lines() {
        let p = |l: &str| parse_blkparse(l.as_bytes(), BlkparseEvent::Issue, false);
        let ok = "  8,0    3        4     0.000002000   697  D   W 223490 + 8 [kjournald]";
        assert!(matches!(p(ok), Ok(Rec::Req(r)) if r.len == 4096));
        let elapsed = "  8,0    3        4     0.000002000   697  D   W 223490 + 8 (     123) [k]";
        assert!(matches!(p(elapsed), Ok(Rec::Req(_))));
        assert!(matches!(
            p("  8,0  3  1  0.1  697  Q   W 1 + 8 [k]"),
            Ok(Rec::NonRequest(Some(9)))
        ));
        assert!(matches!(
            p("  8,0  3  1  0.1  697  UT   N [k] 1"),
            Ok(Rec::NonRequest(Some(13)))
        ));
        assert!(matches!(p("CPU3 (8,0):"), Ok(Rec::Text)));
        for (bad, field) in [
            ("  8,0    3        4     0.000002000   697  D   X 223490 + 8 [k]", "RWBS"),
            ("  8,0    3        4   697  D   W 223490 + 8 [k]", "pid"),
            ("  8,0    3        4     0.000002000   697  Dx  W 223490 + 8 [k]", "action"),
            ("  8,0    3        4     0.000002000   697  D   W 223490 + 8 9 [k]", "process"),
            (
                "  8,0    3        4     0.000002000   697  C   W 223490 + 8 [0]  8,0    3                   5     0.000020000   700  D   R 1000 + 16 [cat]",
                END_FIELD,
            ),
            (
                "  8,0    3        4     0.000002000   697  D   W 223490 + 8 [kjournald]8,0                  3 5     0.000020000   700  D   R 1000 + 16 [cat]",
                "process",
            ),
        ] {
            match p(bad) {
                Err(e) => assert_eq!(e.field, field, "{bad:?}: {}", e.msg),
                Ok(_) => panic!("{bad:?} accepted"),
            }
        }
        // The file's last line cut in the process name: the request is whole.
        let cut = "  8,0    3        4     0.000002000   697  D   W 223490 + 8 [kjour";
        assert!(p(cut).is_err());
        assert!(matches!(
            parse_blkparse(cut.as_bytes(), BlkparseEvent::Issue, true),
            Ok(Rec::Req(_))
        ));
        assert!(blk_text_starts_summary(b"Total (8,0):"));
        assert!(blk_text_starts_summary(b"kjournald (697)"));
        assert!(!blk_text_starts_summary(b"x8,0 3 4 0.1 697 D W 1 + 8 [k]"));
        assert!(blk_text_is_input(b"Input file sda.blktrace.0 added"));
    }

    #[test]
    fn a_record_glued_to_a_comment_is_found() {
        let f = |fmt, l: &str| record_in_comment(fmt, l.as_bytes(), BlkparseEvent::Issue);
        assert_eq!(
            f(TraceFormat::Canonical, "# a comment line0,R,0,4096"),
            Some(16)
        );
        assert_eq!(f(TraceFormat::Canonical, "# 3 requests, 2 reads"), None);
        assert_eq!(
            f(
                TraceFormat::Msr,
                "# hm_0 excerpt128166385295514663,hm,0,Write,9056014336,2048,2833"
            ),
            Some(14)
        );
    }

    #[test]
    fn decimals() {
        assert_eq!(decimal(b"0.026214", 9).unwrap(), 26_214_000);
        assert_eq!(decimal(b"7961.833", 6).unwrap(), 7_961_833_000);
        assert_eq!(decimal(b"1.5", 0).unwrap(), 1);
        assert_eq!(decimal(b".5", 3).unwrap(), 500);
        assert!(matches!(decimal(b"-1.5", 3), Err(NumErr::Negative)));
        assert!(matches!(decimal(b"1e5", 3), Err(NumErr::Invalid)));
        assert!(matches!(decimal(b".", 3), Err(NumErr::Invalid)));
    }

    #[test]
    fn ints() {
        assert_eq!(num_u64(b"123").unwrap(), 123);
        assert_eq!(num_u64(b" 123 ").unwrap(), 123);
        assert!(matches!(num_u64(b"-5"), Err(NumErr::Negative)));
        assert!(matches!(num_u64(b"x5"), Err(NumErr::Invalid)));
        assert!(matches!(num_u64(b""), Err(NumErr::Empty)));
        assert!(matches!(
            num_u64(b"99999999999999999999999"),
            Err(NumErr::Overflow)
        ));
        assert_eq!(num_u64(b"18446744073709551615").unwrap(), u64::MAX);
    }
}
