//! The web UI's files, embedded at build time by `build.rs` (from `ui/dist`, or a
//! placeholder page when the UI was not built).

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
}
