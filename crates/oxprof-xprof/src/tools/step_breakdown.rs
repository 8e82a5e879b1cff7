//! Shared building blocks of the input-pipeline and overview-page tools: XProf's running
//! statistic (`tsl::Stat`) and step summaries, the per-step event types of a
//! `GenericStepBreakdown`, unit conversions, diagnostics, and the device framework-op
//! database behind the overview's top-10 table. (C-style number text is
//! `oxprof_wire::cxx_printf`.)

use crate::op_stats::{OpMetrics, OpMetricsDb, OpStats, OpStatsDiagnostics};
use oxprof_wire::datatable::{ColumnType, DataTable};
use serde::{Deserialize, Serialize};

/// `EventType` of `xprof/utils/event_span.h`: the keys of `GenericStepBreakdown.type_ps`.
pub mod event_type {
    /// Not traced.
    pub const UNKNOWN_TIME: i32 = 0;
    /// Host computing.
    pub const HOST_COMPUTE: i32 = 10;
    /// Host compiling.
    pub const HOST_COMPILE: i32 = 60;
    /// Host-to-device transfer.
    pub const HOST_TO_DEVICE: i32 = 80;
    /// Host preparing a device launch.
    pub const HOST_PREPARE: i32 = 90;
    /// Collectives.
    pub const DEVICE_COLLECTIVES: i32 = 100;
    /// Host waiting for input.
    pub const HOST_WAIT_INPUT: i32 = 110;
    /// Device-to-device transfer.
    pub const DEVICE_TO_DEVICE: i32 = 120;
    /// Device-to-host transfer.
    pub const DEVICE_TO_HOST: i32 = 130;
    /// Device computing, 32 bit.
    pub const DEVICE_COMPUTE_32: i32 = 140;
    /// Device computing, 16 bit.
    pub const DEVICE_COMPUTE_16: i32 = 150;
    /// Device waiting for another device.
    pub const DEVICE_WAIT_DEVICE: i32 = 160;
    /// Device waiting for the host.
    pub const DEVICE_WAIT_HOST: i32 = 170;
}

/// Core ids at and above this are SparseCores (`kSparseCoreIndexStart`).
pub const SPARSE_CORE_INDEX_START: u32 = 1_000_000;
/// The core id under which generic (CPU/GPU) steps are stored (`kDefaultGpuLocalCoreId`).
pub const DEFAULT_GPU_LOCAL_CORE_ID: u32 = 1;
/// Category and name of the idle pseudo-op (`kIdle`).
pub const IDLE: &str = "IDLE";

/// The NaN x86 produces for invalid operations (0/0, √-1): sign bit set, printed `-nan`.
pub const X86_DEFAULT_NAN: f64 = f64::from_bits(0xfff8_0000_0000_0000);

/// `a / b` as x86 computes it: an invalid division (0/0, ∞/∞) yields [`X86_DEFAULT_NAN`].
pub fn x86_div(a: f64, b: f64) -> f64 {
    let quotient = a / b;
    if quotient.is_nan() && !a.is_nan() && !b.is_nan() { X86_DEFAULT_NAN } else { quotient }
}

/// `sqrt(v)` as x86 computes it: negative inputs yield [`X86_DEFAULT_NAN`].
pub fn x86_sqrt(v: f64) -> f64 {
    if v < 0.0 { X86_DEFAULT_NAN } else { v.sqrt() }
}

/// `tsl::profiler::SafeDivide`: 0 when the divisor is within 1e-10 of zero.
pub fn safe_divide(dividend: f64, divisor: f64) -> f64 {
    const EPSILON: f64 = 1.0e-10;
    if -EPSILON < divisor && divisor < EPSILON { 0.0 } else { dividend / divisor }
}

/// Picoseconds to milliseconds (`PicoToMilli(uint64_t)`).
pub fn pico_to_milli(ps: u64) -> f64 {
    ps as f64 / 1e9
}

/// Picoseconds to microseconds.
pub fn pico_to_micro(ps: u64) -> f64 {
    ps as f64 / 1e6
}

/// Picoseconds to nanoseconds.
pub fn pico_to_nano(ps: u64) -> f64 {
    ps as f64 / 1e3
}

/// A double passed where C++ takes a `uint64_t` (truncation toward zero; out-of-range
/// values saturate, where C++ is undefined).
pub fn f64_to_u64(v: f64) -> u64 {
    v as u64
}

/// A value `tsl::Stat` can accumulate.
pub trait StatValue: Copy + PartialOrd {
    /// `std::numeric_limits<T>::min()`, the initial maximum (the smallest *positive*
    /// double for floating point, which leaks into outputs when all samples are ≤ 0).
    const LIMITS_MIN: Self;
    /// `std::numeric_limits<T>::max()`, the initial minimum.
    const LIMITS_MAX: Self;
    /// Zero.
    const ZERO: Self;
    /// Addition with the type's C++ semantics (wrapping for unsigned).
    fn plus(self, other: Self) -> Self;
    /// Conversion to double.
    fn to_f64(self) -> f64;
}

impl StatValue for f64 {
    const LIMITS_MIN: f64 = f64::MIN_POSITIVE;
    const LIMITS_MAX: f64 = f64::MAX;
    const ZERO: f64 = 0.0;
    fn plus(self, other: f64) -> f64 {
        self + other
    }
    fn to_f64(self) -> f64 {
        self
    }
}

impl StatValue for u64 {
    const LIMITS_MIN: u64 = 0;
    const LIMITS_MAX: u64 = u64::MAX;
    const ZERO: u64 = 0;
    fn plus(self, other: u64) -> u64 {
        self.wrapping_add(other)
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}

/// `tsl::Stat<T>`: count, sum, squared sum, min and max of a sample stream, with its
/// quirks kept: the maximum starts at `numeric_limits<T>::min()` and the minimum at
/// `numeric_limits<T>::max()`, so a lone sample of 0.0 leaves max = 2.2e-308 and the
/// sample variance becomes 0/0.
#[derive(Debug, Clone, Copy)]
pub struct Stat<T: StatValue> {
    count: i64,
    sum: T,
    squared_sum: f64,
    min: T,
    max: T,
}

impl<T: StatValue> Default for Stat<T> {
    fn default() -> Self {
        Stat { count: 0, sum: T::ZERO, squared_sum: 0.0, min: T::LIMITS_MAX, max: T::LIMITS_MIN }
    }
}

impl<T: StatValue> Stat<T> {
    /// Adds a sample (`std::max(v, max_)`, `std::min(v, min_)`: a NaN sample replaces both).
    pub fn update(&mut self, v: T) {
        self.max = if v < self.max { self.max } else { v };
        self.min = if self.min < v { self.min } else { v };
        self.count += 1;
        self.sum = self.sum.plus(v);
        self.squared_sum += v.to_f64() * v.to_f64();
    }

    /// No samples.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Smallest sample (`numeric_limits<T>::max()` when empty).
    pub fn min(&self) -> T {
        self.min
    }

    /// Largest sample (`numeric_limits<T>::min()` when empty).
    pub fn max(&self) -> T {
        self.max
    }

    /// Mean, in double; NaN when empty.
    pub fn avg(&self) -> f64 {
        if self.is_empty() { f64::NAN } else { self.sum.to_f64() / self.count as f64 }
    }

    fn all_same(&self) -> bool {
        self.count == 0 || self.min == self.max
    }
}

impl Stat<f64> {
    /// Sample variance `(Σx² − (Σx)²/n) / (n − 1)`, 0 when all samples are equal.
    pub fn sample_variance(&self) -> f64 {
        if self.all_same() {
            return 0.0;
        }
        let n = self.count as f64;
        x86_div(self.squared_sum - self.sum * self.sum / n, n - 1.0)
    }
}

/// `StepSummary`: average, sample standard deviation, minimum and maximum.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct StepSummary {
    /// Average.
    #[serde(with = "oxprof_report::non_finite_f64")]
    pub average: f64,
    /// Sample standard deviation.
    #[serde(with = "oxprof_report::non_finite_f64")]
    pub standard_deviation: f64,
    /// Minimum.
    #[serde(with = "oxprof_report::non_finite_f64")]
    pub minimum: f64,
    /// Maximum.
    #[serde(with = "oxprof_report::non_finite_f64")]
    pub maximum: f64,
}

impl StepSummary {
    /// `GetStepSummaryForSampleStats`: all zeros for no samples.
    pub fn from_stat(stat: &Stat<f64>) -> StepSummary {
        if stat.is_empty() {
            return StepSummary::default();
        }
        StepSummary {
            average: stat.avg(),
            standard_deviation: x86_sqrt(stat.sample_variance()),
            minimum: stat.min(),
            maximum: stat.max(),
        }
    }
}

/// `AnchorElement`: an HTML link opening in a new tab.
pub fn anchor_element(url: &str, text: &str) -> String {
    format!("<a href=\"{url}\" target=\"_blank\">{text}</a>")
}

const ERROR_INCOMPLETE_STEP: &str = "Incomplete step observed and hence the step time is unknown.\
Instead, we use the trace duration as the step time. This may happen if your profiling duration \
is shorter than the step time. In this case, you may try to profile longer.";

const ERROR_EMPTY_INTERSECT: &str = "Although there are steps observed on some host(s), the \
intersection of the steps over all hosts is empty (because the differences among individual \
host's step sequences are too big). Consequently, the overall step time is unknown.";

const ERROR_NO_STEP_MARKER: &str = "No step marker observed and hence the step time is unknown. \
This may happen if (1) training steps are not instrumented (e.g., if you are not using Keras) or \
(2) the profiling duration is shorter than the step time. For (1), you need to add step \
instrumentation; for (2), you may try to profile longer.";

const NO_DEVICE_TRACE_COLLECTED: &str = "No TensorCore device trace was collected. This might \
happen if your job hadn't been run on the device when sampling was turned on. You could try the \
sampling again later.";

const STEPS_DROPPED: &str = " steps dropped. This might happen when you profile many hosts \
and/or many steps. You could try to profile shorter or reduce the number of hosts you profile.";

/// `PopulateStepDiagnostics`: warnings about incomplete, missing or dropped steps.
pub fn populate_step_diagnostics(op_stats: &OpStats, diagnostics: &mut OpStatsDiagnostics) {
    let step_db = &op_stats.step_db;
    if step_db.use_incomplete_step {
        diagnostics.warnings.push(ERROR_INCOMPLETE_STEP.into());
    } else if step_db.step_sequence.is_empty() {
        let warning = if step_db.empty_intersect { ERROR_EMPTY_INTERSECT } else { ERROR_NO_STEP_MARKER };
        diagnostics.warnings.push(warning.into());
    }
    if step_db.num_steps_dropped != 0 {
        diagnostics.warnings.push(format!("{}{STEPS_DROPPED}", step_db.num_steps_dropped));
    }
}

/// `PopulateOverviewDiagnostics`: OpStats' errors (sorted) or, when there are none, a
/// missing-device-trace error; OpStats' warnings; then the step warnings.
pub fn populate_overview_diagnostics(op_stats: &OpStats, diagnostics: &mut OpStatsDiagnostics) {
    let source = op_stats.diagnostics.clone().unwrap_or_default();
    diagnostics.errors = source.errors;
    diagnostics.errors.sort();
    let run_environment = &op_stats.run_environment;
    if diagnostics.errors.is_empty() && run_environment.device_type != "CPU" && run_environment.device_core_count <= 0 {
        diagnostics.errors.push(NO_DEVICE_TRACE_COLLECTED.into());
    }
    diagnostics.warnings = source.warnings;
    populate_step_diagnostics(op_stats, diagnostics);
}

/// `GenerateDiagnosticsDataTable`: one row per message, INFO then WARNING then ERROR.
pub fn diagnostics_data_table(diagnostics: &OpStatsDiagnostics) -> DataTable {
    let mut table = DataTable::new();
    table.column("severity", ColumnType::String, "Severity").column("message", ColumnType::String, "Message");
    let severities = [("INFO", &diagnostics.info), ("WARNING", &diagnostics.warnings), ("ERROR", &diagnostics.errors)];
    for (severity, messages) in severities {
        for message in messages {
            table.row(vec![severity.into(), message.as_str().into()]);
        }
    }
    table
}

/// `SortedOpMetricsDb`: self time descending, then name ascending; with `max_records`,
/// only that many. (XProf's sort leaves full ties in unspecified order; this one is
/// stable, so they keep their database order.)
pub fn sorted_op_metrics_db(db: &OpMetricsDb, max_records: Option<usize>) -> Vec<&OpMetrics> {
    let mut sorted: Vec<&OpMetrics> = db.metrics_db.iter().collect();
    sorted.sort_by(|a, b| b.self_time_ps.cmp(&a.self_time_ps).then_with(|| a.name.cmp(&b.name)));
    if let Some(max) = max_records {
        sorted.truncate(max);
    }
    sorted
}

/// `IsIdleOp`.
pub fn is_idle_op(metrics: &OpMetrics) -> bool {
    metrics.category == IDLE
}

/// `IdleTimeRatio`: `1 − total_op_time / total_time` (1 when the total time is 0).
pub fn idle_time_ratio(db: &OpMetricsDb) -> f64 {
    1.0 - safe_divide(db.total_op_time_ps as f64, db.total_time_ps as f64)
}

/// XProf's own OpStats and outputs, for golden tests of the tools.
#[cfg(test)]
pub(crate) mod reference {
    use crate::op_stats::OpStats;
    use oxprof_testkit::files::{read_text, repo_root};
    use oxprof_testkit::jsoncmp::{CmpOptions, compare};
    use serde_json::Value;
    use std::path::PathBuf;

    /// One profile: XProf's OpStats and the folder of XProf's tool outputs.
    pub(crate) struct Case {
        pub name: String,
        pub op_stats: PathBuf,
        pub xprof_out: PathBuf,
    }

    /// Every case: the refkit profiles, plus the third-party ones when the shared folder
    /// is present (else a SKIP note).
    pub(crate) fn cases() -> Vec<Case> {
        let mut cases: Vec<Case> = ["tf_keras_fit", "tf_custom_loop", "jax_train", "tf_memory", "tf_memory_nobfc"]
            .iter()
            .map(|name| {
                let xprof_out = repo_root().join("testdata/profiles").join(name).join("xprof_out");
                Case { name: name.to_string(), op_stats: xprof_out.join("op_stats.json"), xprof_out }
            })
            .collect();
        let external = std::env::var_os("OXPROF_EXTERNAL_TESTDATA")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo_root().join("../shared/testdata/external"));
        let outputs = external.join("../external-xprof-out");
        if !outputs.is_dir() {
            eprintln!("SKIP: no XProf outputs at {}", outputs.display());
            return cases;
        }
        let external_cases = [
            ("GPU-multi-worker__34.83.195.179_6003", "openxla-xprof/34.83.195.179_6003"),
            ("GPU-multi-worker_two_hosts", "openxla-xprof/GPU-multi-worker_two_hosts/xprof_out/ALL_HOSTS"),
            ("test_xplanes__tpu_inference_2", "openxla-xprof/tpu_inference_2"),
            ("jax08_attention__tw003", "AMD-AGI-TraceLens/jax08_attention__tw003"),
            ("jax08_conv__tw003", "AMD-AGI-TraceLens/jax08_conv__tw003"),
            ("jax08_elementwise__tw003", "AMD-AGI-TraceLens/jax08_elementwise__tw003"),
            ("jax08_gemm__tw003", "AMD-AGI-TraceLens/jax08_gemm__tw003"),
            ("jax_conv_minimal", "AMD-AGI-TraceLens/chi-mi300x-013.ord.vultr.cpe.ice.amd.com"),
            ("test_data_jax_te_fused_attn_categorization__934987a2fc2f", "AMD-AGI-TraceLens/934987a2fc2f"),
        ];
        for (name, out) in external_cases {
            let mut xprof_out = outputs.join(out);
            if !out.ends_with("ALL_HOSTS") {
                xprof_out = xprof_out.join("xprof_out");
            }
            let op_stats = repo_root().join("testdata/external-opstats").join(format!("{name}.op_stats.json.gz"));
            cases.push(Case { name: name.to_string(), op_stats, xprof_out });
        }
        cases
    }

    /// Compares both tools with one XProf run kept in the folder `$OXPROF_XPROF_RUN`
    /// (XProf's `op_stats.json`, `input_pipeline_analyzer.json` and `overview_page.json`,
    /// e.g. dumped from a synthetic TPU profile with steps). Run on demand.
    #[test]
    #[ignore]
    fn matches_xprof_run_in_env_folder() {
        let Some(dir) = std::env::var_os("OXPROF_XPROF_RUN").map(PathBuf::from) else {
            eprintln!("SKIP: OXPROF_XPROF_RUN not set");
            return;
        };
        let op_stats: OpStats = serde_json::from_str(&read_text(&dir.join("op_stats.json"))).unwrap();
        let start = std::time::Instant::now();
        let outputs = [
            ("input_pipeline_analyzer.json", crate::tools::input_pipeline::input_pipeline_analyzer(&op_stats)),
            ("overview_page.json", crate::tools::overview_page::overview_page(&op_stats)),
        ];
        eprintln!("both tools: {:?}", start.elapsed());
        for (file, actual) in outputs {
            let expected: Value = serde_json::from_str(&read_text(&dir.join(file))).unwrap();
            let report = compare(&expected, &actual, CmpOptions::default());
            assert!(report.is_match(), "{file}: {}", report.summary(20));
        }
    }

    /// Runs `tool` on each case's OpStats and compares with XProf's `<file>`; returns the
    /// failures (name and summary).
    pub(crate) fn compare_all(file: &str, tool: impl Fn(&OpStats) -> Value) -> Vec<String> {
        let mut failures = Vec::new();
        for case in cases() {
            let op_stats: OpStats = serde_json::from_str(&read_text(&case.op_stats))
                .unwrap_or_else(|e| panic!("{}: {e}", case.op_stats.display()));
            let expected: Value = serde_json::from_str(&read_text(&case.xprof_out.join(file))).unwrap();
            let report = compare(&expected, &tool(&op_stats), CmpOptions::default());
            eprintln!("{}: {}", case.name, report.summary(0));
            if !report.is_match() {
                failures.push(format!("{}:\n{}", case.name, report.summary(20)));
            }
        }
        failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op_stats::op_metrics_db::create_tf_metrics_db_from_device_op_metrics_db;

    #[test]
    fn stat_keeps_tsl_quirks() {
        // A lone 0.0: max stays at the smallest positive double, and the sample variance
        // is 0/0, which x86 prints as "-nan".
        let mut zero = Stat::<f64>::default();
        zero.update(0.0);
        assert_eq!(zero.max(), f64::MIN_POSITIVE);
        let summary = StepSummary::from_stat(&zero);
        assert_eq!(oxprof_wire::cxx_printf::one_digit(summary.standard_deviation), "-nan");
        // A lone positive sample: all the same, deviation 0.
        let mut one = Stat::<f64>::default();
        one.update(14.9);
        assert_eq!(oxprof_wire::cxx_printf::one_digit(StepSummary::from_stat(&one).standard_deviation), "0.0");
        // Two zeros: 0/1.
        zero.update(0.0);
        assert_eq!(StepSummary::from_stat(&zero).standard_deviation, 0.0);
        assert_eq!(StepSummary::from_stat(&Stat::default()), StepSummary::default());
        let mut unsigned = Stat::<u64>::default();
        unsigned.update(3);
        unsigned.update(4);
        assert_eq!((unsigned.min(), unsigned.max(), unsigned.avg()), (3, 4, 3.5));
    }

    #[test]
    fn safe_divide_guards_tiny_divisors() {
        assert_eq!(safe_divide(1.0, 1e-11), 0.0);
        assert_eq!(safe_divide(1.0, 4.0), 0.25);
    }

    #[test]
    fn folds_device_ops_into_framework_ops() {
        let op = |name: &str, provenance: &str, category: &str, self_ps: u64, occurrences: u32| OpMetrics {
            name: name.into(),
            provenance: provenance.into(),
            category: category.into(),
            self_time_ps: self_ps,
            time_ps: self_ps,
            occurrences,
            flops_v2: 10.0,
            ..OpMetrics::default()
        };
        let device = OpMetricsDb {
            metrics_db: vec![
                op("fusion.1", "model/dense/MatMul:MatMul", "fusion", 5, 2),
                op("fusion.2", "model/dense/MatMul:MatMul", "fusion", 7, 3),
                op("copy-done", "", "copy-done", 4, 1),
                op("IDLE", "", "IDLE", 100, 0),
            ],
            total_op_time_ps: 16,
            total_time_ps: 116,
            ..OpMetricsDb::default()
        };
        let tf = create_tf_metrics_db_from_device_op_metrics_db(&device, false);
        assert_eq!(tf.total_time_ps, 16);
        let names: Vec<_> = tf.metrics_db.iter().map(|m| (m.name.as_str(), m.category.as_str())).collect();
        assert_eq!(names, [("model/dense/MatMul", "MatMul"), ("copy-done", "Unknown")]);
        assert_eq!((tf.metrics_db[0].self_time_ps, tf.metrics_db[0].occurrences), (12, 3));
        assert_eq!(tf.metrics_db[0].flops_v2, 20.0);
        let with_idle = create_tf_metrics_db_from_device_op_metrics_db(&device, true);
        assert_eq!(with_idle.metrics_db.len(), 3);
        assert_eq!(with_idle.total_time_ps, 116);
    }
}
