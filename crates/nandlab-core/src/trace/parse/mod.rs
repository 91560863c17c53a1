//! Per-format line parsers: bytes in, one record out, no allocation unless there is an error.
//!
//! By subject: `fields.rs` (the field cursor, number conversion, request checks and field
//! errors), `fast.rs` (one-pass parsers of the common MSR and canonical line shapes),
//! `formats.rs` (the full parser of each delimited format), `blkparse.rs` (blkparse's text
//! output, after `blkparse.c` of blktrace 1.3), `header.rs` (header lines) and `record.rs`
//! (the record types and column names they all use). This file holds the dispatch per format,
//! and the checks of a file's last line and of records glued onto comments. The formats'
//! columns, units and op codes are tabled in the [`crate::trace`] module documentation.

mod blkparse;
mod fast;
mod fields;
mod formats;
mod header;
mod record;
#[cfg(test)]
mod tests;

use super::{BlkparseEvent, TraceFormat};
use blkparse::parse_blkparse;
use fields::show;
use formats::*;
use record::*;

pub(crate) use blkparse::{blk_text_is_input, blk_text_starts_summary, is_blk_dev};
pub(crate) use fast::{fast_canonical, fast_msr, has_fast_path};
pub(crate) use fields::END_FIELD;
pub(crate) use header::is_header;
pub use record::BLK_ACTIONS;
pub(crate) use record::{FieldError, Raw, Rec, BLK_TEXT};

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
