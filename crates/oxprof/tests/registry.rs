//! Every tool of the registry (`oxprof_api::registry::tools()`) reaches every place that
//! lists tools: the CLI's help and parser, `/oxprof/api/info`, XProf's `/run_tools` rules,
//! the golden tests' expected outputs, and the web UI's pages. Adding a row without the
//! rest fails here.

use oxprof_api::http::{NoAssets, Service, ServiceOptions};
use oxprof_api::registry::{Listed, Offered, Reference, ToolId, tools};
use std::path::PathBuf;
use std::sync::Arc;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

#[test]
fn the_cli_knows_every_tool() {
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_oxprof")).args(["data", "--help"]).output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    for tool in tools().iter().filter(|t| t.available()) {
        assert!(help.contains(tool.name()) && help.contains(tool.title), "`oxprof data --help` lacks {}", tool.name());
    }
}

#[test]
fn the_server_lists_every_tool() {
    let service = Service::new(ServiceOptions::new(repo_root().join("testdata/profiles")), Arc::new(NoAssets)).unwrap();
    let info = service.handle("GET", "/oxprof/api/info", "").body_json().unwrap();
    let listed: Vec<&str> = info["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    for tool in tools() {
        assert!(listed.contains(&tool.name()), "/oxprof/api/info lacks {}", tool.name());
    }
}

#[test]
fn xprofs_run_tools_rules_cover_every_listed_tool() {
    use oxprof_testkit::{Value, XSpaceBuilder};
    // A profile with every feature XProf's `GetAvailableToolNames` looks at.
    let everything = oxprof_xspace::decode_xspace(
        &XSpaceBuilder::new()
            .plane("/device:GPU:0", |_| {})
            .plane("/host:metadata", |p| {
                p.event_metadata_stat("jit_f", "Hlo Proto", Value::Bytes(vec![]));
            })
            .plane("/host:CPU", |p| {
                p.event_metadata("MegaScale: all-reduce");
            })
            .plane("/device:TPU:0", |p| {
                p.line(1, "counters", 0, |l| {
                    l.event("c", 0, 1).stat("counter_value", Value::U64(3));
                });
            })
            .to_bytes(),
    )
    .unwrap();
    let listed = oxprof_api::http::available_tools(&everything);
    for tool in tools().iter().filter(|t| t.listed != Listed::Never) {
        assert!(listed.contains(&tool.name()), "/run_tools never lists {}", tool.name());
    }
}

/// The name of `id`'s constant in `oxprof_report::ToolId` (read from its source).
fn id_constant(id: ToolId) -> Option<String> {
    let source = std::fs::read_to_string(repo_root().join("crates/oxprof-report/src/tool_id.rs")).unwrap();
    let declared = format!(": ToolId = ToolId(\"{}\");", id.name());
    let line = source.lines().find(|l| l.trim_end().ends_with(&declared))?;
    Some(line.trim().strip_prefix("pub const ")?.split(':').next()?.to_string())
}

#[test]
fn every_computed_tool_has_expected_outputs() {
    let profiles = repo_root().join("testdata/profiles");
    let mut recorded: Vec<String> = Vec::new();
    for profile in std::fs::read_dir(&profiles).unwrap().flatten() {
        let Ok(outputs) = std::fs::read_dir(profile.path().join("xprof_out")) else { continue };
        recorded.extend(outputs.flatten().map(|f| f.file_name().to_string_lossy().into_owned()));
    }
    for tool in tools().iter().filter(|t| t.available()) {
        match tool.reference {
            Reference::Xprof => {
                let prefix = format!("{}.", tool.name());
                assert!(
                    recorded.iter().any(|f| f.starts_with(&prefix)),
                    "no XProf output recorded for {} under testdata/profiles/*/xprof_out",
                    tool.name()
                );
            }
            Reference::Own(test) => {
                let text = std::fs::read_to_string(repo_root().join(test))
                    .unwrap_or_else(|_| panic!("{}: its golden test {test} is missing", tool.name()));
                // By name (a string the test resolves) or by its typed id.
                let by_id = id_constant(tool.id).map(|c| format!("ToolId::{c}"));
                assert!(
                    text.contains(&format!("\"{}\"", tool.name())) || by_id.is_some_and(|c| text.contains(&c)),
                    "{test} does not test {}",
                    tool.name()
                );
            }
            Reference::None => panic!("{} is computed but has no expected outputs", tool.name()),
        }
    }
}

#[test]
fn the_ui_has_a_page_for_every_offered_tool() {
    let pages = std::fs::read_to_string(repo_root().join("ui/src/pages/index.ts")).unwrap();
    for tool in tools().iter().filter(|t| t.offered != Offered::No) {
        let key = if tool.page.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            format!("  {}:", tool.page)
        } else {
            format!("  '{}':", tool.page)
        };
        assert!(pages.contains(&key), "ui/src/pages/index.ts has no page {:?} for {}", tool.page, tool.name());
    }
}
