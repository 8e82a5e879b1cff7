//! ARCHITECTURE.md stays a short, true map: its crate table lists every crate with exactly
//! the oxprof dependencies its Cargo.toml declares, its command list is the CLI's, every file
//! path it (and the manual's detail page) names exists, and it stays short, as README.md
//! does; the analyses write no bytes themselves (that is `oxprof-wire`'s job); and
//! `scripts/README.md` lists every script, as `docs/benchmarks.md` is what its script writes.

use std::collections::{BTreeMap, BTreeSet};
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

/// The crate table's rows, in order: each crate and the oxprof crates it depends on.
fn crate_rows(doc: &str) -> Vec<(String, Vec<String>)> {
    doc.lines()
        .filter(|l| l.starts_with("| `oxprof"))
        .map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let deps = if cells[3] == "—" { Vec::new() } else { cells[3].split(", ").map(str::to_string).collect() };
            (cells[1].trim_matches('`').to_string(), deps)
        })
        .collect()
}

/// "Dependencies point down this list, never up": every crate depends only on crates in
/// rows above its own (with the table checked against the manifests above, this checks the
/// manifests).
#[test]
fn dependencies_point_down_the_table() {
    let rows = crate_rows(&architecture());
    let mut above = BTreeSet::new();
    let mut upward = Vec::new();
    for (krate, deps) in rows {
        for dep in deps {
            if !above.contains(&format!("oxprof-{dep}")) {
                upward.push(format!("{krate} -> oxprof-{dep}"));
            }
        }
        above.insert(krate);
    }
    assert!(upward.is_empty(), "dependencies that point up ARCHITECTURE.md's crate table: {upward:?}");
}

/// Test helpers are never shipped: no crate has `oxprof-testkit` as a normal or build
/// dependency, and the testkit is not published.
#[test]
fn the_testkit_is_only_a_dev_dependency() {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(repo_root().join("crates")).unwrap().flatten() {
        let Ok(manifest) = std::fs::read_to_string(entry.path().join("Cargo.toml")) else { continue };
        let mut section = String::new();
        for line in manifest.lines().map(str::trim) {
            if line.starts_with('[') {
                section = line.to_string();
            } else if line.starts_with("oxprof-testkit") && section != "[dev-dependencies]" {
                found.push(format!("{} ({section})", entry.file_name().to_string_lossy()));
            }
        }
    }
    assert!(found.is_empty(), "oxprof-testkit outside [dev-dependencies]: {found:?}");
    let testkit = std::fs::read_to_string(repo_root().join("crates/oxprof-testkit/Cargo.toml")).unwrap();
    assert!(testkit.lines().any(|l| l.replace(' ', "") == "publish=false"), "oxprof-testkit must not be published");
}

/// The repository paths quoted in `doc` (in backticks) that do not exist.
fn missing_paths(doc: &str) -> Vec<String> {
    let mut missing = Vec::new();
    for quoted in doc.split('`').skip(1).step_by(2) {
        let looks_like_path = quoted.contains('/')
            && !quoted.contains(' ')
            && [".rs", ".ts", ".md", ".sh", ".py", ".mjs"].iter().any(|ext| quoted.ends_with(ext));
        // A glob names the files of its directory.
        let path = match quoted.rfind('*') {
            Some(_) => quoted.rsplit_once('/').map_or(quoted, |(dir, _)| dir),
            None => quoted,
        };
        if looks_like_path && !repo_root().join(path).exists() {
            missing.push(quoted.to_string());
        }
    }
    missing
}

#[test]
fn every_path_it_names_exists() {
    let missing = missing_paths(&architecture());
    assert!(missing.is_empty(), "ARCHITECTURE.md names paths that do not exist: {missing:?}");
    let detail = std::fs::read_to_string(repo_root().join("docs/reference/internals.md")).unwrap();
    let missing = missing_paths(&detail);
    assert!(missing.is_empty(), "docs/reference/internals.md names paths that do not exist: {missing:?}");
}

/// The front doors stay short: the detail lives in the manual (`docs/`).
#[test]
fn the_front_doors_stay_short() {
    for (file, most) in [("ARCHITECTURE.md", 200), ("README.md", 250)] {
        let lines = std::fs::read_to_string(repo_root().join(file)).unwrap().lines().count();
        assert!(lines <= most, "{file} has {lines} lines, at most {most}: move detail into the manual (docs/)");
    }
}

/// The subcommands `oxprof --help` lists (without clap's `help`).
fn cli_subcommands() -> BTreeSet<String> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_oxprof")).arg("--help").output().unwrap();
    assert!(out.status.success(), "oxprof --help failed");
    let help = String::from_utf8(out.stdout).unwrap();
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// The first cells of the table under `## Commands` in ARCHITECTURE.md.
fn documented_commands(doc: &str) -> BTreeSet<String> {
    doc.lines()
        .skip_while(|l| l.trim() != "## Commands")
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| l.starts_with("| `"))
        .filter_map(|row| row.split('|').nth(1))
        .map(|cell| cell.trim().trim_matches('`').to_string())
        .collect()
}

#[test]
fn the_command_list_is_the_clis() {
    let documented = documented_commands(&architecture());
    assert!(!documented.is_empty(), "ARCHITECTURE.md has no command list under `## Commands`");
    assert_eq!(documented, cli_subcommands(), "ARCHITECTURE.md's command list and `oxprof --help` differ");
}

/// The files under `dir`, as paths relative to `base` (Python's byte-code caches left out).
fn files_under(base: &Path, dir: &Path, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            if entry.file_name() != "__pycache__" {
                files_under(base, &path, out);
            }
        } else if path.extension().is_none_or(|ext| ext != "pyc") {
            out.insert(path.strip_prefix(base).unwrap().to_string_lossy().into_owned());
        }
    }
}

/// The scripts `scripts/README.md` lists: the first quoted path of each list item, before
/// its `## Old names` section.
fn indexed_scripts(index: &str) -> BTreeSet<String> {
    index
        .lines()
        .take_while(|l| !l.starts_with("## Old names"))
        .filter_map(|l| l.strip_prefix("- `"))
        .filter_map(|rest| rest.split_once('`'))
        .map(|(path, _)| path.to_string())
        .collect()
}

/// `scripts/README.md` is the index of `scripts/`: every file there is listed, and every
/// listed path exists.
#[test]
fn the_scripts_index_lists_every_script() {
    let dir = repo_root().join("scripts");
    let mut files = BTreeSet::new();
    files_under(&dir, &dir, &mut files);
    files.remove("README.md");
    let listed = indexed_scripts(&std::fs::read_to_string(dir.join("README.md")).unwrap());
    let unlisted: Vec<_> = files.difference(&listed).collect();
    let missing: Vec<_> = listed.difference(&files).collect();
    assert!(
        unlisted.is_empty(),
        "scripts missing from scripts/README.md (one line each, with its purpose): {unlisted:?}"
    );
    assert!(missing.is_empty(), "scripts/README.md lists paths that do not exist under scripts/: {missing:?}");
}

/// `docs/benchmarks.md` is what `scripts/bench/write-benchmarks-page.py` writes from the
/// committed results (skipped without python3).
#[test]
fn the_benchmarks_page_is_generated() {
    let script = repo_root().join("scripts/bench/write-benchmarks-page.py");
    let out = match std::process::Command::new("python3").arg(&script).arg("--check").output() {
        Ok(out) => out,
        Err(e) => {
            eprintln!("skipped: no python3 ({e})");
            return;
        }
    };
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The crates of the analyses: they compute typed reports; the bytes of bodies are
/// `oxprof-wire`'s.
const ANALYSIS_CRATES: [&str; 5] =
    ["oxprof-report", "oxprof-grouping", "oxprof-xprof", "oxprof-trace", "oxprof-pytorch"];

/// Every crate a manifest's `[dependencies]` names.
fn all_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut section = String::new();
    let mut out = BTreeSet::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line.to_string();
        } else if section == "[dependencies]"
            && let Some(name) = line.split(['.', ' ', '=']).next().filter(|n| !n.is_empty() && !n.starts_with('#'))
        {
            out.insert(name.to_string());
        }
    }
    out
}

/// The lines of `text` outside `#[cfg(test)]` items (a `mod x;` declaration, or an item
/// up to its balanced closing brace), with their line numbers.
fn production_lines(text: &str) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].trim_start().starts_with("#[cfg(test)]") {
            out.push((i + 1, lines[i]));
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < lines.len() && lines[j].trim_start().starts_with("#[") {
            j += 1;
        }
        let mut depth = 0i64;
        let mut opened = false;
        while j < lines.len() {
            depth += lines[j].matches('{').count() as i64 - lines[j].matches('}').count() as i64;
            opened |= lines[j].contains('{');
            if (opened && depth <= 0) || (!opened && lines[j].trim_end().ends_with(';')) {
                break;
            }
            j += 1;
        }
        i = j + 1;
    }
    out
}

/// The `.rs` files under `dir`, recursively, but test-only files (`tests.rs`, `test_*.rs`).
fn production_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            production_files(&path, out);
        } else if name.ends_with(".rs") && name != "tests.rs" && !name.starts_with("test_") {
            out.push(path);
        }
    }
}

/// "Bytes are written only by oxprof-wire": the analysis crates depend on no compression
/// library, encode no protobuf (prost only reads protos that stats carry), and write no
/// JSON by hand (no quoted key, no object opened on a key, no `\u` escape in their code).
#[test]
fn only_oxprof_wire_writes_bytes() {
    const WRITING: [(&str, &str); 9] = [
        ("\\\":", "a JSON key written by hand"),
        ("{\\\"", "a JSON object written by hand"),
        ("\\\\u", "a JSON \\u escape written by hand"),
        ("encode_to_vec", "protobuf encoding"),
        (".encode(", "protobuf encoding"),
        ("encode_length_delimited", "protobuf encoding"),
        ("GzBuilder", "gzip"),
        ("GzEncoder", "gzip"),
        ("ZlibEncoder", "zlib"),
    ];
    let mut found = Vec::new();
    for krate in ANALYSIS_CRATES {
        let dir = repo_root().join("crates").join(krate);
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        for library in ["flate2", "zstd", "miniz_oxide"] {
            if all_dependencies(&manifest).contains(library) {
                found.push(format!("{krate} depends on {library}"));
            }
        }
        let mut files = Vec::new();
        production_files(&dir.join("src"), &mut files);
        assert!(!files.is_empty(), "no sources under {}", dir.display());
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for (number, line) in production_lines(&text) {
                for (pattern, what) in WRITING {
                    if line.contains(pattern) {
                        let shown = file.strip_prefix(repo_root()).unwrap_or(&file).display().to_string();
                        found.push(format!("{shown}:{number}: {what}: {}", line.trim()));
                    }
                }
            }
        }
    }
    assert!(found.is_empty(), "analysis crates write bytes themselves (move it to oxprof-wire):\n{}", found.join("\n"));
}

#[test]
fn test_code_is_told_apart() {
    let text = "fn a() {}\n#[cfg(test)]\nmod tests;\nfn b() {}\n#[cfg(test)]\n#[allow(x)]\nmod t {\n    fn c() {\n    }\n}\nfn d() {}\n";
    let kept: Vec<usize> = production_lines(text).into_iter().map(|(n, _)| n).collect();
    assert_eq!(kept, [1, 4, 11]);
}

#[test]
fn indexes_and_command_tables_are_read() {
    let index = "# x\n- `ci/a.sh`: one\n- `b.py`: two `c.sh`\n  - `not/indented.sh`\n## Old names\n- `old.sh`: gone\n";
    let listed: Vec<_> = indexed_scripts(index).into_iter().collect();
    assert_eq!(listed, ["b.py", "ci/a.sh"]);
    let doc =
        "## Commands\n\n| command | what |\n| --- | --- |\n| `data` | x |\n| `serve` | y |\n\n## Next\n| `no` | z |\n";
    let commands: Vec<_> = documented_commands(doc).into_iter().collect();
    assert_eq!(commands, ["data", "serve"]);
}

/// Each package of `cargo tree` (`name vX`) with the features it is built with, for `args`.
fn resolved_features(args: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["tree", "--locked", "--offline", "--prefix", "none", "--format", "{p}|{f}"])
        .args(args)
        .current_dir(repo_root())
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo tree {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let mut packages: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((package, features)) = line.trim_end_matches(" (*)").split_once('|') else { continue };
        // `name vX.Y.Z (path)`: the name and version name it.
        let package = package.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
        let features = features.split(',').filter(|f| !f.is_empty()).map(str::to_string);
        packages.entry(package).or_default().extend(features);
    }
    packages
}

/// `cargo build -p oxprof` (what the UI, object-store, SQL and Spark steps of CI build)
/// resolves every crate it shares with `cargo test --workspace` with the same features.
/// A feature only the tests turn on (a dev-dependency's) made each of those steps compile
/// Arrow, DataFusion and everything above them a second time: 6 minutes of a cold CI run.
#[test]
fn the_binary_builds_with_the_test_builds_features() {
    let binary = resolved_features(&["-p", "oxprof", "--edges", "normal,build"]);
    let tests = resolved_features(&["--workspace", "--edges", "normal,build,dev"]);
    assert!(binary.len() > 300, "cargo tree listed {} packages for oxprof", binary.len());
    let differing: Vec<String> = binary
        .iter()
        .filter_map(|(package, features)| {
            let test_features = tests.get(package)?;
            (test_features != features).then(|| {
                let only_tests: Vec<&String> = test_features.difference(features).collect();
                format!("{package}: the tests add {only_tests:?}")
            })
        })
        .collect();
    assert!(
        differing.is_empty(),
        "declare these features where the binary's crates depend on them (see \
         crates/oxprof-arrow/Cargo.toml's arrow features):\n{}",
        differing.join("\n")
    );
}
