//! Bad input: every error names the file, the 1-based line and the field.

use std::io::Write;
use std::path::{Path, PathBuf};

use nandlab_core::trace::{TraceError, TraceFormat, TraceOptions, TraceReader};

fn write_file(dir: &tempfile::TempDir, name: &str, content: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, content).unwrap();
    p
}

/// Read `path` to the end; return the first error's message.
fn error_of(path: &Path, opts: &TraceOptions) -> String {
    let mut rd = match TraceReader::open(path, opts) {
        Ok(rd) => rd,
        Err(e) => return e.to_string(),
    };
    loop {
        match rd.next_request() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("{}: no error", path.display()),
            Err(e) => return e.to_string(),
        }
    }
}

fn assert_has(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "message {msg:?} lacks {p:?}");
    }
}

/// One bad-line case: file content, expected line, field and further message parts.
fn case(name: &str, content: &str, line: u64, field: &str, more: &[&str]) {
    case_fmt(name, content, None, line, field, more)
}

fn case_fmt(
    name: &str,
    content: &str,
    format: Option<TraceFormat>,
    line: u64,
    field: &str,
    more: &[&str],
) {
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(&dir, name, content.as_bytes());
    let opts = TraceOptions {
        format,
        ..TraceOptions::default()
    };
    let msg = error_of(&p, &opts);
    eprintln!("{msg}");
    let line_s = format!("line {line}:");
    let field_s = format!("`{field}`");
    let mut parts = vec![name, line_s.as_str(), field_s.as_str()];
    parts.extend_from_slice(more);
    assert_has(&msg, &parts);
}

const MSR_OK: &str = "128166385295514663,hm,0,Write,9056014336,2048,2833\n";

#[test]
fn too_few_fields() {
    case(
        "few.csv",
        &format!("{MSR_OK}128166385295514878,hm,0,Write,11855351808\n"),
        2,
        "Size",
        &["missing", "Timestamp,Hostname,DiskNumber,Type,Offset,Size"],
    );
    case(
        "few.trace",
        "0 0 303567 7 0\n10 0 303567\n",
        2,
        "size",
        &["missing"],
    );
}

#[test]
fn non_numeric_field() {
    case(
        "nonnum.csv",
        &format!("{MSR_OK}128166385295514878,hm,0,Write,12ab,512,2617\n"),
        2,
        "Offset",
        &["\"12ab\"", "not a number", "non-negative integer"],
    );
    case(
        "nonnum_ts.spc",
        "0,303567,3584,w,0.000000\n0,303574,3584,w,0.02x\n",
        2,
        "Timestamp",
        &["\"0.02x\"", "not a number", "seconds"],
    );
}

#[test]
fn negative_size() {
    case(
        "negsize.csv",
        "time_ns,op,offset_bytes,size_bytes\n0,R,0,4096\n5,W,0,-4096\n",
        3,
        "size_bytes",
        &["\"-4096\"", "negative", "positive integer"],
    );
}

#[test]
fn zero_size() {
    case(
        "zero.csv",
        &format!("{MSR_OK}128166385295514878,hm,0,Write,11855351808,0,2617\n"),
        2,
        "Size",
        &["\"0\"", "zero-length"],
    );
    case(
        "zero.trace",
        "0 0 303567 7 0\n10 0 303567 0 1\n",
        2,
        "size",
        &["zero-length"],
    );
}

#[test]
fn negative_offset() {
    case(
        "negoff.csv",
        &format!("{MSR_OK}128166385295514878,hm,0,Write,-5,512,2617\n"),
        2,
        "Offset",
        &["\"-5\"", "negative"],
    );
}

#[test]
fn unknown_op() {
    case(
        "op.csv",
        &format!("{MSR_OK}128166385295514878,hm,0,Delete,0,512,2617\n"),
        2,
        "Type",
        &["\"Delete\"", "unknown op", "`Read` or `Write`"],
    );
    // (Sniffing would call this DiskSim: an op other than 0/1 means DiskSim flags.)
    case_fmt(
        "op.trace",
        "0 0 303567 7 0\n10 0 303567 7 2\n",
        Some(TraceFormat::Mqsim),
        2,
        "op",
        &["\"2\"", "`1` (read) or `0` (write)"],
    );
    case(
        "op.spc",
        "0,303567,3584,w,0.0\n0,303567,3584,x,0.1\n",
        2,
        "Opcode",
        &["\"x\"", "unknown op"],
    );
    case(
        "op_tencent.csv",
        "1538323200,4247200,128,1,1058\n1538323200,4247200,128,7,1058\n",
        2,
        "IOType",
        &["\"7\"", "`0` (read) or `1` (write)"],
    );
}

#[test]
fn truncated_gzip() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("time_ns,op,offset_bytes,size_bytes\n");
    for i in 0..60_000u64 {
        text.push_str(&format!(
            "{},W,{},4096\n",
            i * 1000,
            (i * 7919 % 100_000) * 4096
        ));
    }
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(text.as_bytes()).unwrap();
    let gz = enc.finish().unwrap();
    // The whole file reads fine...
    let ok = write_file(&dir, "whole.csv.gz", &gz);
    let n = TraceReader::open(&ok, &TraceOptions::default())
        .unwrap()
        .count();
    assert_eq!(n, 60_000);
    // ... a truncated one is an error naming the file.
    let p = write_file(&dir, "cut.csv.gz", &gz[..gz.len() / 2]);
    let msg = error_of(&p, &TraceOptions::default());
    eprintln!("{msg}");
    assert_has(&msg, &["cut.csv.gz", "gzip"]);
    // Also with the last 4 bytes (ISIZE) cut off only.
    let p = write_file(&dir, "cut4.csv.gz", &gz[..gz.len() - 4]);
    let msg = error_of(&p, &TraceOptions::default());
    assert_has(&msg, &["cut4.csv.gz"]);
}

#[test]
fn zstd_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let text = "0 0 303567 7 0\n26214000 0 303574 7 1\n";
    let z = zstd::stream::encode_all(text.as_bytes(), 3).unwrap();
    let p = write_file(&dir, "trace.bin", &z);
    let v: Vec<_> = TraceReader::open(&p, &TraceOptions::default())
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(v.len(), 2);
    assert_eq!(v[1].arrival_ns, 26_214_000);
}

#[test]
fn empty_and_header_only() {
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in [
        ("empty.csv", ""),
        ("blank.csv", "\n\n  \n"),
        ("comments.csv", "# nothing\n# here\n"),
        (
            "header.csv",
            "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n",
        ),
        (
            "canon_header.csv",
            "time_ns,op,offset_bytes,size_bytes\n# c\n",
        ),
    ] {
        let p = write_file(&dir, name, content.as_bytes());
        let msg = error_of(&p, &TraceOptions::default());
        assert_has(&msg, &[name, "no requests"]);
        // The same with the format given (no sniffing); a header of another format is a first
        // line that is not MSR's header, so data, and a bad line (issue 28).
        let opts = TraceOptions {
            format: Some(TraceFormat::Msr),
            ..TraceOptions::default()
        };
        let msg = error_of(&p, &opts);
        if name == "canon_header.csv" {
            assert_has(
                &msg,
                &[
                    name,
                    "line 1:",
                    "`Timestamp`",
                    "\"time_ns\"",
                    "not a header of this format",
                    "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime",
                ],
            );
        } else {
            assert_has(&msg, &[name, "no requests"]);
        }
    }
    // Empty gzip.
    let enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let p = write_file(&dir, "empty.csv.gz", &enc.finish().unwrap());
    assert_has(
        &error_of(&p, &TraceOptions::default()),
        &["empty.csv.gz", "no requests"],
    );
}

#[test]
fn unrecognised_format() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(
        &dir,
        "mystery.txt",
        b"# comment\nhello world, how are you\n1 2 3\n",
    );
    let msg = error_of(&p, &TraceOptions::default());
    assert_has(
        &msg,
        &[
            "mystery.txt",
            "unrecognised",
            "hello world, how are you",
            "msr",
            "spc",
            "disksim",
            "mqsim",
            "blkparse",
            "canonical",
            "systor",
            "tencent",
            "vscsi",
        ],
    );
    let e = TraceReader::open(&p, &TraceOptions::default()).unwrap_err();
    assert!(matches!(e, TraceError::UnknownFormat { .. }));
}

#[test]
fn device_option_on_format_without_devices() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(&dir, "c.csv", b"0,R,0,4096\n");
    let opts = TraceOptions {
        device: Some(3),
        ..TraceOptions::default()
    };
    assert_has(&error_of(&p, &opts), &["c.csv", "`device`", "canonical"]);
}

#[test]
fn device_filter_keeping_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(&dir, "m.trace", b"0 0 0 8 0\n5 1 0 8 0\n");
    let opts = TraceOptions {
        device: Some(9),
        ..TraceOptions::default()
    };
    assert_has(
        &error_of(&p, &opts),
        &["m.trace", "no requests", "2 dropped"],
    );
}

#[test]
fn errors_while_merging_name_the_line() {
    // A bad line late in a multi-device file fails in open() (the merge pre-pass).
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(&dir, "late.trace", b"0 0 0 8 0\n5 1 0 8 0\n7 1 -3 8 0\n");
    let e = TraceReader::open(&p, &TraceOptions::default()).unwrap_err();
    assert_has(
        &e.to_string(),
        &["late.trace", "line 3:", "`lba`", "negative"],
    );
}

#[test]
fn no_panic_on_garbage() {
    // Binary junk, overlong numbers, odd separators: errors, never panics.
    let dir = tempfile::tempdir().unwrap();
    let inputs: [&[u8]; 6] = [
        b"0,R,0,99999999999999999999999\n",
        b"0,R,18446744073709551615,10\n",
        b"0 0 36028797018963968 8 0\n",
        b"\xff\xfe\x00garbage\n",
        b"99999999999999999999,hm,0,Read,0,512,1\n",
        b"1,5633898368802,zz,512,42932745\n",
    ];
    for (i, inp) in inputs.iter().enumerate() {
        for f in TraceFormat::ALL {
            let p = write_file(&dir, &format!("g{i}.txt"), inp);
            let opts = TraceOptions {
                format: Some(f),
                ..TraceOptions::default()
            };
            if let Ok(rd) = TraceReader::open(&p, &opts) {
                for r in rd {
                    if r.is_err() {
                        break;
                    }
                }
            }
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Random lines made of trace-like characters: every format returns requests or errors,
    /// and every request it returns has a positive length.
    #[test]
    fn random_lines_never_panic(text in "([0-9]{0,21}[,. \\t\\-+xRWrwD#]{0,2}){0,12}(\\n([0-9]{0,21}[,. \\t\\-+xRWrwD#]{0,2}){0,12}){0,6}") {
        let dir = tempfile::tempdir().unwrap();
        let p = write_file(&dir, "rand.txt", text.as_bytes());
        let _ = nandlab_core::trace::sniff_format(&p);
        for f in TraceFormat::ALL {
            let opts = TraceOptions { format: Some(f), reorder_window: 2, ..TraceOptions::default() };
            if let Ok(rd) = TraceReader::open(&p, &opts) {
                for r in rd {
                    match r {
                        Ok(r) => proptest::prop_assert!(r.len_bytes > 0),
                        Err(_) => break,
                    }
                }
            }
        }
    }
}
