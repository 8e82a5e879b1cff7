//! HTA's `get_comm_comp_overlap`: per rank, the share of communication time during which
//! a computation kernel also runs: |comm ∩ comp| / |comm| over the merged intervals of
//! each kind.
//!
//! ```text
//! comm   |------nccl------|        |--nccl--|
//! comp       |--gemm--|                 |--gemm--|
//! both       |xxxxxxxx|                 |xxx|
//! ```

use super::temporal::round2;
use super::trace::{KernelType, RankTrace, merge_intervals, merged_length};
use serde::{Deserialize, Serialize};

/// One rank's overlap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommCompOverlap {
    /// The rank.
    pub rank: i64,
    /// Merged communication time, µs.
    pub comm_time_us: i64,
    /// Communication time with a computation kernel running, µs.
    pub overlap_time_us: i64,
    /// `overlap / comm` × 100, 2 decimals (HTA's `comp_comm_overlap_pctg`); `None`
    /// without communication (HTA's NaN).
    pub comp_comm_overlap_pctg: Option<f64>,
}

/// The overlap of a rank.
pub fn comm_comp_overlap(trace: &RankTrace) -> CommCompOverlap {
    let types = trace.kernel_types();
    let of = |kind: KernelType| {
        merge_intervals(trace.gpu_events().filter(|e| types[e.name as usize] == kind).map(|e| (e.ts, e.end)).collect())
    };
    let comm = of(KernelType::Communication);
    let comp = of(KernelType::Computation);
    // HTA's sweep: +1/−1 at comm edges, +2/−2 at comp edges; time while the sum is 3.
    let mut edges: Vec<(i64, i32)> = Vec::with_capacity(2 * (comm.len() + comp.len()));
    for &(ts, end) in &comm {
        edges.push((ts, 1));
        edges.push((end, -1));
    }
    for &(ts, end) in &comp {
        edges.push((ts, 2));
        edges.push((end, -2));
    }
    edges.sort_by_key(|&(t, _)| t);
    let mut running = 0;
    let mut overlap = 0i64;
    for (i, &(t, delta)) in edges.iter().enumerate() {
        running += delta;
        if running == 3
            && let Some(&(next, _)) = edges.get(i + 1)
        {
            overlap += next - t;
        }
    }
    let comm_time = merged_length(&comm);
    let ratio = overlap as f64 / comm_time as f64;
    CommCompOverlap {
        rank: trace.rank,
        comm_time_us: comm_time,
        overlap_time_us: overlap,
        comp_comm_overlap_pctg: ratio.is_finite().then(|| round2(100.0 * ratio)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hta::test_trace::{gpu, rank};

    /// ```text
    /// µs        0    10   20   30   40
    /// stream 8  |-----nccl A-----|          0..20
    /// stream 7       |-gemm-|               5..15
    /// stream 8                     |nccl|   25..35
    /// stream 7                        |gemm|30..40
    /// ```
    /// comm 30 µs; with compute 10 + 5 = 15 → 50 %.
    #[test]
    fn overlap_is_comm_time_with_compute_running() {
        let t = rank(&[
            gpu("ncclKernel_A", 0, 20, 8, 1),
            gpu("gemm", 5, 15, 7, 2),
            gpu("ncclKernel_A", 25, 35, 8, 3),
            gpu("gemm", 30, 40, 7, 4),
        ]);
        let o = comm_comp_overlap(&t);
        assert_eq!((o.comm_time_us, o.overlap_time_us, o.comp_comm_overlap_pctg), (30, 15, Some(50.0)));
    }

    #[test]
    fn no_communication_is_no_ratio() {
        assert_eq!(comm_comp_overlap(&rank(&[gpu("gemm", 0, 5, 7, 1)])).comp_comm_overlap_pctg, None);
    }
}
