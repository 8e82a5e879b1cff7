//! Cold cost of `oxprof diff` (issue 16's budget: two 85 MB JAX profiles ≤ 1 s, against a
//! saved summary ≤ 0.5 s): both sides loaded, analysed and compared, as the CLI does, with
//! nothing kept between iterations. The profile comes from `OXPROF_BENCH_PROFILE`, else
//! `bench-data/jax_large.xplane.pb` (`scripts/gen/large-profile.sh`: 85 MB, 3 M events),
//! else the committed `testdata/diff/fast_b32`; it is compared with itself (two sessions:
//! both sides decode) and with its summary (written once, before the clock starts).

use criterion::{Criterion, criterion_group, criterion_main};
use oxprof_api::diff::{ReadOptions, SideRequest, diff_paths, summarize};
use oxprof_diff::DiffOptions;
use std::path::PathBuf;

fn profile() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let large = std::env::var_os("OXPROF_BENCH_PROFILE")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("bench-data/jax_large.xplane.pb"));
    if large.exists() {
        return large;
    }
    eprintln!("{} not found: benchmarking testdata/diff/fast_b32", large.display());
    root.join("testdata/diff/fast_b32")
}

fn diff(c: &mut Criterion) {
    // As the `oxprof` binary does.
    oxprof_format::return_freed_large_blocks_to_the_os();
    let path = profile();
    let side = SideRequest { path: &path, run: None, host: None };
    let tmp = tempfile::tempdir().expect("temporary directory");
    let baseline = tmp.path().join("baseline.json");
    let summary = summarize(&side, &Default::default()).expect("summary");
    std::fs::write(&baseline, summary.to_json()).expect("summary written");
    let saved = SideRequest { path: &baseline, run: None, host: None };
    let (options, limits) = (DiffOptions::default(), ReadOptions::default());

    let mut group = c.benchmark_group("diff_cold");
    group.sample_size(10);
    group.bench_function("two_profiles", |b| b.iter(|| diff_paths(&side, &side, &options, &limits).expect("diff")));
    group.bench_function("against_summary", |b| b.iter(|| diff_paths(&saved, &side, &options, &limits).expect("diff")));
    group.bench_function("two_summaries", |b| b.iter(|| diff_paths(&saved, &saved, &options, &limits).expect("diff")));
    group.finish();
}

criterion_group!(benches, diff);
criterion_main!(benches);
