//! The HLO module map against XProf's reference OpStats of the external profiles, through
//! the analyses' seams (device op metrics, kernel statistics).

use crate::op_stats::device_op_metrics::testutil::{external_cases, external_root, load, reference};
use crate::op_stats::device_op_metrics::{HloInstruction as HloInstructionView, HloModuleLookup, device_op_metrics_db};
use crate::op_stats::kernel_stats::kernel_stats_db;
use crate::op_stats::types::OpMetricsDb;
use oxprof_hlo::{CostAnalysis, HloModuleMap, hlo_modules};
use oxprof_testkit::jsoncmp::{CmpOptions, compare};
use serde_json::Value;

/// Sorts `metrics_db` arrays (and their children's) by (module id, name).
fn sorted(mut v: Value) -> Value {
    fn key(m: &Value) -> (String, String) {
        (m["hlo_module_id"].to_string(), m["name"].as_str().unwrap_or("").to_string())
    }
    fn walk(v: &mut Value) {
        match v {
            Value::Object(map) => {
                if let Some(Value::Array(list)) = map.get_mut("metrics_db") {
                    list.sort_by_key(key);
                }
                map.values_mut().for_each(walk);
            }
            Value::Array(list) => list.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut v);
    v
}

/// Per-op comparison counts: (ops, ops equal, leaves, leaves equal).
fn count_ops(expected: &Value, actual: &Value) -> (usize, usize, usize, usize) {
    let empty = Vec::new();
    let e = expected["metrics_db"].as_array().unwrap_or(&empty);
    let a = actual["metrics_db"].as_array().unwrap_or(&empty);
    let (mut ops, mut ops_ok, mut leaves, mut leaves_ok) = (0, 0, 0, 0);
    for op in e {
        ops += 1;
        let found = a.iter().find(|x| x["name"] == op["name"] && x["hlo_module_id"] == op["hlo_module_id"]);
        let report = compare(op, found.unwrap_or(&Value::Null), CmpOptions::default());
        leaves += report.total;
        leaves_ok += report.ok;
        if report.is_match() {
            ops_ok += 1;
        }
    }
    (ops, ops_ok, leaves, leaves_ok)
}

/// The external profiles with HLO modules.
fn hlo_cases() -> Vec<(crate::op_stats::device_op_metrics::testutil::RefCase, oxprof_model::XSpace)> {
    let Some(root) = external_root() else { return Vec::new() };
    external_cases(&root)
        .into_iter()
        .map(|case| {
            let space = load(&case);
            (case, space)
        })
        .filter(|(_, space)| space.planes.iter().any(|p| p.name == "/host:metadata"))
        .collect()
}

/// `device_op_metrics_db` of the external profiles against XProf's: every op of the six AMD
/// GPU profiles (FLOPs, bytes, memory breakdown, category, provenance, HLO text, source)
/// and the fusion children of the TPU profile.
#[test]
fn device_ops_match_xprof() {
    let mut mismatched = Vec::new();
    for (case, space) in hlo_cases() {
        let groups = oxprof_grouping::EventGroups::from_file_stats(&space);
        let map = HloModuleMap::from_space(&space);
        let mut ours: OpMetricsDb = device_op_metrics_db(&space, Some(&groups), Some(&map));
        let expected = sorted(reference(&case.op_stats)["device_op_metrics_db"].clone());
        ours.precision_stats = serde_json::from_value(expected["precision_stats"].clone()).ok();
        let actual = sorted(serde_json::to_value(&ours).unwrap());
        let report = compare(&expected, &actual, CmpOptions::default());
        let (ops, ops_ok, leaves, leaves_ok) = count_ops(&expected, &actual);
        eprintln!(
            "{}: device ops {ops_ok}/{ops} equal, {leaves_ok}/{leaves} op fields; {}",
            case.name,
            report.summary(8).replace('\n', "\n  ")
        );
        if !report.is_match() {
            mismatched.push(case.name.clone());
        }
    }
    assert!(mismatched.is_empty(), "device_op_metrics_db differs from XProf: {mismatched:?}");
}

/// `kernel_stats_db` of the GPU profiles with HLO modules against XProf's: XLA kernels get
/// their framework op from the HLO map (the HLO op's framework name without its `:type`),
/// and XProf 2.24.2's AMD matrix-core kernel patterns count as Tensor Core use.
#[test]
fn kernel_stats_match_xprof() {
    let mut mismatched = Vec::new();
    for (case, space) in hlo_cases() {
        if !space.planes.iter().any(|p| p.name.starts_with("/device:GPU:")) {
            continue;
        }
        let map = HloModuleMap::from_space(&space);
        let (planes, _) = crate::op_stats::environment::device_planes(&space);
        let kernels = kernel_stats_db(planes, Some(&map));
        let expected = &reference(&case.op_stats)["kernel_stats_db"];
        let report = compare(expected, &serde_json::to_value(&kernels).unwrap(), CmpOptions::default());
        eprintln!("{}: kernel_stats_db {}", case.name, report.summary(4).replace('\n', "\n  "));
        if !report.is_match() {
            mismatched.push(case.name.clone());
        }
    }
    assert!(mismatched.is_empty(), "kernel_stats_db differs from XProf: {mismatched:?}");
}

/// The record XProf's `DeviceOpMetricsDbBuilder` makes of one kernel of an instruction
/// (the fields `testdata/hlo-costs/*.json.gz` keep): device FLOPs (model FLOPs when there are
/// none), bytes and breakdown from the cost analysis, the instruction's descriptions.
fn record(program_id: u64, view: &dyn HloInstructionView) -> Value {
    let perf = view.performance();
    let device_flops = perf.as_ref().map_or(0, |p| p.device_flops).max(0);
    let model_flops = perf.as_ref().map_or(0, |p| p.model_flops).max(0);
    let model_flops = if model_flops == 0 { device_flops } else { model_flops };
    let breakdown: Vec<Value> = perf
        .as_ref()
        .map(|p| {
            p.memory_accessed_breakdown
                .iter()
                .map(|m| serde_json::json!([m.is_read, m.bytes_accessed.max(0)]))
                .collect()
        })
        .unwrap_or_default();
    let source = view.source_info();
    serde_json::json!({
        "program_id": program_id,
        "name": view.name(),
        "flops": device_flops,
        "model_flops": model_flops,
        "bytes_accessed": perf.as_ref().map_or(0, |p| p.bytes_accessed).max(0),
        "memory_accessed_breakdown": breakdown,
        "category": view.category(),
        "provenance": view.tf_op_name(),
        "long_name": view.expression(),
        "deduplicated_name": view.deduplicated_name(),
        "source": [source.file, source.line, source.stack_frame],
    })
}

fn read_gz_json(path: &std::path::Path) -> Value {
    oxprof_testkit::files::read_json(path)
}

/// Every instruction of every HLO module of the external profiles, and of hand-written
/// modules covering the cost model's handlers (`testdata/hlo-costs/hand_*.hlo`: dots,
/// convolutions, slices, fusions with slices, dynamic-update-slice roots, multi-output,
/// large constants, nested fusions, reduce-windows, variadic reduces, while, call, sort,
/// collectives, gathers, GEMM and other custom calls), costed and described as XProf
/// 2.24.2 does: XProf ran on a GPU profile with one kernel per instruction
/// (`testdata/hlo-costs/xprof_hlo_oracle.py`).
#[test]
fn every_instruction_matches_xprof() {
    let dir = crate::op_stats::device_op_metrics::testutil::repo_root().join("testdata/hlo-costs");
    let external = external_root();
    let mi300 = "AMD-AGI-TraceLens/tests/traces/mi300";
    let cases: Vec<(&str, String)> = vec![
        ("jax08_attention", format!("{mi300}/jax08_attention/tw003.xplane.pb")),
        ("jax08_conv", format!("{mi300}/jax08_conv/tw003.xplane.pb")),
        ("jax08_elementwise", format!("{mi300}/jax08_elementwise/tw003.xplane.pb")),
        ("jax08_gemm", format!("{mi300}/jax08_gemm/tw003.xplane.pb")),
        ("jax_conv_minimal", format!("{mi300}/jax_conv_minimal/chi-mi300x-013.ord.vultr.cpe.ice.amd.com.xplane.pb")),
        (
            "te_fused_attn",
            "AMD-AGI-TraceLens/tests/test_data_jax_te_fused_attn_categorization/934987a2fc2f.xplane.pb".into(),
        ),
        ("tpu_inference_2", "openxla-xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb".into()),
        ("hand_const", String::new()),
        ("hand_dot", String::new()),
        ("hand_fusion", String::new()),
        ("hand_gemm", String::new()),
        ("hand_misc", String::new()),
    ];
    let mut failed = Vec::new();
    for (name, profile) in cases {
        let path = if profile.is_empty() {
            dir.join(format!("{name}.xplane.pb"))
        } else {
            match &external {
                Some(root) => root.join(&profile),
                None => continue,
            }
        };
        let space = oxprof_testkit::files::load_xspace(&path).unwrap();
        let map = HloModuleMap::from_modules(hlo_modules(&space).0, CostAnalysis::Gpu);
        let expected = read_gz_json(&dir.join(format!("{name}.json.gz")));
        let expected = expected.as_array().unwrap();
        let (mut ok, mut leaves, mut leaves_ok) = (0, 0, 0);
        let mut first_diffs = String::new();
        for e in expected {
            let program_id = e["program_id"].as_u64().unwrap();
            let name = e["name"].as_str().unwrap();
            let actual = map.instruction(program_id, name).map(|v| record(program_id, v)).unwrap_or(Value::Null);
            let report = compare(e, &actual, CmpOptions::default());
            leaves += report.total;
            leaves_ok += report.ok;
            if report.is_match() {
                ok += 1;
            } else if first_diffs.len() < 2000 {
                first_diffs.push_str(&format!("  {name}: {}\n", report.summary(3).replace('\n', "\n    ")));
            }
        }
        eprintln!("{name}: {ok}/{} instructions equal, {leaves_ok}/{leaves} fields\n{first_diffs}", expected.len());
        if ok != expected.len() {
            failed.push(name);
        }
    }
    assert!(failed.is_empty(), "differs from XProf: {failed:?}");
}

fn peak_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Time and memory of the HLO map (`cargo test --release -p oxprof-xprof perf_hlo_lookup
/// -- --ignored --nocapture`): per external profile, building the map and the device op
/// database through it; and, as a stress test, the GPU cost analysis of every module of the
/// large JAX profile with every instruction's description.
#[test]
#[ignore]
fn perf_hlo_lookup() {
    for (case, space) in hlo_cases() {
        let groups = oxprof_grouping::EventGroups::from_file_stats(&space);
        let before = peak_rss_kb();
        let start = std::time::Instant::now();
        let map = HloModuleMap::from_space(&space);
        let built = start.elapsed();
        let db = device_op_metrics_db(&space, Some(&groups), Some(&map));
        eprintln!(
            "{}: {} modules, map {built:?}, map + device ops {:?} ({} ops), peak RSS +{} KiB",
            case.name,
            map.len(),
            start.elapsed(),
            db.metrics_db.len(),
            peak_rss_kb().saturating_sub(before)
        );
    }
    let large = crate::op_stats::device_op_metrics::testutil::repo_root().join("../refdata/jax_large/plugins/profile");
    for run in std::fs::read_dir(large).into_iter().flatten().flatten() {
        let space = oxprof_testkit::files::load_xspace(&run.path().join("vm.xplane.pb")).unwrap();
        let before = peak_rss_kb();
        let start = std::time::Instant::now();
        let modules = hlo_modules(&space).0;
        let names: Vec<(u64, Vec<String>)> = modules
            .iter()
            .map(|(id, m)| {
                (*id, m.computations.iter().flat_map(|c| c.instructions.iter().map(|i| i.name.clone())).collect())
            })
            .collect();
        let map = HloModuleMap::from_modules(modules, CostAnalysis::Gpu);
        let mut flops = 0i64;
        let mut text = 0usize;
        let mut count = 0usize;
        for (id, instructions) in &names {
            for name in instructions {
                if let Some(v) = map.instruction(*id, name) {
                    flops = flops.wrapping_add(v.performance().map_or(0, |p| p.model_flops));
                    text += v.expression().len() + v.category().len();
                    count += 1;
                }
            }
        }
        eprintln!(
            "{}: {} modules, {count} instructions costed and printed in {:?} (flops {flops}, {text} bytes of text), peak RSS +{} KiB",
            run.path().display(),
            map.len(),
            start.elapsed(),
            peak_rss_kb().saturating_sub(before)
        );
    }
}
