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
    /// Not a request (other blkparse actions, summary lines, other SCSI opcodes).
    NonRequest,
}

/// A field-level error; the reader adds file and line.
#[derive(Debug)]
pub(crate) struct FieldError {
    pub field: &'static str,
    pub msg: String,
}

fn show(v: &[u8]) -> String {
    let s = String::from_utf8_lossy(v);
    if s.chars().count() > 64 {
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
// signs, more than 19 digits, an op word in another spelling, a zero size, an overflow — falls
// back to the full parser, which gives the same value or the precise error; the fast path
// accepts only lines the full parser reads the same way.

/// Digits from `*i` up to a `,` (consumed) or the end of `b`: 1 to 19 digits, nothing else.
#[inline(always)]
fn fast_uint(b: &[u8], i: &mut usize) -> Option<u64> {
    let start = *i;
    let mut acc: u64 = 0;
    while *i < b.len() {
        let c = b[*i];
        let d = c.wrapping_sub(b'0');
        if d <= 9 {
            if *i - start == 19 {
                return None; // 20 digits or more: the full parser checks for overflow
            }
            acc = acc * 10 + d as u64;
            *i += 1;
        } else if c == b',' {
            break;
        } else {
            return None;
        }
    }
    if *i == start {
        return None;
    }
    if *i < b.len() {
        *i += 1; // the comma
    }
    Some(acc)
}

/// Skip a field up to and past its `,`.
#[inline(always)]
fn fast_skip(b: &[u8], i: &mut usize) -> Option<()> {
    let k = b.get(*i..)?.iter().position(|&c| c == b',')?;
    *i += k + 1;
    Some(())
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

/// Canonical `time_ns,op,offset_bytes,size_bytes`.
#[inline]
fn fast_canonical(b: &[u8]) -> Option<Rec> {
    let mut i = 0;
    let time_ns = fast_uint(b, &mut i)?;
    let op = fast_rw1(b, &mut i)?;
    let offset = fast_uint(b, &mut i)?;
    let len = fast_uint(b, &mut i)?;
    fast_request(time_ns, op, offset, len, 0)
}

/// MSR Cambridge `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
#[inline]
fn fast_msr(b: &[u8]) -> Option<Rec> {
    let mut i = 0;
    let time_ns = fast_uint(b, &mut i)?.checked_mul(100)?;
    fast_skip(b, &mut i)?;
    let device = u32::try_from(fast_uint(b, &mut i)?).ok()?;
    let op = fast_rw_word(b, &mut i)?;
    let offset = fast_uint(b, &mut i)?;
    let len = fast_uint(b, &mut i)?;
    fast_request(time_ns, op, offset, len, device)
}

/// Parse one data line (not blank, not comment, not header) of `format`. Always inlined into
/// the per-line loops (a call per line costs ~3 % of a parse; with a second caller, the
/// file-level reader, the inliner stopped inlining it).
#[inline(always)]
pub(crate) fn parse_line(
    format: TraceFormat,
    line: &[u8],
    blk_event: BlkparseEvent,
) -> Result<Rec, FieldError> {
    let fast = match format {
        TraceFormat::Canonical => fast_canonical(line),
        TraceFormat::Msr => fast_msr(line),
        _ => None,
    };
    if let Some(r) = fast {
        return Ok(r);
    }
    parse_line_full(format, line, blk_event)
}

/// The full parser of every format: values, or the error naming field and value.
#[cold]
fn parse_line_full(
    format: TraceFormat,
    line: &[u8],
    blk_event: BlkparseEvent,
) -> Result<Rec, FieldError> {
    match format {
        TraceFormat::Msr => parse_msr(line),
        TraceFormat::Spc => parse_spc(line),
        TraceFormat::Disksim => parse_disksim(line),
        TraceFormat::Mqsim => parse_mqsim(line),
        TraceFormat::Blkparse => parse_blkparse(line, blk_event),
        TraceFormat::Canonical => parse_canonical(line),
        TraceFormat::Systor => parse_systor(line),
        TraceFormat::Tencent => parse_tencent(line),
        TraceFormat::Vscsi => parse_vscsi(line),
    }
}

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

fn parse_blkparse(line: &[u8], ev: BlkparseEvent) -> Result<Rec, FieldError> {
    let c = BLK_COLS;
    let mut f = Fields::ws(line);
    let dev = match f.next_field() {
        Some(d) if is_blk_dev(d) => d,
        // Summary section ("CPU0 (8,0):", "Total (8,0):", " Reads Queued: ...") and other
        // non-event lines.
        _ => return Ok(Rec::NonRequest),
    };
    let _ = dev;
    f.get("cpu", c)?;
    f.get("seq", c)?;
    let t = f.get("time", c)?;
    let time_ns = dec_field(t, 9, "time", "non-negative seconds (e.g. 0.000000000)")?;
    f.get("pid", c)?;
    let action = f.get("action", c)?;
    let want: &[u8] = match ev {
        BlkparseEvent::Issue => b"D",
        BlkparseEvent::Queue => b"Q",
    };
    if action != want {
        return Ok(Rec::NonRequest);
    }
    let rwbs = f.get("RWBS", c)?;
    let op = if rwbs.contains(&b'D') {
        Op::Trim // discard: skipped by the reader unless discards are asked for
    } else if rwbs.contains(&b'R') {
        Op::Read
    } else if rwbs.contains(&b'W') {
        Op::Write
    } else {
        return Ok(Rec::NonRequest);
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
    request(time_ns, op, offset, len, 0, o, "offset_bytes")
}

fn parse_systor(line: &[u8]) -> Result<Rec, FieldError> {
    let c = SYSTOR_COLS;
    let mut f = Fields::csv(line);
    let t = f.get("Timestamp", c)?;
    let time_ns = dec_field(t, 9, "Timestamp", "non-negative epoch seconds")?;
    f.get("Response", c)?;
    let op = rw_word(f.get("IOType", c)?, "IOType", "`R` or `W`")?;
    let device = dev_field(f.get("LUN", c)?, "LUN")?;
    let o = f.get("Offset", c)?;
    let offset = int_field(o, "Offset", "a non-negative integer (bytes)")?;
    let len = size_field(f.get("Size", c)?, 1, "Size", "a positive integer (bytes)")?;
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
    let Some(op) = op else {
        return Ok(Rec::NonRequest);
    };
    if size == 0 {
        return Ok(Rec::ZeroSize);
    }
    let offset = scaled(lbn, SECTOR, l, "lbn", "an LBN below 2^55")?;
    request(time_ns, op, offset, size, 0, l, "lbn")
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
                    TraceFormat::Canonical => fast_canonical(b),
                    _ => fast_msr(b),
                };
                if let Some(f) = fast {
                    let full = parse_line_full(fmt, b, BlkparseEvent::default());
                    proptest::prop_assert!(
                        full.as_ref().is_ok_and(|r| same(r, &f)),
                        "{fmt}: {line:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn fast_paths_take_the_common_lines() {
        assert!(fast_canonical(b"362968,R,3568545792,32768").is_some());
        assert!(fast_msr(b"128166372003061629,hm,0,Read,3154464768,4096,4999").is_some());
        // Zero size and overflow are left to the full parser's errors.
        assert!(fast_canonical(b"1,W,0,0").is_none());
        assert!(fast_canonical(b"1,W,18446744073709551615,1").is_none());
        assert!(fast_canonical(b"1,W,0,68719476737").is_none());
        assert!(fast_canonical(b"1,W,281474976710656,1").is_none());
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
