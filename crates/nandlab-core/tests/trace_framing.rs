//! Record framing (issue 28): a trace is read exactly as written or refused with a one-line
//! error naming the file and the line; no request is lost or changed. One test per class of
//! damage the issue found, each over every format it applies to, built from real sample lines:
//!
//! 1. two records on one line (a lost line break) — an error naming the extra text; a lone
//!    `\r` between them is a line end, so both are read;
//! 2. mixed line endings (LF in the first 4 KiB, CR-only or CRLF further on, and the reverse) —
//!    every request read as in the LF file;
//! 3. a file cut inside its last line — an error when the last field may be a cut number,
//!    unless `allow_unterminated` (then read as written and counted);
//! 4. a damaged first data line — an error, never skipped as a header (a header is skipped
//!    only when it names the format's columns);
//! 5. damaged blkparse events — an error naming the line; only the known non-request actions
//!    are skipped, counted per action.
//!
//! Every test here fails on the readers before issue 28 (main at 2d181f4): they read 2 of 3
//! requests, 119 of 200, a 16-byte write for a 16384-byte one, or skipped the line.
//!
//! The sample lines are the first lines of the shared traces (`shared/traces/SOURCES.md`):
//! MSR hm_0, UMass Financial1 (SPC and SSDsim ascii), the DiskSim PostMark trace, SNIA
//! SYSTOR'17 and Tencent CBS, CloudPhysics vSCSI, and the repo's blkparse and canonical
//! fixtures.

use std::path::{Path, PathBuf};

use nandlab_core::trace::{
    FsJsonlReader, HostRequest, ReaderCounters, TraceFormat, TraceOptions, TraceReader,
};

const MSR: [&str; 3] = [
    "128166385295514663,hm,0,Write,9056014336,2048,2833",
    "128166385295514878,hm,0,Write,11855351808,512,2617",
    "128166385295515175,hm,0,Write,5548077056,4096,2320",
];
const SPC: [&str; 3] = [
    "0,303567,3584,w,0.000000",
    "1,55590,3072,w,0.000000",
    "0,303574,3584,w,0.026214",
];
const CANONICAL: [&str; 3] = [
    "0,R,16903168000,8192",
    "362968,R,3568545792,32768",
    "1000000,W,8192,16384",
];
const DISKSIM: [&str; 3] = [
    "7961.833 0 20228336 8 0",
    "8346.206 0 6397360 496 0",
    "8348.644 0 6397856 472 0",
];
const MQSIM: [&str; 3] = ["0 0 303567 7 0", "0 1 55590 6 0", "26214000 0 303574 7 0"];
const SYSTOR: [&str; 3] = [
    "1456095145.133076000,0.000806000,R,0,899056122368,131072",
    "1456095145.126285000,0.008044000,R,0,4256049987072,122880",
    "1456095145.127398000,0.007571000,R,0,3772288305664,58368",
];
const TENCENT: [&str; 3] = [
    "1538323200,4247200,128,1,1058",
    "1538323199,13896880,128,0,1063",
    "1538323199,49413280,16,0,1063",
];
const VSCSI: [&str; 3] = [
    "1,5633898368802,2a,512,42932745",
    "1,5633898611441,2a,512,42932746",
    "1,5633898745540,2a,512,42932747",
];
const BLKPARSE: [&str; 3] = [
    "  8,0    3        4     0.000002000   697  D   W 223490 + 8 [kjournald]",
    "  8,0    3        6     0.000025000   700  D   R 1000 + 16 [cat]",
    "  8,0    3       12     0.000060000   700  D  RA 7000 + 32 [cat]",
];

/// Every line-based format with its sample lines and the header line of its published files
/// (`None`: they have none).
fn formats() -> Vec<(TraceFormat, [&'static str; 3], Option<&'static str>)> {
    use TraceFormat::*;
    vec![
        (Msr, MSR, None),
        (Spc, SPC, None),
        (
            Canonical,
            CANONICAL,
            Some("time_ns,op,offset_bytes,size_bytes"),
        ),
        (Disksim, DISKSIM, None),
        (Mqsim, MQSIM, None),
        (
            Systor,
            SYSTOR,
            Some("Timestamp,Response,IOType,LUN,Offset,Size"),
        ),
        (Tencent, TENCENT, None),
        (Vscsi, VSCSI, Some("version,time,op,size,lbn")),
        (Blkparse, BLKPARSE, None),
    ]
}

fn is_csv(f: TraceFormat) -> bool {
    !matches!(
        f,
        TraceFormat::Disksim | TraceFormat::Mqsim | TraceFormat::Blkparse
    )
}

struct Dir(tempfile::TempDir);

impl Dir {
    fn new() -> Dir {
        Dir(tempfile::tempdir().unwrap())
    }
    fn file(&self, name: &str, content: &[u8]) -> PathBuf {
        let p = self.0.path().join(name);
        std::fs::write(&p, content).unwrap();
        p
    }
}

type Read = Result<(Vec<HostRequest>, ReaderCounters), String>;

fn read_opts(path: &Path, opts: &TraceOptions) -> Read {
    let mut rd = TraceReader::open(path, opts).map_err(|e| e.to_string())?;
    let mut v = Vec::new();
    while let Some(r) = rd.next_request().map_err(|e| e.to_string())? {
        v.push(r);
    }
    Ok((v, rd.counters().clone()))
}

fn read(path: &Path, format: TraceFormat) -> Read {
    read_opts(
        path,
        &TraceOptions {
            format: Some(format),
            ..TraceOptions::default()
        },
    )
}

/// The file's text: an optional header, then `lines`, each ended by `\n`.
fn text(header: Option<&str>, lines: &[&str]) -> String {
    let mut s = String::new();
    for l in header.iter().chain(lines) {
        s.push_str(l);
        s.push('\n');
    }
    s
}

/// `err` is a one-line error naming `file` and `line`.
fn assert_error(err: &str, file: &Path, line: u64, ctx: &str) {
    let name = file.file_name().unwrap().to_string_lossy();
    assert!(!err.contains('\n'), "{ctx}: not one line: {err}");
    assert!(err.contains(&*name), "{ctx}: no file name: {err}");
    assert!(
        err.contains(&format!("line {line}:")),
        "{ctx}: not line {line}: {err}"
    );
}

fn expect_error(r: Read, file: &Path, line: u64, ctx: &str) -> String {
    match r {
        Ok((v, _)) => panic!("{ctx}: accepted with {} requests", v.len()),
        Err(e) => {
            assert_error(&e, file, line, ctx);
            e
        }
    }
}

// ----- 1. two records on one line ----------------------------------------------------------

#[test]
fn two_records_on_one_line_are_an_error_never_a_lost_request() {
    let dir = Dir::new();
    for (f, l, header) in formats() {
        let h = u64::from(header.is_some());
        // The second and third records glued: the line break between them lost.
        let glued = format!("{}{}", l[1], l[2]);
        let p = dir.file(
            &format!("glued.{f}"),
            text(header, &[l[0], &glued]).as_bytes(),
        );
        let e = expect_error(read(&p, f), &p, 2 + h, &format!("{f} glued"));
        eprintln!("{f}: {e}");
        // Glued with a separator of the format (a line break turned into one).
        let sep = if is_csv(f) { "," } else { " " };
        let glued = format!("{}{sep}{}", l[1], l[2].trim_start());
        let p = dir.file(
            &format!("glued_sep.{f}"),
            text(header, &[l[0], &glued]).as_bytes(),
        );
        let e = expect_error(read(&p, f), &p, 2 + h, &format!("{f} glued with {sep:?}"));
        assert!(
            e.contains("end of record") || e.contains("`process`"),
            "{f}: {e}"
        );
        // The issue's case: a lone `\r` between them in an LF file is a line end.
        let lf = text(header, &l);
        let cr = lf.replacen(&format!("{}\n", l[1]), &format!("{}\r", l[1]), 1);
        let want = read(&dir.file(&format!("lf.{f}"), lf.as_bytes()), f).unwrap();
        let got = read(&dir.file(&format!("cr.{f}"), cr.as_bytes()), f)
            .unwrap_or_else(|e| panic!("{f}: {e}"));
        assert_eq!(got.0, want.0, "{f}");
        assert_eq!(got.0.len(), 3, "{f}");
    }
}

#[test]
fn a_record_glued_to_a_comment_is_an_error() {
    let dir = Dir::new();
    for (f, l, header) in formats() {
        let glued = format!("# a comment{}", l[1].trim_start());
        let p = dir.file(
            &format!("comment.{f}"),
            text(header, &[l[0], &glued, l[2]]).as_bytes(),
        );
        let h = u64::from(header.is_some());
        let e = expect_error(read(&p, f), &p, 2 + h, &format!("{f} comment"));
        assert!(e.contains("comment line ends in a request"), "{f}: {e}");
    }
    // A comment that only mentions numbers stays a comment.
    let p = dir.file(
        "fine.csv",
        b"# 3 requests, 2 reads, first at 0 ns\n0,R,0,4096\n",
    );
    let (v, c) = read(&p, TraceFormat::Canonical).unwrap();
    assert_eq!((v.len(), c.comment_lines_skipped), (1, 1));
}

#[test]
fn the_msr_case_of_the_issue() {
    // `…,Write,11855351808,512,2617\r128166385295515175,hm,0,Write,5548077056,4096,2320` in an
    // LF file: was 2 requests of 3.
    let dir = Dir::new();
    let s = format!("{}\n{}\r{}\n", MSR[0], MSR[1], MSR[2]);
    let (v, _) = read(&dir.file("issue.csv", s.as_bytes()), TraceFormat::Msr).unwrap();
    assert_eq!(v.len(), 3);
    assert_eq!(v[2].offset_bytes, 5548077056);
    assert_eq!(v[2].len_bytes, 4096);
    // Without the `\r`, the ResponseTime column runs into the next record: an error.
    let s = format!("{}\n{}{}\n", MSR[0], MSR[1], MSR[2]);
    let p = dir.file("glued.csv", s.as_bytes());
    let e = expect_error(read(&p, TraceFormat::Msr), &p, 2, "msr glued");
    assert!(e.contains("`ResponseTime`"), "{e}");
}

// ----- 2. mixed line endings ---------------------------------------------------------------

/// `n` lines cycling through `l`.
fn many<'a>(l: &[&'a str], n: usize) -> Vec<&'a str> {
    l.iter().copied().cycle().take(n).collect()
}

#[test]
fn mixed_line_endings_read_every_request() {
    let dir = Dir::new();
    for (f, l, header) in formats() {
        let lines = many(&l, 1000);
        let lf = text(header, &lines);
        assert!(lf.len() > 3 * 4096, "{f}: too short to test");
        let want = read(&dir.file(&format!("lf.{f}"), lf.as_bytes()), f).unwrap();
        assert_eq!(want.0.len(), 1000, "{f}");
        // LF for the first 4 KiB and more, then CR-only, CRLF, and back.
        let cut = lf[..5000].rfind('\n').unwrap() + 1;
        let (head, tail) = lf.split_at(cut);
        let t = tail.len() / 3;
        let t = tail[..t].rfind('\n').unwrap() + 1;
        let t2 = tail[t..].rfind('\n').unwrap() / 2 + t;
        let t2 = tail[..t2].rfind('\n').unwrap() + 1;
        let cases = [
            ("lf_then_cr", format!("{head}{}", tail.replace('\n', "\r"))),
            ("cr_then_lf", format!("{}{tail}", head.replace('\n', "\r"))),
            (
                "lf_cr_crlf_lf",
                format!(
                    "{head}{}{}{}",
                    tail[..t].replace('\n', "\r"),
                    tail[t..t2].replace('\n', "\r\n"),
                    &tail[t2..]
                ),
            ),
            ("crlf", lf.replace('\n', "\r\n")),
            ("cr", lf.replace('\n', "\r")),
        ];
        for (name, s) in cases {
            let p = dir.file(&format!("{name}.{f}"), s.as_bytes());
            let got = read(&p, f).unwrap_or_else(|e| panic!("{f} {name}: {e}"));
            assert_eq!(got.0, want.0, "{f} {name}");
            assert_eq!(got.1.lines_read, want.1.lines_read, "{f} {name}");
        }
    }
}

#[test]
fn mixed_line_endings_keep_line_numbers() {
    // An error after a CR-only stretch names the line as an editor counts it.
    let dir = Dir::new();
    let mut s = String::new();
    for _ in 0..150 {
        s.push_str(MSR[0]);
        s.push('\n');
    }
    for _ in 0..50 {
        s.push_str(MSR[1]);
        s.push('\r');
    }
    s.push_str("128166385295515175,hm,0,Write,55480x7056,4096,2320\r\n");
    let p = dir.file("lines.csv", s.as_bytes());
    let e = expect_error(read(&p, TraceFormat::Msr), &p, 201, "line number");
    assert!(e.contains("`Offset`"), "{e}");
}

// ----- 3. a file cut inside its last line --------------------------------------------------

#[test]
fn a_cut_last_number_is_an_error_by_default() {
    let dir = Dir::new();
    for (f, l, header) in formats() {
        let h = u64::from(header.is_some());
        let body = text(header, &l[..2]);
        let last = l[2];
        let opts = TraceOptions {
            format: Some(f),
            ..TraceOptions::default()
        };
        let allow = TraceOptions {
            allow_unterminated: true,
            ..opts.clone()
        };
        // Cut one character before the end of the last line.
        let cut = last[..last.len() - 1].trim_end();
        let p = dir.file(&format!("cut.{f}"), format!("{body}{cut}").as_bytes());
        match f {
            // The last field is one digit (these samples' DiskSim flags, MQSim's op): a cut
            // leaves a field less, an error anyway.
            TraceFormat::Mqsim | TraceFormat::Disksim => {
                let e = expect_error(read_opts(&p, &allow), &p, 3 + h, &format!("{f} cut"));
                assert!(e.contains("missing"), "{e}");
            }
            // The last field is the process name: cut, the request is still whole.
            TraceFormat::Blkparse => {
                let (v, c) = read_opts(&p, &opts).unwrap();
                assert_eq!((v.len(), c.unterminated_last_line), (3, 1));
            }
            _ => {
                let e = expect_error(read_opts(&p, &opts), &p, 3 + h, &format!("{f} cut"));
                assert!(
                    e.contains("no line ending") && e.contains("--allow-unterminated"),
                    "{f}: {e}"
                );
                // Accepted as written when asked for, and counted.
                let (v, c) = read_opts(&p, &allow).unwrap_or_else(|e| panic!("{f}: {e}"));
                assert_eq!((v.len(), c.unterminated_last_line), (3, 1), "{f}");
            }
        }
        // The whole last line without its line ending: its last number may still be cut (a
        // reader cannot tell), the same error; read as written with the option.
        let p = dir.file(&format!("whole.{f}"), format!("{body}{last}").as_bytes());
        if matches!(f, TraceFormat::Mqsim | TraceFormat::Blkparse) {
            let (v, c) = read_opts(&p, &opts).unwrap();
            assert_eq!((v.len(), c.unterminated_last_line), (3, 1), "{f}");
        } else {
            let e = expect_error(read_opts(&p, &opts), &p, 3 + h, &format!("{f} whole"));
            assert!(e.contains("no line ending"), "{f}: {e}");
            let (v, c) = read_opts(&p, &allow).unwrap();
            assert_eq!((v.len(), c.unterminated_last_line), (3, 1), "{f}");
        }
        // With its line ending: read, nothing counted.
        let p = dir.file(&format!("ok.{f}"), format!("{body}{last}\n").as_bytes());
        let (v, c) = read_opts(&p, &opts).unwrap();
        assert_eq!((v.len(), c.unterminated_last_line), (3, 0), "{f}");
    }
}

#[test]
fn the_cut_values_of_the_issue() {
    let dir = Dir::new();
    let allow = |f| TraceOptions {
        format: Some(f),
        allow_unterminated: true,
        ..TraceOptions::default()
    };
    // (format, file text cut short, the value it would have been read as); 2 requests each
    let cases: [(TraceFormat, String, &str); 4] = [
        (
            TraceFormat::Canonical,
            format!(
                "time_ns,op,offset_bytes,size_bytes\n{}\n1000,W,8192,16",
                CANONICAL[0]
            ),
            "\"16\"",
        ),
        (
            TraceFormat::Msr,
            format!("{}\n128166385295514878,hm,0,Write,11855351808,51", MSR[0]),
            "\"51\"",
        ),
        (
            TraceFormat::Systor,
            format!(
                "{}\n1456095145.126285000,0.008044000,R,0,4256049987072,1228",
                SYSTOR[0]
            ),
            "\"1228\"",
        ),
        (
            TraceFormat::Tencent,
            format!("{}\n1538323199,13896880,128,0,106", TENCENT[0]),
            "\"106\"",
        ),
    ];
    for (f, s, value) in cases {
        let p = dir.file(&format!("cut.{f}"), s.as_bytes());
        let line = if f == TraceFormat::Canonical { 3 } else { 2 };
        let e = expect_error(read(&p, f), &p, line, &format!("{f}"));
        assert!(e.contains(value), "{f}: {e}");
        // As written when asked for: the user sees the warning and the counter.
        let (v, c) = read_opts(&p, &allow(f)).unwrap();
        assert_eq!(c.unterminated_last_line, 1);
        assert_eq!(v.len(), 2);
    }
    // The counter reaches the JSON (and is left out when 0, so that reports of complete
    // files keep their bytes).
    let p = dir.file("c.csv", b"0,R,0,4096\n1,W,0,40");
    let (_, c) = read_opts(&p, &allow(TraceFormat::Canonical)).unwrap();
    let j = serde_json::to_value(&c).unwrap();
    assert_eq!(j["unterminated_last_line"], 1);
    let p = dir.file("d.csv", b"0,R,0,4096\n1,W,0,40\n");
    let (_, c) = read(&p, TraceFormat::Canonical).unwrap();
    let j = serde_json::to_value(&c).unwrap();
    assert!(j.get("unterminated_last_line").is_none(), "{j}");
    assert!(j.get("non_request_by_action").is_none(), "{j}");
}

#[test]
fn an_unterminated_line_that_cannot_be_a_cut_number_is_read_and_counted() {
    let dir = Dir::new();
    // The bundled WebSearch1 trace (MQSim's wsrch-small.trace) has no final line ending.
    let mq = format!("{}\n{}\n{}", MQSIM[0], MQSIM[1], MQSIM[2]);
    let (v, c) = read(&dir.file("ws.trace", mq.as_bytes()), TraceFormat::Mqsim).unwrap();
    assert_eq!((v.len(), c.unterminated_last_line), (3, 1));
    // A trailing comment without a line ending.
    let s = format!("{}\n{}\n# end", CANONICAL[0], CANONICAL[1]);
    let (v, c) = read(&dir.file("c.csv", s.as_bytes()), TraceFormat::Canonical).unwrap();
    assert_eq!((v.len(), c.unterminated_last_line), (2, 1));
    // Blanks without a line ending: a blkparse file cut after the indentation of its last
    // event. An error, unless asked for.
    let s = format!("{}\n{}\n  ", BLKPARSE[0], BLKPARSE[1]);
    let p = dir.file("b.txt", s.as_bytes());
    let e = expect_error(read(&p, TraceFormat::Blkparse), &p, 3, "blanks");
    assert!(e.contains("only blanks"), "{e}");
    let allow = TraceOptions {
        format: Some(TraceFormat::Blkparse),
        allow_unterminated: true,
        ..TraceOptions::default()
    };
    let (v, c) = read_opts(&p, &allow).unwrap();
    assert_eq!((v.len(), c.unterminated_last_line), (2, 1));
}

// ----- 4. a damaged first data line --------------------------------------------------------

#[test]
fn a_damaged_first_line_is_an_error_not_a_header() {
    let dir = Dir::new();
    for (f, l, header) in formats() {
        // The first character of the first record turned into a letter (0 -> O, 1 -> l).
        let first = l[0].trim_start();
        let lead = &l[0][..l[0].len() - first.len()];
        let damaged = match first.as_bytes()[0] {
            b'1' => format!("{lead}l{}", &first[1..]),
            _ => format!("{lead}O{}", &first[1..]),
        };
        let p = dir.file(
            &format!("first.{f}"),
            text(None, &[&damaged, l[1], l[2]]).as_bytes(),
        );
        let e = expect_error(read(&p, f), &p, 1, &format!("{f} first line"));
        if f != TraceFormat::Blkparse {
            assert!(e.contains("not a header of this format"), "{f}: {e}");
        }
        // A damaged header is no header either.
        if let Some(h) = header {
            let bad = h.replacen('e', "3", 1);
            let p = dir.file(&format!("header.{f}"), text(Some(&bad), &l).as_bytes());
            expect_error(read(&p, f), &p, 1, &format!("{f} damaged header"));
            // The real header is skipped and counted.
            let p = dir.file(&format!("ok.{f}"), text(header, &l).as_bytes());
            let (v, c) = read(&p, f).unwrap();
            assert_eq!((v.len(), c.header_lines_skipped), (3, 1), "{f}");
        }
    }
    // The column names of the format, in any case, with their known variants: a header.
    for (f, h) in [
        (
            TraceFormat::Msr,
            "timestamp,hostname,disknumber,type,offset,size,responsetime",
        ),
        (TraceFormat::Spc, "ASU,LBA,Size,Opcode,Timestamp"),
        (
            TraceFormat::Tencent,
            "Timestamp,Offset,Size,IOType,VolumeID",
        ),
        (TraceFormat::Vscsi, "version,time_us,op_hex,size_bytes,lbn"),
    ] {
        let l = formats().into_iter().find(|x| x.0 == f).unwrap().1;
        let p = dir.file(&format!("named.{f}"), text(Some(h), &l).as_bytes());
        let (v, c) = read(&p, f).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert_eq!((v.len(), c.header_lines_skipped), (3, 1), "{f}");
    }
}

#[test]
fn sniffing_then_reading_refuses_an_unknown_header() {
    // Sniffing passes over a first line it does not know to guess the format; the reader
    // then refuses it, quoting the columns a header must name.
    let dir = Dir::new();
    let s = text(
        Some("ts,host,disk,rw,off,len,rt"),
        &[MSR[0], MSR[1], MSR[2]],
    );
    let p = dir.file("unknown_header.csv", s.as_bytes());
    let e = expect_error(read_opts(&p, &TraceOptions::default()), &p, 1, "sniffed");
    assert!(
        e.contains("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"),
        "{e}"
    );
}

// ----- 5. blkparse ---------------------------------------------------------------------------

fn blk_fixture() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/trace/blkparse_sample.txt");
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn damaged_blkparse_events_are_errors_naming_the_line() {
    let dir = Dir::new();
    let good = blk_fixture();
    let d_line = "  8,0    3        6     0.000025000   700  D   R 1000 + 16 [cat]";
    let n = good.lines().position(|l| l == d_line).unwrap() as u64 + 1;
    for (what, bad) in [
        (
            "bad RWBS",
            "  8,0    3        6     0.000025000   700  D   Q 1000 + 16 [cat]",
        ),
        (
            "missing time",
            "  8,0    3        6   700  D   R 1000 + 16 [cat]",
        ),
        (
            "unknown action",
            "  8,0    3        6     0.000025000   700  d   R 1000 + 16 [cat]",
        ),
        (
            "damaged device",
            "  8.0    3        6     0.000025000   700  D   R 1000 + 16 [cat]",
        ),
        (
            "garbage",
            "\u{1}\u{7f}x\u{3}garbage\u{2}  R 1000 + 16 [cat]",
        ),
        (
            "text in the middle",
            "Reads Queued:           1,        8KiB",
        ),
        (
            "split size",
            "  8,0    3        6     0.000025000   700  D   R 1000 + 1 6 [cat]",
        ),
        (
            "cut",
            "  8,0    3        6     0.000025000   700  D   R 1000 +",
        ),
    ] {
        let s = good.replacen(d_line, bad, 1);
        let p = dir.file("damaged.txt", s.as_bytes());
        let e = expect_error(read(&p, TraceFormat::Blkparse), &p, n, what);
        eprintln!("{what}: {e}");
    }
    // Two events on one line, the second a D, also when the first is skipped (a C).
    let c_line = "  8,0    1        1     0.000010000     0  C   W 223490 + 8 [0]";
    let c = good.lines().position(|l| l == c_line).unwrap() as u64 + 1;
    let s = good.replacen(&format!("{c_line}\n"), c_line, 1);
    let p = dir.file("glued.txt", s.as_bytes());
    let e = expect_error(read(&p, TraceFormat::Blkparse), &p, c, "C glued to D");
    assert!(e.contains("end of record"), "{e}");
}

#[test]
fn blkparse_skips_only_known_non_requests_counted_per_action() {
    let dir = Dir::new();
    let p = dir.file("b.txt", blk_fixture().as_bytes());
    let (v, c) = read(&p, TraceFormat::Blkparse).unwrap();
    assert_eq!(v.len(), 3);
    let by: Vec<(&str, u64)> = c.non_request_by_action.clone().into_iter().collect();
    // 4 Q, G, P, C, one D discard; 8 lines of blkparse's summary.
    assert_eq!(
        by,
        [
            ("C", 1),
            ("D", 1),
            ("G", 1),
            ("P", 1),
            ("Q", 4),
            ("text", 8)
        ]
    );
    assert_eq!(c.non_request_skipped, 16);
    let j = serde_json::to_value(&c).unwrap();
    assert_eq!(j["non_request_by_action"]["Q"], 4);
    // `Input file … added` before the events, and a per-process summary (blkparse -s).
    let s = format!(
        "Input file sda.blktrace.0 added\nInput file sda.blktrace.1 added\n{}kjournald (697)\n \
         Reads Queued:           0,        0KiB\n",
        blk_fixture()
    );
    let (v, c) = read(&dir.file("b2.txt", s.as_bytes()), TraceFormat::Blkparse).unwrap();
    assert_eq!((v.len(), c.non_request_by_action["text"]), (3, 12));
}

// ----- the file-level reader ---------------------------------------------------------------

const FS: [&str; 3] = [
    r#"{"t_ns":7093986000,"op":"read","path":"pgdata/base/5/16396","offset":790274048,"size":8192,"pid":24662,"lat_ns":230000}"#,
    r#"{"t_ns":7093990000,"op":"write","path":"pgdata/base/5/16396","offset":8192,"size":8192,"pid":24662,"lat_ns":1000}"#,
    r#"{"t_ns":7093995000,"op":"fsync","path":"pgdata/base/5/16396","pid":24662}"#,
];

fn fs_read(path: &Path) -> Result<(Vec<(u64, u64)>, u64), String> {
    let mut rd = FsJsonlReader::open(path).map_err(|e| e.to_string())?;
    let mut v = Vec::new();
    while let Some(r) = rd.next_record().map_err(|e| e.to_string())? {
        v.push((r.t_ns, r.size_bytes));
    }
    Ok((v, rd.counters().unterminated_last_line))
}

#[test]
fn file_level_traces_frame_records_the_same_way() {
    let dir = Dir::new();
    // The sample records again and again, each round 1 ms later.
    let lf: String = (0..150u64)
        .map(|k| {
            let l = FS[(k % 3) as usize];
            let t = 7093986000 + (k / 3) * 1_000_000;
            let l = l.replacen(&l[8..18], &t.to_string(), 1);
            format!("{l}\n")
        })
        .collect();
    let want = fs_read(&dir.file("lf.jsonl", lf.as_bytes())).unwrap();
    assert_eq!(want.0.len(), 150);
    // Mixed line endings after the first 4 KiB.
    let cut = lf[..5000].rfind('\n').unwrap() + 1;
    let mixed = format!("{}{}", &lf[..cut], lf[cut..].replace('\n', "\r"));
    assert_eq!(
        fs_read(&dir.file("mixed.jsonl", mixed.as_bytes())).unwrap(),
        want
    );
    // Two records on one line.
    let s = format!("{}\n{}{}\n", FS[0], FS[1], FS[2]);
    let p = dir.file("glued.jsonl", s.as_bytes());
    let e = fs_read(&p).unwrap_err();
    assert_error(&e, &p, 2, "fs glued");
    // A key twice (a record glued inside another, or a damaged line) is an error.
    let s = r#"{"t_ns":1,"op":"read","path":"a","offset":0,"size":8192,"size":16}"#;
    let p = dir.file("twice.jsonl", s.as_bytes());
    let e = fs_read(&p).unwrap_err();
    assert_error(&e, &p, 1, "fs key twice");
    assert!(e.contains("`size`") && e.contains("twice"), "{e}");
    // A cut last line has no closing brace: an error; a whole one without its line ending
    // is read and counted.
    let s = format!("{}\n{}", FS[0], &FS[1][..FS[1].len() - 3]);
    let p = dir.file("cut.jsonl", s.as_bytes());
    assert_error(&fs_read(&p).unwrap_err(), &p, 2, "fs cut");
    let s = format!("{}\n{}", FS[0], FS[1]);
    let (v, unterminated) = fs_read(&dir.file("whole.jsonl", s.as_bytes())).unwrap();
    assert_eq!((v.len(), unterminated), (2, 1));
}
