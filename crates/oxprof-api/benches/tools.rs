//! Cold-start cost of an OpStats tool: load, group, convert and render, as `oxprof data`
//! does for one request. The profile comes from `OXPROF_BENCH_PROFILE`, else
//! `bench-data/jax_large.xplane.pb` (`scripts/gen/large-profile.sh`: 85 MB, 3 M events),
//! else the committed `tf_custom_loop` fixture.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use oxprof_api::data::data;
use std::path::PathBuf;

fn profile() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let large = std::env::var_os("OXPROF_BENCH_PROFILE")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("bench-data/jax_large.xplane.pb"));
    if large.exists() {
        return large;
    }
    eprintln!("{} not found: benchmarking testdata/profiles/tf_custom_loop", large.display());
    root.join("testdata/profiles/tf_custom_loop")
}

fn tools(c: &mut Criterion) {
    // As the `oxprof` binary does.
    oxprof_format::return_freed_large_blocks_to_the_os();
    let path = profile();
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let mut group = c.benchmark_group("tool_cold");
    group.sample_size(10);
    if bytes > 0 {
        group.throughput(Throughput::Bytes(bytes));
    }
    for tool in ["overview_page", "input_pipeline_analyzer", "framework_op_stats", "pod_viewer"] {
        let request = oxprof_api::registry::request(tool).unwrap();
        group.bench_function(tool, |b| b.iter(|| data(&path, &request).expect("tool output")));
    }
    group.finish();
}

criterion_group!(benches, tools);
criterion_main!(benches);
