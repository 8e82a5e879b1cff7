//! The framework op stats tool ("TensorFlow stats"): OpStats → [`FrameworkOpStats`], one row
//! per framework op on the device and on the host, ranked by self time, with and without
//! IDLE → XProf's two DataTables.
//! Port of `xprof/convert/op_stats_to_tf_stats.cc` and the parts of `model_tracker.cc` and
//! `kernel_stats_utils.cc` it uses.

use crate::model_tracker::ModelTracker;
use crate::op_stats::op_metrics_db::create_tf_metrics_db_from_device_op_metrics_db;
use crate::op_stats::{KernelStatsDb, OpMetricsDb, OpStats, PerfEnv, RunEnvironment};
use crate::tools::op_record::{
    ExecutionTimes, RankAndFraction, RooflineMetrics, execution_times, pico_to_micro, roofline_metrics, safe_divide,
    sorted_op_metrics_db,
};
use oxprof_report::{Report, Table, XprofBody, json_of};
use oxprof_wire::datatable::{Cell, ColumnType, DataTable};
use oxprof_wire::nlohmann;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

/// At most this many device ops and this many host ops are listed.
const MAX_NUM_OF_OPS: usize = 500;

/// Name and category of the op standing for idle time.
const IDLE: &str = "IDLE";

/// One row: a framework op on the host or the device (`TfStatsRecord`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TfStatsRecord {
    /// 1-based rank over device rows then host rows.
    pub rank: u64,
    /// Ran on the device (else the host).
    pub on_device: bool,
    /// Op type (the OpMetrics category).
    pub op_type: String,
    /// Op name.
    pub op_name: String,
    /// Executed eagerly.
    pub is_eager: bool,
    /// Counts and times.
    pub times: ExecutionTimes,
    /// Share of the device's total self time (0 on host rows).
    pub device_total_self_time_as_fraction: f64,
    /// Running sum of the device shares (0 on host rows).
    pub device_cumulative_total_self_time_as_fraction: f64,
    /// Share of the host's total self time (0 on device rows).
    pub host_total_self_time_as_fraction: f64,
    /// Running sum of the host shares (0 on device rows).
    pub host_cumulative_total_self_time_as_fraction: f64,
    /// Rates and bottleneck.
    pub roofline: RooflineMetrics,
    /// Fraction of the op's GPU kernel time on TensorCores.
    pub gpu_tensorcore_utilization: f64,
}

/// The `framework_op_stats` report (XProf's `TfStatsDatabase`): the table with and
/// without the IDLE rows.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FrameworkOpStats {
    /// Rows including IDLE.
    pub with_idle: Vec<TfStatsRecord>,
    /// Rows without IDLE (fractions relative to busy time).
    pub without_idle: Vec<TfStatsRecord>,
    /// `RunEnvironment::device_type`.
    pub device_type: String,
}

/// XProf's `framework_op_stats` JSON value: `[table with IDLE, table without IDLE]`.
pub fn framework_op_stats(op_stats: &OpStats) -> Value {
    FrameworkOpStats::from_op_stats(op_stats).xprof_json()
}

impl FrameworkOpStats {
    /// The report of `op_stats` (see [`tf_stats_database`]).
    pub fn from_op_stats(op_stats: &OpStats) -> FrameworkOpStats {
        tf_stats_database(op_stats)
    }

    /// XProf's two DataTables: with IDLE, without IDLE.
    pub fn data_tables(&self) -> [DataTable; 2] {
        [
            tf_stats_data_table(&self.with_idle, &self.device_type),
            tf_stats_data_table(&self.without_idle, &self.device_type),
        ]
    }

    /// XProf's JSON value of the body.
    pub fn xprof_json(&self) -> Value {
        Value::Array(self.data_tables().iter().map(DataTable::to_json).collect())
    }
}

impl Report for FrameworkOpStats {
    fn xprof_body(&self) -> XprofBody {
        XprofBody::json(nlohmann::dump(&self.xprof_json()))
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    fn tables(&self) -> Vec<Table> {
        let [with_idle, without_idle] = self.data_tables();
        vec![Table::from_data_table("ops", &with_idle), Table::from_data_table("ops_without_idle", &without_idle)]
    }
}

/// `ConvertOpStatsToTfStats`: device rows come from the HLO ops grouped by the framework op
/// that produced them; host rows are the host framework ops as they are.
pub fn tf_stats_database(op_stats: &OpStats) -> FrameworkOpStats {
    let device_tf_db = create_tf_metrics_db_from_device_op_metrics_db(&op_stats.device_op_metrics_db, true);
    let kernel_stats = group_kernel_reports_by_op_name(&op_stats.kernel_stats_db);
    let perf_env = op_stats.perf_env.clone().unwrap_or_default();
    let sides = TableInputs {
        host_db: &op_stats.host_op_metrics_db,
        device_db: &device_tf_db,
        kernel_stats: &kernel_stats,
        perf_env: &perf_env,
        run_env: &op_stats.run_environment,
    };
    FrameworkOpStats {
        with_idle: sides.table(false),
        without_idle: sides.table(true),
        device_type: op_stats.run_environment.device_type.clone(),
    }
}

/// `OpLevelKernelStats`: GPU kernel time of one framework op.
#[derive(Debug, Clone, Copy, Default)]
struct OpKernelTime {
    total_duration_ns: u64,
    tensor_core_duration_ns: u64,
}

/// `GroupKernelReportsByOpName`: kernel time per framework op name.
fn group_kernel_reports_by_op_name(db: &KernelStatsDb) -> HashMap<&str, OpKernelTime> {
    let mut by_op: HashMap<&str, OpKernelTime> = HashMap::new();
    for report in &db.reports {
        let time = by_op.entry(report.op_name.as_str()).or_default();
        time.total_duration_ns = time.total_duration_ns.wrapping_add(report.total_duration_ns);
        if report.is_kernel_using_tensor_core {
            time.tensor_core_duration_ns = time.tensor_core_duration_ns.wrapping_add(report.total_duration_ns);
        }
    }
    by_op
}

/// What `GenerateTfStatsTable` reads.
struct TableInputs<'a> {
    host_db: &'a OpMetricsDb,
    device_db: &'a OpMetricsDb,
    kernel_stats: &'a HashMap<&'a str, OpKernelTime>,
    perf_env: &'a PerfEnv,
    run_env: &'a RunEnvironment,
}

impl TableInputs<'_> {
    /// `GenerateTfStatsTable`: the top device ops, then the top host ops, each by self
    /// time. The rank runs on across both; each side's fractions are of that side's
    /// total time (its span, or its busy time when `exclude_idle`), accumulated down the
    /// side. IDLE is skipped after the top-500 cut, as in XProf.
    fn table(&self, exclude_idle: bool) -> Vec<TfStatsRecord> {
        let mut records = Vec::new();
        let mut rank = 0;
        for (on_device, db) in [(true, self.device_db), (false, self.host_db)] {
            let total_time_us = pico_to_micro(if exclude_idle { db.total_op_time_ps } else { db.total_time_ps });
            let mut previous = RankAndFraction { rank, ..Default::default() };
            for metrics in sorted_op_metrics_db(db, Some(MAX_NUM_OF_OPS)) {
                if exclude_idle && metrics.category == IDLE {
                    continue;
                }
                let times = execution_times(metrics);
                let ranked = previous.next(total_time_us, times.total_self_time_in_us);
                let gpu_tensorcore_utilization = match self.kernel_stats.get(metrics.name.as_str()) {
                    Some(kernels) if on_device => {
                        safe_divide(kernels.tensor_core_duration_ns as f64, kernels.total_duration_ns as f64)
                    }
                    _ => 0.0,
                };
                let (device_share, host_share) =
                    if on_device { (ranked, RankAndFraction::default()) } else { (RankAndFraction::default(), ranked) };
                records.push(TfStatsRecord {
                    rank: ranked.rank,
                    on_device,
                    op_type: metrics.category.clone(),
                    op_name: metrics.name.clone(),
                    is_eager: metrics.is_eager,
                    times,
                    device_total_self_time_as_fraction: device_share.fraction,
                    device_cumulative_total_self_time_as_fraction: device_share.cumulative_fraction,
                    host_total_self_time_as_fraction: host_share.fraction,
                    host_cumulative_total_self_time_as_fraction: host_share.cumulative_fraction,
                    roofline: roofline_metrics(metrics, self.perf_env, self.run_env, false),
                    gpu_tensorcore_utilization,
                });
                previous = ranked;
            }
            rank = previous.rank;
        }
        records
    }
}

/// `TfStatsToDataTable`: the rows as XProf's DataTable, with the GPU TensorCore column only
/// when the device type names a GPU, and the task/architecture guess as table properties.
pub fn tf_stats_data_table(records: &[TfStatsRecord], device_type: &str) -> DataTable {
    let is_gpu = device_type.contains("GPU");
    let mut table = DataTable::new();
    let columns_before_gpu = [
        ("rank", ColumnType::Number, "Rank"),
        ("host_or_device", ColumnType::String, "Host/device"),
        ("type", ColumnType::String, "Operation Type"),
        ("operation", ColumnType::String, "Operation Name"),
        ("occurrences", ColumnType::Number, "#Occurrences"),
        ("total_time", ColumnType::Number, "Total time (us)"),
        ("avg_time", ColumnType::Number, "Avg. time (us)"),
        ("total_self_time", ColumnType::Number, "Total self-time (us)"),
        ("avg_self_time", ColumnType::Number, "Avg. self-time (us)"),
        ("device_total_self_time_percent", ColumnType::Number, "Total self-time on Device (%)"),
        ("device_cumulative_total_self_time_percent", ColumnType::Number, "Cumulative total-self time on Device (%)"),
        ("host_total_self_time_percent", ColumnType::Number, "Total self-time on Host (%)"),
        ("Host_cumulative_total_self_time_percent", ColumnType::Number, "Cumulative total-self time on Host (%)"),
        ("measured_flop_rate", ColumnType::Number, "Normalized FLOP Rate (FLOPs/s)"),
        ("model_flop_rate", ColumnType::Number, "Model FLOP Rate (GFLOP/s)"),
        ("measured_memory_bw", ColumnType::Number, "Measured Memory BW (GBytes/Sec)"),
        ("operational_intensity", ColumnType::Number, "Operational Intensity (FLOPs/Byte)"),
    ];
    for (id, ty, label) in columns_before_gpu {
        table.column(id, ty, label);
    }
    if is_gpu {
        table.column("gpu_tensorcore_utilization", ColumnType::Number, "GPU TensorCore utilization");
    }
    table.column("bound_by", ColumnType::String, "Bound by");
    table.column("eager", ColumnType::String, "Execution mode");

    let mut model = ModelTracker::default();
    for r in records {
        let mut cells: Vec<Cell> = vec![
            (r.rank as f64).into(),
            (if r.on_device { "Device" } else { "Host" }).into(),
            r.op_type.as_str().into(),
            r.op_name.as_str().into(),
            f64::from(r.times.occurrences).into(),
            r.times.total_time_in_us.into(),
            r.times.avg_time_in_us.into(),
            r.times.total_self_time_in_us.into(),
            r.times.avg_self_time_in_us.into(),
            r.device_total_self_time_as_fraction.into(),
            r.device_cumulative_total_self_time_as_fraction.into(),
            r.host_total_self_time_as_fraction.into(),
            r.host_cumulative_total_self_time_as_fraction.into(),
            r.roofline.measured_flop_rate.into(),
            r.roofline.model_flop_rate.into(),
            r.roofline.measured_memory_bw.into(),
            r.roofline.operational_intensity.into(),
        ];
        if is_gpu {
            cells.push(r.gpu_tensorcore_utilization.into());
        }
        cells.push(r.roofline.bound_by.as_str().into());
        cells.push((if r.is_eager { "Eager" } else { "Function" }).into());
        table.row(cells);
        model.process_op(&r.op_name, &r.op_type);
    }
    table.prop("task_type", model.task_type());
    // XProf's tracker never sets its LSTM/GRU/RNN/CNN/MLP flags from op names, so the
    // architecture is always reported as unknown.
    table.prop("architecture_type", "Unknown");
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op_stats::OpMetrics;
    use crate::op_stats::{HardwareType, KernelReport};
    use golden::{external_cases, load_op_stats, read_json, refkit_cases};
    use oxprof_testkit::jsoncmp::{CmpOptions, compare};

    fn op(name: &str, category: &str, provenance: &str, self_time_ps: u64, occurrences: u32) -> OpMetrics {
        OpMetrics {
            name: name.into(),
            category: category.into(),
            provenance: provenance.into(),
            occurrences,
            time_ps: self_time_ps,
            self_time_ps,
            ..Default::default()
        }
    }

    /// Device: two HLO ops from `dense/MatMul:MatMul` (3 µs, 1 µs), one without provenance
    /// (2 µs), IDLE (4 µs), span 10 µs. Host: `train:Train` 6 µs of an 8 µs span + IDLE 2 µs.
    fn tiny_op_stats() -> OpStats {
        let device_op_metrics_db = OpMetricsDb {
            metrics_db: vec![
                op("fusion", "fusion", "dense/MatMul:MatMul", 3_000_000, 2),
                op("copy", "copy", "", 2_000_000, 1),
                op("dot", "dot", "dense/MatMul:MatMul", 1_000_000, 5),
                op(IDLE, IDLE, "", 4_000_000, 0),
            ],
            total_time_ps: 10_000_000,
            total_op_time_ps: 6_000_000,
            ..Default::default()
        };
        let host_op_metrics_db = OpMetricsDb {
            metrics_db: vec![op("gradient_tape/train", "Train", "", 6_000_000, 1), op(IDLE, IDLE, "", 2_000_000, 0)],
            total_time_ps: 8_000_000,
            total_op_time_ps: 6_000_000,
            ..Default::default()
        };
        let reports = vec![
            KernelReport {
                op_name: "dense/MatMul".into(),
                total_duration_ns: 30,
                is_kernel_using_tensor_core: true,
                ..Default::default()
            },
            KernelReport { op_name: "dense/MatMul".into(), total_duration_ns: 10, ..Default::default() },
        ];
        OpStats {
            device_op_metrics_db,
            host_op_metrics_db,
            kernel_stats_db: KernelStatsDb { reports },
            run_environment: RunEnvironment {
                device_type: "Nvidia GPU".into(),
                hardware_type: HardwareType::Gpu,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// (rank, on device, type, name, occurrences, self time µs, share, cumulative share).
    type RowSummary<'a> = (u64, bool, &'a str, &'a str, u32, f64, f64, f64);

    #[test]
    fn groups_device_ops_by_framework_op_and_ranks_both_sides() {
        let db = tf_stats_database(&tiny_op_stats());
        let rows: Vec<RowSummary<'_>> = db
            .with_idle
            .iter()
            .map(|r| {
                let fraction =
                    if r.on_device { r.device_total_self_time_as_fraction } else { r.host_total_self_time_as_fraction };
                let cumulative = if r.on_device {
                    r.device_cumulative_total_self_time_as_fraction
                } else {
                    r.host_cumulative_total_self_time_as_fraction
                };
                (
                    r.rank,
                    r.on_device,
                    r.op_type.as_str(),
                    r.op_name.as_str(),
                    r.times.occurrences,
                    r.times.total_self_time_in_us,
                    fraction,
                    cumulative,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                // Equal self time: by name, and "IDLE" sorts before "dense/…".
                (1, true, IDLE, IDLE, 0, 4.0, 0.4, 0.4),
                (2, true, "MatMul", "dense/MatMul", 5, 4.0, 0.4, 0.8),
                (3, true, "Unknown", "copy", 1, 2.0, 0.2, 1.0),
                (4, false, "Train", "gradient_tape/train", 1, 6.0, 0.75, 0.75),
                (5, false, IDLE, IDLE, 0, 2.0, 0.25, 1.0),
            ]
        );
        assert_eq!(db.with_idle[1].gpu_tensorcore_utilization, 0.75);
        let without: Vec<(u64, &str, f64)> = db
            .without_idle
            .iter()
            .map(|r| {
                (r.rank, r.op_name.as_str(), r.device_total_self_time_as_fraction + r.host_total_self_time_as_fraction)
            })
            .collect();
        assert_eq!(without, [(1, "dense/MatMul", 4.0 / 6.0), (2, "copy", 2.0 / 6.0), (3, "gradient_tape/train", 1.0)]);

        let json = framework_op_stats(&tiny_op_stats());
        let table = &json[0];
        assert_eq!(table["p"]["task_type"], "Training");
        assert_eq!(table["cols"].as_array().map(Vec::len), Some(20));
        assert_eq!(table["rows"][1]["c"][17]["v"], 0.75);
    }

    #[test]
    fn task_type_from_op_names() {
        let mut tracker = ModelTracker::default();
        tracker.process_op("model/dense/MatMul", "MatMul");
        tracker.process_op("jit(f)/jvp(g)/dot_general", "dot_general");
        assert_eq!(tracker.task_type(), "Inference");
        tracker.process_op("jit(f)/transpose(jvp(g))/dot_general", "dot_general");
        assert_eq!(tracker.task_type(), "Training");
        let mut tf = ModelTracker::default();
        tf.process_op("gradients_2/dense/MatMul", "MatMul");
        assert_eq!(tf.task_type(), "Training");
    }

    /// Compares with no numeric tolerance at all: the numbers are bit-exact. serde_json
    /// (without its `float_roundtrip` feature) may parse a decimal 1 ULP off, so our output
    /// goes through the same text → parser round trip as the golden: equal doubles print
    /// as equal shortest digits and parse alike.
    fn check(name: &str, op_stats: &OpStats, expected: &Value) -> bool {
        let actual: Value = serde_json::from_str(&framework_op_stats(op_stats).to_string()).unwrap();
        let exact = CmpOptions { rel: 0.0, abs: 0.0, ..Default::default() };
        let report = compare(expected, &actual, exact);
        if !report.is_match() {
            eprintln!("{name}: {}", report.summary(10));
        }
        report.is_match()
    }

    #[test]
    fn matches_xprof_on_refkit_profiles() {
        let mut failed = Vec::new();
        for case in refkit_cases() {
            let expected = read_json(&case.xprof_out.join("framework_op_stats.json"));
            if !check(&case.name, &load_op_stats(&case.op_stats), &expected) {
                failed.push(case.name);
            }
        }
        assert!(failed.is_empty(), "mismatch: {failed:?}");
    }

    #[test]
    fn matches_xprof_on_external_profiles() {
        let Some(cases) = external_cases() else { return };
        let mut failed = Vec::new();
        for case in cases {
            let expected = read_json(&case.xprof_out.join("framework_op_stats.json"));
            if !check(&case.name, &load_op_stats(&case.op_stats), &expected) {
                failed.push(case.name);
            }
        }
        assert!(failed.is_empty(), "mismatch: {failed:?}");
    }

    /// Our framework op stats as CSV equal XProf's `/data_csv` output byte for byte.
    #[test]
    fn csv_matches_xprof() {
        let mut failed = Vec::new();
        for case in refkit_cases() {
            let expected = golden::read_text(&case.xprof_out.join("framework_op_stats.csv"));
            let actual = oxprof_wire::csv::datatable_to_csv(&framework_op_stats(&load_op_stats(&case.op_stats)));
            if expected != actual {
                let first_diff = expected.lines().zip(actual.lines()).find(|(e, a)| e != a);
                eprintln!("{}: first differing line {first_diff:?}", case.name);
                failed.push(case.name);
            }
        }
        assert!(failed.is_empty(), "mismatch: {failed:?}");
    }

    /// Timing on a synthetic OpStats far larger than real ones (100k host ops, 200k HLO ops
    /// from 20k framework ops, 2000 steps × 8 cores):
    /// `cargo test --release -p oxprof-xprof perf_large_op_stats -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn perf_large_op_stats() {
        use crate::op_stats::{CoreDetails, PerCoreStepInfo, StepInfoResult};
        let mut op_stats = OpStats::default();
        for i in 0..100_000u64 {
            let m = op(&format!("scope/op_{i}"), "MatMul", "", 1_000 + i % 977, 3);
            op_stats.host_op_metrics_db.metrics_db.push(m);
        }
        for i in 0..200_000u64 {
            let provenance = format!("model/layer_{}/MatMul:MatMul", i % 20_000);
            op_stats.device_op_metrics_db.metrics_db.push(op(
                &format!("fusion.{i}"),
                "fusion",
                &provenance,
                500 + i % 313,
                2,
            ));
        }
        for step_num in 0..2000u32 {
            let mut step = PerCoreStepInfo { step_num, ..Default::default() };
            for core in 0..8u32 {
                step.step_info_per_core
                    .insert(core, StepInfoResult { step_num, duration_ps: 1_000_000, ..Default::default() });
            }
            op_stats.step_db.step_sequence.push(step);
        }
        for core in 0..8u32 {
            op_stats.core_id_to_details.insert(core, CoreDetails { hostname: "h".into(), ..Default::default() });
        }
        let start = std::time::Instant::now();
        let tables = framework_op_stats(&op_stats);
        let framework_time = start.elapsed();
        let start = std::time::Instant::now();
        let pods = crate::tools::pod_viewer::pod_viewer(&op_stats);
        let pod_time = start.elapsed();
        eprintln!(
            "framework_op_stats: {framework_time:?} ({} rows); pod_viewer: {pod_time:?} ({} bytes)",
            tables[0]["rows"].as_array().map_or(0, Vec::len),
            pods.to_string().len()
        );
    }
}

/// XProf's own OpStats and tool outputs for golden tests (shared with the other tools'
/// tests in this directory).
#[cfg(test)]
pub(crate) mod golden {
    pub(crate) use crate::op_stats::load_op_stats;
    pub(crate) use oxprof_testkit::files::{read_json, read_text, repo_root};
    use std::path::PathBuf;

    /// One profile: XProf's OpStats and the folder of XProf's outputs computed from it.
    pub(crate) struct Case {
        pub name: String,
        pub op_stats: PathBuf,
        pub xprof_out: PathBuf,
    }

    /// The committed refkit profiles.
    pub(crate) fn refkit_cases() -> Vec<Case> {
        let names = ["tf_keras_fit", "tf_custom_loop", "jax_train", "tf_memory", "tf_memory_nobfc"];
        names
            .iter()
            .map(|name| {
                let xprof_out = repo_root().join("testdata/profiles").join(name).join("xprof_out");
                Case { name: name.to_string(), op_stats: xprof_out.join("op_stats.json"), xprof_out }
            })
            .collect()
    }

    /// The third-party profiles (XProf's OpStats committed, its outputs in the shared
    /// folder), or `None` with a SKIP note when the shared folder is absent.
    pub(crate) fn external_cases() -> Option<Vec<Case>> {
        let external = std::env::var_os("OXPROF_EXTERNAL_TESTDATA")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo_root().join("../shared/testdata/external"));
        let outputs = external.join("../external-xprof-out");
        if !outputs.is_dir() {
            eprintln!("SKIP: no XProf outputs at {}", outputs.display());
            return None;
        }
        let cases = [
            ("GPU-multi-worker__34.83.195.179_6003", "openxla-xprof/34.83.195.179_6003/xprof_out"),
            ("GPU-multi-worker_two_hosts", "openxla-xprof/GPU-multi-worker_two_hosts/xprof_out/ALL_HOSTS"),
            ("test_xplanes__tpu_inference_2", "openxla-xprof/tpu_inference_2/xprof_out"),
            ("jax08_attention__tw003", "AMD-AGI-TraceLens/jax08_attention__tw003/xprof_out"),
            ("jax08_conv__tw003", "AMD-AGI-TraceLens/jax08_conv__tw003/xprof_out"),
            ("jax08_elementwise__tw003", "AMD-AGI-TraceLens/jax08_elementwise__tw003/xprof_out"),
            ("jax08_gemm__tw003", "AMD-AGI-TraceLens/jax08_gemm__tw003/xprof_out"),
            ("jax_conv_minimal", "AMD-AGI-TraceLens/chi-mi300x-013.ord.vultr.cpe.ice.amd.com/xprof_out"),
            ("test_data_jax_te_fused_attn_categorization__934987a2fc2f", "AMD-AGI-TraceLens/934987a2fc2f/xprof_out"),
        ];
        Some(
            cases
                .iter()
                .map(|(name, out)| Case {
                    name: name.to_string(),
                    op_stats: repo_root().join("testdata/external-opstats").join(format!("{name}.op_stats.json.gz")),
                    xprof_out: outputs.join(out),
                })
                .collect(),
        )
    }
}
