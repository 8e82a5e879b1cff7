//! The web UI's files: embedded at build time by `build.rs` (from `ui/dist`, or a
//! placeholder page when the UI was not built), or, for UI development, read once at start
//! from the directory named by `OXPROF_UI_DIR`.

use oxprof_api::http::{Asset, Assets};

mod generated {
    include!(concat!(env!("OUT_DIR"), "/assets.rs"));
}

/// The embedded files.
pub struct Embedded;

impl Assets for Embedded {
    fn get(&self, path: &str) -> Option<Asset> {
        let index = generated::FILES.binary_search_by(|(p, _)| (*p).cmp(path)).ok()?;
        let (name, bytes) = generated::FILES.get(index)?;
        Some(Asset { bytes, content_type: content_type(name) })
    }
}

/// Where the embedded files came from (for `--help` and logs).
pub fn source() -> &'static str {
    generated::SOURCE
}

/// A UI build read from a directory at start (`OXPROF_UI_DIR`): lets UI work (`vite build
/// --outDir DIR`) be tested against one prebuilt binary. Files are read once and kept for
/// the life of the process.
pub struct FromDir {
    files: Vec<(String, &'static [u8])>,
}

impl FromDir {
    /// Reads every file under `dir` (following no symlinks out of it: only regular files).
    pub fn load(dir: &std::path::Path) -> std::io::Result<Self> {
        let mut files = Vec::new();
        collect(dir, dir, &mut files)?;
        if !files.iter().any(|(name, _)| name == "index.html") {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "{}: no index.html (build the UI into it: cd ui && npx vite build --outDir DIR)",
                    dir.display()
                ),
            ));
        }
        files.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Self { files })
    }
}

fn collect(
    root: &std::path::Path,
    dir: &std::path::Path,
    out: &mut Vec<(String, &'static [u8])>,
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let path = entry.path();
        if kind.is_dir() {
            collect(root, &path, out)?;
        } else if kind.is_file() {
            let Ok(relative) = path.strip_prefix(root) else { continue };
            let name = relative.to_string_lossy().replace(std::path::MAIN_SEPARATOR, "/");
            // Leaked on purpose: a development server's UI lives as long as the process.
            out.push((name, Box::leak(std::fs::read(&path)?.into_boxed_slice())));
        }
    }
    Ok(())
}

impl Assets for FromDir {
    fn get(&self, path: &str) -> Option<Asset> {
        let index = self.files.binary_search_by(|(p, _)| p.as_str().cmp(path)).ok()?;
        let (name, bytes) = self.files.get(index)?;
        Some(Asset { bytes, content_type: content_type(name) })
    }
}

fn content_type(name: &str) -> &'static str {
    let extension = name.rsplit_once('.').map_or("", |(_, e)| e);
    match extension {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "wasm" => "application/wasm",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_is_embedded_and_files_are_sorted_for_lookup() {
        assert!(Embedded.get("index.html").is_some(), "from {}", source());
        assert!(generated::FILES.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(Embedded.get("../Cargo.toml").is_none());
    }

    #[test]
    fn a_ui_directory_is_served_from_memory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("assets")).unwrap();
        std::fs::write(dir.path().join("index.html"), "<p>dev</p>").unwrap();
        std::fs::write(dir.path().join("assets/app.js"), "1").unwrap();
        let ui = FromDir::load(dir.path()).unwrap();
        assert_eq!(ui.get("index.html").unwrap().bytes, b"<p>dev</p>");
        assert_eq!(ui.get("assets/app.js").unwrap().content_type, "text/javascript; charset=utf-8");
        assert!(ui.get("../index.html").is_none());
        std::fs::remove_file(dir.path().join("index.html")).unwrap();
        let err = FromDir::load(dir.path()).err().unwrap();
        assert!(err.to_string().contains("no index.html"), "{err}");
    }
}
