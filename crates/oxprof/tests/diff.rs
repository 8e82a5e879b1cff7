//! `oxprof diff` and `oxprof summary` end to end on the committed pairs of
//! `testdata/diff/`: snapshots of the Markdown, the exit codes CI relies on (0 nothing
//! tripped, 1 a gate tripped, 2 bad input or usage), JSON and CSV, a saved baseline in
//! place of a run, and one-line errors naming the file.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs oxprof from the repository root with a hard time limit (a hang fails the test).
/// Its output is read while it runs (a summary is larger than a pipe's buffer).
fn oxprof(args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_oxprof"))
        .args(args)
        .current_dir(repo_root())
        .env("OXPROF_CACHE_DIR", concat!(env!("CARGO_TARGET_TMPDIR"), "/analysis-cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || sender.send(child.wait_with_output()));
    let out = match receiver.recv_timeout(Duration::from_secs(60)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // The child this test started, by its id.
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("oxprof {args:?} hung for 60 s");
        }
    };
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.contains("panicked"), "oxprof {args:?} panicked: {stderr}");
    Output { code: out.status.code().unwrap_or(-1), stdout: String::from_utf8(out.stdout).unwrap(), stderr }
}

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
