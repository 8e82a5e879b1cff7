//! ARCHITECTURE.md stays a true map: its crate table lists every crate with exactly the
//! oxprof dependencies its Cargo.toml declares, and every file path it names exists.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn architecture() -> String {
    std::fs::read_to_string(repo_root().join("ARCHITECTURE.md")).unwrap()
}

/// The `oxprof-*` crates a manifest's `[dependencies]` (not dev or build) names.
fn normal_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut section = String::new();
    let mut out = BTreeSet::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line.to_string();
        } else if section == "[dependencies]"
            && let Some(name) = line.split(['.', ' ', '=']).next().filter(|n| n.starts_with("oxprof-"))
        {
            out.insert(name.trim_start_matches("oxprof-").to_string());
        }
    }
    out
}

#[test]
fn the_crate_table_matches_the_manifests() {
    let doc = architecture();
    let mut documented = BTreeSet::new();
    for row in doc.lines().filter(|l| l.starts_with("| `oxprof")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let krate = cells[1].trim_matches('`');
        documented.insert(krate.to_string());
        let deps_cell = cells[3];
        let manifest = std::fs::read_to_string(repo_root().join("crates").join(krate).join("Cargo.toml")).unwrap();
        let actual = normal_dependencies(&manifest);
        let claimed: BTreeSet<String> =
            if deps_cell == "—" { BTreeSet::new() } else { deps_cell.split(", ").map(str::to_string).collect() };
        assert_eq!(claimed, actual, "ARCHITECTURE.md's row for {krate} is wrong");
    }
    let crates: BTreeSet<String> = std::fs::read_dir(repo_root().join("crates"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(documented, crates, "ARCHITECTURE.md's crate table and crates/ differ");
}

#[test]
fn every_path_it_names_exists() {
    let doc = architecture();
    let mut missing = Vec::new();
    for quoted in doc.split('`').skip(1).step_by(2) {
        let looks_like_path = quoted.contains('/')
            && !quoted.contains(' ')
            && [".rs", ".ts", ".md", ".sh"].iter().any(|ext| quoted.ends_with(ext));
        // A glob names the files of its directory.
        let path = match quoted.rfind('*') {
            Some(_) => quoted.rsplit_once('/').map_or(quoted, |(dir, _)| dir),
            None => quoted,
        };
        if looks_like_path && !repo_root().join(path).exists() {
            missing.push(quoted.to_string());
        }
    }
    assert!(missing.is_empty(), "ARCHITECTURE.md names paths that do not exist: {missing:?}");
}
