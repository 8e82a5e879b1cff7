//! Times each HTA analysis on one PyTorch trace once it is loaded: a development aid for
//! the numbers in the manual's benchmarks (not a test; run it beside
//! `scripts/bench/time-hta.py`, HTA's own timing).
//!
//! ```text
//! cargo run --release -p oxprof-api --example hta_timing -- bench-data/kineto_large.pt.trace.json
//! ```
use oxprof_pytorch::hta::{
    comm_ops, distributed::HtaDistributed, gpu_idle::HtaGpuIdle, idle_time, launch_stats, overlap, queue_length,
    temporal, trace::RankTrace,
};
use std::time::Instant;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: hta_timing TRACE");
        std::process::exit(2);
    };
    let t = Instant::now();
    // A benchmark reads traces of any size (the default budget stops at 2 GiB).
    let limits = oxprof_model::limits::LoadLimits::default().with_max_profile_bytes(u64::MAX);
    let space = match oxprof_format::load_xspace_with(std::path::Path::new(&path), &limits, &|_| true) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    println!("load (import)         {:8.3} s  {} events", t.elapsed().as_secs_f64(), space.event_count());
    let t = Instant::now();
    let parsed = oxprof_pytorch::parse(&space);
    println!("PyTorch parse         {:8.3} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let trace = RankTrace::from_space(&space, "rank0", 0);
    println!("HTA rows              {:8.3} s  {} rows", t.elapsed().as_secs_f64(), trace.events.len());
    let t = Instant::now();
    let parts = oxprof_pytorch::hta::parts::RankParts::of_rank(&trace);
    println!("HTA parts (parallel)  {:8.3} s  filtered {}", t.elapsed().as_secs_f64(), parts.filtered);
    let t = Instant::now();
    drop(space);
    println!("drop model            {:8.3} s", t.elapsed().as_secs_f64());
    use oxprof_pytorch::{kernels, modules, operators, overview};
    let t = Instant::now();
    let _ = overview::PytorchOverview::from_parsed(&parsed);
    println!("pytorch_overview      {:8.3} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let _ = operators::PytorchOpStats::from_parsed(&parsed);
    println!("pytorch_op_stats      {:8.3} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let _ = kernels::PytorchKernelStats::from_parsed(&parsed);
    println!("pytorch_kernel_stats  {:8.3} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let _ = modules::PytorchModules::from_parsed(&parsed);
    println!("pytorch_modules       {:8.3} s", t.elapsed().as_secs_f64());
    let time = |name: &str, f: &dyn Fn() -> usize| {
        let t = Instant::now();
        let n = f();
        println!("{name:22}{:8.3} s  ({n})", t.elapsed().as_secs_f64());
    };
    time("temporal_breakdown", &|| usize::from(temporal::temporal_breakdown(&trace).is_some()));
    time("comm_comp_overlap", &|| usize::from(overlap::comm_comp_overlap(&trace).comp_comm_overlap_pctg.is_some()));
    time("comm_op_stats", &|| comm_ops::comm_op_stats(&trace).len());
    time("idle_time_breakdown", &|| idle_time::idle_time_breakdown(&trace).len());
    time("launch_stats", &|| launch_stats::launches(&trace).len());
    time("queue_length_summary", &|| queue_length::queue_length_summary(&trace).len());
    time("hta_distributed (all)", &|| HtaDistributed::compute(vec![trace.clone()]).ranks.len());
    time("hta_gpu_idle (all)", &|| HtaGpuIdle::compute(vec![trace.clone()]).idle.len());
}
