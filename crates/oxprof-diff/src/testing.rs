//! Hand-built reports for the unit tests: an overview with given per-step times, framework
//! op and kernel tables, allocator summaries.

use crate::{RunReports, Source};
use oxprof_xprof::tools::framework_op_stats::{FrameworkOpStats, TfStatsRecord};
use oxprof_xprof::tools::input_pipeline::{PerGenericStepDetails, StepDetails};
use oxprof_xprof::tools::kernel_stats::{KernelStats, KernelStatsRow};
use oxprof_xprof::tools::memory_profile::{AggregationStats, MemoryProfile, PerAllocatorProfile, ProfileSummary};
use oxprof_xprof::tools::op_record::{ExecutionTimes, RooflineMetrics};
use oxprof_xprof::tools::overview_page::OverviewPage;
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
        ..RunReports::default()
    }
}

/// A PyTorch run: `ProfilerStep#i` takes `kernel_ms[i]` of kernel time plus 1 ms of
/// DataLoader, and `operators` are (name, calls, host self µs = host total, device self µs
/// = device total).
pub fn pytorch_run(kernel_ms: &[f64], operators: &[(&str, u64, f64, f64)]) -> RunReports {
    use oxprof_pytorch::operators::{OpRow, PytorchOpStats};
    use oxprof_pytorch::overview::{Breakdown, PytorchOverview, Step};
    let mut start = 0.0;
    let steps: Vec<Step> = kernel_ms
        .iter()
        .enumerate()
        .map(|(i, &kernel)| {
            let breakdown = Breakdown {
                kernel: kernel * 1e3,
                data_loader: 1e3,
                total: (kernel + 1.0) * 1e3,
                ..Breakdown::default()
            };
            let step = Step { name: i.to_string(), start_us: start, end_us: start + breakdown.total, breakdown };
            start = step.end_us;
            step
        })
        .collect();
    let n = steps.len().max(1) as f64;
    let mut average = Breakdown::default();
    for s in &steps {
        average.kernel += s.breakdown.kernel / n;
        average.data_loader += s.breakdown.data_loader / n;
        average.total += s.breakdown.total / n;
    }
    let overview = PytorchOverview {
        has_profiler_steps: !steps.is_empty(),
        tail_steps_removed: 0,
        steps,
        average,
        gpus: Vec::new(),
        tc_eligible_ops_kernel_ratio: 0.0,
        tc_used_ratio: None,
        recommendations: Vec::new(),
        notes: Vec::new(),
    };
    let by_name = operators
        .iter()
        .map(|&(name, calls, host, device)| OpRow {
            name: name.into(),
            input_shape: None,
            call_stack: None,
            calls,
            host_total_us: host,
            host_self_us: host,
            device_total_us: device,
            device_self_us: device,
            tc_eligible: false,
            tc_self_us: 0.0,
            tc_total_us: 0.0,
        })
        .collect();
    let ops = PytorchOpStats { by_name, by_name_input: Vec::new(), by_name_stack: Vec::new(), notes: Vec::new() };
    RunReports {
        // What XProf's tools make of a PyTorch trace: no steps; its framework ops the
        // collectives only.
        overview_page: Some(overview_of_no_steps()),
        framework_op_stats: Some(framework_ops(&[("nccl", "all_reduce", 1, 5.0)])),
        pytorch_overview: Some(overview),
        pytorch_op_stats: Some(ops),
        ..RunReports::default()
    }
}

fn overview_of_no_steps() -> OverviewPage {
    overview(&[], &[])
}
