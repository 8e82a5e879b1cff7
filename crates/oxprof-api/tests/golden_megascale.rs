//! Parity with XProf 2.24.2's `megascale_stats` (DCN collective slack analysis) on profiles
//! that have DCN collectives: the synthetic multi-slice TPU run of
//! `testdata/tpu-synthetic/megascale/` and `megascale-mixed/` (one host without
//! `MegaScale:` events), and `megascale-perfetto/` (no `MegaScale:` events: the empty table) (`scripts/gen/tpu-synthetic.sh`), for each host and `ALL_HOSTS`. The other tools recorded with it are compared too: `smart_suggestion`, whose
//! `BarrierCoresRule` fires on the run's `barrier-cores` ops (13.6% of host0's step time,
//! 22.9% over all three hosts, naming host2 a straggler), and `perf_counters` and
//! `utilization_viewer` (empty here).
//!
//! XProf keeps the rendezvous in an `absl::flat_hash_map`, so the order of its rows changes
//! from run to run: rows are compared as a set, numbers within 1e-6 relative, and each row's
//! bytes must be one of XProf's rows' bytes.

use common::{load_expected_json as load_expected, read_text, repo_root};
use oxprof_api::data::{DataRequest, data};
use oxprof_testkit::jsoncmp::{CmpOptions, compare};
use serde_json::Value;

use oxprof_api::registry::ToolId;
use oxprof_testkit::golden as common;

const TOOLS: &[&str] = &["megascale_stats", "perf_counters", "utilization_viewer", "smart_suggestion"];
/// The runs and their host selections: `megascale` (three hosts with DCN collectives) and
/// `megascale-mixed` (host1 without `MegaScale:` events).
const RUNS: &[(&str, &[&str])] = &[
    ("megascale", &["host0", "host1", "host2", "ALL_HOSTS"]),
    ("megascale-mixed", &["host0", "host1", "ALL_HOSTS"]),
    ("megascale-perfetto", &["host0"]),
];

/// The table's header (columns) and its rows' texts, sorted: `[{"cols":[..],"rows":[{"c":..},..]}]`.
fn header_and_rows(body: &str) -> (String, Vec<String>) {
    let Some((header, rows)) = body.split_once("\"rows\":[") else { return (body.to_string(), Vec::new()) };
    let rows = rows.strip_suffix("]}]").unwrap_or(rows);
    let mut rows: Vec<String> = rows
        .split("]},{\"c\":[")
        .map(|r| r.trim_start_matches("{\"c\":[").trim_end_matches("]}").to_string())
        .collect();
    rows.retain(|r| !r.is_empty());
    rows.sort();
    (header.to_string(), rows)
}

#[test]
fn megascale_stats_equals_xprof_on_dcn_collectives() {
    let (mut passed, mut failures) = (0, Vec::new());
    for &(run, selections) in RUNS {
        let dir = repo_root().join("testdata/tpu-synthetic").join(run);
        for &host in selections {
            for &tool in TOOLS {
                let label = format!("{tool} {run}/{host}");
                let expected_dir = dir.join("xprof_out").join(host);
                let expected = load_expected(&expected_dir, tool).unwrap_or_else(|| panic!("{label}: no XProf output"));
                let request = DataRequest { host: Some(host.into()), ..oxprof_api::registry::request(tool).unwrap() };
                let actual = match data(&dir, &request) {
                    Ok(r) => r,
                    Err(e) => {
                        failures.push(format!("{label}: {e}"));
                        continue;
                    }
                };
                let ours = actual.json.clone().unwrap_or(Value::Null);
                let report = compare(&expected, &ours, CmpOptions { unordered: true, ..CmpOptions::default() });
                if !report.is_match() {
                    failures.push(format!("{label}:\n{}", report.summary(5)));
                    continue;
                }
                let xprof_bytes = read_text(&expected_dir.join(format!("{tool}.json"))).unwrap_or_default();
                if header_and_rows(&actual.body) != header_and_rows(&xprof_bytes) {
                    failures.push(format!("{label}: the JSON matches but the bytes differ"));
                    continue;
                }
                passed += 1;
            }
        }
    }
    eprintln!("golden_megascale: {passed} passed, {} failed", failures.len());
    assert!(failures.is_empty(), "{} cases differ from XProf:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(passed, RUNS.iter().map(|(_, s)| s.len()).sum::<usize>() * TOOLS.len());
}

/// In the mixed run XProf answers host0 (with MegaScale: events) with its collectives and
/// host1 (without) and ALL_HOSTS with the empty table.
#[test]
fn a_host_without_megascale_events_empties_only_its_selections() {
    let dir = repo_root().join("testdata/tpu-synthetic/megascale-mixed");
    for (host, rows) in [("host0", 3), ("host1", 0), ("ALL_HOSTS", 0)] {
        let request = DataRequest { host: Some(host.into()), ..DataRequest::new(ToolId::MEGASCALE_STATS) };
        let json = data(&dir, &request).unwrap().json.unwrap();
        assert_eq!(json[0]["rows"].as_array().unwrap().len(), rows, "{host}");
    }
}

/// The synthetic run really has DCN collectives: three rendezvous per host, four
/// occurrences each (twelve for ALL_HOSTS, three hosts).
#[test]
fn synthetic_run_has_three_rendezvous_per_host() {
    let dir = repo_root().join("testdata/tpu-synthetic/megascale");
    for (host, occurrences) in [("host0", 4.0), ("ALL_HOSTS", 12.0)] {
        let request = DataRequest { host: Some(host.into()), ..DataRequest::new(ToolId::MEGASCALE_STATS) };
        let json = data(&dir, &request).unwrap().json.unwrap();
        let rows = json[0]["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 3, "{host}");
        for row in rows {
            assert_eq!(row["c"][13]["v"], occurrences, "{host}");
        }
    }
}

/// `perfetto=true` (XProf's Perfetto trace of the DCN collectives) is a binary body, served
/// whole by the answer path (`golden_megascale_perfetto.rs`), not a report.
#[test]
fn perfetto_trace_is_not_a_text_body() {
    let dir = repo_root().join("testdata/tpu-synthetic/megascale");
    let mut request = DataRequest { host: Some("host0".into()), ..DataRequest::new(ToolId::MEGASCALE_STATS) };
    request.params.insert("perfetto".into(), "True".into());
    let err = data(&dir, &request).unwrap_err().to_string();
    assert!(err.contains("perfetto=true"), "{err}");
    request.params.insert("perfetto".into(), "false".into());
    assert!(data(&dir, &request).is_ok());
}

/// `BarrierCoresRule` sees each host's own share of barrier time, and all hosts' together,
/// where host2 (far from the median) is named a straggler.
#[test]
fn barrier_cores_rule_fires_per_host_and_for_all_hosts() {
    let dir = repo_root().join("testdata/tpu-synthetic/megascale");
    for (host, percent) in [("host0", "13.6%"), ("host1", "15.7%"), ("host2", "39.4%"), ("ALL_HOSTS", "22.9%")] {
        let request = DataRequest { host: Some(host.into()), ..DataRequest::new(ToolId::SMART_SUGGESTION) };
        let json = data(&dir, &request).unwrap().json.unwrap();
        let suggestions = json["suggestions"].as_array().unwrap();
        assert_eq!(suggestions.len(), 1, "{host}");
        assert_eq!(suggestions[0]["ruleName"], "BarrierCoresRule", "{host}");
        let text = suggestions[0]["suggestionText"].as_str().unwrap();
        assert!(text.contains(&format!("an average of {percent} of each step time")), "{host}: {text}");
        let straggler = "<li>Host <b>host2</b> average barrier-cores time fraction: <b>39.4%</b></li>";
        assert_eq!(text.contains(straggler), host == "ALL_HOSTS", "{host}: {text}");
    }
}
