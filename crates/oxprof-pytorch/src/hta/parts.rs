//! What the HTA tools derive from one rank alone, whatever the request asks: computed once
//! per loaded rank (the session keeps it beside the PyTorch parse), so a request of
//! `hta_distributed` or `hta_gpu_idle` only assembles the selected ranks' parts and the
//! steps across ranks, instead of copying, filtering and analysing every rank's rows.
//!
//! HTA's incomplete-step filter is the one thing the selection changes: it runs when the
//! selected ranks together name two or more `ProfilerStep#N`s ([`filter_applies`]). A
//! rank's own step names say which way it goes when it is alone or its run agrees
//! ([`RankParts::of_rank`]); a selection that needs the other way computes that rank's
//! parts again ([`RankParts::compute`]).

use super::comm_ops::{CommOpStats, comm_op_stats};
use super::gpu_idle::{RankLaunch, worst_launches};
use super::idle_time::{IdleTimeRow, idle_time_breakdown};
use super::launch_stats::{LaunchSummary, launches, summarize};
use super::overlap::{CommCompOverlap, comm_comp_overlap};
use super::queue_length::{QueueLengthSummary, queue_length_summary};
use super::temporal::{TemporalBreakdown, temporal_breakdown};
use super::trace::{
    FilterSummary, ProfilerStep, RankTrace, filter_events_in_place, filtered_events, profiler_step_number,
};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// One rank's share of both HTA tools (ranks in it are the trace's own, see
/// [`RankParts::relabelled`]). Serializable so that a rank's parts outlive the process
/// (the API's persistent cache keeps them: the HTA tools reopen without reading the trace).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankParts {
    /// Whether these are of the rank's events after HTA's step filter.
    pub filtered: bool,
    /// Events the filter dropped (0 when not filtered).
    pub dropped_events: u64,
    /// The rank's distinct `ProfilerStep#N` names (what decides whether the filter runs).
    pub step_names: Vec<String>,
    /// GPU events analysed.
    pub gpu_events: u64,
    /// HTA's temporal breakdown (`None` without GPU events).
    pub temporal: Option<TemporalBreakdown>,
    /// HTA's communication–computation overlap.
    pub overlap: CommCompOverlap,
    /// Communication kernels by name.
    pub comm_ops: Vec<CommOpStats>,
    /// Idle time per stream and cause.
    pub idle: Vec<IdleTimeRow>,
    /// Kernel launch statistics.
    pub launch_summary: LaunchSummary,
    /// The launches with the longest delay.
    pub worst_launches: Vec<RankLaunch>,
    /// Queue length per stream.
    pub queue_length: Vec<QueueLengthSummary>,
}

/// Distinct `ProfilerStep#N` names of a rank, in name order.
pub fn step_names(trace: &RankTrace) -> Vec<String> {
    let mut out: Vec<String> = trace.names.iter().filter(|n| profiler_step_number(n).is_some()).cloned().collect();
    out.sort();
    out.dedup();
    out
}

/// Whether HTA's step filter runs on a selection of ranks: two or more distinct step
/// names among them.
pub fn filter_applies<'a>(step_names: impl IntoIterator<Item = &'a [String]>) -> bool {
    distinct_step_names(step_names) >= 2
}

/// How many distinct step names the ranks have together.
pub fn distinct_step_names<'a>(step_names: impl IntoIterator<Item = &'a [String]>) -> usize {
    let mut all: Vec<&str> = step_names.into_iter().flatten().map(String::as_str).collect();
    all.sort_unstable();
    all.dedup();
    all.len()
}

impl RankParts {
    /// The parts of a rank as it would be analysed alone (filtered when it has two or more
    /// step names): what the session computes on load.
    pub fn of_rank(trace: &RankTrace) -> RankParts {
        let names = step_names(trace);
        let filtered = names.len() >= 2;
        RankParts::with_step_names(trace, filtered, names)
    }

    /// The parts of a rank with HTA's step filter applied or not.
    pub fn compute(trace: &RankTrace, filtered: bool) -> RankParts {
        RankParts::with_step_names(trace, filtered, step_names(trace))
    }

    /// [`RankParts::of_rank`] of rows the caller no longer needs: they are filtered in place
    /// (not copied) before the analyses run.
    pub fn of_own_rank(mut trace: RankTrace) -> RankParts {
        let names = step_names(&trace);
        let filtered = names.len() >= 2;
        let before = trace.events.len();
        let mut dropped_events = 0;
        if filtered && filter_events_in_place(&mut trace) {
            dropped_events = before.saturating_sub(trace.events.len()) as u64;
        }
        RankParts::analysed(&trace, filtered, dropped_events, names)
    }

    fn with_step_names(trace: &RankTrace, filtered: bool, step_names: Vec<String>) -> RankParts {
        match filtered.then(|| filtered_events(trace)).flatten() {
            Some(events) => {
                let dropped = trace.events.len().saturating_sub(events.len()) as u64;
                RankParts::analysed(&RankTrace { events, ..trace.without_events() }, filtered, dropped, step_names)
            }
            None => RankParts::analysed(trace, filtered, 0, step_names),
        }
    }

    /// The analyses of rows already filtered (or not) as `filtered` says.
    fn analysed(t: &RankTrace, filtered: bool, dropped_events: u64, step_names: Vec<String>) -> RankParts {
        let ((temporal, overlap), (comm_ops, (idle, (launch_part, queue_length)))) = rayon::join(
            || rayon::join(|| temporal_breakdown(t), || comm_comp_overlap(t)),
            || {
                rayon::join(
                    || comm_op_stats(t),
                    || {
                        rayon::join(
                            || idle_time_breakdown(t),
                            || {
                                rayon::join(
                                    || {
                                        let mut all = launches(t);
                                        let summary = summarize(t.rank, &all);
                                        (summary, worst_launches(t, &mut all))
                                    },
                                    || queue_length_summary(t),
                                )
                            },
                        )
                    },
                )
            },
        );
        let (launch_summary, worst_launches) = launch_part;
        RankParts {
            filtered,
            dropped_events,
            step_names,
            gpu_events: t.gpu_events().count() as u64,
            temporal,
            overlap,
            comm_ops,
            idle,
            launch_summary,
            worst_launches,
            queue_length,
        }
    }

    /// The parts with every row saying `rank` (the API numbers ranks a trace does not name).
    pub fn relabelled(&self, rank: i64) -> RankParts {
        let mut out = self.clone();
        if let Some(t) = &mut out.temporal {
            t.rank = rank;
        }
        out.overlap.rank = rank;
        out.comm_ops.iter_mut().for_each(|o| o.rank = rank);
        out.idle.iter_mut().for_each(|r| r.rank = rank);
        out.launch_summary.rank = rank;
        out.worst_launches.iter_mut().for_each(|l| l.rank = rank);
        out.queue_length.iter_mut().for_each(|q| q.rank = rank);
        out
    }

    /// Heap bytes, roughly (what a cache weighs it at).
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of::<RankParts>()
            + self.step_names.iter().map(|s| s.len() + 24).sum::<usize>()
            + self.comm_ops.iter().map(|o| std::mem::size_of::<CommOpStats>() + o.name.len()).sum::<usize>()
            + self.idle.len() * std::mem::size_of::<IdleTimeRow>()
            + self
                .worst_launches
                .iter()
                .map(|l| std::mem::size_of::<RankLaunch>() + l.launch_name.len() + l.kernel_name.len())
                .sum::<usize>()
            + self.queue_length.len() * std::mem::size_of::<QueueLengthSummary>()
    }
}

/// One selected rank as the reports assemble it: its number, host, steps and parts.
#[derive(Debug, Clone, Copy)]
pub struct RankView<'a> {
    /// The rank's number in the report.
    pub rank: i64,
    /// The host (file) it came from.
    pub host: &'a str,
    /// Its `ProfilerStep#N` events (before the filter).
    pub steps: &'a [ProfilerStep],
    /// Its parts, filtered as [`filter_applies`] says for the selection.
    pub parts: &'a RankParts,
}

/// Each rank's parts, filtered as the ranks together call for (in parallel over ranks).
pub(crate) fn parts_of(ranks: &[RankTrace]) -> Vec<RankParts> {
    let names: Vec<Vec<String>> = ranks.iter().map(step_names).collect();
    let applied = filter_applies(names.iter().map(Vec::as_slice));
    ranks.par_iter().zip(names).map(|(r, names)| RankParts::with_step_names(r, applied, names)).collect()
}

/// The views of ranks and their parts, numbered as the traces say.
pub(crate) fn views<'a>(ranks: &'a [RankTrace], parts: &'a [RankParts]) -> Vec<RankView<'a>> {
    ranks.iter().zip(parts).map(|(r, p)| RankView { rank: r.rank, host: &r.host, steps: &r.steps, parts: p }).collect()
}

/// The ranks by number, then host (stable).
pub(crate) fn sorted<'a>(ranks: &[RankView<'a>]) -> Vec<RankView<'a>> {
    let mut out = ranks.to_vec();
    out.sort_by(|a, b| a.rank.cmp(&b.rank).then_with(|| a.host.cmp(b.host)));
    out
}

/// What HTA's step filter did over the ranks (their parts say what each dropped).
pub(crate) fn filter_summary(ranks: &[RankView<'_>]) -> FilterSummary {
    let step_names = distinct_step_names(ranks.iter().map(|r| r.parts.step_names.as_slice()));
    let applied = step_names >= 2;
    debug_assert!(ranks.iter().all(|r| r.parts.filtered == applied), "parts filtered as the selection says");
    FilterSummary {
        applied,
        step_names,
        dropped_events: if applied { ranks.iter().map(|r| r.parts.dropped_events).sum() } else { 0 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hta::test_trace::{gpu, host, rank};

    /// The parts of rows handed over (filtered in place of the rows) equal those computed
    /// beside them, filtered or not.
    #[test]
    fn own_rows_give_the_same_parts_as_borrowed_ones() {
        let two_steps = rank(&[
            host("ProfilerStep#1", 0, 100, None),
            host("ProfilerStep#2", 100, 200, None),
            host("cudaLaunchKernel", 10, 12, Some(1)),
            host("cudaLaunchKernel", 150, 152, Some(2)),
            gpu("sgemm", 20, 60, 7, 1),
            gpu("sgemm", 160, 190, 7, 2),
        ]);
        let own = RankParts::of_own_rank(two_steps.clone());
        assert!(own.filtered && own.dropped_events > 0, "{own:?}");
        assert_eq!(own, RankParts::of_rank(&two_steps));
        let one_step = rank(&[
            host("ProfilerStep#1", 0, 100, None),
            host("cudaLaunchKernel", 10, 12, Some(1)),
            gpu("sgemm", 20, 60, 7, 1),
        ]);
        let own = RankParts::of_own_rank(one_step.clone());
        assert!(!own.filtered && own.dropped_events == 0, "{own:?}");
        assert_eq!(own, RankParts::of_rank(&one_step));
        assert_ne!(own, RankParts::compute(&one_step, true), "filtering the one-step rank drops its step");
    }
}
