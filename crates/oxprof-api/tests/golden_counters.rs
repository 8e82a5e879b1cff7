//! Parity with XProf 2.24.2 for the tools that read XSpaces directly (`crate::counters`):
//! `perf_counters`, `utilization_viewer`, `megascale_stats` and `smart_suggestion` on every committed refkit
//! profile, every third-party profile (read in place, skipped when absent; among them the
//! MI355X capture with its `/device:CUSTOM:Megascale Trace` plane) and the synthetic TPU
//! profiles of `testdata/tpu-synthetic/` (`scripts/gen/tpu-synthetic.sh`), for each host
//! and `ALL_HOSTS`: the JSON equals XProf's within 1e-6 relative, and the bytes are XProf's.
//!
//! One known difference: on TPU planes XProf 2.24.2 replaces a counter's description and
//! sets by those of a TPU counter database compiled into its binary (not in XProf's open
//! source; e.g. "cycle_counter_window" for the TensorCore cycle counter) when the database
//! knows the counter; oxprof shows the profile's own `performance_counter_description`
//! and `performance_counter_sets`. For `perf_counters` on the TPU synthetic profile those
//! two columns are compared only where XProf kept the profile's own text, and the test
//! checks that every other cell equals XProf's.
//!
//! `OXPROF_GOLDEN_FILTER=substring` limits the cases.

use common::{Case, cases, external_dir, load_expected_json as load_expected, read_text, repo_root};
use oxprof_api::data::{DataRequest, data};
use oxprof_testkit::jsoncmp::{CmpOptions, compare};
use serde_json::Value;

use oxprof_api::registry::ToolId;
use oxprof_testkit::golden as common;

const TOOLS: &[&str] = &["perf_counters", "utilization_viewer", "megascale_stats", "smart_suggestion"];

/// The synthetic profiles: each host and `ALL_HOSTS`.
fn synthetic_cases() -> Vec<Case> {
    let root = repo_root().join("testdata/tpu-synthetic");
    let mut cases = Vec::new();
    for (profile, hosts) in [
        ("counters", &["host0", "host1", "ALL_HOSTS"][..]),
        ("counters-gpu", &["gpuhost", "ALL_HOSTS"][..]),
        ("counters-v7x", &["host0", "ALL_HOSTS"][..]),
    ] {
        let dir = root.join(profile);
        for &host in hosts {
            // A single-host run's ALL_HOSTS output is its host's.
            let out = match profile {
                "counters-gpu" => "gpuhost",
                "counters-v7x" => "host0",
                _ => host,
            };
            cases.push(Case {
                name: format!("tpu-synthetic/{profile}/{host}"),
                input: dir.clone(),
                host,
                expected: dir.join("xprof_out").join(out),
                refkit: true,
            });
        }
    }
    cases
}

/// XProf's outputs for the two external profiles these tools are about, kept in the repo
/// (`testdata/external-xprof-counters/`): the MI355X capture with a `Megascale Trace`
/// plane (on `/device:CUSTOM`, which XProf's megascale test ignores) and the TPU inference
/// profile with `barrier-cores` ops. The profiles themselves are read in place.
fn kept_external_cases() -> Vec<Case> {
    let Some(ext) = external_dir() else { return Vec::new() };
    let kept = repo_root().join("testdata/external-xprof-counters");
    [
        (
            "AMD-AGI-TraceLens_934987a2fc2f",
            ext.join("AMD-AGI-TraceLens/tests/test_data_jax_te_fused_attn_categorization/934987a2fc2f.xplane.pb"),
            "934987a2fc2f",
        ),
        (
            "openxla-xprof_tpu_inference_2",
            ext.join("openxla-xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb"),
            "tpu_inference_2",
        ),
    ]
    .into_iter()
    .filter(|(_, input, _)| input.exists())
    .map(|(name, input, host)| Case {
        name: format!("kept/{name}/{host}"),
        input,
        host,
        expected: kept.join(name),
        refkit: false,
    })
    .collect()
}

/// Cases where XProf's TPU counter database rewrites descriptions and sets.
const TPU_COUNTER_DATABASE: &[&str] = &["tpu-synthetic/counters/", "tpu-synthetic/counters-v7x/"];

/// `expected` with the Description and Set cells XProf took from its TPU counter database
/// (where they differ from oxprof's, which are the profile's own) replaced by oxprof's;
/// returns how many rows that touched.
fn accept_counter_database_text(expected: &mut Value, actual: &Value) -> usize {
    let (Some(rows), Some(ours)) = (expected["rows"].as_array_mut(), actual["rows"].as_array()) else { return 0 };
    let mut touched = 0;
    for (row, our) in rows.iter_mut().zip(ours) {
        let mut differs = false;
        for col in [6, 7] {
            if row["c"][col] != our["c"][col] {
                row["c"][col] = our["c"][col].clone();
                differs = true;
            }
        }
        touched += usize::from(differs);
    }
    touched
}

#[test]
fn counter_and_dcn_tools_equal_xprof() {
    let filter = std::env::var("OXPROF_GOLDEN_FILTER").unwrap_or_default();
    let (mut passed, mut failures) = (0, Vec::new());
    let mut all = synthetic_cases();
    all.extend(kept_external_cases());
    all.extend(cases());
    for case in all {
        for &tool in TOOLS {
            let label = format!("{tool} {}", case.name);
            if !label.contains(&filter) {
                continue;
            }
            let Some(mut expected) = load_expected(&case.expected, tool) else {
                failures.push(format!("{label}: no XProf output in {}", case.expected.display()));
                continue;
            };
            let request = DataRequest { host: Some(case.host.into()), ..oxprof_api::registry::request(tool).unwrap() };
            let actual = match data(&case.input, &request) {
                Ok(r) => r,
                Err(e) => {
                    failures.push(format!("{label}: {e}"));
                    continue;
                }
            };
            let ours = actual.json.clone().unwrap_or(Value::Null);
            let database_rows =
                if tool == "perf_counters" && TPU_COUNTER_DATABASE.iter().any(|p| case.name.starts_with(p)) {
                    accept_counter_database_text(&mut expected, &ours)
                } else {
                    0
                };
            let report = compare(&expected, &ours, CmpOptions::default());
            if !report.is_match() {
                failures.push(format!("{label}:\n{}", report.summary(5)));
                continue;
            }
            if database_rows > 0 {
                // Every other cell matched; the bytes cannot.
                eprintln!("{label}: equal to XProf but for the database text of {database_rows} rows");
                passed += 1;
                continue;
            }
            let bytes = read_text(&case.expected.join(format!("{tool}.json"))).unwrap_or_default();
            if actual.body != bytes {
                failures.push(format!("{label}: the JSON matches but the bytes differ"));
                continue;
            }
            passed += 1;
        }
    }
    eprintln!("golden_counters: {passed} passed, {} failed", failures.len());
    assert!(passed >= 9, "only {passed} cases ran");
    assert!(failures.is_empty(), "{} cases differ from XProf:\n{}", failures.len(), failures.join("\n"));
}

/// The synthetic profiles' counters are all there: 2 hosts x 2 chips x (29 counters in the
/// first sample + 42 in the second), host after host.
#[test]
fn synthetic_perf_counters_list_every_counter_of_every_host() {
    let dir = repo_root().join("testdata/tpu-synthetic/counters");
    let request = DataRequest { host: Some("ALL_HOSTS".into()), ..DataRequest::new(ToolId::PERF_COUNTERS) };
    let json = data(&dir, &request).unwrap().json.unwrap();
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2 * 2 * (29 + 42));
    assert_eq!(rows[0]["c"][0]["v"], "host0");
    assert_eq!(rows[rows.len() - 1]["c"][0]["v"], "host1");
}

/// `megascale_stats` needs a host, as in XProf.
#[test]
fn megascale_stats_needs_a_host() {
    let dir = repo_root().join("testdata/tpu-synthetic/counters");
    let mut request = DataRequest::new(ToolId::MEGASCALE_STATS);
    let err = data(&dir, &request).unwrap_err().to_string();
    assert!(err.contains("megascale_stats needs a host"), "{err}");
    // The Perfetto trace too.
    request.params.insert("perfetto".into(), "true".into());
    let err = data(&dir, &request).unwrap_err().to_string();
    assert!(err.contains("megascale_stats needs a host"), "{err}");
}
