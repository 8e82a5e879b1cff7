//! The encoder against real profiles: decode → encode → decode gives an equal model on every
//! committed profile under `testdata/` and every third-party capture in
//! `../shared/testdata/external/` (read in place, skipped when absent); and XProf's own
//! protobuf classes read the encoded files exactly as they read the originals (when the
//! refkit venv with TensorFlow exists).

use oxprof_model::compare::first_difference;
use oxprof_xspace::{decode_xspace, encode_xspace};
use std::io::Read;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn profiles_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            profiles_under(&p, out);
        } else if p.file_name().is_some_and(|n| n.to_string_lossy().contains(".xplane.pb")) {
            out.push(p);
        }
    }
}

/// Every profile's name and bytes (gunzipped): the committed ones, then the third-party
/// ones when present.
fn profiles() -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    profiles_under(&repo_root().join("testdata"), &mut files);
    assert!(files.len() >= 5, "expected the committed fixtures under testdata/profiles");
    let external = std::env::var_os("OXPROF_EXTERNAL_TESTDATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/testdata/external"));
    if external.is_dir() {
        let before = files.len();
        profiles_under(&external, &mut files);
        assert!(files.len() > before, "no profiles in {}", external.display());
    } else {
        eprintln!("SKIP: {} is absent; third-party profiles not round-tripped", external.display());
    }
    files
        .into_iter()
        .map(|path| {
            let raw = std::fs::read(&path).unwrap();
            let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
                let mut out = Vec::new();
                flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut out).unwrap();
                out
            } else {
                raw
            };
            (path.display().to_string(), bytes)
        })
        .collect()
}

#[test]
fn every_profile_round_trips_through_the_encoder() {
    for (name, bytes) in profiles() {
        let space = decode_xspace(&bytes).unwrap();
        let encoded = encode_xspace(&space);
        let again = decode_xspace(&encoded).unwrap();
        assert_eq!(first_difference(&space, &again), None, "{name}");
        if space.diagnostics.is_empty() {
            assert!(again.diagnostics.is_empty(), "{name}: {:?}", again.diagnostics);
        }
        assert_eq!(encode_xspace(&again), encoded, "{name}: a second encoding differs");
        if name.starts_with(&repo_root().join("testdata").display().to_string()) {
            // XProf's writers put fields in field-number order, as the encoder does.
            assert!(encoded == bytes, "{name}: the encoded bytes differ from the original's");
        }
        let same = if encoded == bytes { "the same bytes" } else { "other bytes" };
        eprintln!("{name}: {} bytes, encoded {} bytes ({same})", bytes.len(), encoded.len());
    }
}

/// The refkit's Python, if its venv exists.
fn refkit_python() -> Option<PathBuf> {
    let venv = std::env::var_os("OXPROF_REFKIT_VENV")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/oxprof-refkit/venv")))?;
    let python = venv.join("bin/python");
    python.is_file().then_some(python)
}

/// `xplane_summary.py` (XProf's `xplane_pb2` classes) prints the same summary of each encoded
/// file as of its original: hostnames, errors, warnings, and per plane its id, name, line,
/// event, event stat and metadata counts, plane stats, and per line its ids, names,
/// timestamps, event count, time span and most frequent event names.
#[test]
fn xprof_protobuf_classes_read_encoded_files_like_the_originals() {
    let Some(python) = refkit_python() else {
        eprintln!("SKIP: no refkit venv (~/.cache/oxprof-refkit/venv); XProf's classes not run");
        return;
    };
    let script = repo_root().join("../shared/refkit/xplane_summary.py");
    if !script.is_file() {
        eprintln!("SKIP: {} is absent; XProf's classes not run", script.display());
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let profiles = profiles();
    let mut args = Vec::new();
    for (i, (_, bytes)) in profiles.iter().enumerate() {
        let space = decode_xspace(bytes).unwrap();
        let original = tmp.path().join(format!("{i}.original.xplane.pb"));
        let encoded = tmp.path().join(format!("{i}.encoded.xplane.pb"));
        std::fs::write(&original, bytes).unwrap();
        std::fs::write(&encoded, encode_xspace(&space)).unwrap();
        args.extend([original, encoded]);
    }
    let json = tmp.path().join("summary.json");
    let status = std::process::Command::new(&python)
        .arg(&script)
        .args(&args)
        .arg("--json")
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{} {} failed", python.display(), script.display());
    let summaries: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let summaries = summaries.as_array().unwrap();
    assert_eq!(summaries.len(), 2 * profiles.len());
    for ((name, _), pair) in profiles.iter().zip(summaries.chunks(2)) {
        let strip = |s: &serde_json::Value| {
            let mut s = s.clone();
            let object = s.as_object_mut().unwrap();
            object.remove("file");
            object.remove("bytes");
            s
        };
        let (original, encoded) = (strip(&pair[0]), strip(&pair[1]));
        assert!(original["num_planes"].as_u64().unwrap() > 0, "{name}");
        assert_eq!(original, encoded, "{name}");
    }
}
