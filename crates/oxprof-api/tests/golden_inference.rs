//! Parity with XProf 2.24.2 on inference runs: `inference_profile` and the overview page
//! (its inference latency table included) equal XProf's own outputs, for the real serving
//! profiles under `testdata/inference/` (per host and `ALL_HOSTS`), and `inference_profile`
//! also for every case of `golden.rs` (the refkit and third-party profiles, where XProf
//! finds no requests).

use common::{ALL_HOSTS, cases, load_expected_json as load_expected, repo_root};
use oxprof_analysis::jsoncmp::{CmpOptions, compare};
use oxprof_api::data::{DataRequest, data};
use serde_json::Value;
use std::path::PathBuf;

mod common;

/// The serving profiles made by `scripts/gen-inference-profile.sh`.
const INFERENCE_PROFILES: &[&str] = &["tf_serving"];

struct Case {
    name: String,
    input: PathBuf,
    host: &'static str,
    expected: PathBuf,
}

fn inference_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for name in INFERENCE_PROFILES {
        let dir = repo_root().join("testdata/inference").join(name);
        for host in ["vm", ALL_HOSTS] {
            out.push(Case {
                name: format!("{name}/{host}"),
                input: dir.clone(),
                host,
                expected: dir.join("xprof_out"),
            });
        }
    }
    out
}

fn check(tool: &str, case: &Case, failures: &mut Vec<String>) -> bool {
    let label = format!("{tool} {}", case.name);
    let Some(expected) = load_expected(&case.expected, tool) else {
        failures.push(format!("{label}: no XProf output in {}", case.expected.display()));
        return false;
    };
    let request = DataRequest { tool: tool.into(), host: Some(case.host.into()), ..Default::default() };
    let actual = match data(&case.input, &request) {
        Ok(r) => r.json.unwrap_or(Value::Null),
        Err(e) => {
            failures.push(format!("{label}: {e}"));
            return false;
        }
    };
    let report = compare(&expected, &actual, CmpOptions::default());
    if !report.is_match() {
        failures.push(format!("{label}:\n{}", report.summary(8)));
        return false;
    }
    true
}

#[test]
fn inference_tools_equal_xprof_on_serving_profiles() {
    let (mut passed, mut failures) = (0, Vec::new());
    for case in inference_cases() {
        for tool in ["inference_profile", "overview_page", "input_pipeline_analyzer", "framework_op_stats"] {
            passed += usize::from(check(tool, &case, &mut failures));
        }
    }
    eprintln!("golden inference: {passed} passed, {} failed", failures.len());
    assert!(failures.is_empty(), "{} cases differ from XProf:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn inference_profile_equals_xprof_on_every_golden_case() {
    let (mut passed, mut failures) = (0, Vec::new());
    for c in cases() {
        let case = Case { name: c.name, input: c.input, host: c.host, expected: c.expected };
        passed += usize::from(check("inference_profile", &case, &mut failures));
    }
    eprintln!("golden inference_profile: {passed} passed, {} failed", failures.len());
    assert!(failures.is_empty(), "{} cases differ from XProf:\n{}", failures.len(), failures.join("\n"));
}

/// The overview's inference latency table on the serving profile: every row of XProf's
/// (Avg, then the 50/75/90/99/99.9th percentiles), non-empty.
#[test]
fn overview_inference_latency_has_every_row() {
    let dir = repo_root().join("testdata/inference/tf_serving");
    let request = DataRequest { tool: "overview_page".into(), host: Some(ALL_HOSTS.into()), ..Default::default() };
    let json = data(&dir, &request).unwrap().json.unwrap();
    let rows = json[4]["rows"].as_array().unwrap();
    let labels: Vec<&str> = rows.iter().map(|r| r["c"][0]["v"].as_str().unwrap()).collect();
    assert_eq!(labels, ["Avg", "50.0%", "75.0%", "90.0%", "99.0%", "99.9%"]);
}
