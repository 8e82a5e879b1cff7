//! `oxprof diff` and `oxprof summary` end to end on the committed pairs of
//! `testdata/diff/`: snapshots of the Markdown, the exit codes CI relies on (0 nothing
//! tripped, 1 a gate tripped, 2 bad input or usage), JSON and CSV, a saved baseline in
//! place of a run, and one-line errors naming the file.

use serde_json::Value;
use std::path::PathBuf;

mod common;
use common::{oxprof, repo_root};

const SLOW: &str = "testdata/diff/slow_b32";
const FAST: &str = "testdata/diff/fast_b32";
const B128: &str = "testdata/diff/fast_b128";

#[test]
fn input_bound_vs_fixed_pipeline_markdown_is_stable() {
    let out = oxprof(&[
        "diff",
        SLOW,
        FAST,
        "--fail-if",
        "input.share>+5",
        "--fail-if",
        "step_time>+5%",
        "--fail-if",
        "memory.peak>+256MiB",
        "--top",
        "5",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("| `input.share>+5` | passed |"), "{}", out.stdout);
    insta::assert_snapshot!("diff_input_bound_vs_fixed", out.stdout);
}

#[test]
fn batch_32_vs_128_trips_the_step_time_gate_with_exit_code_1() {
    let out = oxprof(&["diff", FAST, B128, "--fail-if", "step_time>+5%", "--fail-if", "op:MatMul.self_time>+10%"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stdout.contains("**FAILED: 2 of 2 gates tripped**"), "{}", out.stdout);
    // Which gate tripped and why, on stderr too (for CI logs), one line each.
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stderr);
    assert!(lines[0].starts_with("oxprof: gate step_time>+5% tripped: step_time: +115.6%, +3.206 ms"), "{}", lines[0]);
    assert!(lines[0].contains("beyond noise: Welch's t-test p < 0.001"), "{}", lines[0]);
    insta::assert_snapshot!("diff_batch_32_vs_128", out.stdout);
}

#[test]
fn exit_codes_follow_the_gates() {
    // The same run against itself: nothing beyond noise, nothing trips.
    let same = oxprof(&["diff", FAST, FAST, "--fail-if", "step_time>+0%", "--fail-if", "op:*.time>+0%"]);
    assert_eq!(same.code, 0, "{}{}", same.stdout, same.stderr);
    assert!(same.stderr.is_empty(), "{}", same.stderr);
    // A change past the threshold but within noise trips only with --no-noise-check.
    let noisy = ["diff", FAST, B128, "--fail-if", "input.share<-0.1", "--format", "json"];
    let within = oxprof(&noisy);
    assert_eq!(within.code, 0, "{}", within.stderr);
    let report: Value = serde_json::from_str(&within.stdout).unwrap();
    assert_eq!(report["gates"][0]["status"], "within_noise");
    let forced = oxprof(&[&noisy[..], &["--no-noise-check"]].concat());
    assert_eq!(forced.code, 1, "{}", forced.stderr);
    // Bad input and bad usage: 2.
    let bad_gate = oxprof(&["diff", FAST, FAST, "--fail-if", "step_tim>+5%"]);
    assert_eq!(bad_gate.code, 2);
    assert!(bad_gate.stderr.contains("unknown subject \"step_tim\""), "{}", bad_gate.stderr);
    let missing = oxprof(&["diff", FAST, "testdata/diff/nope"]);
    assert_eq!(missing.code, 2);
    assert_eq!(
        missing.stderr,
        "oxprof: testdata/diff/nope: no such file or directory; each side is a log directory, a run directory, an \
         .xplane.pb[.gz] file, or a summary written by `oxprof summary`\n"
    );
    let bad_host = oxprof(&["diff", FAST, B128, "--host", "nope"]);
    assert_eq!(bad_host.code, 2);
    assert!(bad_host.stderr.starts_with("oxprof: no host named \"nope\""), "{}", bad_host.stderr);
    assert_eq!(oxprof(&["diff", FAST]).code, 2, "B missing");
}

#[test]
fn json_and_csv_list_everything() {
    let json = oxprof(&["diff", SLOW, FAST, "--format", "json", "--fail-if", "step_time<-50%"]);
    assert_eq!(json.code, 1, "an improvement gate trips too: {}", json.stderr);
    let report: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["oxprof_diff"], 1);
    assert_eq!(report["tripped"], true);
    assert_eq!(report["gates"][0]["status"], "tripped");
    assert_eq!(report["a"]["source"]["path"], SLOW);
    let framework = &report["ops"][0];
    assert_eq!(framework["kind"], "framework_op");
    let listed = framework["matched"].as_array().unwrap().len();
    assert_eq!(listed, framework["counts"]["matched"].as_u64().unwrap() as usize, "the CLI lists every op");

    let csv = oxprof(&["diff", SLOW, FAST, "--format", "csv"]);
    assert_eq!(csv.code, 0);
    let mut lines = csv.stdout.lines();
    assert_eq!(
        lines.next().unwrap(),
        "section,kind,presence,subject,context,category,metric,unit,a,b,delta,relative,beyond_noise,p_value,hedges_g"
    );
    let rows: Vec<&str> = lines.collect();
    assert!(rows.iter().any(|r| r.starts_with("steps,,both,step_time,,,mean,ms,")), "{rows:?}");
    assert!(rows.iter().any(|r| r.starts_with("input,,both,input_share,,,share,percent,")));
    assert!(rows.iter().any(|r| r.starts_with("ops,framework_op,only_a,EagerPyFunc,host,EagerPyFunc,self_time,us,")));
    assert_eq!(rows.iter().filter(|r| r.starts_with("ops,")).count(), 4 * (listed + 1), "4 values per op");
}

#[test]
fn a_saved_summary_is_a_baseline() {
    let tmp = tempfile::tempdir().unwrap();
    let baseline = tmp.path().join("baseline.json");
    let baseline = baseline.to_str().unwrap();
    let saved = oxprof(&["summary", FAST, "--out", baseline]);
    assert_eq!(saved.code, 0, "{}", saved.stderr);
    assert!(
        saved.stderr.starts_with(&format!("oxprof: wrote {baseline} (summary of {FAST} (run ")),
        "{}",
        saved.stderr
    );
    let text = std::fs::read_to_string(baseline).unwrap();
    assert!(text.starts_with("{\n  \"oxprof_summary\": 1,\n  \"oxprof_version\": \""), "{}", &text[..80]);

    let from_summary = oxprof(&["diff", baseline, B128, "--format", "json", "--fail-if", "step_time>+5%"]);
    let from_run = oxprof(&["diff", FAST, B128, "--format", "json", "--fail-if", "step_time>+5%"]);
    assert_eq!((from_summary.code, from_run.code), (1, 1), "{}", from_summary.stderr);
    let (mut x, mut y): (Value, Value) =
        (serde_json::from_str(&from_summary.stdout).unwrap(), serde_json::from_str(&from_run.stdout).unwrap());
    assert_eq!(x["a"]["source"]["summary"], baseline);
    x["a"] = Value::Null;
    y["a"] = Value::Null;
    assert_eq!(x, y, "the same comparison from the baseline as from the run");

    // To standard output without --out; a summary of a summary is refused.
    let stdout = oxprof(&["summary", FAST]);
    assert_eq!((stdout.code, stdout.stdout.len()), (0, text.len()));
    let again = oxprof(&["summary", baseline]);
    assert_eq!(again.code, 2);
    assert!(again.stderr.contains("is already a summary"), "{}", again.stderr);

    // Over --max-summary-bytes: one line naming the file and the flag.
    let over = oxprof(&["diff", baseline, B128, "--max-summary-bytes", "1KiB"]);
    assert_eq!(over.code, 2);
    assert_eq!(over.stderr.lines().count(), 1, "{}", over.stderr);
    assert!(over.stderr.starts_with(&format!("oxprof: {baseline}: ")), "{}", over.stderr);
    assert!(over.stderr.contains("over the budget of 1024 (--max-summary-bytes)"), "{}", over.stderr);
}

#[test]
fn the_persistent_analysis_cache_gives_the_same_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().to_str().unwrap();
    let args = ["diff", FAST, B128, "--format", "json"];
    let uncached = oxprof(&[&args[..], &["--no-cache"]].concat());
    assert_eq!(uncached.code, 0, "{}", uncached.stderr);
    let filling = oxprof(&[&args[..], &["--cache-dir", cache]].concat());
    let info = oxprof(&["cache", "info", "--cache-dir", cache]);
    assert!(info.stdout.contains(": 2 entries"), "one per profile: {}", info.stdout);
    let reopened = oxprof(&[&args[..], &["--cache-dir", cache]].concat());
    assert_eq!(filling.stdout, uncached.stdout);
    assert_eq!(reopened.stdout, uncached.stdout);
    let summary = oxprof(&["summary", FAST, "--cache-dir", cache]);
    assert_eq!(summary.stdout, oxprof(&["summary", FAST, "--no-cache"]).stdout);
}

#[test]
fn diff_help_is_stable() {
    let out = oxprof(&["diff", "--help"]);
    assert_eq!(out.code, 0);
    insta::assert_snapshot!("diff_help", out.stdout);
}

/// A PyTorch run of six steps, written as a tiny Kineto trace; step `i` (times in µs from
/// its start `s`, its length 400 + `gemm[i]`):
///
/// ```text
/// host tid 7  |ProfilerStep#i------------------------------------------------------|
///               |enumerate(DataLoader)…| |aten::mm----------|  |aten::add_| |extra|
///               s+10              s+110  s+200  |launch|  s+500  s+550  +50   s+620 +20
///                                              s+250 +20 (correlation c)
/// GPU 0 stream 7                                    |gemm: s+300, gemm[i] µs|
/// ```
///
/// `extra` is `aten::relu` in one run and `aten::gelu` in the other (an operator only in
/// A, one only in B).
fn kineto_run(gemm_us: &[f64], extra: &str) -> String {
    let mut events = Vec::new();
    let mut s = 1000.0;
    for (i, &gemm) in gemm_us.iter().enumerate() {
        let (ext, corr) = (100 * i + 1, 1000 + i);
        events.push(format!(
            r#"{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{i}", "pid": 1, "tid": 7, "ts": {s}, "dur": {}}}"#,
            400.0 + gemm
        ));
        events.push(format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "pid": 1, "tid": 7, "ts": {}, "dur": 100}}"#,
            s + 10.0
        ));
        events.push(format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 7, "ts": {}, "dur": 300, "args": {{"External id": {ext}}}}}"#,
            s + 200.0
        ));
        events.push(format!(
            r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 7, "ts": {}, "dur": 20, "args": {{"External id": {ext}, "correlation": {corr}}}}}"#,
            s + 250.0
        ));
        events.push(format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "sm80_gemm", "pid": 0, "tid": 7, "ts": {}, "dur": {gemm}, "args": {{"device": 0, "stream": 7, "correlation": {corr}, "External id": {ext}}}}}"#,
            s + 300.0
        ));
        events.push(format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::add_", "pid": 1, "tid": 7, "ts": {}, "dur": 50, "args": {{"External id": {}}}}}"#,
            s + 550.0,
            ext + 1
        ));
        events.push(format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "{extra}", "pid": 1, "tid": 7, "ts": {}, "dur": 20, "args": {{"External id": {}}}}}"#,
            s + 620.0,
            ext + 2
        ));
        s += 400.0 + gemm;
    }
    format!(
        "{{\"schemaVersion\": 1, \"deviceProperties\": [], \"traceEvents\": [\n{}\n], \"baseTimeNanoseconds\": \
         1700000000000000000}}\n",
        events.join(",\n")
    )
}

/// The hand-built PyTorch pair, written under the test's temporary directory: A's GEMM
/// takes ~400 µs a step, B's ~600 µs (so steps 0.8 → 1.0 ms).
fn pytorch_pair() -> (String, String) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("diff-pytorch-pair");
    std::fs::create_dir_all(&dir).unwrap();
    let a = dir.join("a.pt.trace.json");
    let b = dir.join("b.pt.trace.json");
    std::fs::write(&a, kineto_run(&[400.0, 410.0, 395.0, 405.0, 400.0, 390.0], "aten::relu")).unwrap();
    std::fs::write(&b, kineto_run(&[600.0, 610.0, 590.0, 605.0, 600.0, 595.0], "aten::gelu")).unwrap();
    (a.to_str().unwrap().to_string(), b.to_str().unwrap().to_string())
}

#[test]
fn a_pytorch_pair_compares_steps_and_operators() {
    let (a, b) = pytorch_pair();
    let out = oxprof(&["diff", &a, &b, "--fail-if", "step:kernel>+20%", "--fail-if", "op:aten::mm.self_time>+10%"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("| `step:kernel>+20%` | **tripped** |"), "{}", out.stdout);
    assert!(out.stdout.contains("| `op:aten::mm.self_time>+10%` | passed |"), "{}", out.stdout);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("diff-pytorch-pair");
    let shown = out.stdout.replace(dir.to_str().unwrap(), "<tmp>");
    insta::assert_snapshot!("diff_pytorch_pair", shown);

    // The same run against itself: nothing trips; no gate: 0.
    let same = oxprof(&["diff", &a, &a, "--fail-if", "step_time>+0%", "--fail-if", "op:*.device_self_time>+0%"]);
    assert_eq!(same.code, 0, "{}{}", same.stdout, same.stderr);
    let json = oxprof(&["diff", &a, &b, "--format", "json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let report: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!((report["steps"]["source"].as_str(), report["steps"]["steps_a"].as_u64()), (Some("pytorch"), Some(6)));
    assert_eq!(report["ops"][0]["tool"], "pytorch_op_stats");
    let csv = oxprof(&["diff", &a, &b, "--format", "csv"]);
    assert!(csv.stdout.lines().any(|l| l.starts_with("ops,framework_op,both,aten::mm,,,device_self_time,us,")));
    // A bad op metric is bad usage.
    let bad = oxprof(&["diff", &a, &b, "--fail-if", "op:aten::mm.gpu_time>+1%"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("device_self_time"), "{}", bad.stderr);
}

#[test]
fn a_pytorch_summary_is_version_2_and_stands_in_for_its_run() {
    let (a, b) = pytorch_pair();
    let tmp = tempfile::tempdir().unwrap();
    let baseline = tmp.path().join("baseline.json");
    let baseline = baseline.to_str().unwrap();
    let saved = oxprof(&["summary", &a, "--out", baseline]);
    assert_eq!(saved.code, 0, "{}", saved.stderr);
    let text = std::fs::read_to_string(baseline).unwrap();
    assert!(text.starts_with("{\n  \"oxprof_summary\": 2,"), "{}", &text[..60]);
    let from_summary = oxprof(&["diff", baseline, &b, "--format", "json"]);
    let from_run = oxprof(&["diff", &a, &b, "--format", "json"]);
    assert_eq!((from_summary.code, from_run.code), (0, 0), "{}", from_summary.stderr);
    let (mut x, mut y): (Value, Value) =
        (serde_json::from_str(&from_summary.stdout).unwrap(), serde_json::from_str(&from_run.stdout).unwrap());
    x["a"] = Value::Null;
    y["a"] = Value::Null;
    assert_eq!(x, y, "the same comparison from the baseline as from the run");
    // A version this oxprof does not know: one line, what to do, exit 2.
    std::fs::write(baseline, text.replacen("\"oxprof_summary\": 2", "\"oxprof_summary\": 3", 1)).unwrap();
    let newer = oxprof(&["diff", baseline, &b]);
    assert_eq!(newer.code, 2);
    assert!(newer.stderr.contains("version 3, newer than this oxprof reads (2): upgrade oxprof"), "{}", newer.stderr);
}

#[test]
fn committed_kineto_runs_compare_rank_0_with_rank_1() {
    let dir = repo_root().join("testdata/kineto/ddp");
    let file = |rank: &str| {
        let entries = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path());
        entries.into_iter().find(|p| p.file_name().unwrap().to_string_lossy().starts_with(rank)).unwrap()
    };
    let (a, b) = (file("rank0."), file("rank1."));
    let out = oxprof(&["diff", a.to_str().unwrap(), b.to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    // Two profiled steps a side: compared, without a verdict.
    assert_eq!((report["steps"]["steps_a"].as_u64(), report["steps"]["steps_b"].as_u64()), (Some(2), Some(2)));
    assert!(report["steps"]["metrics"][0]["change"]["beyond_noise"].is_null());
    let ops = report["ops"][0]["matched"].as_array().unwrap();
    assert!(ops.iter().any(|o| o["name"] == "aten::addmm"), "ATen operators are framework ops");
}
