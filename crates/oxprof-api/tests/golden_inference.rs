//! Parity with XProf 2.24.2 on inference runs: `inference_profile` and the overview page
//! (its inference latency table included) equal XProf's own outputs, for the real serving
//! profiles under `testdata/inference/` (per host and `ALL_HOSTS`), and `inference_profile`
//! also for every case of `golden.rs` (the refkit and third-party profiles, where XProf
//! finds no requests).

use common::{ALL_HOSTS, cases, load_expected_json as load_expected, repo_root};
use oxprof_api::data::{DataRequest, data};
use oxprof_model::{ModelBuilder, XSpace};
use oxprof_testkit::jsoncmp::{CmpOptions, compare};
use serde_json::Value;
use std::path::PathBuf;

use oxprof_api::registry::ToolId;
use oxprof_testkit::golden as common;

/// The serving profiles: `tf_serving` (real, `scripts/gen/inference-profile.sh`) and
/// `tpu_synthetic` (two hosts written by [`synthetic_tpu_host`]).
const INFERENCE_PROFILES: &[(&str, &[&str])] = &[("tf_serving", &["vm"]), ("tpu_synthetic", &["tpuhost0", "tpuhost1"])];

/// The run directory of the synthetic TPU serving profile.
const TPU_SYNTHETIC_RUN: &str = "testdata/inference/tpu_synthetic/plugins/profile/2026_11_26_00_00_00";

/// A synthetic TPU serving host (XSpace already grouped: every event carries XProf's
/// `group_id`, so XProf and oxprof both read the file's groups). Request `i` of host `h`
/// (group `i + 1`; times in µs from its begin `b = 200 i`, latency `L = 100 + 7 i + 3 h`):
///
/// ```text
/// /host:CPU  |ModelServerRequest_predict (_r=1, model_id) b ------------------------ b+L|
///              |TPUPartitionedCallOp-ExecuteLocal b+10..14|
///                |WriteHbm b+12..18|   |DoEnqueueProgram b+20..22|
///                                   |ReadHbm b+60+2i..68+2i| |CompleteCallbacks b+75+2i..78+2i|
/// TPU:0                                 |XLA Modules jit_serve(1) b+25 .. b+55+2i|
/// ```
///
/// Host 0 serves `tpu_model:3` only; host 1 alternates `other:1` and `tpu_model:3`, so the
/// hosts' model indexes differ and combining them remaps.
fn synthetic_tpu_host(host: usize) -> XSpace {
    const US: i64 = 1_000_000;
    let requests: i64 = if host == 0 { 3 } else { 4 };
    let model = |i: i64| if host == 1 && i % 2 == 0 { "other:1" } else { "tpu_model:3" };
    let name = format!("tpuhost{host}");
    ModelBuilder::new()
        .hostname(&name)
        .plane("/host:CPU", |p| {
            p.line(1, "serving", 1_000, |l| {
                for i in 0..requests {
                    let (b, g) = (200 * i * US, i + 1);
                    let latency = (100 + 7 * i + 3 * host as i64) * US;
                    l.event("ModelServerRequest_predict", b, latency)
                        .stat("_r", 1i64)
                        .stat("model_id", model(i))
                        .stat("group_id", g);
                    l.event("TPUPartitionedCallOp-ExecuteLocal", b + 10 * US, 4 * US).stat("group_id", g);
                    l.event("WriteHbm", b + 12 * US, 6 * US).stat("group_id", g);
                    l.event("DoEnqueueProgram", b + 20 * US, 2 * US).stat("group_id", g);
                    l.event("ReadHbm", b + (60 + 2 * i) * US, 8 * US).stat("group_id", g);
                    l.event("CompleteCallbacks", b + (75 + 2 * i) * US, 3 * US).stat("group_id", g);
                }
            });
        })
        .plane("/device:TPU:0", |p| {
            p.stat("device_type_string", "TPU v4");
            p.line(1, "XLA Modules", 1_000, |l| {
                for i in 0..requests {
                    let b = 200 * i * US;
                    l.event("jit_serve(1)", b + 25 * US, (30 + 2 * i) * US).stat("group_id", i + 1);
                }
            });
        })
        .build()
        .expect("a test-sized space")
}

/// The committed synthetic files are what [`synthetic_tpu_host`] writes
/// (`OXPROF_REGEN_TESTDATA=1` rewrites them; then run XProf on them:
/// `scripts/gen/inference-profile.sh --tpu-outputs`).
#[test]
fn synthetic_tpu_files_are_what_the_builder_writes() {
    use std::io::{Read, Write};
    let dir = repo_root().join(TPU_SYNTHETIC_RUN);
    for host in 0..2 {
        let bytes = oxprof_xspace::encode_xspace(&synthetic_tpu_host(host));
        let path = dir.join(format!("tpuhost{host}.xplane.pb.gz"));
        if std::env::var_os("OXPROF_REGEN_TESTDATA").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            gz.write_all(&bytes).unwrap();
            std::fs::write(&path, gz.finish().unwrap()).unwrap();
        }
        let mut committed = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap()).read_to_end(&mut committed).unwrap();
        assert!(committed == bytes, "{} differs from synthetic_tpu_host({host}); regenerate it", path.display());
    }
}

struct Case {
    name: String,
    input: PathBuf,
    host: &'static str,
    expected: PathBuf,
}

fn inference_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for &(name, hosts) in INFERENCE_PROFILES {
        let dir = repo_root().join("testdata/inference").join(name);
        let many = hosts.len() > 1;
        for &host in hosts.iter().chain([&ALL_HOSTS]) {
            // XProf's outputs of a run with several hosts are kept per host.
            let expected = if many { dir.join("xprof_out").join(host) } else { dir.join("xprof_out") };
            out.push(Case { name: format!("{name}/{host}"), input: dir.clone(), host, expected });
        }
    }
    out
}

fn check(tool: &str, case: &Case, failures: &mut Vec<String>) -> bool {
    let label = format!("{tool} {}", case.name);
    let Some(expected) = load_expected(&case.expected, tool) else {
        failures.push(format!("{label}: no XProf output in {}", case.expected.display()));
        return false;
    };
    let request = DataRequest { host: Some(case.host.into()), ..oxprof_api::registry::request(tool).unwrap() };
    let actual = match data(&case.input, &request) {
        Ok(r) => r.json.unwrap_or(Value::Null),
        Err(e) => {
            failures.push(format!("{label}: {e}"));
            return false;
        }
    };
    let report = compare(&expected, &actual, CmpOptions::default());
    if !report.is_match() {
        failures.push(format!("{label}:\n{}", report.summary(8)));
        return false;
    }
    true
}

#[test]
fn inference_tools_equal_xprof_on_serving_profiles() {
    let (mut passed, mut failures) = (0, Vec::new());
    for case in inference_cases() {
        for tool in ["inference_profile", "overview_page", "input_pipeline_analyzer", "framework_op_stats"] {
            passed += usize::from(check(tool, &case, &mut failures));
        }
    }
    eprintln!("golden inference: {passed} passed, {} failed", failures.len());
    assert!(failures.is_empty(), "{} cases differ from XProf:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn inference_profile_equals_xprof_on_every_golden_case() {
    let (mut passed, mut failures) = (0, Vec::new());
    for c in cases() {
        let case = Case { name: c.name, input: c.input, host: c.host, expected: c.expected };
        passed += usize::from(check("inference_profile", &case, &mut failures));
    }
    eprintln!("golden inference_profile: {passed} passed, {} failed", failures.len());
    assert!(failures.is_empty(), "{} cases differ from XProf:\n{}", failures.len(), failures.join("\n"));
}

/// The overview's inference latency table on the serving profile: every row of XProf's
/// (Avg, then the 50/75/90/99/99.9th percentiles), non-empty.
#[test]
fn overview_inference_latency_has_every_row() {
    let dir = repo_root().join("testdata/inference/tf_serving");
    let request = DataRequest { host: Some(ALL_HOSTS.into()), ..DataRequest::new(ToolId::OVERVIEW_PAGE) };
    let json = data(&dir, &request).unwrap().json.unwrap();
    let rows = json[4]["rows"].as_array().unwrap();
    let labels: Vec<&str> = rows.iter().map(|r| r["c"][0]["v"].as_str().unwrap()).collect();
    assert_eq!(labels, ["Avg", "50.0%", "75.0%", "90.0%", "99.0%", "99.9%"]);
}
