//! Parity with XProf 2.24.2: every OpStats tool's output, for every committed refkit
//! profile and every third-party profile (read in place, skipped when absent), for each
//! host and for all hosts, equals XProf's own output on the same file (numbers within 1e-6
//! relative; numbers inside strings at their printed precision).
//!
//! `OXPROF_GOLDEN_FILTER=substring` limits the cases; `OXPROF_GOLDEN_SHOW=n` prints more
//! differences per failing case.

use common::{Tally, cases, external_dir, load_expected_json as load_expected, repo_root};
use oxprof_api::data::{DataRequest, data};
use oxprof_testkit::jsoncmp::{CmpOptions, compare};
use serde_json::Value;

use oxprof_testkit::golden as common;

const TOOLS: &[&str] = &["overview_page", "input_pipeline_analyzer", "framework_op_stats", "pod_viewer"];

/// Cases that do not match XProf yet, as `(tool, case prefix)`, each with its reason in a
/// comment. The test fails if one of them starts matching, so this list only shrinks.
/// Empty: every case matches.
const KNOWN_GAPS: &[(&str, &str)] = &[];

fn is_known_gap(tool: &str, case: &str) -> bool {
    KNOWN_GAPS.iter().any(|&(t, prefix)| t == tool && case.starts_with(prefix))
}

#[test]
fn op_stats_tools_equal_xprof() {
    let filter = std::env::var("OXPROF_GOLDEN_FILTER").unwrap_or_default();
    let mut tally = Tally::new();
    for case in cases() {
        for &tool in TOOLS {
            let label = format!("{tool} {}", case.name);
            if !label.contains(&filter) {
                continue;
            }
            let Some(expected) = load_expected(&case.expected, tool) else {
                tally.fail(format!("{label}: no XProf output in {}", case.expected.display()));
                continue;
            };
            let request = DataRequest { host: Some(case.host.into()), ..oxprof_api::registry::request(tool).unwrap() };
            let actual = match data(&case.input, &request) {
                Ok(r) => r.json.unwrap_or(Value::Null),
                Err(e) => {
                    tally.fail(format!("{label}: {e}"));
                    continue;
                }
            };
            // XProf does not fix the order of map entries or of rows with equal keys.
            let unordered = tool == "pod_viewer";
            let report = compare(&expected, &actual, CmpOptions { unordered, ..Default::default() });
            tally.record(&label, &report, is_known_gap(tool, &case.name));
        }
    }
    tally.finish("golden", "golden cases");
}

/// The same bytes whatever the number of threads (hosts, lines and planes are processed in
/// parallel; ids and orders must not depend on it).
#[test]
fn outputs_do_not_depend_on_the_thread_count() {
    let mut inputs = vec![repo_root().join("testdata/profiles/tf_custom_loop")];
    if let Some(ext) = external_dir() {
        inputs.push(ext.join("openxla-xprof/demo/plugins/profile/GPU-multi-worker"));
    }
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let four = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
    for input in &inputs {
        for &tool in TOOLS {
            let request =
                DataRequest { host: Some("ALL_HOSTS".into()), ..oxprof_api::registry::request(tool).unwrap() };
            let a = one.install(|| data(input, &request)).unwrap().body;
            let b = four.install(|| data(input, &request)).unwrap().body;
            assert_eq!(a, b, "{tool} on {} differs between 1 and 4 threads", input.display());
        }
    }
}
