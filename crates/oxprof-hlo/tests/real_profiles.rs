//! HLO modules of the committed refkit fixtures against XProf's own reading of them.

use std::io::Read;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files_with_suffix(dir: &Path, suffix: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files_with_suffix(&p, suffix, out);
        } else if p.to_string_lossy().ends_with(suffix) {
            out.push(p);
        }
    }
}

fn fixture_profiles() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    files_with_suffix(&repo_root().join("testdata/profiles"), ".xplane.pb.gz", &mut files);
    assert!(files.len() >= 5, "expected the committed fixtures under testdata/profiles");
    files
        .into_iter()
        .map(|p| {
            let mut bytes = Vec::new();
            flate2::read::GzDecoder::new(std::fs::File::open(&p).unwrap()).read_to_end(&mut bytes).unwrap();
            (p, bytes)
        })
        .collect()
}

/// HLO modules decode, and their program ids and names are those XProf lists
/// (`program_id_to_name_map` of its OpStats).
#[test]
fn hlo_modules_match_xprof_program_names() {
    let root = repo_root().join("testdata/profiles");
    let mut checked = 0;
    for (path, bytes) in fixture_profiles() {
        let space = oxprof_xspace::decode_xspace(&bytes).unwrap();
        let (modules, failed) = oxprof_hlo::hlo_modules(&space);
        assert_eq!(failed, 0);
        let name = path.strip_prefix(&root).unwrap().iter().next().unwrap().to_owned();
        let op_stats: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(root.join(&name).join("xprof_out/op_stats.json")).unwrap())
                .unwrap();
        let expected = op_stats["program_id_to_name_map"].as_object().unwrap();
        assert_eq!(modules.len(), expected.len(), "{}", path.display());
        for (id, module) in &modules {
            assert_eq!(expected[&id.to_string()], module.name.as_str(), "{}", path.display());
        }
        checked += modules.len();
    }
    assert!(checked > 0);
}
