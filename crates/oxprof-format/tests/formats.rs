//! The format seam on real files: every XSpace the repository and the external test data
//! hold is recognised by its content (whatever its name), and a file of no known format
//! gets one line naming what it looks like and the formats oxprof reads.

use oxprof_format::{Detected, Format, LoadError, detect, load_xspace};
use std::io::Read;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.xplane.pb[.gz]` under the repository's testdata and the external test data.
fn xspace_files() -> Vec<PathBuf> {
    let roots = [repo().join("testdata"), repo().join("../shared/testdata/external")];
    let mut files = Vec::new();
    for root in roots.iter().filter(|r| r.is_dir()) {
        for entry in walkdir::WalkDir::new(root).into_iter().flatten() {
            let name = entry.file_name().to_string_lossy();
            if entry.file_type().is_file() && (name.ends_with(".xplane.pb") || name.ends_with(".xplane.pb.gz")) {
                files.push(entry.into_path());
            }
        }
    }
    files
}

fn head_of(path: &Path) -> Vec<u8> {
    let mut head = Vec::new();
    std::fs::File::open(path).unwrap().take(oxprof_format::formats::SNIFF_BYTES as u64).read_to_end(&mut head).unwrap();
    head
}

#[test]
fn every_xspace_is_recognised_by_its_content() {
    let files = xspace_files();
    assert!(!files.is_empty(), "the repository's own fixtures are missing");
    for file in &files {
        let gzip = file.extension().is_some_and(|e| e == "gz");
        assert_eq!(detect(&head_of(file)), Some(Detected { format: Format::XSpace, gzip }), "{}", file.display());
    }
}

#[test]
fn a_profile_under_any_name_loads_by_its_content() {
    let original = xspace_files().into_iter().min_by_key(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(u64::MAX));
    let original = original.expect("fixtures");
    let dir = tempfile::tempdir().unwrap();
    let renamed = dir.path().join("profile.bin");
    std::fs::copy(&original, &renamed).unwrap();
    let a = load_xspace(&original).unwrap();
    let b = load_xspace(&renamed).unwrap();
    assert_eq!(a.planes.len(), b.planes.len());
}

#[test]
fn an_unknown_format_is_one_line_naming_the_formats_we_read() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("metrics.json");
    std::fs::write(&json, b"{\"loss\": [1.0, 0.5]}\n").unwrap();
    let err = load_xspace(&json).unwrap_err();
    assert!(matches!(err, LoadError::UnknownFormat { .. }), "{err:?}");
    let message = err.to_string();
    assert!(!message.contains('\n'), "{message}");
    assert!(
        message.contains("metrics.json: not a profile oxprof reads (JSON of no known profile format)"),
        "{message}"
    );
    assert!(message.contains("XSpace (.xplane.pb, .xplane.pb.gz"), "{message}");
    // A damaged file whose name claims a format gets that format's diagnosis instead.
    let damaged = dir.path().join("host.xplane.pb");
    std::fs::write(&damaged, b"{\"loss\": 1}").unwrap();
    let err = load_xspace(&damaged).unwrap_err();
    assert!(matches!(err, LoadError::Decode { .. }), "{err:?}");
}
