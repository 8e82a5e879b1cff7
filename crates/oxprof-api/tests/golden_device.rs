//! Parity with XProf 2.24.2 of the device tools (`kernel_stats`, `op_profile` by program
//! and by category, `hlo_stats`, `roofline_model`): for every committed refkit profile and
//! every third-party profile (read in place, skipped when absent), for each host and for
//! all hosts, oxprof's output equals XProf's own (numbers within 1e-6 relative), and the
//! CSV export equals XProf's `/data_csv` files where the refkit recorded them.
//!
//! `OXPROF_GOLDEN_FILTER=substring` limits the cases; `OXPROF_GOLDEN_SHOW=n` prints more
//! differences per failing case.

use common::{Tally, cases, external_dir, load_expected_json as load_expected, repo_root};
use oxprof_api::data::{DataRequest, data};
use oxprof_testkit::jsoncmp::{CmpOptions, compare};
use oxprof_wire::csv::datatable_to_csv;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

use oxprof_testkit::golden as common;

/// Request parameters of a variant.
type Params = &'static [(&'static str, &'static str)];

/// Each variant: label, tool, request parameters, XProf's output file stem.
const VARIANTS: &[(&str, &str, Params, &str)] = &[
    ("kernel_stats", "kernel_stats", &[], "kernel_stats"),
    ("hlo_stats", "hlo_stats", &[], "hlo_stats"),
    ("roofline_model", "roofline_model", &[], "roofline_model"),
    ("op_profile", "op_profile", &[], "op_profile"),
    ("op_profile.by_category", "op_profile", &[("group_by", "category")], "op_profile.by_category"),
];

/// Cases that do not match XProf yet, as `(variant label, case prefix)`, each with its
/// reason in a comment. The test fails if one of them starts matching, so this list only
/// shrinks. Empty: every case matches (and every `op_profile` body is XProf's bytes).
const KNOWN_GAPS: &[(&str, &str)] = &[];

fn is_known_gap(label: &str, case: &str) -> bool {
    KNOWN_GAPS.iter().any(|&(t, prefix)| t == label && case.starts_with(prefix))
}

fn request(tool: &str, host: &str, params: &[(&str, &str)]) -> DataRequest {
    let params: BTreeMap<String, String> = params.iter().map(|&(k, v)| (k.to_string(), v.to_string())).collect();
    DataRequest { host: Some(host.into()), params, ..oxprof_api::registry::request(tool).unwrap() }
}

#[test]
fn device_tools_equal_xprof() {
    let filter = std::env::var("OXPROF_GOLDEN_FILTER").unwrap_or_default();
    let mut tally = Tally::new();
    for case in cases() {
        for &(variant, tool, params, stem) in VARIANTS {
            let label = format!("{variant} {}", case.name);
            if !label.contains(&filter) {
                continue;
            }
            let Some(expected) = load_expected(&case.expected, stem) else {
                tally.fail(format!("{label}: no XProf output in {}", case.expected.display()));
                continue;
            };
            let actual = match data(&case.input, &request(tool, case.host, params)) {
                Ok(r) => {
                    // The op profile is a proto message: its body must be XProf's bytes too.
                    if tool == "op_profile"
                        && let Ok(raw) = std::fs::read_to_string(case.expected.join(format!("{stem}.json")))
                        && raw != r.body
                    {
                        let at = raw.bytes().zip(r.body.bytes()).take_while(|(a, b)| a == b).count();
                        let window =
                            |s: &str| s.get(at.saturating_sub(40)..(at + 40).min(s.len())).unwrap_or("").to_string();
                        tally.fail(format!(
                            "{label}: body differs from XProf's at byte {at}: expected …{}… got …{}…",
                            window(&raw),
                            window(&r.body)
                        ));
                    }
                    r.json.unwrap_or(Value::Null)
                }
                Err(e) => {
                    tally.fail(format!("{label}: {e}"));
                    continue;
                }
            };
            let report = compare(&expected, &actual, CmpOptions::default());
            tally.record(&label, &report, is_known_gap(variant, &case.name));
        }
    }
    tally.finish("golden_device", "golden cases");
}

/// `--format csv` of the DataTable tools equals XProf's CSV byte for byte.
#[test]
fn device_tool_csv_equals_xprof() {
    let mut checked = 0;
    for name in ["tf_keras_fit", "tf_custom_loop", "jax_train", "tf_memory", "tf_memory_nobfc"] {
        let dir = repo_root().join("testdata/profiles").join(name);
        for tool in ["kernel_stats", "hlo_stats", "roofline_model"] {
            let Ok(expected) = std::fs::read_to_string(dir.join("xprof_out").join(format!("{tool}.csv"))) else {
                continue;
            };
            let response = data(&dir, &request(tool, "ALL_HOSTS", &[])).unwrap();
            let csv = datatable_to_csv(response.json.as_ref().unwrap());
            assert_eq!(csv, expected, "{tool} CSV of {name}");
            checked += 1;
        }
    }
    assert!(checked >= 15, "only {checked} CSV files checked");
}

/// The same bytes whatever the number of threads.
#[test]
fn device_tools_do_not_depend_on_the_thread_count() {
    let mut inputs = vec![repo_root().join("testdata/profiles/jax_train")];
    if let Some(ext) = external_dir() {
        inputs.push(ext.join("openxla-xprof/demo/plugins/profile/GPU-multi-worker"));
        inputs.push(ext.join("AMD-AGI-TraceLens/tests/traces/mi300/jax08_attention/tw003.xplane.pb"));
    }
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let four = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
    for input in &inputs {
        for &(variant, tool, params, _) in VARIANTS {
            let r = request(tool, "ALL_HOSTS", params);
            let a = one.install(|| data(input, &r)).unwrap().body;
            let b = four.install(|| data(input, &r)).unwrap().body;
            assert_eq!(a, b, "{variant} on {} differs between 1 and 4 threads", input.display());
        }
    }
}

/// CPU-only profiles get XProf's empty device tools, with oxprof's note saying why.
#[test]
fn cpu_only_profiles_explain_the_empty_device_tools() {
    let dir = repo_root().join("testdata/profiles/tf_keras_fit");
    let response = data(&dir, &request("op_profile", "ALL_HOSTS", &[])).unwrap();
    assert!(response.notes.iter().any(|n| n.contains("no GPU or TPU")), "{:?}", response.notes);
}

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Time and memory of the device tools on the 3 M-event JAX profile (run with
/// `cargo test --release -p oxprof-api --test golden_device perf_ -- --ignored --nocapture`).
#[test]
#[ignore]
fn perf_device_tools_on_a_large_profile() {
    use oxprof_api::data::{open_run, select_hosts};
    use oxprof_xprof::op_stats::convert::{StepSelection, combine_hosts};
    use oxprof_xprof::tools::{hlo_stats, kernel_stats, op_profile, roofline_model};
    let dir = PathBuf::from("/work/refdata/jax_large");
    if !dir.is_dir() {
        eprintln!("SKIP: {} absent", dir.display());
        return;
    }
    let start = std::time::Instant::now();
    let (session, run) = open_run(&dir, None).unwrap();
    let files = select_hosts(&run, None).unwrap();
    let analyses = oxprof_api::op_stats::host_analyses(&session, &files, false).unwrap();
    let op_stats = combine_hosts(&analyses, StepSelection::All);
    let rss_op_stats = peak_rss_kb();
    eprintln!(
        "OpStats: {:?} ({} device ops), peak RSS {} MB",
        start.elapsed(),
        op_stats.device_op_metrics_db.metrics_db.len(),
        rss_op_stats / 1024
    );
    let time = |name: &str, f: &dyn Fn() -> Value| {
        let t = std::time::Instant::now();
        let body = f().to_string();
        eprintln!("{name}: {:?}, {} bytes", t.elapsed(), body.len());
    };
    time("op_profile", &|| op_profile::op_profile(&op_stats, op_profile::Grouping::ByProgram));
    time("op_profile by category", &|| op_profile::op_profile(&op_stats, op_profile::Grouping::ByCategory));
    time("hlo_stats", &|| hlo_stats::hlo_stats(&op_stats));
    time("roofline_model", &|| roofline_model::roofline_model(&op_stats));
    time("kernel_stats", &|| kernel_stats::kernel_stats(&op_stats));
    eprintln!("peak RSS after the tools: {} MB (+{} MB)", peak_rss_kb() / 1024, (peak_rss_kb() - rss_op_stats) / 1024);
    let t = std::time::Instant::now();
    let r = data(&dir, &request("op_profile", "ALL_HOSTS", &[])).unwrap();
    eprintln!("oxprof data op_profile end to end: {:?}, {} bytes", t.elapsed(), r.body.len());

    // That profile is CPU-only: also a synthetic device database of 100 000 ops (50
    // programs, 20 categories, duplicates, 4 fused children each).
    use oxprof_xprof::op_stats::{OpMetrics, OpMetricsDb, OpStats, PerfEnv};
    let child =
        |i: usize| OpMetrics { name: format!("c.{i}"), occurrences: 1, flops_v2: i as f64, ..Default::default() };
    let metrics_db: Vec<OpMetrics> = (0..100_000usize)
        .map(|i| OpMetrics {
            name: format!("fusion.{i}"),
            deduplicated_name: if i % 3 == 0 { format!("fusion.{}", i - i % 9) } else { String::new() },
            category: format!("cat{} fusion", i % 20),
            hlo_module_id: (i % 50) as u64,
            occurrences: 1 + (i % 7) as u32,
            time_ps: 1_000 + (i as u64 * 7919) % 100_000,
            self_time_ps: 1_000 + (i as u64 * 7919) % 100_000,
            flops_v2: i as f64,
            children: Some(Box::new(OpMetricsDb { metrics_db: (0..4).map(child).collect(), ..Default::default() })),
            ..Default::default()
        })
        .collect();
    let synthetic = OpStats {
        device_op_metrics_db: OpMetricsDb {
            metrics_db,
            total_time_ps: 1 << 40,
            total_op_time_ps: 1 << 39,
            ..Default::default()
        },
        perf_env: Some(PerfEnv {
            peak_tera_flops_per_second: 100.0,
            peak_bws_giga_bytes_per_second: vec![1000.0, 0.0, 0.0],
            ..Default::default()
        }),
        ..Default::default()
    };
    let before = peak_rss_kb();
    let t = std::time::Instant::now();
    let profile = op_profile::convert_op_stats_to_op_profile(&synthetic, op_profile::Grouping::ByProgram, 100);
    eprintln!("  synthetic op_profile tree: {:?}", t.elapsed());
    let t = std::time::Instant::now();
    let json = op_profile::profile_json(&profile);
    eprintln!("  synthetic op_profile JSON value: {:?}", t.elapsed());
    let t = std::time::Instant::now();
    let text = json.to_string();
    eprintln!("  synthetic op_profile text: {:?} ({} bytes)", t.elapsed(), text.len());
    drop((profile, json, text));
    let t = std::time::Instant::now();
    let records = hlo_stats::hlo_stats_records(&synthetic);
    eprintln!("  synthetic hlo_stats records: {:?}", t.elapsed());
    let t = std::time::Instant::now();
    let table = hlo_stats::hlo_stats_data_table(&records);
    eprintln!("  synthetic hlo_stats table: {:?}", t.elapsed());
    let t = std::time::Instant::now();
    let json = table.to_json();
    eprintln!("  synthetic hlo_stats JSON value: {:?}", t.elapsed());
    drop((records, table, json));
    time("synthetic op_profile (100k ops)", &|| op_profile::op_profile(&synthetic, op_profile::Grouping::ByProgram));
    time("synthetic op_profile by category", &|| op_profile::op_profile(&synthetic, op_profile::Grouping::ByCategory));
    time("synthetic hlo_stats", &|| hlo_stats::hlo_stats(&synthetic));
    eprintln!("peak RSS +{} MB", (peak_rss_kb() - before) / 1024);
    if let Some(ext) = external_dir() {
        for input in [
            ext.join("openxla-xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb"),
            ext.join("AMD-AGI-TraceLens/tests/traces/mi300/jax08_attention/tw003.xplane.pb"),
        ] {
            let t = std::time::Instant::now();
            let r = data(&input, &request("op_profile", "ALL_HOSTS", &[])).unwrap();
            eprintln!("{}: op_profile end to end {:?}, {} bytes", input.display(), t.elapsed(), r.body.len());
        }
    }
}
