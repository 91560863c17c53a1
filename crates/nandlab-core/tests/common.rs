//! Helpers shared by the test files that run the simulator on a small device and read its
//! report: a run of a config over a list of requests, a report number by dotted path, and
//! host requests by byte range. Not a test file itself (it has no tests).

use nandlab_core::api::simulate_source;
use nandlab_core::config::{load, Config};
use nandlab_core::error::NandlabError;
use nandlab_core::host::VecSource;
use nandlab_core::trace::{HostRequest, Op};
use serde_json::Value;

/// The report of a run of `cfg` over `reqs`, as `api::simulate_source` makes it.
pub fn simulate(cfg: Config, reqs: &[HostRequest]) -> Result<Value, NandlabError> {
    let mut open = || Ok(VecSource::new(reqs.to_vec()));
    simulate_source(cfg, &mut open, Value::Null, &mut |_, _, _| {})
}

/// The report of a run of the TOML config `toml` with `overrides` (`key=value`) over `reqs`;
/// panics when the config is invalid or the run fails.
pub fn run(toml: &str, overrides: &[&str], reqs: Vec<HostRequest>) -> Value {
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let cfg = load(toml, "<test>", &ov).expect("config");
    simulate(cfg, &reqs).expect("run")
}

/// The number at dotted `path` (`host.read.mean_us`) of report `v`; panics when it is absent.
pub fn f(v: &Value, path: &str) -> f64 {
    path.split('.')
        .fold(v, |cur, k| &cur[k])
        .as_f64()
        .unwrap_or_else(|| panic!("{path} missing in report"))
}

/// A host request of `len_bytes` at `offset_bytes`, arriving at `t_ns`.
pub fn rq(t_ns: u64, op: Op, offset_bytes: u64, len_bytes: u64) -> HostRequest {
    HostRequest {
        arrival_ns: t_ns,
        op,
        offset_bytes,
        len_bytes,
    }
}

/// A small device with one program mode and one ECC kind: MLC, 2 channels, 64 pages of 4 KiB
/// per block, 64 MiB logical (no regions, no refresh).
pub const SMALL_DEV: &str = r#"
[device]
channels = 2
pages_per_block = 64
page_size_bytes = 4096
logical_capacity_bytes = 67108864
"#;

/// The report of a run on [`SMALL_DEV`] without preconditioning, `overrides` after that.
pub fn run_small(overrides: &[&str], reqs: Vec<HostRequest>) -> Value {
    let mut o = vec!["precondition.fill=\"none\""];
    o.extend_from_slice(overrides);
    run(SMALL_DEV, &o, reqs)
}
