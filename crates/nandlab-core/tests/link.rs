//! The host interface link (`[link]`, issue 35; `src/host/link.rs`): what a PCIe link adds to an
//! idle request, that it caps throughput, and the configurations it refuses.

use nandlab_core::trace::{HostRequest, Op};
use serde_json::Value;

use crate::common::{f, rq, run_small as run, SMALL_DEV as DEV};

const PCIE: &str = "link.interface=\"pcie\"";

/// `n` writes of `len` bytes, then reads of the same, `gap_ns` apart.
fn write_then_read(n: u64, len: u64, gap_ns: u64) -> Vec<HostRequest> {
    let mut v = Vec::new();
    for (k, op) in [(0, Op::Write), (1, Op::Read)] {
        for i in 0..n {
            v.push(rq((k * n + i) * gap_ns, op, i * len, len));
        }
    }
    v
}

/// Wire time of `payload` bytes on a Gen3 link of `lanes` lanes (256 B TLP payload, 28 B
/// overhead per TLP), ns, rounded up as the model rounds each message.
fn gen3_ns(payload: u64, lanes: u64) -> u64 {
    let tlps = payload.div_ceil(256).max(1);
    let bytes = payload + 28 * tlps;
    (bytes as f64 / (lanes as f64 * 8.0 * 128.0 / 130.0 / 8.0)).ceil() as u64
}

#[test]
fn an_idle_request_pays_its_messages_and_data_on_the_link_as_service() {
    let reqs = write_then_read(32, 4096, 5_000_000);
    let none = run(&[], reqs.clone());
    let link = run(&[PCIE, "link.lanes=1"], reqs);
    assert!(none.get("link").is_none(), "no link block without a link");
    // downstream: doorbell, SQE (+ a write's data); upstream: (a read's data +) CQE, MSI-X
    let down = gen3_ns(4, 1) + gen3_ns(64, 1);
    let up = gen3_ns(16, 1) + gen3_ns(4, 1);
    let read_extra = down + gen3_ns(4096, 1) + up;
    let write_extra = down + gen3_ns(4096, 1) + up;
    for (k, extra) in [("read", read_extra), ("write", write_extra)] {
        let d = f(&link, &format!("host.{k}.mean_us")) - f(&none, &format!("host.{k}.mean_us"));
        assert!(
            (d - extra as f64 / 1e3).abs() < 1e-6,
            "{k}: +{d} µs, expected +{} µs",
            extra as f64 / 1e3
        );
        // an idle link: the transfer is service, not queue wait
        assert_eq!(
            f(&link, &format!("host.wait.{k}.mean_us")),
            f(&none, &format!("host.wait.{k}.mean_us")),
            "{k}"
        );
    }
    let l = &link["link"];
    assert_eq!(l["downstream"]["transfers"], 64);
    assert_eq!(l["upstream"]["transfers"], 64);
    assert_eq!(
        l["downstream"]["payload_bytes"].as_u64().unwrap(),
        64 * (4 + 64) + 32 * 4096
    );
    assert_eq!(
        l["upstream"]["payload_bytes"].as_u64().unwrap(),
        64 * (16 + 4) + 32 * 4096
    );
    assert_eq!(l["downstream"]["wait_mean_us"], 0.0);
}

#[test]
fn a_narrow_link_caps_throughput_and_its_backlog_is_queue_wait() {
    // 256 reads of 128 KiB arriving together (32 MiB upstream) on 64 dies, whose flash reads
    // far faster than the narrow link's 250 MB/s.
    let mut reqs = write_then_read(256, 128 << 10, 0);
    for (i, r) in reqs.iter_mut().enumerate() {
        // the writes long before the reads, the reads all at once
        r.arrival_ns = if r.op == Op::Write {
            i as u64 * 20_000_000
        } else {
            100_000_000_000
        };
    }
    let dev = [
        "device.channels=16",
        "device.chips_per_channel=4",
        "device.logical_capacity_bytes=1073741824",
    ];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = dev.to_vec();
        v.push(PCIE);
        v.extend_from_slice(extra);
        v
    };
    let wide = run(
        &with(&["link.pcie_generation=5", "link.lanes=16"]),
        reqs.clone(),
    );
    let narrow = run(&with(&["link.pcie_generation=1", "link.lanes=1"]), reqs);
    let last = |r: &Value| f(r, "sim.last_completion_s") - 100.0;
    // Gen1 x1 moves at most 250 MB/s of payload (less its TLP overhead)
    let bytes = 256.0 * 131072.0;
    assert!(
        bytes / last(&narrow) <= 250e6,
        "{} B/s over a 250 MB/s link",
        bytes / last(&narrow)
    );
    assert!(
        bytes / last(&narrow) > 200e6,
        "the link, not the flash, is the bound"
    );
    assert!(last(&wide) < last(&narrow) / 2.0);
    assert!(f(&narrow, "link.upstream.wait_mean_us") > 1000.0);
    assert!(f(&narrow, "host.wait.read.mean_us") > f(&wide, "host.wait.read.mean_us"));
}

#[test]
fn a_link_run_is_deterministic() {
    let reqs = write_then_read(64, 16384, 100_000);
    let mut a = run(&[PCIE], reqs.clone());
    let mut b = run(&[PCIE], reqs);
    a.as_object_mut().unwrap().remove("timing");
    b.as_object_mut().unwrap().remove("timing");
    assert_eq!(a, b);
}

#[test]
fn a_link_is_refused_where_it_is_not_modelled() {
    for (over, key) in [
        (vec!["link.lanes=8"], "link.interface"),
        (vec![PCIE, "link.lanes=3"], "link.lanes"),
        (vec![PCIE, "link.pcie_generation=6"], "link.pcie_generation"),
        (
            vec![PCIE, "link.max_payload_bytes=100"],
            "link.max_payload_bytes",
        ),
    ] {
        let o: Vec<String> = over.iter().map(|s| s.to_string()).collect();
        let e = nandlab_core::config::load(DEV, "<test>", &o)
            .unwrap_err()
            .to_string();
        assert!(e.contains(key), "{over:?}: {e}");
    }
    let osd = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../python/nandlab/configs/dmm.toml"),
    )
    .unwrap();
    let e = nandlab_core::config::load(&osd, "dmm.toml", &[PCIE.to_string()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("[osd]") && e.contains("remove [link]"), "{e}");
}
