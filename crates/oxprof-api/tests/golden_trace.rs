//! Parity of `trace_viewer@` with XProf 2.24.2, and checks of oxprof's LOD trace API.
//!
//! Trace events are compared as multisets (XProf's order of counter series and flows is not
//! defined) after masking flow ids (`bind_id`, `id`: XProf hashes them with a per-process
//! salt) and reading `ts`/`dur` as integer picoseconds; everything else of each event
//! (`pid`, `tid`, `name`, `ph`, `args` incl. `group_id` and `uid`, `z`, flow direction and
//! category) must be equal, and so must the header fields.
//!
//! Goldens: the refkit profiles' `xprof_out/trace_viewer@*.json.gz` (default view at
//! resolution 8000, a 20–30 ms window, a `Thunk` prefix search, one event's details), and
//! the third-party outputs in `../shared/testdata/external-xprof-out/` (skipped when absent).
//! Device planes include XProf's derived timelines: per GPU stream Framework Name Scope /
//! Framework Ops / XLA Modules / XLA Ops / Source code; on TPU planes Framework Name Scope /
//! Framework Ops / Source code with group ids and the Host Offload Ops rows.

use common::{external_dir, external_outputs_dir, repo_root};
use oxprof_api::data::{DataRequest, data};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};

use oxprof_api::registry::ToolId;
use oxprof_testkit::golden as common;

fn read_json(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let text = if path.extension().is_some_and(|e| e == "gz") {
        let mut s = String::new();
        flate2::read::GzDecoder::new(&bytes[..]).read_to_string(&mut s).unwrap();
        s
    } else {
        String::from_utf8(bytes).unwrap()
    };
    serde_json::from_str(&text).unwrap()
}

fn ps(v: &Value) -> Value {
    v.as_f64().map_or(v.clone(), |x| Value::from((x * 1e6).round() as i64))
}

/// An event with flow ids masked and times as integer ps, as a canonical string.
fn normalized(e: &Value) -> String {
    let mut e = e.clone();
    if let Some(o) = e.as_object_mut() {
        for k in ["bind_id", "id"] {
            if o.contains_key(k) {
                o.insert(k.to_string(), Value::from("F"));
            }
        }
        for k in ["ts", "dur"] {
            if let Some(v) = o.get(k).map(ps) {
                o.insert(k.to_string(), v);
            }
        }
        if let Some(Value::Array(entries)) = o.get_mut("entries") {
            for entry in entries {
                if let Some(first) = entry.get_mut(0) {
                    *first = ps(first);
                }
            }
        }
    }
    let sorted: BTreeMap<String, Value> =
        e.as_object().map(|o| o.iter().map(|(k, v)| (k.clone(), v.clone())).collect()).unwrap_or_default();
    serde_json::to_string(&sorted).unwrap()
}

fn event_multiset(v: &Value) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for e in v["traceEvents"].as_array().unwrap() {
        if e.as_object().is_some_and(|o| o.is_empty()) {
            continue;
        }
        *out.entry(normalized(e)).or_insert(0) += 1;
    }
    out
}

/// Differences between XProf's and oxprof's outputs (empty: equal).
fn differences(expected: &Value, actual: &Value) -> Vec<String> {
    let mut diffs = Vec::new();
    for key in ["returnedEventsSize", "filteredByVisibility", "details", "stackFrames", "totalCounterEvents"] {
        if expected[key] != actual[key] {
            diffs.push(format!("{key}: expected {} got {}", expected[key], actual[key]));
        }
    }
    for i in 0..2 {
        let (e, a) = (expected["fullTimespan"][i].as_f64(), actual["fullTimespan"][i].as_f64());
        if e.zip(a).is_none_or(|(e, a)| (e - a).abs() > 1e-6 * e.abs().max(1.0)) {
            diffs.push(format!("fullTimespan[{i}]: expected {e:?} got {a:?}"));
        }
    }
    let (e, a) = (event_multiset(expected), event_multiset(actual));
    let mut missing: Vec<&String> =
        e.iter().filter(|(k, n)| a.get(*k).copied().unwrap_or(0) < **n).map(|(k, _)| k).collect();
    let mut extra: Vec<&String> =
        a.iter().filter(|(k, n)| e.get(*k).copied().unwrap_or(0) < **n).map(|(k, _)| k).collect();
    missing.sort();
    extra.sort();
    if !missing.is_empty() || !extra.is_empty() {
        diffs.push(format!(
            "{} events only in XProf's output, {} only in oxprof's; e.g. expected {:?} / got {:?}",
            missing.len(),
            extra.len(),
            missing.first(),
            extra.first()
        ));
    }
    diffs
}

fn run_tool(path: &Path, host: Option<&str>, params: &[(&str, &str)]) -> Value {
    let request = DataRequest {
        host: host.map(str::to_string),
        params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..DataRequest::new(ToolId::TRACE_VIEWER_STREAMING)
    };
    let response = data(path, &request).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&response.body).unwrap()
}

const REFKIT: &[&str] = &["jax_train", "tf_custom_loop", "tf_keras_fit", "tf_memory", "tf_memory_nobfc"];

/// (golden file suffix, request parameters) of the refkit goldens.
const VARIANTS: &[(&str, &[(&str, &str)])] = &[
    ("", &[("resolution", "8000")]),
    (".zoom_20_30", &[("resolution", "8000"), ("start_time_ms", "20"), ("end_time_ms", "30")]),
    (".search_Thunk", &[("resolution", "8000"), ("search_prefix", "Thunk")]),
    (
        ".event",
        &[
            ("event_name", "ThunkExecutor::Execute"),
            ("start_time_ms", "30.667564"),
            ("duration_ms", "0.701116"),
            ("unique_id", "0"),
        ],
    ),
];

#[test]
fn refkit_profiles_match_xprof() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for name in REFKIT {
        let dir = repo_root().join("testdata/profiles").join(name);
        for (suffix, params) in VARIANTS {
            let golden = dir.join(format!("xprof_out/trace_viewer@{suffix}.json.gz"));
            if !golden.exists() {
                continue;
            }
            checked += 1;
            let actual = run_tool(&dir, None, params);
            let diffs = differences(&read_json(&golden), &actual);
            if !diffs.is_empty() {
                failures.push(format!("{name}{suffix}: {}", diffs.join("; ")));
            }
        }
    }
    assert!(checked >= 9, "goldens missing: {checked} checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// XProf's legacy `trace_viewer` (the whole trace, every argument as a string).
#[test]
fn legacy_trace_viewer_matches_xprof() {
    let dir = repo_root().join("testdata/profiles/jax_train");
    let golden = dir.join("xprof_out/trace_viewer.json.gz");
    let request = DataRequest::new(ToolId::TRACE_VIEWER);
    let actual: Value = serde_json::from_str(&data(&dir, &request).unwrap().body).unwrap();
    let expected = read_json(&golden);
    let masked = |v: &Value| -> HashMap<String, usize> {
        let mut v = v.clone();
        for e in v["traceEvents"].as_array_mut().unwrap() {
            if let Some(args) = e.get_mut("args").and_then(Value::as_object_mut)
                && args.contains_key("flow")
            {
                args.insert("flow".to_string(), Value::from("F"));
            }
        }
        event_multiset(&v)
    };
    assert_eq!(masked(&expected), masked(&actual));
}

#[test]
fn external_profiles_match_xprof() {
    let (Some(ext), Some(out)) = (external_dir(), external_outputs_dir()) else {
        eprintln!("SKIP: external test data not found");
        return;
    };
    let cases: &[(&str, &str, Option<&str>)] = &[
        (
            "openxla-xprof/demo/plugins/profile/GPU-multi-worker/34.83.195.179_6003.xplane.pb",
            "openxla-xprof/34.83.195.179_6003",
            None,
        ),
        (
            "openxla-xprof/demo/plugins/profile/GPU-multi-worker",
            "openxla-xprof/GPU-multi-worker_two_hosts/ALL_HOSTS",
            None,
        ),
        (
            "openxla-xprof/demo/plugins/profile/GPU-multi-worker",
            "openxla-xprof/GPU-multi-worker_two_hosts/34.83.195.180_6003",
            Some("34.83.195.180_6003"),
        ),
        ("openxla-xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb", "openxla-xprof/tpu_inference_2", None),
        (
            "AMD-AGI-TraceLens/tests/traces/mi300/jax08_gemm/tw003.xplane.pb",
            "AMD-AGI-TraceLens/jax08_gemm__tw003",
            None,
        ),
        (
            "AMD-AGI-TraceLens/tests/traces/mi300/jax08_attention/tw003.xplane.pb",
            "AMD-AGI-TraceLens/jax08_attention__tw003",
            None,
        ),
        (
            "AMD-AGI-TraceLens/tests/traces/mi300/jax08_conv/tw003.xplane.pb",
            "AMD-AGI-TraceLens/jax08_conv__tw003",
            None,
        ),
        (
            "AMD-AGI-TraceLens/tests/traces/mi300/jax08_elementwise/tw003.xplane.pb",
            "AMD-AGI-TraceLens/jax08_elementwise__tw003",
            None,
        ),
        (
            "AMD-AGI-TraceLens/tests/traces/mi300/jax_conv_minimal",
            "AMD-AGI-TraceLens/chi-mi300x-013.ord.vultr.cpe.ice.amd.com",
            None,
        ),
        (
            "AMD-AGI-TraceLens/tests/test_data_jax_te_fused_attn_categorization/934987a2fc2f.xplane.pb",
            "AMD-AGI-TraceLens/934987a2fc2f",
            None,
        ),
    ];
    let mut failures = Vec::new();
    for (input, output, host) in cases {
        let input_path = ext.join(input);
        let golden = if output.contains("two_hosts") {
            let (folder, host_dir) = output.rsplit_once('/').unwrap();
            out.join(folder).join("xprof_out").join(host_dir).join("trace_viewer@.json.gz")
        } else {
            out.join(output).join("xprof_out/trace_viewer@.json.gz")
        };
        if !input_path.exists() || !golden.exists() {
            eprintln!("SKIP: {input}");
            continue;
        }
        let actual = run_tool(&input_path, *host, &[("resolution", "8000")]);
        let diffs = differences(&read_json(&golden), &actual);
        if !diffs.is_empty() {
            failures.push(format!("{output}: {}", diffs.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The LOD API on a refkit profile: every event is reachable, windows are bounded and
/// count what they hide, details and search work across the whole trace.
#[test]
fn lod_api_on_refkit_profile() {
    let dir = repo_root().join("testdata/profiles/jax_train");
    let (session, run) = oxprof_api::data::open_run(&dir, None).unwrap();
    let tracks = oxprof_api::trace::tracks(&session, &run, None).unwrap();
    let total: usize = tracks.sections.iter().flat_map(|s| &s.tracks).map(|t| t.num_events).sum();
    assert_eq!(total, tracks.num_events);
    assert_eq!(tracks.sections[0].pid, 701);
    // Full view at 500 bins: bounded per track, hidden events counted.
    let params: BTreeMap<String, String> =
        [("width", "500"), ("exact_limit", "100")].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let w = oxprof_api::trace::window(&session, &run, None, &params).unwrap();
    assert_eq!(w.total_in_window, total);
    assert_eq!(w.total_returned + w.total_hidden, total);
    for t in &w.tracks {
        assert!(t.events.len() <= 4 * 500 * 8, "track {} returned {}", t.id, t.events.len());
        assert!(t.events.windows(2).all(|p| p[0].ts_ps <= p[1].ts_ps));
    }
    // Zoomed in on 10 µs: exact.
    let start = w.start_ps + (w.end_ps - w.start_ps) / 2;
    let params: BTreeMap<String, String> =
        [("start_ps", start.to_string()), ("end_ps", (start + 10_000_000).to_string())]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
    let z = oxprof_api::trace::window(&session, &run, None, &params).unwrap();
    assert!(z.tracks.iter().all(|t| t.exact && t.hidden == 0));
    // Search returns matches anywhere; details by id.
    let s = oxprof_api::trace::search(&session, &run, None, "ThunkExecutor", Some(3)).unwrap();
    assert!(s.total > 3 && s.truncated && s.matches.len() == 3);
    let d = oxprof_api::trace::event(&session, &run, None, s.matches[0].id).unwrap();
    assert!(d.name.starts_with("ThunkExecutor"));
    // A flow: both ends found.
    let flow_event = w.tracks.iter().flat_map(|t| &t.events).find_map(|e| e.flow).unwrap();
    let f = oxprof_api::trace::flow(&session, &run, None, flow_event.0).unwrap();
    assert!(f.events.len() >= 2);
}

/// The LOD API lists the derived lines of TPU planes as tracks, with XProf's event counts
/// (those of its `trace_viewer@` output, which shows every event of this small profile).
#[test]
fn lod_tracks_include_tpu_derived_lines() {
    let Some(ext) = external_dir() else {
        eprintln!("SKIP: external test data not found");
        return;
    };
    let path = ext.join("openxla-xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb");
    if !path.exists() {
        eprintln!("SKIP: {}", path.display());
        return;
    }
    let (session, run) = oxprof_api::data::open_run(&path, None).unwrap();
    let tracks = oxprof_api::trace::tracks(&session, &run, None).unwrap();
    let tpu0 = tracks.sections.iter().find(|s| s.name.ends_with("/device:TPU:0")).unwrap();
    let count = |name: &str| tpu0.tracks.iter().find(|t| t.name == name).map(|t| t.num_events);
    assert_eq!(count("Framework Name Scope"), Some(208));
    assert_eq!(count("Framework Ops"), Some(104));
    assert_eq!(count("Source code"), Some(104));
    let rows: Vec<usize> = (0..5).filter_map(|k| count(&format!("Host Offload Ops row {k}"))).collect();
    assert_eq!(rows, [164, 165, 164, 107]);
    assert_eq!(tpu0.tracks.iter().find(|t| t.name == "Framework Ops").and_then(|t| t.tid), Some(0xdead_bef2));
}

/// Event details and search on the TPU derived lines, against XProf 2.24.2's answers to the
/// same requests (recorded with the refkit's XProf on this file: `xprof.convert.
/// raw_to_tool_data.xspace_to_tool_data(..., "trace_viewer@", {"trace_viewer_options":
/// ...})`): the event (full arguments, incl. the Host Offload event's stats) and the
/// stack frames.
#[test]
fn tpu_derived_event_details_match_xprof() {
    let Some(ext) = external_dir() else {
        eprintln!("SKIP: external test data not found");
        return;
    };
    let path = ext.join("openxla-xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb");
    if !path.exists() {
        eprintln!("SKIP: {}", path.display());
        return;
    }
    const SOURCE_37: &str = "experimental/users/davelacey/host_offload_stress_test/host_offload_stress_test.py:37";
    let cases: &[(&[(&str, &str)], &str)] = &[
        (
            &[
                ("event_name", "broadcast_in_dim"),
                ("start_time_ms", "5439.0117445"),
                ("duration_ms", "4.443766328"),
                ("unique_id", "2"),
            ],
            r#"{"event":{"pid":1003,"tid":3735928562,"name":"broadcast_in_dim","ts":5439011.7445,"dur":4443.766328,"ph":"X","args":{"group_id":1},"sf":1,"z":2},"stackFrames":{"1":{"name":"jit(broadcast_in_dim)/jit(main)/broadcast_in_dim:"}}}"#,
        ),
        (
            &[
                ("event_name", "jit(broadcast_in_dim)"),
                ("start_time_ms", "5439.0117445"),
                ("duration_ms", "4.443766328"),
                ("unique_id", "1"),
            ],
            r#"{"event":{"pid":1003,"tid":3735928561,"name":"jit(broadcast_in_dim)","ts":5439011.7445,"dur":4443.766328,"ph":"X","args":{"group_id":1},"z":1},"stackFrames":{}}"#,
        ),
        (
            &[
                ("event_name", "offload-copy.0"),
                ("start_time_ms", "19500.5429495"),
                ("duration_ms", "189.172518906"),
                ("unique_id", "0"),
            ],
            r#"{"event":{"pid":1003,"tid":3735928567,"name":"offload-copy.0","ts":19500542.9495,"dur":189172.518906,"ph":"X","args":{"long_name":"","raw_bytes_accessed":5368709120,"shape_with_layout":"(f32[5,1024,1024,256]{3,2,1,0:T(8,128)}, f32[5,1024,1024,256]{3,2,1,0:T(8,128)S(5)}, u32[]{:S(2)})"}},"stackFrames":{}}"#,
        ),
        (
            &[
                ("event_name", SOURCE_37),
                ("start_time_ms", "5439.0117445"),
                ("duration_ms", "4.443766328"),
                ("unique_id", "3"),
            ],
            r#"{"event":{"pid":1003,"tid":3735928566,"name":"experimental/users/davelacey/host_offload_stress_test/host_offload_stress_test.py:37","ts":5439011.7445,"dur":4443.766328,"ph":"X","args":{"group_id":1},"z":3},"stackFrames":{}}"#,
        ),
    ];
    for (params, expected) in cases {
        let expected: Value = serde_json::from_str(expected).unwrap();
        let actual = run_tool(&path, None, params);
        let events: Vec<&Value> = actual["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(events.len(), 1, "{params:?}");
        assert_eq!(normalized(events[0]), normalized(&expected["event"]), "{params:?}");
        assert_eq!(actual["stackFrames"], expected["stackFrames"], "{params:?}");
    }
    // Search: every Host Offload event of that name (XProf returns 400).
    let found = run_tool(&path, None, &[("resolution", "8000"), ("search_prefix", "offload-copy.5")]);
    assert_eq!(found["returnedEventsSize"], 400);
}

/// The server's `/oxprof/api/trace/<sub>` dispatcher.
#[test]
fn trace_routes_dispatch() {
    let dir = repo_root().join("testdata/profiles/tf_keras_fit");
    let params: HashMap<&str, String> = [("width", "100".to_string()), ("prefix", "Iterator".to_string())].into();
    let get = |k: &str| params.get(k).cloned();
    let (session, run) = oxprof_api::data::open_run(&dir, None).unwrap();
    let route = |sub: &str, get: &dyn Fn(&str) -> Option<String>| {
        oxprof_api::trace::route(&session, &run, sub, get).map(|body| serde_json::from_str::<Value>(&body).unwrap())
    };
    let tracks = route("tracks", &get).unwrap();
    assert!(!tracks["sections"].as_array().unwrap().is_empty());
    let window = route("/window", &get).unwrap();
    assert_eq!(
        window["resolution_ps"].as_u64().unwrap(),
        (window["end_ps"].as_u64().unwrap() - window["start_ps"].as_u64().unwrap()) / 100
    );
    let search = route("search", &get).unwrap();
    assert!(search["total"].as_u64().unwrap() > 0);
    let id = search["matches"][0]["id"].as_u64().unwrap().to_string();
    let with_id = |k: &str| if k == "id" { Some(id.clone()) } else { None };
    let event = route("event", &with_id).unwrap();
    assert!(event["name"].as_str().unwrap().starts_with("Iterator"));
    assert!(route("nope", &get).is_err());
    assert!(route("event", &|_| None).is_err());
}

/// The persistent cache of trace indexes: written on first load, reused, and a corrupt or
/// torn entry is ignored and rewritten.
#[test]
fn disk_cache_is_validated() {
    let tmp = tempfile::tempdir().unwrap();
    let src = repo_root().join("testdata/profiles/jax_train");
    let file = walk(&src).into_iter().find(|p| p.to_string_lossy().ends_with(".xplane.pb.gz")).unwrap();
    let dst = tmp.path().join("vm.xplane.pb.gz");
    std::fs::copy(&file, &dst).unwrap();
    let disk = oxprof_api::DiskCache::open(&tmp.path().join("cache"), 1 << 30).unwrap();
    let host = oxprof_format::HostFile { host: "vm".to_string(), path: dst.clone() };
    let fresh = oxprof_api::trace::load_host(&host, Some(&disk)).unwrap();
    assert!(!fresh.index_from_cache);
    let entries = || -> Vec<PathBuf> { walk(disk.dir()) };
    assert_eq!(entries().len(), 1);
    let cache = entries().remove(0);
    let cached = oxprof_api::trace::load_host(&host, Some(&disk)).unwrap();
    assert!(cached.index_from_cache);
    assert_eq!(cached.index.num_events, fresh.index.num_events);
    // Another host name is another entry (the index embeds it).
    let renamed = oxprof_format::HostFile { host: "other".to_string(), path: dst.clone() };
    assert!(!oxprof_api::trace::load_host(&renamed, Some(&disk)).unwrap().index_from_cache);
    std::fs::remove_file(entries().into_iter().find(|p| *p != cache).unwrap()).unwrap();
    // Corrupt it: ignored, rebuilt, rewritten.
    let mut bytes = std::fs::read(&cache).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0x5a;
    std::fs::write(&cache, &bytes).unwrap();
    let rebuilt = oxprof_api::trace::load_host(&host, Some(&disk)).unwrap();
    assert!(!rebuilt.index_from_cache);
    assert!(oxprof_api::trace::load_host(&host, Some(&disk)).unwrap().index_from_cache);
    // Truncated: ignored.
    std::fs::write(&cache, &bytes[..10]).unwrap();
    assert!(!oxprof_api::trace::load_host(&host, Some(&disk)).unwrap().index_from_cache);
    // Without a cache nothing is written or read.
    assert!(!oxprof_api::trace::load_host(&host, None).unwrap().index_from_cache);
    // The index's own header refuses another state of the profile file (size, mtime).
    let index_bytes = oxprof_trace::write_index(&fresh.index, (10, 20));
    assert_eq!(oxprof_trace::read_index(&index_bytes, (1, 2)).unwrap_err(), oxprof_trace::CacheError::Stale);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Times the phases on the 85 MB / 3 M-event JAX profile (release build:
/// `cargo test --release -p oxprof-api --test golden_trace -- --ignored --nocapture`).
#[test]
#[ignore]
fn measure_large_profile() {
    let Some(path) = std::env::var_os("OXPROF_LARGE_XPLANE").map(PathBuf::from).or_else(|| {
        let dir = PathBuf::from("/work/refdata/jax_large/plugins/profile");
        std::fs::read_dir(dir).ok()?.flatten().map(|e| e.path().join("vm.xplane.pb")).find(|p| p.exists())
    }) else {
        eprintln!("SKIP: no large profile");
        return;
    };
    let t0 = std::time::Instant::now();
    let space = oxprof_format::load_xspace(&path).unwrap();
    let t1 = std::time::Instant::now();
    let groups = oxprof_grouping::group_events(&space);
    let t2 = std::time::Instant::now();
    let index = oxprof_trace::TraceIndex::build(&space, "vm");
    let t3 = std::time::Instant::now();
    let host = oxprof_trace::xprof::HostTrace { space: &space, groups: &groups, index: &index };
    let req = oxprof_trace::xprof::TraceViewRequest { resolution: 8000.0, ..Default::default() };
    let body = oxprof_trace::xprof::trace_viewer_json(&[host], &req).unwrap();
    let t4 = std::time::Instant::now();
    if let Some(out) = std::env::var_os("OXPROF_TRACE_OUT") {
        std::fs::write(&out, &body).unwrap();
        let zoom = oxprof_trace::xprof::TraceViewRequest {
            resolution: 8000.0,
            start_time_ms: 3000.0,
            end_time_ms: 3100.0,
            ..Default::default()
        };
        let zoomed = oxprof_trace::xprof::trace_viewer_json(&[host], &zoom).unwrap();
        std::fs::write(PathBuf::from(out).with_extension("zoom.json"), zoomed).unwrap();
    }
    let lod_host = oxprof_trace::lod::LodHost { space: &space, groups: &groups, index: &index };
    let full = oxprof_trace::lod::window(&lod_host, &Default::default());
    let t5 = std::time::Instant::now();
    let mid = (index.min_ps + index.max_ps) / 2;
    let zoom = oxprof_trace::lod::window(
        &lod_host,
        &oxprof_trace::lod::LodRequest {
            start_ps: Some(mid),
            end_ps: Some(mid + 50_000_000_000),
            ..Default::default()
        },
    );
    let t6 = std::time::Instant::now();
    let index_bytes = oxprof_trace::write_index(&index, (0, 0)).len();
    println!(
        "events {} | load {:?} group {:?} index {:?} ({} B serialized) trace_viewer@ {:?} ({} B) | LOD full {:?} ({} items, {} hidden) zoom 50ms {:?} ({} items)",
        index.num_events,
        t1 - t0,
        t2 - t1,
        t3 - t2,
        index_bytes,
        t4 - t3,
        body.len(),
        t5 - t4,
        full.total_returned,
        full.total_hidden,
        t6 - t5,
        zoom.total_returned
    );
}

/// The LOD API's event details show the `group_id` XProf's trace shows, event for event:
/// every event of every track of the TPU v6e profile (whose module line is its grouping
/// line, so touching modules show the previous module's group) and of the refkit JAX
/// profile, against oxprof's `trace_viewer@` output at resolution 0 (every event; itself
/// equal to XProf's, above).
#[test]
fn lod_event_groups_equal_the_trace_viewers() {
    let mut files = vec![repo_root().join("testdata/profiles/jax_train")];
    if let Some(ext) = external_dir() {
        files.push(ext.join("openxla-xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb"));
    }
    for path in files.iter().filter(|p| p.exists()) {
        // (tid, name, ts in ns) → the group ids shown, as a multiset (the streaming trace
        // numbers pids per host).
        type Key = (u64, String, i64);
        let mut shown: HashMap<Key, Vec<Option<i64>>> = HashMap::new();
        let params = [("resolution".to_string(), "0".to_string())].into();
        let request = DataRequest { params, ..DataRequest::new(ToolId::TRACE_VIEWER_STREAMING) };
        let trace: Value = serde_json::from_str(&data(path, &request).unwrap().body).unwrap();
        for e in trace["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X") {
            let key = (
                e["tid"].as_u64().unwrap(),
                e["name"].as_str().unwrap().to_string(),
                (e["ts"].as_f64().unwrap() * 1e3).round() as i64,
            );
            shown.entry(key).or_default().push(e["args"]["group_id"].as_i64());
        }
        let mut from_lod: HashMap<Key, Vec<Option<i64>>> = HashMap::new();
        let everything: BTreeMap<String, String> = [("exact_limit".to_string(), "100000000".to_string())].into();
        let (session, run) = oxprof_api::data::open_run(path, None).unwrap();
        let window = oxprof_api::trace::window(&session, &run, None, &everything).unwrap();
        let mut checked = 0;
        for track in &window.tracks {
            assert!(track.exact, "{}: track {} not exact", path.display(), track.id);
            for event in &track.events {
                let d = oxprof_api::trace::event(&session, &run, None, event.id).unwrap();
                let Some(tid) = d.tid else { continue };
                let key = (u64::from(tid), d.name.clone(), (d.ts_ps as f64 / 1e3).round() as i64);
                from_lod.entry(key).or_default().push(d.group_id);
                checked += 1;
            }
        }
        assert!(checked > 100, "{}: only {checked} events", path.display());
        let (mut differing, mut missing) = (0, 0);
        for (key, groups) in &mut from_lod {
            groups.sort();
            let Some(expected) = shown.get_mut(key) else {
                missing += 1;
                continue;
            };
            expected.sort();
            if groups != expected {
                differing += 1;
                eprintln!("{}: {key:?}: LOD {groups:?}, trace {expected:?}", path.display());
            }
        }
        eprintln!("{}: {checked} events, {} keys, {missing} not in the trace", path.display(), from_lod.len());
        // The LOD API shows every event; XProf's storage drops some (the TPU profile's 600
        // "Async XLA Ops", see `DROPPED_LEVEL`).
        assert!(missing * 20 <= checked, "{}: {missing} LOD events not in the trace", path.display());
        assert_eq!(differing, 0, "{}: events whose group differs", path.display());
    }
}
