//! HLO modules of the committed refkit fixtures against XProf's own reading of them.

use oxprof_testkit::fixtures::{committed_profiles as fixture_profiles, repo_root};

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
