//! Import throughput (MB/s of uncompressed JSON) of a PyTorch trace: the whole import, and
//! the streaming parse alone.
//!
//! The trace comes from `OXPROF_BENCH_KINETO` (a `.json` or `.json.gz` file), else
//! `bench-data/kineto_large.pt.trace.json` at the workspace root (made by
//! `scripts/gen/large-kineto-trace.sh`), else the kineto resnet50 sample under
//! `../shared/testdata/external`. Without any, the benchmark says so and measures nothing.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use oxprof_model::{KeepPages, LoadLimits};
use std::io::Read;
use std::path::PathBuf;

fn trace_bytes() -> Option<(String, Vec<u8>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let candidates = [
        // Relative paths are from the workspace root (cargo runs benches in the crate's folder).
        std::env::var_os("OXPROF_BENCH_KINETO").map(|p| root.join(p)),
        Some(root.join("bench-data/kineto_large.pt.trace.json")),
        Some(root.join(
            "../shared/testdata/external/pytorch-kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
        )),
    ];
    for path in candidates.into_iter().flatten() {
        let Ok(raw) = std::fs::read(&path) else { continue };
        let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
            let mut out = Vec::new();
            flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut out).ok()?;
            out
        } else {
            raw
        };
        return Some((path.file_name()?.to_string_lossy().into_owned(), bytes));
    }
    None
}

fn import(c: &mut Criterion) {
    let Some((name, bytes)) = trace_bytes() else {
        eprintln!("no trace to benchmark: set OXPROF_BENCH_KINETO or run scripts/gen/large-kineto-trace.sh");
        return;
    };
    let mut group = c.benchmark_group("import_kineto");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.sample_size(10);
    let limits = LoadLimits::none();
    group.bench_function(name.clone(), |b| {
        b.iter(|| oxprof_kineto::import_kineto(&bytes, &KeepPages, &limits).map(|s| s.event_count()))
    });
    group.finish();
    // The streaming JSON read alone (no model build).
    let mut group = c.benchmark_group("parse_kineto");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.sample_size(10);
    group.bench_function(name, |b| b.iter(|| oxprof_kineto::parse_only(&bytes, &limits)));
    group.finish();
}

criterion_group!(benches, import);
criterion_main!(benches);
