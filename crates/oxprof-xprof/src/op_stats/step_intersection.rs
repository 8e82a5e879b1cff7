//! Which steps all hosts have in common (port of `xprof/utils/step_intersection.{h,cc}`):
//! every host's step sequence is aligned against the "chief" host — the one whose steps
//! cover the shortest time — by the index offset that maximises the time the aligned
//! steps overlap; the intersection is the chief's index range covered by all hosts.

use super::types::{PerCoreStepInfo, StepDatabaseResult};
use std::collections::BTreeMap;

/// A span as `(begin_ps, end_ps)`; empty when `end <= begin`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Span {
    begin_ps: u64,
    end_ps: u64,
}

impl Span {
    fn duration_ps(&self) -> u64 {
        self.end_ps.wrapping_sub(self.begin_ps)
    }
}

/// How one host's steps line up with the chief's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepsAlignment {
    /// First aligned index in this host's sequence.
    pub begin_subordinate_idx: u32,
    /// First aligned index in the chief's sequence.
    pub begin_chief_idx: u32,
    /// Number of aligned steps.
    pub num_steps: u32,
}

/// `StepTimespan`: the span of a step over all its cores (empty if the cores disagree so
/// much that the union is empty).
fn step_timespan(step: &PerCoreStepInfo) -> Span {
    let mut cores = step.step_info_per_core.values();
    match (cores.next(), step.step_info_per_core.len()) {
        (None, _) => Span::default(),
        (Some(only), 1) => Span { begin_ps: only.begin_ps, end_ps: only.begin_ps.wrapping_add(only.duration_ps) },
        _ => {
            let (mut min_ps, mut max_ps) = (u64::MAX, 0u64);
            for info in step.step_info_per_core.values() {
                min_ps = min_ps.min(info.begin_ps);
                max_ps = max_ps.max(info.begin_ps.wrapping_add(info.duration_ps));
            }
            if min_ps < max_ps { Span { begin_ps: min_ps, end_ps: max_ps } } else { Span::default() }
        }
    }
}

/// `FindStepsAlignment`: for every index offset `k = chief_idx - subordinate_idx`, the
/// total overlap of the step pairs a merge-like walk over both sequences meets at that
/// offset; the best offset wins (ties: the first of k = 0, 1, …, then k = -1, -2, …).
///
/// ```text
///   chief        |--0--|--1--|--2--|
///   subordinate        |--0--|--1--|--2--|      best k = 1: sub 0 ↔ chief 1
/// ```
fn find_steps_alignment(subordinate: &[Span], chief: &[Span]) -> StepsAlignment {
    let (n, m) = (subordinate.len(), chief.len());
    if n == 0 || m == 0 {
        return StepsAlignment::default();
    }
    // similarity[k + n - 1] for k in [-(n-1), m-1].
    let mut similarity = vec![0u64; n + m - 1];
    let (mut si, mut ci) = (0usize, 0usize);
    while si < n && ci < m {
        let (s, c) = (subordinate[si], chief[ci]);
        if s.duration_ps() == 0 {
            si += 1;
            continue;
        }
        if c.duration_ps() == 0 {
            ci += 1;
            continue;
        }
        let start = s.begin_ps.max(c.begin_ps);
        let end = s.end_ps.min(c.end_ps);
        let overlap = end.saturating_sub(start);
        let slot = &mut similarity[ci + n - 1 - si];
        *slot = slot.wrapping_add(overlap);
        match s.end_ps.cmp(&c.end_ps) {
            std::cmp::Ordering::Less => si += 1,
            std::cmp::Ordering::Greater => ci += 1,
            std::cmp::Ordering::Equal => {
                si += 1;
                ci += 1;
            }
        }
    }
    let mut best: Option<(u64, i64)> = None;
    let candidates = (0..m as i64).chain((1..n as i64).map(|k| -k));
    for k in candidates {
        let score = similarity[(k + n as i64 - 1) as usize];
        if best.is_none_or(|(max, _)| score > max) {
            best = Some((score, k));
        }
    }
    let k = best.map_or(0, |(_, k)| k);
    let begin_subordinate_idx = if k >= 0 { 0 } else { (-k) as u32 };
    let begin_chief_idx = if k >= 0 { k as u32 } else { 0 };
    StepsAlignment {
        begin_subordinate_idx,
        begin_chief_idx,
        num_steps: (n as u32 - begin_subordinate_idx).min(m as u32 - begin_chief_idx),
    }
}

/// The steps common to all hosts, as indexes into the chief host's step sequence.
#[derive(Debug, Clone, Default)]
pub struct StepIntersection {
    perhost_alignment: BTreeMap<u32, StepsAlignment>,
    chief_host_id: u32,
    steps_dropped: u32,
    empty_intersect: bool,
    begin_chief_idx: u32,
    end_chief_idx: u32,
}

impl StepIntersection {
    /// Aligns the hosts' step databases (by host id) and keeps at most `max_steps` steps.
    ///
    /// The chief is the host whose non-empty steps span the least time (the first such in
    /// host-id order; XProf iterates a hash map, so with exact ties its pick may differ).
    pub fn new(max_steps: u32, perhost_stepdb: &BTreeMap<u32, &StepDatabaseResult>) -> StepIntersection {
        let mut out = StepIntersection { chief_host_id: u32::MAX, ..Default::default() };
        if perhost_stepdb.is_empty() {
            return out;
        }
        let mut hosts: Vec<(u32, Vec<Span>)> = Vec::with_capacity(perhost_stepdb.len());
        let mut chief: Option<usize> = None;
        let mut min_duration_ps = u64::MAX;
        for (&host_id, step_db) in perhost_stepdb {
            let spans: Vec<Span> = step_db.step_sequence.iter().map(step_timespan).collect();
            let (mut min_ps, mut max_ps) = (u64::MAX, 0u64);
            for span in spans.iter().filter(|s| s.duration_ps() > 0) {
                min_ps = min_ps.min(span.begin_ps);
                max_ps = max_ps.max(span.end_ps);
            }
            let total_ps = max_ps.saturating_sub(min_ps);
            if chief.is_none() || total_ps < min_duration_ps {
                min_duration_ps = total_ps;
                chief = Some(hosts.len());
            }
            hosts.push((host_id, spans));
        }
        let Some((chief_host_id, chief_spans)) = chief.and_then(|i| hosts.get(i)) else { return out };
        out.chief_host_id = *chief_host_id;
        if chief_spans.is_empty() {
            return out;
        }
        let (mut max_begin, mut min_end) = (0u32, u32::MAX);
        for (host_id, spans) in &hosts {
            let alignment = if *host_id == out.chief_host_id {
                StepsAlignment { begin_subordinate_idx: 0, begin_chief_idx: 0, num_steps: spans.len() as u32 }
            } else {
                find_steps_alignment(spans, chief_spans)
            };
            out.perhost_alignment.insert(*host_id, alignment);
            max_begin = max_begin.max(alignment.begin_chief_idx);
            min_end = min_end.min(alignment.begin_chief_idx.wrapping_add(alignment.num_steps));
        }
        if max_begin > min_end {
            out.empty_intersect = true;
            return out;
        }
        out.begin_chief_idx = max_begin;
        let num_steps = min_end - max_begin;
        if num_steps > max_steps {
            out.steps_dropped = num_steps - max_steps;
            out.end_chief_idx = max_begin + max_steps;
        } else {
            out.end_chief_idx = min_end;
        }
        out
    }

    /// Number of steps in the intersection.
    pub fn num_steps(&self) -> u32 {
        self.end_chief_idx - self.begin_chief_idx
    }

    /// With no steps: whether some host had steps but they did not intersect.
    pub fn empty_intersect(&self) -> bool {
        self.empty_intersect
    }

    /// Step numbers of the result: 0, 1, …
    pub fn dst_step_numbers(&self) -> Vec<u32> {
        (0..self.num_steps()).collect()
    }

    /// Index in `host_id`'s sequence of the first step of the intersection.
    pub fn first_step_index(&self, host_id: u32) -> u32 {
        match self.perhost_alignment.get(&host_id) {
            Some(a) => a.begin_subordinate_idx.wrapping_add(self.begin_chief_idx.wrapping_sub(a.begin_chief_idx)),
            None => 0,
        }
    }

    /// Steps dropped by the `max_steps` limit.
    pub fn steps_dropped(&self) -> u32 {
        self.steps_dropped
    }

    /// The chief host (`u32::MAX` when there are no hosts).
    pub fn chief_host_id(&self) -> u32 {
        self.chief_host_id
    }

    /// The alignment of one host, if it took part.
    pub fn alignment(&self, host_id: u32) -> Option<StepsAlignment> {
        self.perhost_alignment.get(&host_id).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op_stats::types::StepInfoResult;

    fn db(steps: &[(u64, u64)]) -> StepDatabaseResult {
        let step_sequence = steps
            .iter()
            .enumerate()
            .map(|(i, &(begin_ps, end_ps))| PerCoreStepInfo {
                step_num: i as u32,
                step_info_per_core: [(
                    1,
                    StepInfoResult { begin_ps, duration_ps: end_ps - begin_ps, ..Default::default() },
                )]
                .into(),
                ..Default::default()
            })
            .collect();
        StepDatabaseResult { step_sequence, ..Default::default() }
    }

    // host 0  |0-10|10-20|20-30|30-40|
    // host 1        |12-22|22-32|32-42|42-52|   (spans less time? no: same 30 → host 0 chief… )
    #[test]
    fn aligns_shifted_hosts() {
        let a = db(&[(0, 10), (10, 20), (20, 30), (30, 40)]);
        let b = db(&[(12, 22), (22, 32), (32, 42)]);
        let hosts: BTreeMap<u32, &StepDatabaseResult> = [(0, &a), (1, &b)].into();
        let x = StepIntersection::new(u32::MAX, &hosts);
        // b spans 30 ps, a 40 ps: b is the chief.
        assert_eq!(x.chief_host_id(), 1);
        // a's step 1 (10-20) overlaps b's step 0 (12-22) most: k = -1.
        assert_eq!(x.alignment(0), Some(StepsAlignment { begin_subordinate_idx: 1, begin_chief_idx: 0, num_steps: 3 }));
        assert_eq!(x.num_steps(), 3);
        assert_eq!(x.first_step_index(0), 1);
        assert_eq!(x.first_step_index(1), 0);
        assert_eq!(x.dst_step_numbers(), [0, 1, 2]);
        let limited = StepIntersection::new(2, &hosts);
        assert_eq!((limited.num_steps(), limited.steps_dropped()), (2, 1));
    }

    #[test]
    fn empty_inputs() {
        let none = StepIntersection::new(u32::MAX, &BTreeMap::new());
        assert_eq!((none.num_steps(), none.empty_intersect(), none.chief_host_id()), (0, false, u32::MAX));
        let a = db(&[(0, 10)]);
        let empty = db(&[]);
        let hosts: BTreeMap<u32, &StepDatabaseResult> = [(0, &a), (1, &empty)].into();
        let x = StepIntersection::new(u32::MAX, &hosts);
        // The host without steps spans 0 ps and becomes the chief: nothing to intersect.
        assert_eq!((x.num_steps(), x.empty_intersect(), x.chief_host_id()), (0, false, 1));
    }
}
