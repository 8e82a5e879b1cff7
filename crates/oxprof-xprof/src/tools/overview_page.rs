//! The overview page: OpStats → [`OverviewPage`] (run environment, top device ops, step-time
//! analysis, recommendation, diagnostics, inference latency) → XProf's seven DataTables
//! (port of `xprof/convert/op_stats_to_overview_page.cc` as XProf 2.24.2 renders it).

use crate::op_stats::HardwareType;
use crate::op_stats::op_metrics_db::create_tf_metrics_db_from_device_op_metrics_db;
use crate::op_stats::{
    HostDependentJobInfo, KernelStatsDb, OpStats, OpStatsDiagnostics, PrecisionStats, RunEnvironment,
};
use crate::tools::input_pipeline::{
    BottleneckAnalysis, InputPipelineAnalysis, StepTimeBreakdown, compute_bottleneck_analysis,
    convert_op_stats_to_input_pipeline_analysis, input_pipeline_analysis_table,
};
use crate::tools::step_breakdown::{
    diagnostics_data_table, idle_time_ratio, is_idle_op, pico_to_nano, populate_overview_diagnostics, safe_divide,
    sorted_op_metrics_db,
};
use oxprof_report::{Report, Table, XprofBody, json_of};
use oxprof_wire::cxx_printf::{one_digit, printf_fixed, six_digits, two_digits};
use oxprof_wire::datatable::{ColumnType, DataTable};
use oxprof_wire::nlohmann;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Tf-functions whose expensive-call share reaches this are reported.
pub const TF_FUNCTION_REPORT_THRESHOLD_IN_PERCENT: f64 = 20.0;
/// Eager execution above this share of op time is reported.
pub const EAGER_REPORT_THRESHOLD_IN_PERCENT: f64 = 10.0;
/// Outside compilation above this share of device op time is reported.
pub const OUTSIDE_COMPILATION_THRESHOLD_IN_PERCENT: f64 = 5.0;
/// Below this share of 16-bit device compute, suggest lower precision.
const LOW_PRECISION_PERCENT_THRESHOLD: f64 = 10.0;
/// Rows of the top-ops table.
const NUM_TOP_OPS_SHOWN: usize = 10;

/// `OverviewTfOp`: one of the top device framework ops.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct OverviewTfOp {
    /// Name.
    pub name: String,
    /// Category (op type).
    pub category: String,
    /// Self time / total device op time.
    pub self_time_fraction: f64,
    /// Running sum of the fractions.
    pub cumulative_time_fraction: f64,
    /// GFLOP/s.
    pub flop_rate: f64,
    /// TensorCore eligible (GPU kernels).
    pub is_op_tensorcore_eligible: bool,
    /// Uses TensorCores (GPU kernels).
    pub is_op_using_tensorcore: bool,
}

/// `OverviewPageAnalysis`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct OverviewPageAnalysis {
    /// MXU utilization (performance counters).
    pub mxu_utilization_percent: f64,
    /// Device idle % (TPU).
    pub device_idle_time_percent: f64,
    /// Host idle % (TPU).
    pub host_idle_time_percent: f64,
    /// Top device ops.
    pub top_device_ops: Vec<OverviewTfOp>,
    /// Remark.
    pub remark_text: String,
    /// Remark color.
    pub remark_color: String,
    /// FLOP rate over the roofline (TPU with limits).
    pub flop_rate_utilization_relative_to_roofline_percent: f64,
    /// Memory bandwidth over the hardware limit (TPU with limits).
    pub memory_bw_utilization_relative_to_hw_limit_percent: f64,
    /// 16-bit share of device compute.
    pub device_compute_16bit_percent: f64,
    /// 32-bit share of device compute.
    pub device_compute_32bit_percent: f64,
    /// Host share of framework op occurrences.
    pub host_tf_op_percent: f64,
    /// Device share of framework op occurrences.
    pub device_tf_op_percent: f64,
    /// Host trace level.
    pub host_trace_level: u32,
    /// Eager share of host op time.
    pub host_op_time_eager_percent: f64,
    /// Eager share of device op time.
    pub device_op_time_eager_percent: f64,
    /// Outside-compilation share of device op time.
    pub device_op_time_outside_compilation_percent: f64,
    /// Device duty cycle (TPU).
    pub device_duty_cycle_percent: f64,
    /// HBM utilization (performance counters).
    pub hbm_utilization_percent: f64,
    /// Program goodput.
    pub program_goodput_percent: f64,
    /// High-confidence device duty cycle (XProf 2.24, TPU).
    pub device_duty_cycle_high_confidence_percent: f64,
    /// SparseCore step time.
    pub sc_step_time_ms_average: f64,
    /// SparseCore infeed.
    pub sc_infeed_time_ms_avg: f64,
    /// SparseCore outfeed.
    pub sc_outfeed_time_ms_avg: f64,
    /// SparseCore idle.
    pub sc_idle_time_ms_avg: f64,
    /// High-confidence device idle time (XProf 2.24, TPU).
    pub idle_time_high_confidence_ps: f64,
    /// Average active step time (XProf 2.24, TPU).
    pub active_step_time_ms_average: f64,
    /// Average TensorCore active time (XProf 2.24, TPU).
    pub tc_active_time_ms_average: f64,
    /// Average SparseCore active time (XProf 2.24, TPU).
    pub sc_active_time_ms_average: f64,
}

/// `GenericRecommendation`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GenericRecommendation {
    /// Kernel-launch classification.
    pub kernel_launch_bottleneck: String,
    /// Kernel-launch statement.
    pub kernel_launch_statement: String,
    /// All-other classification.
    pub all_other_bottleneck: String,
    /// All-other statement.
    pub all_other_statement: String,
    /// Precision statement.
    pub precision_statement: String,
    /// Collectives classification.
    pub device_collectives_bottleneck: String,
    /// Collectives statement.
    pub device_collectives_statement: String,
}

/// `OverviewPageRecommendation`; tips are HTML links or plain text.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct OverviewPageRecommendation {
    /// `host`, `both`, `device`, `unknown`.
    pub bottleneck: String,
    /// Input statement.
    pub statement: String,
    /// Input tips.
    pub input_tips: Vec<String>,
    /// Output statement.
    pub output_statement: String,
    /// Eager-mode advice.
    pub eager_statement_html: String,
    /// Outside-compilation advice.
    pub outside_compilation_statement_html: String,
    /// Tf-function advice.
    pub tf_function_statement_html: String,
    /// Host tips.
    pub host_tips: Vec<String>,
    /// Device tips.
    pub device_tips: Vec<String>,
    /// Documentation tips.
    pub documentation_tips: Vec<String>,
    /// Generic recommendation.
    pub recommendation: GenericRecommendation,
    /// FAQ tips.
    pub faq_tips: Vec<String>,
    /// Inference tips.
    pub inference_tips: Vec<String>,
}

/// `OverviewPageRunEnvironment` (the parts the page shows).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct OverviewPageRunEnvironment {
    /// Hosts.
    pub host_count: i32,
    /// Tasks.
    pub task_count: i32,
    /// Device type.
    pub device_type: String,
    /// Device cores.
    pub device_core_count: i32,
    /// Replicas.
    pub replica_count: i32,
    /// Cores per replica.
    pub num_cores_per_replica: i32,
    /// Training.
    pub is_training: bool,
    /// Per-host job info.
    pub host_dependent_job_info: Vec<HostDependentJobInfo>,
}

/// `OverviewLatencyBreakdown`, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct OverviewLatencyBreakdown {
    /// Total.
    pub total_latency_us: f64,
    /// Host.
    pub host_latency_us: f64,
    /// Device.
    pub device_latency_us: f64,
    /// Host-device communication.
    pub communication_latency_us: f64,
}

/// `OverviewInferenceLatency`: latency percentiles of an inference run (computed from the
/// XSpace's inference stats, not from OpStats; empty for every reference profile).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct OverviewInferenceLatency {
    /// Percentiles.
    pub percentile_numbers: Vec<f64>,
    /// One breakdown per percentile.
    pub latency_breakdowns: Vec<OverviewLatencyBreakdown>,
    /// Maximum latency.
    pub max_latency_us: f64,
    /// Minimum latency.
    pub min_latency_us: f64,
    /// Throughput.
    pub sessions_per_second: f64,
}

/// The `overview_page` report (XProf's `OverviewPage`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct OverviewPage {
    /// Run environment.
    pub run_environment: OverviewPageRunEnvironment,
    /// Input-pipeline analysis.
    pub input_analysis: InputPipelineAnalysis,
    /// Analysis.
    pub analysis: OverviewPageAnalysis,
    /// Recommendation.
    pub recommendation: OverviewPageRecommendation,
    /// Diagnostics.
    pub diagnostics: OpStatsDiagnostics,
    /// Inference latency.
    pub inference_latency: OverviewInferenceLatency,
}

/// The overview page's JSON value: `[analysis, step time, run environment,
/// recommendation, inference latency, {}, diagnostics]` (no inference latency rows: those
/// come from the XSpace; see [`overview_page_with_inference_latency`]).
pub fn overview_page(op_stats: &OpStats) -> Value {
    OverviewPage::from_op_stats(op_stats).xprof_json()
}

impl OverviewPage {
    /// The report of `op_stats` (see [`convert_op_stats_to_overview_page`]).
    pub fn from_op_stats(op_stats: &OpStats) -> OverviewPage {
        convert_op_stats_to_overview_page(op_stats)
    }

    /// XProf's six DataTables: analysis, step time, run environment, recommendation,
    /// inference latency, diagnostics.
    pub fn data_tables(&self) -> [DataTable; 6] {
        [
            analysis_table(self),
            input_pipeline_analysis_table(&self.input_analysis),
            run_environment_table(self),
            recommendation_table(self),
            inference_latency_table(&self.inference_latency),
            diagnostics_data_table(&self.diagnostics),
        ]
    }

    /// XProf's JSON value of the body (`OverviewPageToJson`): the tables, with an empty
    /// object before the last one.
    pub fn xprof_json(&self) -> Value {
        let mut items: Vec<Value> = self.data_tables().iter().map(DataTable::to_json).collect();
        items.insert(5, Value::Object(Map::new()));
        Value::Array(items)
    }
}

/// Names of [`OverviewPage::data_tables`] as [`Table`]s.
const TABLE_NAMES: [&str; 6] =
    ["analysis", "step_time", "run_environment", "recommendation", "inference_latency", "diagnostics"];

impl Report for OverviewPage {
    fn xprof_body(&self) -> XprofBody {
        XprofBody::json(overview_page_text(&self.xprof_json()))
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    fn tables(&self) -> Vec<Table> {
        TABLE_NAMES.iter().zip(self.data_tables()).map(|(name, table)| Table::from_data_table(name, &table)).collect()
    }
}

/// The overview page with an inference-latency result (XProf adds it for runs that are not
/// training, from `ComputeInferenceLatencyResult` over the XSpace's inference stats).
pub fn overview_page_with_inference_latency(op_stats: &OpStats, latency: OverviewInferenceLatency) -> Value {
    let mut page = convert_op_stats_to_overview_page(op_stats);
    if !op_stats.run_environment.is_training {
        page.inference_latency = latency;
    }
    page.xprof_json()
}

/// `ParseHardwareType`: from the device type string.
pub fn parse_hardware_type(device_type: &str) -> HardwareType {
    if device_type.contains("GPU") {
        HardwareType::Gpu
    } else if device_type == "CPU" {
        HardwareType::CpuOnly
    } else if device_type.contains("TPU") {
        HardwareType::Tpu
    } else {
        HardwareType::Unknown
    }
}

/// `ConvertOpStatsToOverviewPage`.
pub fn convert_op_stats_to_overview_page(op_stats: &OpStats) -> OverviewPage {
    let mut page = OverviewPage {
        run_environment: compute_run_environment(&op_stats.run_environment),
        analysis: compute_analysis_result(op_stats),
        ..OverviewPage::default()
    };
    let hardware_type = parse_hardware_type(&op_stats.run_environment.device_type);
    if hardware_type == HardwareType::Tpu {
        compute_tpu_analysis_result(op_stats, &mut page.analysis);
    }
    page.input_analysis = convert_op_stats_to_input_pipeline_analysis(op_stats);
    if let StepTimeBreakdown::Tpu(breakdown) = &page.input_analysis.step_time_breakdown {
        page.analysis.active_step_time_ms_average = breakdown.active_step_time_ms_summary.average;
        page.analysis.tc_active_time_ms_average = breakdown.tc_active_ms_summary.average;
        if let Some(sc) = &breakdown.sparse_core_step_summary {
            page.analysis.sc_active_time_ms_average = sc.sc_active_ms_summary.average;
            page.analysis.sc_step_time_ms_average = sc.sc_step_time_ms_summary.average;
            page.analysis.sc_infeed_time_ms_avg = sc.sc_infeed_ms_summary.average;
            page.analysis.sc_outfeed_time_ms_avg = sc.sc_outfeed_ms_summary.average;
            page.analysis.sc_idle_time_ms_avg = sc.sc_idle_ms_summary.average;
        }
    }
    // The generic analysis, even on TPU (where it reads no steps and comes out empty).
    let bottleneck =
        compute_bottleneck_analysis(&page.input_analysis.input_time_breakdown, &page.input_analysis.step_details);
    let precision = op_stats.device_op_metrics_db.precision_stats.clone().unwrap_or_default();
    let mut recommendation = OverviewPageRecommendation {
        recommendation: generic_recommendation(&bottleneck, &precision),
        ..OverviewPageRecommendation::default()
    };
    set_common_recommendation(
        &bottleneck,
        hardware_type,
        tf_function_recommendation_html(op_stats),
        eager_recommendation_html(page.analysis.host_op_time_eager_percent, page.analysis.device_op_time_eager_percent),
        outside_compilation_recommendation_html(page.analysis.device_op_time_outside_compilation_percent),
        &mut recommendation,
    );
    page.recommendation = recommendation;
    populate_overview_diagnostics(op_stats, &mut page.diagnostics);
    let counters = op_stats.performance_counter_result.clone().unwrap_or_default();
    page.analysis.mxu_utilization_percent = counters.matrix_unit_utilization_percent;
    page.analysis.hbm_utilization_percent = counters.hbm_utilization_percent;
    page
}

fn compute_run_environment(run_environment: &RunEnvironment) -> OverviewPageRunEnvironment {
    OverviewPageRunEnvironment {
        host_count: run_environment.host_count,
        task_count: run_environment.task_count,
        device_type: run_environment.device_type.clone(),
        device_core_count: run_environment.device_core_count,
        replica_count: run_environment.replica_count,
        num_cores_per_replica: run_environment.num_cores_per_replica,
        is_training: run_environment.is_training,
        host_dependent_job_info: run_environment.host_dependent_job_info.clone(),
    }
}

/// TensorCore use of a framework op's GPU kernels (`OpLevelKernelStats`).
#[derive(Debug, Clone, Copy, Default)]
struct OpKernelStats {
    is_op_tensor_core_eligible: bool,
    tensor_core_duration_ns: u64,
}

/// `GroupKernelReportsByOpName` (eligibility from the first report of each op).
fn kernel_stats_by_op_name(db: &KernelStatsDb) -> HashMap<&str, OpKernelStats> {
    let mut by_op: HashMap<&str, OpKernelStats> = HashMap::new();
    for report in &db.reports {
        let stats = by_op.entry(report.op_name.as_str()).or_insert_with(|| OpKernelStats {
            is_op_tensor_core_eligible: report.is_op_tensor_core_eligible,
            tensor_core_duration_ns: 0,
        });
        if report.is_kernel_using_tensor_core {
            stats.tensor_core_duration_ns = stats.tensor_core_duration_ns.wrapping_add(report.total_duration_ns);
        }
    }
    by_op
}

/// `IsOutsideCompilationOp`: host send/recv ops of outside compilation.
fn is_outside_compilation_op(tf_op_fullname: &str, hlo_expression: &str) -> bool {
    tf_op_fullname.ends_with(":XlaSendToHost")
        || tf_op_fullname.ends_with(":XlaRecvFromHost")
        || (hlo_expression.contains("send-done") && hlo_expression.contains("is_host_transfer=true"))
}

/// `ComputeAnalysisResult`: the top-10 device framework ops (self time share, cumulative
/// share, GFLOP/s, TensorCore use), the precision split, and host/device op shares.
pub fn compute_analysis_result(op_stats: &OpStats) -> OverviewPageAnalysis {
    let mut analysis = OverviewPageAnalysis::default();
    let device_tf_db = create_tf_metrics_db_from_device_op_metrics_db(&op_stats.device_op_metrics_db, false);
    let kernel_stats = kernel_stats_by_op_name(&op_stats.kernel_stats_db);
    let total_device_time_ps = device_tf_db.total_time_ps as f64;
    let mut cumulative = 0.0;
    for metrics in sorted_op_metrics_db(&device_tf_db, Some(NUM_TOP_OPS_SHOWN)) {
        let self_time_fraction = safe_divide(metrics.self_time_ps as f64, total_device_time_ps);
        cumulative += self_time_fraction;
        let kernels = kernel_stats.get(metrics.name.as_str());
        analysis.top_device_ops.push(OverviewTfOp {
            name: metrics.name.clone(),
            category: metrics.category.clone(),
            self_time_fraction,
            cumulative_time_fraction: cumulative,
            flop_rate: safe_divide(metrics.flops_v2, pico_to_nano(metrics.time_ps)),
            is_op_tensorcore_eligible: kernels.is_some_and(|k| k.is_op_tensor_core_eligible),
            is_op_using_tensorcore: kernels.is_some_and(|k| k.tensor_core_duration_ns != 0),
        });
    }
    let precision = op_stats.device_op_metrics_db.precision_stats.clone().unwrap_or_default();
    let total_compute_ps = precision.compute_16bit_ps.wrapping_add(precision.compute_32bit_ps) as f64;
    analysis.device_compute_16bit_percent = 100.0 * safe_divide(precision.compute_16bit_ps as f64, total_compute_ps);
    analysis.device_compute_32bit_percent = 100.0 * safe_divide(precision.compute_32bit_ps as f64, total_compute_ps);

    // (occurrences, op time without idle, eager op time)
    let tally = |ops: &[crate::op_stats::OpMetrics]| {
        ops.iter().fold((0u64, 0u64, 0u64), |(count, time, eager), m| {
            let count = count.wrapping_add(u64::from(m.occurrences));
            if is_idle_op(m) {
                return (count, time, eager);
            }
            let eager = if m.is_eager { eager.wrapping_add(m.self_time_ps) } else { eager };
            (count, time.wrapping_add(m.self_time_ps), eager)
        })
    };
    let (num_host_ops, host_time_ps, host_eager_ps) = tally(&op_stats.host_op_metrics_db.metrics_db);
    let (num_device_ops, device_time_ps, device_eager_ps) = tally(&device_tf_db.metrics_db);
    // Outside compilation is read from the HLO ops: their provenance and long name tell it.
    let outside_compilation_ps = op_stats
        .device_op_metrics_db
        .metrics_db
        .iter()
        .filter(|m| is_outside_compilation_op(&m.provenance, &m.long_name))
        .fold(0u64, |sum, m| sum.wrapping_add(m.self_time_ps));
    let num_ops = num_host_ops.wrapping_add(num_device_ops) as f64;
    analysis.host_tf_op_percent = 100.0 * safe_divide(num_host_ops as f64, num_ops);
    analysis.device_tf_op_percent = 100.0 * safe_divide(num_device_ops as f64, num_ops);
    analysis.host_trace_level = op_stats.run_environment.host_trace_level;
    analysis.host_op_time_eager_percent = 100.0 * safe_divide(host_eager_ps as f64, host_time_ps as f64);
    analysis.device_op_time_eager_percent = 100.0 * safe_divide(device_eager_ps as f64, device_time_ps as f64);
    analysis.device_op_time_outside_compilation_percent =
        100.0 * safe_divide(outside_compilation_ps as f64, device_time_ps as f64);
    analysis
}

/// `ComputeTpuAnalysisResult` without performance limits: duty cycle (plain and high
/// confidence) and idle shares.
pub fn compute_tpu_analysis_result(op_stats: &OpStats, analysis: &mut OverviewPageAnalysis) {
    let device_db = &op_stats.device_op_metrics_db;
    let (busy_ps, idle_ps) = (device_db.busy_time_ps, device_db.idle_time_ps);
    let duty_cycle = safe_divide(busy_ps as f64, busy_ps.wrapping_add(idle_ps) as f64) * 100.0;
    analysis.device_duty_cycle_percent = duty_cycle;
    let (busy_hc, idle_hc) = (device_db.busy_time_high_confidence_ps, device_db.idle_time_high_confidence_ps);
    analysis.device_duty_cycle_high_confidence_percent =
        safe_divide(busy_hc as f64, busy_hc.wrapping_add(idle_hc) as f64) * 100.0;
    analysis.idle_time_high_confidence_ps = idle_hc as f64;
    analysis.device_idle_time_percent = idle_time_ratio(device_db) * 100.0;
    analysis.host_idle_time_percent = idle_time_ratio(&op_stats.host_op_metrics_db) * 100.0;
}

/// `GeneratePrecisionStatement`: suggests 16-bit ops when they are under 10% of compute.
fn precision_statement(precision: &PrecisionStats) -> String {
    let total_ps = precision.compute_16bit_ps.wrapping_add(precision.compute_32bit_ps);
    if total_ps == 0 {
        return String::new();
    }
    let percent_16bit = 100.0 * precision.compute_16bit_ps as f64 / total_ps as f64;
    if percent_16bit < LOW_PRECISION_PERCENT_THRESHOLD {
        format!(
            "Only {}% of device computation is 16 bit. So you might want to replace more 32-bit Ops by 16-bit Ops \
             to improve performance (if the reduced accuracy is acceptable).",
            one_digit(percent_16bit)
        )
    } else {
        String::new()
    }
}

/// `ComputeGenericRecommendation`.
fn generic_recommendation(bottleneck: &BottleneckAnalysis, precision: &PrecisionStats) -> GenericRecommendation {
    GenericRecommendation {
        kernel_launch_bottleneck: bottleneck.kernel_launch_classification.clone(),
        kernel_launch_statement: bottleneck.kernel_launch_statement.clone(),
        all_other_bottleneck: bottleneck.all_other_classification.clone(),
        all_other_statement: bottleneck.all_other_statement.clone(),
        precision_statement: precision_statement(precision),
        device_collectives_bottleneck: bottleneck.device_collectives_classification.clone(),
        device_collectives_statement: bottleneck.device_collectives_statement.clone(),
    }
}

/// `SetCommonRecommendation`: bottleneck, statements and the fixed tips.
fn set_common_recommendation(
    bottleneck: &BottleneckAnalysis,
    hardware_type: HardwareType,
    tf_function_statement_html: String,
    eager_statement_html: String,
    outside_compilation_statement_html: String,
    re: &mut OverviewPageRecommendation,
) {
    re.bottleneck = bottleneck.input_classification.clone();
    re.statement = bottleneck.input_statement.clone();
    re.output_statement = String::new();
    re.tf_function_statement_html = tf_function_statement_html;
    re.eager_statement_html = eager_statement_html;
    re.outside_compilation_statement_html = outside_compilation_statement_html;
    re.host_tips = vec![
        "input_pipeline_analyzer (especially Section 3 for the breakdown of input operations on the Host)".into(),
        "trace_viewer (look at the activities on the timeline of each Host Thread near the bottom of the trace view)"
            .into(),
    ];
    let device_name = crate::tools::input_pipeline::hardware_type_name(hardware_type);
    let (timeline_name, op_stats_tool) = if hardware_type == HardwareType::Tpu {
        ("TPU core", "op_profile")
    } else {
        (device_name, "framework_op_stats")
    };
    re.device_tips = vec![
        format!("{op_stats_tool} (identify the time-consuming operations executed on the {device_name})"),
        format!("trace_viewer (look at the activities on the timeline of each {timeline_name} in the trace view)"),
    ];
    re.documentation_tips = vec![
        anchor(
            "https://www.tensorflow.org/guide/data_performance_analysis",
            "Analyze tf.data performance with the TF Profiler",
        ),
        anchor("https://www.tensorflow.org/guide/data_performance", "Better performance with the tf.data API"),
    ];
    re.faq_tips = vec!["Refer to the TF2 Profiler FAQ".into()];
}

fn anchor(url: &str, text: &str) -> String {
    crate::tools::step_breakdown::anchor_element(url, text)
}

/// `TfFunctionRecommendationHtml`: up to three tf-functions whose expensive calls reach
/// 20%, most expensive first (XProf iterates an unordered map and sorts unstably, so
/// equal percentages may come in another order there).
pub fn tf_function_recommendation_html(op_stats: &OpStats) -> String {
    let mut candidates: Vec<(&str, f64)> = op_stats
        .tf_function_db
        .tf_functions
        .iter()
        .filter(|(_, f)| f.expensive_call_percent >= TF_FUNCTION_REPORT_THRESHOLD_IN_PERCENT)
        .map(|(name, f)| (name.as_str(), f.expensive_call_percent))
        .collect();
    if candidates.is_empty() {
        return String::new();
    }
    candidates.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal));
    let shown = candidates.len().min(3);
    let mut functions =
        candidates.iter().take(shown).map(|(name, _)| format!("\"{name}\"")).collect::<Vec<_>>().join(", ");
    if candidates.len() > shown {
        functions.push_str(" and more");
    }
    format!("Expensive tf-functions detected ({functions}) due to either retracing or eager execution.")
}

/// `EagerRecommendationHtml`.
pub fn eager_recommendation_html(host_op_time_eager_percent: f64, device_op_time_eager_percent: f64) -> String {
    let mut recommendation = String::new();
    if host_op_time_eager_percent > EAGER_REPORT_THRESHOLD_IN_PERCENT {
        recommendation.push_str(&format!(
            "{}% of Op time on the host used eager execution. ",
            one_digit(host_op_time_eager_percent)
        ));
    }
    if device_op_time_eager_percent > EAGER_REPORT_THRESHOLD_IN_PERCENT {
        recommendation.push_str(&format!(
            "{}% of Op time on the device used eager execution. ",
            one_digit(device_op_time_eager_percent)
        ));
    }
    if !recommendation.is_empty() {
        recommendation.push_str("Performance could be improved with ");
        recommendation.push_str(&anchor("https://www.tensorflow.org/guide/function", "tf.function."));
    }
    recommendation
}

/// `OutsideCompilationRecommendationHtml`.
pub fn outside_compilation_recommendation_html(device_op_time_outside_compilation_percent: f64) -> String {
    if device_op_time_outside_compilation_percent <= OUTSIDE_COMPILATION_THRESHOLD_IN_PERCENT {
        return String::new();
    }
    format!(
        "{} % of Op time on the device are for outside compilation. Performance could be improved by avoiding \
         outside compilation.",
        one_digit(device_op_time_outside_compilation_percent)
    )
}

/// `StrFormatToPercentage`: `%.1lf%%`, or `unknown` for negative (and NaN) values.
pub fn str_format_to_percentage(num: f64) -> String {
    if num >= 0.0 { format!("{}%", printf_fixed(num, 1)) } else { "unknown".into() }
}

/// The `overview_page` body. XProf's `OverviewPageToJson` joins its six tables with
/// `StrCat("[", …, inference_latency, ", {},", diagnostics, "]")`: the empty object in
/// the sixth place is a literal preceded by a comma *and a space*; each table is
/// nlohmann's `dump()`. Any other shape is printed as `dump()` prints it.
pub fn overview_page_text(value: &Value) -> String {
    const LITERAL_INDEX: usize = 5;
    let Value::Array(items) = value else {
        return nlohmann::dump(value);
    };
    let literal_is_empty_object = matches!(items.get(LITERAL_INDEX), Some(Value::Object(map)) if map.is_empty());
    if !literal_is_empty_object {
        return nlohmann::dump(value);
    }
    let mut out = String::from("[");
    for (index, item) in items.iter().enumerate() {
        if index == LITERAL_INDEX {
            out.push_str(", ");
        } else if index > 0 {
            out.push(',');
        }
        nlohmann::write_value(item, &mut out);
    }
    out.push(']');
    out
}

/// `AddCommonStats`.
fn add_common_stats(table: &mut DataTable, analysis: &OverviewPageAnalysis) {
    table
        .prop("host_trace_level", analysis.host_trace_level.to_string())
        .prop("host_tf_op_percent", str_format_to_percentage(analysis.host_tf_op_percent))
        .prop("device_tf_op_percent", str_format_to_percentage(analysis.device_tf_op_percent))
        .prop("host_op_time_eager_percent", str_format_to_percentage(analysis.host_op_time_eager_percent))
        .prop("device_op_time_eager_percent", str_format_to_percentage(analysis.device_op_time_eager_percent))
        .prop("remark_text", analysis.remark_text.as_str())
        .prop("remark_color", analysis.remark_color.as_str())
        .prop("mxu_utilization_percent", str_format_to_percentage(analysis.mxu_utilization_percent))
        .prop("hbm_utilization_percent", str_format_to_percentage(analysis.hbm_utilization_percent));
    if analysis.program_goodput_percent != 0.0 {
        table.prop("program_goodput_percent", str_format_to_percentage(analysis.program_goodput_percent));
    }
    if analysis.sc_step_time_ms_average != 0.0 {
        table
            .prop("sc_steptime_average", printf_fixed(analysis.sc_step_time_ms_average, 1))
            .prop("sc_infeed_time_avg", printf_fixed(analysis.sc_infeed_time_ms_avg, 1))
            .prop("sc_outfeed_time_avg", printf_fixed(analysis.sc_outfeed_time_ms_avg, 1))
            .prop("sc_idle_time_avg", printf_fixed(analysis.sc_idle_time_ms_avg, 1));
    }
}

/// `GenerateAnalysisResultDataTable`: the GPU table for device types containing "GPU",
/// the TPU table (also used for CPU) otherwise.
fn analysis_table(page: &OverviewPage) -> DataTable {
    let analysis = &page.analysis;
    let mut table = DataTable::new();
    add_common_stats(&mut table, analysis);
    let is_gpu = page.run_environment.device_type.contains("GPU");
    if !is_gpu {
        table
            .prop(
                "flop_rate_utilization_relative_to_roofline",
                str_format_to_percentage(analysis.flop_rate_utilization_relative_to_roofline_percent),
            )
            .prop(
                "memory_bw_utilization_relative_to_hw_limit",
                str_format_to_percentage(analysis.memory_bw_utilization_relative_to_hw_limit_percent),
            )
            .prop("device_idle_time_percent", str_format_to_percentage(analysis.device_idle_time_percent))
            .prop("device_duty_cycle_percent", str_format_to_percentage(analysis.device_duty_cycle_percent))
            .prop(
                "device_duty_cycle_high_confidence_percent",
                str_format_to_percentage(analysis.device_duty_cycle_high_confidence_percent),
            )
            .prop("host_idle_time_percent", str_format_to_percentage(analysis.host_idle_time_percent));
        if analysis.idle_time_high_confidence_ps != 0.0 {
            table.prop("idle_time_high_confidence_ps", six_digits(analysis.idle_time_high_confidence_ps));
        }
        // XProf 2.24 shows the active times when there are (TPU) steps.
        if analysis.active_step_time_ms_average != 0.0 {
            table.prop("active_steptime_ms_average", two_digits(analysis.active_step_time_ms_average));
        }
        if analysis.tc_active_time_ms_average != 0.0 {
            table.prop("tc_active_ms_average", two_digits(analysis.tc_active_time_ms_average));
        }
        if analysis.sc_active_time_ms_average != 0.0 {
            table.prop("sc_active_ms_average", two_digits(analysis.sc_active_time_ms_average));
        }
    }
    table
        .column("selfTimePercent", ColumnType::Number, "Time (%)")
        .column("cumulativeTimePercent", ColumnType::Number, "Cumulative time (%)")
        .column("category", ColumnType::String, "Category")
        .column("operation", ColumnType::String, "Operation");
    if is_gpu {
        table
            .column("flopRate", ColumnType::Number, "GFLOPs/Sec")
            .column("tcEligibility", ColumnType::Boolean, "TensorCore eligibility")
            .column("tcUtilization", ColumnType::Boolean, "Op is using TensorCore");
    } else {
        table.column("flopRate", ColumnType::Number, "Bf16 Normalized Flop Rate(GFLOPs/Sec)");
    }
    for op in &analysis.top_device_ops {
        let mut cells = vec![
            op.self_time_fraction.into(),
            op.cumulative_time_fraction.into(),
            op.category.as_str().into(),
            op.name.as_str().into(),
            op.flop_rate.into(),
        ];
        if is_gpu {
            cells.push(op.is_op_tensorcore_eligible.into());
            cells.push(op.is_op_using_tensorcore.into());
        }
        table.row(cells);
    }
    if is_gpu {
        table
            .prop("device_compute_16bit_percent", str_format_to_percentage(analysis.device_compute_16bit_percent))
            .prop("device_compute_32bit_percent", str_format_to_percentage(analysis.device_compute_32bit_percent));
    }
    table
}

/// `absl::FormatTime(absl::FromUnixNanos(ns), UTC)`: RFC 3339 with the fractional seconds
/// trimmed of trailing zeros, e.g. `2020-05-05T22:42:41.123+00:00`.
pub fn format_unix_nanos_utc(ns: i64) -> String {
    let seconds = ns.div_euclid(1_000_000_000);
    let nanos = ns.rem_euclid(1_000_000_000);
    let days = seconds.div_euclid(86_400);
    let second_of_day = seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let mut text = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
    );
    if nanos != 0 {
        text.push_str(format!(".{nanos:09}").trim_end_matches('0'));
    }
    text.push_str("+00:00");
    text
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `GenerateRunEnvironmentDataTable`.
fn run_environment_table(page: &OverviewPage) -> DataTable {
    let env = &page.run_environment;
    let mut table = DataTable::new();
    for id in ["host_id", "command_line", "start_time", "bns_address"] {
        table.column(id, ColumnType::String, id);
    }
    for job in &env.host_dependent_job_info {
        table.row(vec![
            job.host_id.as_str().into(),
            job.command_line.as_str().into(),
            format_unix_nanos_utc(job.start_time).into(),
            job.bns_address.as_str().into(),
        ]);
    }
    let count_or_unknown = |n: i32| if n >= 0 { n.to_string() } else { "unknown".into() };
    let mut task_count = count_or_unknown(env.task_count);
    if env.task_count > 0 && env.host_count > 0 {
        task_count.push_str(&format!(" (num tasks per host = {})", env.task_count / env.host_count));
    }
    let mut device_core_count = count_or_unknown(env.device_core_count);
    if env.replica_count > 0 && env.num_cores_per_replica > 0 {
        device_core_count.push_str(&format!(
            " (Replica count = {}, num cores per replica = {})",
            env.replica_count, env.num_cores_per_replica
        ));
    }
    table
        .prop("host_count", count_or_unknown(env.host_count))
        .prop("task_count", task_count)
        .prop("device_type", env.device_type.as_str())
        .prop("device_core_count", device_core_count)
        .prop("is_training", env.is_training.to_string());
    table
}

/// `GenerateRecommendationResultDataTable`: tips as rows, statements as properties.
fn recommendation_table(page: &OverviewPage) -> DataTable {
    let re = &page.recommendation;
    let mut table = DataTable::new();
    for id in ["tip_type", "link", "description"] {
        table.column(id, ColumnType::String, id);
    }
    let groups: [(&str, &Vec<String>, &str); 5] = [
        ("faq", &re.faq_tips, "Tool troubleshooting / FAQ"),
        ("host", &re.host_tips, "Next steps for reducing the Host time"),
        ("device", &re.device_tips, "Next steps for reducing the Device time"),
        ("doc", &re.documentation_tips, "Other useful resources"),
        ("inference", &re.inference_tips, "Recommendations for inference run"),
    ];
    for (tip_type, tips, description) in groups {
        for tip in tips {
            table.row(vec![tip_type.into(), tip.as_str().into(), description.into()]);
        }
    }
    let generic = &re.recommendation;
    table
        .prop("bottleneck", re.bottleneck.as_str())
        .prop("statement", re.statement.as_str())
        .prop("kernel_launch_bottleneck", generic.kernel_launch_bottleneck.as_str())
        .prop("kernel_launch_statement", generic.kernel_launch_statement.as_str())
        .prop("all_other_bottleneck", generic.all_other_bottleneck.as_str())
        .prop("all_other_statement", generic.all_other_statement.as_str())
        .prop("precision_statement", generic.precision_statement.as_str())
        .prop("device_collectives_bottleneck", generic.device_collectives_bottleneck.as_str())
        .prop("device_collectives_statement", generic.device_collectives_statement.as_str());
    // Tips the frontend hides given the bottleneck.
    let non_bottleneck_tip_types = match re.bottleneck.as_str() {
        "host" => "device",
        "device" => "host",
        _ => "",
    };
    table.prop("non_bottleneck_tip_types", non_bottleneck_tip_types);
    for tip in &re.input_tips {
        table.row(vec!["input".into(), tip.as_str().into(), "Next steps for reducing the Input time".into()]);
    }
    table
}

/// `GenerateInferenceLatencyDataTable`: an `Avg` row, then one row per percentile
/// (latencies in ms). XProf 2.24.2's `Avg` row is the mean breakdown, the last one
/// (`ComputeInferenceLatencyResult` appends it after the percentiles).
fn inference_latency_table(latency: &OverviewInferenceLatency) -> DataTable {
    let mut table = DataTable::new();
    table
        .column("percentile", ColumnType::String, "percentile")
        .column("hostTimeMs", ColumnType::Number, "Host time (in ms)")
        .column("deviceTimeMs", ColumnType::Number, "Device time (in ms)")
        .column("communicationTimeMs", ColumnType::Number, "Host-device communication time (in ms)")
        .column("totalTimeMs", ColumnType::Number, "Total latency (in ms)");
    let row = |table: &mut DataTable, label: String, b: &OverviewLatencyBreakdown| {
        table.row(vec![
            label.into(),
            (b.host_latency_us / 1e3).into(),
            (b.device_latency_us / 1e3).into(),
            (b.communication_latency_us / 1e3).into(),
            (b.total_latency_us / 1e3).into(),
        ]);
    };
    if let Some(mean) = latency.latency_breakdowns.last() {
        row(&mut table, "Avg".into(), mean);
    }
    for (percentile, breakdown) in latency.percentile_numbers.iter().zip(&latency.latency_breakdowns) {
        row(&mut table, format!("{}%", printf_fixed(*percentile, 1)), breakdown);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op_stats::{OpMetrics, OpMetricsDb};

    #[test]
    fn formats_start_time_like_absl() {
        assert_eq!(format_unix_nanos_utc(0), "1970-01-01T00:00:00+00:00");
        assert_eq!(format_unix_nanos_utc(1_588_718_561_123_000_000), "2020-05-05T22:42:41.123+00:00");
        assert_eq!(format_unix_nanos_utc(-1), "1969-12-31T23:59:59.999999999+00:00");
    }

    #[test]
    fn recommendation_html() {
        assert_eq!(eager_recommendation_html(5.0, 5.0), "");
        assert_eq!(
            eager_recommendation_html(12.34, 0.0),
            "12.3% of Op time on the host used eager execution. Performance could be improved with <a \
             href=\"https://www.tensorflow.org/guide/function\" target=\"_blank\">tf.function.</a>"
        );
        assert_eq!(outside_compilation_recommendation_html(5.0), "");
        assert!(outside_compilation_recommendation_html(5.06).starts_with("5.1 % of Op time"));
        assert_eq!(str_format_to_percentage(f64::NAN), "unknown");
        assert_eq!(str_format_to_percentage(99.95), "100.0%");
        let mut op_stats = OpStats::default();
        for (name, percent) in [("a", 30.0), ("b", 50.0), ("c", 10.0), ("d", 25.0), ("e", 20.0)] {
            op_stats.tf_function_db.tf_functions.insert(
                name.into(),
                crate::op_stats::TfFunction { expensive_call_percent: percent, ..Default::default() },
            );
        }
        assert_eq!(
            tf_function_recommendation_html(&op_stats),
            "Expensive tf-functions detected (\"b\", \"a\", \"d\" and more) due to either retracing or eager \
             execution."
        );
    }

    /// A GPU device database: two HLO ops of one framework op and one without provenance;
    /// the framework op's kernels use TensorCores.
    #[test]
    fn gpu_top_ops_table() {
        let hlo = |name: &str, provenance: &str, self_ps: u64| OpMetrics {
            name: name.into(),
            provenance: provenance.into(),
            category: "fusion".into(),
            self_time_ps: self_ps,
            time_ps: self_ps,
            occurrences: 1,
            flops_v2: 1000.0,
            ..OpMetrics::default()
        };
        let mut op_stats = OpStats {
            device_op_metrics_db: OpMetricsDb {
                metrics_db: vec![
                    hlo("f1", "m/MatMul:MatMul", 3000),
                    hlo("f2", "m/MatMul:MatMul", 1000),
                    hlo("c", "", 4000),
                ],
                total_op_time_ps: 8000,
                total_time_ps: 10000,
                ..OpMetricsDb::default()
            },
            ..OpStats::default()
        };
        op_stats.run_environment.device_type = "GPU".into();
        op_stats.run_environment.device_core_count = 1;
        op_stats.kernel_stats_db.reports.push(crate::op_stats::KernelReport {
            op_name: "m/MatMul".into(),
            is_op_tensor_core_eligible: true,
            is_kernel_using_tensor_core: true,
            total_duration_ns: 5,
            ..Default::default()
        });
        let json = overview_page(&op_stats);
        let rows = &json[0]["rows"];
        // Ties on self time sort by name: "c" before "m/MatMul".
        assert_eq!(rows[0]["c"][3]["v"], "c");
        assert_eq!(rows[0]["c"][0]["v"], 0.5);
        assert_eq!(rows[1]["c"][1]["v"], 1.0);
        assert_eq!(rows[1]["c"][4]["v"], 500.0);
        assert_eq!(rows[1]["c"][5]["v"], true);
        assert_eq!(json[0]["p"]["device_tf_op_percent"], "100.0%");
        assert_eq!(json[3]["p"]["bottleneck"], "unknown");
        assert_eq!(json[6]["rows"][0]["c"][1]["v"].as_str().map(|s| s.starts_with("No step marker")), Some(true));
        assert_eq!(json.as_array().map(Vec::len), Some(7));
    }

    #[test]
    fn inference_latency_rows() {
        let breakdown = |total| OverviewLatencyBreakdown { total_latency_us: total, ..Default::default() };
        let latency = OverviewInferenceLatency {
            percentile_numbers: vec![50.0, 99.9],
            // The percentiles, then the mean (as `ComputeInferenceLatencyResult` orders them).
            latency_breakdowns: vec![breakdown(1000.0), breakdown(3000.0), breakdown(2000.0)],
            ..Default::default()
        };
        let json = inference_latency_table(&latency).to_json();
        let labels: Vec<_> = json["rows"].as_array().into_iter().flatten().map(|r| r["c"][0]["v"].clone()).collect();
        assert_eq!(labels, ["Avg", "50.0%", "99.9%"]);
        assert_eq!(json["rows"][0]["c"][4]["v"], 2.0);
        assert_eq!(json["rows"][2]["c"][4]["v"], 3.0);
    }

    #[test]
    fn overview_page_keeps_the_literal_empty_object() {
        let value = serde_json::json!([{}, {}, {}, {}, {"cols": []}, {}, {"rows": []}]);
        assert_eq!(overview_page_text(&value), r#"[{},{},{},{},{"cols":[]}, {},{"rows":[]}]"#);
        assert_eq!(overview_page_text(&serde_json::json!([1.5])), "[1.5]");
    }

    #[test]
    fn matches_xprof_outputs() {
        let failures = crate::tools::step_breakdown::reference::compare_all("overview_page.json", overview_page);
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
