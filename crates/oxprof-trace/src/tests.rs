//! Unit tests of the trace index and its views on hand-built XSpaces.

use super::lod::{self, LodHost, LodRequest};
use super::xprof::{HostTrace, TraceViewRequest, trace_viewer_json};
use super::*;
use oxprof_grouping::group_events;
use oxprof_model::XSpace;
use oxprof_testkit::XSpaceBuilder;
use oxprof_xspace::decode_xspace;

fn space(bytes: Vec<u8>) -> XSpace {
    decode_xspace(&bytes).unwrap()
}

fn json(space: &XSpace, req: &TraceViewRequest) -> serde_json::Value {
    let groups = group_events(space);
    let index = TraceIndex::build(space, "h");
    let body = trace_viewer_json(&[HostTrace { space, groups: &groups, index: &index }], req).unwrap();
    serde_json::from_str(&body).unwrap()
}

fn events(v: &serde_json::Value) -> Vec<(u64, u64, String, f64)> {
    v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            (
                e["pid"].as_u64().unwrap(),
                e["tid"].as_u64().unwrap(),
                e["name"].as_str().unwrap().to_string(),
                e["ts"].as_f64().unwrap(),
            )
        })
        .collect()
}

// One host thread (line 7) and a second thread (line 9), times in ps from 1 µs:
//
// (ns after the line start at 1 µs; lines 7 and 9 are two threads):
//
//   t7  |------------------ outer 0..100 ------------------|
//              |- a 10..20 -|     |- b 30..40 -|
//   t9  |- c 0..5 -|        (c starts with outer: serials 0 and 1)
fn two_threads() -> XSpace {
    space(
        XSpaceBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(7, "worker", 1000, |l| {
                    l.event("outer", 0, 100_000);
                    l.event("b", 30_000, 10_000);
                    l.event("a", 10_000, 10_000);
                });
                p.line(9, "other", 1000, |l| {
                    l.event("c", 0, 5_000);
                });
            })
            .to_bytes(),
    )
}

#[test]
fn container_layout_matches_xprof() {
    let s = two_threads();
    let v = json(&s, &TraceViewRequest { resolution: 8000.0, ..TraceViewRequest::default() });
    // Host plane: pid 701 + 1000 (host 1); threads are the line ids.
    let meta: Vec<&serde_json::Value> =
        v["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "M").collect();
    assert_eq!(meta[0]["args"]["name"], "h /host:CPU");
    assert_eq!(meta[0]["pid"], 1701);
    assert_eq!(meta[0]["thread_count"], 2);
    let ev = events(&v);
    // Sorted per track by time; tracks by tid.
    let names: Vec<&str> = ev.iter().map(|e| e.2.as_str()).collect();
    assert_eq!(names, ["outer", "a", "b", "c"]);
    assert_eq!(ev[0].0, 1701);
    assert_eq!(ev[0].1, 7);
    assert_eq!(ev[0].3, 1.0);
    assert_eq!(v["returnedEventsSize"], 4);
    assert_eq!(v["fullTimespan"][0], 0.001);
    // outer and c share a timestamp: the shorter one (c) gets serial 1.
    let c = v["traceEvents"].as_array().unwrap().iter().find(|e| e["name"] == "c").unwrap();
    assert_eq!(c["z"], 1);
    assert_eq!(c["args"]["uid"], 1);
}

#[test]
fn window_filters_by_overlap() {
    let s = two_threads();
    // 1.025 µs .. 1.035 µs overlaps outer and b only.
    let req =
        TraceViewRequest { start_time_ms: 1.025e-3, end_time_ms: 1.035e-3, resolution: 8000.0, ..Default::default() };
    let names: Vec<String> = events(&json(&s, &req)).into_iter().map(|e| e.2).collect();
    assert_eq!(names, ["outer", "b"]);
}

#[test]
fn search_and_details() {
    let s = two_threads();
    let req = TraceViewRequest { search_prefix: Some("o".into()), ..Default::default() };
    let names: Vec<String> = events(&json(&s, &req)).into_iter().map(|e| e.2).collect();
    assert_eq!(names, ["outer"]);
    let req = TraceViewRequest {
        event_name: Some("c".into()),
        start_time_ms: 1e-3,
        duration_ms: 5e-6,
        unique_id: 1,
        ..Default::default()
    };
    let v = json(&s, &req);
    assert_eq!(events(&v).len(), 1);
    assert_eq!(v["returnedEventsSize"], 1);
}

// Downsampling on a levelled track: 100 events of 1 ns, 1 ns apart, under a 1 µs parent.
// At the coarsest level only the parent and the first child are visible.
#[test]
fn levels_follow_visibility_rule() {
    let s = space(
        XSpaceBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(1, "t", 0, |l| {
                    l.event("parent", 0, 1_000_000);
                    for i in 0..100 {
                        l.event("child", i * 2_000, 1_000);
                    }
                });
            })
            .to_bytes(),
    );
    let groups = group_events(&s);
    let index = TraceIndex::build(&s, "h");
    let t = &index.tracks[0];
    assert_eq!(t.level0, vec![0, 1]);
    assert_eq!(t.level.iter().filter(|&&l| l == 0).count(), 2);
    // At 1 ns resolution (level 9) all are visible: children are 1 ns long.
    let upto9 = t.level.iter().filter(|&&l| l <= 9).count();
    assert_eq!(upto9, 101);
    assert_eq!(t.positions_in_levels(&s, 9, |_| 0, u64::MAX), (0..101).collect::<Vec<u32>>());
    // Level 0 only: the parent and the first child, whatever the window's start.
    assert_eq!(t.positions_in_levels(&s, 0, |_| 0, u64::MAX), vec![0, 1]);
    // From 50 ns on (levels > 0 reach back 0 ps here): level-0 events and children from 50 ns.
    let from_50ns = t.positions_in_levels(&s, 9, |l| if l == 0 { 0 } else { 50_000 }, u64::MAX);
    assert_eq!(from_50ns, [0, 1].into_iter().chain(26..101).collect::<Vec<u32>>());
    // LOD: 10 bins over 1 µs → r = 100 ns: parent + first child + one child per 100 ns.
    let host = LodHost { space: &s, groups: &groups, index: &index };
    let w = lod::window(&host, &LodRequest { width: 10, exact_limit: 0, ..Default::default() });
    assert_eq!(w.tracks[0].in_window, 101);
    assert!(w.tracks[0].events.len() <= 12, "{}", w.tracks[0].events.len());
    assert_eq!(w.tracks[0].hidden, 101 - w.tracks[0].events.len());
    // Exact once zoomed in.
    let w = lod::window(&host, &LodRequest { start_ps: Some(0), end_ps: Some(10_000), ..Default::default() });
    assert!(w.tracks[0].exact);
    assert_eq!(w.tracks[0].events.len(), 7);
    // Search over the whole trace, details by id.
    let found = lod::search(&host, "chi", 5);
    assert_eq!(found.total, 100);
    assert!(found.truncated);
    let d = lod::event_details(&host, found.matches[0].id).unwrap();
    assert_eq!(d.name, "child");
}

// Producer/consumer context stats become a flow (AddFlowsToXplane):
//   t1 |- send _pt=2 _p=5 -|
//   t2            |- recv _ct=2 _c=5 -|
#[test]
fn producer_consumer_flow() {
    let s = space(
        XSpaceBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(1, "t1", 0, |l| {
                    l.event("send", 0, 10).stat("_pt", 2i64).stat("_p", 5i64);
                });
                p.line(2, "t2", 0, |l| {
                    l.event("recv", 20, 10).stat("_ct", 2i64).stat("_c", 5i64);
                });
            })
            .to_bytes(),
    );
    let v = json(&s, &TraceViewRequest::default());
    let ev: Vec<&serde_json::Value> = v["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(ev[0]["flow_out"], true);
    assert_eq!(ev[0]["cat"], "tf_exec");
    assert_eq!(ev[1]["flow_in"], true);
    assert_eq!(ev[0]["bind_id"], ev[1]["bind_id"]);
}

#[test]
fn cache_round_trip_and_rejects_bad_files() {
    let s = two_threads();
    let index = TraceIndex::build(&s, "h");
    let bytes = write_index(&index, (10, 20));
    let back = read_index(&bytes, (10, 20)).unwrap();
    assert_eq!(back.tracks.len(), index.tracks.len());
    assert_eq!(back.tracks[0].src, index.tracks[0].src);
    assert_eq!(back.tracks[0].level, index.tracks[0].level);
    assert_eq!(back.tracks[0].level0, index.tracks[0].level0);
    assert_eq!(read_index(&bytes, (10, 21)).unwrap_err(), CacheError::Stale);
    let mut corrupt = bytes.clone();
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0xff;
    assert_eq!(read_index(&corrupt, (10, 20)).unwrap_err(), CacheError::Corrupt);
    assert_eq!(read_index(&bytes[..bytes.len() / 2], (10, 20)).unwrap_err(), CacheError::Corrupt);
    assert_eq!(read_index(b"garbage", (10, 20)).unwrap_err(), CacheError::BadHeader);
    let mut other_version = bytes.clone();
    other_version[8] = 99;
    assert_eq!(read_index(&other_version, (10, 20)).unwrap_err(), CacheError::Version(99));
    let mut payload_byte = bytes.clone();
    payload_byte[bytes.len() / 2] ^= 0x01;
    assert_eq!(read_index(&payload_byte, (10, 20)).unwrap_err(), CacheError::Corrupt);
}

#[test]
fn a_streamed_index_is_the_same_bytes_and_a_failing_writer_is_an_error() {
    let s = two_threads();
    let index = TraceIndex::build(&s, "h");
    let whole = write_index(&index, (10, 20));
    // A writer that takes a few bytes per call, like a pipe.
    struct Trickle(Vec<u8>);
    impl std::io::Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let n = buf.len().min(3);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut trickle = Trickle(Vec::new());
    write_index_to(&index, (10, 20), &mut trickle).unwrap();
    assert_eq!(trickle.0, whole);
    // A full disk: the error comes back, not a silently short entry.
    struct Full;
    impl std::io::Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::new(std::io::ErrorKind::StorageFull, "disk full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let err = write_index_to(&index, (10, 20), &mut Full).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::StorageFull);
}

#[test]
fn a_streamed_read_is_the_index_and_every_damaged_byte_is_refused() {
    let s = two_threads();
    let index = TraceIndex::build(&s, "h");
    let whole = write_index(&index, (10, 20));
    // A reader that hands out a few bytes per call, like a pipe.
    struct Trickle<'a>(&'a [u8]);
    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(3).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let back = read_index_from(&mut Trickle(&whole), whole.len() as u64, (10, 20)).unwrap();
    assert_eq!(write_index(&back, (10, 20)), whole, "read back, written again: the same bytes");
    // A stream shorter than its container says, and every prefix: errors, never a panic.
    let short = read_index_from(&mut Trickle(&whole[..whole.len() - 5]), whole.len() as u64, (10, 20));
    assert_eq!(short.unwrap_err(), CacheError::Corrupt);
    for end in 0..whole.len() {
        assert!(read_index(&whole[..end], (10, 20)).is_err(), "a prefix of {end} bytes was accepted");
    }
    // Any one byte changed anywhere (header, payload, trailer) is refused.
    for at in 0..whole.len() {
        let mut damaged = whole.clone();
        damaged[at] ^= 0x20;
        assert!(read_index(&damaged, (10, 20)).is_err(), "byte {at} changed, yet accepted");
    }
}

#[test]
fn forged_counts_are_refused_without_allocating_them() {
    let s = two_threads();
    let whole = write_index(&TraceIndex::build(&s, "h"), (10, 20));
    // The payload opens with the host name's length (after the 28-byte header): say 2^60.
    let mut forged = whole.clone();
    forged[28..36].copy_from_slice(&(1u64 << 60).to_le_bytes());
    assert_eq!(read_index(&forged, (10, 20)).unwrap_err(), CacheError::Corrupt);
    // A stream claiming far more bytes than it has, with a name "of" 1 TiB: refused once the
    // bytes run out, having reserved at most a bounded buffer.
    forged[28..36].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let refused = read_index_from(&mut &forged[..], u64::MAX, (10, 20));
    assert_eq!(refused.unwrap_err(), CacheError::Corrupt);
}
