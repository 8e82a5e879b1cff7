//! HTA's `get_idle_time_breakdown`: per rank and stream, the gaps between consecutive GPU
//! kernels, copies and sets (categories `kernel`, `gpu_memcpy`, `gpu_memset`, …) by cause:
//!
//! * **host wait**: the next kernel's launching runtime call started after the previous
//!   kernel ended: the host did not enqueue work fast enough;
//! * **kernel wait**: otherwise, a gap under 30 µs (HTA's default
//!   `consecutive_kernel_delay`, compared with µs values): launch overhead between
//!   back-to-back kernels;
//! * **other**: the rest (waiting on syncs, events, other streams).
//!
//! ```text
//! host   |launch A|        |launch B|
//! GPU       |--A--|                   |--B--|      gap A→B: B's launch started after A
//!                 |<---- host wait --->|           ended → host wait
//! ```
//!
//! As in HTA the first kernel of a stream has no gap but still makes `other` a row.

use super::temporal::round2;
use super::trace::RankTrace;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// HTA's default `consecutive_kernel_delay` (µs; HTA's docs say ns, its data is µs).
pub const CONSECUTIVE_KERNEL_DELAY_US: i64 = 30;

/// The categories HTA's idle analysis reads (`cuda_sync` and annotations excluded).
const KERNEL_CATS: [&str; 7] = ["kernel", "Kernel", "gpu_memset", "Memset", "gpu_memcpy", "Memcpy", "mtia_ccp_events"];

/// Why a stream was idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdleCategory {
    /// The host launched late.
    HostWait,
    /// A short gap between back-to-back kernels.
    KernelWait,
    /// Anything else.
    Other,
}

impl IdleCategory {
    /// HTA's name.
    pub fn as_str(self) -> &'static str {
        match self {
            IdleCategory::HostWait => "host_wait",
            IdleCategory::KernelWait => "kernel_wait",
            IdleCategory::Other => "other",
        }
    }
}

/// One (rank, stream, category) row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleTimeRow {
    /// The rank.
    pub rank: i64,
    /// The CUDA stream.
    pub stream: i64,
    /// The cause.
    pub idle_category: IdleCategory,
    /// Idle time, µs.
    pub idle_time_us: i64,
    /// Gaps counted.
    pub gaps: u64,
    /// Share of the stream's idle time, 2 decimals (`None` when the stream never idles).
    pub idle_time_ratio: Option<f64>,
}

/// The breakdown of a rank, streams in ascending order, categories in HTA's order.
pub fn idle_time_breakdown(trace: &RankTrace) -> Vec<IdleTimeRow> {
    let partner = trace.host_partner_start();
    let kernel_cat: Vec<bool> = trace.cats.iter().map(|c| KERNEL_CATS.contains(&c.as_str())).collect();
    let mut streams: BTreeMap<i64, Vec<(i64, i64, Option<i64>)>> = BTreeMap::new();
    for e in trace.gpu_events() {
        if kernel_cat[e.cat as usize] {
            streams.entry(e.stream).or_default().push((e.ts, e.end, partner.get(e.correlation)));
        }
    }
    let mut out = Vec::new();
    for (stream, mut kernels) in streams {
        kernels.sort_by_key(|k| k.0);
        // (sum, gaps, present) per category.
        let mut sums: BTreeMap<IdleCategory, (i64, u64)> = BTreeMap::new();
        sums.insert(IdleCategory::Other, (0, 0)); // the first kernel's (gapless) row
        for pair in kernels.windows(2) {
            let (prev_end, (ts, _, runtime)) = (pair[0].1, pair[1]);
            let gap = ts - prev_end;
            let category = if runtime.is_some_and(|r| r > prev_end) {
                IdleCategory::HostWait
            } else if gap < CONSECUTIVE_KERNEL_DELAY_US {
                IdleCategory::KernelWait
            } else {
                IdleCategory::Other
            };
            let slot = sums.entry(category).or_default();
            slot.0 += gap;
            slot.1 += 1;
        }
        let total: i64 = sums.values().map(|s| s.0).sum();
        for (category, (sum, gaps)) in sums {
            let ratio = sum as f64 / total as f64;
            out.push(IdleTimeRow {
                rank: trace.rank,
                stream,
                idle_category: category,
                idle_time_us: sum,
                gaps,
                idle_time_ratio: ratio.is_finite().then(|| round2(ratio)),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hta::test_trace::{gpu, host, rank};

    /// ```text
    /// µs       0   10   20   30   40   50   60   70  ...  200
    /// host     |L1|         |L2|  |L3|                    |L4|
    /// stream 7   |-k1-|              |k2|   |k3|                 |k4|
    ///            2    10             35 40  45 50                 210..220
    /// ```
    /// k1→k2: gap 25, L2 started at 20 > 10 → host wait 25.
    /// k2→k3: gap 5, L3 (28) < 40, 5 < 30 → kernel wait 5.
    /// k3→k4: gap 160, L4 (200) > 50 → host wait; total host wait 185.
    #[test]
    fn gaps_are_host_wait_kernel_wait_or_other() {
        let t = rank(&[
            host("cudaLaunchKernel", 0, 2, Some(1)),
            host("cudaLaunchKernel", 20, 24, Some(2)),
            host("cudaLaunchKernel", 28, 30, Some(3)),
            host("cudaLaunchKernel", 200, 204, Some(4)),
            gpu("k1", 2, 10, 7, 1),
            gpu("k2", 35, 40, 7, 2),
            gpu("k3", 45, 50, 7, 3),
            gpu("k4", 210, 220, 7, 4),
        ]);
        let rows = idle_time_breakdown(&t);
        let got: Vec<(IdleCategory, i64, Option<f64>)> =
            rows.iter().map(|r| (r.idle_category, r.idle_time_us, r.idle_time_ratio)).collect();
        assert_eq!(
            got,
            vec![
                (IdleCategory::HostWait, 185, Some(0.97)),
                (IdleCategory::KernelWait, 5, Some(0.03)),
                (IdleCategory::Other, 0, Some(0.0)),
            ]
        );
    }

    /// A kernel without a launch on the host (no partner) waiting 40 µs is "other".
    #[test]
    fn long_gaps_without_a_late_launch_are_other() {
        let t = rank(&[gpu("k1", 0, 10, 7, 1), gpu("k2", 50, 60, 7, 2)]);
        let rows = idle_time_breakdown(&t);
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].idle_category, rows[0].idle_time_us), (IdleCategory::Other, 40));
    }
}
