//! Ops: framework ops (`framework_op_stats`, host and device), GPU kernels
//! (`kernel_stats`) and HLO ops (`hlo_stats`), matched by normalised name ([`crate::names`])
//! and compared on time, self time, count and mean time per occurrence.
//!
//! * **Keys.** A framework op is (host or device, op type, name); a kernel is its name
//!   (the rows of one kernel launched by several ops are added up); an HLO op is (HLO
//!   category, name, framework op): XLA's numbering changes from one compilation to the
//!   next, and the framework op that produced an instruction tells instructions apart
//!   where the name cannot. Rows with one key are added up. IDLE rows and SparseCore ops
//!   nested in another op (counted in it) are left out.
//! * **PyTorch operators.** When both runs carry torch-tb-profiler's operator view
//!   (`pytorch_op_stats`, PyTorch traces), framework ops are its operators by name
//!   (`aten::mm`, `nccl:all_reduce`…; key: the normalised name) instead of XProf's framework
//!   ops (which on a PyTorch trace are only the collectives): calls as count, host total
//!   and self time as time and self time, and device total and self time beside them
//!   ([`OpChange::device_time_us`]); the order and the regression/improvement split read
//!   host plus device self time.
//! * **Per step.** Op tables total the whole profile; when both runs have steps
//!   ([`crate::RunReports::op_table_steps`]), times and counts are divided by each run's
//!   steps, so that profiles of 10 and 12 steps compare. The mean per occurrence is not
//!   scaled.
//! * **Order.** Ops in both runs by the size of their self-time change, largest first
//!   (regressions and improvements alike); ops only in one run by self time.
//! * **Noise.** There are no per-step op times to test, so an op's change in a metric is
//!   beyond noise when it is at least [`DiffOptions::op_min_relative`] (5 %) of A's value
//!   and the op is not negligible: its time on either side is at least
//!   [`DiffOptions::op_min_share`] (0.1 %) of its kind's total self time. A new op (0 in
//!   A) counts as a change of any size.
//!
//! ```text
//!   A: fusion.12 (jit(step)/dot)  40 µs/step       B: fusion.15 (jit(step)/dot)  52 µs/step
//!          └──────────── key: (loop fusion, fusion.N, jit(step)/dot) ────────────┘
//!                         self time +12 µs/step (+30 %): beyond noise
//! ```

use crate::names::{NameKind, normalize};
use crate::{Change, DiffOptions, RunReports, one_side_note};
use oxprof_report::ToolId;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// What kind of op a section compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    /// Framework ops (TensorFlow, JAX, PyTorch operators), host and device.
    FrameworkOp,
    /// GPU kernels.
    Kernel,
    /// XLA's HLO ops.
    HloOp,
}

impl OpKind {
    /// Every kind, in reading order.
    pub const ALL: [OpKind; 3] = [OpKind::FrameworkOp, OpKind::Kernel, OpKind::HloOp];

    /// The prefix gates use (`op:`, `kernel:`, `hlo:`).
    pub fn gate_prefix(self) -> &'static str {
        match self {
            OpKind::FrameworkOp => "op",
            OpKind::Kernel => "kernel",
            OpKind::HloOp => "hlo",
        }
    }

    /// What people read.
    pub fn title(self) -> &'static str {
        match self {
            OpKind::FrameworkOp => "Framework ops",
            OpKind::Kernel => "GPU kernels",
            OpKind::HloOp => "HLO ops",
        }
    }

    /// The kind within a sentence: `framework ops`, `GPU kernels`, `HLO ops`.
    pub fn plural(self) -> &'static str {
        match self {
            OpKind::FrameworkOp => "framework ops",
            OpKind::Kernel => "GPU kernels",
            OpKind::HloOp => "HLO ops",
        }
    }

    /// The tool whose report this kind comes from.
    pub fn tool(self) -> ToolId {
        match self {
            OpKind::FrameworkOp => ToolId::FRAMEWORK_OP_STATS,
            OpKind::Kernel => ToolId::KERNEL_STATS,
            OpKind::HloOp => ToolId::HLO_STATS,
        }
    }
}

/// What the op values are totals of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Basis {
    /// Totals divided by each run's steps.
    PerStep {
        /// Steps of A.
        steps_a: u64,
        /// Steps of B.
        steps_b: u64,
    },
    /// Totals over each whole profile (a run has no steps).
    WholeProfile,
}

/// One op compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OpChange {
    /// The normalised name (the key's name).
    pub name: String,
    /// Op type (framework ops), HLO category (HLO ops), empty for kernels.
    pub category: String,
    /// `host` or `device` for framework ops, the framework op of an HLO op, the op that
    /// launched most of a kernel's time.
    pub context: String,
    /// The original names added up under this key when they differ from it (at most 5).
    pub names: Vec<String>,
    /// Inclusive time, µs (per step or in all).
    pub time_us: Change,
    /// Exclusive time, µs.
    pub self_time_us: Change,
    /// Occurrences (per step or in all).
    pub count: Change,
    /// Inclusive time per occurrence, µs (never scaled).
    pub mean_us: Change,
    /// Device time of all it launched, µs (PyTorch operators only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_time_us: Option<Change>,
    /// Device time it launched itself, µs (PyTorch operators only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_self_time_us: Option<Change>,
}

impl OpChange {
    /// The change of its own time, host and device (what orders ops and tells a
    /// regression from an improvement; host self time alone for all but PyTorch operators).
    pub fn own_time_delta(&self) -> f64 {
        self.self_time_us.delta + self.device_self_time_us.map_or(0.0, |c| c.delta)
    }
}

/// The comparison of one kind of op.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OpsDiff {
    /// The kind.
    pub kind: OpKind,
    /// Per step or whole profile.
    pub basis: Basis,
    /// Total self time of the kind, µs (per step or in all).
    pub total_self_time_us: Change,
    /// The report the rows came from when it is not the kind's usual one
    /// (`pytorch_op_stats` for PyTorch operators).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub tool: Option<ToolId>,
    /// Total device self time, µs (PyTorch operators only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_device_self_time_us: Option<Change>,
    /// Ops in both runs, largest self-time change first.
    pub matched: Vec<OpChange>,
    /// Ops only in A, most self time first.
    pub only_in_a: Vec<OpChange>,
    /// Ops only in B, most self time first.
    pub only_in_b: Vec<OpChange>,
    /// How many ops each list held before [`OpsDiff::truncate`] (equal to the lists'
    /// lengths unless they were cut).
    pub counts: OpCounts,
}

/// The sizes of an [`OpsDiff`]'s lists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OpCounts {
    /// Ops in both runs.
    pub matched: usize,
    /// Ops only in A.
    pub only_in_a: usize,
    /// Ops only in B.
    pub only_in_b: usize,
}

impl OpsDiff {
    /// Keeps the first `limit` ops of each list (the largest changes: the lists are
    /// sorted); [`OpsDiff::counts`] keeps the sizes before. Whether anything was dropped.
    pub fn truncate(&mut self, limit: usize) -> bool {
        let cut = self.matched.len() > limit || self.only_in_a.len() > limit || self.only_in_b.len() > limit;
        self.matched.truncate(limit);
        self.only_in_a.truncate(limit);
        self.only_in_b.truncate(limit);
        cut
    }
}

/// One row of a report, before matching.
struct Row<'a> {
    key: (String, String, String),
    name: &'a str,
    time_us: f64,
    self_time_us: f64,
    count: f64,
}

/// Summed rows of one key.
#[derive(Default)]
struct Sum {
    time_us: f64,
    self_time_us: f64,
    count: f64,
    /// Device times (PyTorch operators).
    device_time_us: f64,
    device_self_time_us: f64,
    names: BTreeSet<String>,
    /// Time of each launching op (kernels).
    contexts: BTreeMap<String, f64>,
}

type Table = BTreeMap<(String, String, String), Sum>;

fn table(rows: Vec<Row<'_>>) -> Table {
    let mut table = Table::new();
    for row in rows {
        let sum = table.entry(row.key).or_default();
        sum.time_us += row.time_us;
        sum.self_time_us += row.self_time_us;
        sum.count += row.count;
        if sum.names.len() < 5 {
            sum.names.insert(row.name.to_string());
        }
    }
    table
}

/// The rows of a kind in one run, or `None` when the run does not have that report (or
/// it is empty).
fn rows<'a>(reports: &'a RunReports, kind: OpKind, pytorch: bool, options: &DiffOptions) -> Option<Table> {
    match kind {
        OpKind::FrameworkOp if pytorch => {
            let stats = reports.pytorch_op_stats.as_ref()?;
            let mut table = Table::new();
            for r in &stats.by_name {
                let key = (String::new(), String::new(), normalize(&r.name, NameKind::Op, false));
                let sum = table.entry(key).or_default();
                sum.time_us += r.host_total_us;
                sum.self_time_us += r.host_self_us;
                sum.count += r.calls as f64;
                sum.device_time_us += r.device_total_us;
                sum.device_self_time_us += r.device_self_us;
                if sum.names.len() < 5 {
                    sum.names.insert(r.name.clone());
                }
            }
            non_empty(table)
        }
        OpKind::FrameworkOp => {
            let stats = reports.framework_op_stats.as_ref()?;
            let rows: Vec<Row<'a>> = stats
                .with_idle
                .iter()
                .filter(|r| r.op_type != "IDLE")
                .map(|r| Row {
                    key: (
                        if r.on_device { "device" } else { "host" }.to_string(),
                        r.op_type.clone(),
                        normalize(&r.op_name, NameKind::Op, false),
                    ),
                    name: &r.op_name,
                    time_us: r.times.total_time_in_us,
                    self_time_us: r.times.total_self_time_in_us,
                    count: f64::from(r.times.occurrences),
                })
                .collect();
            non_empty(table(rows))
        }
        OpKind::Kernel => {
            let stats = reports.kernel_stats.as_ref()?;
            let mut table = Table::new();
            for k in &stats.kernels {
                let key = (
                    String::new(),
                    String::new(),
                    normalize(&k.kernel_name, NameKind::Kernel, options.strip_templates),
                );
                let sum = table.entry(key).or_default();
                sum.time_us += k.total_duration_us;
                sum.self_time_us += k.total_duration_us;
                sum.count += f64::from(k.occurrences);
                if sum.names.len() < 5 {
                    sum.names.insert(k.kernel_name.clone());
                }
                *sum.contexts.entry(k.op_name.clone()).or_default() += k.total_duration_us;
            }
            non_empty(table)
        }
        OpKind::HloOp => {
            let stats = reports.hlo_stats.as_ref()?;
            let rows: Vec<Row<'a>> = stats
                .ops
                .iter()
                .filter(|r| r.parent_op_name.is_empty())
                .map(|r| {
                    let name = hlo_op_name(&r.hlo_expression);
                    Row {
                        key: (
                            normalize(&r.tf_op_name, NameKind::Op, false),
                            r.hlo_category.clone(),
                            normalize(name, NameKind::Op, false),
                        ),
                        name,
                        time_us: r.times.total_time_in_us,
                        self_time_us: r.times.total_self_time_in_us,
                        count: f64::from(r.times.occurrences),
                    }
                })
                .collect();
            non_empty(table(rows))
        }
    }
}

fn non_empty(table: Table) -> Option<Table> {
    (!table.is_empty()).then_some(table)
}

/// The instruction name of an HLO expression (`%fusion.12 = f32[…] fusion(…)` → `fusion.12`).
pub fn hlo_op_name(expression: &str) -> &str {
    let name = expression.split_once(" = ").map_or(expression, |(name, _)| name);
    name.trim().trim_start_matches('%')
}

/// Compares every kind both runs have; notes for the kinds only one has.
pub fn compare_all(a: &RunReports, b: &RunReports, options: &DiffOptions) -> (Vec<OpsDiff>, Vec<String>) {
    let basis = match (a.op_table_steps, b.op_table_steps) {
        (Some(steps_a), Some(steps_b)) if steps_a > 0 && steps_b > 0 => Basis::PerStep { steps_a, steps_b },
        _ => Basis::WholeProfile,
    };
    // PyTorch operators when both runs have them (else XProf's framework ops on both).
    let pytorch = a.pytorch_op_stats.is_some() && b.pytorch_op_stats.is_some();
    let mut diffs = Vec::new();
    let mut notes = Vec::new();
    if a.pytorch_op_stats.is_some() != b.pytorch_op_stats.is_some() {
        notes.push(one_side_note(
            "PyTorch operators (pytorch_op_stats; XProf's framework ops compared instead)",
            a.pytorch_op_stats.is_some(),
            b.pytorch_op_stats.is_some(),
        ));
    }
    for kind in OpKind::ALL {
        let pytorch = pytorch && kind == OpKind::FrameworkOp;
        match (rows(a, kind, pytorch, options), rows(b, kind, pytorch, options)) {
            (Some(ta), Some(tb)) => diffs.push(compare(kind, basis, ta, tb, pytorch, options)),
            (None, None) => {}
            (ta, tb) => {
                let tool = if pytorch { ToolId::PYTORCH_OP_STATS } else { kind.tool() };
                notes.push(one_side_note(&format!("{} ({tool})", kind.plural()), ta.is_some(), tb.is_some()))
            }
        }
    }
    (diffs, notes)
}

fn compare(kind: OpKind, basis: Basis, a: Table, b: Table, pytorch: bool, options: &DiffOptions) -> OpsDiff {
    let (scale_a, scale_b) = match basis {
        Basis::PerStep { steps_a, steps_b } => (1.0 / steps_a as f64, 1.0 / steps_b as f64),
        Basis::WholeProfile => (1.0, 1.0),
    };
    let total = |t: &Table, scale: f64| t.values().map(|s| s.self_time_us).sum::<f64>() * scale;
    let total_self_time_us = Change::new(total(&a, scale_a), total(&b, scale_b));
    let floor = options.op_min_share * total_self_time_us.a.max(total_self_time_us.b);
    let device_total = |t: &Table, scale: f64| t.values().map(|s| s.device_self_time_us).sum::<f64>() * scale;
    let total_device_self_time_us = pytorch.then(|| Change::new(device_total(&a, scale_a), device_total(&b, scale_b)));
    let floors = Floors { host: floor, device: total_device_self_time_us.map(|t| options.op_min_share * t.a.max(t.b)) };
    let empty = Sum::default();
    let keys: BTreeSet<&(String, String, String)> = a.keys().chain(b.keys()).collect();
    let (mut matched, mut only_in_a, mut only_in_b) = (Vec::new(), Vec::new(), Vec::new());
    for key in keys {
        let (sa, sb) = (a.get(key), b.get(key));
        let change =
            op_change(kind, key, sa.unwrap_or(&empty), scale_a, sb.unwrap_or(&empty), scale_b, floors, options);
        match (sa, sb) {
            (Some(_), Some(_)) => matched.push(change),
            (Some(_), None) => only_in_a.push(change),
            _ => only_in_b.push(change),
        }
    }
    let by_change = |x: &OpChange| -x.own_time_delta().abs();
    matched.sort_by(|x, y| by_change(x).total_cmp(&by_change(y)).then_with(|| x.name.cmp(&y.name)));
    only_in_a.sort_by(|x, y| y.self_time_us.a.total_cmp(&x.self_time_us.a).then_with(|| x.name.cmp(&y.name)));
    only_in_b.sort_by(|x, y| y.self_time_us.b.total_cmp(&x.self_time_us.b).then_with(|| x.name.cmp(&y.name)));
    let counts = OpCounts { matched: matched.len(), only_in_a: only_in_a.len(), only_in_b: only_in_b.len() };
    let tool = pytorch.then_some(ToolId::PYTORCH_OP_STATS);
    OpsDiff { kind, basis, total_self_time_us, tool, total_device_self_time_us, matched, only_in_a, only_in_b, counts }
}

/// The least time (µs, per step or in all) an op needs for its changes to count: host
/// time, and device time for PyTorch operators.
#[derive(Clone, Copy)]
struct Floors {
    host: f64,
    device: Option<f64>,
}

#[allow(clippy::too_many_arguments)]
fn op_change(
    kind: OpKind,
    key: &(String, String, String),
    a: &Sum,
    scale_a: f64,
    b: &Sum,
    scale_b: f64,
    floors: Floors,
    options: &DiffOptions,
) -> OpChange {
    let (context, category, name) = key;
    let significant = (a.time_us * scale_a).max(b.time_us * scale_b) >= floors.host;
    let verdict = |c: Change| c.with_verdict(Some(significant && c.relative_at_least(options.op_min_relative)));
    let mean = |s: &Sum| if s.count > 0.0 { s.time_us / s.count } else { 0.0 };
    let context = match kind {
        OpKind::Kernel => {
            // The op that launched most of the kernel's time (in either run).
            let mut by_op: BTreeMap<&str, f64> = BTreeMap::new();
            for (op, t) in a.contexts.iter().chain(&b.contexts) {
                *by_op.entry(op).or_default() += t;
            }
            by_op
                .into_iter()
                .max_by(|x, y| x.1.total_cmp(&y.1).then_with(|| y.0.cmp(x.0)))
                .map(|(op, _)| op.to_string())
        }
        _ => None,
    }
    .unwrap_or_else(|| context.clone());
    let names: BTreeSet<&String> = a.names.iter().chain(&b.names).filter(|n| *n != name).collect();
    OpChange {
        name: name.clone(),
        category: category.clone(),
        context,
        names: names.into_iter().take(5).cloned().collect(),
        time_us: verdict(Change::new(a.time_us * scale_a, b.time_us * scale_b)),
        self_time_us: verdict(Change::new(a.self_time_us * scale_a, b.self_time_us * scale_b)),
        count: verdict(Change::new(a.count * scale_a, b.count * scale_b)),
        mean_us: verdict(Change::new(mean(a), mean(b))),
        device_time_us: floors.device.map(|floor| {
            let significant = (a.device_time_us * scale_a).max(b.device_time_us * scale_b) >= floor;
            let change = Change::new(a.device_time_us * scale_a, b.device_time_us * scale_b);
            change.with_verdict(Some(significant && change.relative_at_least(options.op_min_relative)))
        }),
        device_self_time_us: floors.device.map(|floor| {
            let significant = (a.device_time_us * scale_a).max(b.device_time_us * scale_b) >= floor;
            let change = Change::new(a.device_self_time_us * scale_a, b.device_self_time_us * scale_b);
            change.with_verdict(Some(significant && change.relative_at_least(options.op_min_relative)))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_xprof::tools::kernel_stats::{KernelStats, KernelStatsRow};

    fn kernels(rows: &[(&str, &str, u32, f64)]) -> RunReports {
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
        RunReports { kernel_stats: Some(KernelStats { kernels }), ..RunReports::default() }
    }

    #[test]
    fn kernels_match_by_normalised_name_and_add_up() {
        let a = kernels(&[("loop_fusion_1", "jit(f)/add", 10, 100.0), ("gemm_2", "jit(f)/dot", 10, 900.0)]);
        let b = kernels(&[
            ("loop_fusion_7", "jit(f)/add", 10, 100.0),
            ("gemm_3", "jit(f)/dot", 10, 500.0),
            ("gemm_4", "jit(f)/dot", 10, 700.0),
            ("copy_kernel", "jit(f)/copy", 1, 1.0),
        ]);
        let (diffs, notes) = compare_all(&a, &b, &DiffOptions::default());
        assert!(notes.is_empty(), "{notes:?}");
        let [kernels] = diffs.as_slice() else { panic!("{diffs:?}") };
        assert_eq!(kernels.basis, Basis::WholeProfile);
        assert_eq!(kernels.matched.len(), 2);
        assert_eq!(kernels.counts, OpCounts { matched: 2, only_in_a: 0, only_in_b: 1 });
        let gemm = &kernels.matched[0];
        assert_eq!((gemm.name.as_str(), gemm.context.as_str()), ("gemm_N", "jit(f)/dot"));
        assert_eq!((gemm.time_us.a, gemm.time_us.b, gemm.count.b), (900.0, 1200.0, 20.0));
        assert_eq!(gemm.names, ["gemm_2", "gemm_3", "gemm_4"]);
        assert_eq!(gemm.self_time_us.beyond_noise, Some(true));
        let fusion = &kernels.matched[1];
        assert_eq!((fusion.self_time_us.delta, fusion.self_time_us.beyond_noise), (0.0, Some(false)));
        assert_eq!(kernels.only_in_b[0].name, "copy_kernel");
        // 1 µs of 1,401: under 0.1 % of the total, however new.
        assert_eq!(kernels.only_in_b[0].time_us.beyond_noise, Some(false));
    }

    #[test]
    fn truncation_keeps_the_largest_changes_and_the_counts() {
        let a = kernels(&[("big", "op", 1, 100.0), ("small", "op", 1, 10.0), ("gone", "op", 1, 5.0)]);
        let b = kernels(&[("big", "op", 1, 200.0), ("small", "op", 1, 11.0)]);
        let (mut diffs, _) = compare_all(&a, &b, &DiffOptions::default());
        assert!(diffs[0].truncate(1));
        assert_eq!(diffs[0].matched.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(), ["big"]);
        assert_eq!(diffs[0].counts, OpCounts { matched: 2, only_in_a: 1, only_in_b: 0 });
        assert!(!diffs[0].truncate(1), "nothing more to drop");
    }

    #[test]
    fn per_step_when_both_runs_have_steps() {
        let mut a = kernels(&[("k", "op", 10, 100.0)]);
        let mut b = kernels(&[("k", "op", 20, 200.0)]);
        a.op_table_steps = Some(10);
        b.op_table_steps = Some(20);
        let (diffs, _) = compare_all(&a, &b, &DiffOptions::default());
        let k = &diffs[0].matched[0];
        assert_eq!(diffs[0].basis, Basis::PerStep { steps_a: 10, steps_b: 20 });
        assert_eq!((k.time_us.a, k.time_us.b, k.count.a, k.count.b), (10.0, 10.0, 1.0, 1.0));
        assert_eq!((k.mean_us.a, k.mean_us.b), (10.0, 10.0));
        assert_eq!(k.time_us.beyond_noise, Some(false));
    }

    #[test]
    fn a_kind_only_one_side_has_is_noted() {
        let a = kernels(&[("k", "op", 1, 1.0)]);
        let (diffs, notes) = compare_all(&a, &RunReports::default(), &DiffOptions::default());
        assert!(diffs.is_empty());
        assert_eq!(notes, ["GPU kernels (kernel_stats): not compared (only A has it)"]);
    }

    #[test]
    fn hlo_names_come_from_expressions() {
        assert_eq!(hlo_op_name("%fusion.12 = f32[8]{0} fusion(f32[8]{0} %p), kind=kLoop"), "fusion.12");
        assert_eq!(hlo_op_name("copy.3"), "copy.3");
    }
}
