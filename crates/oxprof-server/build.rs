//! Embeds the web UI: lists every file of `ui/dist` (or, when the UI is not built, of
//! `placeholder-ui/`) into `$OUT_DIR/assets.rs` as `include_bytes!` entries, so that
//! `cargo build` alone yields a binary that serves the UI.

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let dist = manifest.join("../../ui/dist");
    let placeholder = manifest.join("placeholder-ui");
    println!("cargo:rerun-if-changed={}", dist.display());
    println!("cargo:rerun-if-changed={}", placeholder.display());
    println!("cargo:rerun-if-env-changed=OXPROF_UI_DIST");
    let chosen = match std::env::var_os("OXPROF_UI_DIST") {
        Some(dir) => PathBuf::from(dir),
        None if dist.join("index.html").is_file() => dist,
        None => placeholder,
    };
    let root = chosen.canonicalize().unwrap_or(chosen);
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    files.sort();
    let mut out = String::from(
        "/// Embedded UI files: (path relative to the UI root, bytes).\npub static FILES: &[(&str, &[u8])] = &[\n",
    );
    for (relative, absolute) in &files {
        out.push_str(&format!("    ({relative:?}, include_bytes!({absolute:?})),\n"));
    }
    out.push_str("];\n");
    out.push_str(&format!(
        "/// Where the files came from.\npub const SOURCE: &str = {:?};\n",
        root.display().to_string()
    ));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out_dir.join("assets.rs"), out).expect("write assets.rs");
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, files);
        } else if let Ok(relative) = path.strip_prefix(root) {
            let relative = relative.to_string_lossy().replace('\\', "/");
            files.push((relative, path.display().to_string()));
        }
    }
}
