//! Decode and encode throughput (MB/s) on a large real profile.
//!
//! The profile comes from `OXPROF_BENCH_PROFILE`, else `bench-data/jax_large.xplane.pb`
//! at the workspace root (made by `scripts/gen/large-profile.sh`: an 85 MB JAX profile from
//! `../shared/refkit/gen_jax_large.py`). Without either, a synthetic 3 M-event profile is
//! built in memory so the benchmark still runs.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use oxprof_testkit::XSpaceBuilder;
use std::path::PathBuf;

fn profile_bytes() -> (String, Vec<u8>) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let path = std::env::var_os("OXPROF_BENCH_PROFILE")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("bench-data/jax_large.xplane.pb"));
    if let Ok(bytes) = std::fs::read(&path) {
        return (path.display().to_string(), bytes);
    }
    eprintln!("{} not found: benchmarking a synthetic profile (run scripts/gen/large-profile.sh)", path.display());
    let bytes = XSpaceBuilder::new()
        .plane("/host:CPU", |p| {
            for t in 0..4 {
                p.line(t, &format!("thread{t}"), 1_700_000_000_000_000_000, |l| {
                    for i in 0..750_000i64 {
                        let e = l.event(&format!("op{}", i % 500), i * 7_000, 5_000);
                        if i % 3 == 0 {
                            e.stat("run_id", i).stat("_p", i * 1_000_003).stat("hlo_op", "fusion.1");
                        }
                    }
                });
            }
        })
        .to_bytes();
    ("synthetic".to_string(), bytes)
}

fn decode(c: &mut Criterion) {
    let (name, bytes) = profile_bytes();
    let mut group = c.benchmark_group("decode_xspace");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.sample_size(10);
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("thread pool");
    group.bench_function(format!("1 thread/{name}"), |b| {
        b.iter(|| one.install(|| oxprof_xspace::decode_xspace(&bytes).expect("decodes")))
    });
    group.bench_function(format!("all threads/{name}"), |b| {
        b.iter(|| oxprof_xspace::decode_xspace(&bytes).expect("decodes"))
    });
    group.finish();
}

fn encode(c: &mut Criterion) {
    let (name, bytes) = profile_bytes();
    let space = oxprof_xspace::decode_xspace(&bytes).expect("decodes");
    let mut group = c.benchmark_group("encode_xspace");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.sample_size(10);
    group.bench_function(name, |b| b.iter(|| oxprof_xspace::encode_xspace(&space)));
    group.finish();
}

criterion_group!(benches, decode, encode);
criterion_main!(benches);
