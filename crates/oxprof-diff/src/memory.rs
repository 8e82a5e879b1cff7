//! Memory: each allocator's peak within the profile, its lifetime peak and its
//! fragmentation at the peak (`memory_profile`'s summary), compared allocator by allocator.
//!
//! Allocators are named by their memory id (an allocator name such as
//! `bfc_cpu_allocator_for_gpu`, or a device ordinal); when a run has allocator events on
//! more than one host, by `host/id`. An allocator only one run has is compared with 0.
//! Noise: a peak's change is beyond noise when it is at least
//! [`DiffOptions::memory_min_bytes`] (1 MiB) and [`DiffOptions::memory_min_relative`] (1 %)
//! of A's; a fragmentation change when it is at least
//! [`DiffOptions::fragmentation_min_delta`] (0.01).

use crate::{Change, DiffOptions};
use oxprof_xprof::tools::memory_profile::{MemoryProfile, ProfileSummary};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Which runs have an allocator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    /// Both.
    Both,
    /// A only.
    OnlyA,
    /// B only.
    OnlyB,
}

/// One allocator compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AllocatorDiff {
    /// Memory id (`host/id` when a run has several hosts with allocator events).
    pub allocator: String,
    /// Which runs have it.
    pub presence: Presence,
    /// Peak bytes in use within the profile (stack + heap at the peak).
    pub peak_bytes: Change,
    /// The allocator's lifetime peak, as it reported it.
    pub lifetime_peak_bytes: Change,
    /// Fragmentation at the peak (0–1), as the allocator reported it.
    pub fragmentation: Change,
}

/// The memory comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryDiff {
    /// Each allocator, in name order.
    pub allocators: Vec<AllocatorDiff>,
}

fn summaries(profiles: &BTreeMap<String, MemoryProfile>) -> BTreeMap<String, ProfileSummary> {
    let several_hosts = profiles.values().filter(|p| !p.allocators.is_empty()).count() > 1;
    let mut out = BTreeMap::new();
    for (host, profile) in profiles {
        for (id, allocator) in &profile.allocators {
            let name = if several_hosts { format!("{host}/{id}") } else { id.clone() };
            out.insert(name, allocator.summary);
        }
    }
    out
}

/// Compares the allocators of two runs; `None` when neither has allocator events.
pub fn compare(
    a: &BTreeMap<String, MemoryProfile>,
    b: &BTreeMap<String, MemoryProfile>,
    options: &DiffOptions,
) -> Option<MemoryDiff> {
    let (sa, sb) = (summaries(a), summaries(b));
    let names: BTreeSet<&String> = sa.keys().chain(sb.keys()).collect();
    if names.is_empty() {
        return None;
    }
    let bytes_verdict = |c: Change| {
        let beyond = c.delta.abs() >= options.memory_min_bytes && c.relative_at_least(options.memory_min_relative);
        c.with_verdict(Some(beyond))
    };
    let allocators = names
        .into_iter()
        .map(|name| {
            let (x, y) = (sa.get(name), sb.get(name));
            let presence = match (x, y) {
                (Some(_), Some(_)) => Presence::Both,
                (Some(_), None) => Presence::OnlyA,
                _ => Presence::OnlyB,
            };
            let zero = ProfileSummary::default();
            let (x, y) = (x.unwrap_or(&zero), y.unwrap_or(&zero));
            let fragmentation = Change::new(finite(x.peak_stats.fragmentation), finite(y.peak_stats.fragmentation));
            AllocatorDiff {
                allocator: name.clone(),
                presence,
                peak_bytes: bytes_verdict(Change::new(
                    x.peak_stats.peak_bytes_in_use as f64,
                    y.peak_stats.peak_bytes_in_use as f64,
                )),
                lifetime_peak_bytes: bytes_verdict(Change::new(
                    x.peak_bytes_usage_lifetime as f64,
                    y.peak_bytes_usage_lifetime as f64,
                )),
                fragmentation: fragmentation
                    .with_verdict(Some(fragmentation.delta.abs() >= options.fragmentation_min_delta)),
            }
        })
        .collect();
    Some(MemoryDiff { allocators })
}

/// NaN (an allocator that reported none) as 0.
fn finite(v: f64) -> f64 {
    if v.is_finite() { v } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_xprof::tools::memory_profile::{AggregationStats, PerAllocatorProfile};

    fn run(host: &str, allocators: &[(&str, i64, f64)]) -> BTreeMap<String, MemoryProfile> {
        let mut profile = MemoryProfile::default();
        for &(id, peak, fragmentation) in allocators {
            let summary = ProfileSummary {
                peak_bytes_usage_lifetime: peak,
                peak_stats: AggregationStats { peak_bytes_in_use: peak, fragmentation, ..AggregationStats::default() },
                ..ProfileSummary::default()
            };
            profile
                .allocators
                .insert(id.to_string(), PerAllocatorProfile { summary, ..PerAllocatorProfile::default() });
        }
        BTreeMap::from([(host.to_string(), profile)])
    }

    #[test]
    fn peaks_compare_per_allocator() {
        let mib = 1 << 20;
        let a = run("vm", &[("gpu_bfc", 100 * mib, 0.10), ("cpu", 10 * mib, 0.0)]);
        let b = run("other-vm", &[("gpu_bfc", 400 * mib, 0.105), ("pinned", 2 * mib, 0.0)]);
        let diff = compare(&a, &b, &DiffOptions::default()).unwrap();
        let names: Vec<_> = diff.allocators.iter().map(|x| (x.allocator.as_str(), x.presence)).collect();
        assert_eq!(names, [("cpu", Presence::OnlyA), ("gpu_bfc", Presence::Both), ("pinned", Presence::OnlyB)]);
        let gpu = &diff.allocators[1];
        assert_eq!((gpu.peak_bytes.delta, gpu.peak_bytes.beyond_noise), (300.0 * mib as f64, Some(true)));
        assert_eq!(gpu.fragmentation.beyond_noise, Some(false));
        assert!(compare(&BTreeMap::new(), &BTreeMap::new(), &DiffOptions::default()).is_none());
    }

    #[test]
    fn small_changes_are_noise() {
        let a = run("vm", &[("cpu", 1000 << 20, 0.0)]);
        let b = run("vm", &[("cpu", (1000 << 20) + (512 << 10), 0.0)]);
        let diff = compare(&a, &b, &DiffOptions::default()).unwrap();
        assert_eq!(diff.allocators[0].peak_bytes.beyond_noise, Some(false));
    }
}
