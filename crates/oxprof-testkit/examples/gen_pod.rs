//! Writes a synthetic TPU pod (`oxprof_testkit::pod`: one training job's per-host XSpace
//! files, a straggler and a slow-input host planted) for tests and benchmarks:
//!
//! ```text
//! cargo run --release -p oxprof-testkit --example gen_pod -- OUT --hosts 256 --host-mb 150
//! ```
//!
//! writes `OUT/plugins/profile/<run>/tpu-pod-host-NNN.xplane.pb` and prints what it planted,
//! the time it took and the bytes written. The same options write the same bytes.

use clap::Parser;
use oxprof_testkit::pod::{PodSpec, steps_for_host_bytes, write_pod};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Writes a synthetic TPU pod's per-host profiles.
#[derive(Parser, Debug)]
struct Args {
    /// Output folder (the run goes to OUT/plugins/profile/<run>/; existing files are never
    /// written over).
    out: PathBuf,
    /// Number of hosts.
    #[arg(long, default_value_t = 256)]
    hosts: usize,
    /// Approximate size of each host's file in MB (sets the number of steps).
    #[arg(long, default_value_t = 150.0)]
    host_mb: f64,
    /// Number of steps (instead of --host-mb).
    #[arg(long)]
    steps: Option<u32>,
    /// HLO ops per step on each TensorCore (whole layers of 8).
    #[arg(long, default_value_t = 8192)]
    ops_per_step: u32,
    /// TensorCores per host.
    #[arg(long, default_value_t = 4)]
    cores: u32,
    /// Seed of the per-host, per-step and per-op variation.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// A straggler: HOST:SLOWDOWN (e.g. 191:1.5); repeatable. Default: 3/4 of the hosts, 1.5×.
    #[arg(long, value_parser = host_and_factor)]
    straggler: Vec<(usize, f64)>,
    /// A slow-input host: HOST:EXTRA, the extra input wait as a fraction of the step's
    /// compute time (e.g. 64:0.6); repeatable. Default: 1/4 of the hosts, 0.6.
    #[arg(long, value_parser = host_and_factor)]
    slow_input: Vec<(usize, f64)>,
    /// Plant no straggler and no slow-input host (unless given).
    #[arg(long)]
    no_plants: bool,
    /// Leave out the DCN collectives (and the `MegaScale:` TraceMes).
    #[arg(long)]
    no_megascale: bool,
    /// Give every layer its own ops (an unrolled model) instead of one scanned loop body.
    #[arg(long)]
    unrolled: bool,
    /// The run's folder name.
    #[arg(long, default_value = "2026_01_01_00_00_00")]
    run: String,
}

fn host_and_factor(text: &str) -> Result<(usize, f64), String> {
    let (host, factor) = text.split_once(':').ok_or_else(|| format!("{text:?}: expected HOST:FACTOR"))?;
    let host = host.parse().map_err(|e| format!("{host:?}: {e}"))?;
    let factor = factor.parse().map_err(|e| format!("{factor:?}: {e}"))?;
    Ok((host, factor))
}

fn run(args: Args) -> Result<(), String> {
    let mut spec = PodSpec::new(args.hosts);
    spec.cores_per_host = args.cores;
    spec.ops_per_step = args.ops_per_step;
    spec.seed = args.seed;
    spec.megascale = !args.no_megascale;
    spec.scan_layers = !args.unrolled;
    spec.run = args.run;
    if args.no_plants {
        spec.stragglers.clear();
        spec.slow_input_hosts.clear();
    }
    if !args.straggler.is_empty() {
        spec.stragglers = args.straggler;
    }
    if !args.slow_input.is_empty() {
        spec.slow_input_hosts = args.slow_input;
    }
    spec.steps = match args.steps {
        Some(steps) => steps,
        None if args.host_mb > 0.0 && args.host_mb.is_finite() => {
            steps_for_host_bytes(&spec, (args.host_mb * 1e6) as u64).map_err(|e| e.to_string())?
        }
        None => return Err(format!("--host-mb must be positive, not {}", args.host_mb)),
    };
    spec.validate().map_err(|e| e.to_string())?;
    for &(host, factor) in &spec.stragglers {
        println!("straggler: {} (host {host}), every device op {factor}× as long", spec.host_name(host));
    }
    for &(host, extra) in &spec.slow_input_hosts {
        println!(
            "slow input: {} (host {host}), input wait + {extra} × its compute time per step",
            spec.host_name(host)
        );
    }
    println!(
        "writing {} hosts × {} TensorCores × {} steps × {} ops to {}",
        spec.hosts,
        spec.cores_per_host,
        spec.steps,
        spec.ops_per_step,
        spec.run_dir(&args.out).display()
    );
    let started = Instant::now();
    let summary = write_pod(&spec, &args.out).map_err(|e| e.to_string())?;
    let seconds = started.elapsed().as_secs_f64();
    let total = summary.total_bytes();
    println!(
        "wrote {} files, {:.1} MB ({:.1} MB per host) in {seconds:.1} s ({:.0} MB/s)",
        summary.files.len(),
        total as f64 / 1e6,
        total as f64 / 1e6 / summary.files.len().max(1) as f64,
        total as f64 / 1e6 / seconds.max(1e-9)
    );
    Ok(())
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gen_pod: {e}");
            ExitCode::FAILURE
        }
    }
}
