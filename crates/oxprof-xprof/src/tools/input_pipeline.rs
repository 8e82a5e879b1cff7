//! The input-pipeline analyzer: OpStats → [`InputPipelineAnalysis`] (step-time
//! breakdown per step, bottleneck statements, host input ops) → XProf's five DataTables
//! (port of `xprof/convert/op_stats_to_input_pipeline_analysis.cc` as XProf 2.24.2 renders
//! it).

use crate::op_stats::{
    CoreDetails, GenericStepBreakdown, HardwareType, OpMetrics, OpMetricsDb, OpStats, OpStatsDiagnostics,
    PerCoreStepInfo, StepBreakdown,
};
use crate::tools::step_breakdown::{
    DEFAULT_GPU_LOCAL_CORE_ID, IDLE, SPARSE_CORE_INDEX_START, Stat, StepSummary, anchor_element,
    diagnostics_data_table, event_type, f64_to_u64, pico_to_micro, pico_to_milli, populate_step_diagnostics,
    safe_divide, sorted_op_metrics_db, x86_div,
};
use oxprof_report::{Report, Table, XprofBody, json_of};
use oxprof_wire::cxx_printf::{one_digit, printf_fixed, three_digits, two_digits};
use oxprof_wire::datatable::{ColumnType, DataTable};
use oxprof_wire::nlohmann;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// One step on CPU/GPU (`PerGenericStepDetails`), times in milliseconds.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PerGenericStepDetails {
    /// Step number.
    pub step_number: i32,
    /// Step name (the number when unnamed).
    pub step_name: String,
    /// Step duration.
    pub step_time_ms: f64,
    /// Unaccounted time.
    pub unknown_time_ms: f64,
    /// Host waiting for input.
    pub host_wait_input_ms: f64,
    /// Host-to-device transfers, plus device waiting for the host.
    pub host_to_device_ms: f64,
    /// Device-to-host transfers.
    pub output_ms: f64,
    /// Device compute (16 + 32 bit).
    pub device_compute_ms: f64,
    /// Device-to-device transfers, plus device waiting for devices.
    pub device_to_device_ms: f64,
    /// Collectives.
    pub device_collectives_ms: f64,
    /// Host compute.
    pub host_compute_ms: f64,
    /// Kernel launch.
    pub host_prepare_ms: f64,
    /// Compilation.
    pub host_compile_ms: f64,
}

/// One step across TPU cores (`PerTpuStepDetails`), times in milliseconds.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PerTpuStepDetails {
    /// Step number (from the first core).
    pub step_number: i32,
    /// TensorCore compute: the minimum over cores of step time minus waits.
    pub tc_compute_time_ms: f64,
    /// TensorCore idle not attributed to input.
    pub tc_idle_time_ms: f64,
    /// Average TensorCore outfeed.
    pub tc_outfeed_time_ms: f64,
    /// Maximum TensorCore infeed over cores.
    pub tc_infeed_time_ms: f64,
    /// Infeed % of step time, average over cores.
    #[serde(with = "oxprof_report::non_finite_f64")]
    pub infeed_percent_average: f64,
    /// Infeed %, minimum over cores.
    #[serde(with = "oxprof_report::non_finite_f64")]
    pub infeed_percent_minimum: f64,
    /// Infeed %, maximum over cores.
    #[serde(with = "oxprof_report::non_finite_f64")]
    pub infeed_percent_maximum: f64,
    /// Core with the largest infeed.
    pub coreid_max_infeed_time: u32,
    /// `host:ordinal` of that core.
    pub max_infeed_time_core_name: String,
    /// All-reduce compute (the minimum duration of each all-reduce across cores).
    pub all_reduce_compute_time_ms: f64,
    /// All-reduce synchronization (the rest).
    pub all_reduce_sync_time_ms: f64,
    /// SparseCoreV0 compute.
    pub scv0_compute_time_ms: f64,
    /// SparseCoreV0 infeed.
    pub scv0_infeed_time_ms: f64,
    /// Host send/recv, maximum over cores.
    pub host_transfer_ms: f64,
    /// SparseCore compute.
    pub sc_compute_time_ms: f64,
    /// SparseCore idle.
    pub sc_idle_time_ms: f64,
    /// SparseCore outfeed.
    pub sc_outfeed_time_ms: f64,
    /// SparseCore infeed.
    pub sc_infeed_time_ms: f64,
    /// SparseCore step time.
    pub sc_step_time_ms: f64,
    /// TensorCore active time (XProf 2.24; see [`tpu_active_times`]).
    pub tc_active_time_ms: f64,
    /// SparseCore active time (XProf 2.24).
    pub sc_active_time_ms: f64,
    /// Active step time (XProf 2.24).
    pub active_step_time_ms: f64,
}

/// The per-step details: generic (CPU/GPU) or TPU (`repeated Any step_details`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepDetails {
    /// CPU/GPU.
    Generic(Vec<PerGenericStepDetails>),
    /// TPU.
    Tpu(Vec<PerTpuStepDetails>),
}

impl Default for StepDetails {
    fn default() -> Self {
        StepDetails::Generic(Vec::new())
    }
}

impl StepDetails {
    /// Number of steps.
    pub fn len(&self) -> usize {
        match self {
            StepDetails::Generic(steps) => steps.len(),
            StepDetails::Tpu(steps) => steps.len(),
        }
    }

    /// No steps.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `GenericStepTimeBreakdown`: summaries over steps, in milliseconds.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GenericStepTimeBreakdown {
    /// Unaccounted.
    pub unknown_time_ms_summary: StepSummary,
    /// Host waiting for input.
    pub host_wait_input_ms_summary: StepSummary,
    /// Host to device.
    pub host_to_device_ms_summary: StepSummary,
    /// Input (wait + transfer).
    pub input_ms_summary: StepSummary,
    /// Output.
    pub output_ms_summary: StepSummary,
    /// Device compute.
    pub device_compute_ms_summary: StepSummary,
    /// Device to device.
    pub device_to_device_ms_summary: StepSummary,
    /// Collectives.
    pub device_collectives_ms_summary: StepSummary,
    /// Host compute.
    pub host_compute_ms_summary: StepSummary,
    /// Kernel launch.
    pub host_prepare_ms_summary: StepSummary,
    /// Compilation.
    pub host_compile_ms_summary: StepSummary,
}

/// `SparseCoreStepSummary`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SparseCoreStepSummary {
    /// Compute.
    pub sc_compute_ms_summary: StepSummary,
    /// Infeed.
    pub sc_infeed_ms_summary: StepSummary,
    /// Outfeed.
    pub sc_outfeed_ms_summary: StepSummary,
    /// Idle.
    pub sc_idle_ms_summary: StepSummary,
    /// Step time.
    pub sc_step_time_ms_summary: StepSummary,
    /// Active time (XProf 2.24).
    pub sc_active_ms_summary: StepSummary,
}

/// `TpuStepTimeBreakdown`: summaries over steps, in milliseconds.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TpuStepTimeBreakdown {
    /// TensorCore compute.
    pub tc_compute_ms_summary: StepSummary,
    /// SparseCoreV0 compute.
    pub scv0_compute_ms_summary: StepSummary,
    /// TensorCore infeed.
    pub tc_infeed_ms_summary: StepSummary,
    /// TensorCore outfeed.
    pub tc_outfeed_ms_summary: StepSummary,
    /// SparseCoreV0 infeed.
    pub scv0_infeed_ms_summary: StepSummary,
    /// TensorCore idle.
    pub tc_idle_ms_summary: StepSummary,
    /// Host transfer.
    pub host_transfer_ms_summary: StepSummary,
    /// Present when a SparseCore was profiled.
    pub sparse_core_step_summary: Option<SparseCoreStepSummary>,
    /// TensorCore active time (XProf 2.24).
    pub tc_active_ms_summary: StepSummary,
    /// Active step time (XProf 2.24).
    pub active_step_time_ms_summary: StepSummary,
}

/// The step-time breakdown (`Any step_time_breakdown`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepTimeBreakdown {
    /// CPU/GPU.
    Generic(GenericStepTimeBreakdown),
    /// TPU.
    Tpu(TpuStepTimeBreakdown),
}

impl Default for StepTimeBreakdown {
    fn default() -> Self {
        StepTimeBreakdown::Generic(GenericStepTimeBreakdown::default())
    }
}

/// `InputTimeBreakdown`: host input time by kind, in microseconds.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct InputTimeBreakdown {
    /// Reading files on demand.
    pub demanded_file_read_us: f64,
    /// Reading files in advance (prefetch, interleave, cache, parallel map).
    pub advanced_file_read_us: f64,
    /// Preprocessing.
    pub preprocessing_us: f64,
    /// Enqueuing to the device.
    pub enqueue_us: f64,
    /// The rest of the non-enqueue time.
    pub unclassified_non_enqueue_us: f64,
}

/// `InputOpDetails`: one host input op.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct InputOpDetails {
    /// Name.
    pub op_name: String,
    /// Occurrences.
    pub count: u64,
    /// Total time.
    pub time_in_ms: f64,
    /// % of all input ops' self time.
    pub time_in_percent: f64,
    /// Self time.
    pub self_time_in_ms: f64,
    /// Self time % of all input ops' self time.
    pub self_time_in_percent: f64,
    /// `Enqueue`, `Demanded file read`, `Advanced file read`, `Preprocessing`, `Unknown`.
    pub category: String,
}

/// `BottleneckAnalysis` (CPU/GPU).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BottleneckAnalysis {
    /// Input % of step time.
    pub input_percent: f64,
    /// Output %.
    pub output_percent: f64,
    /// Idle % (everything that is not input, output, compute or collectives).
    pub idle_percent: f64,
    /// Device compute %.
    pub compute_percent: f64,
    /// `host`, `both`, `device` or `unknown`.
    pub input_classification: String,
    /// Input statement.
    pub input_statement: String,
    /// `high`, `moderate` or `no`.
    pub kernel_launch_classification: String,
    /// Kernel-launch statement.
    pub kernel_launch_statement: String,
    /// `high`, `moderate` or `no`.
    pub all_other_classification: String,
    /// All-other statement.
    pub all_other_statement: String,
    /// `high`, `moderate` or `no`.
    pub device_collectives_classification: String,
    /// Collectives statement.
    pub device_collectives_statement: String,
}

/// `TpuBottleneckAnalysis`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TpuBottleneckAnalysis {
    /// Input %.
    pub input_percent: f64,
    /// `host`, `both`, `device` or `unknown`.
    pub input_classification: String,
    /// Input statement.
    pub input_statement: String,
    /// Output %.
    pub output_percent: f64,
    /// Output classification.
    pub output_classification: String,
    /// Output statement.
    pub output_statement: String,
    /// TensorCore idle %.
    pub tc_idle_percent: f64,
    /// `yes` or `no`.
    pub tc_idle_classification: String,
    /// Idle statement.
    pub tc_idle_statement: String,
    /// `high`, `moderate` or `no`.
    pub scv0_classification: String,
    /// SparseCoreV0 statement.
    pub scv0_statement: String,
    /// `yes` or `no`.
    pub all_reduce_classification: String,
    /// All-reduce statement.
    pub all_reduce_statement: String,
    /// Compute %.
    pub compute_percent: f64,
}

/// The bottleneck analysis (`Any bottleneck_analysis`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bottleneck {
    /// CPU/GPU.
    Generic(BottleneckAnalysis),
    /// TPU.
    Tpu(TpuBottleneckAnalysis),
}

impl Default for Bottleneck {
    fn default() -> Self {
        Bottleneck::Generic(BottleneckAnalysis::default())
    }
}

/// `InputPipelineAnalysisRecommendation`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct InputPipelineAnalysisRecommendation {
    /// Fixed tf.data advice (HTML).
    pub details: Vec<String>,
    /// The bottleneck analysis.
    pub bottleneck_analysis: Bottleneck,
    /// What to look at next (HTML).
    pub summary_next_step: String,
}

/// The `input_pipeline_analyzer` report (XProf's `InputPipelineAnalysisResult`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct InputPipelineAnalysis {
    /// TPU result (`tag`).
    pub tag: bool,
    /// `HardwareType` name (`CPU_ONLY`, `GPU`, `TPU`, `UNKNOWN_HARDWARE`).
    pub hardware_type: String,
    /// Step time in ms.
    pub step_time_summary: StepSummary,
    /// Input % of step time.
    pub input_percent_summary: StepSummary,
    /// Input % overall.
    pub input_percent: f64,
    /// Output % overall.
    pub output_percent: f64,
    /// Idle % overall.
    pub idle_percent: f64,
    /// Compute % overall.
    pub compute_percent: f64,
    /// Per step.
    pub step_details: StepDetails,
    /// Host input time by kind.
    pub input_time_breakdown: InputTimeBreakdown,
    /// Host input ops.
    pub input_op_details: Vec<InputOpDetails>,
    /// Recommendation.
    pub recommendation: InputPipelineAnalysisRecommendation,
    /// Summaries of the step breakdown.
    pub step_time_breakdown: StepTimeBreakdown,
    /// Diagnostics.
    pub diagnostics: OpStatsDiagnostics,
}

// Thresholds (percent of step time) of the bottleneck classifications.
const MODERATELY_SPARSE_CORE_V0_BOUND: f64 = 10.0;
const ALL_REDUCE_BOUND: f64 = 6.0;
const TC_IDLE_THRESHOLD: f64 = 3.0;
const MODERATELY_INFEED_BOUND: f64 = 5.0;
const HIGHLY_INFEED_BOUND: f64 = 20.0;
const MODERATELY_OUTFEED_BOUND: f64 = 5.0;
const HIGHLY_OUTFEED_BOUND: f64 = 20.0;
const MODERATELY_KERNEL_LAUNCH_BOUND: f64 = 3.0;
const HIGHLY_KERNEL_LAUNCH_BOUND: f64 = 15.0;
const MODERATELY_ALL_OTHER_BOUND: f64 = 3.0;
const HIGHLY_ALL_OTHER_BOUND: f64 = 15.0;
const MODERATELY_DEVICE_COLLECTIVES_BOUND: f64 = 3.0;
const HIGHLY_DEVICE_COLLECTIVES_BOUND: f64 = 15.0;
const HOST_ANALYSIS_SECTION_NUMBER: i32 = 3;
const NUM_PS_PER_MS: f64 = 1_000_000_000.0;

const MULTIPLE_STEPS_IN_TF_FUNCTION_DOC: &str =
    "https://www.tensorflow.org/guide/tpu#improving_performance_by_multiple_steps_within_tffunction";
const PROFILE_ALL_HOSTS_DOC: &str = "https://cloud.google.com/tpu/docs/troubleshooting/troubleshoot-multislice";
const SPARSE_CORE_V0_NAME: &str = "SparseCoreV0";
const ALL_OTHERS_PYTHON_EXPLANATION: &str =
    " % of the total step time sampled is spent on 'All Others' time. This could be due to Python execution overhead.";
const KERNEL_LAUNCH_TF_DATA_CONTENTION: &str = " It could be due to CPU contention with tf.data. In this case, you may \
try to set the environment variable TF_GPU_THREAD_MODE=gpu_private.";
const NO_STEP_TIME_STATEMENT: &str =
    "No step time measured. Therefore we cannot tell where the performance bottleneck is.";

// HLO categories of the TPU step breakdown.
const HLO_INFEED: &str = "infeed";
const HLO_OUTFEED: &str = "outfeed";
const HLO_ALL_REDUCE: &str = "all-reduce";
const HLO_ALL_REDUCE_FUSION: &str = "all-reduce fusion";
const HLO_ALL_TO_ALL: &str = "all-to-all";
const HLO_SEND: &str = "send";
const HLO_SEND_DONE: &str = "send-done";
const HLO_RECV: &str = "recv";
const HLO_RECV_DONE: &str = "recv-done";
const HLO_HOST_SEND: &str = "host send";
const HLO_HOST_SEND_DONE: &str = "host send-done";
const HLO_HOST_RECV: &str = "host recv";
const HLO_HOST_RECV_DONE: &str = "host recv-done";
const HLO_MEGACORE_FUSION: &str = "megacore fusion";
const HLO_SPARSE_CORE_V0_INFEED: &str = "sparsecorev0 infeed";
const HLO_SPARSE_CORE_V0_OUTFEED: &str = "sparsecorev0 outfeed";
const HLO_SPARSE_CORE_V0_INFEED_WAIT: &str = "sparsecorev0 infeed wait";
const HLO_SPARSE_CORE_V0_INFEED_TRANSFORM: &str = "sparsecorev0 infeed transform";

/// `HardwareType_Name`.
pub fn hardware_type_name(hardware_type: HardwareType) -> &'static str {
    match hardware_type {
        HardwareType::Unknown => "UNKNOWN_HARDWARE",
        HardwareType::CpuOnly => "CPU_ONLY",
        HardwareType::Gpu => "GPU",
        HardwareType::Tpu => "TPU",
    }
}

/// The input-pipeline analyzer's JSON value: `[max-infeed-core table, step-time table,
/// host input-op table, recommendation table, diagnostics table]`.
pub fn input_pipeline_analyzer(op_stats: &OpStats) -> Value {
    InputPipelineAnalysis::from_op_stats(op_stats).xprof_json()
}

impl InputPipelineAnalysis {
    /// The report of `op_stats` (see [`convert_op_stats_to_input_pipeline_analysis`]).
    pub fn from_op_stats(op_stats: &OpStats) -> InputPipelineAnalysis {
        convert_op_stats_to_input_pipeline_analysis(op_stats)
    }

    /// XProf's five DataTables: max-infeed core, step time, host input ops,
    /// recommendation, diagnostics.
    pub fn data_tables(&self) -> [DataTable; 5] {
        [
            max_infeed_core_table(self),
            input_pipeline_analysis_table(self),
            host_table(self),
            recommendation_table(self),
            diagnostics_data_table(&self.diagnostics),
        ]
    }

    /// XProf's JSON value of the body.
    pub fn xprof_json(&self) -> Value {
        Value::Array(self.data_tables().iter().map(DataTable::to_json).collect())
    }
}

/// Names of [`InputPipelineAnalysis::data_tables`] as [`Table`]s.
const TABLE_NAMES: [&str; 5] = ["max_infeed_core", "step_time", "input_ops", "recommendation", "diagnostics"];

impl Report for InputPipelineAnalysis {
    fn xprof_body(&self) -> XprofBody {
        XprofBody::json(nlohmann::dump(&self.xprof_json()))
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    fn tables(&self) -> Vec<Table> {
        TABLE_NAMES.iter().zip(self.data_tables()).map(|(name, table)| Table::from_data_table(name, &table)).collect()
    }
}

/// `ConvertOpStatsToInputPipelineAnalysis`.
pub fn convert_op_stats_to_input_pipeline_analysis(op_stats: &OpStats) -> InputPipelineAnalysis {
    let hardware_type = op_stats.run_environment.hardware_type;
    let steps = &op_stats.step_db.step_sequence;
    let mut result = if hardware_type == HardwareType::Tpu {
        compute_tpu_input_pipeline_analysis_result(steps, &op_stats.core_id_to_details)
    } else {
        compute_generic_input_pipeline_analysis_result(steps)
    };
    result.hardware_type = hardware_type_name(hardware_type).to_string();
    populate_step_diagnostics(op_stats, &mut result.diagnostics);
    generate_host_result(&op_stats.host_op_metrics_db, &mut result);

    let mut recommendation = generate_recommendation();
    if hardware_type == HardwareType::Tpu {
        let bottleneck = compute_tpu_bottleneck_analysis(true, &result);
        result.input_percent = bottleneck.input_percent;
        result.output_percent = bottleneck.output_percent;
        result.idle_percent = bottleneck.tc_idle_percent;
        result.compute_percent = bottleneck.compute_percent;
        recommendation.summary_next_step =
            summary_next_step(&bottleneck.input_classification, &result.input_time_breakdown);
        recommendation.bottleneck_analysis = Bottleneck::Tpu(bottleneck);
    } else {
        let bottleneck = compute_bottleneck_analysis(&result.input_time_breakdown, &result.step_details);
        result.input_percent = bottleneck.input_percent;
        result.output_percent = bottleneck.output_percent;
        result.idle_percent = bottleneck.idle_percent;
        result.compute_percent = bottleneck.compute_percent;
        recommendation.summary_next_step =
            summary_next_step(&bottleneck.input_classification, &result.input_time_breakdown);
        recommendation.bottleneck_analysis = Bottleneck::Generic(bottleneck);
    }
    result.recommendation = recommendation;
    result
}

fn type_ms(breakdown: &GenericStepBreakdown, event: i32) -> f64 {
    pico_to_milli(breakdown.type_ps.get(&event).copied().unwrap_or(0))
}

/// `ComputeStepTimeSummaryInMs`: each step's time is its slowest TensorCore's (SparseCores
/// excluded; 0 for a step without cores).
pub fn compute_step_time_summary_in_ms(steps: &[PerCoreStepInfo]) -> StepSummary {
    let mut step_times_ms = Stat::<f64>::default();
    for step in steps {
        let mut slowest_ms = 0.0_f64;
        for (&core_id, info) in &step.step_info_per_core {
            if core_id >= SPARSE_CORE_INDEX_START {
                continue;
            }
            let ms = info.duration_ps as f64 / NUM_PS_PER_MS;
            slowest_ms = if ms < slowest_ms { slowest_ms } else { ms };
        }
        step_times_ms.update(slowest_ms);
    }
    StepSummary::from_stat(&step_times_ms)
}

/// `ComputeGenericInputPipelineAnalysisResult`: one `PerGenericStepDetails` per step that
/// has an entry for core 1 (where CPU/GPU steps live), from its `type_ps` breakdown.
fn compute_generic_input_pipeline_analysis_result(steps: &[PerCoreStepInfo]) -> InputPipelineAnalysis {
    let mut details_list = Vec::new();
    let mut input_percent = Stat::<f64>::default();
    for step in steps {
        let Some(info) = step.step_info_per_core.get(&DEFAULT_GPU_LOCAL_CORE_ID) else { continue };
        let empty = GenericStepBreakdown::default();
        let generic = match &info.step_breakdown {
            Some(StepBreakdown::Generic(generic)) => generic,
            None => &empty,
        };
        let details = PerGenericStepDetails {
            step_number: info.step_num as i32,
            step_name: if info.step_name.is_empty() { info.step_num.to_string() } else { info.step_name.clone() },
            step_time_ms: pico_to_milli(info.duration_ps),
            unknown_time_ms: type_ms(generic, event_type::UNKNOWN_TIME),
            host_wait_input_ms: type_ms(generic, event_type::HOST_WAIT_INPUT),
            host_to_device_ms: type_ms(generic, event_type::HOST_TO_DEVICE)
                + type_ms(generic, event_type::DEVICE_WAIT_HOST),
            output_ms: type_ms(generic, event_type::DEVICE_TO_HOST),
            device_compute_ms: type_ms(generic, event_type::DEVICE_COMPUTE_16)
                + type_ms(generic, event_type::DEVICE_COMPUTE_32),
            device_to_device_ms: type_ms(generic, event_type::DEVICE_TO_DEVICE)
                + type_ms(generic, event_type::DEVICE_WAIT_DEVICE),
            device_collectives_ms: type_ms(generic, event_type::DEVICE_COLLECTIVES),
            host_compute_ms: type_ms(generic, event_type::HOST_COMPUTE),
            host_prepare_ms: type_ms(generic, event_type::HOST_PREPARE),
            host_compile_ms: type_ms(generic, event_type::HOST_COMPILE),
        };
        input_percent
            .update(100.0 * safe_divide(details.host_wait_input_ms + details.host_to_device_ms, details.step_time_ms));
        details_list.push(details);
    }
    let breakdown = compute_generic_step_time_breakdown_in_ms(&details_list);
    InputPipelineAnalysis {
        tag: false,
        step_time_summary: compute_step_time_summary_in_ms(steps),
        input_percent_summary: StepSummary::from_stat(&input_percent),
        step_details: StepDetails::Generic(details_list),
        step_time_breakdown: StepTimeBreakdown::Generic(breakdown),
        ..InputPipelineAnalysis::default()
    }
}

fn compute_generic_step_time_breakdown_in_ms(steps: &[PerGenericStepDetails]) -> GenericStepTimeBreakdown {
    let mut stats = [Stat::<f64>::default(); 11];
    for d in steps {
        let values = [
            d.unknown_time_ms,
            d.host_wait_input_ms,
            d.host_to_device_ms,
            d.host_wait_input_ms + d.host_to_device_ms,
            d.output_ms,
            d.device_compute_ms,
            d.device_to_device_ms,
            d.device_collectives_ms,
            d.host_compute_ms,
            d.host_prepare_ms,
            d.host_compile_ms,
        ];
        for (stat, value) in stats.iter_mut().zip(values) {
            stat.update(value);
        }
    }
    let [unknown, wait_input, to_device, input, output, compute, d2d, collectives, host_compute, prepare, compile] =
        stats.map(|stat| StepSummary::from_stat(&stat));
    GenericStepTimeBreakdown {
        unknown_time_ms_summary: unknown,
        host_wait_input_ms_summary: wait_input,
        host_to_device_ms_summary: to_device,
        input_ms_summary: input,
        output_ms_summary: output,
        device_compute_ms_summary: compute,
        device_to_device_ms_summary: d2d,
        device_collectives_ms_summary: collectives,
        host_compute_ms_summary: host_compute,
        host_prepare_ms_summary: prepare,
        host_compile_ms_summary: compile,
    }
}

/// `TpuStepBreakdown`: one TensorCore's step split by HLO category, in picoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct TpuStepBreakdown {
    infeed_duration_ps: u64,
    host_outfeed_ps: u64,
    wait_for_scv0_duration_ps: u64,
    scv0_infeed_transform_ps: u64,
    scv0_outfeed_ps: u64,
    crs_duration_ps: u64,
    send_duration_ps: u64,
    recv_duration_ps: u64,
    host_send_duration_ps: u64,
    host_recv_duration_ps: u64,
    wait_for_megacore_fusion_peer_duration_ps: u64,
    high_flops_compute_ps: u64,
    tc_idle_ps: u64,
    tc_busy_ps: u64,
    /// XProf 2.24's TensorCore active time.
    tc_active_ps: u64,
    /// Never set from an XSpace-derived step; kept for the formulas.
    scv0_infeed_percent: f64,
}

impl TpuStepBreakdown {
    fn scv0_infeed_duration_ps(&self) -> u64 {
        f64_to_u64(self.wait_for_scv0_duration_ps as f64 * self.scv0_infeed_percent / 100.0)
    }

    fn scv0_compute_duration_ps(&self) -> u64 {
        self.wait_for_scv0_duration_ps.wrapping_sub(self.scv0_infeed_duration_ps())
    }

    fn tc_plus_scv0_infeed_duration_ps(&self) -> u64 {
        self.infeed_duration_ps.wrapping_add(self.scv0_infeed_duration_ps())
    }

    fn host_send_recv_duration_ps(&self) -> u64 {
        self.host_send_duration_ps.wrapping_add(self.host_recv_duration_ps)
    }

    /// Step time minus the waits for host or SparseCoreV0, 0 when the waits exceed it.
    ///
    /// The waits add up in unsigned arithmetic, idle being `step − Σ categories`: when a
    /// core's ops outlast its step, its idle wraps to a huge value, and the sum wraps back
    /// only if other waits exceed the overrun. XProf 2.24.2 then reports 0 rather than a
    /// wrapped difference (observed on TPU profiles with such steps).
    fn optimal_step_time_ps(&self, step_time_ps: u64) -> u64 {
        let waits = self
            .infeed_duration_ps
            .wrapping_add(self.host_outfeed_ps)
            .wrapping_add(self.host_send_recv_duration_ps())
            .wrapping_add(self.tc_idle_ps)
            .wrapping_add(self.wait_for_scv0_duration_ps);
        step_time_ps.saturating_sub(waits)
    }
}

/// `ProfileTimeBreakdown` reduced to what the TPU step breakdown reads.
struct ProfileTimeBreakdown {
    time_ps_by_category: HashMap<String, u64>,
    total_time_ps: u64,
    profile_time_ps: u64,
}

impl ProfileTimeBreakdown {
    /// A core's step: its categories except IDLE (idle is what they leave of the step),
    /// with SparseCoreV0 infeed split into wait and transform.
    fn from_generic(generic: &GenericStepBreakdown, step_time_ps: u64) -> ProfileTimeBreakdown {
        let mut breakdown = ProfileTimeBreakdown {
            time_ps_by_category: HashMap::new(),
            total_time_ps: 0,
            profile_time_ps: step_time_ps,
        };
        for (category, &time_ps) in &generic.category_ps {
            if category == IDLE {
                continue;
            }
            let slot = breakdown.time_ps_by_category.entry(category.clone()).or_insert(0);
            *slot = slot.wrapping_add(time_ps);
            breakdown.total_time_ps = breakdown.total_time_ps.wrapping_add(time_ps);
        }
        breakdown.breakdown_sparse_core_v0_infeed();
        breakdown
    }

    fn category(&self, category: &str) -> u64 {
        self.time_ps_by_category.get(category).copied().unwrap_or(0)
    }

    fn categories(&self, categories: &[&str]) -> u64 {
        categories.iter().fold(0u64, |sum, category| sum.wrapping_add(self.category(category)))
    }

    /// Splits SparseCoreV0 infeed into the part matched by outfeed (transform) and the
    /// rest (wait).
    fn breakdown_sparse_core_v0_infeed(&mut self) {
        let infeed_ps = self.time_ps_by_category.remove(HLO_SPARSE_CORE_V0_INFEED).unwrap_or(0);
        if infeed_ps == 0 {
            return;
        }
        let transform_ps = infeed_ps.min(self.category(HLO_SPARSE_CORE_V0_OUTFEED));
        self.time_ps_by_category.insert(HLO_SPARSE_CORE_V0_INFEED_WAIT.into(), infeed_ps - transform_ps);
        self.time_ps_by_category.insert(HLO_SPARSE_CORE_V0_INFEED_TRANSFORM.into(), transform_ps);
    }

    fn idle_time_ps(&self) -> u64 {
        self.profile_time_ps.wrapping_sub(self.total_time_ps)
    }

    /// XProf 2.24's active (busy) time: the step minus its off-duty time (idle, infeed,
    /// outfeed, host send/recv, megacore fusion) and SparseCoreV0 waits, in signed
    /// arithmetic with negative off-duty time (ops outlasting the step) taken as 0 and a
    /// negative result as 0 (observed on XProf 2.24.2's TPU outputs).
    fn active_time_ps(&self) -> u64 {
        let profile = i128::from(self.profile_time_ps);
        let off_duty = (profile - i128::from(self.total_time_ps) + i128::from(self.off_duty_categories_ps())).max(0);
        let active = profile - off_duty - i128::from(self.category(HLO_SPARSE_CORE_V0_INFEED_WAIT));
        u64::try_from(active.max(0)).unwrap_or(0)
    }

    fn off_duty_categories_ps(&self) -> u64 {
        self.categories(&[
            HLO_INFEED,
            HLO_OUTFEED,
            HLO_HOST_SEND,
            HLO_HOST_SEND_DONE,
            HLO_HOST_RECV,
            HLO_HOST_RECV_DONE,
            HLO_MEGACORE_FUSION,
        ])
    }

    fn off_duty_time_ps(&self) -> u64 {
        self.idle_time_ps().wrapping_add(self.off_duty_categories_ps())
    }
}

/// `ConvertGenericStepBreakdownToTpuStepBreakdown`: a TensorCore's per-category times
/// (IDLE left out: idle is what the categories do not cover of the step).
fn tpu_step_breakdown_from_generic(generic: &GenericStepBreakdown, step_time_ps: u64) -> TpuStepBreakdown {
    let breakdown = ProfileTimeBreakdown::from_generic(generic, step_time_ps);
    let wait_for_scv0 = breakdown.category(HLO_SPARSE_CORE_V0_INFEED_WAIT);
    TpuStepBreakdown {
        infeed_duration_ps: breakdown.category(HLO_INFEED),
        host_outfeed_ps: breakdown.category(HLO_OUTFEED),
        wait_for_scv0_duration_ps: wait_for_scv0,
        scv0_infeed_transform_ps: breakdown.category(HLO_SPARSE_CORE_V0_INFEED_TRANSFORM),
        scv0_outfeed_ps: breakdown.category(HLO_SPARSE_CORE_V0_OUTFEED),
        crs_duration_ps: breakdown.categories(&[HLO_ALL_REDUCE, HLO_ALL_REDUCE_FUSION, HLO_ALL_TO_ALL]),
        send_duration_ps: breakdown.categories(&[HLO_SEND, HLO_SEND_DONE]),
        recv_duration_ps: breakdown.categories(&[HLO_RECV, HLO_RECV_DONE]),
        host_send_duration_ps: breakdown.categories(&[HLO_HOST_SEND, HLO_HOST_SEND_DONE]),
        host_recv_duration_ps: breakdown.categories(&[HLO_HOST_RECV, HLO_HOST_RECV_DONE]),
        wait_for_megacore_fusion_peer_duration_ps: breakdown.category(HLO_MEGACORE_FUSION),
        high_flops_compute_ps: breakdown.categories(&[
            "convolution",
            "convolution base-dilated",
            "convolution window-dilated",
            "convolution fusion",
            "output fusion",
        ]),
        tc_idle_ps: breakdown.idle_time_ps(),
        tc_busy_ps: step_time_ps.wrapping_sub(breakdown.off_duty_time_ps()).wrapping_sub(wait_for_scv0),
        tc_active_ps: breakdown.active_time_ps(),
        scv0_infeed_percent: 0.0,
    }
}

/// `HasTpuInfeedOp`: a device op of the host or SparseCoreV0 infeed category.
fn has_tpu_infeed_op(device_db: &OpMetricsDb) -> bool {
    device_db.metrics_db.iter().any(|op| op.category == HLO_INFEED || op.category == HLO_SPARSE_CORE_V0_INFEED)
}

/// `TotalInputPs`: a host step's time waiting for input or sending it to the device.
fn total_input_ps(step: &crate::op_stats::event_span::StepDetails) -> u64 {
    use crate::op_stats::event_span::EventType;
    step.events()
        .iter()
        .filter(|e| matches!(e.event_type, EventType::HostWaitInput | EventType::HostToDevice))
        .fold(0u64, |sum, e| sum.wrapping_add(e.span.duration_ps))
}

/// `MayFixTpuStepAnalysis`: when the TensorCores get their input without infeed ops, the
/// host's input time of a step (waiting for input, sending it) explains part of the cores'
/// idle time: that share (host input time ÷ the step's TensorCore idle time, at most 1)
/// of each TensorCore's `IDLE` moves to the `infeed` category. Steps are matched by step
/// number against the host's step events (an approximation XProf makes too).
pub fn may_fix_tpu_step_analysis(
    host_step_events: &crate::op_stats::event_span::StepEvents,
    device_db: &OpMetricsDb,
    step_db: &mut crate::op_stats::StepDatabaseResult,
    core_details: &BTreeMap<u32, CoreDetails>,
) {
    if has_tpu_infeed_op(device_db) {
        return;
    }
    for step in &mut step_db.step_sequence {
        let Some(host_step) = host_step_events.get(&i64::from(step.step_num)) else { continue };
        let input_ps = total_input_ps(host_step);
        if input_ps == 0 {
            continue;
        }
        let tc_idle_ms = tpu_step_across_cores(step, core_details).tc_idle_time_ms;
        let ratio = safe_divide(pico_to_milli(input_ps), tc_idle_ms).min(1.0);
        for (&core_id, info) in &mut step.step_info_per_core {
            if core_id >= SPARSE_CORE_INDEX_START {
                continue;
            }
            let Some(StepBreakdown::Generic(generic)) = &mut info.step_breakdown else { continue };
            // XProf takes both map slots by reference, creating them when absent.
            let idle_ps = *generic.category_ps.entry(IDLE.to_string()).or_insert(0);
            let infeed = generic.category_ps.entry(HLO_INFEED.to_string()).or_insert(0);
            if idle_ps > 0 {
                // `uint64 = uint64 * double` truncates.
                *infeed = (idle_ps as f64 * ratio) as u64;
                let moved = *infeed;
                generic.category_ps.insert(IDLE.to_string(), idle_ps.wrapping_sub(moved));
            }
        }
    }
}

/// Compute and synchronization parts of one core's all-reduces in a step.
#[derive(Debug, Clone, Copy, Default)]
struct AllReduceBreakdown {
    compute_duration_ps: u64,
    sync_duration_ps: u64,
}

impl AllReduceBreakdown {
    fn duration_ps(&self) -> u64 {
        self.compute_duration_ps.wrapping_add(self.sync_duration_ps)
    }
}

/// `ComputePerStepAllReduceBreakdownAcrossCores`: each all-reduce's fastest duration
/// across cores is compute; what a core spends beyond that is synchronization. Cores
/// summarised by oxprof (a pod's partials) add the same sums, a list at a time.
fn all_reduce_breakdown_across_cores(step: &PerCoreStepInfo) -> HashMap<u32, AllReduceBreakdown> {
    let summary = step.all_reduce_summary.as_ref();
    let mut min_duration_by_id: HashMap<u64, u64> = HashMap::new();
    for (&id, &duration) in summary.into_iter().flat_map(|s| &s.min_duration_ps) {
        min_duration_by_id.insert(id, duration);
    }
    for db in step.all_reduce_db_per_core.values() {
        for all_reduce in &db.all_reduce_info {
            let duration = all_reduce.end_time_ps.wrapping_sub(all_reduce.start_time_ps);
            let min = min_duration_by_id.entry(all_reduce.id).or_insert(duration);
            *min = (*min).min(duration);
        }
    }
    let min_of = |id: &u64| min_duration_by_id.get(id).copied().unwrap_or(0);
    let mut result = HashMap::new();
    for (&core_id, db) in &step.all_reduce_db_per_core {
        let breakdown: &mut AllReduceBreakdown = result.entry(core_id).or_default();
        for all_reduce in &db.all_reduce_info {
            let duration = all_reduce.end_time_ps.wrapping_sub(all_reduce.start_time_ps);
            let min = min_of(&all_reduce.id);
            breakdown.compute_duration_ps = breakdown.compute_duration_ps.wrapping_add(min);
            breakdown.sync_duration_ps = breakdown.sync_duration_ps.wrapping_add(duration.wrapping_sub(min));
        }
    }
    if let Some(summary) = summary {
        // Σ (duration − min) = Σ duration − Σ min in wrapping arithmetic: the same sync time.
        let mut list_compute: Vec<Option<u64>> = vec![None; summary.id_lists.len()];
        for (&core_id, core) in &summary.cores {
            let compute = match core.compute_duration_ps {
                // Settled by the pod's combine, with every core's shortest durations.
                Some(compute) => compute,
                None => {
                    let Some(slot) = list_compute.get_mut(core.id_list as usize) else { continue };
                    *slot.get_or_insert_with(|| {
                        summary.id_lists[core.id_list as usize]
                            .iter()
                            .fold(0u64, |sum, id| sum.wrapping_add(min_of(id)))
                    })
                }
            };
            let breakdown: &mut AllReduceBreakdown = result.entry(core_id).or_default();
            breakdown.compute_duration_ps = breakdown.compute_duration_ps.wrapping_add(compute);
            breakdown.sync_duration_ps =
                breakdown.sync_duration_ps.wrapping_add(core.total_duration_ps.wrapping_sub(compute));
        }
    }
    result
}

fn compute_time_ms(d: &PerTpuStepDetails) -> f64 {
    d.tc_compute_time_ms + d.scv0_compute_time_ms
}

fn infeed_time_ms(d: &PerTpuStepDetails) -> f64 {
    d.tc_infeed_time_ms + d.scv0_infeed_time_ms
}

fn all_reduce_time_ms(d: &PerTpuStepDetails) -> f64 {
    d.all_reduce_compute_time_ms + d.all_reduce_sync_time_ms
}

fn non_idle_time_ms(d: &PerTpuStepDetails) -> f64 {
    compute_time_ms(d) + infeed_time_ms(d) + all_reduce_time_ms(d) + d.tc_outfeed_time_ms
}

/// A TPU step's time as XProf's step-time tooltip adds it up: compute, input, all-reduce,
/// output and idle.
pub fn tpu_step_time_ms(d: &PerTpuStepDetails) -> f64 {
    non_idle_time_ms(d) + d.tc_idle_time_ms
}

/// `ComputeTpuPerStepDataAcrossCores`: one step over all cores.
///
/// TensorCores contribute their breakdown (from their per-category times): the step's
/// compute is the minimum over cores of (step time − waits for host/SparseCoreV0), its
/// infeed the maximum infeed, its outfeed the average, its host transfer the maximum, and
/// its idle the shortest core step minus everything else. SparseCores (ids ≥ 1 000 000)
/// contribute their step, idle (`IDLE` category), infeed, outfeed and compute times.
///
/// XProf 2.24.2 changed this function (its source is not public); what differs from
/// XProf 2.23 follows XProf 2.24.2's outputs on synthetic TPU profiles with steps and a
/// SparseCore: TensorCore and SparseCore active times are the average over cores of
/// [`ProfileTimeBreakdown::active_time_ps`], the step's active time is the larger of the
/// two; a SparseCore's compute is its active time (minimum over SparseCores; with a single
/// SparseCore observed, minimum and average could not be told apart), and its infeed and
/// outfeed are its `infeed`/`outfeed` categories.
fn tpu_step_across_cores(step: &PerCoreStepInfo, core_details: &BTreeMap<u32, CoreDetails>) -> PerTpuStepDetails {
    let all_reduce = all_reduce_breakdown_across_cores(step);
    let mut infeed_percent = Stat::<f64>::default();
    let mut step_ps = Stat::<u64>::default();
    let mut optimal_step_ps = Stat::<u64>::default();
    let mut tc_outfeed_ps = Stat::<u64>::default();
    let mut sc_compute_ps = Stat::<u64>::default();
    let mut sc_step_ps = Stat::<u64>::default();
    let mut sc_outfeed_ps = Stat::<u64>::default();
    let mut sc_infeed_ps = Stat::<u64>::default();
    let mut sc_active_ps = Stat::<u64>::default();
    let mut sc_idle_ps = Stat::<u64>::default();
    let mut host_send_recv_ps = Stat::<u64>::default();
    let mut tc_active_ps = Stat::<u64>::default();
    let (mut max_wait_scv0_infeed_ps, mut max_wait_scv0_compute_ps) = (0u64, 0u64);
    let (mut max_infeed_core, mut max_infeed_ps) = (None::<u32>, 0u64);
    let mut max_all_reduce = AllReduceBreakdown::default();

    let mut details = PerTpuStepDetails { step_number: -1, ..PerTpuStepDetails::default() };
    for (&core_id, info) in &step.step_info_per_core {
        if details.step_number < 0 {
            details.step_number = info.step_num as i32;
        }
        let Some(StepBreakdown::Generic(generic)) = &info.step_breakdown else {
            // Neither a TPU, generic nor SparseCore breakdown: XProf gives up on the step.
            return details;
        };
        if core_id >= SPARSE_CORE_INDEX_START {
            let breakdown = ProfileTimeBreakdown::from_generic(generic, info.duration_ps);
            let active_ps = breakdown.active_time_ps();
            sc_step_ps.update(info.duration_ps);
            sc_idle_ps.update(generic.category_ps.get(IDLE).copied().unwrap_or(0));
            sc_infeed_ps.update(breakdown.category(HLO_INFEED));
            sc_outfeed_ps.update(breakdown.category(HLO_OUTFEED));
            sc_compute_ps.update(active_ps);
            sc_active_ps.update(active_ps);
            continue;
        }
        let tpu = tpu_step_breakdown_from_generic(generic, info.duration_ps);
        step_ps.update(info.duration_ps);
        if tpu.wait_for_scv0_duration_ps > max_wait_scv0_infeed_ps.wrapping_add(max_wait_scv0_compute_ps) {
            max_wait_scv0_infeed_ps = tpu.scv0_infeed_duration_ps();
            max_wait_scv0_compute_ps = tpu.scv0_compute_duration_ps();
        }
        tc_outfeed_ps.update(tpu.host_outfeed_ps);
        let core_all_reduce = all_reduce.get(&core_id).copied().unwrap_or_default();
        if core_all_reduce.duration_ps() > max_all_reduce.duration_ps() {
            max_all_reduce = core_all_reduce;
        }
        infeed_percent.update(x86_div(100.0 * tpu.tc_plus_scv0_infeed_duration_ps() as f64, info.duration_ps as f64));
        optimal_step_ps.update(tpu.optimal_step_time_ps(info.duration_ps));
        tc_active_ps.update(tpu.tc_active_ps);
        host_send_recv_ps.update(tpu.host_send_recv_duration_ps());
        if tpu.infeed_duration_ps > max_infeed_ps {
            max_infeed_core = Some(core_id);
            max_infeed_ps = tpu.infeed_duration_ps;
        }
    }

    if !tc_outfeed_ps.is_empty() {
        details.tc_outfeed_time_ms = pico_to_milli(f64_to_u64(tc_outfeed_ps.avg()));
    }
    if !optimal_step_ps.is_empty() {
        details.tc_compute_time_ms = pico_to_milli(optimal_step_ps.min());
    }
    if !host_send_recv_ps.is_empty() {
        details.host_transfer_ms = pico_to_milli(host_send_recv_ps.max());
    }
    details.tc_infeed_time_ms = pico_to_milli(max_infeed_ps);
    if let Some(core_id) = max_infeed_core {
        details.coreid_max_infeed_time = core_id;
        if let Some(core) = core_details.get(&core_id) {
            details.max_infeed_time_core_name = format!("{}:{}", core.hostname, core.device_ordinal);
        }
    }
    details.scv0_compute_time_ms = pico_to_milli(max_wait_scv0_compute_ps);
    details.scv0_infeed_time_ms = pico_to_milli(max_wait_scv0_infeed_ps);
    // All-reduce times are not set yet, so they do not count as non-idle here (as in XProf).
    if !step_ps.is_empty() {
        details.tc_idle_time_ms = pico_to_milli(step_ps.min()) - non_idle_time_ms(&details);
    }
    if details.tc_idle_time_ms < 0.0 {
        details.tc_idle_time_ms = 0.0;
    }
    details.all_reduce_compute_time_ms = pico_to_milli(max_all_reduce.compute_duration_ps);
    details.all_reduce_sync_time_ms = pico_to_milli(max_all_reduce.sync_duration_ps);
    if !infeed_percent.is_empty() {
        details.infeed_percent_average = infeed_percent.avg();
        details.infeed_percent_minimum = infeed_percent.min();
        details.infeed_percent_maximum = infeed_percent.max();
    }
    if !sc_infeed_ps.is_empty() {
        details.sc_infeed_time_ms = pico_to_milli(f64_to_u64(sc_infeed_ps.avg()));
    }
    if !sc_outfeed_ps.is_empty() {
        details.sc_outfeed_time_ms = pico_to_milli(f64_to_u64(sc_outfeed_ps.avg()));
    }
    if !sc_compute_ps.is_empty() {
        details.sc_compute_time_ms = pico_to_milli(sc_compute_ps.min());
    }
    if !sc_idle_ps.is_empty() {
        details.sc_idle_time_ms = pico_to_milli(f64_to_u64(sc_idle_ps.avg()));
    }
    if !sc_step_ps.is_empty() {
        details.sc_step_time_ms = pico_to_milli(f64_to_u64(sc_step_ps.avg()));
    }
    if details.sc_idle_time_ms < 0.0 {
        details.sc_idle_time_ms = 0.0;
    }
    if !tc_active_ps.is_empty() {
        details.tc_active_time_ms = pico_to_milli(f64_to_u64(tc_active_ps.avg()));
    }
    if !sc_active_ps.is_empty() {
        details.sc_active_time_ms = pico_to_milli(f64_to_u64(sc_active_ps.avg()));
    }
    details.active_step_time_ms = details.tc_active_time_ms.max(details.sc_active_time_ms);
    details
}

/// `ComputeTpuInputPipelineAnalysisResult`.
fn compute_tpu_input_pipeline_analysis_result(
    steps: &[PerCoreStepInfo],
    core_details: &BTreeMap<u32, CoreDetails>,
) -> InputPipelineAnalysis {
    let has_sparse_core = core_details.values().any(|core| core.is_sparse_core);
    let mut details_list = Vec::with_capacity(steps.len());
    let mut infeed_percent = Stat::<f64>::default();
    for step in steps {
        let details = tpu_step_across_cores(step, core_details);
        // The input summary uses each step's maximum infeed percent across cores.
        infeed_percent.update(details.infeed_percent_maximum);
        details_list.push(details);
    }
    let breakdown = compute_tpu_step_time_breakdown_in_ms(&details_list, has_sparse_core);
    InputPipelineAnalysis {
        tag: true,
        step_time_summary: compute_step_time_summary_in_ms(steps),
        input_percent_summary: StepSummary::from_stat(&infeed_percent),
        step_details: StepDetails::Tpu(details_list),
        step_time_breakdown: StepTimeBreakdown::Tpu(breakdown),
        ..InputPipelineAnalysis::default()
    }
}

fn compute_tpu_step_time_breakdown_in_ms(steps: &[PerTpuStepDetails], has_sparse_core: bool) -> TpuStepTimeBreakdown {
    let mut stats = [Stat::<f64>::default(); 15];
    for d in steps {
        let values = [
            d.tc_compute_time_ms,
            d.scv0_compute_time_ms,
            d.tc_infeed_time_ms,
            d.tc_outfeed_time_ms,
            d.scv0_infeed_time_ms,
            d.tc_idle_time_ms,
            d.host_transfer_ms,
            d.sc_compute_time_ms,
            d.sc_infeed_time_ms,
            d.sc_outfeed_time_ms,
            d.sc_idle_time_ms,
            d.sc_step_time_ms,
            d.tc_active_time_ms,
            d.active_step_time_ms,
            d.sc_active_time_ms,
        ];
        for (stat, value) in stats.iter_mut().zip(values) {
            stat.update(value);
        }
    }
    let [
        tc_compute,
        scv0_compute,
        tc_infeed,
        tc_outfeed,
        scv0_infeed,
        tc_idle,
        host_transfer,
        sc_compute,
        sc_infeed,
        sc_outfeed,
        sc_idle,
        sc_step,
        tc_active,
        active_step,
        sc_active,
    ] = stats.map(|stat| StepSummary::from_stat(&stat));
    TpuStepTimeBreakdown {
        tc_compute_ms_summary: tc_compute,
        scv0_compute_ms_summary: scv0_compute,
        tc_infeed_ms_summary: tc_infeed,
        tc_outfeed_ms_summary: tc_outfeed,
        scv0_infeed_ms_summary: scv0_infeed,
        tc_idle_ms_summary: tc_idle,
        host_transfer_ms_summary: host_transfer,
        sparse_core_step_summary: has_sparse_core.then_some(SparseCoreStepSummary {
            sc_compute_ms_summary: sc_compute,
            sc_infeed_ms_summary: sc_infeed,
            sc_outfeed_ms_summary: sc_outfeed,
            sc_idle_ms_summary: sc_idle,
            sc_step_time_ms_summary: sc_step,
            sc_active_ms_summary: sc_active,
        }),
        tc_active_ms_summary: tc_active,
        active_step_time_ms_summary: active_step,
    }
}

/// Host input-op categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum InputOpCategory {
    Enqueue,
    DemandedFileRead,
    AdvancedFileRead,
    Preprocessing,
    Unknown,
}

impl InputOpCategory {
    fn label(self) -> &'static str {
        match self {
            InputOpCategory::Enqueue => "Enqueue",
            InputOpCategory::DemandedFileRead => "Demanded file read",
            InputOpCategory::AdvancedFileRead => "Advanced file read",
            InputOpCategory::Preprocessing => "Preprocessing",
            InputOpCategory::Unknown => "Unknown",
        }
    }
}

fn is_infeed_enqueue_op(category: &str) -> bool {
    category.starts_with("InfeedEnqueue")
}

fn is_memcpy_h_to_d_op(category: &str) -> bool {
    category == oxprof_grouping::tf_op::MEMCPY_H_TO_D_OP
}

/// The newer explicit input categories (`enqueue`, `read`, `preprocessing`, `unknown`).
fn new_input_op_category(category: &str) -> Option<InputOpCategory> {
    match category.to_ascii_lowercase().as_str() {
        "enqueue" => Some(InputOpCategory::Enqueue),
        "read" => Some(InputOpCategory::DemandedFileRead),
        "preprocessing" => Some(InputOpCategory::Preprocessing),
        "unknown" => Some(InputOpCategory::Unknown),
        _ => None,
    }
}

/// `IsInputOp` (IteratorGetNext is not one: it suffers the input stall, not causes it).
fn is_input_op(category: &str) -> bool {
    is_infeed_enqueue_op(category)
        || category == oxprof_grouping::tf_op::DATASET_OP
        || is_memcpy_h_to_d_op(category)
        || new_input_op_category(category).is_some()
}

/// `CategorizeInputOp` for the legacy categories.
fn categorize_input_op(name: &str, category: &str) -> InputOpCategory {
    if is_infeed_enqueue_op(category) || is_memcpy_h_to_d_op(category) {
        return InputOpCategory::Enqueue;
    }
    const FILE_READERS: [&str; 6] =
        ["::TFRecord", "::TextLine", "::FixedLengthRecord", "::SSTable", "::RecordIO", "::ArrayRecord"];
    const IN_ADVANCE: [&str; 5] = ["::MemoryReader", "::MemoryWriter", "::Interleave", "::Prefetch", "::ParallelMap"];
    if FILE_READERS.iter().any(|suffix| name.ends_with(suffix)) {
        if IN_ADVANCE.iter().any(|part| name.contains(part)) {
            InputOpCategory::AdvancedFileRead
        } else {
            InputOpCategory::DemandedFileRead
        }
    } else {
        InputOpCategory::Preprocessing
    }
}

/// `RatioOfHostToDeviceTimeToStepTime`: host infeed-enqueue ratio when measured (TPU
/// infeed), else the average host-to-device time over the average step time.
fn ratio_of_host_to_device_time_to_step_time(host_db: &OpMetricsDb, result: &InputPipelineAnalysis) -> f64 {
    if host_db.total_host_infeed_enq_start_timestamp_ps_diff > 0 {
        return safe_divide(
            host_db.total_host_infeed_enq_duration_ps as f64,
            host_db.total_host_infeed_enq_start_timestamp_ps_diff as f64,
        );
    }
    let avg_step_time_ms = result.step_time_summary.average;
    if avg_step_time_ms > 0.0
        && let StepTimeBreakdown::Generic(generic) = &result.step_time_breakdown
    {
        return safe_divide(generic.host_to_device_ms_summary.average, avg_step_time_ms);
    }
    0.0
}

/// `GenerateHostResult`: the host input ops (sorted by self time) and the input time
/// split by kind, the non-enqueue kinds scaled so that enqueue : non-enqueue matches the
/// measured host-to-device share of the step.
fn generate_host_result(host_db: &OpMetricsDb, result: &mut InputPipelineAnalysis) {
    let input_ops: Vec<&OpMetrics> =
        sorted_op_metrics_db(host_db, None).into_iter().filter(|op| is_input_op(&op.category)).collect();
    if input_ops.is_empty() {
        return;
    }
    let input_op_time_ps = input_ops.iter().fold(0u64, |sum, op| sum.wrapping_add(op.self_time_ps));
    let mut time_us_by_category: HashMap<InputOpCategory, f64> = HashMap::new();
    for op in &input_ops {
        let category =
            new_input_op_category(&op.category).unwrap_or_else(|| categorize_input_op(&op.name, &op.category));
        result.input_op_details.push(InputOpDetails {
            op_name: op.name.clone(),
            count: u64::from(op.occurrences),
            time_in_ms: pico_to_milli(op.time_ps),
            time_in_percent: 100.0 * safe_divide(op.time_ps as f64, input_op_time_ps as f64),
            self_time_in_ms: pico_to_milli(op.self_time_ps),
            self_time_in_percent: 100.0 * safe_divide(op.self_time_ps as f64, input_op_time_ps as f64),
            category: category.label().to_string(),
        });
        *time_us_by_category.entry(category).or_insert(0.0) += pico_to_micro(op.self_time_ps);
    }
    let time_us = |category| time_us_by_category.get(&category).copied().unwrap_or(0.0);
    let enqueue_us = time_us(InputOpCategory::Enqueue);
    let demanded_us = time_us(InputOpCategory::DemandedFileRead);
    let advanced_us = time_us(InputOpCategory::AdvancedFileRead);
    let preprocessing_us = time_us(InputOpCategory::Preprocessing);
    let total_input_op_time_us = demanded_us + advanced_us + preprocessing_us;

    let measured = ratio_of_host_to_device_time_to_step_time(host_db, result);
    let ratio = if measured < 1.0 { measured } else { 1.0 };
    let non_enqueue_us = if ratio != 0.0 { enqueue_us * (1.0 - ratio) / ratio } else { total_input_op_time_us };
    let scaled = |us: f64| safe_divide(non_enqueue_us * us, total_input_op_time_us);
    let (demanded, advanced, preprocessing) = (scaled(demanded_us), scaled(advanced_us), scaled(preprocessing_us));
    let unclassified = non_enqueue_us - demanded - advanced - preprocessing;
    result.input_time_breakdown = InputTimeBreakdown {
        demanded_file_read_us: demanded,
        advanced_file_read_us: advanced,
        preprocessing_us: preprocessing,
        enqueue_us,
        unclassified_non_enqueue_us: if unclassified > 0.0 { unclassified } else { 0.0 },
    };
}

/// `GenerateRecommendation`: the fixed tf.data advice.
fn generate_recommendation() -> InputPipelineAnalysisRecommendation {
    const DATASET_INTRO: &str = "https://www.tensorflow.org/programmers_guide/datasets";
    const DATASET_TOPIC: &str = "https://www.tensorflow.org/api_docs/python/tf/data/Dataset#";
    const TF_RECORD_DATASET: &str =
        "https://www.tensorflow.org/api_docs/python/tf/data/TFRecordDataset#class_tfrecorddataset";
    let topic = |anchor: &str, text: &str| anchor_element(&format!("{DATASET_TOPIC}{anchor}"), text);
    let details = vec![
        "Enqueuing data: you may want to combine small input data chunks into fewer but larger chunks.".to_string(),
        format!(
            "Data preprocessing: you may increase num_parallel_calls in {} or preprocess the data OFFLINE.",
            topic("map", "Dataset map()")
        ),
        format!(
            "Reading data from files in advance: you may tune parameters in the following tf.data API ({}, {}, {})",
            topic("prefetch", "prefetch size"),
            topic("interleave", "interleave cycle_length"),
            anchor_element(TF_RECORD_DATASET, "reader buffer_size")
        ),
        format!(
            "Reading data from files on demand: you should read data IN ADVANCE using the following tf.data API ({}, \
             {}, {})",
            topic("prefetch", "prefetch"),
            topic("interleave", "interleave"),
            anchor_element(TF_RECORD_DATASET, "reader buffer")
        ),
        format!(
            "Other data reading or processing: you may consider using the {} (if you are not using it now)",
            anchor_element(DATASET_INTRO, "tf.data API")
        ),
    ];
    InputPipelineAnalysisRecommendation { details, ..InputPipelineAnalysisRecommendation::default() }
}

/// `InputAnalysis`: classifies the input share. Returns true when the statement already
/// explains the "All Others" time.
fn input_analysis(input_percent: f64, all_other_percent: f64) -> (String, String, bool) {
    if input_percent >= HIGHLY_INFEED_BOUND {
        let statement = format!(
            "Your program is HIGHLY input-bound because {}% of the total step time sampled is waiting for input. \
             Therefore, you should first focus on reducing the input time.",
            one_digit(input_percent)
        );
        ("host".into(), statement, false)
    } else if input_percent >= MODERATELY_INFEED_BOUND {
        let statement = format!(
            "Your program is MODERATELY input-bound because {}% of the total step time sampled is waiting for \
             input. Therefore, you would need to reduce both the input time and other time.",
            one_digit(input_percent)
        );
        ("both".into(), statement, false)
    } else if all_other_percent >= MODERATELY_ALL_OTHER_BOUND {
        let statement = format!(
            "Your program is POTENTIALLY input-bound because {}% of the total step time sampled is spent on 'All \
             Others' time (which could be due to I/O or Python execution or both).",
            one_digit(all_other_percent)
        );
        ("both".into(), statement, true)
    } else {
        let statement = format!(
            "Your program is NOT input-bound because only {}% of the total step time sampled is waiting for input. \
             Therefore, you should focus on reducing other time.",
            one_digit(input_percent)
        );
        ("device".into(), statement, false)
    }
}

/// `OutputAnalysis`.
fn output_analysis(output_percent: f64) -> (String, String) {
    if output_percent >= HIGHLY_OUTFEED_BOUND {
        let statement = format!(
            "Your program is HIGHLY output-bound because {}% of the total step time sampled is spent on output. \
             Therefore, you should first focus on reducing the output time.",
            one_digit(output_percent)
        );
        ("host".into(), statement)
    } else if output_percent >= MODERATELY_OUTFEED_BOUND {
        let statement = format!(
            "Your program is MODERATELY output-bound because {}% of the total step time sampled is spent on output. \
             Therefore, you would need to reduce both the output time and other time.",
            one_digit(output_percent)
        );
        ("both".into(), statement)
    } else {
        ("device".into(), String::new())
    }
}

/// A high/moderate/no classification with the same statement for high and moderate.
fn graded(percent: f64, high: f64, moderate: f64, statement: impl FnOnce() -> String) -> (String, String) {
    if percent >= high {
        ("high".into(), statement())
    } else if percent >= moderate {
        ("moderate".into(), statement())
    } else {
        ("no".into(), String::new())
    }
}

/// `TfDataInUse`: any tf.data time (enqueue is not tf.data).
fn tf_data_in_use(breakdown: &InputTimeBreakdown) -> bool {
    breakdown.demanded_file_read_us > 0.0 || breakdown.advanced_file_read_us > 0.0 || breakdown.preprocessing_us > 0.0
}

/// `ComputeBottleneckAnalysis` (CPU/GPU): shares of the total step time over all steps.
/// TPU step details cannot be read here, so they give an empty analysis (as in XProf).
pub fn compute_bottleneck_analysis(breakdown: &InputTimeBreakdown, step_details: &StepDetails) -> BottleneckAnalysis {
    let steps = match step_details {
        StepDetails::Generic(steps) => steps.as_slice(),
        StepDetails::Tpu(steps) if steps.is_empty() => &[],
        StepDetails::Tpu(_) => return BottleneckAnalysis::default(),
    };
    let mut total = PerGenericStepDetails::default();
    for d in steps {
        total.step_time_ms += d.step_time_ms;
        total.host_wait_input_ms += d.host_wait_input_ms + d.host_to_device_ms;
        total.output_ms += d.output_ms;
        total.host_prepare_ms += d.host_prepare_ms;
        total.device_compute_ms += d.device_compute_ms;
        total.device_to_device_ms += d.device_to_device_ms;
        total.device_collectives_ms += d.device_collectives_ms;
        total.host_compute_ms += d.host_compute_ms;
        total.host_compile_ms += d.host_compile_ms;
        total.unknown_time_ms += d.unknown_time_ms;
    }
    if total.step_time_ms == 0.0 {
        return BottleneckAnalysis {
            input_classification: "unknown".into(),
            input_statement: NO_STEP_TIME_STATEMENT.into(),
            kernel_launch_classification: "no".into(),
            all_other_classification: "no".into(),
            device_collectives_classification: "no".into(),
            ..BottleneckAnalysis::default()
        };
    }
    let percent = |ms: f64| 100.0 * ms / total.step_time_ms;
    let input_percent = percent(total.host_wait_input_ms);
    let output_percent = percent(total.output_ms);
    let compute_percent = percent(total.device_compute_ms);
    let collectives_percent = percent(total.device_collectives_ms);
    // Idle covers kernel launch, device-to-device, host compute, compile and unknown.
    let idle = 100.0 - input_percent - output_percent - compute_percent - collectives_percent;
    let kernel_launch_percent = percent(total.host_prepare_ms);
    let all_other_percent = percent(total.unknown_time_ms);

    let (input_classification, input_statement, all_other_reported) = input_analysis(input_percent, all_other_percent);
    let (device_collectives_classification, device_collectives_statement) =
        graded(collectives_percent, HIGHLY_DEVICE_COLLECTIVES_BOUND, MODERATELY_DEVICE_COLLECTIVES_BOUND, || {
            format!(
                "{} % of the total step time sampled is spent on 'Device Collective Communication'.",
                one_digit(collectives_percent)
            )
        });
    let (kernel_launch_classification, kernel_launch_statement) =
        graded(kernel_launch_percent, HIGHLY_KERNEL_LAUNCH_BOUND, MODERATELY_KERNEL_LAUNCH_BOUND, || {
            let mut statement = format!(
                "{} % of the total step time sampled is spent on 'Kernel Launch'.",
                one_digit(kernel_launch_percent)
            );
            if tf_data_in_use(breakdown) {
                statement.push_str(KERNEL_LAUNCH_TF_DATA_CONTENTION);
            }
            statement
        });
    let (all_other_classification, all_other_statement) = if all_other_reported {
        ("no".into(), String::new())
    } else {
        graded(all_other_percent, HIGHLY_ALL_OTHER_BOUND, MODERATELY_ALL_OTHER_BOUND, || {
            format!("{}{ALL_OTHERS_PYTHON_EXPLANATION}", one_digit(all_other_percent))
        })
    };
    BottleneckAnalysis {
        input_percent,
        output_percent,
        idle_percent: if idle > 0.0 { idle } else { 0.0 },
        compute_percent,
        input_classification,
        input_statement,
        kernel_launch_classification,
        kernel_launch_statement,
        all_other_classification,
        all_other_statement,
        device_collectives_classification,
        device_collectives_statement,
    }
}

/// `TensorCoreIdleAnalysis`: returns (idle classification, idle statement); may turn the
/// input classification to `host` when not all cores were profiled.
fn tensor_core_idle_analysis(
    all_cores_profiled: bool,
    tc_idle_percent: f64,
    input_classification: &mut String,
    input_statement: &mut String,
) -> (String, String) {
    if tc_idle_percent < TC_IDLE_THRESHOLD {
        return ("no".into(), String::new());
    }
    let idle_percent = printf_fixed(tc_idle_percent, 1);
    if all_cores_profiled {
        let statement = format!(
            "{idle_percent} % of the total step time sampled is due to host overhead that is not input-related. For \
             TF 2.x, you may want to use a {}",
            anchor_element(
                MULTIPLE_STEPS_IN_TF_FUNCTION_DOC,
                "host-training loop (i.e. running multiple steps within a tf.function)."
            )
        );
        return ("yes".into(), statement);
    }
    if input_classification == "host" {
        return ("no".into(), String::new());
    }
    *input_classification = "host".into();
    *input_statement = format!(
        "Your program COULD be input-bound because {idle_percent}% of the total step time is idle. This may be a \
         manifestation of an input issue on a worker machine that was not profiled. To be certain, please profile \
         ALL worker machines in your job by following {}",
        anchor_element(PROFILE_ALL_HOSTS_DOC, "this instruction.")
    );
    ("no".into(), String::new())
}

/// `AllReduceAnalysis`: returns (all-reduce classification, statement); may turn the input
/// classification to `host` when not all cores were profiled.
fn all_reduce_analysis(
    all_cores_profiled: bool,
    compute_percent: f64,
    sync_percent: f64,
    input_percent: f64,
    input_classification: &mut String,
    input_statement: &mut String,
) -> (String, String) {
    let all_reduce_percent = compute_percent + sync_percent;
    // All-reduce overlaps input; only the part beyond the input time counts.
    if all_reduce_percent - input_percent < ALL_REDUCE_BOUND {
        return ("no".into(), String::new());
    }
    if all_cores_profiled {
        let statement = format!(
            "Also, {} % of the total step time sampled is spent on synchronization with other TPU cores, and {} % of \
             the total step time sampled is spent on actual AllReduce.",
            printf_fixed(sync_percent, 1),
            printf_fixed(compute_percent, 1)
        );
        return ("yes".into(), statement);
    }
    let percent = printf_fixed(all_reduce_percent, 1);
    let instruction = anchor_element(PROFILE_ALL_HOSTS_DOC, "this instruction.");
    if input_classification != "device" {
        let statement = format!(
            "Also, {percent} % of the total step time sampled is spent on synchronization with other TPU cores and \
             AllReduce. Not all worker machines are profiled, therefore we cannot disambiguate the actual time for \
             AllReduce from the synchronization. To be certain, please profile ALL worker machines in your job by \
             following {instruction}"
        );
        return ("yes".into(), statement);
    }
    *input_classification = "host".into();
    *input_statement = format!(
        "Your program COULD be input-bound because {percent}% of the total step time is spent on synchronization \
         with other TPU cores. This may be a manifestation of an input issue on a worker machine that was not \
         profiled. To be certain, please profile ALL worker machines in your job by following {instruction}"
    );
    ("no".into(), String::new())
}

/// `ScV0Analysis`.
fn scv0_analysis(scv0_percent: f64) -> (String, String) {
    if scv0_percent == 0.0 {
        return ("no".into(), String::new());
    }
    let percent = printf_fixed(scv0_percent, 1);
    if scv0_percent < MODERATELY_SPARSE_CORE_V0_BOUND {
        let statement = format!(
            "Also, {percent} % of the total step time sampled is spent on the {SPARSE_CORE_V0_NAME} compute. You may \
             also want to reduce the {SPARSE_CORE_V0_NAME} compute time."
        );
        return ("moderate".into(), statement);
    }
    let statement = format!(
        "Also, {percent} % of the total step time sampled is spent on the {SPARSE_CORE_V0_NAME} compute. You should \
         focus on reducing the {SPARSE_CORE_V0_NAME} compute time as well."
    );
    ("high".into(), statement)
}

/// `ComputeTpuBottleneckAnalysis`: shares of the total TPU step time over all steps.
pub fn compute_tpu_bottleneck_analysis(
    all_cores_profiled: bool,
    result: &InputPipelineAnalysis,
) -> TpuBottleneckAnalysis {
    let steps = match &result.step_details {
        StepDetails::Tpu(steps) => steps.as_slice(),
        StepDetails::Generic(steps) if steps.is_empty() => &[],
        StepDetails::Generic(_) => return TpuBottleneckAnalysis::default(),
    };
    let (mut step_ms, mut infeed_ms, mut outfeed_ms, mut scv0_compute_ms) = (0.0, 0.0, 0.0, 0.0);
    let (mut all_reduce_compute_ms, mut all_reduce_sync_ms, mut idle_ms) = (0.0, 0.0, 0.0);
    for d in steps {
        step_ms += tpu_step_time_ms(d);
        infeed_ms += infeed_time_ms(d);
        outfeed_ms += d.tc_outfeed_time_ms;
        scv0_compute_ms += d.scv0_compute_time_ms;
        all_reduce_compute_ms += d.all_reduce_compute_time_ms;
        all_reduce_sync_ms += d.all_reduce_sync_time_ms;
        idle_ms += d.tc_idle_time_ms;
    }
    if step_ms == 0.0 {
        return TpuBottleneckAnalysis {
            input_classification: "unknown".into(),
            input_statement: NO_STEP_TIME_STATEMENT.into(),
            tc_idle_classification: "no".into(),
            scv0_classification: "no".into(),
            all_reduce_classification: "no".into(),
            ..TpuBottleneckAnalysis::default()
        };
    }
    let infeed_percent = 100.0 * infeed_ms / step_ms;
    let (mut input_classification, mut input_statement, _) = input_analysis(infeed_percent, 0.0);
    let outfeed_percent = 100.0 * outfeed_ms / step_ms;
    // XProf keeps only the output statement, not its classification.
    let (_output_classification, output_statement) = output_analysis(outfeed_percent);
    let idle_percent = 100.0 * idle_ms / step_ms;
    let (tc_idle_classification, tc_idle_statement) =
        tensor_core_idle_analysis(all_cores_profiled, idle_percent, &mut input_classification, &mut input_statement);
    let (all_reduce_classification, all_reduce_statement) = all_reduce_analysis(
        all_cores_profiled,
        100.0 * all_reduce_compute_ms / step_ms,
        100.0 * all_reduce_sync_ms / step_ms,
        infeed_percent,
        &mut input_classification,
        &mut input_statement,
    );
    let (scv0_classification, scv0_statement) = scv0_analysis(100.0 * scv0_compute_ms / step_ms);
    let compute = 100.0 - infeed_percent - outfeed_percent - idle_percent;
    TpuBottleneckAnalysis {
        input_percent: infeed_percent,
        input_classification,
        input_statement,
        output_percent: outfeed_percent,
        output_classification: String::new(),
        output_statement,
        tc_idle_percent: idle_percent,
        tc_idle_classification,
        tc_idle_statement,
        scv0_classification,
        scv0_statement,
        all_reduce_classification,
        all_reduce_statement,
        compute_percent: if compute > 0.0 { compute } else { 0.0 },
    }
}

/// `GetSummaryNextStep`.
pub fn summary_next_step(input_classification: &str, breakdown: &InputTimeBreakdown) -> String {
    if input_classification != "host" && input_classification != "both" {
        return "You may skip the rest of this page.".into();
    }
    if tf_data_in_use(breakdown) {
        format!("Look at Section {HOST_ANALYSIS_SECTION_NUMBER} for the breakdown of input time on the host.")
    } else {
        format!(
            "Consider using {} to enable profiler's host-side analysis for input pipeline. Profiler currently does \
             not support custom input pipeline (please ignore Section {HOST_ANALYSIS_SECTION_NUMBER} below).",
            anchor_element("https://www.tensorflow.org/guide/data", "the tf.data API")
        )
    }
}

/// `HostToDeviceTransferAsPercentOfInputTime`.
pub fn host_to_device_transfer_as_percent_of_input_time(breakdown: &InputTimeBreakdown) -> f64 {
    let total_us = breakdown.demanded_file_read_us
        + breakdown.advanced_file_read_us
        + breakdown.preprocessing_us
        + breakdown.enqueue_us
        + breakdown.unclassified_non_enqueue_us;
    100.0 * safe_divide(breakdown.enqueue_us, total_us)
}

/// `GenerateInputPipelineAnalysisDataTable`: the step-time table, TPU or generic.
pub fn input_pipeline_analysis_table(result: &InputPipelineAnalysis) -> DataTable {
    if result.tag { tpu_input_pipeline_analysis_table(result) } else { generic_input_pipeline_analysis_table(result) }
}

/// Adds `<name>_avg` and `<name>_sdv` (one decimal).
fn add_avg_sdv(table: &mut DataTable, name: &str, summary: &StepSummary) {
    table.prop(&format!("{name}_avg"), one_digit(summary.average));
    table.prop(&format!("{name}_sdv"), one_digit(summary.standard_deviation));
}

fn generic_input_pipeline_analysis_table(result: &InputPipelineAnalysis) -> DataTable {
    let mut table = DataTable::new();
    table
        .column("stepnum", ColumnType::String, "Step number")
        .column("deviceComputeTimeMs", ColumnType::Number, "Device compute")
        .column("deviceToDeviceTimeMs", ColumnType::Number, "Device to device")
        .column("deviceCollectivesTimeMs", ColumnType::Number, "Device collective communication")
        .column("hostComputeTimeMs", ColumnType::Number, "Host compute")
        .column("kernelLaunchTimeMs", ColumnType::Number, "Kernel launch")
        .column("infeedTimeMs", ColumnType::Number, "Input")
        .column("outfeedTimeMs", ColumnType::Number, "Output")
        .column("compileTimeMs", ColumnType::Number, "Compilation")
        .column("otherTimeMs", ColumnType::Number, "All others")
        .column_with_props("tooltip", ColumnType::String, "tooltip", &[("role", "tooltip")])
        .column("stepTimeMs", ColumnType::Number, "Step time");
    let step_time = &result.step_time_summary;
    table
        .prop(
            "step_time_graph_column_ids",
            "stepnum,deviceComputeTimeMs,deviceToDeviceTimeMs,deviceCollectivesTimeMs,hostComputeTimeMs,\
             kernelLaunchTimeMs,infeedTimeMs,outfeedTimeMs,compileTimeMs,otherTimeMs, tooltip",
        )
        .prop("hardware_type", result.hardware_type.as_str())
        .prop("steptime_ms_average", one_digit(step_time.average))
        .prop("steptime_ms_standard_deviation", one_digit(step_time.standard_deviation))
        .prop("steptime_ms_minimum", one_digit(step_time.minimum))
        .prop("steptime_ms_maximum", one_digit(step_time.maximum));
    if let StepTimeBreakdown::Generic(b) = &result.step_time_breakdown {
        add_avg_sdv(&mut table, "device_compute_time_ms", &b.device_compute_ms_summary);
        add_avg_sdv(&mut table, "device_to_device_time_ms", &b.device_to_device_ms_summary);
        add_avg_sdv(&mut table, "device_collectives_time_ms", &b.device_collectives_ms_summary);
        add_avg_sdv(&mut table, "infeed_time_ms", &b.input_ms_summary);
        add_avg_sdv(&mut table, "outfeed_time_ms", &b.output_ms_summary);
        add_avg_sdv(&mut table, "host_compute_time_ms", &b.host_compute_ms_summary);
        add_avg_sdv(&mut table, "kernel_launch_time_ms", &b.host_prepare_ms_summary);
        add_avg_sdv(&mut table, "compile_time_ms", &b.host_compile_ms_summary);
        add_avg_sdv(&mut table, "other_time_ms", &b.unknown_time_ms_summary);
    }
    if let Bottleneck::Generic(b) = &result.recommendation.bottleneck_analysis {
        table
            .prop("input_conclusion", b.input_statement.as_str())
            .prop("device_collectives_bottleneck", b.device_collectives_statement.as_str())
            .prop("device_collectives_statement", b.device_collectives_statement.as_str())
            .prop("kernel_launch_bottleneck", b.kernel_launch_statement.as_str())
            .prop("kernel_launch_statement", b.kernel_launch_statement.as_str())
            .prop("all_other_bottleneck", b.all_other_statement.as_str())
            .prop("all_other_statement", b.all_other_statement.as_str());
    }
    table.prop("summary_nextstep", result.recommendation.summary_next_step.as_str());
    if let StepDetails::Generic(steps) = &result.step_details {
        for d in steps {
            let input_ms = d.host_wait_input_ms + d.host_to_device_ms;
            let tooltip = format!(
                "Step {}, duration: {} ms\n-All others: {} ms\n-Compilation: {} ms\n-Output: {} ms\n-Input: {} ms\n\
                 -Kernel launch: {} ms\n-Host compute: {} ms\n-Device collectives: {} ms\n-Device to device: {} ms\n\
                 -Device compute: {} ms",
                d.step_name,
                two_digits(d.step_time_ms),
                two_digits(d.unknown_time_ms),
                two_digits(d.host_compile_ms),
                two_digits(d.output_ms),
                two_digits(input_ms),
                two_digits(d.host_prepare_ms),
                two_digits(d.host_compute_ms),
                two_digits(d.device_collectives_ms),
                two_digits(d.device_to_device_ms),
                two_digits(d.device_compute_ms),
            );
            table.row(vec![
                d.step_name.as_str().into(),
                d.device_compute_ms.into(),
                d.device_to_device_ms.into(),
                d.device_collectives_ms.into(),
                d.host_compute_ms.into(),
                d.host_prepare_ms.into(),
                input_ms.into(),
                d.output_ms.into(),
                d.host_compile_ms.into(),
                d.unknown_time_ms.into(),
                tooltip.into(),
                d.step_time_ms.into(),
            ]);
        }
    }
    table
}

fn tpu_input_pipeline_analysis_table(result: &InputPipelineAnalysis) -> DataTable {
    let empty = TpuStepTimeBreakdown::default();
    let (breakdown, has_breakdown) = match &result.step_time_breakdown {
        StepTimeBreakdown::Tpu(breakdown) => (breakdown, true),
        StepTimeBreakdown::Generic(_) => (&empty, false),
    };
    let has_sparse_core = breakdown.sparse_core_step_summary.is_some();
    let mut table = DataTable::new();
    let mut graph_column_ids = vec!["stepnum"];
    table.column("stepnum", ColumnType::String, "stepnum").column(
        "tcComputeTimeMs",
        ColumnType::Number,
        "TensorCore compute (in ms)",
    );
    graph_column_ids.push("tcComputeTimeMs");
    if !has_sparse_core {
        table.column("scv0ComputeTimeMs", ColumnType::Number, "SparseCoreV0 compute (in ms)").column(
            "scv0InfeedTimeMs",
            ColumnType::Number,
            "SparseCoreV0 input (in ms)",
        );
        graph_column_ids.extend(["scv0ComputeTimeMs", "scv0InfeedTimeMs"]);
    }
    table
        .column("tcInfeedTimeMs", ColumnType::Number, "TensorCore input (in ms)")
        .column("tcOutfeedTimeMs", ColumnType::Number, "TensorCore output (in ms)")
        .column("tcIdleTimeMs", ColumnType::Number, "TensorCore idle (in ms)")
        .column("hostTransferTimeMs", ColumnType::Number, "Host transfer (in ms)");
    graph_column_ids.extend(["tcInfeedTimeMs", "tcOutfeedTimeMs", "tcIdleTimeMs", "hostTransferTimeMs", "tooltip"]);
    table
        .column_with_props("tooltip", ColumnType::String, "tooltip", &[("role", "tooltip")])
        .column("infeedPercentAverage", ColumnType::Number, "% step time waiting for input data")
        .column_with_props("infeedPercentMin", ColumnType::Number, "Infeed percent min", &[("role", "interval")])
        .column_with_props("infeedPercentMax", ColumnType::Number, "Infeed percent max", &[("role", "interval")]);

    // XProf 2.24 prints the step-time summary with two decimals on TPU.
    let step_time = &result.step_time_summary;
    let input_percent = &result.input_percent_summary;
    table
        .prop("hardware_type", result.hardware_type.as_str())
        .prop("steptime_ms_average", two_digits(step_time.average))
        .prop("steptime_ms_standard_deviation", two_digits(step_time.standard_deviation))
        .prop("steptime_ms_minimum", two_digits(step_time.minimum))
        .prop("steptime_ms_maximum", two_digits(step_time.maximum))
        .prop("infeed_percent_average", one_digit(input_percent.average))
        .prop("infeed_percent_standard_deviation", one_digit(input_percent.standard_deviation))
        .prop("infeed_percent_minimum", one_digit(input_percent.minimum))
        .prop("infeed_percent_maximum", one_digit(input_percent.maximum))
        .prop("step_time_graph_column_ids", graph_column_ids.join(","));
    if has_breakdown {
        add_tpu_step_time_breakdown(breakdown, &mut table);
    }
    if let Bottleneck::Tpu(b) = &result.recommendation.bottleneck_analysis {
        table
            .prop("input_conclusion", b.input_statement.as_str())
            .prop("output_conclusion", b.output_statement.as_str());
    }
    table.prop("summary_nextstep", result.recommendation.summary_next_step.as_str());

    if let StepDetails::Tpu(steps) = &result.step_details {
        for d in steps {
            let tooltip = format!(
                "step {}:\nTime waiting for input data = {} ms, Step time = {} ms",
                d.step_number,
                three_digits(infeed_time_ms(d)),
                three_digits(tpu_step_time_ms(d) - all_reduce_time_ms(d))
            );
            let mut cells = vec![d.step_number.to_string().into(), d.tc_compute_time_ms.into()];
            if !has_sparse_core {
                cells.push(d.scv0_compute_time_ms.into());
                cells.push(d.scv0_infeed_time_ms.into());
            }
            cells.extend([
                d.tc_infeed_time_ms.into(),
                d.tc_outfeed_time_ms.into(),
                d.tc_idle_time_ms.into(),
                d.host_transfer_ms.into(),
                tooltip.into(),
                d.infeed_percent_average.into(),
                d.infeed_percent_minimum.into(),
                d.infeed_percent_maximum.into(),
            ]);
            table.row(cells);
        }
    }
    table
}

/// `AddTpuStepTimeBreakdown` (with XProf 2.24's active-time averages).
fn add_tpu_step_time_breakdown(breakdown: &TpuStepTimeBreakdown, table: &mut DataTable) {
    if breakdown.sparse_core_step_summary.is_none() {
        table
            .prop("scv0_compute_ms_average", two_digits(breakdown.scv0_compute_ms_summary.average))
            .prop("scv0_infeed_ms_average", two_digits(breakdown.scv0_infeed_ms_summary.average));
    }
    table
        .prop("tc_compute_ms_average", two_digits(breakdown.tc_compute_ms_summary.average))
        .prop("tc_infeed_ms_average", two_digits(breakdown.tc_infeed_ms_summary.average))
        .prop("tc_outfeed_ms_average", two_digits(breakdown.tc_outfeed_ms_summary.average))
        .prop("tc_idle_ms_average", two_digits(breakdown.tc_idle_ms_summary.average))
        .prop("tc_active_ms_average", two_digits(breakdown.tc_active_ms_summary.average))
        .prop("active_steptime_ms_average", two_digits(breakdown.active_step_time_ms_summary.average))
        .prop("host_transfer_ms_average", two_digits(breakdown.host_transfer_ms_summary.average));
    if let Some(sc) = &breakdown.sparse_core_step_summary
        && sc.sc_step_time_ms_summary.minimum > 0.0
    {
        table
            .prop("sc_compute_ms_average", two_digits(sc.sc_compute_ms_summary.average))
            .prop("sc_infeed_ms_average", two_digits(sc.sc_infeed_ms_summary.average))
            .prop("sc_outfeed_ms_average", two_digits(sc.sc_outfeed_ms_summary.average))
            .prop("sc_idle_ms_average", two_digits(sc.sc_idle_ms_summary.average))
            .prop("sc_active_ms_average", two_digits(sc.sc_active_ms_summary.average))
            .prop("sc_step_time_ms_average", one_digit(sc.sc_step_time_ms_summary.average));
    }
}

/// `GenerateMaxInfeedCoreTable`: for TPU, the core with the largest infeed in each step.
fn max_infeed_core_table(result: &InputPipelineAnalysis) -> DataTable {
    let mut table = DataTable::new();
    if result.hardware_type != hardware_type_name(HardwareType::Tpu) {
        return table;
    }
    table.column("index", ColumnType::String, "Index");
    for i in 0..result.step_details.len() {
        let index = i.to_string();
        table.column(&index, ColumnType::String, &index);
    }
    let mut step_numbers = vec!["Step number".into()];
    let mut core_names = vec!["Core name".into()];
    if let StepDetails::Tpu(steps) = &result.step_details {
        for d in steps {
            step_numbers.push(d.step_number.to_string().into());
            let name = if d.max_infeed_time_core_name.is_empty() { "unknown" } else { &d.max_infeed_time_core_name };
            core_names.push(name.into());
        }
    }
    table.row(step_numbers).row(core_names);
    table
}

/// `GenerateHostTable`: the host input ops and the input-time split.
fn host_table(result: &InputPipelineAnalysis) -> DataTable {
    let mut table = DataTable::new();
    table
        .column("opName", ColumnType::String, "Input Op")
        .column("count", ColumnType::Number, "Count")
        .column("timeInMs", ColumnType::Number, "Total Time (in ms)")
        .column("timeInPercent", ColumnType::Number, "Total Time (as % of total input-processing time)")
        .column("selfTimeInMs", ColumnType::Number, "Total Self Time (in ms)")
        .column("selfTimeInPercent", ColumnType::Number, "Total Self Time (as % of total input-processing time)")
        .column("category", ColumnType::String, "Category");
    for d in &result.input_op_details {
        table.row(vec![
            d.op_name.as_str().into(),
            (d.count as f64).into(),
            d.time_in_ms.into(),
            (d.time_in_percent / 100.0).into(),
            d.self_time_in_ms.into(),
            (d.self_time_in_percent / 100.0).into(),
            d.category.as_str().into(),
        ]);
    }
    let b = &result.input_time_breakdown;
    table
        .prop("enqueue_us", printf_fixed(b.enqueue_us, 3))
        .prop("demanded_file_read_us", printf_fixed(b.demanded_file_read_us, 3))
        .prop("advanced_file_read_us", printf_fixed(b.advanced_file_read_us, 3))
        .prop("preprocessing_us", printf_fixed(b.preprocessing_us, 3))
        .prop("unclassified_nonequeue_us", printf_fixed(b.unclassified_non_enqueue_us, 3));
    table
}

/// `GenerateRecommendationDataTable`.
fn recommendation_table(result: &InputPipelineAnalysis) -> DataTable {
    let mut table = DataTable::new();
    table.column("link", ColumnType::String, "link");
    for detail in &result.recommendation.details {
        table.row(vec![detail.as_str().into()]);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op_stats::{RunEnvironment, StepInfoResult};
    use oxprof_testkit::jsoncmp::{CmpOptions, compare};

    /// Two hosts' all-reduces summarised where each host is, then merged, break down as
    /// XProf's per-core lists combined do: ids shared across cores and hosts, a core
    /// without all-reduces, a duration that wraps, and cores with the same list.
    #[test]
    fn summarised_all_reduces_break_down_like_xprofs_lists() {
        use crate::op_stats::combine::global_core_id;
        use crate::op_stats::{AllReduceDbResult, AllReduceInfo};
        let info =
            |id, start_time_ps, end_time_ps| AllReduceInfo { id, start_time_ps, end_time_ps, ..Default::default() };
        let host_a = [
            (0, vec![info(1, 0, 10), info(2, 10, 30)]),
            (1, vec![info(1, 0, 12), info(2, 5, 20)]),
            (2, vec![]),
            (3, vec![info(1, 3, 13), info(2, 0, 40)]),
        ];
        let host_b = [(0, vec![info(1, 100, 107), info(3, u64::MAX - 5, 4)]), (1, vec![info(1, 0, 9), info(3, 0, 20)])];
        let step_of = |cores: &[(u32, Vec<AllReduceInfo>)]| PerCoreStepInfo {
            all_reduce_db_per_core: cores
                .iter()
                .map(|(core, list)| (*core, AllReduceDbResult { all_reduce_info: list.clone() }))
                .collect(),
            ..Default::default()
        };
        let mut listed = PerCoreStepInfo::default();
        for (host, cores) in [(0, &host_a[..]), (1, &host_b[..])] {
            for (core, list) in cores {
                let db = AllReduceDbResult { all_reduce_info: list.clone() };
                listed.all_reduce_db_per_core.insert(global_core_id(host, *core), db);
            }
        }
        let mut summarised = PerCoreStepInfo::default();
        for (host, cores) in [(0, &host_a[..]), (1, &host_b[..])] {
            let mut step = step_of(cores);
            step.summarise_all_reduces();
            assert!(step.all_reduce_db_per_core.is_empty());
            let summary = step.all_reduce_summary.unwrap();
            summarised
                .all_reduce_summary
                .get_or_insert_with(Default::default)
                .merge(summary, |c| global_core_id(host, c));
        }
        // Host A's cores 0, 1 and 3 ran ids [1, 2], its core 2 none; host B's cores [1, 3].
        assert_eq!(summarised.all_reduce_summary.as_ref().unwrap().id_lists, [vec![1, 2], vec![], vec![1, 3]]);
        let breakdown = |step: &PerCoreStepInfo| -> BTreeMap<u32, (u64, u64)> {
            all_reduce_breakdown_across_cores(step)
                .into_iter()
                .map(|(core, b)| (core, (b.compute_duration_ps, b.sync_duration_ps)))
                .collect()
        };
        let expected = breakdown(&listed);
        assert_eq!(expected.len(), 6);
        assert_eq!(expected[&global_core_id(1, 0)], (7 + 10, 0), "the fastest core has no sync time");
        assert_eq!(breakdown(&summarised), expected);
        // Settled (a pod's combine of every host): the ids are gone, the sums the same.
        let mut settled = summarised.clone();
        let summary = settled.all_reduce_summary.as_mut().unwrap();
        summary.settle();
        assert!(summary.id_lists.is_empty() && summary.min_duration_ps.is_empty() && summary.is_settled());
        assert!(summary.is_consistent());
        assert_eq!(breakdown(&settled), expected);
    }

    const MS: u64 = 1_000_000_000;

    /// `MayFixTpuStepAnalysis`: step 4 on two TensorCores, 0.6 ms compute and 0.4 ms idle
    /// each; the host waited 5 ms for input in step 4 (more than the idle time), so all of
    /// each core's idle becomes infeed. With an infeed op on the device nothing changes.
    #[test]
    fn tpu_idle_time_becomes_infeed_when_the_host_waits_for_input() {
        use crate::op_stats::event_span::{EventType, EventTypeSpan, StepDetails, Timespan};
        let core_step = || {
            let mut generic = GenericStepBreakdown::default();
            generic.category_ps.insert("convolution".into(), 6 * MS / 10);
            generic.category_ps.insert(IDLE.into(), 4 * MS / 10);
            StepInfoResult {
                step_num: 4,
                duration_ps: MS,
                step_breakdown: Some(StepBreakdown::Generic(generic)),
                ..Default::default()
            }
        };
        let mut step = PerCoreStepInfo { step_num: 4, ..Default::default() };
        step.step_info_per_core.insert(1, core_step());
        step.step_info_per_core.insert(2, core_step());
        let mut step_db = crate::op_stats::StepDatabaseResult::default();
        step_db.step_sequence.push(step);
        let mut host_step = StepDetails::default();
        host_step.add_event(EventTypeSpan { event_type: EventType::HostWaitInput, span: Timespan::new(0, 5 * MS) });
        let host_steps: crate::op_stats::event_span::StepEvents = [(4, host_step)].into();
        let core_details: BTreeMap<u32, CoreDetails> =
            [(1, CoreDetails::default()), (2, CoreDetails::default())].into();

        let mut with_infeed_op = step_db.clone();
        let device_db = OpMetricsDb {
            metrics_db: vec![OpMetrics { category: HLO_INFEED.into(), ..Default::default() }],
            ..Default::default()
        };
        may_fix_tpu_step_analysis(&host_steps, &device_db, &mut with_infeed_op, &core_details);
        assert_eq!(with_infeed_op, step_db);

        may_fix_tpu_step_analysis(&host_steps, &OpMetricsDb::default(), &mut step_db, &core_details);
        for info in step_db.step_sequence[0].step_info_per_core.values() {
            let Some(StepBreakdown::Generic(g)) = &info.step_breakdown else { panic!("generic breakdown") };
            assert_eq!((g.category_ps[HLO_INFEED], g.category_ps[IDLE]), (4 * MS / 10, 0));
        }
    }

    /// The step info a generic step result reads, for tests.
    fn generic_step(step_num: u32, duration_ps: u64, type_ps: &[(i32, u64)]) -> PerCoreStepInfo {
        let breakdown = GenericStepBreakdown { type_ps: type_ps.iter().copied().collect(), ..Default::default() };
        let info = StepInfoResult {
            step_num,
            duration_ps,
            step_breakdown: Some(StepBreakdown::Generic(breakdown)),
            ..StepInfoResult::default()
        };
        PerCoreStepInfo {
            step_num,
            step_info_per_core: [(DEFAULT_GPU_LOCAL_CORE_ID, info)].into_iter().collect(),
            ..PerCoreStepInfo::default()
        }
    }

    /// Two CPU steps: 10 ms (2 ms waiting for input, 8 ms host compute) and 20 ms (1 ms
    /// input, 19 ms compute): 3 of 30 ms is input, so moderately input-bound.
    #[test]
    fn generic_steps_classify_input() {
        let op_stats = OpStats {
            step_db: crate::op_stats::StepDatabaseResult {
                step_sequence: vec![
                    generic_step(
                        1,
                        10 * MS,
                        &[(event_type::HOST_WAIT_INPUT, 2 * MS), (event_type::HOST_COMPUTE, 8 * MS)],
                    ),
                    generic_step(2, 20 * MS, &[(event_type::HOST_WAIT_INPUT, MS), (event_type::HOST_COMPUTE, 19 * MS)]),
                ],
                ..Default::default()
            },
            run_environment: RunEnvironment { hardware_type: HardwareType::CpuOnly, ..Default::default() },
            ..OpStats::default()
        };
        let result = convert_op_stats_to_input_pipeline_analysis(&op_stats);
        assert_eq!(result.step_time_summary.average, 15.0);
        assert_eq!(result.input_percent, 10.0);
        let Bottleneck::Generic(b) = &result.recommendation.bottleneck_analysis else { panic!() };
        assert_eq!(b.input_classification, "both");
        assert!(b.input_statement.starts_with("Your program is MODERATELY input-bound because 10.0%"));
        let json = input_pipeline_analyzer(&op_stats);
        let table = &json[1];
        assert_eq!(table["p"]["infeed_time_ms_avg"], "1.5");
        assert_eq!(table["p"]["infeed_time_ms_sdv"], "0.7");
        assert_eq!(table["rows"][0]["c"][0]["v"], "1");
        assert_eq!(table["rows"].as_array().map(Vec::len), Some(2));
        assert_eq!(json[0], serde_json::json!({"cols": [], "rows": []}));
    }

    /// Host input ops: a tf.data op (preprocessing) and a host-to-device copy (enqueue);
    /// no step time, so the non-enqueue time is the tf.data time itself.
    #[test]
    fn host_input_ops_are_categorized_and_scaled() {
        let op = |name: &str, category: &str, self_ps: u64| OpMetrics {
            name: name.into(),
            category: category.into(),
            self_time_ps: self_ps,
            time_ps: self_ps,
            occurrences: 1,
            ..OpMetrics::default()
        };
        let host_db = OpMetricsDb {
            metrics_db: vec![
                op("Iterator::Root::Map", "Dataset", 3_000_000),
                op("Iterator::Root::Prefetch::TFRecord", "Dataset", 1_000_000),
                op("MEMCPYHToD", "MemcpyHToD", 2_000_000),
                op("MatMul", "MatMul", 9_000_000),
            ],
            ..OpMetricsDb::default()
        };
        let mut result = InputPipelineAnalysis::default();
        generate_host_result(&host_db, &mut result);
        let names: Vec<_> = result.input_op_details.iter().map(|d| (d.op_name.as_str(), d.category.as_str())).collect();
        assert_eq!(
            names,
            [
                ("Iterator::Root::Map", "Preprocessing"),
                ("MEMCPYHToD", "Enqueue"),
                ("Iterator::Root::Prefetch::TFRecord", "Advanced file read")
            ]
        );
        assert_eq!(result.input_op_details[0].time_in_percent, 50.0);
        assert_eq!(result.input_time_breakdown.enqueue_us, 2.0);
        assert_eq!(result.input_time_breakdown.preprocessing_us, 3.0);
        assert_eq!(result.input_time_breakdown.advanced_file_read_us, 1.0);
        assert_eq!(
            summary_next_step("host", &result.input_time_breakdown),
            "Look at Section 3 for the breakdown of input time on the host."
        );
    }

    /// One TPU step on two TensorCores (ids 1 and 2):
    ///
    /// ```text
    /// core 1: |--- 8 ms fusion ---|-- 2 ms infeed --|            step 10 ms
    /// core 2: |--- 9 ms fusion ----|                |- 1 ms idle step 10 ms
    /// ```
    #[test]
    fn tpu_step_across_cores_takes_min_compute_and_max_infeed() {
        let core_step = |categories: &[(&str, u64)]| StepInfoResult {
            step_num: 7,
            duration_ps: 10 * MS,
            step_breakdown: Some(StepBreakdown::Generic(GenericStepBreakdown {
                category_ps: categories.iter().map(|&(c, t)| (c.to_string(), t)).collect(),
                ..Default::default()
            })),
            ..StepInfoResult::default()
        };
        let step = PerCoreStepInfo {
            step_num: 7,
            step_info_per_core: [
                (1, core_step(&[("fusion", 8 * MS), ("infeed", 2 * MS)])),
                (2, core_step(&[("fusion", 9 * MS), ("IDLE", MS)])),
            ]
            .into_iter()
            .collect(),
            ..PerCoreStepInfo::default()
        };
        let cores: BTreeMap<u32, CoreDetails> =
            [(1, CoreDetails { hostname: "h".into(), device_ordinal: 0, ..Default::default() })].into_iter().collect();
        let d = tpu_step_across_cores(&step, &cores);
        assert_eq!(d.step_number, 7);
        assert_eq!(d.tc_compute_time_ms, 8.0);
        assert_eq!(d.tc_infeed_time_ms, 2.0);
        assert_eq!(d.tc_idle_time_ms, 0.0);
        assert_eq!(d.max_infeed_time_core_name, "h:0");
        assert_eq!((d.infeed_percent_minimum, d.infeed_percent_maximum, d.infeed_percent_average), (0.0, 20.0, 10.0));

        let op_stats = OpStats {
            step_db: crate::op_stats::StepDatabaseResult { step_sequence: vec![step], ..Default::default() },
            run_environment: RunEnvironment { hardware_type: HardwareType::Tpu, ..Default::default() },
            core_id_to_details: cores,
            ..OpStats::default()
        };
        let json = input_pipeline_analyzer(&op_stats);
        let expected = serde_json::json!({"cols": [{"id": "index", "label": "Index", "type": "string"},
            {"id": "0", "label": "0", "type": "string"}],
            "rows": [{"c": [{"v": "Step number"}, {"v": "7"}]}, {"c": [{"v": "Core name"}, {"v": "h:0"}]}]});
        assert!(compare(&expected, &json[0], CmpOptions::default()).is_match());
        assert_eq!(json[1]["p"]["tc_compute_ms_average"], "8.00");
        assert!(
            json[1]["p"]["input_conclusion"].as_str().is_some_and(|s| s.contains("HIGHLY input-bound because 20.0%"))
        );
    }

    #[test]
    fn matches_xprof_outputs() {
        let failures = crate::tools::step_breakdown::reference::compare_all(
            "input_pipeline_analyzer.json",
            input_pipeline_analyzer,
        );
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// XProf 2.24.2's TPU rules (inferred from its outputs), on one step of two cores:
    ///
    /// ```text
    /// core 1: |------ fusion 10.5 ms ------|   step 10 ms: ops outlast the step by 0.5
    /// core 2: |- fusion 6 -|host send 1|idle 3|   step 10 ms
    /// ```
    /// Core 1's idle wraps, so its optimal time saturates to 0 and the step's compute is 0;
    /// its active time is the whole step (negative off-duty counts as 0); core 2's active
    /// time is 10 − (3 + 1) = 6 ms.
    #[test]
    fn tpu_overrunning_core_has_no_compute_but_full_active_time() {
        let core_step = |categories: &[(&str, u64)]| StepInfoResult {
            step_num: 1,
            duration_ps: 10 * MS,
            step_breakdown: Some(StepBreakdown::Generic(GenericStepBreakdown {
                category_ps: categories.iter().map(|&(c, t)| (c.to_string(), t)).collect(),
                ..Default::default()
            })),
            ..StepInfoResult::default()
        };
        let step = PerCoreStepInfo {
            step_num: 1,
            step_info_per_core: [
                (1, core_step(&[("fusion", 10 * MS + MS / 2)])),
                (2, core_step(&[("fusion", 6 * MS), ("host send", MS), ("IDLE", 3 * MS)])),
            ]
            .into_iter()
            .collect(),
            ..PerCoreStepInfo::default()
        };
        let d = tpu_step_across_cores(&step, &BTreeMap::new());
        assert_eq!(d.tc_compute_time_ms, 0.0);
        assert_eq!(d.tc_active_time_ms, 8.0);
        assert_eq!(d.active_step_time_ms, 8.0);
        assert_eq!(d.host_transfer_ms, 1.0);
        assert_eq!(d.tc_idle_time_ms, 10.0);
    }
}
