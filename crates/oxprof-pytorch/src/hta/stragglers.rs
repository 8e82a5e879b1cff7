//! Stragglers: for every `ProfilerStep#N` recorded by two or more ranks, which rank took
//! longest, and per rank how often it was that rank. This is oxprof's own measure (the
//! host step's duration); HTA's `get_potential_stragglers` instead ranks the start of the
//! last long NCCL kernel of each step, which needs NCCL kernels on every rank.
//!
//! ```text
//! rank 0  |--step 1--|  |--step 2-----|
//! rank 1  |--step 1------| |--step 2--|
//! step 1: slowest rank 1; step 2: slowest rank 0
//! ```

use super::trace::{ProfilerStep, RankTrace};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One step across ranks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepSpread {
    /// N of `ProfilerStep#N`.
    pub step: i64,
    /// Ranks that recorded it.
    pub ranks: u64,
    /// The rank with the longest step (the lowest rank on ties).
    pub slowest_rank: i64,
    /// Its duration, µs.
    pub slowest_us: i64,
    /// The shortest duration, µs.
    pub fastest_us: i64,
    /// Mean over ranks, µs.
    pub mean_us: f64,
}

/// Per rank: steps, mean step time and how often it was the slowest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankSteps {
    /// The rank.
    pub rank: i64,
    /// Steps recorded.
    pub steps: u64,
    /// Mean step time, µs (`None` without steps).
    pub mean_step_us: Option<f64>,
    /// Steps (recorded by two or more ranks) where this rank was slowest.
    pub slowest_in: u64,
}

/// The spread of every shared step, by step, and each rank's summary, in `ranks` order.
pub fn stragglers(ranks: &[RankTrace]) -> (Vec<StepSpread>, Vec<RankSteps>) {
    let steps: Vec<(i64, &[ProfilerStep])> = ranks.iter().map(|r| (r.rank, r.steps.as_slice())).collect();
    stragglers_of(&steps)
}

/// [`stragglers`] of each rank's number and steps.
pub fn stragglers_of(ranks: &[(i64, &[ProfilerStep])]) -> (Vec<StepSpread>, Vec<RankSteps>) {
    // (step, rank) → the rank's longest event of that step (a step name may be recorded
    // twice on a rank, e.g. on two threads).
    let mut by_step: BTreeMap<i64, BTreeMap<i64, i64>> = BTreeMap::new();
    for &(rank, steps) in ranks {
        for s in steps {
            let d = by_step.entry(s.step).or_default().entry(rank).or_insert(i64::MIN);
            *d = (*d).max(s.end - s.ts);
        }
    }
    let mut spreads = Vec::new();
    for (step, durations) in by_step {
        let mut durations: Vec<(i64, i64)> = durations.into_iter().collect();
        if durations.len() < 2 {
            continue;
        }
        durations.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let (slowest_rank, slowest_us) = durations[0];
        spreads.push(StepSpread {
            step,
            ranks: durations.len() as u64,
            slowest_rank,
            slowest_us,
            fastest_us: durations.iter().map(|d| d.1).min().unwrap_or(0),
            mean_us: durations.iter().map(|d| d.1 as f64).sum::<f64>() / durations.len() as f64,
        });
    }
    let per_rank = ranks
        .iter()
        .map(|r| RankSteps {
            rank: r.0,
            steps: r.1.len() as u64,
            mean_step_us: (!r.1.is_empty())
                .then(|| r.1.iter().map(|s| (s.end - s.ts) as f64).sum::<f64>() / r.1.len() as f64),
            slowest_in: spreads.iter().filter(|s| s.slowest_rank == r.0).count() as u64,
        })
        .collect();
    (spreads, per_rank)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hta::test_trace::{host, space};
    use crate::hta::trace::RankTrace;

    /// ```text
    /// µs      0        100      200      300
    /// rank 0  |-step 1 (100)-|--step 2 (150)----|
    /// rank 1  |-step 1 (120)---|-step 2 (90)-|
    /// ```
    #[test]
    fn the_longest_step_names_the_straggler() {
        let r0 = RankTrace::from_space(
            &space(&[host("ProfilerStep#1", 0, 100, None), host("ProfilerStep#2", 100, 250, None)], Some(0)),
            "a",
            9,
        );
        let r1 = RankTrace::from_space(
            &space(&[host("ProfilerStep#1", 0, 120, None), host("ProfilerStep#2", 120, 210, None)], Some(1)),
            "b",
            9,
        );
        assert_eq!((r0.rank, r1.rank), (0, 1), "ranks come from distributedInfo");
        let (spreads, per_rank) = stragglers(&[r0, r1]);
        let got: Vec<(i64, i64, i64, i64)> =
            spreads.iter().map(|s| (s.step, s.slowest_rank, s.slowest_us, s.fastest_us)).collect();
        assert_eq!(got, vec![(1, 1, 120, 100), (2, 0, 150, 90)]);
        assert_eq!(per_rank.iter().map(|r| r.slowest_in).collect::<Vec<_>>(), vec![1, 1]);
        assert_eq!(per_rank[0].mean_step_us, Some(125.0));
    }
}
