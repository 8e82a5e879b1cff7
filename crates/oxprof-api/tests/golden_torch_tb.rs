//! `pytorch_overview`, `pytorch_op_stats`, `pytorch_kernel_stats`, `pytorch_memory` and `pytorch_modules`
//! against torch-tb-profiler
//! 0.4.3's own backend: `scripts/ref/torch-tb.sh` ran its `RunProfileData` on each trace
//! and wrote what its views show to `testdata/torch-tb/*.json` (see the README there).
//! Every number must agree within 1e-6 relative. Traces from `../shared/testdata/external`
//! are skipped when absent; traces torch-tb-profiler cannot read (`reference_error`) are
//! skipped with their reason printed.

use oxprof_api::data::{compute, one_shot_session};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn external_root() -> PathBuf {
    std::env::var_os("OXPROF_EXTERNAL").map_or_else(|| repo_root().join("../shared/testdata/external"), PathBuf::from)
}

/// The typed report of `tool` on `trace`, as JSON.
fn report(trace: &Path, tool: &str) -> Value {
    let session = one_shot_session(trace).unwrap();
    let run = session.run(None).unwrap();
    let request = oxprof_api::registry::request(tool).unwrap();
    compute(&session, &run, &request, false).unwrap().to_json()
}

/// Where torch-tb-profiler is provably wrong: (trace path suffix, difference prefix, why).
/// Differences matching one are printed, not failed; what oxprof computes instead is
/// checked in `own_expectations`.
const OWN: &[(&str, &str, &str)] = &[(
    "mi210/gpu_only_trace/gpu_only_trace.json.gz",
    "",
    "no host events: torch-tb-profiler's one step runs from sys.maxsize to -sys.maxsize-1 (a total of \
         -1.8e19 µs); oxprof's step spans all events",
)];

/// Collects differences instead of stopping at the first.
struct Diff {
    trace: String,
    problems: Vec<String>,
}

impl Diff {
    fn num(&mut self, what: &str, ours: &Value, theirs: &Value) {
        match (ours.as_f64(), theirs.as_f64()) {
            (Some(a), Some(b)) => {
                if (a - b).abs() > 1e-6 * b.abs().max(a.abs()) + 1e-9 {
                    self.problems.push(format!("{what}: oxprof {a} torch-tb-profiler {b}"));
                }
            }
            (None, None) => {}
            _ => self.problems.push(format!("{what}: oxprof {ours} torch-tb-profiler {theirs}")),
        }
    }

    fn eq(&mut self, what: &str, ours: &Value, theirs: &Value) {
        if ours != theirs {
            self.problems.push(format!("{what}: oxprof {ours} torch-tb-profiler {theirs}"));
        }
    }

    /// Rows matched by `key`; numeric fields `nums` compared within tolerance, `exact` equal.
    /// `map` names our field for theirs where they differ.
    fn rows(
        &mut self,
        what: &str,
        ours: &Value,
        theirs: &Value,
        key: &[(&str, &str)],
        nums: &[(&str, &str)],
        exact: &[(&str, &str)],
    ) {
        let key_of = |row: &Value, side: usize| -> String {
            key.iter()
                .map(|k| {
                    let v = &row[if side == 0 { k.0 } else { k.1 }];
                    v.as_str().map_or_else(|| v.to_string(), str::to_string)
                })
                .collect::<Vec<_>>()
                .join(" | ")
        };
        let empty = Vec::new();
        let ours = ours.as_array().unwrap_or(&empty);
        let theirs = theirs.as_array().unwrap_or(&empty);
        let mut by_key = std::collections::BTreeMap::new();
        for r in ours {
            by_key.insert(key_of(r, 0), r);
        }
        if ours.len() != theirs.len() {
            self.problems.push(format!("{what}: oxprof has {} rows, torch-tb-profiler {}", ours.len(), theirs.len()));
        }
        for t in theirs {
            let k = key_of(t, 1);
            let Some(o) = by_key.get(&k) else {
                self.problems.push(format!("{what}: no row {k}"));
                continue;
            };
            for (ours_field, theirs_field) in nums {
                self.num(&format!("{what}[{k}].{theirs_field}"), &o[ours_field], &t[theirs_field]);
            }
            for (ours_field, theirs_field) in exact {
                self.eq(&format!("{what}[{k}].{theirs_field}"), &o[ours_field], &t[theirs_field]);
            }
        }
    }
}

const ROLES: [(&str, &str); 9] = [
    ("kernel", "Kernel"),
    ("memcpy", "Memcpy"),
    ("memset", "Memset"),
    ("communication", "Communication"),
    ("runtime", "Runtime"),
    ("data_loader", "DataLoader"),
    ("cpu_exec", "CPU Exec"),
    ("other", "Other"),
    ("total", "Total"),
];

fn compare(trace: &Path, golden: &Value, diff: &mut Diff) {
    let ov = report(trace, "pytorch_overview");
    let g = &golden["overview"];
    let steps = ov["steps"].as_array().cloned().unwrap_or_default();
    let gsteps = g["steps"].as_array().cloned().unwrap_or_default();
    diff.eq(
        "step names",
        &Value::from(steps.iter().map(|s| s["name"].clone()).collect::<Vec<_>>()),
        &Value::from(gsteps.iter().map(|s| s["name"].clone()).collect::<Vec<_>>()),
    );
    for (s, gs) in steps.iter().zip(&gsteps) {
        for (ours, theirs) in ROLES {
            diff.num(&format!("step {} {theirs}", gs["name"]), &s["breakdown"][ours], &gs["costs_us"][theirs]);
        }
    }
    for (ours, theirs) in ROLES {
        diff.num(&format!("average {theirs}"), &ov["average"][ours], &g["average_us"][theirs]);
    }
    diff.rows(
        "gpus",
        &ov["gpus"],
        &g["gpus"],
        &[("id", "id")],
        &[
            ("utilization", "utilization"),
            ("sm_efficiency", "sm_efficiency"),
            ("achieved_occupancy_pct", "achieved_occupancy_pct"),
            ("tensor_core_ratio", "tensor_core_ratio"),
        ],
        &[],
    );
    diff.num("tc_eligible_ops_kernel_ratio", &ov["tc_eligible_ops_kernel_ratio"], &g["tc_eligible_ops_kernel_ratio"]);
    diff.num("tc_used_ratio", &ov["tc_used_ratio"], &g["tc_used_ratio"]);
    diff.eq("recommendations", &ov["recommendations"], &g["recommendations"]);

    let ops = report(trace, "pytorch_op_stats");
    let nums = [
        ("host_total_us", "host_total_us"),
        ("host_self_us", "host_self_us"),
        ("device_total_us", "device_total_us"),
        ("device_self_us", "device_self_us"),
        ("tc_self_us", "tc_self_us"),
        ("tc_total_us", "tc_total_us"),
    ];
    let exact = [("calls", "calls"), ("tc_eligible", "tc_eligible")];
    let g = &golden["operators"];
    diff.rows("operators by name", &ops["by_name"], &g["by_name"], &[("name", "name")], &nums, &exact);
    diff.rows(
        "operators by name+input",
        &ops["by_name_input"],
        &g["by_name_input"],
        &[("name", "name"), ("input_shape", "input_shape")],
        &nums,
        &exact,
    );
    diff.rows(
        "operators by name+stack",
        &ops["by_name_stack"],
        &g["by_name_stack"],
        &[("name", "name"), ("call_stack", "call_stack")],
        &nums,
        &exact,
    );

    let k = report(trace, "pytorch_kernel_stats");
    let g = &golden["kernels"];
    let nums = [
        ("total_us", "total_us"),
        ("mean_us", "mean_us"),
        ("max_us", "max_us"),
        ("min_us", "min_us"),
        ("mean_blocks_per_sm", "mean_blocks_per_sm"),
        ("mean_occupancy_pct", "mean_occupancy_pct"),
    ];
    diff.rows(
        "kernels by name",
        &k["by_name"],
        &g["by_name"],
        &[("name", "name")],
        &nums,
        &[("calls", "calls"), ("tensor_cores_used", "tensor_cores_used")],
    );
    diff.rows(
        "kernels by name+op",
        &k["by_name_op"],
        &g["by_name_op"],
        &[
            ("name", "name"),
            ("operator", "operator"),
            ("grid", "grid"),
            ("block", "block"),
            ("registers_per_thread", "registers_per_thread"),
            ("shared_memory", "shared_memory"),
        ],
        &nums,
        &[("calls", "calls"), ("tensor_cores_used", "tensor_cores_used"), ("op_tc_eligible", "op_tc_eligible")],
    );
}

/// The memory view: peaks, curves and events per device point by point (in torch-tb-profiler's
/// order), statistics by operator name.
fn compare_memory(trace: &Path, golden: &Value, diff: &mut Diff) {
    let mem = report(trace, "pytorch_memory");
    let g = &golden["memory"];
    if let Some(reason) = g["reference_error"].as_str() {
        eprintln!("memory view skipped (torch-tb-profiler fails on it: {reason}): {}", diff.trace);
        return;
    }
    if g.is_null() {
        diff.num("memory records (none in the reference)", &mem["records"], &Value::from(0));
        return;
    }
    diff.num("memory records", &mem["records"], &g["records"]);
    let empty = Vec::new();
    let devices: std::collections::BTreeMap<&str, &Value> =
        mem["devices"].as_array().unwrap_or(&empty).iter().map(|d| (d["device"].as_str().unwrap_or(""), d)).collect();
    let null = Value::Null;
    let dev = |name: &str| -> &Value { devices.get(name).copied().unwrap_or(&null) };
    let with_peak = devices.values().filter(|d| !d["peak_allocated_bytes"].is_null()).count();
    let peaks = g["peaks_bytes"].as_object().cloned().unwrap_or_default();
    diff.eq("devices with a peak", &Value::from(with_peak), &Value::from(peaks.len()));
    for (d, v) in &peaks {
        diff.num(&format!("memory peak {d}"), &dev(d)["peak_allocated_bytes"], v);
    }
    let non_empty =
        |field: &str| devices.values().filter(|d| d[field].as_array().is_some_and(|a| !a.is_empty())).count();
    let curves = g["curves"].as_object().cloned().unwrap_or_default();
    diff.eq("devices with a curve", &Value::from(non_empty("curve")), &Value::from(curves.len()));
    for (d, points) in &curves {
        let ours = dev(d)["curve"].as_array().unwrap_or(&empty);
        let theirs = points.as_array().unwrap_or(&empty);
        diff.eq(&format!("memory curve {d} points"), &Value::from(ours.len()), &Value::from(theirs.len()));
        for (i, (o, t)) in ours.iter().zip(theirs).enumerate() {
            for (j, field) in ["time_us", "allocated_bytes", "reserved_bytes"].iter().enumerate() {
                diff.num(&format!("memory curve {d}[{i}].{field}"), &o[field], &t[j]);
            }
        }
    }
    let events = g["events"].as_object().cloned().unwrap_or_default();
    diff.eq("devices with events", &Value::from(non_empty("events")), &Value::from(events.len()));
    for (d, rows) in &events {
        let ours = dev(d)["events"].as_array().unwrap_or(&empty);
        let theirs = rows.as_array().unwrap_or(&empty);
        diff.eq(&format!("memory events {d}"), &Value::from(ours.len()), &Value::from(theirs.len()));
        for (i, (o, t)) in ours.iter().zip(theirs).enumerate() {
            diff.eq(&format!("memory event {d}[{i}].operator"), &o["operator"], &t[0]);
            for (j, field) in ["size_bytes", "allocation_us", "release_us", "duration_us"].iter().enumerate() {
                diff.num(&format!("memory event {d}[{i}].{field}"), &o[field], &t[j + 1]);
            }
        }
    }
    let stats = g["stats"].as_object().cloned().unwrap_or_default();
    diff.eq("devices with operator statistics", &Value::from(non_empty("operators")), &Value::from(stats.len()));
    const FIELDS: [&str; 7] = [
        "calls",
        "size_increase_bytes",
        "self_size_increase_bytes",
        "allocations",
        "self_allocations",
        "allocation_bytes",
        "self_allocation_bytes",
    ];
    for (d, rows) in &stats {
        // Their rows as objects with our field names.
        let theirs: Vec<Value> = rows
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .map(|r| {
                let mut o = serde_json::Map::new();
                o.insert("name".into(), r[0].clone());
                for (j, f) in FIELDS.iter().enumerate() {
                    o.insert((*f).into(), r[j + 1].clone());
                }
                Value::Object(o)
            })
            .collect();
        let pairs: Vec<(&str, &str)> = FIELDS.iter().map(|f| (*f, *f)).collect();
        diff.rows(
            &format!("memory by operator {d}"),
            &dev(d)["operators"],
            &Value::from(theirs),
            &[("name", "name")],
            &pairs,
            &[],
        );
    }
}

/// The module view: the hierarchy node by node (children in torch-tb-profiler's order; roots,
/// which it keeps in a set, by name, id and shape on both sides), statistics within 1e-6.
fn compare_modules(trace: &Path, golden: &Value, diff: &mut Diff) -> usize {
    let ours = report(trace, "pytorch_modules");
    let g = &golden["modules"];
    if let Some(reason) = g["reference_error"].as_str() {
        eprintln!("module view skipped (torch-tb-profiler fails on it: {reason}): {}", diff.trace);
        return 0;
    }
    fn shape(m: &Value) -> String {
        let children: Vec<String> = m["children"].as_array().into_iter().flatten().map(shape).collect();
        format!("{}#{}({})", m["name"].as_str().unwrap_or(""), m["module_id"], children.join(","))
    }
    fn roots(v: &Value) -> Vec<Value> {
        let mut r = v.as_array().cloned().unwrap_or_default();
        r.sort_by_key(|m| (m["name"].as_str().unwrap_or("").to_string(), m["module_id"].as_i64(), shape(m)));
        r
    }
    fn walk(path: &str, ours: &[Value], theirs: &[Value], diff: &mut Diff) -> usize {
        if ours.len() != theirs.len() {
            diff.problems.push(format!(
                "modules {path}: oxprof {} children torch-tb-profiler {}",
                ours.len(),
                theirs.len()
            ));
        }
        let mut n = 0;
        for (o, t) in ours.iter().zip(theirs) {
            let here = format!("{path}/{}", t["name"].as_str().unwrap_or(""));
            diff.eq(&format!("module {here} name"), &o["name"], &t["name"]);
            for f in ["module_id", "occurrences", "operators"] {
                diff.eq(&format!("module {here} {f}"), &o[f], &t[f]);
            }
            for f in ["host_total_us", "host_self_us", "device_total_us", "device_self_us", "mean_us"] {
                diff.num(&format!("module {here} {f}"), &o[f], &t[f]);
            }
            let empty = Vec::new();
            n += 1 + walk(
                &here,
                o["children"].as_array().unwrap_or(&empty),
                t["children"].as_array().unwrap_or(&empty),
                diff,
            );
        }
        n
    }
    if g.is_null() {
        diff.eq("modules (none in the reference)", &ours["modules"], &Value::Array(Vec::new()));
        return 0;
    }
    walk("", &roots(&ours["modules"]), &roots(g), diff)
}

#[test]
fn pytorch_views_match_torch_tb_profiler() {
    let dir = repo_root().join("testdata/torch-tb");
    let mut goldens: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    goldens.sort();
    assert!(goldens.len() >= 3, "no golden files under {}", dir.display());
    let mut failures = Vec::new();
    let mut compared = 0;
    let mut module_rows = 0;
    for path in goldens {
        let golden: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let name = golden["trace"].as_str().unwrap().to_string();
        let trace = match name.strip_prefix("external/") {
            Some(rest) => external_root().join(rest),
            None => repo_root().join(&name),
        };
        if !trace.exists() {
            eprintln!("skipped (absent): {name}");
            continue;
        }
        if let Some(reason) = golden["reference_error"].as_str() {
            eprintln!("skipped (torch-tb-profiler cannot read it: {reason}): {name}");
            continue;
        }
        let mut diff = Diff { trace: name.clone(), problems: Vec::new() };
        compare(&trace, &golden, &mut diff);
        compare_memory(&trace, &golden, &mut diff);
        module_rows += compare_modules(&trace, &golden, &mut diff);
        compared += 1;
        diff.problems.retain(|p| {
            let own = OWN.iter().find(|(t, prefix, _)| name.ends_with(t) && p.starts_with(prefix));
            if let Some((_, _, why)) = own {
                eprintln!("{name}: oxprof's own number ({why}): {p}");
            }
            own.is_none()
        });
        if !diff.problems.is_empty() {
            failures.push(format!(
                "{} ({} differences):\n  {}",
                diff.trace,
                diff.problems.len(),
                diff.problems.iter().take(15).cloned().collect::<Vec<_>>().join("\n  ")
            ));
        }
    }
    eprintln!("compared {compared} traces ({module_rows} modules)");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// oxprof's own numbers where torch-tb-profiler is wrong (see [`OWN`]).
#[test]
fn own_expectations() {
    let trace = external_root().join("AMD-AGI-TraceLens/tests/traces/mi210/gpu_only_trace/gpu_only_trace.json.gz");
    if !trace.exists() {
        eprintln!("skipped (absent): {}", trace.display());
        return;
    }
    // A GPU-only trace: one step over every event, its kernels counted.
    let ov = report(&trace, "pytorch_overview");
    let step = &ov["steps"][0];
    let b = &step["breakdown"];
    let total = b["total"].as_f64().unwrap();
    assert!(total > 0.0, "{step}");
    assert!(b["kernel"].as_f64().unwrap() > 0.0, "{step}");
    assert_eq!(step["end_us"].as_f64().unwrap() - step["start_us"].as_f64().unwrap(), total);
    let parts: f64 = ["kernel", "memcpy", "memset", "communication", "runtime", "data_loader", "cpu_exec", "other"]
        .iter()
        .map(|k| b[k].as_f64().unwrap())
        .sum();
    assert!((parts - total).abs() <= 1e-6 * total, "{step}");
}
