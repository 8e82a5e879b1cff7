//! Generates the prost messages and the tonic client/server of the vendored TSL
//! `profiler_service.proto` with a pure-Rust protobuf compiler (protox), so a fresh
//! clone builds with cargo alone (no protoc).
fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let descriptors = protox::compile(["tsl/profiler/protobuf/profiler_service.proto"], ["proto"])?;
    tonic_prost_build::configure().build_client(true).build_server(true).compile_fds(descriptors)?;
    Ok(())
}
