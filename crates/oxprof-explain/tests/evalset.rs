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

#[test]
fn pytorch_findings_name_their_cause() {
    let finding = |e: &Explanation, id: &str| e.findings.iter().find(|f| f.id == id).cloned();
    // The DataLoader: waiting for workers, or loading in the training process.
    let workers = explained("dataloader_workers_slow");
    let input = finding(&workers, "input_bound").unwrap();
    assert!(input.evidence.iter().any(|e| e.contains("waits for DataLoader workers")), "{input:?}");
    assert!(workers.facts.data_loader.as_ref().is_some_and(|d| d.workers && d.calls_per_step == 1.0));
    let single = finding(&explained("dataloader_starved"), "input_bound").unwrap();
    assert!(single.evidence.iter().any(|e| e.contains("num_workers=0")), "{single:?}");
    // GPU idle by HTA's causes: Python between steps leaves the GPU waiting for the host.
    let gaps = explained("python_gaps");
    let idle = gaps.facts.gpu_idle.clone().unwrap();
    assert!(idle.host_wait_ms > 2.0 * (idle.kernel_wait_ms + idle.other_ms), "{idle:?}");
    let found = finding(&gaps, "gpu_idle").unwrap();
    assert_eq!(found.severity, Severity::Info);
    assert!(found.title.contains("mostly host wait"), "{found:?}");
    let healthy = explained("healthy_gpu");
    assert!(healthy.facts.gpu_idle.is_some() && finding(&healthy, "gpu_idle").is_none(), "{:?}", healthy.findings);
    // torch.compile recompiling in every step.
    let recompile = explained("torch_recompile");
    let compile = recompile.facts.torch_compile.clone().unwrap();
    assert_eq!((compile.steps_compiling, compile.max_recompile), (4, 3), "{compile:?}");
    assert!((compile.median_step_ms - 8.0).abs() < 0.01, "{compile:?}");
    let found = finding(&recompile, "compilation").unwrap();
    assert!(found.evidence.iter().any(|e| e.contains("recompiled 3 times")), "{found:?}");
    assert!(found.suggestion.contains("TORCH_LOGS=recompiles"), "{found:?}");
    assert!(finding(&recompile, "idle").is_none(), "{:?}", recompile.findings);
    // Fragmentation: less than half of the reserve held tensors when it last grew.
    let fragmented = explained("memory_fragmented");
    let memory = &fragmented.facts.memory[0];
    assert!((memory.fragmentation.unwrap() - 16.0 / 30.0).abs() < 1e-6, "{memory:?}");
    assert!(finding(&fragmented, "memory_near_capacity").is_none());
    let near = explained("memory_near_capacity");
    assert!(finding(&near, "memory_fragmentation").is_none(), "{:?}", near.findings);
}

/// A session that keeps what it computes explains a run again from memory: the HLO facts
/// (the host plane's decode) and OpStats are computed once per host.
#[test]
fn a_second_explanation_decodes_nothing() {
    let (session, run) = oxprof_api::data::open_run(&repo_root().join("testdata/explain/jax_unfused"), None).unwrap();
    let first = explain(&session, &run, None).unwrap();
    let counts = session.file_counts();
    assert_eq!(counts.front_end_computed, run.hosts.len() as u64, "{counts:?}");
    let second = explain(&session, &run, None).unwrap();
    assert_eq!(first, second);
    let again = session.file_counts();
    assert_eq!(
        (again.front_end_computed, again.analyses_computed),
        (counts.front_end_computed, counts.analyses_computed),
        "{again:?}"
    );
    assert_eq!(again.front_end_found, counts.front_end_found + run.hosts.len() as u64, "{again:?}");
}

/// A PyTorch trace is read and parsed once per explain, even in a session that keeps
/// nothing between lookups (the parse and HTA's rows come from one lookup).
#[test]
fn a_pytorch_trace_is_parsed_once() {
    let session = one_shot_session(&repo_root().join("testdata/explain/python_gaps")).unwrap();
    let run = session.run(None).unwrap();
    explain(&session, &run, None).unwrap();
    assert_eq!(session.file_counts().pytorch_computed, 1, "{:?}", session.file_counts());
}
