//! The evaluation set (`testdata/explain/cases.json`, written by
//! `scripts/gen/explain-evalset.py`): on every run with a planted bottleneck `explain` names
//! that cause first; on every healthy run it raises no warning. Also: the Markdown stays
//! within its budget and says what it left out.

use oxprof_api::data::one_shot_session;
use oxprof_explain::{Explanation, SCHEMA, Severity, explain, render_markdown};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn explained(case: &str) -> Explanation {
    let path = repo_root().join("testdata/explain").join(case);
    let session = one_shot_session(&path).unwrap();
    let run = session.run(None).unwrap();
    explain(&session, &run, None).unwrap_or_else(|e| panic!("{case}: {e}"))
}

fn cases() -> BTreeMap<String, Option<String>> {
    let text = std::fs::read_to_string(repo_root().join("testdata/explain/cases.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_planted_cause_comes_first_and_healthy_runs_raise_no_warning() {
    let cases = cases();
    assert!(cases.values().filter(|e| e.is_some()).count() >= 10, "{cases:?}");
    assert!(cases.values().filter(|e| e.is_none()).count() >= 3, "{cases:?}");
    let mut failures = Vec::new();
    for (case, expected) in &cases {
        let explanation = explained(case);
        assert_eq!(explanation.schema, SCHEMA);
        let found: Vec<(&str, Severity)> = explanation.findings.iter().map(|f| (f.id, f.severity)).collect();
        match expected {
            Some(id) if found.first().map(|f| f.0) != Some(id.as_str()) => {
                failures.push(format!("{case}: expected {id} first, found {found:?}"))
            }
            None if found.iter().any(|f| f.1 >= Severity::Warning) => {
                failures.push(format!("{case}: healthy, but {found:?}"))
            }
            _ => {}
        }
        // Every finding shows its evidence and the next step.
        for f in &explanation.findings {
            assert!(!f.evidence.is_empty() && !f.suggestion.is_empty() && !f.see.is_empty(), "{case}: {f:?}");
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn markdown_stays_within_its_budget() {
    for case in cases().keys() {
        let explanation = explained(case);
        let whole = render_markdown(&explanation, 16 * 1024);
        assert!(whole.len() <= 16 * 1024, "{case}: {} bytes", whole.len());
        assert!(whole.starts_with("# "), "{case}: {whole}");
        let small = render_markdown(&explanation, 400);
        assert!(small.len() <= 400 + 200, "{case}: {} bytes", small.len());
        if small.len() < whole.len() {
            assert!(small.contains("more section(s) past the 400-byte budget"), "{case}: {small}");
        }
    }
    let sync = render_markdown(&explained("sync_per_step"), 16 * 1024);
    assert!(sync.contains("**The step synchronizes the host with the GPU**"), "{sync}");
    assert!(sync.contains("aten::item"), "{sync}");
}

#[test]
fn one_host_of_several_is_explained_alone() {
    let path = repo_root().join("testdata/explain/ddp_straggler");
    let session = one_shot_session(&path).unwrap();
    let run = session.run(None).unwrap();
    let slow = &run.hosts.iter().find(|h| h.host.starts_with("worker1")).unwrap().host;
    let explanation = explain(&session, &run, Some(slow)).unwrap();
    assert_eq!(explanation.hosts, std::slice::from_ref(slow));
    assert!(explanation.findings.iter().all(|f| f.id != "stragglers"), "{:?}", explanation.findings);
    assert!(explain(&session, &run, Some("no_such_host")).is_err());
}
