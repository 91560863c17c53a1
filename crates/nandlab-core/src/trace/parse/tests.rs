//! Unit tests of the line parsers (moved verbatim from `parse.rs` when it was split by
//! subject).

use super::blkparse::*;
use super::fast::*;
use super::fields::*;
use super::header::*;
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
                    let d =
                        (seed.wrapping_mul(2654435761).wrapping_add(k as u64 * 97) >> (k % 7)) % 10;
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
