//! Hand-built reports for the unit tests: an overview with given per-step times, framework
//! op and kernel tables, allocator summaries.

use crate::{RunReports, Source};
use oxprof_analysis::tools::framework_op_stats::{FrameworkOpStats, TfStatsRecord};
use oxprof_analysis::tools::input_pipeline::{PerGenericStepDetails, StepDetails};
use oxprof_analysis::tools::kernel_stats::{KernelStats, KernelStatsRow};
use oxprof_analysis::tools::memory_profile::{AggregationStats, MemoryProfile, PerAllocatorProfile, ProfileSummary};
use oxprof_analysis::tools::op_record::{ExecutionTimes, RooflineMetrics};
use oxprof_analysis::tools::overview_page::OverviewPage;
use std::collections::BTreeMap;

/// An overview of CPU/GPU steps: step `i` takes `step_times[i]` ms, `input_ms[i]` of them
/// waiting for input and the rest in device compute.
pub fn overview(step_times: &[f64], input_ms: &[f64]) -> OverviewPage {
    let steps = step_times
        .iter()
        .zip(input_ms)
        .enumerate()
        .map(|(i, (&t, &input))| PerGenericStepDetails {
            step_number: i as i32,
            step_time_ms: t,
            host_wait_input_ms: input,
            device_compute_ms: t - input,
            ..PerGenericStepDetails::default()
        })
        .collect();
    let mut page = OverviewPage::default();
    page.input_analysis.step_details = StepDetails::Generic(steps);
    let (input, total): (f64, f64) = (input_ms.iter().sum(), step_times.iter().sum());
    page.input_analysis.input_percent = if total > 0.0 { 100.0 * input / total } else { 0.0 };
    page
}

/// Host framework ops: (name, type, occurrences, self time µs = time µs).
pub fn framework_ops(rows: &[(&str, &str, u32, f64)]) -> FrameworkOpStats {
    let with_idle = rows
        .iter()
        .enumerate()
        .map(|(i, &(name, op_type, occurrences, us))| TfStatsRecord {
            rank: i as u64 + 1,
            on_device: false,
            op_type: op_type.into(),
            op_name: name.into(),
            is_eager: false,
            times: ExecutionTimes {
                occurrences,
                total_time_in_us: us,
                avg_time_in_us: us / f64::from(occurrences.max(1)),
                total_self_time_in_us: us,
                avg_self_time_in_us: us / f64::from(occurrences.max(1)),
            },
            device_total_self_time_as_fraction: 0.0,
            device_cumulative_total_self_time_as_fraction: 0.0,
            host_total_self_time_as_fraction: 0.0,
            host_cumulative_total_self_time_as_fraction: 0.0,
            roofline: RooflineMetrics::default(),
            gpu_tensorcore_utilization: 0.0,
        })
        .collect();
    FrameworkOpStats { with_idle, without_idle: Vec::new(), device_type: "CPU".into() }
}

/// Kernels: (name, launching op, occurrences, total µs).
pub fn kernels(rows: &[(&str, &str, u32, f64)]) -> KernelStats {
    let kernels = rows
        .iter()
        .map(|&(kernel, op, occurrences, total)| KernelStatsRow {
            kernel_name: kernel.into(),
            op_name: op.into(),
            occurrences,
            total_duration_us: total,
            ..KernelStatsRow::default()
        })
        .collect();
    KernelStats { kernels }
}

/// One host's allocators: (memory id, peak bytes, fragmentation).
pub fn memory(host: &str, allocators: &[(&str, i64, f64)]) -> BTreeMap<String, MemoryProfile> {
    let mut profile = MemoryProfile::default();
    for &(id, peak, fragmentation) in allocators {
        let summary = ProfileSummary {
            peak_bytes_usage_lifetime: peak,
            peak_stats: AggregationStats { peak_bytes_in_use: peak, fragmentation, ..AggregationStats::default() },
            ..ProfileSummary::default()
        };
        profile.allocators.insert(id.to_string(), PerAllocatorProfile { summary, ..PerAllocatorProfile::default() });
    }
    BTreeMap::from([(host.to_string(), profile)])
}

/// A source named `name` (one host, `vm`).
pub fn source(name: &str) -> Source {
    Source { path: name.into(), run: "r".into(), host: "ALL_HOSTS".into(), hosts: vec!["vm".into()], summary: None }
}

/// A whole run: steps of `step_ms` (1 ms of input each), framework ops, kernels and one
/// allocator, over `steps` steps.
pub fn run(
    step_ms: &[f64],
    ops: &[(&str, &str, u32, f64)],
    kernel_rows: &[(&str, &str, u32, f64)],
    peak: i64,
) -> RunReports {
    RunReports {
        overview_page: Some(overview(step_ms, &vec![1.0; step_ms.len()])),
        framework_op_stats: Some(framework_ops(ops)),
        kernel_stats: Some(kernels(kernel_rows)),
        hlo_stats: None,
        memory_profile: memory("vm", &[("gpu_bfc", peak, 0.1)]),
        op_table_steps: Some(step_ms.len() as u64),
    }
}
