//! Helpers shared by the tests that compare oxprof with XProf's references: where the
//! repository and the third-party profiles are, reading (gzipped) profiles and JSON
//! references.

use serde::de::DeserializeOwned;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `../shared/testdata/external` (or `OXPROF_EXTERNAL_TESTDATA`), whether present or not.
pub fn external_path() -> PathBuf {
    std::env::var_os("OXPROF_EXTERNAL_TESTDATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/testdata/external"))
}

/// The third-party profiles folder, or `None` with a SKIP note when it is absent.
pub fn external_root() -> Option<PathBuf> {
    let dir = external_path();
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("SKIP: {} is absent; third-party profiles not checked", dir.display());
        None
    }
}

/// Text of `path`, gunzipped when it ends in `.gz`, else of `path` or `path.gz`.
pub fn read_text(path: &Path) -> String {
    if path.extension().is_none_or(|e| e != "gz")
        && let Ok(text) = std::fs::read_to_string(path)
    {
        return text;
    }
    let gz = if path.extension().is_some_and(|e| e == "gz") {
        path.to_path_buf()
    } else {
        PathBuf::from(format!("{}.gz", path.display()))
    };
    let file = std::fs::File::open(&gz).unwrap_or_else(|e| panic!("{}: {e}", gz.display()));
    let mut text = String::new();
    flate2::read::GzDecoder::new(file).read_to_string(&mut text).unwrap_or_else(|e| panic!("{}: {e}", gz.display()));
    text
}

/// Decodes a profile file (`.xplane.pb`, gzip-compressed or not) for a test: analyses do no
/// IO, so their tests read files here rather than through `oxprof-format`.
pub fn load_xspace(path: &Path) -> Result<oxprof_model::XSpace, oxprof_xspace::DecodeError> {
    let raw = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if !raw.starts_with(&[0x1f, 0x8b]) {
        return oxprof_xspace::decode_xspace(&raw);
    }
    let mut bytes = Vec::new();
    flate2::read::MultiGzDecoder::new(&raw[..])
        .read_to_end(&mut bytes)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    oxprof_xspace::decode_xspace(&bytes)
}

/// A JSON reference.
pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&read_text(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A JSON reference read as `T` (XProf's OpStats as oxprof's types, say: fields `T` does
/// not model are dropped).
pub fn read_json_as<T: DeserializeOwned>(path: &Path) -> T {
    serde_json::from_str(&read_text(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
