//! The HLO stats tool: OpStats → [`HloStats`], one row per HLO op of the device op database
//! (and per SparseCore op nested in one), ranked by self time, with its times, FLOP and
//! bandwidth rates and roofline bottleneck → XProf's DataTable. Port of
//! `xprof/convert/op_stats_to_hlo_stats.cc`.

use crate::op_stats::{OpMetrics, OpStats, PerfEnv, SourceInfo, TpuCoreType};
use crate::tools::op_record::{
    ExecutionTimes, RankAndFraction, RooflineMetrics, dma_stall_fraction, execution_times, pico_to_micro,
    roofline_metrics, sorted_op_metrics_db,
};
use oxprof_report::{Report, Table, XprofBody, json_of};
use oxprof_wire::datatable::{Cell, ColumnType, DataTable};
use oxprof_wire::nlohmann;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `hlo_stats` report: the rows in display order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HloStats {
    /// One per HLO op that ran (and per SparseCore op nested in one).
    pub ops: Vec<HloStatsRecord>,
}

impl HloStats {
    /// The report of `op_stats` (see [`hlo_stats_records`]).
    pub fn from_op_stats(op_stats: &OpStats) -> HloStats {
        HloStats { ops: hlo_stats_records(op_stats) }
    }

    /// XProf's JSON value of the body.
    pub fn xprof_json(&self) -> Value {
        hlo_stats_data_table(&self.ops).to_json()
    }
}

impl Report for HloStats {
    fn xprof_body(&self) -> XprofBody {
        XprofBody::json(nlohmann::dump(&self.xprof_json()))
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    fn tables(&self) -> Vec<Table> {
        vec![Table::from_data_table("hlo_ops", &hlo_stats_data_table(&self.ops))]
    }
}

/// One row (`HloStatsRecord`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HloStatsRecord {
    /// Rank and self-time shares (all 0 on nested SparseCore rows).
    pub rank: RankAndFraction,
    /// Program id of the HLO module.
    pub program_id: u64,
    /// HLO category.
    pub hlo_category: String,
    /// HLO expression (the op's long name, or its name when that is empty).
    pub hlo_expression: String,
    /// Framework op (provenance).
    pub tf_op_name: String,
    /// Counts and times.
    pub times: ExecutionTimes,
    /// Fraction of the time stalled on DMA.
    pub dma_stall_fraction: f64,
    /// Rates and bottleneck.
    pub roofline: RooflineMetrics,
    /// A rematerialised op.
    pub rematerialization: bool,
    /// An outside-compilation op.
    pub outside_compilation: bool,
    /// Autotuned.
    pub autotuned: bool,
    /// TensorCore, SparseCore or unknown (not a TPU).
    pub core_type: TpuCoreType,
    /// The op this row is nested in ("" at the top level).
    pub parent_op_name: String,
    /// Source location.
    pub source_info: SourceInfo,
    /// Energy (J).
    pub vdd_energy_j: f64,
}

/// The `hlo_stats` tool's JSON body for `op_stats`, as XProf's JSON value.
pub fn hlo_stats(op_stats: &OpStats) -> Value {
    HloStats::from_op_stats(op_stats).xprof_json()
}

/// `ConvertOpStatsToHloStats`: the rows in display order.
///
/// Top-level ops are sorted by self time (then name); each is followed by the SparseCore
/// ops among its children (recursively, children sorted the same way). Only top-level rows
/// are ranked and accumulate the cumulative share; ops that never ran (IDLE) are skipped.
pub fn hlo_stats_records(op_stats: &OpStats) -> Vec<HloStatsRecord> {
    let db = &op_stats.device_op_metrics_db;
    let perf_env = op_stats.perf_env.clone().unwrap_or_default();
    let total_device_time_us = pico_to_micro(db.total_time_ps);
    let mut records = Vec::new();
    let mut prev = Some(RankAndFraction::default());
    for metrics in sorted_op_metrics_db(db, None) {
        add_records_recursively(&mut records, metrics, op_stats, &perf_env, &mut prev, total_device_time_us, "");
    }
    records
}

fn add_records_recursively(
    records: &mut Vec<HloStatsRecord>,
    metrics: &OpMetrics,
    op_stats: &OpStats,
    perf_env: &PerfEnv,
    prev: &mut Option<RankAndFraction>,
    total_time_us: f64,
    parent_op_name: &str,
) {
    if metrics.occurrences == 0 {
        return;
    }
    if parent_op_name.is_empty() || metrics.core_type == TpuCoreType::SparseCore {
        let mut record = hlo_stats_record(metrics, op_stats, perf_env, parent_op_name);
        if let Some(previous) = prev.as_mut() {
            record.rank = previous.next(total_time_us, record.times.total_self_time_in_us);
            *previous = record.rank;
        }
        records.push(record);
    }
    if let Some(children) = metrics.children.as_deref().filter(|c| !c.metrics_db.is_empty()) {
        // Children do not take part in the running totals.
        let mut child_prev = None;
        let child_total_us = pico_to_micro(children.total_time_ps);
        for child in sorted_op_metrics_db(children, None) {
            add_records_recursively(records, child, op_stats, perf_env, &mut child_prev, child_total_us, &metrics.name);
        }
    }
}

fn core_type_name(core_type: TpuCoreType) -> &'static str {
    match core_type {
        TpuCoreType::TensorCore => "TensorCore",
        TpuCoreType::SparseCore => "SparseCore",
        TpuCoreType::Unknown => "",
    }
}

/// `IsRematerialization`: `.remat` in the HLO name (before `=`), or a framework op inside
/// a rematted computation.
pub fn is_rematerialization(hlo_expression: &str, framework_op_name: &str) -> bool {
    let hlo_name = hlo_expression.split_once('=').map_or(hlo_expression, |(name, _)| name);
    hlo_name.contains(".remat") || framework_op_name.contains("/rematted_computation/")
}

/// `IsOutsideCompilationOp`: sent to the host by XLA.
pub fn is_outside_compilation_op(tf_op_fullname: &str, hlo_expression: &str) -> bool {
    tf_op_fullname.ends_with(":XlaSendToHost")
        || (hlo_expression.contains("send-done") && hlo_expression.contains("is_host_transfer=true"))
}

fn hlo_stats_record(
    metrics: &OpMetrics,
    op_stats: &OpStats,
    perf_env: &PerfEnv,
    parent_op_name: &str,
) -> HloStatsRecord {
    let hlo_expression = if metrics.long_name.is_empty() { &metrics.name } else { &metrics.long_name };
    HloStatsRecord {
        rank: RankAndFraction::default(),
        program_id: metrics.hlo_module_id,
        hlo_category: metrics.category.clone(),
        hlo_expression: hlo_expression.clone(),
        tf_op_name: metrics.provenance.clone(),
        times: execution_times(metrics),
        dma_stall_fraction: dma_stall_fraction(metrics),
        roofline: roofline_metrics(metrics, perf_env, &op_stats.run_environment, false),
        rematerialization: is_rematerialization(&metrics.long_name, &metrics.provenance),
        outside_compilation: is_outside_compilation_op(&metrics.provenance, &metrics.long_name),
        autotuned: metrics.autotuned,
        core_type: metrics.core_type,
        parent_op_name: parent_op_name.to_string(),
        source_info: metrics.source_info.clone().unwrap_or_default(),
        vdd_energy_j: metrics.vdd_energy_j.unwrap_or(0.0),
    }
}

/// `EscapeHtml`.
fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

/// `SourceInfoFormattedText`: an HTML cell with the file and line, the stack as tooltip;
/// "" without a file or with line -1.
pub fn source_info_formatted_text(source_info: &SourceInfo) -> String {
    if source_info.file_name.is_empty() || source_info.line_number == -1 {
        return String::new();
    }
    format!(
        "<div class='source-info-cell' title='{}'>{}:{}</div>",
        escape_html(&source_info.stack_frame),
        escape_html(&source_info.file_name),
        source_info.line_number
    )
}

/// `GetHloOpNameFromExpression`: the text before ` = `, without a leading `%`.
fn hlo_op_name_from_expression(expression: &str) -> &str {
    let name = expression.split(" = ").next().unwrap_or("");
    name.strip_prefix('%').unwrap_or(name)
}

fn yes_no(b: bool) -> &'static str {
    if b { "Yes" } else { "No" }
}

/// The HLO stats DataTable.
pub fn hlo_stats_data_table(records: &[HloStatsRecord]) -> DataTable {
    use ColumnType::{Number, String as Text};
    let columns: [(&str, ColumnType, &str); 29] = [
        ("rank", Number, "Rank"),
        ("program_id", Text, "Program id"),
        ("category", Text, "HLO op category"),
        ("hlo_op_name", Text, "HLO op name"),
        ("hlo_op_expression", Text, "HLO op text"),
        ("tf_op_name", Text, "Framework op name"),
        ("occurrences", Number, "#Occurrences"),
        ("total_time", Number, "Total time (us)"),
        ("avg_time", Number, "Avg. time (us)"),
        ("total_self_time", Number, "Total self time (us)"),
        ("avg_self_time", Number, "Avg. self time (us)"),
        ("total_self_time_percent", Number, "Total self time (%)"),
        ("cumulative_total_self_time_percent", Number, "Cumulative total self time (%)"),
        ("dma_stall_percent", Number, "%time stalled by DMA"),
        ("model_flop_rate", Number, "Model GFLOP/s"),
        ("normalized_flop_rate", Number, "Normalized GFLOP/s"),
        ("measured_memory_bw", Number, "Measured memory BW (GiB/s)"),
        ("hbm_bw", Number, "HBM BW (GiB/s)"),
        ("cmem_read_bw", Number, "CMEM Read BW (GiB/s)"),
        ("cmem_write_bw", Number, "CMEM Write BW (GiB/s)"),
        ("operational_intensity", Number, "Operational intensity (FLOPS/Byte)"),
        ("bound_by", Text, "Bound by"),
        ("hlo_rematerialization", Text, "Rematerialization"),
        ("outside_compilation", Text, "Outside Compilation"),
        ("autotuned", Text, "Autotuned"),
        ("source_info", Text, "Source Info"),
        ("core_type", Text, "TPU core type"),
        ("parent_op_name", Text, "Parent op name"),
        ("vdd_energy", Number, "VDD Energy (J)"),
    ];
    let mut table = DataTable::new();
    for (id, ty, label) in columns {
        table.column(id, ty, label);
    }
    for r in records {
        let cells: Vec<Cell> = vec![
            (r.rank.rank as f64).into(),
            r.program_id.to_string().into(),
            r.hlo_category.as_str().into(),
            hlo_op_name_from_expression(&r.hlo_expression).into(),
            r.hlo_expression.as_str().into(),
            r.tf_op_name.as_str().into(),
            f64::from(r.times.occurrences).into(),
            r.times.total_time_in_us.into(),
            r.times.avg_time_in_us.into(),
            r.times.total_self_time_in_us.into(),
            r.times.avg_self_time_in_us.into(),
            (r.rank.fraction * 100.0).into(),
            (r.rank.cumulative_fraction * 100.0).into(),
            r.dma_stall_fraction.into(),
            r.roofline.model_flop_rate.into(),
            r.roofline.measured_flop_rate.into(),
            r.roofline.measured_memory_bw.into(),
            r.roofline.hbm_bw.into(),
            r.roofline.cmem_read_bw.into(),
            r.roofline.cmem_write_bw.into(),
            r.roofline.operational_intensity.into(),
            r.roofline.bound_by.as_str().into(),
            yes_no(r.rematerialization).into(),
            yes_no(r.outside_compilation).into(),
            yes_no(r.autotuned).into(),
            source_info_formatted_text(&r.source_info).into(),
            core_type_name(r.core_type).into(),
            r.parent_op_name.as_str().into(),
            r.vdd_energy_j.into(),
        ];
        table.row(cells);
    }
    table
}

/// What a device tool shows (a registry column): its notes depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceTool {
    /// The device's kernels (`kernel_stats`).
    Kernels,
    /// The device's XLA ops, named from the HLO protos (`op_profile`, `hlo_stats`,
    /// `roofline_model`).
    XlaOps,
}

/// oxprof's notes for users on a device tool's output that XProf leaves unexplained: a
/// profile without GPU/TPU, or device kernels without XLA ops (no HLO protos in the
/// profile, or TensorFlow without XLA), which leaves the HLO-based tools with only IDLE.
///
/// `tool` names the tool in the notes; `device` is what it shows (`None`: not a device
/// tool, no notes).
pub fn device_tool_notes(tool: &str, device: Option<DeviceTool>, op_stats: &OpStats) -> Vec<String> {
    use crate::op_stats::HardwareType;
    use crate::op_stats::op_metrics_db::is_idle_op;
    let Some(device) = device else {
        return Vec::new();
    };
    let hardware = op_stats.run_environment.hardware_type;
    if !matches!(hardware, HardwareType::Gpu | HardwareType::Tpu) {
        return vec![format!(
            "{tool}: this profile has no GPU or TPU device trace, so (as in XProf) the device tools are empty."
        )];
    }
    let db = &op_stats.device_op_metrics_db;
    let has_xla_ops = db.metrics_db.iter().any(|op| !is_idle_op(op) && op.hlo_module_id != 0);
    let has_kernels = !op_stats.kernel_stats_db.reports.is_empty();
    if device == DeviceTool::XlaOps && !has_xla_ops && has_kernels {
        return vec![format!(
            "{tool}: the device ran {} kernel report(s) but no XLA op could be named: the profile carries no HLO \
             protos for them (or the program ran without XLA), so XProf skips their kernels here and shows only \
             IDLE / program totals. See kernel_stats (and framework_op_stats) for the kernels.",
            op_stats.kernel_stats_db.reports.len()
        )];
    }
    let unnamed =
        db.metrics_db.iter().filter(|op| !is_idle_op(op) && op.hlo_module_id != 0 && op.long_name.is_empty()).count();
    if device == DeviceTool::XlaOps && unnamed > 0 {
        return vec![format!(
            "{tool}: {unnamed} XLA op(s) have no HLO text (their module's HLO proto is missing), so their category, \
             FLOPs and bytes are unknown and their rates show as 0."
        )];
    }
    Vec::new()
}
