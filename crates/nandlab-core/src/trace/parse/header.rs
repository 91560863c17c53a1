//! Header lines: the accepted column names of each format's header (the columns of the
//! [`crate::trace`] module documentation's table, as the public traces spell them).

use super::fields::Fields;
use crate::trace::TraceFormat;

// ----- headers -----------------------------------------------------------------------------

/// Accepted names of each column of a format's header line, compared after
/// [`header_name`]'s normalisation; a header has one of the format's field counts.
pub(super) fn header_columns(format: TraceFormat) -> &'static [&'static [&'static str]] {
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
pub(super) fn header_name(v: &[u8]) -> String {
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
