//! Prints the time and peak memory of each phase behind `overview_page` and the trace
//! index on one profile: a development aid for performance work, not a benchmark (see
//! `scripts/bench/compare-tools.sh` and `cargo bench` for those).
//!
//! ```text
//! cargo run --release -p oxprof-api --example phases -- bench-data/jax_large.xplane.pb
//! PARTS=1 …   also times the parts of OpStats one by one
//! TRACE=1 …   the trace_viewer path instead: grouping and trace index side by side
//! ```
use oxprof_grouping::EventGroups;
use oxprof_model::XSpace;
use oxprof_xprof::op_stats::{convert, environment, host_op_metrics, step_events, steps_db, tf_functions};
use std::time::{Duration, Instant};

/// A `/proc/self/status` field in KB (0 when unknown).
fn status_kb(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = status.lines().find_map(|l| l.strip_prefix(key)).unwrap_or("0 kB");
    field.trim().trim_end_matches("kB").trim().parse().unwrap_or(0)
}

/// Restarts peak tracking at the current resident size (Linux `clear_refs` 5).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// CPU time (user + system) of the whole process so far, from `/proc/self/stat`.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at state (field 3).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    // utime and stime are fields 14 and 15, i.e. 11 and 12 after the state; 100 ticks/s.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// Runs `f`, printing its wall and CPU time and the peak memory while it ran.
fn phase<T>(name: &str, f: impl FnOnce() -> T) -> T {
    reset_peak();
    let (t, cpu) = (Instant::now(), cpu_time());
    let out = f();
    let (elapsed, cpu) = (t.elapsed(), cpu_time().saturating_sub(cpu));
    let (peak, now) = (status_kb("VmHWM:"), status_kb("VmRSS:"));
    println!("{name:<12} {:>8.1} ms  cpu {:>5.0} ms  peak {peak:>7} KB  after {now:>7} KB", ms(elapsed), ms(cpu));
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    oxprof_format::return_freed_large_blocks_to_the_os();
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: phases FILE.xplane.pb");
        std::process::exit(2);
    };
    let space = match phase("load", || oxprof_format::load_xspace(std::path::Path::new(&path))) {
        Ok(space) => space,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if std::env::var_os("TRACE").is_some() {
        let (groups, index) = if std::env::var("TRACE").is_ok_and(|v| v == "seq") {
            let groups = phase("group", || oxprof_grouping::group_events(&space));
            let index = phase("index", || oxprof_trace::TraceIndex::build(&space, "host"));
            (groups, index)
        } else {
            phase("group+index", || {
                rayon::join(
                    || oxprof_grouping::group_events(&space),
                    || oxprof_trace::TraceIndex::build(&space, "host"),
                )
            })
        };
        println!("({} trace events)", index.num_events);
        let req =
            oxprof_trace::xprof::parse_request(|k| (k == "resolution").then(|| "8000".to_string())).unwrap_or_default();
        let json = phase("render", || {
            let host = oxprof_trace::xprof::HostTrace { space: &space, groups: &groups, index: &index };
            oxprof_trace::xprof::trace_viewer_json(&[host], &req)
        });
        println!("({} bytes of trace JSON)", json.map_or(0, |j| j.len()));
        phase("drop", move || drop((groups, index, space)));
        return;
    }
    let groups = phase("group", || oxprof_grouping::group_events(&space));
    let op_stats = phase("op_stats", || convert::op_stats_from_groups(&space, &groups));
    if std::env::var_os("PARTS").is_some() {
        op_stats_parts(&space, &groups);
    }
    phase("inference", || oxprof_xprof::inference::host_inference_stats(&space, &groups, 0));
    let page = phase("overview", || oxprof_xprof::tools::overview_page::overview_page(&op_stats));
    let index = phase("trace_index", || oxprof_trace::TraceIndex::build(&space, "host"));
    println!("({} bytes of overview JSON, {} trace events)", page.to_string().len(), index.num_events);
    phase("drop", move || drop((groups, index, space)));
}

/// The parts of OpStats, one at a time (`op_stats_from_groups` runs them side by side).
fn op_stats_parts(space: &XSpace, groups: &EventGroups) {
    let Some(host) = host_op_metrics::find_host_plane(space) else { return };
    phase("  host_ops", || host_op_metrics::host_op_metrics_db(space, host, groups));
    phase("  tf_funcs", || tf_functions::tf_function_db(space, host));
    phase("  step_db", || steps_db::xspace_to_step_db(space, groups, &step_events::NoTpuOpMetrics, false));
    phase("  host_steps", || step_events::host_plane_step_events(space, host, groups, None));
    phase("  env", || (environment::run_environment(space), environment::diagnostics(space)));
}
