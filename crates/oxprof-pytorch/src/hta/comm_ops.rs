//! Communication op stats: per rank and communication kernel name (HTA's
//! `KernelType::COMMUNICATION`: `nccl…`, `…ncclKernel…`, `hip…`, `hccl…`), calls and
//! time, as HTA's `get_gpu_kernel_breakdown` lists them per kernel (sum, mean, min, max,
//! µs; without its "others" bucket).

use super::trace::{KernelType, RankTrace};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One (rank, kernel) row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommOpStats {
    /// The rank.
    pub rank: i64,
    /// Kernel name.
    pub name: String,
    /// Calls.
    pub calls: u64,
    /// Total time, µs.
    pub total_us: i64,
    /// Mean, µs.
    pub mean_us: f64,
    /// Shortest, µs.
    pub min_us: i64,
    /// Longest, µs.
    pub max_us: i64,
}

/// A rank's communication kernels, most time first (then by name).
pub fn comm_op_stats(trace: &RankTrace) -> Vec<CommOpStats> {
    let types = trace.kernel_types();
    let mut by_name: BTreeMap<&str, (u64, i64, i64, i64)> = BTreeMap::new();
    for e in trace.gpu_events() {
        if types[e.name as usize] != KernelType::Communication {
            continue;
        }
        let name = trace.name(e);
        let d = e.dur();
        let s = by_name.entry(name).or_insert((0, 0, i64::MAX, i64::MIN));
        s.0 += 1;
        s.1 += d;
        s.2 = s.2.min(d);
        s.3 = s.3.max(d);
    }
    let mut out: Vec<CommOpStats> = by_name
        .into_iter()
        .map(|(name, (calls, total, min, max))| CommOpStats {
            rank: trace.rank,
            name: name.to_string(),
            calls,
            total_us: total,
            mean_us: total as f64 / calls as f64,
            min_us: min,
            max_us: max,
        })
        .collect();
    out.sort_by(|a, b| b.total_us.cmp(&a.total_us).then_with(|| a.name.cmp(&b.name)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hta::test_trace::{gpu, rank};

    /// ```text
    /// stream 8  |ncclAllReduce 10|  |ncclAllReduce 30|  |ncclBroadcast 5|
    /// stream 7  |gemm|                                  (not communication)
    /// ```
    #[test]
    fn sums_communication_kernels_by_name() {
        let t = rank(&[
            gpu("ncclKernel_AllReduce", 0, 10, 8, 1),
            gpu("ncclKernel_AllReduce", 20, 50, 8, 2),
            gpu("ncclKernel_Broadcast", 60, 65, 8, 3),
            gpu("gemm", 0, 5, 7, 4),
        ]);
        let s = comm_op_stats(&t);
        let got: Vec<(&str, u64, i64, f64, i64, i64)> =
            s.iter().map(|s| (s.name.as_str(), s.calls, s.total_us, s.mean_us, s.min_us, s.max_us)).collect();
        assert_eq!(got, vec![("ncclKernel_AllReduce", 2, 40, 20.0, 10, 30), ("ncclKernel_Broadcast", 1, 5, 5.0, 5, 5)]);
    }
}
