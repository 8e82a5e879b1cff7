//! Trace viewer costs: `trace_viewer@` with default parameters from a cold start (load,
//! group, index, render), the LOD API's first full view (cold) and later zooms, search and
//! details (warm). The profile comes from `OXPROF_BENCH_PROFILE`, else
//! `bench-data/jax_large.xplane.pb` (`scripts/gen/large-profile.sh`), else the committed
//! `jax_train` fixture. A ≥ 50 M-event profile: `scripts/gen/synthetic-trace.sh`.

use criterion::{Criterion, criterion_group, criterion_main};
use oxprof_api::data::{DataRequest, data};
use oxprof_api::registry::ToolId;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn profile() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let large = std::env::var_os("OXPROF_BENCH_PROFILE")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("bench-data/jax_large.xplane.pb"));
    if large.exists() {
        return large;
    }
    eprintln!("{} not found: benchmarking testdata/profiles/jax_train", large.display());
    root.join("testdata/profiles/jax_train")
}

fn params(pairs: &[(&str, String)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

fn trace(c: &mut Criterion) {
    // As the `oxprof` binary does.
    oxprof_format::return_freed_large_blocks_to_the_os();
    let path = profile();
    let mut cold = c.benchmark_group("trace_cold");
    cold.sample_size(10);
    let request = DataRequest {
        params: params(&[("resolution", "8000".into())]),
        ..DataRequest::new(ToolId::TRACE_VIEWER_STREAMING)
    };
    cold.bench_function("trace_viewer@_default", |b| b.iter(|| data(&path, &request).expect("trace_viewer@")));
    cold.bench_function("lod_first_full_view", |b| {
        b.iter(|| {
            // A new session: nothing loaded yet.
            let (session, run) = oxprof_api::data::open_run(&path, None).expect("run");
            oxprof_api::trace::window(&session, &run, None, &BTreeMap::new()).expect("window")
        })
    });
    cold.finish();

    let mut warm = c.benchmark_group("trace_warm");
    let (session, run) = oxprof_api::data::open_run(&path, None).expect("run");
    let tracks = oxprof_api::trace::tracks(&session, &run, None).expect("tracks");
    let (start, end) = (tracks.start_ps, tracks.end_ps);
    let span = end - start;
    for (name, divisor) in [("zoom_10pct", 10u64), ("zoom_1pct", 100), ("zoom_0.01pct", 10_000)] {
        let a = start + span / 3;
        let p = params(&[("start_ps", a.to_string()), ("end_ps", (a + span / divisor).to_string())]);
        warm.bench_function(name, |b| b.iter(|| oxprof_api::trace::window(&session, &run, None, &p).expect("window")));
    }
    let full = BTreeMap::new();
    warm.bench_function("full_view", |b| {
        b.iter(|| oxprof_api::trace::window(&session, &run, None, &full).expect("window"))
    });
    warm.bench_function("search_prefix", |b| {
        b.iter(|| oxprof_api::trace::search(&session, &run, None, "Thunk", Some(100)).expect("search"))
    });
    warm.finish();
}

criterion_group!(benches, trace);
criterion_main!(benches);
