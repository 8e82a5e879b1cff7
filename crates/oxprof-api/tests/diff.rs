//! Comparing real runs (`oxprof_api::diff`, `GET /oxprof/api/diff`) on the committed pairs
//! of `testdata/diff/` (TensorFlow on CPU, 30 steps each, `scripts/gen/diff-pairs.sh`):
//!
//! * `slow_b32` → `fast_b32`: an input-bound pipeline fixed; the input share must drop
//!   beyond noise and the step time with it;
//! * `fast_b32` → `fast_b128`: batch 32 → 128; the step time and the MatMuls grow beyond
//!   noise, the input share does not move beyond noise;
//! * a run against itself: nothing beyond noise, no gate trips;
//!
//! saved summaries in place of runs, their budgets, and the HTTP route. Third-party pairs
//! (`../shared/testdata/external/`) are checked when that folder is present.

use oxprof_testkit::golden as common;

use oxprof_api::diff::{ReadOptions, SideRequest, diff_paths, read_summary, summarize};
use oxprof_api::http::{HttpResponse, NoAssets, Service, ServiceOptions};
use oxprof_diff::gate::{Gate, GateStatus};
use oxprof_diff::ops::OpKind;
use oxprof_diff::summary::SummaryLimits;
use oxprof_diff::{DiffOptions, DiffReport, RunDiff};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn pairs() -> PathBuf {
    common::repo_root().join("testdata/diff")
}

fn side(path: &Path) -> SideRequest<'_> {
    SideRequest { path, run: None, host: None }
}

fn diff(a: &str, b: &str) -> RunDiff {
    let (a, b) = (pairs().join(a), pairs().join(b));
    diff_paths(&side(&a), &side(&b), &DiffOptions::default(), &ReadOptions::default()).unwrap()
}

fn metric<'a>(diff: &'a RunDiff, name: &str) -> &'a oxprof_diff::steps::StepMetric {
    let steps = diff.steps.as_ref().expect("steps compared");
    steps.metrics.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("no step metric {name}"))
}

fn gate(diff: &RunDiff, text: &str) -> GateStatus {
    Gate::parse(text).unwrap().evaluate(diff, true).status
}

#[test]
fn fixing_an_input_bound_pipeline_is_flagged_in_the_input_share() {
    let diff = diff("slow_b32", "fast_b32");
    assert_eq!((diff.a.steps, diff.b.steps, diff.a.device_type.as_str()), (28, 28, "CPU"));
    let input = diff.input.as_ref().expect("input pipeline compared");
    let share = &input.share.change;
    assert!(share.a > 70.0 && share.b < 10.0, "{share:?}");
    assert_eq!(share.beyond_noise, Some(true));
    assert!(input.share.test.unwrap().p_value < 1e-6, "{:?}", input.share.test);
    assert_eq!((input.classification_a.as_str(), input.classification_b.as_str()), ("host", "both"));
    assert!(input.statement_a.starts_with("Your program is HIGHLY input-bound"), "{}", input.statement_a);

    let step = metric(&diff, "step_time");
    assert!(step.change.relative.unwrap() < -0.8, "{step:?}");
    assert_eq!(step.change.beyond_noise, Some(true));
    let waiting = metric(&diff, "input");
    assert!(waiting.change.delta < -10.0 && waiting.change.beyond_noise == Some(true), "{waiting:?}");
    assert_eq!(metric(&diff, "compilation").change.beyond_noise, Some(false), "0 in both");

    // The sleeping py_function is gone; the dataset ops it slowed are still there, faster.
    let ops = diff.ops.iter().find(|o| o.kind == OpKind::FrameworkOp).unwrap();
    assert_eq!(ops.only_in_a.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(), ["EagerPyFunc"]);
    let prefetch = ops.matched.iter().find(|o| o.name == "Iterator::Root::Prefetch").unwrap();
    assert!(prefetch.self_time_us.relative.unwrap() < -0.9 && prefetch.self_time_us.beyond_noise == Some(true));
    assert!(ops.matched.len() > 40);
    assert_eq!(diff.ops.len(), 1, "a CPU run: no kernels, no HLO ops");

    assert_eq!(gate(&diff, "input.share<-50"), GateStatus::Tripped);
    assert_eq!(gate(&diff, "input.share>+5"), GateStatus::Passed);
    assert_eq!(gate(&diff, "step_time>+5%"), GateStatus::Passed);
}

#[test]
fn a_larger_batch_is_flagged_in_step_time_and_matmuls() {
    let diff = diff("fast_b32", "fast_b128");
    let step = metric(&diff, "step_time");
    assert!(step.change.relative.unwrap() > 0.5, "{step:?}");
    assert_eq!(step.change.beyond_noise, Some(true));
    assert!(step.test.unwrap().hedges_g.unwrap() > 2.0, "{:?}", step.test);
    let compute = metric(&diff, "host_compute");
    assert!(compute.change.relative.unwrap() > 0.5 && compute.change.beyond_noise == Some(true), "{compute:?}");
    // The share of input waiting does not move beyond noise.
    let share = &diff.input.as_ref().unwrap().share.change;
    assert!(share.delta.abs() < 3.0 && share.beyond_noise == Some(false), "{share:?}");

    let ops = diff.ops.iter().find(|o| o.kind == OpKind::FrameworkOp).unwrap();
    assert!(ops.only_in_a.is_empty() && ops.only_in_b.is_empty(), "the same program");
    let biggest = &ops.matched[0];
    assert!(biggest.category.contains("MatMul"), "largest change first: {biggest:?}");
    assert!(biggest.self_time_us.delta > 0.0 && biggest.self_time_us.beyond_noise == Some(true));
    assert_eq!(biggest.count.delta, 0.0, "as often per step");
    assert!(matches!(ops.basis, oxprof_diff::ops::Basis::PerStep { steps_a: 30, steps_b: 30 }), "{:?}", ops.basis);

    let memory = diff.memory.as_ref().expect("BFC allocator events");
    assert_eq!(memory.allocators.len(), 1);
    assert_eq!(memory.allocators[0].allocator, "bfc_cpu_allocator_for_gpu");

    assert_eq!(gate(&diff, "step_time>+5%"), GateStatus::Tripped);
    assert_eq!(gate(&diff, "step_time>+500%"), GateStatus::Passed);
    assert_eq!(gate(&diff, "op:MatMul.self_time>+10%"), GateStatus::Tripped, "matched by op type");
    assert_eq!(gate(&diff, "op:_MklMatMul.self_time>+10%"), GateStatus::Tripped);
    assert_eq!(gate(&diff, "kernel:*.time>+20%"), GateStatus::NoData);
    assert_eq!(gate(&diff, "memory.peak>+256MiB"), GateStatus::Passed);
}

#[test]
fn a_run_against_itself_has_nothing_beyond_noise() {
    for name in ["slow_b32", "fast_b128"] {
        let diff = diff(name, name);
        let steps = diff.steps.as_ref().unwrap();
        assert!(steps.metrics.iter().all(|m| m.change.delta == 0.0 && m.change.beyond_noise == Some(false)));
        for ops in &diff.ops {
            assert!(ops.only_in_a.is_empty() && ops.only_in_b.is_empty());
            for op in &ops.matched {
                for c in [op.time_us, op.self_time_us, op.count, op.mean_us] {
                    assert_eq!((c.delta, c.beyond_noise), (0.0, Some(false)), "{name}: {op:?}");
                }
            }
        }
        let gates: Vec<Gate> = ["step_time>+0%", "input.share>0", "op:*.self_time>+0%", "memory.peak>0"]
            .iter()
            .map(|g| Gate::parse(g).unwrap())
            .collect();
        let report = DiffReport::new(diff, &gates, false);
        assert!(!report.tripped, "{:?}", report.gates);
    }
}

#[test]
fn a_saved_summary_stands_in_for_its_run() {
    let tmp = tempfile::tempdir().unwrap();
    let run = pairs().join("fast_b32");
    let summary = summarize(&side(&run), &Default::default()).unwrap();
    let file = tmp.path().join("baseline.json");
    std::fs::write(&file, summary.to_json()).unwrap();
    let bytes = std::fs::metadata(&file).unwrap().len();
    assert!(bytes < 200_000, "a summary is small: {bytes} bytes");

    let b = pairs().join("fast_b128");
    let from_run = diff_paths(&side(&run), &side(&b), &DiffOptions::default(), &ReadOptions::default()).unwrap();
    let from_summary = diff_paths(&side(&file), &side(&b), &DiffOptions::default(), &ReadOptions::default()).unwrap();
    assert_eq!(from_summary.a.source.summary.as_deref(), Some(file.display().to_string().as_str()));
    assert_eq!(from_summary.a.source.run, from_run.a.source.run);
    assert!(from_summary.a.label.ends_with(&format!("summary of {}", from_run.a.label)), "{}", from_summary.a.label);
    // Everything compared is the same, to the bit.
    assert_eq!(from_summary.steps, from_run.steps);
    assert_eq!(from_summary.input, from_run.input);
    assert_eq!(from_summary.ops, from_run.ops);
    assert_eq!(from_summary.memory, from_run.memory);
    assert_eq!((&from_summary.b, &from_summary.notes), (&from_run.b, &from_run.notes));

    // The summary's host selection: ALL_HOSTS of a one-host run is that host.
    let host = SideRequest { host: Some("vm"), ..side(&file) };
    assert!(oxprof_api::diff::load_side(&host, &ReadOptions::default()).is_ok());
    let other = SideRequest { host: Some("worker1"), ..side(&file) };
    let error = oxprof_api::diff::load_side(&other, &ReadOptions::default()).unwrap_err().to_string();
    assert!(error.contains("baseline.json summarises host selection \"ALL_HOSTS\""), "{error}");
    let error = summarize(&side(&file), &Default::default()).unwrap_err().to_string();
    assert!(error.contains("is already a summary"), "{error}");
}

#[test]
fn summaries_over_budget_or_of_another_version_are_refused_with_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let summary = summarize(&side(&pairs().join("slow_b32")), &Default::default()).unwrap();
    let file = tmp.path().join("baseline.json");
    let text = summary.to_json();
    std::fs::write(&file, &text).unwrap();

    let tight = SummaryLimits { max_bytes: 1000, ..SummaryLimits::default() };
    let error = read_summary(&file, &tight).unwrap_err();
    assert_eq!(error.http_status(), 422);
    let message = error.to_string();
    assert!(message.starts_with(&file.display().to_string()), "names the file: {message}");
    assert!(message.contains("over the budget of 1000 (--max-summary-bytes)"), "{message}");
    assert!(!message.contains('\n'));

    let newer = text.replacen("\"oxprof_summary\": 1", "\"oxprof_summary\": 7", 1);
    std::fs::write(&file, newer).unwrap();
    let message = read_summary(&file, &SummaryLimits::default()).unwrap_err().to_string();
    assert!(message.contains("version 7, newer than this oxprof reads (2): upgrade oxprof"), "{message}");

    std::fs::write(&file, "{\"traceEvents\": []}").unwrap();
    let message = read_summary(&file, &SummaryLimits::default()).unwrap_err().to_string();
    assert!(
        message.contains("not an oxprof summary") && message.contains("oxprof summary RUN --out FILE"),
        "{message}"
    );

    let missing = tmp.path().join("nope");
    let b = pairs().join("fast_b32");
    let error = diff_paths(&side(&missing), &side(&b), &DiffOptions::default(), &ReadOptions::default()).unwrap_err();
    assert!(error.to_string().contains("nope: no such file or directory; each side is a log directory"), "{error}");
}

// ---- GET /oxprof/api/diff --------------------------------------------------------------

fn service() -> Service {
    Service::new(ServiceOptions::new(pairs()), Arc::new(NoAssets)).unwrap()
}

fn get(service: &Service, url: &str) -> HttpResponse {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    service.handle("GET", path, query)
}

fn run_name(service: &Service, folder: &str) -> String {
    let runs = get(service, "/runs").body_json().unwrap();
    let names: Vec<String> = runs.as_array().unwrap().iter().map(|r| r.as_str().unwrap().to_string()).collect();
    names.into_iter().find(|n| n.starts_with(&format!("{folder}/"))).unwrap()
}

fn enc(s: &str) -> String {
    s.replace('/', "%2F")
}

#[test]
fn the_route_answers_the_comparison_as_the_library_computes_it() {
    let service = service();
    let (slow, fast) = (run_name(&service, "slow_b32"), run_name(&service, "fast_b32"));
    let url = format!("/oxprof/api/diff?run={}&run_b={}", enc(&slow), enc(&fast));
    let response = get(&service, &url);
    assert_eq!(response.status, 200, "{}", response.body_text());
    assert_eq!(response.content_type, "application/json");
    assert_eq!(response.header("Cache-Control"), Some("no-store"));
    let body: Value = response.body_json().unwrap();
    assert_eq!(body["oxprof_diff"], 1);
    assert_eq!(body["a"]["source"]["run"], slow.as_str());
    assert_eq!(body["a"]["source"]["path"], slow.as_str(), "runs are named, never paths");
    assert_eq!(body["input"]["share"]["change"]["beyond_noise"], true);
    // The same numbers as the library's.
    let expected = serde_json::to_value(diff("slow_b32", "fast_b32")).unwrap();
    assert_eq!(body["steps"], expected["steps"]);
    assert_eq!(body["input"], expected["input"]);
    assert_eq!(body["ops"], expected["ops"]);
    assert_eq!(body["memory"], expected["memory"]);

    // Kept: asked again, nothing is computed.
    let computed = service.cache_stats().computations;
    assert_eq!(get(&service, &url).body.as_bytes(), response.body.as_bytes());
    assert_eq!(service.cache_stats().computations, computed);

    // Cut to `limit` ops per list, with the counts of all and a note.
    let cut = get(&service, &format!("{url}&limit=3")).body_json().unwrap();
    assert_eq!(cut["ops"][0]["matched"].as_array().unwrap().len(), 3);
    assert_eq!(cut["ops"][0]["counts"], body["ops"][0]["counts"]);
    assert_eq!(cut["ops"][0]["matched"][0], body["ops"][0]["matched"][0], "the largest change first");
    assert!(cut["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("only the 3 largest")));

    let csv = get(&service, &format!("{url}&format=csv"));
    assert_eq!((csv.status, csv.content_type), (200, "text/csv"));
    assert!(csv.body_text().starts_with("section,kind,presence,subject,"), "{}", csv.body_text());
    assert!(csv.header("Content-Disposition").unwrap().contains("diff_slow_b32_"), "{:?}", csv.headers);
    let md = get(&service, &format!("{url}&format=md&top=2"));
    assert_eq!(md.status, 200);
    assert!(md.body_text().starts_with("# oxprof diff\n"), "{}", md.body_text());

    // A run against itself, with a host named on both sides.
    let same = get(&service, &format!("/oxprof/api/diff?run={}&run_b={}&host=vm", enc(&fast), enc(&fast)));
    let same = same.body_json().unwrap();
    assert_eq!(same["steps"]["metrics"][0]["change"]["delta"], 0.0);
    assert_eq!(same["b"]["source"]["host"], "vm");
}

#[test]
fn the_route_checks_its_parameters_and_is_read_only() {
    let service = service();
    let fast = enc(&run_name(&service, "fast_b32"));
    let status = |url: &str| {
        let response = get(&service, url);
        if response.status != 200 {
            let body = response.body_json().expect("JSON error");
            assert_eq!(body["status"], response.status);
        }
        response.status
    };
    assert_eq!(status(&format!("/oxprof/api/diff?run={fast}")), 400, "no run_b");
    assert_eq!(status(&format!("/oxprof/api/diff?run={fast}&run_b=..%2Fetc")), 400);
    assert_eq!(status(&format!("/oxprof/api/diff?run={fast}&run_b=nope")), 404);
    assert_eq!(status(&format!("/oxprof/api/diff?run={fast}&run_b={fast}&host_b=nope")), 404);
    assert_eq!(status(&format!("/oxprof/api/diff?run={fast}&run_b={fast}&host=a%2Fb")), 400);
    assert_eq!(status(&format!("/oxprof/api/diff?run={fast}&run_b={fast}&format=xml")), 400);
    assert_eq!(status(&format!("/oxprof/api/diff?run={fast}&run_b={fast}&limit=lots")), 400);
    assert_eq!(status(&format!("/oxprof/api/diff?run={fast}&run_b={fast}&limit=999999999")), 200, "clamped");
    let post = service.handle("POST", "/oxprof/api/diff", &format!("run={fast}&run_b={fast}"));
    assert_eq!(post.status, 405);
}

// ---- third-party pairs -------------------------------------------------------------------

#[test]
fn external_pairs_compare_kernels_hlo_ops_and_hosts() {
    let Some(external) = common::external_dir() else {
        eprintln!("SKIP: ../shared/testdata/external is absent; third-party pairs not compared");
        return;
    };
    // MI300X JAX runs of different kernels: no steps, everything only in one run or changed.
    let mi300 = external.join("AMD-AGI-TraceLens/tests/traces/mi300");
    let (gemm, conv) = (mi300.join("jax08_gemm/tw003.xplane.pb"), mi300.join("jax08_conv/tw003.xplane.pb"));
    let diff = diff_paths(&side(&gemm), &side(&conv), &DiffOptions::default(), &ReadOptions::default()).unwrap();
    assert!(diff.steps.is_none());
    assert!(diff.notes[0].starts_with("steps: not compared (0 steps in A, 0 in B)"), "{:?}", diff.notes);
    let kinds: Vec<OpKind> = diff.ops.iter().map(|o| o.kind).collect();
    assert_eq!(kinds, OpKind::ALL);
    let kernels = &diff.ops[1];
    assert!(kernels.only_in_b.iter().any(|k| k.name == "input_transpose_fusion.kd"));
    assert!(kernels.only_in_a.iter().any(|k| k.name.starts_with("Cijk_Ailk_Bljk_BBS_BH_MT256x224x64")));
    assert_eq!(gate(&diff, "kernel:*.time>+20%"), GateStatus::Tripped);
    assert_eq!(gate(&diff, "step_time>+5%"), GateStatus::NoData);

    // Two hosts of one run (identical captures): host A against host B, nothing changes.
    let demo = external.join("openxla-xprof/demo");
    let a = SideRequest { path: &demo, run: Some("GPU-multi-worker"), host: Some("34.83.195.179_6003") };
    let b = SideRequest { host: Some("34.83.195.180_6003"), ..a };
    let diff = diff_paths(&a, &b, &DiffOptions::default(), &ReadOptions::default()).unwrap();
    assert_eq!(
        (diff.a.source.host.as_str(), diff.b.source.host.as_str()),
        ("34.83.195.179_6003", "34.83.195.180_6003")
    );
    assert_eq!(diff.a.steps, 1);
    assert_eq!(metric(&diff, "step_time").change.beyond_noise, None, "one step: no verdict");
    assert!(diff.ops.iter().all(|o| o.matched.iter().all(|op| op.self_time_us.delta == 0.0)));
    assert_eq!(gate(&diff, "step_time>-100%"), GateStatus::NoVerdict);
}
