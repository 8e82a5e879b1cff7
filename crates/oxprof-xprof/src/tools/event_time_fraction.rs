//! XProf 2.24.2's event-time-fraction analysis (`ConvertXSpaceToEventTimeFractionAnalyzerResults`,
//! `xprof/convert/xspace_to_event_time_fraction_analyzer.cc`) and the smart-suggestion rule
//! that reads it, `BarrierCoresRule` (`xprof/convert/smart_suggestion/barrier_cores_rule.h`).
//!
//! Per host: after XProf's step grouping, every event whose name contains the target (e.g.
//! `barrier-cores`) adds its `device_duration_ps` as a fraction of its step's time to that
//! (step, plane); the first and last steps are dropped as incomplete (of two steps, one
//! under 1% of the other). Fractions are kept per plane name ("chip") and per host (the
//! mean over the planes of each step), as `float`s as XProf's proto holds them. Hosts are
//! combined by appending their fractions under the same plane names.
//!
//! ```text
//! Steps    |step 10.........|step 11...............|step 12.............|step 13.....|
//! XLA Ops          |barrier|          |barrier-cores|         |barrier|      |barrier|
//!          (dropped: first)  210 / 1840 = 11.4%      270 / 1880 = 14.4%  (dropped: last)
//! ```

use crate::op_stats::step_events::{NoTpuOpMetrics, device_plane_step_events};
use crate::tools::smart_suggestion::{BARRIER_CORES, SmartSuggestion, SmartSuggestionReport};
use oxprof_grouping::{EventGroups, every_plane_grouped, group_events};
use oxprof_model::schema::StatType;
use oxprof_model::{StatValue, XSpace};
use std::collections::BTreeMap;

/// `kSpecialOpBoundThresholdInPercent`: the rule fires at this average share of step time.
pub const SPECIAL_OP_BOUND_THRESHOLD_PERCENT: f64 = 10.0;

/// A dummy device duration XProf ignores on `barrier-cores` events (1.25 ns), besides 0.
const DUMMY_BARRIER_DURATION_PS: u64 = 1250;

/// `EventTimeFractionAnalyzerResult` of one target event name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventTimeFractions {
    /// Per plane name: the fraction of each kept step (step order), hosts appended.
    pub chips: BTreeMap<String, Vec<f32>>,
    /// Per host: the mean fraction over its planes of each kept step.
    pub hosts: BTreeMap<String, Vec<f32>>,
}

impl EventTimeFractions {
    /// `AccumulateEventTimeFractionAnalyzerResults`: appends another host's fractions.
    pub fn append(&mut self, other: EventTimeFractions) {
        for (plane, fractions) in other.chips {
            self.chips.entry(plane).or_default().extend(fractions);
        }
        for (host, fractions) in other.hosts {
            self.hosts.entry(host).or_default().extend(fractions);
        }
    }

    /// `SignalProvider::GetAvgEventTimePercent`: the mean of every chip fraction, summed as
    /// a `float` (`tsl::Stat<float>`), in percent; 0 without any.
    pub fn average_percent(&self) -> f64 {
        let (mut sum, mut count) = (0f32, 0u64);
        for f in self.chips.values().flatten() {
            sum += *f;
            count += 1;
        }
        if count == 0 { 0.0 } else { f64::from(sum) / count as f64 * 100.0 }
    }
}

/// The analysis of one host's XSpace for one target name (`hostname`: the space's first
/// hostname, else the session's name for it).
pub fn host_event_time_fractions(space: &XSpace, hostname: &str, target: &str) -> EventTimeFractions {
    let mut out = EventTimeFractions::default();
    let planes: Vec<usize> = space
        .planes
        .iter()
        .enumerate()
        .filter(|(_, p)| p.event_metadata().iter().any(|m| p.str(m.name).contains(target)))
        .map(|(i, _)| i)
        .collect();
    if planes.is_empty() {
        // XProf still records the host, with no fractions.
        out.hosts.insert(hostname.to_string(), Vec::new());
        return out;
    }
    let groups: EventGroups = group_events(space);
    let pregrouped = every_plane_grouped(space);
    // step id -> plane name -> fraction (double sums of float portions, as XProf's map).
    let mut fractions: BTreeMap<i64, BTreeMap<&str, f64>> = BTreeMap::new();
    let mut step_durations: BTreeMap<i64, u64> = BTreeMap::new();
    for pi in planes {
        let plane = &space.planes[pi];
        let steps = device_plane_step_events(space, pi, &groups, pregrouped, &NoTpuOpMetrics);
        for (li, line) in plane.lines.iter().enumerate() {
            for e in line.events(plane) {
                if !e.name().contains(target) {
                    continue;
                }
                let Some(step_id) = groups.group_id(pi, li, e.index()) else { continue };
                let Some(step) = steps.get(&step_id) else { continue };
                let step_ps = step.step_time().duration_ps;
                if step_ps == 0 {
                    continue;
                }
                // `UintValue()`: a signed stat reads as 0.
                let Some(stat) = e.stat(StatType::DeviceDurationPs) else { continue };
                let duration_ps = match stat.value {
                    StatValue::Uint64(v) => v,
                    _ => 0,
                };
                if target == BARRIER_CORES && (duration_ps == 0 || duration_ps == DUMMY_BARRIER_DURATION_PS) {
                    continue;
                }
                let portion = (duration_ps as f64 / step_ps as f64) as f32;
                *fractions.entry(step_id).or_default().entry(plane.name.as_str()).or_default() += f64::from(portion);
                step_durations.insert(step_id, step_ps);
            }
        }
    }
    drop_incomplete_steps(&mut fractions, &step_durations);
    let mut host = Vec::new();
    for planes in fractions.values() {
        for (plane, fraction) in planes {
            out.chips.entry((*plane).to_string()).or_default().push(*fraction as f32);
        }
        if !planes.is_empty() {
            host.push((planes.values().sum::<f64>() / planes.len() as f64) as f32);
        }
    }
    out.hosts.insert(hostname.to_string(), host);
    out
}

/// XProf's heuristic against partial steps: of three or more steps drop the first and last;
/// of two, drop one shorter than 1% of the other.
fn drop_incomplete_steps<V>(fractions: &mut BTreeMap<i64, V>, durations: &BTreeMap<i64, u64>) {
    const RATIO: f64 = 0.01;
    if fractions.len() >= 3 {
        fractions.pop_first();
        fractions.pop_last();
    } else if fractions.len() == 2 {
        let ids: Vec<i64> = fractions.keys().copied().collect();
        let d = |id: i64| durations.get(&id).copied().unwrap_or(0) as f64;
        if d(ids[1]) < RATIO * d(ids[0]) {
            fractions.remove(&ids[1]);
        } else if d(ids[0]) < RATIO * d(ids[1]) {
            fractions.remove(&ids[0]);
        }
    }
}

/// A host whose average share of barrier time is an outlier (`HostStraggler`).
#[derive(Debug, Clone, PartialEq)]
pub struct HostStraggler {
    /// Host name.
    pub hostname: String,
    /// Its average fraction of step time, in percent.
    pub avg_fraction_percent: f64,
    /// Its modified z-score.
    pub modified_z_score: f64,
}

/// `tsl::StatWithPercentiles::percentile`: the element at `len * p / 100` (integer
/// division) of the sorted values.
fn percentile(values: &[f64], p: usize) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    if p >= 100 { sorted[sorted.len() - 1] } else { sorted[sorted.len() * p / 100] }
}

/// `SignalProvider::GetHostStragglers`: with three or more hosts, those whose average
/// percent lies more than 3.5 modified z-scores (0.6745 (x - median) / MAD, MAD at least
/// 0.1) from the median; hosts in name order (XProf's follow its proto map).
pub fn host_stragglers(fractions: &EventTimeFractions) -> Vec<HostStraggler> {
    const THRESHOLD: f64 = 3.5;
    const MAD_FLOOR: f64 = 0.1;
    const K: f64 = 0.6745;
    const EPSILON: f64 = 1e-6;
    let stats: Vec<(&str, f64)> = fractions
        .hosts
        .iter()
        .filter(|(_, f)| !f.is_empty())
        .map(|(h, f)| (h.as_str(), f64::from(f.iter().sum::<f32>()) / f.len() as f64 * 100.0))
        .collect();
    if stats.len() < 3 {
        return Vec::new();
    }
    let values: Vec<f64> = stats.iter().map(|&(_, v)| v).collect();
    let median = percentile(&values, 50);
    let deviations: Vec<f64> = values.iter().map(|v| (v - median).abs()).collect();
    let mad = percentile(&deviations, 50);
    stats
        .into_iter()
        .filter_map(|(host, percent)| {
            let score = if mad == 0.0 {
                if (percent - median).abs() > EPSILON { f64::INFINITY } else { 0.0 }
            } else {
                K * (percent - median) / mad.max(MAD_FLOOR)
            };
            (score.abs() > THRESHOLD).then(|| HostStraggler {
                hostname: host.to_string(),
                avg_fraction_percent: percent,
                modified_z_score: score,
            })
        })
        .collect()
}

/// XProf 2.24.2's open-source rule set (`RegisterAllRulesFor3P`: `BarrierCoresRule` alone)
/// over the combined fractions of `barrier-cores`.
pub fn barrier_cores_report(fractions: &EventTimeFractions) -> SmartSuggestionReport {
    let percent = fractions.average_percent();
    if percent < SPECIAL_OP_BOUND_THRESHOLD_PERCENT {
        return SmartSuggestionReport::default();
    }
    let stragglers = host_stragglers(fractions);
    let workload_balance = if stragglers.is_empty() {
        "<li><b>Investigate Workload Balance:</b> Check for stragglers, i.e., workers that are significantly slower \
         than others. Uneven workloads can cause faster workers to wait at the barrier.</li>"
            .to_string()
    } else {
        let list: String = stragglers
            .iter()
            .map(|s| {
                format!(
                    "<li>Host <b>{}</b> average barrier-cores time fraction: <b>{:.1}%</b></li>",
                    s.hostname, s.avg_fraction_percent
                )
            })
            .collect();
        format!(
            "<li><b>Investigate Stragglers:</b> The following hosts are identified as potential stragglers with \
             significantly different barrier time fraction compared to others:<ul>{list}</ul></li>"
        )
    };
    let text = format!(
        "<p>Your program is likely bottlenecked by <b>TPU {BARRIER_CORES}</b> operations: <b> an average of {percent:.1}% \
         of each step time</b> is spent on these operations. This often indicates a synchronization issue between \
         workers in a distributed training setup. Please consider the following optimizations:</p><ul>{workload_balance}\
         <li><b>Optimize Collective Operations:</b> Operations like AllReduce involve synchronization. Ensure they are \
         used efficiently. Check the size of data being communicated.</li><li><b>Check Network:</b> Network latency or \
         bandwidth can be a bottleneck for distributed operations, causing workers to wait longer at barriers.</li>\
         <li><b>Improve Data Input Pipeline:</b> Ensure your data loading and preprocessing pipeline is efficient and \
         balanced across all workers. A slow input pipeline on one worker can stall all others.</li></ul>"
    );
    SmartSuggestionReport {
        suggestions: vec![SmartSuggestion { rule_name: "BarrierCoresRule".into(), suggestion_text: text }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events on a TensorCore plane without a `Steps` line fall in no step: no fraction.
    #[test]
    fn barrier_cores_without_steps_take_no_step_time() {
        use oxprof_model::ModelBuilder;
        // /device:TPU:0  XLA Ops: |barrier-cores|   (no Steps line: in no step)
        let no_steps = ModelBuilder::new()
            .plane("/device:TPU:0", |p| {
                p.line(1, "XLA Ops", 0, |l| {
                    l.event("barrier-cores.1", 0, 10);
                });
            })
            .build()
            .unwrap();
        let f = host_event_time_fractions(&no_steps, "h", BARRIER_CORES);
        assert!(f.chips.is_empty());
        assert_eq!(f.hosts["h"], Vec::<f32>::new());
        assert_eq!(barrier_cores_report(&f), SmartSuggestionReport::default());
    }

    #[test]
    fn incomplete_steps_are_dropped() {
        let durations: BTreeMap<i64, u64> = [(1, 100), (2, 100), (3, 100)].into();
        let mut three: BTreeMap<i64, ()> = [(1, ()), (2, ()), (3, ())].into();
        drop_incomplete_steps(&mut three, &durations);
        assert_eq!(three.keys().copied().collect::<Vec<_>>(), [2]);
        let durations: BTreeMap<i64, u64> = [(1, 10_000), (2, 99)].into();
        let mut two: BTreeMap<i64, ()> = [(1, ()), (2, ())].into();
        drop_incomplete_steps(&mut two, &durations);
        assert_eq!(two.keys().copied().collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn the_rule_fires_at_ten_percent() {
        let mut f = EventTimeFractions::default();
        f.chips.insert("/device:TPU:0".into(), vec![0.05, 0.149]);
        f.hosts.insert("h".into(), vec![0.05, 0.149]);
        assert_eq!(barrier_cores_report(&f).suggestions.len(), 0, "9.95% is under the threshold");
        f.chips.insert("/device:TPU:1".into(), vec![0.2]);
        let report = barrier_cores_report(&f);
        assert!(report.suggestions[0].suggestion_text.contains("an average of 13.3% of each step time"));
        assert!(report.suggestions[0].suggestion_text.contains("Investigate Workload Balance"));
    }

    /// Three hosts at 10%, 11% and 30%: median 11, MAD 1, the third scores 12.8.
    #[test]
    fn a_host_far_from_the_median_is_a_straggler() {
        let mut f = EventTimeFractions::default();
        for (h, v) in [("a", 0.10f32), ("b", 0.11), ("c", 0.30)] {
            f.hosts.insert(h.into(), vec![v]);
            f.chips.entry("/device:TPU:0".into()).or_default().push(v);
        }
        let stragglers = host_stragglers(&f);
        assert_eq!(stragglers.len(), 1);
        assert_eq!(stragglers[0].hostname, "c");
        assert!((stragglers[0].modified_z_score - 0.6745 * 19.0).abs() < 1e-3);
        let text = &barrier_cores_report(&f).suggestions[0].suggestion_text;
        assert!(text.contains("<li>Host <b>c</b> average barrier-cores time fraction: <b>30.0%</b></li>"), "{text}");
        assert_eq!(percentile(&[3.0, 1.0, 2.0, 4.0], 50), 3.0);
    }
}
