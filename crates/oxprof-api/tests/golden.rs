//! Parity with XProf 2.24.2: every OpStats tool's output, for every committed refkit
//! profile and every third-party profile (read in place, skipped when absent), for each
//! host and for all hosts, equals XProf's own output on the same file (numbers within 1e-6
//! relative; numbers inside strings at their printed precision).
//!
//! `OXPROF_GOLDEN_FILTER=substring` limits the cases; `OXPROF_GOLDEN_SHOW=n` prints more
//! differences per failing case.

use oxprof_analysis::jsoncmp::{CmpOptions, compare};
use oxprof_api::data::{DataRequest, data};
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

const TOOLS: &[&str] = &["overview_page", "input_pipeline_analyzer", "framework_op_stats", "pod_viewer"];

/// Cases that do not match XProf yet, as `(tool, case prefix)`, each with its reason in a
/// comment. The test fails if one of them starts matching, so this list only shrinks.
/// Empty: every case matches.
const KNOWN_GAPS: &[(&str, &str)] = &[];

fn is_known_gap(tool: &str, case: &str) -> bool {
    KNOWN_GAPS.iter().any(|&(t, prefix)| t == tool && case.starts_with(prefix))
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn external_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("OXPROF_EXTERNAL_TESTDATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/testdata/external"));
    dir.is_dir().then_some(dir)
}

fn external_outputs_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("OXPROF_EXTERNAL_XPROF_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/testdata/external-xprof-out"));
    dir.is_dir().then_some(dir)
}

/// One profile (file or run directory), a host selection, and XProf's outputs for it.
struct Case {
    name: String,
    input: PathBuf,
    host: &'static str,
    expected: PathBuf,
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for name in ["tf_keras_fit", "tf_custom_loop", "jax_train", "tf_memory", "tf_memory_nobfc"] {
        let dir = repo_root().join("testdata/profiles").join(name);
        for host in ["vm", "ALL_HOSTS"] {
            cases.push(Case {
                name: format!("{name}/{host}"),
                input: dir.clone(),
                host,
                expected: dir.join("xprof_out"),
            });
        }
    }
    let (Some(ext), Some(out)) = (external_dir(), external_outputs_dir()) else {
        eprintln!("SKIP: ../shared/testdata/external(-xprof-out) absent; third-party profiles not checked");
        return cases;
    };
    let amd = ext.join("AMD-AGI-TraceLens/tests");
    let singles: Vec<(&str, PathBuf, &'static str)> = vec![
        (
            "AMD-AGI-TraceLens/934987a2fc2f",
            amd.join("test_data_jax_te_fused_attn_categorization/934987a2fc2f.xplane.pb"),
            "934987a2fc2f",
        ),
        ("AMD-AGI-TraceLens/jax08_attention__tw003", amd.join("traces/mi300/jax08_attention/tw003.xplane.pb"), "tw003"),
        ("AMD-AGI-TraceLens/jax08_conv__tw003", amd.join("traces/mi300/jax08_conv/tw003.xplane.pb"), "tw003"),
        (
            "AMD-AGI-TraceLens/jax08_elementwise__tw003",
            amd.join("traces/mi300/jax08_elementwise/tw003.xplane.pb"),
            "tw003",
        ),
        ("AMD-AGI-TraceLens/jax08_gemm__tw003", amd.join("traces/mi300/jax08_gemm/tw003.xplane.pb"), "tw003"),
        (
            "AMD-AGI-TraceLens/chi-mi300x-013.ord.vultr.cpe.ice.amd.com",
            amd.join("traces/mi300/jax_conv_minimal"),
            "chi-mi300x-013.ord.vultr.cpe.ice.amd.com",
        ),
        (
            "openxla-xprof/34.83.195.179_6003",
            ext.join("openxla-xprof/demo/plugins/profile/GPU-multi-worker/34.83.195.179_6003.xplane.pb"),
            "34.83.195.179_6003",
        ),
        (
            "openxla-xprof/tpu_inference_2",
            ext.join("openxla-xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb"),
            "tpu_inference_2",
        ),
    ];
    for (name, input, host) in singles {
        for h in [host, "ALL_HOSTS"] {
            cases.push(Case {
                name: format!("{name}/{h}"),
                input: input.clone(),
                host: h,
                expected: out.join(name).join("xprof_out"),
            });
        }
    }
    let two = ext.join("openxla-xprof/demo/plugins/profile/GPU-multi-worker");
    let two_out = out.join("openxla-xprof/GPU-multi-worker_two_hosts/xprof_out");
    for host in ["34.83.195.179_6003", "34.83.195.180_6003", "ALL_HOSTS"] {
        cases.push(Case {
            name: format!("GPU-multi-worker_two_hosts/{host}"),
            input: two.clone(),
            host,
            expected: two_out.join(host),
        });
    }
    cases
}

fn load_expected(dir: &Path, tool: &str) -> Option<Value> {
    let plain = dir.join(format!("{tool}.json"));
    let gz = dir.join(format!("{tool}.json.gz"));
    let text = if let Ok(t) = std::fs::read_to_string(&plain) {
        t
    } else {
        let mut t = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&gz).ok()?).read_to_string(&mut t).ok()?;
        t
    };
    serde_json::from_str(&text).ok()
}

#[test]
fn op_stats_tools_equal_xprof() {
    let filter = std::env::var("OXPROF_GOLDEN_FILTER").unwrap_or_default();
    let show: usize = std::env::var("OXPROF_GOLDEN_SHOW").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let (mut passed, mut gaps, mut failures) = (0, 0, Vec::new());
    for case in cases() {
        for &tool in TOOLS {
            let label = format!("{tool} {}", case.name);
            if !label.contains(&filter) {
                continue;
            }
            let Some(expected) = load_expected(&case.expected, tool) else {
                failures.push(format!("{label}: no XProf output in {}", case.expected.display()));
                continue;
            };
            let request = DataRequest { tool: tool.into(), host: Some(case.host.into()), ..Default::default() };
            let actual = match data(&case.input, &request) {
                Ok(r) => r.json.unwrap_or(Value::Null),
                Err(e) => {
                    failures.push(format!("{label}: {e}"));
                    continue;
                }
            };
            // XProf does not fix the order of map entries or of rows with equal keys.
            let unordered = tool == "pod_viewer";
            let report = compare(&expected, &actual, CmpOptions { unordered, ..Default::default() });
            match (report.is_match(), is_known_gap(tool, &case.name)) {
                (true, false) => passed += 1,
                (true, true) => failures.push(format!("{label}: matches XProf now; remove it from KNOWN_GAPS")),
                (false, true) => {
                    eprintln!("KNOWN GAP {label}: {}", report.summary(0));
                    gaps += 1;
                }
                (false, false) => failures.push(format!("{label}:\n{}", report.summary(show))),
            }
        }
    }
    eprintln!("golden: {passed} passed, {} failed, {gaps} known gaps", failures.len());
    assert!(failures.is_empty(), "{} golden cases differ from XProf:\n{}", failures.len(), failures.join("\n"));
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
            let request = DataRequest { tool: tool.into(), host: Some("ALL_HOSTS".into()), ..Default::default() };
            let a = one.install(|| data(input, &request)).unwrap().body;
            let b = four.install(|| data(input, &request)).unwrap().body;
            assert_eq!(a, b, "{tool} on {} differs between 1 and 4 threads", input.display());
        }
    }
}
