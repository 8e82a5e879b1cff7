//! Comparing two runs: `oxprof diff`'s analysis. Two runs' typed reports
//! ([`RunReports`]: the overview's per-step breakdown, framework ops, GPU kernels, HLO ops,
//! allocator memory, the input pipeline) in, a typed [`RunDiff`] out; CI gates
//! ([`gate`]) decide over it. No IO: the API layer computes or loads the reports, renders
//! the result (Markdown, JSON, CSV) and reads and writes summary files ([`summary`]).
//!
//! ```text
//!  RunReports A ─┐                       ┌─ steps: mean of each category, Welch's t-test, Hedges' g
//!                ├─ diff(a, b, options) ─┼─ input: input-bound share of step time
//!  RunReports B ─┘        │              ├─ ops: framework ops, kernels, HLO ops by normalised name
//!                         ▼              └─ memory: peak and fragmentation per allocator
//!                      RunDiff ── gate::Gate::evaluate ──▶ tripped / passed / within noise
//! ```
//!
//! **Noise.** Step metrics are decided by a two-sample test on per-step values
//! ([`stats`]); ops and memory have no per-step samples and are decided by thresholds
//! ([`DiffOptions`]). A change is *beyond noise* only when its verdict says so; with fewer
//! than [`DiffOptions::min_steps`] steps on a side there is no verdict (`None`).

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod gate;
pub mod memory;
pub mod names;
pub mod ops;
mod reports;
pub mod stats;
pub mod steps;
pub mod summary;
#[cfg(test)]
mod testing;

pub use reports::{RunReports, Source};

use serde::{Deserialize, Serialize};

/// How two values compare: B against A (the baseline).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Change {
    /// A's value.
    pub a: f64,
    /// B's value.
    pub b: f64,
    /// `b − a`.
    pub delta: f64,
    /// `(b − a) / a`; `None` when A is 0 and B is not (something new).
    pub relative: Option<f64>,
    /// Whether the change is beyond noise; `None`: no verdict (too few steps).
    pub beyond_noise: Option<bool>,
}

impl Change {
    /// B against A, without a noise verdict yet.
    pub fn new(a: f64, b: f64) -> Change {
        let relative = if a != 0.0 {
            Some((b - a) / a)
        } else if b == 0.0 {
            Some(0.0)
        } else {
            None
        };
        Change { a, b, delta: b - a, relative, beyond_noise: None }
    }

    /// With a noise verdict.
    pub fn with_verdict(mut self, beyond_noise: Option<bool>) -> Change {
        self.beyond_noise = beyond_noise;
        self
    }

    /// Whether `|relative| ≥ min_relative` (a change from 0 always is).
    pub fn relative_at_least(&self, min_relative: f64) -> bool {
        self.relative.is_none_or(|r| r.abs() >= min_relative && r != 0.0)
    }
}

/// Thresholds of the comparison (the defaults are what `oxprof diff` uses).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DiffOptions {
    /// Drop template arguments from kernel names before matching ([`names`]).
    pub strip_templates: bool,
    /// Steps each side needs for a noise verdict on step metrics.
    pub min_steps: usize,
    /// Significance level of the step test (`p < alpha` is beyond noise).
    pub alpha: f64,
    /// An op's change is beyond noise when it is at least this fraction of its A value…
    pub op_min_relative: f64,
    /// …and the op takes at least this fraction of its kind's total self time (the larger
    /// of A's and B's) on either side.
    pub op_min_share: f64,
    /// A memory peak's change is beyond noise when it is at least this many bytes…
    pub memory_min_bytes: f64,
    /// …and at least this fraction of A's peak.
    pub memory_min_relative: f64,
    /// A fragmentation change (a fraction, 0–1) is beyond noise from this much.
    pub fragmentation_min_delta: f64,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            strip_templates: false,
            min_steps: 5,
            alpha: 0.05,
            op_min_relative: 0.05,
            op_min_share: 0.001,
            memory_min_bytes: 1024.0 * 1024.0,
            memory_min_relative: 0.01,
            fragmentation_min_delta: 0.01,
        }
    }
}

/// One side of a comparison, as the result names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SideInfo {
    /// Where its reports came from.
    pub source: Source,
    /// What people read ([`Source::label`]).
    pub label: String,
    /// The device type (`CPU`, `GPU`, `TPU v4`…), empty when unknown.
    pub device_type: String,
    /// Steps in the step comparison (XProf's selection: first and last dropped when there
    /// are more than five).
    pub steps: usize,
}

/// The comparison of two runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunDiff {
    /// The format of this result (bumped when its fields change meaning).
    pub oxprof_diff: u32,
    /// The baseline.
    pub a: SideInfo,
    /// The run compared with it.
    pub b: SideInfo,
    /// The thresholds used.
    pub options: DiffOptions,
    /// Step time and its breakdown (`None` when a side has no overview).
    pub steps: Option<steps::StepsDiff>,
    /// The input-bound share of step time (`None` when a side has no overview).
    pub input: Option<steps::InputDiff>,
    /// Framework ops, kernels and HLO ops, the kinds both sides have.
    pub ops: Vec<ops::OpsDiff>,
    /// Allocator memory (`None` when neither side recorded allocator events).
    pub memory: Option<memory::MemoryDiff>,
    /// What was left out and why.
    pub notes: Vec<String>,
}

impl RunDiff {
    /// Keeps at most `limit` ops in each list of each kind (the largest changes), with a
    /// note when any were dropped; each kind's `counts` keep the sizes before. Gates read
    /// what is kept: evaluate them first ([`DiffReport::new`]).
    pub fn truncate_ops(&mut self, limit: usize) {
        let mut cut = Vec::new();
        for ops in &mut self.ops {
            if ops.truncate(limit) {
                cut.push(ops.kind.tool().name());
            }
        }
        if !cut.is_empty() {
            self.notes.push(format!(
                "{}: only the {limit} largest changes of each list are listed (the counts are of all ops)",
                cut.join(", ")
            ));
        }
    }
}

/// A comparison with its gates' outcomes: what `oxprof diff --format json` prints (the
/// comparison's fields, then `gates` and `tripped`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DiffReport {
    /// The comparison.
    #[serde(flatten)]
    pub diff: RunDiff,
    /// Each gate's outcome, in the order given.
    pub gates: Vec<gate::GateOutcome>,
    /// Whether any gate tripped (`oxprof diff` exits 1).
    pub tripped: bool,
}

impl DiffReport {
    /// Evaluates `gates` on `diff` (`noise_check` false: changes within noise trip too).
    pub fn new(diff: RunDiff, gates: &[gate::Gate], noise_check: bool) -> DiffReport {
        let gates: Vec<gate::GateOutcome> = gates.iter().map(|g| g.evaluate(&diff, noise_check)).collect();
        let tripped = gates.iter().any(gate::GateOutcome::tripped);
        DiffReport { diff, gates, tripped }
    }
}

/// The version of [`RunDiff`]'s format.
pub const DIFF_FORMAT: u32 = 1;

/// Compares run B with run A (the baseline).
pub fn diff(a: (&Source, &RunReports), b: (&Source, &RunReports), options: &DiffOptions) -> RunDiff {
    let (source_a, reports_a) = a;
    let (source_b, reports_b) = b;
    let mut notes = Vec::new();
    notes.extend(reports_a.notes.iter().map(|n| format!("A: {n}")));
    notes.extend(reports_b.notes.iter().map(|n| format!("B: {n}")));
    let (steps, input) = match (&reports_a.pytorch_overview, &reports_b.pytorch_overview) {
        (Some(pa), Some(pb)) => {
            let (steps, input) = steps::compare_pytorch(pa, pb, options);
            if steps.is_none() {
                notes.push(format!(
                    "steps: not compared ({} steps in A, {} in B): a PyTorch run without `ProfilerStep#N` events \
                     (profile with torch.profiler.profile(schedule=…) and call prof.step()) has no step time",
                    steps::pytorch_step_count(pa),
                    steps::pytorch_step_count(pb)
                ));
            }
            (steps, input)
        }
        (pa, pb) => {
            if pa.is_some() != pb.is_some() {
                notes.push(one_side_note(
                    "PyTorch steps (pytorch_overview; a summary of a PyTorch run made before oxprof read them has \
                     none: make it again)",
                    pa.is_some(),
                    pb.is_some(),
                ));
            }
            xprof_steps(reports_a, reports_b, options, &mut notes)
        }
    };
    let (ops, op_notes) = ops::compare_all(reports_a, reports_b, options);
    notes.extend(op_notes);
    let memory = memory::compare(&reports_a.memory_profile, &reports_b.memory_profile, options);
    if memory.is_none() {
        notes.push("memory: no allocator events on either side (TensorFlow's BFC allocators record them; JAX and most GPU profiles have none)".into());
    }
    let side = |source: &Source, reports: &RunReports| SideInfo {
        source: source.clone(),
        label: source.label(),
        device_type: reports.overview_page.as_ref().map(|o| o.run_environment.device_type.clone()).unwrap_or_default(),
        steps: match &reports.pytorch_overview {
            Some(pytorch) => steps::pytorch_step_count(pytorch),
            None => reports.overview_page.as_ref().map_or(0, steps::step_count),
        },
    };
    RunDiff {
        oxprof_diff: DIFF_FORMAT,
        a: side(source_a, reports_a),
        b: side(source_b, reports_b),
        options: options.clone(),
        steps,
        input,
        ops,
        memory,
        notes,
    }
}

/// Steps and input from XProf's overviews.
fn xprof_steps(
    reports_a: &RunReports,
    reports_b: &RunReports,
    options: &DiffOptions,
    notes: &mut Vec<String>,
) -> (Option<steps::StepsDiff>, Option<steps::InputDiff>) {
    match (&reports_a.overview_page, &reports_b.overview_page) {
        (Some(oa), Some(ob)) => {
            let (steps, input) = steps::compare(oa, ob, options);
            if steps.is_none() {
                notes.push(no_steps_note(steps::step_count(oa), steps::step_count(ob)));
            }
            (steps, input)
        }
        _ => {
            notes.push(one_side_note(
                "the overview (steps, input pipeline)",
                reports_a.overview_page.is_some(),
                reports_b.overview_page.is_some(),
            ));
            (None, None)
        }
    }
}

fn no_steps_note(steps_a: usize, steps_b: usize) -> String {
    format!(
        "steps: not compared ({steps_a} steps in A, {steps_b} in B): a run without steps (no step markers, or an \
         inference run) has no step time"
    )
}

/// A note for a section only one side (or neither) has.
pub(crate) fn one_side_note(what: &str, a_has_it: bool, b_has_it: bool) -> String {
    let who = match (a_has_it, b_has_it) {
        (true, false) => "only A has it",
        (false, true) => "only B has it",
        _ => "neither side has it",
    };
    format!("{what}: not compared ({who})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::OpKind;
    use crate::testing::{run, source};
    use std::collections::BTreeMap;

    #[test]
    fn a_run_against_itself_changes_nothing() {
        let steps = [10.0, 10.4, 9.7, 10.2, 10.1, 9.9];
        let reports =
            run(&steps, &[("dense/MatMul", "MatMul", 6, 600.0)], &[("gemm_1", "dense/MatMul", 6, 500.0)], 1 << 30);
        let diff = diff((&source("a"), &reports), (&source("a"), &reports), &DiffOptions::default());
        let steps = diff.steps.as_ref().unwrap();
        assert_eq!((steps.steps_a, steps.steps_b, diff.a.steps), (6, 6, 6));
        assert!(steps.metrics.iter().all(|m| m.change.delta == 0.0 && m.change.beyond_noise == Some(false)));
        assert_eq!(diff.input.as_ref().unwrap().share.change.beyond_noise, Some(false));
        let kinds: Vec<OpKind> = diff.ops.iter().map(|o| o.kind).collect();
        assert_eq!(kinds, [OpKind::FrameworkOp, OpKind::Kernel], "no HLO ops on either side: no section, no note");
        for ops in &diff.ops {
            assert!(ops.only_in_a.is_empty() && ops.only_in_b.is_empty());
            assert!(ops.matched.iter().all(|o| o.self_time_us.beyond_noise == Some(false)));
        }
        assert_eq!(diff.memory.as_ref().unwrap().allocators[0].peak_bytes.beyond_noise, Some(false));
        assert!(diff.notes.is_empty(), "{:?}", diff.notes);
        let report = DiffReport::new(diff, &[gate::Gate::parse("step_time>+0%").unwrap()], true);
        assert!(!report.tripped);
    }

    #[test]
    fn what_one_side_lacks_is_noted() {
        let mut a = run(&[10.0; 6], &[("x", "X", 1, 1.0)], &[("k", "x", 1, 1.0)], 1 << 20);
        let b = RunReports { overview_page: None, kernel_stats: None, memory_profile: BTreeMap::new(), ..a.clone() };
        a.framework_op_stats = None;
        let diff = diff((&source("a"), &a), (&source("b"), &b), &DiffOptions::default());
        assert!(diff.steps.is_none() && diff.input.is_none() && diff.ops.is_empty());
        assert_eq!(
            diff.notes,
            [
                "the overview (steps, input pipeline): not compared (only A has it)",
                "framework ops (framework_op_stats): not compared (only B has it)",
                "GPU kernels (kernel_stats): not compared (only A has it)",
            ]
        );
        let memory = diff.memory.unwrap();
        assert_eq!(memory.allocators[0].presence, memory::Presence::OnlyA);
    }

    #[test]
    fn a_truncated_diff_says_so() {
        let names: Vec<String> = (0..5).map(|i| format!("op{i}")).collect();
        let rows: Vec<(&str, &str, u32, f64)> = names.iter().map(|n| (n.as_str(), "T", 1, 10.0)).collect();
        let a = run(&[10.0; 6], &rows, &[], 0);
        let mut diff = diff((&source("a"), &a), (&source("a"), &a), &DiffOptions::default());
        diff.truncate_ops(2);
        assert_eq!(diff.ops[0].matched.len(), 2);
        assert_eq!(diff.ops[0].counts.matched, 5);
        assert_eq!(
            diff.notes.last().unwrap(),
            "framework_op_stats: only the 2 largest changes of each list are listed (the counts are of all ops)"
        );
    }

    #[test]
    fn changes_are_relative_to_a() {
        let c = Change::new(10.0, 12.0);
        assert_eq!((c.delta, c.relative), (2.0, Some(0.2)));
        assert_eq!(Change::new(0.0, 0.0).relative, Some(0.0));
        assert_eq!(Change::new(0.0, 3.0).relative, None);
        assert!(Change::new(0.0, 3.0).relative_at_least(0.05));
        assert!(!Change::new(10.0, 10.2).relative_at_least(0.05));
        assert!(!Change::new(0.0, 0.0).relative_at_least(0.0));
    }
}

#[cfg(test)]
mod pytorch_tests {
    //! PyTorch runs: steps from `ProfilerStep#N`, framework ops from the operator view.
    use super::*;
    use crate::ops::OpKind;
    use crate::steps::StepSource;
    use crate::testing::{pytorch_run, source};
    use oxprof_report::ToolId;

    // Six steps a side; B's kernels take 2 ms more per step, aten::mm twice the device time:
    //
    //   A  |DL|kernel 10 ms  |   |DL|kernel 10.2 ms |   … (6 steps, ~11 ms each)
    //   B  |DL|kernel 12 ms    | |DL|kernel 12.1 ms   | … (6 steps, ~13 ms each)
    fn pair() -> (RunReports, RunReports) {
        let a = pytorch_run(
            &[10.0, 10.2, 9.9, 10.1, 10.0, 9.8],
            &[("aten::mm", 60, 600.0, 6000.0), ("aten::add_", 120, 240.0, 300.0), ("aten::relu", 6, 12.0, 30.0)],
        );
        let b = pytorch_run(
            &[12.0, 12.1, 11.9, 12.2, 12.0, 11.8],
            &[("aten::mm", 60, 610.0, 12000.0), ("aten::add_", 120, 240.0, 300.0), ("aten::gelu", 6, 14.0, 40.0)],
        );
        (a, b)
    }

    #[test]
    fn steps_come_from_profiler_steps() {
        let (a, b) = pair();
        let diff = diff((&source("a"), &a), (&source("b"), &b), &DiffOptions::default());
        let steps = diff.steps.as_ref().expect("PyTorch steps");
        assert_eq!((steps.source, steps.steps_a, steps.steps_b, diff.a.steps), (StepSource::Pytorch, 6, 6, 6));
        let names: Vec<&str> = steps.metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            ["step_time", "kernel", "memcpy", "memset", "communication", "runtime", "data_loader", "cpu_exec", "other"]
        );
        let step_time = &steps.metrics[0];
        assert!((step_time.change.a - 11.0).abs() < 1e-9 && (step_time.change.b - 13.0).abs() < 1e-9, "{step_time:?}");
        assert_eq!(step_time.change.beyond_noise, Some(true));
        let loader = steps.metrics.iter().find(|m| m.name == "data_loader").unwrap();
        assert_eq!((loader.change.a, loader.change.b, loader.change.beyond_noise), (1.0, 1.0, Some(false)));
        let input = diff.input.as_ref().unwrap();
        assert!((input.share.change.a - 100.0 / 11.0).abs() < 1e-9, "{input:?}");
        let gate = gate::Gate::parse("step:kernel>+10%").unwrap();
        assert!(DiffReport::new(diff, &[gate], true).tripped);
    }

    #[test]
    fn framework_ops_are_the_operators_with_device_times() {
        let (a, b) = pair();
        let diff = diff((&source("a"), &a), (&source("b"), &b), &DiffOptions::default());
        let ops = diff.ops.iter().find(|o| o.kind == OpKind::FrameworkOp).unwrap();
        assert_eq!(ops.tool, Some(ToolId::PYTORCH_OP_STATS));
        assert_eq!(ops.total_device_self_time_us.unwrap().b, 12340.0);
        let mm = &ops.matched[0];
        assert_eq!(mm.name, "aten::mm", "the largest change of host + device self time first");
        assert_eq!((mm.count.a, mm.self_time_us.a, mm.time_us.b), (60.0, 600.0, 610.0));
        let device = mm.device_self_time_us.unwrap();
        assert_eq!((device.a, device.b, device.beyond_noise), (6000.0, 12000.0, Some(true)));
        assert_eq!(mm.self_time_us.beyond_noise, Some(false), "+1.7 % of host self time");
        assert_eq!(ops.only_in_a[0].name, "aten::relu");
        assert_eq!(ops.only_in_b[0].name, "aten::gelu");
        assert!(diff.notes.iter().all(|n| !n.contains("steps")), "{:?}", diff.notes);
        let gates = [
            gate::Gate::parse("op:aten::mm.device_self_time>+50%").unwrap(),
            gate::Gate::parse("op:aten::mm.self_time>+50%").unwrap(),
        ];
        let report = DiffReport::new(diff, &gates, true);
        assert_eq!(report.gates[0].status, gate::GateStatus::Tripped);
        assert_eq!(report.gates[1].status, gate::GateStatus::Passed);
    }

    #[test]
    fn few_steps_or_one_side_without_steps() {
        let a = pytorch_run(&[10.0, 10.0, 10.0], &[("aten::mm", 1, 1.0, 1.0)]);
        let b = pytorch_run(&[20.0, 20.0, 20.0], &[("aten::mm", 1, 1.0, 1.0)]);
        let diff = diff((&source("a"), &a), (&source("b"), &b), &DiffOptions::default());
        assert_eq!(diff.steps.unwrap().metrics[0].change.beyond_noise, None, "3 steps a side: no verdict");
        let none = pytorch_run(&[], &[("aten::mm", 1, 1.0, 1.0)]);
        let diff = super::diff((&source("a"), &none), (&source("b"), &b), &DiffOptions::default());
        assert!(diff.steps.is_none() && diff.input.is_none());
        assert!(
            diff.notes[0].starts_with("steps: not compared (0 steps in A, 3 in B): a PyTorch run"),
            "{:?}",
            diff.notes
        );
        // A summary of a PyTorch run made before oxprof read PyTorch views: XProf's reports.
        let old = RunReports { pytorch_overview: None, pytorch_op_stats: None, ..b.clone() };
        let diff = super::diff((&source("a"), &old), (&source("b"), &b), &DiffOptions::default());
        assert!(
            diff.notes
                .iter()
                .any(|n| n.starts_with("PyTorch steps (pytorch_overview") && n.ends_with("(only B has it)"))
        );
        let ops = diff.ops.iter().find(|o| o.kind == OpKind::FrameworkOp).unwrap();
        assert_eq!((ops.tool, ops.matched[0].name.as_str()), (None, "nccl"), "XProf's framework ops on both");
    }
}
