//! Replay one trace on one config and print the report's headline numbers.
//!
//! ```text
//! cargo run --release --example replay -- CONFIG.toml TRACE [key=value ...]
//! ```
//!
//! With `NANDLAB_JSON=path` the full JSON report is written there too.

use std::path::PathBuf;

use nandlab_core::api::{run, RunRequest};
use nandlab_core::trace::TraceOptions;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: replay CONFIG.toml TRACE [key=value ...]");
        std::process::exit(2);
    }
    let config_toml = match std::fs::read_to_string(&args[0]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}: {e}", args[0]);
            std::process::exit(2);
        }
    };
    let req = RunRequest {
        config_toml,
        config_path: Some(PathBuf::from(&args[0])),
        overrides: args[2..].to_vec(),
        scheme: None,
        trace_path: PathBuf::from(&args[1]),
        trace_options: TraceOptions::default(),
        flow_traces: Vec::new(),
    };
    match run(&req, &mut |_, _, _| {}) {
        Ok(json) => {
            if let Ok(out) = std::env::var("NANDLAB_JSON") {
                if let Err(e) = std::fs::write(&out, &json) {
                    eprintln!("{out}: {e}");
                }
            }
            let v: serde_json::Value = serde_json::from_str(&json).unwrap_or_default();
            println!(
                "requests {} wall_s {:.3} replay_wall_s {:.3} host_requests_per_s {:.0} WA {:.3}",
                v["host"]["requests"],
                v["timing"]["wall_s"].as_f64().unwrap_or(0.0),
                v["timing"]["replay_wall_s"].as_f64().unwrap_or(0.0),
                v["timing"]["host_requests_per_s"].as_f64().unwrap_or(0.0),
                v["write_amplification"].as_f64().unwrap_or(0.0)
            );
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
