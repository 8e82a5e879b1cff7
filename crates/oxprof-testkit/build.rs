//! Generates prost types for the vendored `xplane.proto` with a pure-Rust protobuf compiler
//! (protox), so a fresh clone builds with cargo alone: [`crosscheck`](src/crosscheck.rs)
//! compares `oxprof-xspace`'s hand-written decoder with them.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/xplane.proto");
    let descriptors = protox::compile(["proto/xplane.proto"], ["proto"])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
