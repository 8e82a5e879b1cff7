//! Parity with XProf 2.24.2's `megascale_stats` with `perfetto=true` on the synthetic
//! megascale runs (`testdata/tpu-synthetic/megascale/`, `megascale-mixed/`; recorded by
//! `scripts/gen/tpu-synthetic.sh` through `scripts/ref/xprof-tpu-perfetto.py`): each
//! host's gzipped Perfetto trace, and for `ALL_HOSTS` the combined slack table XProf sends
//! instead.
//!
//! Both traces are gunzipped, decoded with oxprof's Perfetto messages and flattened to
//! records naming everything by value: tracks by their path of names, events by track,
//! type, timestamp and name, arguments by name with interned strings resolved, and flows
//! by the event that starts them. XProf iterates hash maps for the TPUs (so flow ids are
//! numbered in another order) and for each event's arguments (so interned ids differ), so
//! events and their arguments are compared as sorted sets; tracks in order; doubles within
//! 1e-6 relative.

use common::{external_dir, repo_root};
use oxprof_api::data::{DataRequest, open_run};
use oxprof_wire::perfetto::{DebugAnnotation, Trace, TrackEventType};
use prost::Message;
use std::collections::HashMap as FxHashMap;
use std::io::Read;

use oxprof_api::registry::ToolId;
use oxprof_testkit::golden as common;

/// The request's body through the one answer path, which must be binary.
fn binary_body(
    session: &oxprof_api::session::Session,
    served: &oxprof_api::catalog::ServedRun,
    request: &DataRequest,
) -> Vec<u8> {
    let answer = oxprof_api::answer::answer(session, served, request, false).unwrap();
    assert!(answer.is_binary(), "a binary body");
    answer.into_body().0.into_bytes()
}

const RUNS: &[(&str, &[&str])] = &[
    ("megascale", &["host0", "host1", "host2"]),
    ("megascale-mixed", &["host0", "host1"]),
    ("megascale-perfetto", &["host0"]),
];
/// The runs with several hosts (an `ALL_HOSTS` selection).
const MULTI_HOST_RUNS: &[&str] = &["megascale", "megascale-mixed"];

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes).read_to_end(&mut out).expect("a gzip stream");
    out
}

/// A trace flattened: its tracks' paths in order, and its events as sorted
/// (text, doubles) records.
#[derive(Debug)]
struct Flat {
    tracks: Vec<String>,
    events: Vec<(String, Vec<f64>)>,
}

/// Decodes and checks what a Perfetto reader relies on: one sequence, state cleared by the
/// first packet, every iid interned before use, every track described before its events,
/// slices closed in order on their track.
fn flatten(trace: &Trace) -> Result<Flat, String> {
    let mut names: FxHashMap<u64, String> = FxHashMap::new();
    let mut annotation_names: FxHashMap<u64, String> = FxHashMap::new();
    let mut strings: FxHashMap<u64, String> = FxHashMap::new();
    let mut tracks: FxHashMap<u64, String> = FxHashMap::new();
    let mut track_order = Vec::new();
    let mut open: FxHashMap<u64, Vec<u64>> = FxHashMap::new();
    // Raw events, flow ids kept until every source is known.
    let mut raw = Vec::new();
    let mut flow_source: FxHashMap<u64, String> = FxHashMap::new();
    for (i, packet) in trace.packet.iter().enumerate() {
        if packet.trusted_packet_sequence_id != Some(1) {
            return Err(format!("packet {i}: sequence {:?}", packet.trusted_packet_sequence_id));
        }
        let flags = if i == 0 { 3 } else { 2 };
        if packet.sequence_flags != Some(flags) {
            return Err(format!("packet {i}: sequence flags {:?}, not {flags}", packet.sequence_flags));
        }
        if let Some(interned) = &packet.interned_data {
            for n in &interned.event_names {
                names.insert(n.iid.unwrap_or(0), n.name.clone().unwrap_or_default());
            }
            for n in &interned.debug_annotation_names {
                annotation_names.insert(n.iid.unwrap_or(0), n.name.clone().unwrap_or_default());
            }
            for s in &interned.debug_annotation_string_values {
                strings
                    .insert(s.iid.unwrap_or(0), String::from_utf8_lossy(s.str.as_deref().unwrap_or(&[])).into_owned());
            }
        }
        if let Some(d) = &packet.track_descriptor {
            let uuid = d.uuid.ok_or(format!("packet {i}: a track without uuid"))?;
            let parent = match d.parent_uuid {
                Some(p) => format!("{} / ", tracks.get(&p).ok_or(format!("packet {i}: parent {p} not described"))?),
                None => String::new(),
            };
            let counter = d.counter.as_ref().map_or(String::new(), |c| {
                format!(" [counter {:?} {:?}]", c.unit_name.as_deref(), c.y_axis_share_key.as_deref())
            });
            let path = format!("{parent}{}{counter}", d.name.as_deref().unwrap_or(""));
            tracks.insert(uuid, path.clone());
            track_order.push(path);
        }
        let Some(te) = &packet.track_event else { continue };
        let uuid = te.track_uuid.ok_or(format!("packet {i}: an event without track"))?;
        let track = tracks.get(&uuid).ok_or(format!("packet {i}: track {uuid} not described"))?.clone();
        let ts = packet.timestamp.ok_or(format!("packet {i}: no timestamp"))?;
        let kind = TrackEventType::try_from(te.r#type.unwrap_or(0)).map_err(|_| format!("packet {i}: event type"))?;
        let name = match te.name_iid {
            Some(iid) => names.get(&iid).ok_or(format!("packet {i}: event name {iid} not interned"))?.clone(),
            None => String::new(),
        };
        match kind {
            TrackEventType::SliceBegin => open.entry(uuid).or_default().push(ts),
            TrackEventType::SliceEnd => {
                let begin =
                    open.get_mut(&uuid).and_then(Vec::pop).ok_or(format!("packet {i}: an end without begin"))?;
                if begin > ts {
                    return Err(format!("packet {i}: a slice ends before it begins"));
                }
            }
            _ => {}
        }
        let mut annotations = Vec::new();
        for a in &te.debug_annotations {
            let key = annotation_names
                .get(&a.name_iid.unwrap_or(0))
                .ok_or(format!("packet {i}: annotation name not interned"))?
                .clone();
            annotations.push((key, a.clone()));
        }
        let label = format!("{track} @{ts} {name}");
        for (key, a) in &annotations {
            if key == "flow_out" {
                for id in a.int_value.into_iter().chain(a.array_values.iter().filter_map(|v| v.int_value)) {
                    flow_source.insert(id as u64, label.clone());
                }
            }
        }
        raw.push((
            label,
            kind,
            te.flow_ids.clone(),
            te.terminating_flow_ids.clone(),
            annotations,
            te.counter_value,
            te.double_counter_value,
        ));
    }
    if open.values().any(|o| !o.is_empty()) {
        return Err("a slice is never closed".into());
    }
    let flow = |id: u64| flow_source.get(&id).cloned().unwrap_or_else(|| format!("flow {id} without source"));
    let value = |a: &DebugAnnotation, key: &str, doubles: &mut Vec<f64>| -> Result<String, String> {
        let is_flow = key == "flow_out" || key == "flow_in";
        let one = |v: &DebugAnnotation, doubles: &mut Vec<f64>| -> Result<String, String> {
            Ok(if let Some(x) = v.int_value {
                if is_flow { format!("flow<{}>", flow(x as u64)) } else { format!("int {x}") }
            } else if let Some(x) = v.uint_value {
                format!("uint {x}")
            } else if let Some(x) = v.double_value {
                doubles.push(x);
                "double".to_string()
            } else if let Some(iid) = v.string_value_iid {
                format!("str {:?}", strings.get(&iid).ok_or(format!("string {iid} not interned"))?)
            } else {
                "unset".to_string()
            })
        };
        if a.array_values.is_empty() {
            one(a, doubles)
        } else {
            let mut items = Vec::new();
            for v in &a.array_values {
                items.push(one(v, doubles)?);
            }
            Ok(format!("[{}]", items.join(", ")))
        }
    };
    let mut events = Vec::new();
    for (label, kind, flow_ids, terminating, annotations, counter, double_counter) in raw {
        let mut doubles = Vec::new();
        let mut args = Vec::new();
        for (key, a) in &annotations {
            args.push(format!("{key}={}", value(a, key, &mut doubles)?));
        }
        args.sort();
        let mut flows: Vec<String> = flow_ids.iter().map(|&id| flow(id)).collect();
        flows.sort();
        let mut text = format!("{label} {kind:?} args={args:?} flows={flows:?} terminating={}", terminating.len());
        if let Some(c) = counter {
            text.push_str(&format!(" counter={c}"));
        }
        doubles.extend(double_counter);
        events.push((text, doubles));
    }
    events.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.partial_cmp(&b.1).unwrap_or(std::cmp::Ordering::Equal)));
    Ok(Flat { tracks: track_order, events })
}

fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-6 * a.abs().max(b.abs())
}

fn differences(expected: &Flat, actual: &Flat) -> Vec<String> {
    let mut out = Vec::new();
    if expected.tracks != actual.tracks {
        out.push(format!("tracks differ:\n  XProf  {:?}\n  oxprof {:?}", expected.tracks, actual.tracks));
    }
    if expected.events.len() != actual.events.len() {
        out.push(format!("{} events in XProf's trace, {} in oxprof's", expected.events.len(), actual.events.len()));
    }
    for (e, a) in expected.events.iter().zip(&actual.events) {
        let same = e.0 == a.0 && e.1.len() == a.1.len() && e.1.iter().zip(&a.1).all(|(x, y)| close(*x, *y));
        if !same {
            out.push(format!("first differing event:\n  XProf  {e:?}\n  oxprof {a:?}"));
            break;
        }
    }
    out
}

fn request(host: &str) -> DataRequest {
    let mut request = DataRequest { host: Some(host.into()), ..DataRequest::new(ToolId::MEGASCALE_STATS) };
    request.params.insert("perfetto".into(), "true".into());
    request
}

#[test]
fn perfetto_trace_equals_xprof_per_host() {
    let (mut passed, mut failures) = (0, Vec::new());
    for &(run, hosts) in RUNS {
        let dir = repo_root().join("testdata/tpu-synthetic").join(run);
        let (session, served) = open_run(&dir, None).unwrap();
        for &host in hosts {
            let label = format!("{run}/{host}");
            let xprof = std::fs::read(dir.join("xprof_out").join(host).join("megascale_stats.perfetto.gz"))
                .unwrap_or_else(|e| panic!("{label}: no XProf trace ({e}); run scripts/gen/tpu-synthetic.sh"));
            let ours = binary_body(&session, &served, &request(host));
            assert_eq!(&ours[..2], &[0x1f, 0x8b], "{label}: gzip, as XProf sends it");
            let expected = flatten(&Trace::decode(&gunzip(&xprof)[..]).unwrap()).unwrap();
            let actual = match flatten(&Trace::decode(&gunzip(&ours)[..]).unwrap()) {
                Ok(flat) => flat,
                Err(e) => {
                    failures.push(format!("{label}: not a valid trace: {e}"));
                    continue;
                }
            };
            let diff = differences(&expected, &actual);
            if diff.is_empty() {
                passed += 1;
            } else {
                failures.push(format!("{label}: {}", diff.join("\n")));
            }
        }
    }
    eprintln!("golden_megascale_perfetto: {passed} passed, {} failed", failures.len());
    assert!(failures.is_empty(), "{} traces differ from XProf's:\n{}", failures.len(), failures.join("\n"));
}

/// Two real profiles, read in place (skipped when `../shared/testdata/external` is absent),
/// with XProf's traces kept in `testdata/external-xprof-counters/`: the TPU inference
/// profile (four TensorCores, 6667 slices, folded tiny ops, no send/recv flows) and the
/// MI355X capture, whose Megascale Trace plane has no TPU to map to (an empty trace).
#[test]
fn perfetto_trace_equals_xprof_on_real_profiles() {
    let Some(ext) = external_dir() else {
        eprintln!("golden_megascale_perfetto: no external test data, real profiles skipped");
        return;
    };
    let kept = repo_root().join("testdata/external-xprof-counters");
    let cases = [
        (
            "openxla-xprof_tpu_inference_2",
            "openxla-xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb",
            "tpu_inference_2",
        ),
        (
            "AMD-AGI-TraceLens_934987a2fc2f",
            "AMD-AGI-TraceLens/tests/test_data_jax_te_fused_attn_categorization/934987a2fc2f.xplane.pb",
            "934987a2fc2f",
        ),
    ];
    for (name, input, host) in cases {
        let input = ext.join(input);
        if !input.exists() {
            eprintln!("golden_megascale_perfetto: {} absent, skipped", input.display());
            continue;
        }
        let (session, served) = open_run(&input, None).unwrap();
        let ours = binary_body(&session, &served, &request(host));
        let xprof = std::fs::read(kept.join(name).join("megascale_stats.perfetto.gz")).unwrap();
        let expected = flatten(&Trace::decode(&gunzip(&xprof)[..]).unwrap()).unwrap();
        let actual = flatten(&Trace::decode(&gunzip(&ours)[..]).unwrap()).unwrap();
        let diff = differences(&expected, &actual);
        assert!(diff.is_empty(), "{name}: {}", diff.join("\n"));
    }
}

/// For `ALL_HOSTS` XProf sends the combined slack table (rows in hash order) labelled as
/// binary.
#[test]
fn all_hosts_answers_the_combined_table_as_xprof_does() {
    for &run in MULTI_HOST_RUNS {
        let dir = repo_root().join("testdata/tpu-synthetic").join(run);
        let (session, served) = open_run(&dir, None).unwrap();
        let ours = binary_body(&session, &served, &request("ALL_HOSTS"));
        let xprof = std::fs::read(dir.join("xprof_out/ALL_HOSTS/megascale_stats.perfetto.json")).unwrap();
        let rows = |body: &[u8]| {
            let v: serde_json::Value = serde_json::from_slice(body).unwrap();
            let mut rows: Vec<String> = v[0]["rows"].as_array().unwrap().iter().map(|r| r.to_string()).collect();
            rows.sort();
            (v[0]["cols"].clone(), rows)
        };
        assert_eq!(rows(&ours), rows(&xprof), "{run}");
    }
}

/// The trace carries each TPU's lines, renamed in order, with every op tagged with its
/// program run (the synthetic long names carry no rendezvous, so there are no flows).
#[test]
fn host_trace_has_tpu_tracks_and_runs() {
    let dir = repo_root().join("testdata/tpu-synthetic/megascale");
    let (session, served) = open_run(&dir, None).unwrap();
    let ours = binary_body(&session, &served, &request("host0"));
    let flat = flatten(&Trace::decode(&gunzip(&ours)[..]).unwrap()).unwrap();
    let tpu0 = ["2. TPUs", "2. TPUs / /device:TPU:0", "2. TPUs / /device:TPU:0 / 1. Steps"];
    assert_eq!(&flat.tracks[..3], &tpu0.map(String::from), "{:?}", flat.tracks);
    assert!(flat.tracks.contains(&"2. TPUs / /device:TPU:0 / 3. XLA Ops".to_string()), "{:?}", flat.tracks);
    assert!(flat.events.iter().any(|(t, _)| t.contains("send.1 SliceBegin") && t.contains("run_id=int 1")));
}

/// The `megascale-perfetto` run has what XProf's processor adds: Megascale tracks under
/// their TPU, flows from each send to its DMA and done op, folded tiny ops (kept with
/// `group_tiny_events=false`), and the global counters.
#[test]
fn megascale_run_has_flows_folds_and_counters() {
    let dir = repo_root().join("testdata/tpu-synthetic/megascale-perfetto");
    let (session, served) = open_run(&dir, None).unwrap();
    let ours = binary_body(&session, &served, &request("host0"));
    let flat = flatten(&Trace::decode(&gunzip(&ours)[..]).unwrap()).unwrap();
    for track in ["1. Global Counters / Megascale", "2. TPUs / /device:TPU:1 / Megascale / rv_1 (100002)"] {
        assert!(flat.tracks.iter().any(|t| t == track), "{track}: {:?}", flat.tracks);
    }
    let has = |needle: &str| flat.events.iter().filter(|(t, _)| t.contains(needle)).count();
    assert_eq!(has("3 events are hidden SliceBegin"), 4, "two runs on two cores");
    assert_eq!(has("DeviceToHost START SliceBegin args=[\"action_index=int 0\", \"flow_in=flow<"), 4);
    assert_eq!(has("send-done.1 SliceBegin args=[\"flow_in=[flow<"), 4);
    let mut all = request("host0");
    all.params.insert("group_tiny_events".into(), "false".into());
    let ours = binary_body(&session, &served, &all);
    let flat = flatten(&Trace::decode(&gunzip(&ours)[..]).unwrap()).unwrap();
    assert!(flat.events.iter().all(|(t, _)| !t.contains("hidden")));
    assert_eq!(flat.events.iter().filter(|(t, _)| t.contains(" fusion.1 ")).count(), 4);
}

/// `ALL_HOSTS` of a run and a missing host are answered as XProf's table path answers
/// them; a request without `perfetto` is not binary.
#[test]
fn only_perfetto_requests_are_binary() {
    let dir = repo_root().join("testdata/tpu-synthetic/megascale");
    let (session, served) = open_run(&dir, None).unwrap();
    let mut plain = request("host0");
    plain.params.insert("perfetto".into(), "false".into());
    let answer = |request: &DataRequest| oxprof_api::answer::answer(&session, &served, request, false);
    assert!(!answer(&plain).unwrap().is_binary());
    assert!(answer(&request("")).is_err());
}
