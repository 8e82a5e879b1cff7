//! Steps and the input pipeline: the overview's per-step breakdown of each run, compared
//! category by category (mean over steps, Welch's t-test on the per-step values), and the
//! input-bound share of step time.
//!
//! The categories are those of XProf's step-time graph. CPU/GPU steps
//! (`PerGenericStepDetails`): device compute, device to device, device collectives, host
//! compute, kernel launch, input (host waiting for input + host-to-device), output,
//! compilation, all others. TPU steps (`PerTpuStepDetails`, one row per step over all
//! cores): TensorCore compute, SparseCoreV0 compute and input, TensorCore input, output and
//! idle, all-reduce, host transfer; their step time is the sum XProf's tooltip shows.
//! Both runs must be of one kind (two CPU/GPU or two TPU runs) for categories to compare;
//! step time always compares.
//!
//! PyTorch runs ([`compare_pytorch`]): the steps of torch-tb-profiler's overview, every
//! `ProfilerStep#N` (its selection: all of them, trailing steps without their device work
//! dropped; not XProf's first-and-last rule), split into its categories Kernel, Memcpy,
//! Memset, Communication, Runtime, DataLoader, CPU Exec and Other (each instant of a step
//! goes to the first active in that order). The input share is DataLoader's share of
//! step time. The same test and the same minimum of steps decide noise.

use crate::stats::{TwoSampleTest, welch};
use crate::{Change, DiffOptions};
use oxprof_pytorch::overview::{Breakdown, PytorchOverview};
use oxprof_xprof::tools::input_pipeline::{
    Bottleneck, InputPipelineAnalysis, PerGenericStepDetails, PerTpuStepDetails, StepDetails, tpu_step_time_ms,
};
use oxprof_xprof::tools::overview_page::OverviewPage;
use serde::{Deserialize, Serialize};

/// One compared quantity with per-step samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepMetric {
    /// Machine name (`step_time`, `device_compute`, `input_share`…): what gates name.
    pub name: String,
    /// What people read.
    pub label: String,
    /// Unit of the values: `ms` (means over steps) or `percent` (of step time).
    pub unit: String,
    /// A's and B's values and the verdict.
    pub change: Change,
    /// The test on per-step values (`None` when a side has fewer than two steps).
    pub test: Option<TwoSampleTest>,
}

/// The step comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepsDiff {
    /// Steps in A.
    pub steps_a: usize,
    /// Steps in B.
    pub steps_b: usize,
    /// Step time first, then each category of the breakdown (both runs of one kind).
    pub metrics: Vec<StepMetric>,
    /// Whose steps and categories: XProf's (absent from JSON) or torch-tb-profiler's.
    #[serde(default, skip_serializing_if = "StepSource::is_xprof")]
    pub source: StepSource,
}

/// Where a step comparison's steps come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepSource {
    /// XProf's step database and step-time breakdown (`overview_page`).
    #[default]
    Xprof,
    /// torch-tb-profiler's `ProfilerStep#N` steps and breakdown (`pytorch_overview`).
    Pytorch,
}

impl StepSource {
    /// Whether these are XProf's steps.
    pub fn is_xprof(&self) -> bool {
        *self == StepSource::Xprof
    }
}

/// The input pipeline comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InputDiff {
    /// `input_share`: XProf's percentage of step time waiting for input (the input
    /// pipeline analyzer's figure); the test compares the per-step percentages.
    pub share: StepMetric,
    /// A's classification (`host`: input-bound, `both`: partly, `device`: not), XProf's.
    pub classification_a: String,
    /// B's classification.
    pub classification_b: String,
    /// A's statement ("Your program is HIGHLY input-bound because …").
    pub statement_a: String,
    /// B's statement.
    pub statement_b: String,
}

/// The names of every step metric (CPU/GPU and TPU categories), as gates name them.
pub const STEP_METRICS: &[&str] = &[
    "step_time",
    "device_compute",
    "device_to_device",
    "device_collectives",
    "host_compute",
    "kernel_launch",
    "input",
    "output",
    "compilation",
    "all_others",
    "tc_compute",
    "scv0_compute",
    "scv0_infeed",
    "tc_infeed",
    "tc_outfeed",
    "tc_idle",
    "all_reduce",
    "host_transfer",
    "kernel",
    "memcpy",
    "memset",
    "communication",
    "runtime",
    "data_loader",
    "cpu_exec",
    "other",
];

/// Steps in an overview (XProf's selection).
pub fn step_count(overview: &OverviewPage) -> usize {
    overview.input_analysis.step_details.len()
}

/// Per-step samples of one run: (name, label, values) in reading order, step time first.
type Series = Vec<(&'static str, &'static str, Vec<f64>)>;

fn generic_series(steps: &[PerGenericStepDetails]) -> Series {
    let col = |f: fn(&PerGenericStepDetails) -> f64| steps.iter().map(f).collect::<Vec<f64>>();
    vec![
        ("step_time", "Step time", col(|d| d.step_time_ms)),
        ("device_compute", "Device compute", col(|d| d.device_compute_ms)),
        ("device_to_device", "Device to device", col(|d| d.device_to_device_ms)),
        ("device_collectives", "Device collective communication", col(|d| d.device_collectives_ms)),
        ("host_compute", "Host compute", col(|d| d.host_compute_ms)),
        ("kernel_launch", "Kernel launch", col(|d| d.host_prepare_ms)),
        ("input", "Input", col(|d| d.host_wait_input_ms + d.host_to_device_ms)),
        ("output", "Output", col(|d| d.output_ms)),
        ("compilation", "Compilation", col(|d| d.host_compile_ms)),
        ("all_others", "All others", col(|d| d.unknown_time_ms)),
    ]
}

fn tpu_series(steps: &[PerTpuStepDetails]) -> Series {
    let col = |f: fn(&PerTpuStepDetails) -> f64| steps.iter().map(f).collect::<Vec<f64>>();
    vec![
        ("step_time", "Step time", col(tpu_step_time_ms)),
        ("tc_compute", "TensorCore compute", col(|d| d.tc_compute_time_ms)),
        ("scv0_compute", "SparseCoreV0 compute", col(|d| d.scv0_compute_time_ms)),
        ("scv0_infeed", "SparseCoreV0 input", col(|d| d.scv0_infeed_time_ms)),
        ("tc_infeed", "TensorCore input", col(|d| d.tc_infeed_time_ms)),
        ("tc_outfeed", "TensorCore output", col(|d| d.tc_outfeed_time_ms)),
        ("tc_idle", "TensorCore idle", col(|d| d.tc_idle_time_ms)),
        ("all_reduce", "All-reduce", col(|d| d.all_reduce_compute_time_ms + d.all_reduce_sync_time_ms)),
        ("host_transfer", "Host transfer", col(|d| d.host_transfer_ms)),
    ]
}

/// torch-tb-profiler's categories, in its order, ms.
fn pytorch_series(steps: &[&Breakdown]) -> Series {
    let col = |f: fn(&Breakdown) -> f64| steps.iter().map(|b| f(b) / 1000.0).collect::<Vec<f64>>();
    vec![
        ("step_time", "Step time", col(|b| b.total)),
        ("kernel", "Kernel", col(|b| b.kernel)),
        ("memcpy", "Memcpy", col(|b| b.memcpy)),
        ("memset", "Memset", col(|b| b.memset)),
        ("communication", "Communication", col(|b| b.communication)),
        ("runtime", "Runtime", col(|b| b.runtime)),
        ("data_loader", "DataLoader", col(|b| b.data_loader)),
        ("cpu_exec", "CPU Exec", col(|b| b.cpu_exec)),
        ("other", "Other", col(|b| b.other)),
    ]
}

/// The steps of a PyTorch overview (none without `ProfilerStep#N`: its one step spanning
/// the trace is not a training step).
pub fn pytorch_step_count(overview: &PytorchOverview) -> usize {
    if overview.has_profiler_steps { overview.steps.len() } else { 0 }
}

/// The step and input comparisons of two PyTorch overviews; `(None, None)` when a side
/// has no `ProfilerStep#N`.
pub fn compare_pytorch(
    a: &PytorchOverview,
    b: &PytorchOverview,
    options: &DiffOptions,
) -> (Option<StepsDiff>, Option<InputDiff>) {
    if pytorch_step_count(a) == 0 || pytorch_step_count(b) == 0 {
        return (None, None);
    }
    let steps_a: Vec<&Breakdown> = a.steps.iter().map(|s| &s.breakdown).collect();
    let steps_b: Vec<&Breakdown> = b.steps.iter().map(|s| &s.breakdown).collect();
    let metrics = pytorch_series(&steps_a)
        .iter()
        .zip(&pytorch_series(&steps_b))
        .map(|((name, label, va), (_, _, vb))| metric(name, label, "ms", (va, vb), None, options))
        .collect();
    let steps = StepsDiff { steps_a: steps_a.len(), steps_b: steps_b.len(), metrics, source: StepSource::Pytorch };
    let percent = |part: f64, total: f64| if total > 0.0 { 100.0 * part / total } else { 0.0 };
    let shares = |s: &[&Breakdown]| s.iter().map(|b| percent(b.data_loader, b.total)).collect::<Vec<f64>>();
    let figures = (percent(a.average.data_loader, a.average.total), percent(b.average.data_loader, b.average.total));
    let share = metric(
        "input_share",
        "DataLoader share of step time",
        "percent",
        (&shares(&steps_a), &shares(&steps_b)),
        Some(figures),
        options,
    );
    // torch-tb-profiler makes no input-bound verdict of its own.
    let input = InputDiff {
        share,
        classification_a: String::new(),
        classification_b: String::new(),
        statement_a: String::new(),
        statement_b: String::new(),
    };
    (Some(steps), Some(input))
}

fn series(details: &StepDetails) -> Series {
    match details {
        StepDetails::Generic(steps) => generic_series(steps),
        StepDetails::Tpu(steps) => tpu_series(steps),
    }
}

/// Per-step input percentages: CPU/GPU as XProf's `input_percent_summary` (input time
/// over step time), TPU the average over cores of each step's infeed share.
fn input_percent_series(details: &StepDetails) -> Vec<f64> {
    match details {
        StepDetails::Generic(steps) => steps
            .iter()
            .map(|d| {
                let input = d.host_wait_input_ms + d.host_to_device_ms;
                if d.step_time_ms > 0.0 { 100.0 * input / d.step_time_ms } else { 0.0 }
            })
            .collect(),
        StepDetails::Tpu(steps) => steps.iter().map(|d| d.infeed_percent_average).collect(),
    }
}

fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() { 0.0 } else { xs.iter().sum::<f64>() / xs.len() as f64 }
}

/// A metric of two samples, with XProf's own figures for A and B when given (else the
/// sample means).
fn metric(
    name: &str,
    label: &str,
    unit: &str,
    (a, b): (&[f64], &[f64]),
    figures: Option<(f64, f64)>,
    options: &DiffOptions,
) -> StepMetric {
    let (value_a, value_b) = figures.unwrap_or_else(|| (mean(a), mean(b)));
    let test = welch(a, b);
    let enough = a.len() >= options.min_steps && b.len() >= options.min_steps;
    let verdict = match test {
        Some(test) if enough => Some(test.p_value < options.alpha),
        _ => None,
    };
    StepMetric {
        name: name.to_string(),
        label: label.to_string(),
        unit: unit.to_string(),
        change: Change::new(value_a, value_b).with_verdict(verdict),
        test,
    }
}

/// The step and input comparisons of two overviews; `(None, None)` when a side has no
/// steps.
pub fn compare(a: &OverviewPage, b: &OverviewPage, options: &DiffOptions) -> (Option<StepsDiff>, Option<InputDiff>) {
    let (details_a, details_b) = (&a.input_analysis.step_details, &b.input_analysis.step_details);
    if details_a.is_empty() || details_b.is_empty() {
        return (None, None);
    }
    let (series_a, series_b) = (series(details_a), series(details_b));
    let same_kind = matches!(
        (details_a, details_b),
        (StepDetails::Generic(_), StepDetails::Generic(_)) | (StepDetails::Tpu(_), StepDetails::Tpu(_))
    );
    let metrics = series_a
        .iter()
        .zip(&series_b)
        .take(if same_kind { usize::MAX } else { 1 })
        .map(|((name, label, va), (_, _, vb))| metric(name, label, "ms", (va, vb), None, options))
        .collect();
    let steps = StepsDiff { steps_a: details_a.len(), steps_b: details_b.len(), metrics, source: StepSource::Xprof };
    let (pa, pb) = (input_percent_series(details_a), input_percent_series(details_b));
    let figures = (a.input_analysis.input_percent, b.input_analysis.input_percent);
    let share = metric("input_share", "Input share of step time", "percent", (&pa, &pb), Some(figures), options);
    let (classification_a, statement_a) = input_verdict(&a.input_analysis);
    let (classification_b, statement_b) = input_verdict(&b.input_analysis);
    let input = InputDiff { share, classification_a, classification_b, statement_a, statement_b };
    (Some(steps), Some(input))
}

/// XProf's input classification and statement.
fn input_verdict(analysis: &InputPipelineAnalysis) -> (String, String) {
    match &analysis.recommendation.bottleneck_analysis {
        Bottleneck::Generic(b) => (b.input_classification.clone(), b.input_statement.clone()),
        Bottleneck::Tpu(b) => (b.input_classification.clone(), b.input_statement.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::overview;

    #[test]
    fn a_slower_run_is_beyond_noise() {
        let a = overview(&[10.0, 10.5, 9.8, 10.2, 10.1, 9.9], &[1.0; 6]);
        let b = overview(&[12.0, 12.4, 11.9, 12.2, 12.1, 12.3], &[3.0; 6]);
        let (steps, input) = compare(&a, &b, &DiffOptions::default());
        let steps = steps.unwrap();
        let step_time = &steps.metrics[0];
        assert_eq!(step_time.name, "step_time");
        assert!((step_time.change.relative.unwrap() - 0.2).abs() < 0.01, "{step_time:?}");
        assert_eq!(step_time.change.beyond_noise, Some(true));
        let input_row = steps.metrics.iter().find(|m| m.name == "input").unwrap();
        assert_eq!((input_row.change.a, input_row.change.b), (1.0, 3.0));
        assert_eq!(input_row.change.beyond_noise, Some(true), "constant samples that differ");
        let compile = steps.metrics.iter().find(|m| m.name == "compilation").unwrap();
        assert_eq!(compile.change.beyond_noise, Some(false));
        assert_eq!(input.unwrap().share.unit, "percent");
    }

    #[test]
    fn few_steps_give_no_verdict() {
        let a = overview(&[10.0, 10.5, 9.8], &[1.0; 3]);
        let b = overview(&[20.0, 20.4, 19.9], &[1.0; 3]);
        let (steps, _) = compare(&a, &b, &DiffOptions::default());
        let step_time = &steps.unwrap().metrics[0];
        assert_eq!(step_time.change.beyond_noise, None);
        assert!(step_time.test.unwrap().p_value < 0.05, "the test is reported all the same");
    }

    #[test]
    fn gates_know_every_metric() {
        let names = generic_series(&[]).into_iter().chain(tpu_series(&[])).chain(pytorch_series(&[]));
        let names: Vec<&str> = names.map(|(name, _, _)| name).collect();
        assert_eq!(names.len(), STEP_METRICS.len() + 2, "step_time in all three kinds");
        assert!(names.iter().all(|n| STEP_METRICS.contains(n)));
    }

    #[test]
    fn no_steps_no_comparison() {
        let a = overview(&[], &[]);
        let b = overview(&[1.0; 6], &[0.0; 6]);
        assert_eq!(compare(&a, &b, &DiffOptions::default()), (None, None));
    }
}
