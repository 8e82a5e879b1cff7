//! The trace viewer's LOD routes added for the UI's tools: `/oxprof/api/trace/aggregate`
//! (exact per-name statistics of a selection), self time in `/trace/event`, and flow ids
//! answered as strings (they exceed JavaScript's 2^53) by `/trace/window`, `/trace/event`
//! and `/trace/flow`, while XProf's `/data` bodies keep XProf's numbers.

use oxprof_api::registry::ToolId;
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
    let request = oxprof_api::data::DataRequest::new(ToolId::TRACE_VIEWER_STREAMING);
    let body = oxprof_api::data::data(&profile("jax_train"), &request).unwrap().body;
    let parsed: serde_json::Value = serde_json::from_str(&body).unwrap();
    let numeric =
        parsed["traceEvents"].as_array().unwrap().iter().filter_map(|ev| ev.get("bind_id")).any(|v| v.is_u64());
    assert!(numeric, "XProf's body keeps numeric flow ids");
}

/// Search: `q` finds substrings in any case (`prefix` keeps XProf's case-sensitive prefix),
/// `args=1` adds argument values, results are bounded by `limit` and counted in full.
#[test]
fn search_finds_substrings_in_any_case_and_argument_values() {
    let search = |params: &[(&str, &str)]| {
        let params: Vec<(&str, String)> = params.iter().map(|(k, v)| (*k, v.to_string())).collect();
        route("jax_train", "search", &params).unwrap()
    };
    let prefix = search(&[("prefix", "Thunk")]);
    let lower = search(&[("q", "thunk")]);
    assert!(prefix["total"].as_u64().unwrap() > 0);
    assert_eq!(prefix["prefix"], "Thunk");
    assert_eq!(lower["q"], "thunk");
    // Every prefix match is a substring match; the substring search finds more ("…Thunk…").
    let ids = |r: &serde_json::Value| -> Vec<u64> {
        r["matches"].as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()).collect()
    };
    assert!(lower["total"].as_u64() >= prefix["total"].as_u64());
    let all = search(&[("q", "thunk"), ("limit", "10000")]);
    let found = ids(&all);
    assert!(ids(&prefix).iter().all(|id| found.contains(id)));
    for m in all["matches"].as_array().unwrap() {
        assert!(m["name"].as_str().unwrap().to_lowercase().contains("thunk"), "{m}");
    }
    assert!(search(&[("prefix", "thunk")])["total"] == 0, "prefix stays case-sensitive");
    // Earliest first, bounded by limit, all counted.
    let few = search(&[("q", "THUNK"), ("limit", "3")]);
    assert_eq!(few["matches"].as_array().unwrap().len(), 3);
    assert_eq!(few["total"], lower["total"]);
    assert_eq!(few["truncated"], true);
    let ts: Vec<u64> = all["matches"].as_array().unwrap().iter().map(|m| m["ts_ps"].as_u64().unwrap()).collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]));
    // Argument values: a kernel's or op's `long_name` / `hlo_op` values match with args=1.
    let window = route("jax_train", "window", &[("exact_limit", "100000000".into())]).unwrap();
    let names: Vec<&str> = window["names"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    let mut found_arg = false;
    for track in window["tracks"].as_array().unwrap() {
        for e in track["events"].as_array().map(Vec::as_slice).unwrap_or(&[]).iter().take(50) {
            let details = route("jax_train", "event", &[("id", e["id"].to_string())]).unwrap();
            let Some((key, value)) = details["args"]
                .as_object()
                .unwrap()
                .iter()
                .find_map(|(k, v)| v.as_str().filter(|s| s.len() >= 6).map(|s| (k.clone(), s.to_string())))
            else {
                continue;
            };
            // A piece of the value that no event name holds.
            let Some(piece) = (0..value.len().saturating_sub(5))
                .filter(|&i| value.is_char_boundary(i) && value.is_char_boundary(i + 6))
                .map(|i| value[i..i + 6].to_uppercase())
                .find(|p| !names.iter().any(|n| n.to_uppercase().contains(p.as_str())))
            else {
                continue;
            };
            assert_eq!(search(&[("q", &piece)])["total"], 0, "{piece}: no name holds it");
            let with_args = search(&[("q", &piece), ("args", "1"), ("limit", "10000")]);
            assert_eq!(with_args["args"], true);
            let hit = with_args["matches"].as_array().unwrap().iter().find(|m| m["id"] == e["id"]);
            let hit = hit.unwrap_or_else(|| panic!("{piece} of {key}={value} finds event {}", e["id"]));
            assert!(hit["arg"].is_string(), "{hit}");
            found_arg = true;
            break;
        }
        if found_arg {
            break;
        }
    }
    assert!(found_arg, "an argument value was searched");
    // Neither q nor prefix: 400.
    assert_eq!(route("jax_train", "search", &[]).unwrap_err().http_status(), 400);
    assert_eq!(route("jax_train", "search", &[("q", "  ".into())]).unwrap_err().http_status(), 400);
}

/// The selection's self time per name: the sum of the events' self times (event route).
#[test]
fn aggregate_rows_carry_self_time() {
    let tracks = route("jax_train", "tracks", &[]).unwrap();
    let window = route("jax_train", "window", &[("exact_limit", "100000000".into())]).unwrap();
    let names = window["names"].as_array().unwrap();
    // A thread track with a few hundred events at most, some nested.
    let track = window["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| {
            let n = t["events"].as_array().map_or(0, Vec::len);
            (10..=400).contains(&n)
        })
        .max_by_key(|t| t["events"].as_array().map_or(0, Vec::len))
        .expect("a small track");
    let id = track["id"].as_u64().unwrap();
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for e in track["events"].as_array().unwrap() {
        let d = route("jax_train", "event", &[("id", e["id"].to_string())]).unwrap();
        let name = names[e["name"].as_u64().unwrap() as usize].as_str().unwrap().to_string();
        *want.entry(name).or_default() += d["self_ps"].as_u64().unwrap();
    }
    let (start, end) = (tracks["start_ps"].as_u64().unwrap(), tracks["end_ps"].as_u64().unwrap());
    let a = route(
        "jax_train",
        "aggregate",
        &[("tracks", id.to_string()), ("start_ps", start.to_string()), ("end_ps", end.to_string())],
    )
    .unwrap();
    let got: BTreeMap<String, u64> = a["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap().to_string(), r["self_ps"].as_u64().unwrap()))
        .collect();
    assert_eq!(got, want);
    for r in a["rows"].as_array().unwrap() {
        assert!(r["self_ps"].as_u64() <= r["total_ps"].as_u64());
    }
}

/// `/trace/step`: a step's span by number (group id, as the pod viewer numbers steps) or
/// by name (as the step-time graphs label them); unknown steps are a 400.
#[test]
fn step_route_finds_a_step_by_number_or_name() {
    let root = route("tf_custom_loop", "search", &[("prefix", "train 2".into()), ("limit", "1".into())]).unwrap();
    let m = &root["matches"][0];
    assert_eq!(m["name"], "train 2");
    let details = route("tf_custom_loop", "event", &[("id", m["id"].to_string())]).unwrap();
    let group = details["group_id"].as_i64().unwrap();
    let by_num = route("tf_custom_loop", "step", &[("step", group.to_string())]).unwrap();
    let by_name = route("tf_custom_loop", "step", &[("name", "train 2".into())]).unwrap();
    assert_eq!(by_num, by_name);
    let (ts, dur) = (m["ts_ps"].as_u64().unwrap(), m["dur_ps"].as_u64().unwrap());
    assert_eq!(by_num["step"].as_i64(), Some(group));
    assert!(by_num["start_ps"].as_u64().unwrap() <= ts);
    assert!(by_num["end_ps"].as_u64().unwrap() >= ts + dur);
    assert!(by_num["num_events"].as_u64().unwrap() > 1);
    for bad in [
        vec![("step", "999999".to_string())],
        vec![("name", "no such step".into())],
        vec![("step", "x".into())],
        vec![],
    ] {
        assert_eq!(route("tf_custom_loop", "step", &bad).unwrap_err().http_status(), 400, "{bad:?}");
    }
}

/// `hosts=a,b`: two hosts in one view (two copies of jax_train), merged as XProf merges
/// them: sections of both (pids offset by 1000 per host), track and event ids numbered
/// across hosts, windows, search, details, flows and aggregates over both; one host alone
/// answers as without `hosts`.
#[test]
fn several_hosts_in_one_view() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("plugins/profile/r");
    std::fs::create_dir_all(&run).unwrap();
    let src = profile("jax_train").join("plugins/profile/2026_11_22_03_01_45/vm.xplane.pb.gz");
    for host in ["a", "b"] {
        std::fs::copy(&src, run.join(format!("{host}.xplane.pb.gz"))).unwrap();
    }
    let (session, served) = oxprof_api::data::open_run(dir.path(), None).unwrap();
    let call = |sub: &str, params: &[(&str, String)]| -> serde_json::Value {
        let map: HashMap<String, String> = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        serde_json::from_str(&oxprof_api::trace::route(&session, &served, sub, &|k| map.get(k).cloned()).unwrap())
            .unwrap()
    };
    let both = || ("hosts", "a,b".to_string());
    let one = call("tracks", &[("host", "a".into())]);
    assert_eq!(call("tracks", &[("hosts", "a".into())]), one, "hosts=a is host=a");
    let two = call("tracks", &[both()]);
    let sections = |t: &serde_json::Value| t["sections"].as_array().unwrap().clone();
    let (s1, s2) = (sections(&one), sections(&two));
    assert_eq!(s2.len(), 2 * s1.len());
    assert_eq!(two["num_events"].as_u64().unwrap(), 2 * one["num_events"].as_u64().unwrap());
    assert_eq!(two["hosts"].as_array().unwrap().len(), 2);
    for (i, s) in s1.iter().enumerate() {
        let (a, b) = (&s2[i], &s2[i + s1.len()]);
        assert_eq!(a["pid"].as_u64().unwrap(), s["pid"].as_u64().unwrap() + 1000);
        assert_eq!(b["pid"].as_u64().unwrap(), s["pid"].as_u64().unwrap() + 2000);
        assert_eq!((a["host"].as_str(), b["host"].as_str()), (Some("a"), Some("b")));
    }
    let ntracks = s1.iter().map(|s| s["tracks"].as_array().unwrap().len()).sum::<usize>() as u64;
    let ids: Vec<u64> =
        s2.iter().flat_map(|s| s["tracks"].as_array().unwrap().iter().map(|t| t["id"].as_u64().unwrap())).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..2 * ntracks).collect::<Vec<_>>());
    // Identical hosts: identical clocks, so the same window counts twice the events.
    let w1 = call("window", &[("host", "a".into())]);
    let w2 = call("window", &[both()]);
    assert_eq!((w2["start_ps"].clone(), w2["end_ps"].clone()), (w1["start_ps"].clone(), w1["end_ps"].clone()));
    assert_eq!(w2["total_in_window"].as_u64().unwrap(), 2 * w1["total_in_window"].as_u64().unwrap());
    // An event of host b by its merged id: the same event as host a's.
    let track_b = w2["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"].as_u64().unwrap() >= ntracks && t["events"].is_array())
        .unwrap();
    let ev_b = &track_b["events"][0];
    let local = ev_b["id"].as_u64().unwrap() - (ntracks << 32);
    let d_b = call("event", &[both(), ("id", ev_b["id"].to_string())]);
    let d_a = call("event", &[("host", "a".into()), ("id", local.to_string())]);
    assert_eq!(
        (d_b["name"].clone(), d_b["ts_ps"].clone(), d_b["self_ps"].clone()),
        (d_a["name"].clone(), d_a["ts_ps"].clone(), d_a["self_ps"].clone())
    );
    assert_eq!(d_b["pid"].as_u64().unwrap(), d_a["pid"].as_u64().unwrap() + 2000);
    assert_eq!(d_b["track"].as_u64().unwrap(), track_b["id"].as_u64().unwrap());
    // Search, aggregate and step over both hosts.
    let q = |p: Vec<(&str, String)>| call("search", &p)["total"].as_u64().unwrap();
    assert_eq!(q(vec![both(), ("q", "thunk".into())]), 2 * q(vec![("q", "thunk".into())]));
    let g1 = call("aggregate", &[("host", "a".into())]);
    let g2 = call("aggregate", &[both()]);
    assert_eq!(g2["num_events"].as_u64().unwrap(), 2 * g1["num_events"].as_u64().unwrap());
    assert_eq!(g2["rows"][0]["count"].as_u64().unwrap(), 2 * g1["rows"][0]["count"].as_u64().unwrap());
    assert_eq!(g2["rows"][0]["self_ps"].as_u64().unwrap(), 2 * g1["rows"][0]["self_ps"].as_u64().unwrap());
    // Only host b's tracks.
    let b_tracks: Vec<String> = ids.iter().filter(|&&i| i >= ntracks).map(u64::to_string).collect();
    let gb = call("aggregate", &[both(), ("tracks", b_tracks.join(","))]);
    assert_eq!(gb["num_events"], g1["num_events"]);
    // A flow of host b: its events carry host b's ids.
    if let Some(f) = w2["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["id"].as_u64().unwrap() >= ntracks)
        .flat_map(|t| t["events"].as_array().cloned().unwrap_or_default())
        .find(|e| e.get("flow").is_some())
    {
        let flow = call("flow", &[both(), ("id", f["flow"][0].as_str().unwrap().to_string())]);
        let members: Vec<u64> = flow["events"].as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()).collect();
        assert!(members.contains(&f["id"].as_u64().unwrap()));
    }
    // ALL_HOSTS is every host; unknown hosts are a 404.
    assert_eq!(call("tracks", &[("hosts", "ALL_HOSTS".into())])["num_events"], two["num_events"]);
    let map: HashMap<String, String> = [("hosts".to_string(), "a,zz".to_string())].into_iter().collect();
    let e = oxprof_api::trace::route(&session, &served, "tracks", &|k| map.get(k).cloned()).unwrap_err();
    assert_eq!(e.http_status(), 404, "{e}");
}

/// Kineto traces with epoch-based microseconds (2023 here) are beyond the trace viewer's
/// picosecond range as written; the importer shifts them, so the timeline is not empty.
#[test]
fn an_epoch_based_pytorch_trace_has_a_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("w.pt.trace.json");
    std::fs::write(
        &file,
        r#"{"schemaVersion": 1, "traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1700000000000000.5, "dur": 100},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1700000000000010.25, "dur": 50}]}"#,
    )
    .unwrap();
    let (session, served) = oxprof_api::data::open_run(&file, None).unwrap();
    let call = |sub: &str, params: &[(&str, String)]| -> serde_json::Value {
        let map: HashMap<String, String> = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        serde_json::from_str(&oxprof_api::trace::route(&session, &served, sub, &|k| map.get(k).cloned()).unwrap())
            .unwrap()
    };
    let tracks = call("tracks", &[]);
    let (start, end) = (tracks["start_ps"].as_u64().unwrap(), tracks["end_ps"].as_u64().unwrap());
    assert_eq!(end - start, 100_000_000, "{tracks}");
    let window = call("window", &[("start_ps", start.to_string()), ("end_ps", end.to_string())]);
    assert_eq!(window["total_in_window"].as_u64(), Some(2), "{window}");
}
