//! The device model of issue 13: scheme/configuration mismatch errors, read-modify-write,
//! TRIM, multi-plane operations, program/erase suspension, the DRAM write cache and the
//! default drive. Latency tests run at low load, where each response is exactly its service
//! time, and state the expected value from the configured latencies.

use nandlab_core::api::check_config;
use std::path::PathBuf;

fn preset(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../configs")
        .join(format!("{name}.toml"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A device with one program mode, one ECC kind, MLC and no regions or refresh.
const PLAIN: &str = r#"
[device]
channels = 2
pages_per_block = 64
page_size_bytes = 4096
logical_capacity_bytes = 67108864
"#;

// ----- item 7: scheme/config mismatch -----------------------------------------------------

#[test]
fn a_scheme_the_device_cannot_serve_is_a_one_line_error_naming_the_preset() {
    for (scheme, preset_name) in [
        ("efm", "efm"),
        ("efm_static", "efm"),
        ("warm", "efm"),
        ("hotis", "efm"),
        ("tos18", "efm"),
        ("agcr", "xia-diffecc"),
        ("diffecc_wa", "xia-diffecc"),
        ("ida", "ida-tlc"),
        ("flexlevel", "flexlevel"),
    ] {
        let err = check_config(PLAIN, None, &[], Some(scheme))
            .err()
            .or_else(|| {
                // flexlevel checks its regions when the engine is built.
                let cfg = nandlab_core::config::load(
                    PLAIN,
                    "<test>",
                    &[format!("scheme.name=\"{scheme}\"")],
                )
                .unwrap();
                let mut open = || {
                    Ok(nandlab_core::host::VecSource::new(vec![
                        nandlab_core::trace::HostRequest {
                            arrival_ns: 0,
                            op: nandlab_core::trace::Op::Write,
                            offset_bytes: 0,
                            len_bytes: 4096,
                        },
                    ]))
                };
                nandlab_core::api::simulate_source(
                    cfg,
                    &mut open,
                    serde_json::Value::Null,
                    &mut |_, _| {},
                )
                .err()
            })
            .unwrap_or_else(|| panic!("{scheme} ran on a device it cannot serve"));
        let msg = err.to_string();
        assert!(!msg.contains('\n'), "{scheme}: {msg}");
        assert!(
            msg.contains(&format!("`{preset_name}`")),
            "{scheme} should name preset {preset_name}: {msg}"
        );
    }
}

#[test]
fn each_scheme_runs_on_its_own_preset() {
    for (scheme, preset_name, extra) in [
        ("efm", "efm", None),
        ("efm_static", "efm", None),
        ("warm", "efm", None),
        ("hotis", "efm", None),
        ("tos18", "efm", None),
        ("agcr", "efm", None),
        ("agcr", "xia-diffecc", None),
        ("diffecc_wa", "xia-diffecc", None),
        ("ida", "ida-tlc", Some("refresh.period_s=20.0")),
        ("ida", "ida-tlc", Some("precondition.refresh_before_replay=true")),
        ("baseline", "default", None),
    ] {
        let ov: Vec<String> = extra.into_iter().map(String::from).collect();
        check_config(&preset(preset_name), None, &ov, Some(scheme))
            .unwrap_or_else(|e| panic!("{scheme} on {preset_name}: {e}"));
    }
    // IDA without any data refresh does nothing IDA does.
    let off = ["refresh.period_s=0.0".to_string()];
    let e = check_config(&preset("ida-tlc"), None, &off, Some("ida")).unwrap_err();
    assert!(e.to_string().contains("refresh"), "{e}");
}
