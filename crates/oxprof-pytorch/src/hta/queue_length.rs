//! HTA's `get_queue_length_summary`: per rank and CUDA stream, the number of outstanding
//! operations (launched by the host, not yet started on the GPU), sampled at every change:
//! +1 when a runtime launch (`cudaLaunchKernel`, `cudaMemcpyAsync`, `hipLaunchKernel`, …)
//! that has a GPU event starts, −1 when the GPU event starts; then pandas' `describe` of
//! those samples (count, mean, sample standard deviation, min, quartiles with linear
//! interpolation, max).
//!
//! ```text
//! host    |L1| |L2| |L3|
//! GPU                  |--k1--|--k2--|--k3--|
//! queue   1    2    3  2      1      0          samples: 1 2 3 2 1 0
//! ```
//!
//! At equal timestamps GPU starts count before launches: HTA sorts with an unstable sort,
//! and that is the order it gave on every recorded trace (the GPU event of an earlier launch
//! precedes the later launch in the file).

use super::trace::{ByCorrelation, RankTrace, sorted_ids};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// HTA's runtime launch names (`get_runtime_launch_events_mask`).
const RUNTIME_LAUNCHES: [&str; 12] = [
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "cuLaunchKernel",
    "cuLaunchKernelEx",
    "cudaMemcpyAsync",
    "cudaMemsetAsync",
    "runFunction - job_prep_and_submit_for_execution",
    "hipLaunchKernel",
    "hipExtModuleLaunchKernel",
    "hipMemsetAsync",
    "hipMemcpyAsync",
    "hipMemcpyWithStream",
];

/// One (rank, stream) summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueLengthSummary {
    /// The rank.
    pub rank: i64,
    /// The CUDA stream.
    pub stream: i64,
    /// Samples (changes of the queue length).
    pub count: u64,
    /// Mean queue length over the samples.
    pub mean: f64,
    /// Sample standard deviation (`None` for one sample).
    pub std: Option<f64>,
    /// Smallest.
    pub min: f64,
    /// 25th percentile.
    pub p25: f64,
    /// Median.
    pub p50: f64,
    /// 75th percentile.
    pub p75: f64,
    /// Largest.
    pub max: f64,
    /// Launches that share their microsecond with a GPU start on the stream: HTA orders
    /// such pairs with an unstable sort, so its samples (not their count, min or max) may
    /// differ from these by two at each.
    pub ties: u64,
}

/// The queue-length summaries of a rank, streams ascending.
pub fn queue_length_summary(trace: &RankTrace) -> Vec<QueueLengthSummary> {
    let linked = trace.gpu_kernel_correlations();
    let gpu_by_corr = ByCorrelation::of(trace, |e| e.stream != -1);
    // Launch rows first (with the stream of each GPU event they launched), then GPU rows.
    let mut rows: Vec<(i64, i64, i32)> = Vec::new();
    let mut runtime_corr: Vec<i64> = Vec::new();
    let is_launch = trace.names_where(|n| RUNTIME_LAUNCHES.contains(&n));
    for e in &trace.events {
        if e.correlation == -1 || !is_launch[e.name as usize] || linked.binary_search(&e.correlation).is_err() {
            continue;
        }
        runtime_corr.push(e.correlation);
        for g in gpu_by_corr.events(e.correlation) {
            rows.push((e.ts, trace.events[g].stream, 1));
        }
    }
    drop(linked);
    let runtime_corr = sorted_ids(runtime_corr.into_iter());
    for e in trace.gpu_events() {
        if runtime_corr.binary_search(&e.correlation).is_ok() {
            rows.push((e.ts, e.stream, -1));
        }
    }
    // Every field is in the key: rows that compare equal are the same row.
    rows.sort_unstable_by_key(|r| (r.1, r.0, r.2));
    let mut streams: BTreeMap<i64, (i64, Vec<f64>, u64)> = BTreeMap::new();
    for (i, &(ts, stream, delta)) in rows.iter().enumerate() {
        let (running, samples, ties) = streams.entry(stream).or_default();
        *running += i64::from(delta);
        samples.push(*running as f64);
        // Rows are by stream, time, GPU starts (−1) first: a launch right after a GPU
        // start of the same microsecond is a tie.
        if delta == 1 && i > 0 && rows[i - 1] == (ts, stream, -1) {
            *ties += 1;
        }
    }
    streams.into_iter().map(|(stream, (_, samples, ties))| describe(trace.rank, stream, samples, ties)).collect()
}

fn describe(rank: i64, stream: i64, samples: Vec<f64>, ties: u64) -> QueueLengthSummary {
    let n = samples.len();
    let mean = samples.iter().sum::<f64>() / n as f64;
    let std = (n > 1).then(|| (samples.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt());
    let mut sorted = samples;
    sorted.sort_by(f64::total_cmp);
    let q = |p: f64| {
        let h = p * (n - 1) as f64;
        let lo = h.floor() as usize;
        let hi = (lo + 1).min(n - 1);
        sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
    };
    QueueLengthSummary {
        rank,
        stream,
        count: n as u64,
        mean,
        std,
        min: sorted[0],
        p25: q(0.25),
        p50: q(0.5),
        p75: q(0.75),
        max: sorted[n - 1],
        ties,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hta::test_trace::{gpu, host, rank};

    /// ```text
    /// µs      0    2    4    6    8   10   12
    /// host    |L1| |L2| |L3|
    /// GPU                    |k1-|k2-|k3-|
    /// queue   1    2    3    2   1   0
    /// ```
    #[test]
    fn queue_grows_with_launches_and_shrinks_as_kernels_start() {
        let t = rank(&[
            host("cudaLaunchKernel", 0, 1, Some(1)),
            host("cudaLaunchKernel", 2, 3, Some(2)),
            host("cudaLaunchKernel", 4, 5, Some(3)),
            host("cudaStreamSynchronize", 5, 6, None),
            gpu("k1", 6, 8, 7, 1),
            gpu("k2", 8, 10, 7, 2),
            gpu("k3", 10, 12, 7, 3),
        ]);
        let s = queue_length_summary(&t);
        assert_eq!(s.len(), 1);
        let s = &s[0];
        assert_eq!((s.stream, s.count, s.mean, s.min, s.p50, s.max), (7, 6, 1.5, 0.0, 1.5, 3.0));
        assert_eq!((s.p25, s.p75), (1.0, 2.0));
        assert!((s.std.unwrap() - 1.048_808_848_170_151_5).abs() < 1e-12);
    }
}
