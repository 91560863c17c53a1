//! Parse a trace without simulating and print the request count and parse rate (the
//! denominator of the sim/parse ratio `nandlab bench` reports).
//!
//! ```text
//! cargo run --release --example parse_only -- TRACE
//! ```

use std::path::Path;

use nandlab_core::api::parse_only;
use nandlab_core::trace::TraceOptions;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: parse_only TRACE");
        std::process::exit(2);
    };
    match parse_only(Path::new(&path), &TraceOptions::default()) {
        Ok(json) => println!("{json}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
