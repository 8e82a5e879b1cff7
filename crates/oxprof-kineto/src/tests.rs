//! Tiny hand-written traces, each with its timeline drawn above the test, through the whole
//! importer: what lands where, what is repaired and counted, what is refused.

use crate::{KinetoError, import_kineto, sniff};
use oxprof_model::limits::{Allowance, Limit, LoadLimits};
use oxprof_model::{KeepPages, ReleasePages, XSpace};
use std::sync::Mutex;

fn import(text: &str) -> XSpace {
    import_kineto(text.as_bytes(), &KeepPages, &LoadLimits::default()).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// One line per model line: `plane | line id name @ts: event(offset_ps+dur_ps){stats}…`.
fn dump(space: &XSpace) -> Vec<String> {
    let mut out = Vec::new();
    for p in &space.planes {
        for l in &p.lines {
            let events: Vec<String> = l
                .events(p)
                .map(|e| {
                    let stats: Vec<String> = e.stats().map(|s| format!("{}={}", s.name(), s.value)).collect();
                    let meta: Vec<String> = e.metadata_stats().map(|s| format!("{}={}", s.name(), s.value)).collect();
                    format!(
                        "{}[{}]({}+{}){{{}}}",
                        e.name(),
                        meta.join(","),
                        e.offset_ps(),
                        e.duration_ps(),
                        stats.join(",")
                    )
                })
                .collect();
            out.push(format!("{} | {} {} @{}: {}", p.name, l.id, l.name, l.timestamp_ns, events.join(" ")));
        }
    }
    out
}

fn diag(space: &XSpace) -> Vec<(&'static str, u64)> {
    space.diagnostics.iter().map(|(k, n)| (k.code(), n)).collect()
}

/// ```text
/// host tid 7 "main"   |--------- ProfilerStep#3 ---------|
///                        |--- aten::mm ---|
///                           |cudaLaunchKernel| ─ s(ac2g 42) ─┐
/// GPU 0 stream 7                                     |gemm| ◀┘ f(ac2g 42)
/// ```
#[test]
fn a_small_gpu_trace_maps_like_an_xprof_gpu_profile() {
    let text = r#"{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100", "numSms": 108,
      "totalGlobalMem": 42, "computeMajor": 8, "computeMinor": 0}],
      "traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 7, "ts": 1000.000, "dur": 100},
      {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 7, "ts": 1010.5, "dur": 50,
       "args": {"External id": 5, "Input Dims": [[2, 3], [3, 4]]}},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 7, "ts": 1020.001, "dur": 5,
       "args": {"correlation": 42, "cbid": 211}},
      {"ph": "s", "id": 42, "pid": 1, "tid": 7, "ts": 1020.001, "cat": "ac2g", "name": "ac2g"},
      {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1090, "dur": 8,
       "args": {"device": 0, "context": 1, "stream": 7, "correlation": 42, "registers per thread": 38,
                "shared memory": 16, "grid": [50, 1, 1], "block": [256, 1, 1], "est. achieved occupancy %": 8}},
      {"ph": "f", "id": 42, "pid": 0, "tid": 7, "ts": 1090, "cat": "ac2g", "name": "ac2g", "bp": "e"},
      {"name": "thread_name", "ph": "M", "ts": 1000, "pid": 1, "tid": 7, "args": {"name": "main"}},
      {"name": "process_name", "ph": "M", "ts": 1000, "pid": 1, "tid": 0, "args": {"name": "python3"}}
      ],
      "baseTimeNanoseconds": 1700000000000000000, "displayTimeUnit": "ms"}"#;
    let space = import(text);
    assert_eq!(diag(&space), []);
    let flow_start = (9u64 << 58) | (42 << 2) | 2;
    let flow_end = (9u64 << 58) | (42 << 2) | 1;
    assert_eq!(
        dump(&space),
        [
            "/host:CPU | 7 main @2240000001000000: \
             ProfilerStep#3[category=user_annotation](0+100000000){group_id=3,step_num=3,_r=1} \
             aten::mm[category=cpu_op](10500000+50000000){External id=5,Input Dims=[[2, 3], [3, 4]],group_id=3} \
             cudaLaunchKernel[category=cuda_runtime](20001000+5000000){correlation_id=42,cbid=211,group_id=3,flow=FLOW_START}"
                .replace("FLOW_START", &flow_start.to_string()),
            "/device:GPU:0 | 7 Stream #7(Compute) @2240000001090000: \
             gemm[category=kernel](0+8000000){device=0,context_id=1,stream=7,correlation_id=42,registers per thread=38,\
             shared memory=16,grid=[50, 1, 1],block=[256, 1, 1],est. achieved occupancy %=8,group_id=3,\
             kernel_details=regs:38 static_shared:16 dynamic_shared:0 grid:50,1,1 block:256,1,1 occ_pct:8,flow=FLOW_END}"
                .replace("FLOW_END", &flow_end.to_string()),
        ]
    );
    let host = &space.planes[0];
    let stats: Vec<String> = host.stats().map(|s| format!("{}={}", s.name(), s.value)).collect();
    assert_eq!(
        stats,
        [
            "oxprof_time_shift_ns=1697760000000000000",
            "pid=1",
            "process_name=python3",
            "schemaVersion=1",
            // Kept whole for the PyTorch analyses (`oxprof_pytorch`).
            "deviceProperties=[{\"id\": 0, \"name\": \"NVIDIA A100\", \"numSms\": 108,\n      \"totalGlobalMem\": 42, \"computeMajor\": 8, \"computeMinor\": 0}]",
            "baseTimeNanoseconds=1700000000000000000",
            "displayTimeUnit=ms"
        ]
    );
    let gpu = &space.planes[1];
    assert_eq!((gpu.name.as_str(), gpu.id), ("/device:GPU:0", 0));
    let stats: Vec<String> = gpu.stats().map(|s| format!("{}={}", s.name(), s.value)).collect();
    assert_eq!(
        stats,
        [
            "id=0",
            "name=NVIDIA A100",
            "numSms=108",
            "totalGlobalMem=42",
            "computeMajor=8",
            "computeMinor=0",
            "core_count=108",
            "memory_size=42",
            "compute_cap_major=8",
            "compute_cap_minor=0",
            "device_vendor=Nvidia"
        ]
    );
    assert!(oxprof_model::schema::is_xspace_grouped(&space));
}

/// Timestamps keep every nanosecond (and picosecond) of the decimal text, even where an
/// f64 of the epoch-based microseconds could not.
#[test]
fn timestamps_keep_nanoseconds_of_epoch_microseconds() {
    let space = import(
        r#"{"traceEvents": [
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1623142623460111.123, "dur": 0.0015},
        {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 1623142623460112.999999, "dur": 1}]}"#,
    );
    let p = &space.planes[0];
    let l = &p.lines[0];
    // Epoch-based times are shifted (whole 30 days) into the trace viewer's range; the shift
    // is kept so the absolute times are exact.
    let shift = p.stats().find(|s| s.name() == crate::TIME_SHIFT_STAT).and_then(|s| s.as_i64()).expect("shift stat");
    assert_eq!(shift % (30 * 86_400 * 1_000_000_000), 0);
    assert!(l.timestamp_ns < 30 * 86_400 * 1_000_000_000);
    assert_eq!(i128::from(l.timestamp_ns) + i128::from(shift), 1_623_142_623_460_111_123);
    let ts: Vec<(i128, i64)> = l
        .events(p)
        .map(|e| ((i128::from(l.timestamp_ns) + i128::from(shift)) * 1000 + i128::from(e.offset_ps()), e.duration_ps()))
        .collect();
    assert_eq!(ts, [(1_623_142_623_460_111_123_000, 1_500), (1_623_142_623_460_112_999_999, 1_000_000)]);
}

/// A profiler killed while writing leaves no `]}`; the file may even stop inside an event.
#[test]
fn truncated_files_keep_what_was_written() {
    let full = r#"{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2},
        {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 4, "dur": 2}"#;
    for cut in [full.len(), full.len() - 1, full.len() - 20] {
        let space = import(&full[..cut]);
        let expected = if cut == full.len() { 2 } else { 1 };
        assert_eq!(space.event_count(), expected, "cut at {cut}");
        assert_eq!(diag(&space), [("truncated_input", 1), ("missing_thread_name", 1)]);
    }
}

#[test]
fn trailing_commas_are_accepted_and_counted() {
    let space = import(r#"{"traceEvents": [{"ph": "i", "name": "a", "ts": 1, "args": {"x": 1,},},], "k": [1,],}"#);
    assert_eq!(space.event_count(), 1);
    assert_eq!(diag(&space), [("trailing_comma", 4), ("missing_thread_name", 1)]);
}

/// ```text
/// tid 1   B(a) ....... E          E (unmatched: skipped)
///              B(b) ......................  (never ended: closed at the trace's end, 50)
/// tid 2                                   |-- c --| (ends at 50)
/// ```
#[test]
fn unmatched_begin_and_end_events_are_repaired() {
    let space = import(
        r#"[{"ph": "B", "name": "a", "pid": 1, "tid": 1, "ts": 0},
            {"ph": "B", "name": "b", "pid": 1, "tid": 1, "ts": 5},
            {"ph": "E", "pid": 1, "tid": 1, "ts": 10},
            {"ph": "E", "pid": 1, "tid": 1, "ts": 20},
            {"ph": "E", "pid": 1, "tid": 1, "ts": 30},
            {"ph": "X", "name": "c", "pid": 1, "tid": 2, "ts": 40, "dur": 10}]"#,
    );
    let d = dump(&space);
    assert_eq!(d[0], "/host:CPU | 1 thread 1 @0: a[](0+20000000){} b[](5000000+5000000){}");
    assert_eq!(diag(&space), [("unmatched_end", 1), ("missing_thread_name", 2)]);
    let space = import(
        r#"[{"ph": "B", "name": "a", "pid": 1, "tid": 1, "ts": 0}, {"ph": "X", "name": "c", "pid": 1, "tid": 2, "ts": 40, "dur": 10}]"#,
    );
    assert_eq!(dump(&space)[0], "/host:CPU | 1 thread 1 @0: a[](0+50000000){}");
    assert_eq!(diag(&space), [("unmatched_begin", 1), ("missing_thread_name", 2)]);
}

/// ```text
/// tid 1              |------- a -------|
///                          |------- b -------|      (b overlaps a without nesting)
///                                |- c -|            (c nests in a and b: stays on row 0)
/// tid 1 (overlap 1)        |------- b -------|
/// ```
#[test]
fn overlapping_events_go_to_extra_lines_never_dropped() {
    let space = import(
        r#"{"traceEvents": [
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
        {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 4, "dur": 10},
        {"ph": "X", "name": "c", "pid": 1, "tid": 1, "ts": 6, "dur": 3},
        {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "t"}}]}"#,
    );
    assert_eq!(
        dump(&space),
        [
            "/host:CPU | 1 t @0: a[](0+10000000){} c[](6000000+3000000){}",
            "/host:CPU | 4503599627370497 t (overlap 1) @4000: b[](0+10000000){}",
        ]
    );
    assert_eq!(diag(&space), [("overlapping_events", 1)]);
}

#[test]
fn thread_names_missing_duplicated_or_renamed_are_counted() {
    let space = import(
        r#"[{"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "w"}},
            {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "worker"}},
            {"name": "thread_name", "ph": "M", "pid": 1, "tid": 2, "args": {"name": "worker"}},
            {"ph": "i", "name": "a", "pid": 1, "tid": 1, "ts": 0},
            {"ph": "i", "name": "b", "pid": 1, "tid": 2, "ts": 0},
            {"ph": "i", "name": "c", "pid": 1, "tid": 3, "ts": 0}]"#,
    );
    let names: Vec<&str> = space.planes[0].lines.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["worker", "worker", "thread 3"]);
    assert_eq!(diag(&space), [("missing_thread_name", 1), ("duplicate_thread_name", 2)]);
}

#[test]
fn string_timestamps_unknown_phases_and_categories_are_kept() {
    let space = import(
        r#"[{"ph": "X", "cat": "mystery", "name": "a", "pid": 1, "tid": 1, "ts": "5.5", "dur": "1"},
            {"ph": "P", "name": "sample", "pid": 1, "tid": 1, "ts": 8}]"#,
    );
    assert_eq!(
        dump(&space)[0],
        "/host:CPU | 1 thread 1 @5500: a[category=mystery](0+1000000){} sample[ph=i](2500000+0){}"
    );
    assert_eq!(
        diag(&space),
        [("unknown_phase", 1), ("unknown_category", 1), ("string_timestamp", 2), ("missing_thread_name", 1)]
    );
}

/// NaN, infinite and huge values: bad timestamps drop their event, bad durations become 0,
/// odd arg values are kept as they are.
#[test]
fn nan_and_huge_numbers_are_repaired() {
    let space = import(
        r#"[{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"x": NaN, "y": 1e400, "z": 18446744073709551615, "w": -Infinity, "n": null, "b": true}},
            {"ph": "X", "name": "nan_ts", "pid": 1, "tid": 1, "ts": NaN, "dur": 1},
            {"ph": "X", "name": "far", "pid": 1, "tid": 1, "ts": 1e30, "dur": 1},
            {"ph": "X", "name": "neg", "pid": 1, "tid": 1, "ts": 2, "dur": -5},
            {"ph": "X", "name": "nodur", "pid": 1, "tid": 1, "ts": 3},
            {"ph": "X", "name": "bigdur", "pid": 1, "tid": 1, "ts": 3, "dur": 1e300}]"#,
    );
    assert_eq!(
        dump(&space)[0],
        "/host:CPU | 1 thread 1 @1000: a[](0+1000000){x=NaN,y=inf,z=18446744073709551615,w=-inf,n=,b=1} \
         neg[](1000000+0){} nodur[](2000000+0){} bigdur[](2000000+0){}"
    );
    assert_eq!(diag(&space), [("bad_timestamp", 2), ("bad_duration", 3), ("missing_thread_name", 1)]);
}

#[test]
fn garbage_is_one_clear_error() {
    for (text, want) in [
        ("", "the file ends before any trace event"),
        ("   ", "the file ends before any trace event"),
        ("hello", "expected '{' or '[' at byte 0"),
        ("\x00\x01\x02", "expected '{' or '[' at byte 0"),
        (r#"{"a": 1}"#, "no \"traceEvents\" array"),
        (r#"{"traceEvents": [}"#, "expected a value at byte 17"),
        (r#"{"traceEvents": 3}"#, "no \"traceEvents\" array"),
        (r#"{"traceEvents" 3}"#, "expected ':' after a key at byte 15"),
    ] {
        let err = import_kineto(text.as_bytes(), &KeepPages, &LoadLimits::default()).unwrap_err();
        assert_eq!(err.to_string(), format!("not a PyTorch/Chrome JSON trace: {want}"), "{text:?}");
    }
    // Bytes that are not JSON after good events: the events are kept, the rest counted.
    let space = import(r#"[{"ph": "i", "name": "a", "ts": 1}, {"ph": "i", "name": "b", "ts": 2} ??? "#);
    assert_eq!((space.event_count(), diag(&space)), (2, vec![("corrupt_tail", 1), ("missing_thread_name", 1)]));
    // An empty trace is a trace.
    assert_eq!(import(r#"{"traceEvents": []}"#).event_count(), 0);
}

#[test]
fn budgets_give_clear_errors() {
    let text = r#"[{"ph": "i", "name": "a", "pid": 1, "tid": 1, "ts": 1}, {"ph": "i", "name": "a", "pid": 1, "tid": 2, "ts": 1},
                   {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"device": 3}}]"#;
    let tight = |f: fn(&mut LoadLimits)| {
        let mut l = LoadLimits::default();
        f(&mut l);
        match import_kineto(text.as_bytes(), &KeepPages, &l) {
            Err(KinetoError::LimitExceeded(e)) => (e.limit, e.to_string()),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(tight(|l| l.lines = Allowance { base: 1, per_mib: 0 }).0, Limit::Lines);
    assert_eq!(tight(|l| l.planes = Allowance { base: 1, per_mib: 0 }).0, Limit::Planes);
    assert_eq!(tight(|l| l.metadata_entries = Allowance { base: 2, per_mib: 0 }).0, Limit::MetadataEntries);
    let (limit, message) = tight(|l| l.max_profile_bytes = 10);
    assert_eq!(limit, Limit::ProfileBytes);
    assert!(message.contains("--max-profile-bytes"), "{message}");
}

/// Counters: one event per series on the process's `_counters_` line; flows with string
/// ids; the older trace format (`Operator`/`Kernel`, string tids, `async` flows).
#[test]
fn counters_and_the_older_format() {
    let space = import(
        r#"{"traceEvents": [
        {"ph": "C", "name": "mem", "pid": 1, "ts": 1, "args": {"alloc": 10, "free": 2.5, "note": "x"}},
        {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": "1", "ts": 2, "dur": 1, "args": {"correlation": 9}},
        {"ph": "s", "id": 9, "pid": 1, "tid": 1, "ts": 2, "cat": "async", "name": "launch"},
        {"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": "stream 7", "ts": 5, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 9}},
        {"ph": "f", "id": 9, "pid": 0, "tid": "stream 7", "ts": 5, "cat": "async", "name": "launch", "bp": "e"},
        {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": "stream 7", "ts": 7, "dur": 1, "args": {"device": 0, "stream": 7, "bytes": 64}}
        ]}"#,
    );
    let d = dump(&space);
    assert_eq!(d.len(), 3, "{d:#?}");
    assert!(d[0].starts_with("/host:CPU | 1 thread 1 @2000: cudaLaunchKernel"), "{}", d[0]);
    assert_eq!(
        d[1],
        "/host:CPU | 281474976710656 _counters_ @1000: mem.alloc[ph=C](0+0){counter_value=10} mem.free[ph=C](0+0){counter_value=2.5}"
    );
    assert!(d[2].starts_with("/device:GPU:0 | 7 Stream #7(Compute,MemcpyH2D) @5000: k[category=Kernel]"), "{}", d[2]);
    assert!(d[2].contains("memcpy_details=kind:HtoD\nnum_bytes:64"), "{}", d[2]);
    assert!(d[0].contains(&format!("flow={}", (9u64 << 58) | (9 << 2) | 2)), "{}", d[0]);
    assert!(d[2].contains(&format!("flow={}", (9u64 << 58) | (9 << 2) | 1)), "{}", d[2]);
}

/// Trace metadata after `traceEvents` (Kineto writes `traceName`, `distributedInfo`, its
/// logs there) is read too; `ERROR`/`WARNING` logs become the space's errors and warnings.
#[test]
fn metadata_after_the_events_and_logs() {
    let space = import(
        r#"{"traceEvents": [{"ph": "i", "name": "a", "pid": 1, "tid": 1, "ts": 1}],
            "baseTimeNanoseconds": 1000000000, "WARNING": ["w1", "w2"], "ERROR": ["e"],
            "distributedInfo": {"rank": 1, "world_size": 2}, "traceName": "t.json"}"#,
    );
    assert_eq!(space.planes[0].lines[0].timestamp_ns, 1_000_001_000);
    assert_eq!((space.warnings.clone(), space.errors.clone()), (vec!["w1".into(), "w2".into()], vec!["e".into()]));
    let stats: Vec<String> = space.planes[0].stats().map(|s| format!("{}={}", s.name(), s.value)).collect();
    assert!(stats.contains(&r#"distributedInfo={"rank": 1, "world_size": 2}"#.to_string()), "{stats:?}");
}

#[test]
fn the_same_trace_always_gives_the_same_model() {
    let text = include_str!("../tests/data/mixed.json");
    let a = import(text);
    let b = import(text);
    assert_eq!(oxprof_model::compare::first_difference(&a, &b), None);
    assert!(a.event_count() > 0);
}

/// Consumed input is handed back front to back, ending with the whole buffer.
#[test]
fn consumed_input_is_released() {
    struct Record(Mutex<Vec<std::ops::Range<usize>>>);
    impl ReleasePages for Record {
        fn release(&self, range: std::ops::Range<usize>) {
            self.0.lock().unwrap().push(range);
        }
    }
    let mut text = String::from("[");
    for i in 0..100_000 {
        text.push_str(&format!(r#"{{"ph": "X", "name": "op{}", "pid": 1, "tid": 1, "ts": {i}, "dur": 0.5}},"#, i % 10));
    }
    text.push_str(r#"{"ph": "i", "name": "end", "ts": 0}]"#);
    let record = Record(Mutex::new(Vec::new()));
    let space = import_kineto(text.as_bytes(), &record, &LoadLimits::default()).unwrap();
    assert_eq!(space.event_count(), 100_001);
    let ranges = record.0.into_inner().unwrap();
    assert!(ranges.len() > 1, "{ranges:?}");
    assert!(ranges.windows(2).all(|w| w[0].end <= w[1].end));
    assert_eq!(ranges.last(), Some(&(0..text.len())));
}

#[test]
fn sniff_recognises_traces_by_their_first_bytes() {
    assert!(sniff(b"\xef\xbb\xbf  {\n  \"schemaVersion\": 1,\n  \"deviceProperties\": ["));
    assert!(sniff(br#"{"traceEvents": ["#));
    assert!(sniff(br#"{"displayTimeUnit": "ns""#));
    assert!(sniff(br#" [ {"name": "a", "ph": "X""#));
    assert!(!sniff(br#"{"a": 1}"#));
    assert!(!sniff(b"\x0a\x0d/host:CPU"));
    assert!(!sniff(b"[1, 2, 3]"));
    assert!(!sniff(b""));
}

/// Exported Chrome JSON parses, and importing it again gives the same events by name,
/// phase and time, and the same flows.
#[test]
fn chrome_json_export_round_trips_events_names_and_flows() {
    let space = import(include_str!("../tests/data/mixed.json"));
    let mut out = Vec::new();
    let summary = crate::export_chrome_json(&space, &mut out).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    assert_eq!(summary.events as usize, space.event_count());
    assert_eq!(events.iter().filter(|e| e["ph"] == "s" || e["ph"] == "f").count() as u64, summary.flows);
    assert_eq!(summary.flows, 6);
    let again = import(std::str::from_utf8(&out).unwrap());
    assert_eq!(again.event_count(), space.event_count());
    let names = |s: &XSpace| {
        let mut v: Vec<(String, i64, i64)> = s
            .planes
            .iter()
            .flat_map(|p| p.events().map(move |e| (e.name().to_string(), e.duration_ps(), p.lines.len() as i64)))
            .map(|(n, d, _)| (n, d, 0))
            .collect();
        v.sort();
        v
    };
    assert_eq!(names(&again), names(&space));
    let flows = |s: &XSpace| {
        s.planes
            .iter()
            .flat_map(|p| p.events())
            .flat_map(|e| e.stats().filter(|s| s.name() == "flow").count().checked_sub(0))
            .sum::<usize>()
    };
    assert_eq!(flows(&again), flows(&space));
}

/// The model (or error) a trace gives with the second reader forced to start at `at`
/// (`None`: one reader).
fn import_split_at(bytes: &[u8], limits: &LoadLimits, at: Option<usize>) -> String {
    match crate::import_kineto_split_at(bytes, &KeepPages, limits, at) {
        Ok(space) => format!("{space:?}"),
        Err(e) => format!("error: {e}"),
    }
}

/// Asserts that a second reader started at each of `offsets` gives one reader's model.
fn assert_halves_merge_alike(bytes: &[u8], limits: &LoadLimits, offsets: impl Iterator<Item = usize>) {
    let alone = import_split_at(bytes, limits, None);
    for at in offsets {
        let halves = import_split_at(bytes, limits, Some(at));
        if halves != alone {
            let diverges = alone.bytes().zip(halves.bytes()).take_while(|(a, b)| a == b).count();
            panic!(
                "second reader at byte {at} (`{}`): the model differs from byte {diverges} of its dump:\n  alone:  {}\n  halves: {}",
                String::from_utf8_lossy(&bytes[at..(at + 40).min(bytes.len())]),
                &alone[diverges.saturating_sub(200)..(diverges + 200).min(alone.len())],
                &halves[diverges.saturating_sub(200)..(diverges + 200).min(halves.len())],
            );
        }
    }
}

/// Everything a second-half event can depend on from the first half, whichever event
/// the second reader starts at (or whichever byte: a guess inside a string or a nested
/// value is dropped and the first reader reads on):
///
/// ```text
/// host 1/7 "main"→"renamed" |---------- ProfilerStep#1 ----------|   |-- ProfilerStep#2 --|
///                              B outer ......................... E      B open (never ends)
///                               |launch| ─ s(ac2g 5) ─┐
/// GPU 0 stream 7                           f(ac2g 5) ─┴▶ |gemm|       (flow read before
/// GPU 0 stream 8                                  |memcpy|             its stream's first event)
/// GPU 1 stream 9                                                |relu|   (a device first seen late)
/// host 1/77            s(fwdbwd 9) before the thread's first event |late| ─▶ f(fwdbwd 9) in step 2
/// host "Spans"/"worker é"                        |str pid|  (string pid/tid, nested args)
/// host 1/9                                              E (no B anywhere: counted)
/// ```
const SPLIT_TRACE: &str = r#"{"schemaVersion": 1, "traceEvents": [
  {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}},
  {"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": "main"}},
  {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 1, "tid": 7, "ts": 100, "dur": 50, "args": {"External id": 1}},
  {"ph": "B", "cat": "user_annotation", "name": "outer", "pid": 1, "tid": 7, "ts": 101},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 7, "ts": 102, "dur": 2, "args": {"correlation": 5}},
  {"ph": "s", "id": 5, "pid": 1, "tid": 7, "ts": 102, "cat": "ac2g", "name": "ac2g"},
  {"ph": "f", "id": 5, "pid": 0, "tid": "stream 7", "ts": 110, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": "stream 7", "ts": 110, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 5, "grid": [1, 2, 3]}},
  {"ph": "i", "cat": "cpu_instant_event", "name": "mark", "pid": 1, "tid": 7, "ts": 112, "s": "t"},
  {"ph": "C", "name": "mem", "pid": 1, "ts": 113, "args": {"alloc": 1.5, "free": 2}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 8, "ts": 114, "dur": 1, "args": {"device": 0, "stream": 8, "bytes": 64}},
  {"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": "renamed"}},
  {"ph": "X", "cat": "python_function", "name": "str pid", "pid": "Spans", "tid": "worker \u00e9", "ts": 115, "dur": 3, "args": {"obj": {"a": [1, {"b": "}, {\"c"}]}, "s": "x\"y, {z"}},
  {"ph": "E", "pid": 1, "tid": 7, "ts": 120},
  {"ph": "E", "pid": 1, "tid": 9, "ts": 121},
  {"ph": "X", "cat": "mystery", "name": "odd", "pid": 2, "tid": 3, "ts": 122, "dur": 1},
  {"ph": "X", "cat": "kernel", "name": "relu", "pid": 0, "tid": 9, "ts": 123, "dur": 2, "args": {"device": 1, "stream": 9}},
  {"ph": "s", "id": 9, "cat": "fwdbwd", "pid": 1, "tid": 77, "ts": 127},
  {"ph": "f", "id": 9, "cat": "fwdbwd", "pid": 1, "tid": 7, "ts": 151, "bp": "e"},
  {"ph": "Q", "name": "unknown phase", "pid": 1, "tid": 7, "ts": 125},
  {"ph": "X", "name": "string ts", "pid": 1, "tid": 7, "ts": "126.5", "dur": 1},
  {"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": 7, "args": {"sort_index": 3}},
  {"ph": "X", "cat": "cpu_op", "name": "late", "pid": 1, "tid": 77, "ts": 127, "dur": 1},
  {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#2", "pid": 1, "tid": 7, "ts": 150, "dur": 50},
  {"ph": "B", "cat": "cpu_op", "name": "open", "pid": 1, "tid": 7, "ts": 151},
  {"ph": "X", "cat": "cpu_op", "name": "bad\u00ff", "pid": 1, "tid": 7, "ts": 152, "dur": 1},
],
"deviceProperties": [{"id": 0, "name": "A100"}], "traceName": "t"}"#;

#[test]
fn two_halves_side_by_side_give_one_readers_model() {
    let mut bytes = SPLIT_TRACE.as_bytes().to_vec();
    // Invalid UTF-8 in a name (counted once either way).
    let at = memchr::memmem::find(&bytes, b"bad\\u00ff").unwrap();
    bytes.splice(at + 3..at + 9, [0xffu8]);
    let limits = LoadLimits::default();
    assert!(!import_split_at(&bytes, &limits, None).starts_with("error"));
    // Every byte: element starts merge, anything else is a wrong guess.
    assert_halves_merge_alike(&bytes, &limits, 0..bytes.len());
    // Cut short (a killed process): the second reader reaches the end of the input.
    for cut in (bytes.len() / 2..bytes.len()).step_by(61) {
        let cut = &bytes[..cut];
        assert_halves_merge_alike(cut, &limits, memchr::memchr_iter(b'{', cut));
    }
    // Budgets: the lines and planes the two halves add up to.
    for tight in [
        |l: &mut LoadLimits| l.lines = Allowance { base: 6, per_mib: 0 },
        |l: &mut LoadLimits| l.planes = Allowance { base: 2, per_mib: 0 },
    ] {
        let mut l = LoadLimits::default();
        tight(&mut l);
        assert!(import_split_at(&bytes, &l, None).starts_with("error"));
        assert_halves_merge_alike(&bytes, &l, memchr::memchr_iter(b'{', &bytes));
    }
    // The strings budget, from far too small to just enough for one reader: wherever the
    // second reader starts (and gives up when both tables pass it), the verdict and the
    // model are one reader's.
    let enough = (0..4_096u64)
        .find(|&b| {
            !import_split_at(&bytes, &LoadLimits::default().with_max_interned_bytes(b), None).starts_with("error")
        })
        .expect("the trace fits some budget");
    for budget in [enough / 2, enough - 40, enough - 1, enough, enough + 40] {
        let l = LoadLimits::default().with_max_interned_bytes(budget);
        assert_eq!(import_split_at(&bytes, &l, None).starts_with("error"), budget < enough, "budget {budget}");
        assert_halves_merge_alike(&bytes, &l, memchr::memchr_iter(b'{', &bytes));
    }
}

/// A second `traceEvents` array after one read in halves adds to the same threads (whose
/// args the merge moved in whole): one reader's model still.
#[test]
fn events_after_a_merged_split_read_join_their_threads() {
    let second = r#""traceName": "t", "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "again", "pid": 1, "tid": 7, "ts": 160, "dur": 1, "args": {"External id": 9}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": "stream 7", "ts": 161, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 5}}]}"#;
    let text = SPLIT_TRACE.replace(r#""traceName": "t"}"#, second);
    assert_ne!(text, SPLIT_TRACE);
    let bytes = text.as_bytes();
    let alone = import_split_at(bytes, &LoadLimits::default(), None);
    // The second array was read.
    assert_ne!(alone, import_split_at(SPLIT_TRACE.as_bytes(), &LoadLimits::default(), None));
    assert_halves_merge_alike(bytes, &LoadLimits::default(), memchr::memchr_iter(b'{', bytes));
}

/// The guess a large trace gets (an element start near the middle), and a second reader
/// started at many other elements, on the committed PyTorch fixtures and on every
/// third-party trace of `../shared/testdata/external` (when present).
#[test]
fn real_traces_read_in_halves_give_one_readers_model() {
    use std::io::Read;
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![
        repo.join("testdata/kineto/train/worker0.1795643806114107950.pt.trace.json.gz"),
        repo.join("testdata/kineto/ddp/rank1.1795643831535307901.pt.trace.json.gz"),
    ];
    let external = std::env::var_os("OXPROF_EXTERNAL_TESTDATA")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| repo.join("../shared/testdata/external"));
    if external.is_dir() {
        let counts = std::fs::read_to_string(repo.join("testdata/external-counts/kineto.json")).unwrap();
        let counts: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&counts).unwrap();
        files.extend(counts.keys().map(|rel| external.join(rel)));
    } else {
        eprintln!("SKIP: {} is absent; third-party traces not read in halves", external.display());
    }
    for file in files {
        let raw = std::fs::read(&file).unwrap();
        let mut bytes = Vec::new();
        if raw.starts_with(&[0x1f, 0x8b]) {
            flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut bytes).unwrap();
        } else {
            bytes = raw;
        }
        let middle = crate::collect::split::event_start_after(&bytes, bytes.len() / 2);
        let elements: Vec<usize> = memchr::memchr_iter(b'{', &bytes).collect();
        let some = elements.iter().copied().step_by(elements.len() / 12 + 1);
        assert_halves_merge_alike(&bytes, &LoadLimits::default(), middle.into_iter().chain(some));
    }
}

/// The build drafts host threads beside device streams: one thread or several, the same
/// model.
#[test]
fn the_model_does_not_depend_on_the_thread_count() {
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let four = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
    for text in [include_str!("../tests/data/mixed.json"), SPLIT_TRACE] {
        let on = |pool: &rayon::ThreadPool| pool.install(|| format!("{:?}", import(text)));
        assert_eq!(on(&one), on(&four));
    }
}

/// Imports running at once, each with its own second reader (and all on one rayon pool
/// for their builds), give one reader's model: no shared state between them.
#[test]
fn concurrent_imports_in_halves_give_one_readers_model() {
    use std::io::Read;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/kineto/train/worker0.1795643806114107950.pt.trace.json.gz");
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_end(&mut bytes).unwrap();
    let limits = LoadLimits::default();
    let alone = import_split_at(&bytes, &limits, None);
    let elements: Vec<usize> = memchr::memchr_iter(b'{', &bytes).collect();
    std::thread::scope(|s| {
        let workers: Vec<_> = (1..=8)
            .map(|k| {
                let at = elements[elements.len() * k / 9];
                let (bytes, limits) = (&bytes, &limits);
                s.spawn(move || import_split_at(bytes, limits, Some(at)))
            })
            .collect();
        for w in workers {
            assert!(w.join().unwrap() == alone, "a concurrent import in halves differs");
        }
    });
}

/// A trace in which every event has a name and an arg key of its own, the worst case for
/// interning (as `scripts/gen/many-names-trace.py` writes it, large): `n` such events on four
/// threads, 1 µs apart, and a last one named `end`.
fn many_names(n: usize) -> String {
    let mut text = String::from("{\"schemaVersion\":1,\"traceEvents\":[\n");
    for i in 0..n {
        text.push_str(&format!(
            "{{\"ph\":\"X\",\"name\":\"aten::op{i:07}\",\"pid\":1,\"tid\":{},\"ts\":{i},\"dur\":0.5,\"args\":{{\"k{i:07}\":{}}}}},\n",
            i % 4,
            i & 0xffff
        ));
    }
    text.push_str(&format!("{{\"ph\":\"X\",\"name\":\"end\",\"pid\":1,\"tid\":0,\"ts\":{n},\"dur\":0.5}}\n]}}\n"));
    text
}

/// What a trace's distinct strings cost against [`LoadLimits::interned_bytes`].
fn interned_cost(text: &str) -> u64 {
    let input = crate::collect::Input::Whole(text.as_bytes());
    let split = crate::collect::split::Split::Never;
    let (collected, _) = crate::collect::collect(input, &KeepPages, &LoadLimits::none(), split).unwrap();
    collected.strings.cost()
}

/// Each event of a many-names trace keeps its own name and arg key (as before budgets).
///
/// ```text
/// thread 0  |op0|           |op4|   |end|
/// thread 1       |op1|
/// thread 2            |op2|
/// thread 3                 |op3|
/// ```
#[test]
fn a_many_names_trace_keeps_every_name_and_arg_key() {
    let d = dump(&import(&many_names(5)));
    assert_eq!(
        d,
        [
            "/host:CPU | 0 thread 0 @0: aten::op0000000[](0+500000){k0000000=0} aten::op0000004[](4000000+500000){k0000004=4} end[](5000000+500000){}",
            "/host:CPU | 1 thread 1 @1000: aten::op0000001[](0+500000){k0000001=1}",
            "/host:CPU | 2 thread 2 @2000: aten::op0000002[](0+500000){k0000002=2}",
            "/host:CPU | 3 thread 3 @3000: aten::op0000003[](0+500000){k0000003=3}",
        ]
    );
}

/// Distinct names, arg keys and string values are charged against
/// [`LoadLimits::interned_bytes`]: a many-names trace past the budget is one error naming
/// the flag that raises it, whether one reader reads it or two side by side (each half
/// alone within the budget, their union past it); within the budget, the model is the
/// one an unlimited import builds.
#[test]
fn distinct_strings_are_within_the_interned_bytes_budget() {
    let text = many_names(20_000);
    let bytes = text.as_bytes();
    let cost = interned_cost(&text);
    // Names (15 bytes), keys (8) and their entries, for 20,000 events of 95 bytes.
    assert!((20_000 * (23 + 32)..20_000 * (23 + 32) + 2_000).contains(&cost), "{cost}");
    let middle = crate::collect::split::event_start_after(bytes, bytes.len() / 2);
    assert!(middle.is_some());
    let readers = [None, middle, Some(bytes.len() / 3), Some(bytes.len() / 2 + 1)];
    let limits = |allowed: u64| LoadLimits::default().with_max_interned_bytes(allowed);
    for at in readers {
        match crate::import_kineto_split_at(bytes, &KeepPages, &limits(cost - 1), at) {
            Err(KinetoError::LimitExceeded(e)) => {
                assert_eq!((e.limit, e.allowed), (Limit::InternedBytes, cost - 1));
                assert!(e.at_least > e.allowed, "{e:?}");
                let message = e.to_string();
                assert!(message.starts_with("holds more than ") && message.ends_with("(--max-interned-bytes)"));
            }
            other => panic!("second reader at {at:?}: {other:?}"),
        }
    }
    let unlimited = crate::import_kineto_split_at(bytes, &KeepPages, &LoadLimits::none(), None).unwrap();
    assert_eq!(unlimited.event_count(), 20_001);
    for at in readers {
        let space = crate::import_kineto_split_at(bytes, &KeepPages, &limits(cost), at).unwrap();
        assert_eq!(oxprof_model::compare::first_difference(&space, &unlimited), None, "second reader at {at:?}");
    }
    // The default budget scales with the file: 64 MiB plus a quarter of it.
    assert!(import_kineto(bytes, &KeepPages, &LoadLimits::default()).is_ok());
}
