//! Intentionally empty: it gives `[build-dependencies]` in Cargo.toml a build script to belong
//! to, so that the proc-macro dependencies (syn) are built with the same features whether
//! nandlab-core is built for the Python extension or for its own tests. See Cargo.toml.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
}
