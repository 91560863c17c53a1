//! Robustness (issue 20): inputs that used to crash, exhaust memory or be read silently wrong.
//! Each case failed before its fix.

use std::path::{Path, PathBuf};

use nandlab_core::api::{run, RunRequest};
use nandlab_core::host::TouchedPages;
use nandlab_core::trace::{TraceFormat, TraceOptions, TraceReader};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn write(dir: &tempfile::TempDir, name: &str, content: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, content).unwrap();
    p
}

fn run_trace(path: &Path, overrides: &[&str]) -> Result<String, String> {
    let preset = root().join("python/nandlab/configs/default.toml");
    let req = RunRequest {
        config_toml: std::fs::read_to_string(&preset).unwrap(),
        config_path: Some(preset),
        overrides: overrides.iter().map(|s| s.to_string()).collect(),
        scheme: None,
        trace_path: path.to_path_buf(),
        trace_options: TraceOptions::default(),
        flow_traces: Vec::new(),
    };
    run(&req, &mut |_, _, _| {}).map_err(|e| e.to_string())
}

fn requests(path: &Path) -> Result<Vec<(u64, u64)>, String> {
    let mut rd = TraceReader::open(path, &TraceOptions::default()).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    while let Some(r) = rd.next_request().map_err(|e| e.to_string())? {
        out.push((r.offset_bytes, r.len_bytes));
    }
    Ok(out)
}

/// Item 1: an offset of 2^62 bytes, a size of 2^60 bytes and a size beyond 2^64 are one-line
/// errors naming the line and field, found while parsing (before any structure is sized).
#[test]
fn huge_offsets_and_sizes_are_parse_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (name, line, what) in [
        (
            "off62.csv",
            "0,W,4611686018427387904,4096\n",
            "beyond 2^48 bytes",
        ),
        ("size60.csv", "0,W,0,1152921504606846976\n", "above 64 GiB"),
        ("size19.csv", "0,W,0,9999999999999999999\n", "above 64 GiB"),
        (
            "pib.csv",
            "0,W,1125899906842624,4096\n",
            "beyond 2^48 bytes",
        ),
    ] {
        let p = write(&dir, name, line.as_bytes());
        let e = run_trace(&p, &[]).unwrap_err();
        assert!(
            e.contains(name) && e.contains("line 1") && e.contains(what) && !e.contains('\n'),
            "{e}"
        );
    }
}

/// Item 1 (issue 20), revised by issue 28: an address the 32-bit page numbers cannot reach
/// on a dense device is refused before allocation, naming the compact map as a way out; the
/// compact map (the default `auto`) replays it in little memory.
#[test]
fn addresses_beyond_the_page_numbers_are_packed_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    // 100 TiB with 8 KiB pages: page 1.3e10 > 2^32.
    let p = write(&dir, "t100.csv", b"0,W,0,4096\n1,W,109951162777600,4096\n");
    let e = run_trace(
        &p,
        &[
            "device.page_size_bytes=8192",
            "precondition.fill=\"touched\"",
            "device.address_map=\"dense\"",
        ],
    )
    .unwrap_err();
    assert!(
        e.contains("32-bit PPN") && e.contains("device.address_map") && !e.contains('\n'),
        "{e}"
    );
    let r = run_trace(
        &p,
        &[
            "device.page_size_bytes=8192",
            "precondition.fill=\"touched\"",
        ],
    )
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&r).unwrap();
    assert_eq!(v["device"]["address_map"]["mode"], "compact");
    assert_eq!(v["host"]["requests"], 2);
}

/// A touched-page set costs memory where pages are touched, not up to the highest one.
#[test]
fn touched_pages_are_sparse() {
    let mut t = TouchedPages::default();
    t.set(5);
    t.set_range(4_000_000_000, 130);
    assert!(t.get(5) && !t.get(4) && t.get(4_000_000_000) && t.get(4_000_000_129));
    assert!(!t.get(4_000_000_130) && !t.get(3_999_999_999));
    // Two leaves of 4 KiB and the pointers to ~122 k leaves (8 B each): ~1 MiB, not 500 MB.
    assert!(t.heap_bytes() < 2 << 20, "{}", t.heap_bytes());
}

/// Item 2: a UTF-8 byte-order mark on a headerless file is not a header (it used to drop the
/// first request).
#[test]
fn a_bom_does_not_drop_the_first_request() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        &dir,
        "bom.csv",
        "\u{feff}0,W,0,4096\n5,R,8192,4096\n".as_bytes(),
    );
    assert_eq!(requests(&p).unwrap(), vec![(0, 4096), (8192, 4096)]);
}

/// Item 2: carriage returns alone end lines (they used to merge 200 requests into one).
#[test]
fn cr_only_line_ends_are_lines() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..200)
        .map(|i| format!("{i},W,{},4096\r", i * 4096))
        .collect();
    let p = write(&dir, "cr.csv", text.as_bytes());
    assert_eq!(requests(&p).unwrap().len(), 200);
}

/// Item 2: an MQSim/SSDsim file (integer ns times) with one op value that is not 0/1 in its
/// first lines is not read as DiskSim (ms times): sniffing says it is not certain.
#[test]
fn an_uncertain_sniff_is_an_error_not_disksim() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for i in 0..40u64 {
        let op = if i == 3 { 2 } else { i % 2 };
        text += &format!("{} 0 {} 8 {op}\n", i * 1_000_000, i * 8);
    }
    let p = write(&dir, "mq.trace", text.as_bytes());
    let e = requests(&p).unwrap_err();
    assert!(e.contains("unrecognised trace format"), "{e}");
    // Named explicitly, the file reads, and the bad op is an error naming its line.
    let opts = TraceOptions {
        format: Some(TraceFormat::Mqsim),
        ..TraceOptions::default()
    };
    let err = match TraceReader::open(&p, &opts) {
        Err(e) => e.to_string(),
        Ok(mut rd) => loop {
            match rd.next_request() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("the op 2 line is an error"),
                Err(e) => break e.to_string(),
            }
        },
    };
    assert!(err.contains("line 4"), "{err}");
}

/// Item 2: an MSR file without the optional ResponseTime column is sniffed as MSR.
#[test]
fn msr_without_response_time_is_msr() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        &dir,
        "msr6.csv",
        b"128166372003061629,hm,0,Read,3154464768,4096\n128166372016382155,hm,0,Write,0,512\n",
    );
    assert_eq!(requests(&p).unwrap(), vec![(3154464768, 4096), (0, 512)]);
}

/// Item 5 (issue 20) and issue 28: a response above the histogram's initial 1-hour range keeps
/// its true value in the max, the mean and the percentiles (the histogram grows; before issue
/// 28 p50 and p99 of a saturated run read the 1-hour ceiling while the mean was above it).
#[test]
fn latencies_beyond_an_hour_keep_their_true_percentiles() {
    let mut l = nandlab_core::stats::Latency::default();
    let hour_ns = 3_600_000_000_000u64;
    l.record(1_000);
    for k in 0..100u64 {
        l.record(2 * hour_ns + k * 1_000_000_000);
    }
    let s = l.summary();
    let max = (2 * hour_ns + 99 * 1_000_000_000) as f64 / 1000.0;
    assert_eq!(s.max_us, Some(max));
    assert!(s.mean_us.unwrap() <= s.max_us.unwrap());
    // p50 of the 101 samples is the 51st: 2 h + 49 s, exact within the histogram's 0.1 %.
    let p50 = (2 * hour_ns + 49 * 1_000_000_000) as f64 / 1000.0;
    let got = s.p50_us.unwrap();
    assert!((got - p50).abs() <= p50 * 0.001, "p50 {got} vs {p50}");
    assert!(s.p50_us <= s.p99_us && s.p99_us <= s.max_us);
    // Merging keeps the grown range.
    let m = nandlab_core::stats::Latency::merged(&l, &nandlab_core::stats::Latency::default());
    assert_eq!(m.summary(), s);
}

/// Item 2: a blkparse `D` line with a missing field is an error naming its line, not a
/// skipped non-request line.
#[test]
fn a_broken_blkparse_dispatch_line_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        &dir,
        "blk.txt",
        b"  8,0    3        1     0.000000000   697  D   W 223490 + 8 [kjournald]\n  8,0    3        2     0.000001000   697  D   W 223490 +\n",
    );
    let e = requests(&p).unwrap_err();
    assert!(e.contains("line 2") && e.contains("nsectors"), "{e}");
}

/// Item 3: settings that sized something out of range or saturated the clock are one-line
/// config errors naming the key.
#[test]
fn out_of_range_settings_are_config_errors() {
    let text = std::fs::read_to_string(root().join("python/nandlab/configs/default.toml")).unwrap();
    for (set, key) in [
        ("timing.channel_mt_s=1e-9", "timing.channel_mt_s"),
        ("host.time_scale=1e-300", "host.time_scale"),
        ("device.blocks_per_plane=65536", "device.blocks_per_plane"),
    ] {
        let r = nandlab_core::config::load(
            &text,
            "default.toml",
            &[set.to_string(), "device.channels=1024".to_string()],
        )
        .and_then(|c| c.size_device(1 << 30).map(|_| ()));
        let e = r.expect_err(set).to_string();
        assert!(e.contains(key) && !e.contains('\n'), "{set}: {e}");
    }
}

/// Issue 28: a request 10^19 ns after the first used to end a `[cache]` run (time scale 100)
/// in "simulation stalled" (its scaled time saturated to the event queue's empty marker); any
/// arrival beyond 2^62 ns is now an error naming the request.
#[test]
fn an_arrival_beyond_the_time_range_is_an_error_not_a_stall() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        &dir,
        "far.csv",
        b"0,W,0,4096\n10000000000000000000,R,0,4096\n",
    );
    for preset in ["default", "flexecc"] {
        let cfg = root().join(format!("python/nandlab/configs/{preset}.toml"));
        let req = RunRequest {
            config_toml: std::fs::read_to_string(&cfg).unwrap(),
            config_path: Some(cfg),
            overrides: vec!["scheme.name=\"baseline\"".into()],
            scheme: None,
            trace_path: p.clone(),
            trace_options: TraceOptions::default(),
            flow_traces: Vec::new(),
        };
        let e = run(&req, &mut |_, _, _| {}).unwrap_err().to_string();
        // (The cache layer numbers the SSD operations it makes of the trace's requests.)
        assert!(
            e.contains("host request") && e.contains("2^62") && !e.contains('\n'),
            "{preset}: {e}"
        );
    }
}

/// Issue 28: error messages name the key the user set, as written.
#[test]
fn a_too_small_block_count_blames_the_block_count() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(&dir, "one.csv", b"0,W,0,4096\n");
    let e = run_trace(&p, &["device.blocks_per_plane=1"]).unwrap_err();
    assert!(
        e.contains("device.blocks_per_plane") && e.contains("= 1"),
        "{e}"
    );
    assert!(!e.contains("op_percent"), "{e}");
    let e = run_trace(&p, &["reliability.model=\"vth\"", "reliability.pe_grid=[]"]).unwrap_err();
    assert!(e.contains("reliability.pe_grid"), "{e}");
    assert!(!e.contains("cache"), "{e}");
}
