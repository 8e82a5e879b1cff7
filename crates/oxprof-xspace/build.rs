//! With the `crosscheck` feature: generates prost types for the vendored `xplane.proto`
//! with a pure-Rust protobuf compiler (protox), so a fresh clone builds with cargo alone.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/xplane.proto");
    #[cfg(feature = "crosscheck")]
    {
        let descriptors = protox::compile(["proto/xplane.proto"], ["proto"])?;
        prost_build::Config::new().compile_fds(descriptors)?;
    }
    Ok(())
}
