//! The build fingerprint of what the persistent cache stores (`src/persist.rs`): a hash of
//! the sources whose output lands in it — every workspace crate's `src/` and `Cargo.toml`,
//! and `Cargo.lock` — embedded as `OXPROF_BUILD_FINGERPRINT`.
//!
//! Cache entries are keyed by it, so a build whose analyses differ from another's (a fixed
//! number, a new field) never answers from that build's entries, even under the same
//! version number. Builds of the same sources share their entries; the hash depends on
//! file contents and relative paths only (not on times or the checkout's location).

use std::path::{Path, PathBuf};
use xxhash_rust::xxh3::Xxh3;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest.join("../..");
    let mut inputs = vec![PathBuf::from("Cargo.toml"), PathBuf::from("Cargo.lock")];
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .map(|dir| dir.flatten().map(|entry| entry.path()).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    crates.sort();
    for dir in crates {
        let Some(name) = dir.file_name() else { continue };
        let krate = Path::new("crates").join(name);
        inputs.push(krate.join("Cargo.toml"));
        let mut sources = Vec::new();
        collect(&root, &krate.join("src"), &mut sources);
        sources.sort();
        inputs.push(krate.join("src"));
        inputs.extend(sources);
    }
    let mut hash = Xxh3::new();
    for input in &inputs {
        let path = root.join(input);
        println!("cargo:rerun-if-changed={}", path.display());
        if let Ok(bytes) = std::fs::read(&path) {
            // Path and length first: moving or splitting files changes the fingerprint.
            hash.update(input.to_string_lossy().as_bytes());
            hash.update(&(bytes.len() as u64).to_le_bytes());
            hash.update(&bytes);
        }
    }
    println!("cargo:rustc-env=OXPROF_BUILD_FINGERPRINT={:016x}", hash.digest());
}

/// Every file below `dir` (relative to `root`).
fn collect(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else { return };
    for entry in entries.flatten() {
        let relative = dir.join(entry.file_name());
        match entry.file_type() {
            Ok(t) if t.is_dir() => collect(root, &relative, out),
            Ok(t) if t.is_file() => out.push(relative),
            _ => {}
        }
    }
}
