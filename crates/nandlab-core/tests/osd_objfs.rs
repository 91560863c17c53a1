//! The object device's host side: the file-level trace reader (`trace::fsjsonl`) and the
//! `objfs` translator (spec `dmm.md` §5).

use std::path::{Path, PathBuf};

use nandlab_core::trace::{fs_stats, FsJsonlReader, FsOp};

/// The workspace's shared traces: `$NANDLAB_SHARED_TRACES`, or a `shared/traces` beside the
/// repository (main checkout) or beside its parent (a worktree under `wt/`).
fn shared() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NANDLAB_SHARED_TRACES") {
        return Some(PathBuf::from(p));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    ["../../../shared/traces", "../../../../shared/traces"]
        .iter()
        .map(|r| root.join(r))
        .find(|p| p.is_dir())
}

/// A captured file-level trace, or `None` (test skipped) when the shared folder is absent.
fn captured(name: &str) -> Option<PathBuf> {
    let p = shared()?.join("captured").join(name);
    if p.exists() {
        Some(p)
    } else {
        eprintln!("skipping: {} not found", p.display());
        None
    }
}

fn write_file(dir: &tempfile::TempDir, name: &str, content: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, content).unwrap();
    p
}

/// Read `content` as a trace to the end; the first error's message.
fn error_of(content: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(&dir, "bad_fs.jsonl", content);
    let mut rd = FsJsonlReader::open(&p).unwrap();
    loop {
        match rd.next_record() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("no error for {content:?}"),
            Err(e) => return e.to_string(),
        }
    }
}

const GOOD: &str =
    r#"{"t_ns":0,"op":"create","path":"a","offset":null,"size":null,"pid":1,"lat_ns":5}"#;

/// A malformed line is one line naming file, line and field.
#[track_caller]
fn bad(line2: &str, field: &str, more: &[&str]) {
    let msg = error_of(&format!("{GOOD}\n{line2}\n"));
    eprintln!("{msg}");
    assert!(!msg.contains('\n'), "not one line: {msg:?}");
    for part in ["bad_fs.jsonl", "line 2:", &format!("`{field}`")]
        .iter()
        .chain(more)
    {
        assert!(msg.contains(part), "message {msg:?} lacks {part:?}");
    }
}

#[test]
fn fsjsonl_reads_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{GOOD}\n\n{}\n{}\n{}\n{}\n{}\n",
        r#"{"t_ns":10,"op":"write","path":"a","offset":4096,"size":100,"pid":2,"lat_ns":7,"extra":"x"}"#,
        r#"{"t_ns":10,"op":"fsync","path":"a","offset":null,"size":null,"pid":2,"lat_ns":7,"kind":"fdatasync"}"#,
        r#"{"t_ns":20,"op":"rename","path":"a","new_path":"d\/b\"q\u00e9","offset":null,"size":null,"pid":2,"lat_ns":1,"via":"link"}"#,
        r#"{"t_ns":30,"op":"truncate","path":"d/b","offset":null,"size":0,"pid":null,"lat_ns":null}"#,
        r#" { "t_ns" : 31 , "op" : "read" , "path" : "d/b" , "offset" : 0 , "size" : 0 } "#,
    );
    let p = write_file(&dir, "ok.jsonl", &text);
    let mut rd = FsJsonlReader::open(&p).unwrap();
    let r = rd.next_record().unwrap().unwrap();
    assert_eq!(
        (r.t_ns, r.op, r.path, r.pid, r.lat_ns),
        (0, FsOp::Create, "a", 1, 5)
    );
    let r = rd.next_record().unwrap().unwrap();
    assert_eq!(
        (r.op, r.offset_bytes, r.size_bytes, r.new_path),
        (FsOp::Write, 4096, 100, None)
    );
    let r = rd.next_record().unwrap().unwrap();
    assert!(r.op == FsOp::Fsync && r.fdatasync);
    let r = rd.next_record().unwrap().unwrap();
    assert_eq!(
        (r.op, r.path, r.new_path, r.via_link),
        (FsOp::Rename, "a", Some("d/b\"qé"), true)
    );
    let r = rd.next_record().unwrap().unwrap();
    assert_eq!((r.op, r.size_bytes, r.pid), (FsOp::Truncate, 0, 0));
    let r = rd.next_record().unwrap().unwrap();
    assert_eq!((r.op, r.path, r.size_bytes), (FsOp::Read, "d/b", 0));
    assert_eq!(rd.line(), 7);
    assert!(rd.next_record().unwrap().is_none());
    assert_eq!(rd.counters().records, 6);
    assert_eq!(rd.counters().blank_lines, 1);
}

#[test]
fn fsjsonl_malformed_lines_name_file_line_field() {
    bad("not json", "record", &["not a JSON object"]);
    bad(
        r#"{"t_ns":1,"op":"read","path":"a","offset":0"#,
        "record",
        &["truncated"],
    );
    bad(r#"{"op":"open","path":"a"}"#, "t_ns", &["missing"]);
    bad(
        r#"{"t_ns":-5,"op":"open","path":"a"}"#,
        "t_ns",
        &["-5", "integer"],
    );
    bad(r#"{"t_ns":1.5,"op":"open","path":"a"}"#, "t_ns", &["1.5"]);
    bad(
        r#"{"t_ns":"7","op":"open","path":"a"}"#,
        "t_ns",
        &["integer"],
    );
    bad(r#"{"t_ns":1,"path":"a"}"#, "op", &["missing"]);
    bad(
        r#"{"t_ns":1,"op":"chmod","path":"a"}"#,
        "op",
        &["chmod", "create"],
    );
    bad(r#"{"t_ns":1,"op":7,"path":"a"}"#, "op", &["not a string"]);
    bad(r#"{"t_ns":1,"op":"open"}"#, "path", &["missing"]);
    bad(r#"{"t_ns":1,"op":"open","path":""}"#, "path", &["empty"]);
    bad(
        r#"{"t_ns":1,"op":"open","path":null}"#,
        "path",
        &["not a string"],
    );
    bad(
        r#"{"t_ns":1,"op":"read","path":"a","offset":null,"size":3}"#,
        "offset",
        &["read"],
    );
    bad(
        r#"{"t_ns":1,"op":"write","path":"a","offset":0}"#,
        "size",
        &["write"],
    );
    bad(
        r#"{"t_ns":1,"op":"write","path":"a","offset":0,"size":-1}"#,
        "size",
        &["-1"],
    );
    bad(
        r#"{"t_ns":1,"op":"truncate","path":"a","size":null}"#,
        "size",
        &["truncate"],
    );
    bad(
        r#"{"t_ns":1,"op":"rename","path":"a"}"#,
        "new_path",
        &["rename"],
    );
    bad(
        r#"{"t_ns":1,"op":"open","path":"a","pid":[1]}"#,
        "pid",
        &["integer"],
    );
    bad(
        r#"{"t_ns":1,"op":"open","path":"a","x":{"y":1}}"#,
        "record",
        &["nested"],
    );
    bad(
        r#"{"t_ns":1,"op":"open","path":"a"} {"t_ns":2}"#,
        "record",
        &["after the JSON object"],
    );
    bad(
        r#"{"t_ns":1,"op":"write","path":"a","offset":18446744073709551615,"size":2}"#,
        "size",
        &["overflows"],
    );
    bad(
        r#"{"t_ns":99999999999999999999,"op":"open","path":"a"}"#,
        "t_ns",
        &["larger than"],
    );
    // time going backwards
    let msg = error_of(&format!(
        "{}\n{}\n",
        r#"{"t_ns":50,"op":"open","path":"a"}"#, r#"{"t_ns":40,"op":"open","path":"a"}"#
    ));
    assert!(
        msg.contains("line 2:") && msg.contains("`t_ns`") && msg.contains("line 1"),
        "{msg}"
    );
}

#[test]
fn fsjsonl_gzip_and_truncated_gzip() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..2000)
        .map(|i| format!("{{\"t_ns\":{i},\"op\":\"open\",\"path\":\"f{i}\"}}\n"))
        .collect();
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(text.as_bytes()).unwrap();
    let gz = enc.finish().unwrap();
    let p = dir.path().join("t_fs.jsonl.gz");
    std::fs::write(&p, &gz).unwrap();
    let mut rd = FsJsonlReader::open(&p).unwrap();
    let mut n = 0;
    while rd.next_record().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, 2000);
    std::fs::write(&p, &gz[..gz.len() / 2]).unwrap();
    let mut rd = FsJsonlReader::open(&p).unwrap();
    let err = loop {
        match rd.next_record() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("truncated gzip read to the end"),
            Err(e) => break e.to_string(),
        }
    };
    assert!(
        err.contains("t_fs.jsonl.gz") && err.contains("gzip"),
        "{err}"
    );
}

/// T17-style statistics of the captured traces against spec §5's measured values.
#[test]
fn fsjsonl_t17_statistics_of_captured_traces() {
    // (file, files, avg KiB, write %, write seq %, read seq %), spec dmm.md §5.
    let want = [
        (
            "pgbench_rw_fs.jsonl.gz",
            150,
            10.02,
            46.3,
            1.0,
            1.2,
            466_125,
        ),
        (
            "devtree_fs.jsonl.gz",
            55_972,
            8.09,
            38.6,
            27.0,
            33.0,
            523_254,
        ),
    ];
    for (name, files, kib, wpct, wseq, rseq, records) in want {
        let Some(p) = captured(name) else { continue };
        let st = fs_stats(&p).unwrap();
        eprintln!("{name}: {st:?}");
        assert_eq!(st.records, records, "{name} records");
        assert_eq!(st.files, files, "{name} files");
        assert!(
            (st.avg_request_kib - kib).abs() < 0.01,
            "{name} avg KiB {}",
            st.avg_request_kib
        );
        assert!(
            (st.write_percent - wpct).abs() < 0.05,
            "{name} write % {}",
            st.write_percent
        );
        // the spec rounds the sequential shares to whole percent above 10, to 0.1 below
        let tol = |v: f64| if v >= 10.0 { 0.5 } else { 0.05 };
        assert!(
            (st.write_seq_percent - wseq).abs() <= tol(wseq),
            "{name} write seq {}",
            st.write_seq_percent
        );
        assert!(
            (st.read_seq_percent - rseq).abs() <= tol(rseq),
            "{name} read seq {}",
            st.read_seq_percent
        );
    }
    if let Some(p) = captured("devtree_fs.jsonl.gz") {
        let st = fs_stats(&p).unwrap();
        // spec §5: 32,758 of 76,991 writes are < 2 KB; 27,810 link-renames; 28,270 deletes of
        // paths never seen earlier
        assert_eq!(st.ops["write"], 76_991);
        assert_eq!(st.writes_under_2kib, 32_758);
        assert_eq!(st.link_renames, 27_810);
        assert_eq!(st.deletes_of_unseen_paths, 28_270);
        assert_eq!(st.ops["fsync"], 0);
    }
    if let Some(p) = captured("pgbench_rw_fs.jsonl.gz") {
        let st = fs_stats(&p).unwrap();
        // spec §5: 71,085 fsyncs; 201 of its 213 paths already exist before the trace
        assert_eq!(st.ops["fsync"], 71_085);
        assert_eq!(st.distinct_paths, 213);
        assert_eq!(st.preexisting_paths, 201);
        assert!((st.duration_s - 181.6).abs() < 0.05, "{}", st.duration_s);
    }
}
