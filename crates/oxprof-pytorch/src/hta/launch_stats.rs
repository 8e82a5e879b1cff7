//! HTA's `get_cuda_kernel_launch_stats`: every GPU event launched by `cudaLaunchKernel`,
//! `cudaLaunchKernelExC` (and, with HTA's default `include_memory_events`,
//! `cudaMemcpyAsync`/`cudaMemsetAsync`) joined with its launch by correlation id: the
//! launch's (CPU) duration, the GPU event's duration and the launch delay, from the end of
//! the launch call to the start of the GPU event (negative delays clipped to 0).
//!
//! ```text
//! host  |-cudaLaunchKernel-|            cpu_duration
//! GPU                           |-k-|   gpu_duration
//!                          |<-->|       launch delay
//! ```
//!
//! HTA's summaries (its plots), with its defaults: short kernels (GPU shorter than its
//! launch, launch ≤ 50 µs), runtime outliers (launch > 50 µs), launch-delay outliers
//! (delay > 100 µs).

use super::trace::{ByCorrelation, RankTrace, sorted_ids};
use serde::{Deserialize, Serialize};

/// HTA's default `runtime_cutoff`, µs.
pub const RUNTIME_CUTOFF_US: i64 = 50;
/// HTA's default `launch_delay_cutoff`, µs.
pub const LAUNCH_DELAY_CUTOFF_US: i64 = 100;

const LAUNCHES: [&str; 3] =
    ["cudaLaunchKernel", "cudaLaunchKernelExC", "runFunction - job_prep_and_submit_for_execution"];
const MEMORY_LAUNCHES: [&str; 2] = ["cudaMemsetAsync", "cudaMemcpyAsync"];

/// One launch and what it launched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Launch {
    /// The correlation id.
    pub correlation: i64,
    /// The runtime call's duration, µs.
    pub cpu_duration: i64,
    /// The GPU event's duration, µs.
    pub gpu_duration: i64,
    /// GPU start − launch end, at least 0, µs.
    pub launch_delay: i64,
    /// The runtime call (index into the rank's names).
    #[serde(skip)]
    pub launch_name: u32,
    /// The GPU event (index into the rank's names).
    #[serde(skip)]
    pub kernel_name: u32,
}

/// Every launch of a rank, by correlation, CPU then GPU duration.
pub fn launches(trace: &RankTrace) -> Vec<Launch> {
    let is_launch = trace.names_where(|n| LAUNCHES.contains(&n) || MEMORY_LAUNCHES.contains(&n));
    // Sorted vectors, not a set and a map of vectors: millions of correlations on big
    // traces, where a vector per correlation was most of this analysis's time.
    let launch_corr = sorted_ids(
        trace.events.iter().filter(|e| e.correlation != -1 && is_launch[e.name as usize]).map(|e| e.correlation),
    );
    // Host events of a launch's correlation.
    let cpu = ByCorrelation::of(trace, |e| e.stream == -1 && launch_corr.binary_search(&e.correlation).is_ok());
    drop(launch_corr);
    let mut out = Vec::new();
    for g in trace.gpu_events() {
        for h in cpu.events(g.correlation) {
            let c = &trace.events[h];
            out.push(Launch {
                correlation: g.correlation,
                cpu_duration: c.dur(),
                gpu_duration: g.dur(),
                launch_delay: (g.ts - c.ts - c.dur()).max(0),
                launch_name: c.name,
                kernel_name: g.name,
            });
        }
    }
    out.sort_by_key(|l| (l.correlation, l.cpu_duration, l.gpu_duration));
    out
}

/// One rank's launch summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchSummary {
    /// The rank.
    pub rank: i64,
    /// Launches joined with their GPU event.
    pub launches: u64,
    /// Mean launch (CPU) duration, µs.
    pub mean_cpu_duration_us: Option<f64>,
    /// Mean GPU duration, µs.
    pub mean_gpu_duration_us: Option<f64>,
    /// Mean launch delay, µs.
    pub mean_launch_delay_us: Option<f64>,
    /// Largest launch delay, µs.
    pub max_launch_delay_us: Option<i64>,
    /// GPU event shorter than its launch (launch ≤ 50 µs).
    pub short_kernels: u64,
    /// Launch longer than 50 µs.
    pub runtime_outliers: u64,
    /// Launch delay over 100 µs.
    pub launch_delay_outliers: u64,
}

/// The summary of a rank's launches.
pub fn summarize(rank: i64, launches: &[Launch]) -> LaunchSummary {
    let n = launches.len();
    let mean = |f: fn(&Launch) -> i64| (n > 0).then(|| launches.iter().map(|l| f(l) as f64).sum::<f64>() / n as f64);
    LaunchSummary {
        rank,
        launches: n as u64,
        mean_cpu_duration_us: mean(|l| l.cpu_duration),
        mean_gpu_duration_us: mean(|l| l.gpu_duration),
        mean_launch_delay_us: mean(|l| l.launch_delay),
        max_launch_delay_us: launches.iter().map(|l| l.launch_delay).max(),
        short_kernels: launches
            .iter()
            .filter(|l| l.cpu_duration <= RUNTIME_CUTOFF_US && l.gpu_duration < l.cpu_duration)
            .count() as u64,
        runtime_outliers: launches.iter().filter(|l| l.cpu_duration > RUNTIME_CUTOFF_US).count() as u64,
        launch_delay_outliers: launches.iter().filter(|l| l.launch_delay > LAUNCH_DELAY_CUTOFF_US).count() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hta::test_trace::{gpu, host, memcpy, rank};

    /// ```text
    /// µs      0    10       70   80        300
    /// host    |L1|  |---L2 (60 µs)---|  |cudaMemcpyAsync|
    ///         0..4  10..70              100..110
    /// GPU        |k1|             |k2|                       |memcpy|
    ///            3..5            90..91                      300..310
    /// ```
    /// k1 starts before L1 ends: delay 0, and is shorter than L1 (short kernel).
    /// L2 is a runtime outlier (60 > 50); k2's delay is 20. The memcpy's delay 190 is an
    /// outlier.
    #[test]
    fn joins_launches_with_kernels_by_correlation() {
        let t = rank(&[
            host("cudaLaunchKernel", 0, 4, Some(1)),
            host("cudaLaunchKernel", 10, 70, Some(2)),
            host("cudaMemcpyAsync", 100, 110, Some(3)),
            host("aten::mm", 0, 80, None),
            gpu("k1", 3, 5, 7, 1),
            gpu("k2", 90, 91, 7, 2),
            memcpy(300, 310, 7, 3),
        ]);
        let l = launches(&t);
        let got: Vec<(i64, i64, i64, i64)> =
            l.iter().map(|l| (l.correlation, l.cpu_duration, l.gpu_duration, l.launch_delay)).collect();
        assert_eq!(got, vec![(1, 4, 2, 0), (2, 60, 1, 20), (3, 10, 10, 190)]);
        let s = summarize(0, &l);
        assert_eq!((s.short_kernels, s.runtime_outliers, s.launch_delay_outliers), (1, 1, 1));
        assert_eq!(s.max_launch_delay_us, Some(190));
    }
}
