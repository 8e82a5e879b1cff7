//! The trace viewer's LOD routes added for the UI's tools: `/oxprof/api/trace/aggregate`
//! (exact per-name statistics of a selection), self time in `/trace/event`, and flow ids
//! answered as strings (they exceed JavaScript's 2^53) by `/trace/window`, `/trace/event`
//! and `/trace/flow`, while XProf's `/data` bodies keep XProf's numbers.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

fn profile(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/profiles").join(name)
}

/// `route(path, sub, params)` with the parameters of a query string.
fn route(name: &str, sub: &str, params: &[(&str, String)]) -> Result<serde_json::Value, oxprof_api::ApiError> {
    let map: HashMap<String, String> = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    let (session, run) = oxprof_api::data::open_run(&profile(name), None)?;
    oxprof_api::trace::route(&session, &run, sub, &|k| map.get(k).cloned())
        .map(|body| serde_json::from_str(&body).unwrap())
}

/// Per-name (count, total, min, max) of a window's events, computed in the test.
fn brute_force(window: &serde_json::Value) -> BTreeMap<String, (u64, u64, u64, u64)> {
    let names = window["names"].as_array().unwrap();
    let mut out: BTreeMap<String, (u64, u64, u64, u64)> = BTreeMap::new();
    for track in window["tracks"].as_array().unwrap() {
        for e in track["events"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            let name = names[e["name"].as_u64().unwrap() as usize].as_str().unwrap().to_string();
            let dur = e["dur_ps"].as_u64().unwrap();
            let row = out.entry(name).or_insert((0, 0, u64::MAX, 0));
            row.0 += 1;
            row.1 += dur;
            row.2 = row.2.min(dur);
            row.3 = row.3.max(dur);
        }
    }
    out
}

fn as_map(aggregate: &serde_json::Value) -> BTreeMap<String, (u64, u64, u64, u64)> {
    aggregate["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let n = |k: &str| r[k].as_u64().unwrap();
            (r["name"].as_str().unwrap().to_string(), (n("count"), n("total_ps"), n("min_ps"), n("max_ps")))
        })
        .collect()
}

/// The aggregate equals the statistics of every event of the window (fetched exactly),
/// for the whole trace, a middle range and a subset of tracks; rows by total descending.
#[test]
fn aggregate_is_exact_over_every_event_of_the_selection() {
    for name in ["jax_train", "tf_keras_fit"] {
        let tracks = route(name, "tracks", &[]).unwrap();
        let (start, end) = (tracks["start_ps"].as_u64().unwrap(), tracks["end_ps"].as_u64().unwrap());
        let threads: Vec<u64> = tracks["sections"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["tracks"].as_array().unwrap())
            .filter(|t| t["kind"] == "thread")
            .map(|t| t["id"].as_u64().unwrap())
            .collect();
        let some: String = threads.iter().take(3).map(u64::to_string).collect::<Vec<_>>().join(",");
        let mid = (start + (end - start) * 2 / 5, start + (end - start) * 3 / 5);
        for (range, list) in [((start, end), String::new()), (mid, String::new()), (mid, some.clone())] {
            let mut params = vec![("start_ps", range.0.to_string()), ("end_ps", range.1.to_string())];
            if !list.is_empty() {
                params.push(("tracks", list.clone()));
            }
            let aggregate = route(name, "aggregate", &params).unwrap();
            params.push(("exact_limit", "100000000".to_string()));
            let window = route(name, "window", &params).unwrap();
            let expected = brute_force(&window);
            assert_eq!(as_map(&aggregate), expected, "{name} {range:?} tracks {list:?}");
            let total: u64 = expected.values().map(|r| r.0).sum();
            assert_eq!(aggregate["num_events"].as_u64().unwrap(), total);
            assert!(total > 0, "{name} {range:?}: events selected");
            let rows = aggregate["rows"].as_array().unwrap();
            assert!(rows.windows(2).all(|p| p[0]["total_ps"].as_u64() >= p[1]["total_ps"].as_u64()));
            for r in rows {
                let avg = r["avg_ps"].as_f64().unwrap();
                let want = r["total_ps"].as_u64().unwrap() as f64 / r["count"].as_u64().unwrap() as f64;
                assert!((avg - want).abs() <= want * 1e-12);
            }
            if list.is_empty() {
                let listed: Vec<u64> =
                    aggregate["tracks"].as_array().unwrap().iter().map(|t| t.as_u64().unwrap()).collect();
                assert_eq!(listed, threads, "all thread tracks by default");
            }
        }
        // The whole trace (no range): every thread event.
        let all = route(name, "aggregate", &[]).unwrap();
        let thread_events: u64 = tracks["sections"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["tracks"].as_array().unwrap())
            .filter(|t| t["kind"] == "thread")
            .map(|t| t["num_events"].as_u64().unwrap())
            .sum();
        assert_eq!(all["num_events"].as_u64().unwrap(), thread_events, "{name}");
    }
}

#[test]
fn aggregate_rejects_bad_parameters() {
    let bad = |params: &[(&str, String)]| {
        let e = route("jax_train", "aggregate", params).unwrap_err();
        assert_eq!(e.http_status(), 400, "{e}");
    };
    bad(&[("start_ps", "10".into()), ("end_ps", "5".into())]);
    bad(&[("start_ps", "x".into())]);
    bad(&[("tracks", "1,a".into())]);
    // Unknown track ids select nothing.
    let none = route("jax_train", "aggregate", &[("tracks", "99999".into())]).unwrap();
    assert_eq!(none["num_events"], 0);
    assert!(none["rows"].as_array().unwrap().is_empty());
}

/// Self time: the duration minus the direct children's, checked against the exact window.
#[test]
fn event_details_carry_the_self_time() {
    let window = route("jax_train", "window", &[("exact_limit", "100000000".into())]).unwrap();
    let mut checked = 0;
    for track in window["tracks"].as_array().unwrap() {
        let events: Vec<(u64, u64, u64)> = track["events"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
            .iter()
            .map(|e| (e["id"].as_u64().unwrap(), e["ts_ps"].as_u64().unwrap(), e["dur_ps"].as_u64().unwrap()))
            .collect();
        // The longest event of the track and a few others.
        let mut picks: Vec<usize> = (0..events.len()).step_by((events.len() / 5).max(1)).collect();
        if let Some(longest) = (0..events.len()).max_by_key(|&i| events[i].2) {
            picks.push(longest);
        }
        for i in picks {
            let (id, ts, dur) = events[i];
            let end = ts + dur;
            // Direct children: later events starting inside, not inside an earlier child.
            let (mut covered, mut child_end) = (0, None::<u64>);
            for &(_, cts, cdur) in events.iter().skip(i + 1) {
                if cts >= end {
                    break;
                }
                if child_end.is_some_and(|ce| cts < ce) {
                    continue;
                }
                let ce = (cts + cdur).min(end);
                covered += ce - cts;
                if cdur > 0 {
                    child_end = Some(ce);
                }
            }
            let details = route("jax_train", "event", &[("id", id.to_string())]).unwrap();
            assert_eq!(details["self_ps"].as_u64(), Some(dur - covered), "event {id}");
            assert_eq!(details["dur_ps"].as_u64(), Some(dur));
            checked += 1;
        }
    }
    assert!(checked > 10);
}

/// Flow ids are strings in the LOD routes (56-bit ids lose precision as JSON numbers in
/// JavaScript), the flow route accepts them, and XProf's `/data` body is unchanged.
#[test]
fn flow_ids_are_strings_in_the_lod_routes() {
    let window = route("jax_train", "window", &[("exact_limit", "100000000".into())]).unwrap();
    let bound: Vec<&serde_json::Value> = window["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["events"].as_array().map(Vec::as_slice).unwrap_or(&[]))
        .filter(|e| e.get("flow").is_some())
        .collect();
    assert!(!bound.is_empty());
    assert!(bound.iter().all(|e| e["flow"][0].is_string() && e["flow"][1].is_string()));
    // Some ids are beyond 2^53: the reason for strings.
    let ids: Vec<u64> = bound.iter().map(|e| e["flow"][0].as_str().unwrap().parse().unwrap()).collect();
    assert!(ids.iter().any(|&id| id > (1 << 53)), "jax_train has flow ids above 2^53");
    let e = bound.iter().find(|e| e["flow"][0].as_str().unwrap().parse::<u64>().unwrap() > (1 << 53)).unwrap();
    let id = e["flow"][0].as_str().unwrap().to_string();
    let details = route("jax_train", "event", &[("id", e["id"].to_string())]).unwrap();
    assert_eq!(details["flow"][0].as_str(), Some(id.as_str()));
    let flow = route("jax_train", "flow", &[("id", id.clone())]).unwrap();
    assert_eq!(flow["flow"].as_str(), Some(id.as_str()));
    let members: Vec<u64> = flow["events"].as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()).collect();
    assert!(members.contains(&e["id"].as_u64().unwrap()));
    // The typed API keeps numbers (for Rust callers); only the JSON routes convert.
    let (session, run) = oxprof_api::data::open_run(&profile("jax_train"), None).unwrap();
    let typed = oxprof_api::trace::flow(&session, &run, None, id.parse().unwrap()).unwrap();
    assert_eq!(typed.flow.to_string(), id);
    // XProf's trace_viewer@ JSON keeps its own (numeric) flow ids.
    let request = oxprof_api::data::DataRequest { tool: "trace_viewer@".into(), ..Default::default() };
    let body = oxprof_api::data::data(&profile("jax_train"), &request).unwrap().body;
    let parsed: serde_json::Value = serde_json::from_str(&body).unwrap();
    let numeric =
        parsed["traceEvents"].as_array().unwrap().iter().filter_map(|ev| ev.get("bind_id")).any(|v| v.is_u64());
    assert!(numeric, "XProf's body keeps numeric flow ids");
}
