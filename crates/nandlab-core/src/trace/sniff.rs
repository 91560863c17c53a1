//! Guessing a trace's format from its first lines (rules in the module doc).

use std::path::Path;

use super::input::LineReader;
use super::parse::{is_blk_dev, is_header};
use super::{TraceError, TraceFormat};

/// Lines looked at (non-blank, non-comment).
const SNIFF_LINES: usize = 32;
/// Physical lines read at most while looking for them.
const SNIFF_MAX_PHYSICAL: u64 = 10_000;

/// Guess the format of the trace at `path` from its first non-blank, non-comment lines
/// (decompressing if needed). Errors: [`TraceError::Io`], [`TraceError::NoRequests`] for a
/// file without data lines, [`TraceError::UnknownFormat`] quoting the first line.
pub fn sniff_format(path: &Path) -> Result<TraceFormat, TraceError> {
    let mut lr = LineReader::open(path)?;
    let mut lines: Vec<String> = Vec::new();
    while lines.len() < SNIFF_LINES && lr.lines < SNIFF_MAX_PHYSICAL {
        let Some((s, e)) = lr.next_line(path)? else {
            break;
        };
        let raw = &lr.buf[s..e];
        let t = raw.trim_ascii();
        if t.is_empty() || t[0] == b'#' {
            continue;
        }
        lines.push(String::from_utf8_lossy(t).into_owned());
    }
    if lines.is_empty() {
        return Err(TraceError::NoRequests {
            file: path.to_path_buf(),
            detail: format!(
                "the file has {} lines, none of them data (empty, blank or comments only)",
                lr.lines
            ),
        });
    }
    sniff_lines(&lines).ok_or_else(|| TraceError::UnknownFormat {
        file: path.to_path_buf(),
        first_line: quote_first_line(&lines[0]),
        known: TraceFormat::known_list(),
    })
}

/// At most this many characters of an unrecognised first line are quoted in the error.
pub const QUOTE_CHARS: usize = 40;

/// The first line for an error message: escaped (`\0`, `\u{7f}`), cut to [`QUOTE_CHARS`]
/// characters of output with `…`, and marked when it looks binary (a NUL or many control
/// characters), so that a wrong file gives one short line, not a screen of bytes.
fn quote_first_line(line: &str) -> String {
    let mut out = String::new();
    let mut cut = false;
    for c in line.chars() {
        let esc: String = c.escape_debug().collect();
        if out.chars().count() + esc.chars().count() > QUOTE_CHARS {
            cut = true;
            break;
        }
        out.push_str(&esc);
    }
    let controls = line
        .chars()
        .filter(|c| c.is_control() && *c != '\t')
        .count();
    let binary = line.contains('\0') || controls * 10 > line.chars().count().max(1);
    format!(
        "\"{out}{}\"{}",
        if cut { "…" } else { "" },
        if binary {
            " (binary data: not a text trace)"
        } else {
            ""
        }
    )
}

fn is_int(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit())
}

fn is_dec(s: &str) -> bool {
    let mut dot = false;
    let mut digit = false;
    for c in s.bytes() {
        match c {
            b'0'..=b'9' => digit = true,
            b'.' if !dot => dot = true,
            _ => return false,
        }
    }
    digit
}

/// Classify already-trimmed, non-blank, non-comment lines.
pub(crate) fn sniff_lines(lines: &[String]) -> Option<TraceFormat> {
    let first = lines.first()?;
    if let Some(f) = TraceFormat::ALL
        .into_iter()
        .find(|&f| is_header(f, first.as_bytes()))
    {
        return Some(f);
    }
    let lower = first.to_ascii_lowercase();
    let headers: [(&str, TraceFormat); 5] = [
        ("timestamp,hostname", TraceFormat::Msr),
        ("timestamp,response,iotype", TraceFormat::Systor),
        ("version,time", TraceFormat::Vscsi),
        ("time_ns,op", TraceFormat::Canonical),
        ("asu,", TraceFormat::Spc),
    ];
    for (h, f) in headers {
        if lower.replace(' ', "").starts_with(h) {
            return Some(f);
        }
    }
    // A header we don't know: skip it, classify the data lines.
    let data = if first
        .bytes()
        .next()
        .is_some_and(|c| !(c.is_ascii_digit() || c == b'-' || c == b'+' || c == b'.'))
        && !is_blk_dev(first.split_whitespace().next().unwrap_or("").as_bytes())
    {
        &lines[1..]
    } else {
        lines
    };
    let d = data.first()?;
    if d.contains(',') && !is_blk_dev(d.split_whitespace().next().unwrap_or("").as_bytes()) {
        let f: Vec<&str> = d.split(',').map(str::trim).collect();
        let n = f.len();
        let rw = |s: &str| {
            s.eq_ignore_ascii_case("r")
                || s.eq_ignore_ascii_case("w")
                || s.eq_ignore_ascii_case("read")
                || s.eq_ignore_ascii_case("write")
        };
        // MSR: 7 columns, or 6 without the optional ResponseTime.
        if n >= 6
            && (f[3].eq_ignore_ascii_case("read") || f[3].eq_ignore_ascii_case("write"))
            && is_int(f[0])
        {
            return Some(TraceFormat::Msr);
        }
        if n == 6 && is_dec(f[0]) && (f[2] == "R" || f[2] == "W" || f[2] == "r" || f[2] == "w") {
            return Some(TraceFormat::Systor);
        }
        if n == 5 && is_int(f[0]) && is_int(f[1]) && f[3].len() == 1 && rw(f[3]) {
            return Some(TraceFormat::Spc);
        }
        if n == 5 && f.iter().all(|s| is_int(s)) && (f[3] == "0" || f[3] == "1") {
            return Some(TraceFormat::Tencent);
        }
        if n == 5
            && is_int(f[0])
            && is_int(f[1])
            && (1..=2).contains(&f[2].len())
            && f[2].bytes().all(|c| c.is_ascii_hexdigit())
            && is_int(f[3])
            && is_int(f[4])
        {
            return Some(TraceFormat::Vscsi);
        }
        if n == 4 && is_int(f[0]) && rw(f[1]) {
            return Some(TraceFormat::Canonical);
        }
        return None;
    }
    let toks: Vec<&str> = d.split_whitespace().collect();
    if toks.len() >= 6 && is_blk_dev(toks[0].as_bytes()) {
        return Some(TraceFormat::Blkparse);
    }
    if toks.len() == 5 && is_dec(toks[0]) && toks[1..].iter().all(|s| is_int(s)) {
        // DiskSim times are decimal milliseconds; MQSim/SSDsim times integer nanoseconds with
        // ops 0/1. Integer times with another op value are neither for certain: say so
        // instead of reading nanoseconds as milliseconds.
        let mut any_dot = false;
        let mut ops_01 = true;
        for l in data {
            let t: Vec<&str> = l.split_whitespace().collect();
            if t.len() != 5 {
                continue;
            }
            any_dot |= t[0].contains('.');
            ops_01 &= t[4] == "0" || t[4] == "1";
        }
        return match (any_dot, ops_01) {
            (true, _) => Some(TraceFormat::Disksim),
            (false, true) => Some(TraceFormat::Mqsim),
            (false, false) => None,
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn an_unknown_first_line_is_quoted_short_and_binary_is_said() {
        let elf: String = "\u{7f}ELF\u{2}\u{1}\u{1}"
            .chars()
            .chain(std::iter::repeat_n('\0', 500))
            .collect();
        let q = quote_first_line(&elf);
        let inner = q.split('"').nth(1).unwrap();
        assert!(inner.chars().count() <= QUOTE_CHARS + 1, "{q}");
        assert!(inner.ends_with('…') && q.contains("binary data"), "{q}");
        let text = quote_first_line("hello world");
        assert_eq!(text, "\"hello world\"");
    }

    #[test]
    fn rules() {
        use TraceFormat::*;
        let cases: [(&[&str], Option<TraceFormat>); 14] = [
            (
                &["128166385295514663,hm,0,Write,9056014336,2048,2833"],
                Some(Msr),
            ),
            (
                &["Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"],
                Some(Msr),
            ),
            (&["0,303567,3584,w,0.000000"], Some(Spc)),
            (&["7961.833 0 20228336 8 0"], Some(Disksim)),
            (&["0 0 303567 7 0", "26214000 0 303574 7 1"], Some(Mqsim)),
            // Integer times (MQSim's ns) with an op that is not 0/1: not certain, say so.
            (&["0 0 303567 7 0", "2 0 303574 7 4"], None),
            (&["0.5 0 303567 7 0", "2.25 0 303574 7 4"], Some(Disksim)),
            // MSR without the optional ResponseTime column.
            (
                &["128166385295514663,hm,0,Write,9056014336,2048"],
                Some(Msr),
            ),
            (
                &["  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]"],
                Some(Blkparse),
            ),
            (&["time_ns,op,offset_bytes,size_bytes"], Some(Canonical)),
            (
                &["1456095145.133076000,0.000806000,R,0,899056122368,131072"],
                Some(Systor),
            ),
            (&["1538323200,4247200,128,1,1058"], Some(Tencent)),
            (&["1,5633898368802,2a,512,42932745"], Some(Vscsi)),
            (&["hello world"], None),
        ];
        for (lines, want) in cases {
            assert_eq!(sniff_lines(&s(lines)), want, "{lines:?}");
        }
    }
}
