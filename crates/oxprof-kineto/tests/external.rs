//! Every third-party PyTorch trace under `../shared/testdata/external` imports with as many
//! events as a plain JSON count finds (`scripts/dev/count-trace-events.py` wrote
//! `testdata/external-counts/kineto.json`), and with only the diagnostics explained below
//! (each one is what the file really holds). Skips when the folder is absent.

use oxprof_model::{DiagnosticKind, KeepPages, LoadLimits};
use std::io::Read;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn external_root() -> Option<PathBuf> {
    let dir = std::env::var_os("OXPROF_EXTERNAL_TESTDATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/testdata/external"));
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("SKIP: {} is absent; third-party PyTorch traces not checked", dir.display());
        None
    }
}

fn read(path: &Path) -> Vec<u8> {
    let raw = std::fs::read(path).unwrap();
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut out).unwrap();
        out
    } else {
        raw
    }
}

/// The diagnostics a file may raise, and why (what the file really holds).
fn explained(rel: &str) -> Vec<(DiagnosticKind, u64)> {
    use DiagnosticKind::*;
    match rel {
        // Python-tracer events (`python_function`) that end a few hundred ns after the
        // record_function (`cpu_op`/`user_annotation`) they enclose, on the main thread;
        // and on stream 7, `gpu_user_annotation` spans cut across kernels.
        "AMD-AGI-TraceLens/tests/traces/b200/eager_trace.json.gz" => {
            vec![(OverlappingEvents, 42), (MissingThreadName, 2)] // no `M` events at all
        }
        // One `ProfilerStep#6` that starts inside a Python event and outlives it.
        "AMD-AGI-TraceLens/tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
        | "AMD-AGI-TraceLens/tests/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz"
        | "AMD-AGI-TraceLens/tests/traces/mi300/gaunernst_bert-small-uncased__1016001.json.gz" => {
            vec![(OverlappingEvents, 1)]
        }
        // The GPU stream and the overhead "process" (pid -1) have no thread_name.
        "AMD-AGI-TraceLens/tests/traces/mi210/gpu_only_trace/gpu_only_trace.json.gz" => vec![(MissingThreadName, 2)],
        // Two thread_name events for the main thread.
        "facebookresearch-HolisticTraceAnalysis/tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz" => {
            vec![(DuplicateThreadName, 1)]
        }
        // `cuda_sync` "Stream Sync" events that start inside a memcpy and end after it.
        "facebookresearch-HolisticTraceAnalysis/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz" =>
        {
            vec![(OverlappingEvents, 8)]
        }
        // A thread with a negative tid (no thread_name), and tid 2919752 named twice.
        "facebookresearch-HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz"
        | "facebookresearch-HolisticTraceAnalysis/tests/data/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz" =>
        {
            vec![(MissingThreadName, 1), (DuplicateThreadName, 1)]
        }
        // The CUPTI callback thread has no thread_name.
        "facebookresearch-HolisticTraceAnalysis/tests/data/triton_example/triton_example.json.gz" => {
            vec![(MissingThreadName, 1)]
        }
        _ => vec![],
    }
}

#[test]
fn external_traces_import_with_plain_json_event_counts() {
    let Some(root) = external_root() else { return };
    let counts: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("testdata/external-counts/kineto.json")).unwrap(),
    )
    .unwrap();
    let mut checked = 0;
    for (rel, expected) in counts.as_object().unwrap() {
        let bytes = read(&root.join(rel));
        assert!(oxprof_kineto::sniff(&bytes[..bytes.len().min(oxprof_kineto::SNIFF_BYTES)]), "{rel}: not recognised");
        let space = oxprof_kineto::import_kineto(&bytes, &KeepPages, &LoadLimits::default())
            .unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert_eq!(space.event_count() as u64, expected["events"].as_u64().unwrap(), "{rel}");
        let got: Vec<(DiagnosticKind, u64)> = space.diagnostics.iter().collect();
        assert_eq!(got, explained(rel), "{rel}: unexplained diagnostics");
        assert_eq!(space.planes[0].name, "/host:CPU", "{rel}");
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} traces checked");
}
