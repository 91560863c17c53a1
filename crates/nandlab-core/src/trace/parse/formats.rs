//! The full parser of each delimited format but blkparse (MSR Cambridge, UMass SPC, DiskSim,
//! MQSim, canonical, SNIA SYSTOR'17, SNIA Tencent CBS, CloudPhysics vSCSI; columns, units and
//! op codes as in the [`crate::trace`] module documentation's table): the values, or the error
//! naming field and value.

use super::fields::*;
use super::record::*;
use crate::trace::Op;

// ----- parsers -----------------------------------------------------------------------------

#[inline]
pub(super) fn parse_msr(line: &[u8]) -> Result<Rec, FieldError> {
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

pub(super) fn parse_spc(line: &[u8]) -> Result<Rec, FieldError> {
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
pub(super) fn parse_ws5(line: &[u8], disksim: bool) -> Result<Rec, FieldError> {
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

pub(super) fn parse_disksim(line: &[u8]) -> Result<Rec, FieldError> {
    parse_ws5(line, true)
}

pub(super) fn parse_mqsim(line: &[u8]) -> Result<Rec, FieldError> {
    parse_ws5(line, false)
}

pub(super) fn parse_canonical(line: &[u8]) -> Result<Rec, FieldError> {
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

pub(super) fn parse_systor(line: &[u8]) -> Result<Rec, FieldError> {
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

pub(super) fn parse_tencent(line: &[u8]) -> Result<Rec, FieldError> {
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

pub(super) fn parse_vscsi(line: &[u8]) -> Result<Rec, FieldError> {
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
