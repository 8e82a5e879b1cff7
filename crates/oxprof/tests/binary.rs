//! The built `oxprof` binary is linked as `build.rs` says: with packed relative relocations
//! (and the glibc requirement that makes an older loader refuse it cleanly) when the build
//! asked for them, and it starts.

use std::process::Command;

const BINARY: &str = env!("CARGO_BIN_EXE_oxprof");

/// `readelf ARGS BINARY`'s output, or None when readelf is not installed.
fn readelf(args: &[&str]) -> Option<String> {
    let output = Command::new("readelf").args(args).arg(BINARY).output().ok()?;
    assert!(output.status.success(), "readelf {args:?} failed: {}", String::from_utf8_lossy(&output.stderr));
    Some(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[test]
fn relative_relocations_are_packed_when_the_build_asked() {
    let starts = Command::new(BINARY).arg("--version").output().unwrap();
    assert!(starts.status.success(), "oxprof --version: {starts:?}");

    let Some(dynamic) = readelf(&["-d"]) else {
        eprintln!("readelf not installed: the link itself is not checked");
        return;
    };
    let packed = dynamic.contains("(RELR)");
    if env!("OXPROF_PACKED_RELOCS") == "1" {
        assert!(packed, "build.rs asked for DT_RELR but the binary has none:\n{dynamic}");
        let versions = readelf(&["-V"]).unwrap();
        assert!(
            versions.contains("GLIBC_ABI_DT_RELR"),
            "DT_RELR without the GLIBC_ABI_DT_RELR requirement would crash an older loader:\n{versions}"
        );
    } else {
        assert!(!packed, "build.rs did not ask for DT_RELR, yet the binary has it:\n{dynamic}");
    }
}
