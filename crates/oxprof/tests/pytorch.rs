//! PyTorch traces through the binary: found in torch-tb-profiler's layout, inspected and
//! analysed like XSpaces, converted to XSpace and to Chrome JSON (both re-read with the
//! same events), and garbage named `.pt.trace.json` refused in one line with exit code 2.

use serde_json::Value;
use std::io::Read;
use std::path::PathBuf;

mod common;
use common::{Output, oxprof, repo_root};

fn fixtures() -> PathBuf {
    repo_root().join("testdata/kineto")
}

fn train_trace() -> PathBuf {
    let dir = fixtures().join("train");
    std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).find(|p| p.to_string_lossy().ends_with(".gz")).unwrap()
}

#[test]
fn a_pytorch_log_directory_lists_runs_and_ranks() {
    let out = oxprof(&["inspect", "--json", fixtures().to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let runs: Vec<(String, Vec<String>)> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let hosts = r["hosts"].as_array().unwrap().iter().map(|h| h["host"].as_str().unwrap().to_string());
            (r["run"].as_str().unwrap().to_string(), hosts.collect())
        })
        .collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0].0, "train");
    assert_eq!(runs[1].0, "ddp");
    assert!(runs[1].1[0].starts_with("rank0.") && runs[1].1[1].starts_with("rank1."), "{runs:?}");
}

#[test]
fn tools_run_on_a_pytorch_trace() {
    let trace = train_trace();
    for tool in ["framework_op_stats", "overview_page", "trace_viewer@", "memory_profile"] {
        let out = oxprof(&["data", tool, trace.to_str().unwrap()]);
        assert_eq!(out.code, 0, "{tool}: {}", out.stderr);
        let _: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{tool}: {e}"));
    }
}

#[test]
fn convert_to_chrome_json_keeps_every_event_and_name() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = train_trace();
    let out_path = tmp.path().join("out.json");
    let out = oxprof(&["convert", trace.to_str().unwrap(), "--to", "chrome-json", out_path.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let exported: Value = serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    let mut original = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&trace).unwrap()).read_to_string(&mut original).unwrap();
    let original: Value = serde_json::from_str(&original).unwrap();
    // Events with a duration or instants, by name (metadata and flows aside).
    let names = |doc: &Value| {
        let mut v: Vec<String> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| matches!(e["ph"].as_str(), Some("X" | "i" | "I" | "C")))
            .map(|e| e["name"].as_str().unwrap_or("").to_string())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names(&exported), names(&original));
    let flows = |doc: &Value| {
        doc["traceEvents"].as_array().unwrap().iter().filter(|e| matches!(e["ph"].as_str(), Some("s" | "f"))).count()
    };
    assert_eq!(flows(&exported), flows(&original));
    // And oxprof reads its own output (gzip too).
    let gz = tmp.path().join("out.json.gz");
    let out = oxprof(&["convert", trace.to_str().unwrap(), "--to", "chrome-json", gz.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = oxprof(&["inspect", "--json", gz.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn convert_to_xspace_gives_the_same_model() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = train_trace();
    let xplane = tmp.path().join("worker0.xplane.pb");
    let out = oxprof(&["convert", trace.to_str().unwrap(), "--to", "xspace", xplane.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let a = oxprof(&["inspect", "--json", trace.to_str().unwrap()]);
    let b = oxprof(&["inspect", "--json", xplane.to_str().unwrap()]);
    let planes = |o: &Output| {
        let v: Value = serde_json::from_str(&o.stdout).unwrap();
        v["runs"][0]["hosts"][0]["planes"].clone()
    };
    assert_eq!(planes(&a), planes(&b));
    // XSpace → Chrome JSON works the same way.
    let json = tmp.path().join("x.json");
    let out = oxprof(&["convert", xplane.to_str().unwrap(), "--to", "chrome-json", json.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn garbage_named_like_a_trace_is_one_clear_line() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("w.1.pt.trace.json");
    std::fs::write(&path, b"this is not json").unwrap();
    let out = oxprof(&["inspect", path.to_str().unwrap()]);
    assert_eq!(out.code, 2);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(lines[0].contains("not a PyTorch/Chrome JSON trace: expected '{' or '[' at byte 0"), "{}", out.stderr);
    assert!(lines[0].contains("torch.profiler"), "{}", out.stderr);
}
