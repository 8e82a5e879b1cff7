//! HTA's `get_temporal_breakdown`: per rank, the span from the first GPU event's start to
//! the last one's end, split into idle (no GPU event running), compute (a computation
//! kernel running) and non-compute (the rest: communication, memory, other GPU events).
//!
//! ```text
//! GPU events  |--gemm--|   |-nccl-|  |--gemm--|
//! span        |----------------------------------|
//! compute     |xxxxxxxx|             |xxxxxxxx|
//! non-compute              |xxxxxx|
//! idle                 |xxx|      |xx|
//! ```
//!
//! Every GPU event (any `stream` other than −1, including syncs and GPU annotations)
//! counts toward the span and against idle time, as in HTA.

use super::trace::{KernelType, RankTrace, merge_intervals, merged_length};
use serde::{Deserialize, Serialize};

/// One rank's breakdown (µs; percentages rounded to 2 decimals as HTA rounds them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemporalBreakdown {
    /// The rank.
    pub rank: i64,
    /// First GPU start to last GPU end, µs (HTA's `kernel_time(us)`).
    pub kernel_time_us: i64,
    /// No GPU event running, µs.
    pub idle_time_us: i64,
    /// A computation kernel running, µs.
    pub compute_time_us: i64,
    /// The rest, µs.
    pub non_compute_time_us: i64,
    /// `idle / kernel_time` × 100, 2 decimals.
    pub idle_time_pctg: f64,
    /// `compute / kernel_time` × 100, 2 decimals.
    pub compute_time_pctg: f64,
    /// `non_compute / kernel_time` × 100, 2 decimals.
    pub non_compute_time_pctg: f64,
}

/// The breakdown of a rank, `None` when it has no GPU events (HTA fails there).
pub fn temporal_breakdown(trace: &RankTrace) -> Option<TemporalBreakdown> {
    let types = trace.kernel_types();
    let all = merge_intervals(trace.gpu_events().map(|e| (e.ts, e.end)).collect());
    let (first, last) = (all.first()?, all.last()?);
    let kernel_time = last.1 - first.0;
    let idle = kernel_time - merged_length(&all);
    let compute = merged_length(&merge_intervals(
        trace
            .gpu_events()
            .filter(|e| types[e.name as usize] == KernelType::Computation)
            .map(|e| (e.ts, e.end))
            .collect(),
    ));
    let non_compute = kernel_time - compute - idle;
    let pct = |part: i64| round2(100.0 * part as f64 / kernel_time as f64);
    Some(TemporalBreakdown {
        rank: trace.rank,
        kernel_time_us: kernel_time,
        idle_time_us: idle,
        compute_time_us: compute,
        non_compute_time_us: non_compute,
        idle_time_pctg: pct(idle),
        compute_time_pctg: pct(compute),
        non_compute_time_pctg: pct(non_compute),
    })
}

/// HTA's `round(100 * x, 2)` on a column: numpy's `around`, half to even on the scaled
/// value (NaN stays NaN).
pub fn round2(x: f64) -> f64 {
    (x * 100.0).round_ties_even() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hta::test_trace::{gpu, rank};

    /// ```text
    /// µs        0    10   20   30   40   50
    /// stream 7  |-gemm-|                        0..10 compute
    /// stream 8       |--nccl AllReduce--|       5..30 communication
    /// stream 7                      |gemm|      35..45 compute
    /// ```
    /// Span 0..45 = 45; busy 0..30 ∪ 35..45 = 40, idle 5; compute 20; non-compute 20.
    #[test]
    fn splits_the_span_into_idle_compute_and_the_rest() {
        let t = rank(&[gpu("gemm", 0, 10, 7, 1), gpu("ncclKernel_AllReduce", 5, 30, 8, 2), gpu("gemm", 35, 45, 7, 3)]);
        let b = temporal_breakdown(&t).unwrap();
        assert_eq!((b.kernel_time_us, b.idle_time_us, b.compute_time_us, b.non_compute_time_us), (45, 5, 20, 20));
        assert_eq!((b.idle_time_pctg, b.compute_time_pctg, b.non_compute_time_pctg), (11.11, 44.44, 44.44));
    }

    #[test]
    fn no_gpu_events_no_breakdown() {
        assert!(temporal_breakdown(&rank(&[])).is_none());
    }
}
