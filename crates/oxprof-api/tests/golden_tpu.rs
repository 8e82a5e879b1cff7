//! Parity with XProf 2.24.2 on the synthetic TPU training profiles of
//! `testdata/tpu-synthetic/` (`scripts/gen/tpu-synthetic.sh`): TPU per-core step analysis,
//! the TPU training overview, the TPU input pipeline analyzer, the pod viewer and the
//! device op tools (op profile, HLO stats, roofline model, kernel stats), for each host and
//! for all hosts (numbers within 1e-6 relative; numbers inside strings at their printed
//! precision).
//!
//! `OXPROF_GOLDEN_FILTER=substring` limits the cases; `OXPROF_GOLDEN_SHOW=n` prints more
//! differences per failing case.

use common::{ALL_HOSTS, Tally, load_expected_json as load_expected, repo_root};
use oxprof_api::data::{DataRequest, data};
use oxprof_testkit::jsoncmp::{CmpOptions, compare};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

use oxprof_testkit::golden as common;

/// Request parameters of a variant.
type Params = &'static [(&'static str, &'static str)];

/// Each variant: label, tool, request parameters, XProf's output file stem.
const VARIANTS: &[(&str, &str, Params, &str)] = &[
    ("overview_page", "overview_page", &[], "overview_page"),
    ("input_pipeline_analyzer", "input_pipeline_analyzer", &[], "input_pipeline_analyzer"),
    ("framework_op_stats", "framework_op_stats", &[], "framework_op_stats"),
    ("pod_viewer", "pod_viewer", &[], "pod_viewer"),
    ("op_profile", "op_profile", &[], "op_profile"),
    ("op_profile.by_category", "op_profile", &[("group_by", "category")], "op_profile.by_category"),
    ("hlo_stats", "hlo_stats", &[], "hlo_stats"),
    ("roofline_model", "roofline_model", &[], "roofline_model"),
    ("kernel_stats", "kernel_stats", &[], "kernel_stats"),
];

/// Cases that do not match XProf yet, as `(variant label, case prefix)`, each with its
/// reason in a comment. The test fails if one of them starts matching, so this list only
/// shrinks.
const KNOWN_GAPS: &[(&str, &str)] = &[];

fn is_known_gap(label: &str, case: &str) -> bool {
    KNOWN_GAPS.iter().any(|&(t, prefix)| t == label && case.starts_with(prefix))
}

/// `(case name, run directory, host selection, XProf's output folder)`.
fn tpu_cases() -> Vec<(String, PathBuf, &'static str, PathBuf)> {
    let root = repo_root().join("testdata/tpu-synthetic");
    let mut cases = Vec::new();
    let training = root.join("training");
    for host in ["tpu-host-0", "tpu-host-1", ALL_HOSTS] {
        cases.push((format!("training/{host}"), training.clone(), host, training.join("xprof_out").join(host)));
    }
    let host_input = root.join("training_host_input");
    for host in ["tpu-host-0", ALL_HOSTS] {
        cases.push((format!("training_host_input/{host}"), host_input.clone(), host, host_input.join("xprof_out")));
    }
    cases
}

#[test]
fn tpu_training_tools_equal_xprof() {
    let filter = std::env::var("OXPROF_GOLDEN_FILTER").unwrap_or_default();
    let mut tally = Tally::new();
    for (case, input, host, expected_dir) in tpu_cases() {
        for &(variant, tool, params, stem) in VARIANTS {
            let label = format!("{variant} {case}");
            if !label.contains(&filter) {
                continue;
            }
            let Some(expected) = load_expected(&expected_dir, stem) else {
                tally.fail(format!("{label}: no XProf output in {}", expected_dir.display()));
                continue;
            };
            let params: BTreeMap<String, String> =
                params.iter().map(|&(k, v)| (k.to_string(), v.to_string())).collect();
            let request =
                DataRequest { host: Some(host.into()), params, ..oxprof_api::registry::request(tool).unwrap() };
            let actual = match data(&input, &request) {
                Ok(r) => r.json.unwrap_or(Value::Null),
                Err(e) => {
                    tally.fail(format!("{label}: {e}"));
                    continue;
                }
            };
            // XProf does not fix the order of map entries or of rows with equal keys.
            let unordered = tool == "pod_viewer";
            let report = compare(&expected, &actual, CmpOptions { unordered, ..Default::default() });
            tally.record(&label, &report, is_known_gap(variant, &case));
        }
    }
    tally.finish("golden_tpu", "TPU golden cases");
}

/// `--format csv` of the device DataTable tools equals XProf's CSV byte for byte.
#[test]
fn tpu_device_tool_csv_equals_xprof() {
    let mut checked = 0;
    for (case, input, host, expected_dir) in tpu_cases() {
        for tool in ["kernel_stats", "hlo_stats", "roofline_model"] {
            let Ok(expected) = std::fs::read_to_string(expected_dir.join(format!("{tool}.csv"))) else { continue };
            let request = DataRequest { host: Some(host.into()), ..oxprof_api::registry::request(tool).unwrap() };
            let response = data(&input, &request).unwrap();
            let csv = oxprof_wire::csv::datatable_to_csv(response.json.as_ref().unwrap());
            assert_eq!(csv, expected, "{tool} CSV of {case}");
            checked += 1;
        }
    }
    assert!(checked >= 15, "only {checked} CSV files checked");
}
