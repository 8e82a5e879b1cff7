//! The roofline model tool: OpStats → [`RooflineModel`], per HLO op (and per program, per
//! complete-step average and per step) the attained FLOP rate and bandwidths against the
//! device's peaks, the resource bounding it, and the ridge points → XProf's two DataTables
//! (records, diagnostics). Port of
//! `xprof/convert/op_stats_to_roofline_model.cc` and `roofline_model_processor.cc`.

use crate::op_stats::op_metrics_db::combine_memory_accessed_breakdown;
use crate::op_stats::{HardwareType, OpMetrics, OpMetricsDb, OpStats, OpStatsDiagnostics, PerfEnv, SourceInfo};
use crate::tools::hlo_stats::source_info_formatted_text;
use crate::tools::op_record::{
    ExecutionTimes, RankAndFraction, RooflineMetrics, dma_stall_fraction, execution_times, giga_to_gibi, pico_to_micro,
    roofline_metrics, safe_divide, sorted_op_metrics_db, tera_to_giga,
};
use crate::tools::step_breakdown::{diagnostics_data_table, populate_step_diagnostics};
use oxprof_report::{Report, Table, XprofBody, json_of};
use oxprof_wire::cxx_printf::six_digits;
use oxprof_wire::datatable::{Cell, ColumnType, DataTable};
use oxprof_wire::nlohmann;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// At most this many op records per database.
const MAX_NUM_RECORDS: usize = 1000;

/// What a record aggregates (`RecordType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordType {
    /// The whole profile.
    All,
    /// Average over complete steps.
    AverageStep,
    /// One step.
    PerStep,
}

/// The `roofline_model` report (XProf's `RooflineModelDatabase`): peaks and the records.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RooflineModel {
    /// `RunEnvironment::device_type`.
    pub device_type: String,
    /// Megacore (TPU).
    pub megacore: bool,
    /// Has CMEM (TPU).
    pub has_cmem: bool,
    /// Has merged VMEM (TPU; always on GPU, where VMEM stands for Shm/L1).
    pub has_merged_vmem: bool,
    /// GFLOP/s.
    pub peak_flop_rate: f64,
    /// GiB/s.
    pub peak_hbm_bw: f64,
    /// GiB/s.
    pub peak_cmem_read_bw: f64,
    /// GiB/s.
    pub peak_cmem_write_bw: f64,
    /// GiB/s.
    pub peak_vmem_read_bw: f64,
    /// GiB/s.
    pub peak_vmem_write_bw: f64,
    /// Normalised / raw op time.
    pub time_scale_multiplier: f64,
    /// Records: with infeed/outfeed, then without.
    pub records: Vec<RooflineModelRecord>,
    /// Step diagnostics.
    pub diagnostics: OpStatsDiagnostics,
}

/// `RooflineModelRecord`: one row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RooflineModelRecord {
    /// Op name ("Program" for program rows).
    pub hlo_name: String,
    /// Category.
    pub hlo_category: String,
    /// Program id.
    pub hlo_module_id: u64,
    /// What it aggregates.
    pub record_type: RecordType,
    /// Step number (per-step rows).
    pub step_num: u32,
    /// Source location.
    pub source_info: SourceInfo,
    /// Rank and self-time shares (0 on program rows).
    pub rank: RankAndFraction,
    /// Counts and times (per step on average-step rows).
    pub times: ExecutionTimes,
    /// Total time / device cores.
    pub total_time_per_core_in_us: f64,
    /// Time / total time.
    pub total_time_in_percentage: f64,
    /// DMA stall fraction.
    pub dma_stall_fraction: f64,
    /// Rates and bottleneck.
    pub roofline: RooflineMetrics,
    /// Measured rate / roofline efficiency.
    pub optimal_flop_rate: f64,
    /// Highest utilisation of compute or memory.
    pub roofline_efficiency: f64,
    /// FLOP rate / peak.
    pub flop_rate_relative_to_hw_limit: f64,
    /// Highest memory bandwidth utilisation.
    pub memory_bw_relative_to_hw_limit: f64,
    /// Infeed and outfeed ops included.
    pub include_infeed_outfeed: bool,
}

/// The `roofline_model` tool's JSON body as XProf's JSON value: `[records table,
/// diagnostics table]`.
pub fn roofline_model(op_stats: &OpStats) -> Value {
    roofline_model_database(op_stats).xprof_json()
}

impl RooflineModel {
    /// The report of `op_stats` (see [`roofline_model_database`]).
    pub fn from_op_stats(op_stats: &OpStats) -> RooflineModel {
        roofline_model_database(op_stats)
    }

    /// XProf's two DataTables: records, diagnostics.
    pub fn data_tables(&self) -> [DataTable; 2] {
        [roofline_model_data_table(self), diagnostics_data_table(&self.diagnostics)]
    }

    /// XProf's JSON value of the body.
    pub fn xprof_json(&self) -> Value {
        Value::Array(self.data_tables().iter().map(DataTable::to_json).collect())
    }
}

impl Report for RooflineModel {
    fn xprof_body(&self) -> XprofBody {
        XprofBody::json(nlohmann::dump(&self.xprof_json()))
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    fn tables(&self) -> Vec<Table> {
        let [records, diagnostics] = self.data_tables();
        vec![Table::from_data_table("records", &records), Table::from_data_table("diagnostics", &diagnostics)]
    }
}

/// `RooflineModelProcessor`: the database with infeed/outfeed, followed by the records of
/// the one without (diagnostics of the first).
pub fn roofline_model_database(op_stats: &OpStats) -> RooflineModel {
    let mut with_feeds = convert_op_stats_to_roofline_model(op_stats, true);
    let without_feeds = convert_op_stats_to_roofline_model(op_stats, false);
    with_feeds.records.extend(without_feeds.records);
    with_feeds
}

/// `IsInfeedOrOutfeed`.
fn is_infeed_or_outfeed(category: &str) -> bool {
    category.contains("infeed") || category.contains("outfeed")
}

/// `MayHaveInnerOps`: ops whose time includes other ops'.
fn may_have_inner_ops(category: &str) -> bool {
    matches!(category, "call" | "conditional" | "while" | "megacore fusion")
}

fn memory_peak_bandwidth(perf_env: &PerfEnv, index: usize) -> f64 {
    perf_env.peak_bws_giga_bytes_per_second.get(index).copied().unwrap_or(perf_env.peak_hbm_bw_giga_bytes_per_second)
}

/// `ConvertOpStatsToRooflineModel`: empty unless the device is a GPU or a TPU.
pub fn convert_op_stats_to_roofline_model(op_stats: &OpStats, include_infeed_outfeed: bool) -> RooflineModel {
    let hardware_type = op_stats.run_environment.hardware_type;
    if hardware_type != HardwareType::Gpu && hardware_type != HardwareType::Tpu {
        return RooflineModel::default();
    }
    let perf_env = op_stats.perf_env.clone().unwrap_or_default();
    let device_db = &op_stats.device_op_metrics_db;
    let mut db = RooflineModel {
        device_type: op_stats.run_environment.device_type.clone(),
        time_scale_multiplier: safe_divide(
            device_db.normalized_total_op_time_ps as f64,
            device_db.total_op_time_ps as f64,
        ),
        peak_flop_rate: tera_to_giga(perf_env.peak_tera_flops_per_second),
        peak_hbm_bw: giga_to_gibi(memory_peak_bandwidth(&perf_env, 0)),
        ..Default::default()
    };
    if hardware_type == HardwareType::Tpu {
        db.megacore = perf_env.has_megacore;
        db.has_cmem = perf_env.has_cmem;
        db.has_merged_vmem = perf_env.has_merged_vmem;
        if db.has_cmem {
            db.peak_cmem_read_bw = giga_to_gibi(memory_peak_bandwidth(&perf_env, 3));
            db.peak_cmem_write_bw = giga_to_gibi(memory_peak_bandwidth(&perf_env, 4));
        } else if db.has_merged_vmem {
            db.peak_vmem_read_bw = giga_to_gibi(memory_peak_bandwidth(&perf_env, 5));
            db.peak_vmem_write_bw = giga_to_gibi(memory_peak_bandwidth(&perf_env, 6));
        }
    } else {
        db.has_merged_vmem = true;
        db.peak_vmem_read_bw = giga_to_gibi(memory_peak_bandwidth(&perf_env, 1));
        db.peak_vmem_write_bw = giga_to_gibi(memory_peak_bandwidth(&perf_env, 2));
    }

    let ctx = Context { op_stats, perf_env: &perf_env, include_infeed_outfeed };
    let mut records = ctx.op_records(&db, device_db);
    if let Some(complete) = &op_stats.hlo_metrics_db_complete_steps_only {
        records.push(ctx.program_record(&db, complete, RecordType::AverageStep, 0));
    }
    let empty = OpMetricsDb::default();
    for step in &op_stats.step_db.step_sequence {
        let step_db = step.hlo_metrics_db.as_ref().unwrap_or(&empty);
        records.push(ctx.program_record(&db, step_db, RecordType::PerStep, step.step_num));
    }
    db.records = records;
    populate_step_diagnostics(op_stats, &mut db.diagnostics);
    db
}

struct Context<'a> {
    op_stats: &'a OpStats,
    perf_env: &'a PerfEnv,
    include_infeed_outfeed: bool,
}

impl Context<'_> {
    /// `ConvertOpMetricsDbToRooflineModelRecords`: the program row, then the top ops by
    /// self time (without the ones that never ran, and without infeed/outfeed on request).
    fn op_records(&self, db: &RooflineModel, metrics_db: &OpMetricsDb) -> Vec<RooflineModelRecord> {
        let mut records = vec![self.program_record(db, metrics_db, RecordType::All, 0)];
        let infeed_outfeed_time: u64 = if self.include_infeed_outfeed {
            0
        } else {
            metrics_db
                .metrics_db
                .iter()
                .filter(|m| is_infeed_or_outfeed(&m.category))
                .fold(0u64, |sum, m| sum.wrapping_add(m.time_ps))
        };
        let total_time_ps = metrics_db.total_time_ps.wrapping_sub(infeed_outfeed_time);
        let total_time_us = pico_to_micro(total_time_ps);
        let mut prev = RankAndFraction::default();
        for metrics in sorted_op_metrics_db(metrics_db, Some(MAX_NUM_RECORDS)) {
            if metrics.occurrences == 0 || (!self.include_infeed_outfeed && is_infeed_or_outfeed(&metrics.category)) {
                continue;
            }
            let mut record = self.record(db, metrics, RecordType::All, 0, total_time_ps);
            record.rank = prev.next(total_time_us, record.times.total_self_time_in_us);
            prev = record.rank;
            records.push(record);
        }
        records
    }

    /// `GenerateRooflineModelProgramRecord`: the innermost ops of `metrics_db` summed into
    /// one "Program" op spanning the database's total time.
    fn program_record(
        &self,
        db: &RooflineModel,
        metrics_db: &OpMetricsDb,
        record_type: RecordType,
        step_num: u32,
    ) -> RooflineModelRecord {
        let mut program =
            OpMetrics { name: "Program".into(), category: "Program".into(), occurrences: 1, ..Default::default() };
        let mut infeed_outfeed_time: u64 = 0;
        for metrics in &metrics_db.metrics_db {
            if may_have_inner_ops(&metrics.category) {
                continue;
            }
            if !self.include_infeed_outfeed && is_infeed_or_outfeed(&metrics.category) {
                infeed_outfeed_time = infeed_outfeed_time.wrapping_add(metrics.time_ps);
                continue;
            }
            program.flops = program.flops.wrapping_add(metrics.flops);
            program.flops_v2 += metrics.flops_v2;
            program.model_flops = program.model_flops.wrapping_add(metrics.model_flops);
            program.model_flops_v2 += metrics.model_flops_v2;
            program.bytes_accessed = program.bytes_accessed.wrapping_add(metrics.bytes_accessed);
            combine_memory_accessed_breakdown(
                &metrics.memory_accessed_breakdown,
                &mut program.memory_accessed_breakdown,
            );
        }
        let mut total_time_ps = metrics_db.total_time_ps;
        if !self.include_infeed_outfeed {
            total_time_ps = total_time_ps.wrapping_sub(infeed_outfeed_time);
        }
        program.time_ps = total_time_ps;
        let mut record = self.record(db, &program, record_type, step_num, total_time_ps);
        record.rank = RankAndFraction::default();
        record
    }

    /// `ConvertOpMetricsToRooflineModelRecord`.
    fn record(
        &self,
        db: &RooflineModel,
        metrics: &OpMetrics,
        record_type: RecordType,
        step_num: u32,
        total_time_ps: u64,
    ) -> RooflineModelRecord {
        let op_stats = self.op_stats;
        let mut times = execution_times(metrics);
        if record_type == RecordType::AverageStep {
            let num_steps = op_stats.step_db.step_sequence.len() as f64;
            times.total_time_in_us = safe_divide(times.total_time_in_us, num_steps);
            times.total_self_time_in_us = safe_divide(times.total_self_time_in_us, num_steps);
        }
        let roofline = roofline_metrics(metrics, self.perf_env, &op_stats.run_environment, false);
        let utilization = |enabled: bool, rate: f64, peak: f64| if enabled { safe_divide(rate, peak) } else { 0.0 };
        let cmem_wr = utilization(db.has_cmem, roofline.cmem_write_bw, db.peak_cmem_write_bw);
        let cmem_rd = utilization(db.has_cmem, roofline.cmem_read_bw, db.peak_cmem_read_bw);
        let vmem_rd = utilization(db.has_merged_vmem, roofline.vmem_read_bw, db.peak_vmem_read_bw);
        let vmem_wr = utilization(db.has_merged_vmem, roofline.vmem_write_bw, db.peak_vmem_write_bw);
        // XProf's tool never applies the DVFS time scale here (`apply_time_scale_multiplier`
        // is false for every record), so the raw FLOP rate is used.
        let flops_utilization = safe_divide(roofline.measured_flop_rate, db.peak_flop_rate);
        let hbm = safe_divide(roofline.hbm_bw, db.peak_hbm_bw);
        let max_mem = [cmem_wr, cmem_rd, hbm, vmem_wr, vmem_rd].into_iter().fold(cmem_wr, max_like_std);
        let efficiency = max_like_std(max_mem, flops_utilization);
        RooflineModelRecord {
            hlo_name: metrics.name.clone(),
            hlo_category: metrics.category.clone(),
            hlo_module_id: metrics.hlo_module_id,
            record_type,
            step_num,
            source_info: metrics.source_info.clone().unwrap_or_default(),
            rank: RankAndFraction::default(),
            total_time_per_core_in_us: safe_divide(
                times.total_time_in_us,
                f64::from(op_stats.run_environment.device_core_count),
            ),
            total_time_in_percentage: safe_divide(metrics.time_ps as f64, total_time_ps as f64),
            times,
            dma_stall_fraction: dma_stall_fraction(metrics),
            optimal_flop_rate: safe_divide(roofline.measured_flop_rate, efficiency),
            roofline_efficiency: efficiency,
            flop_rate_relative_to_hw_limit: flops_utilization,
            memory_bw_relative_to_hw_limit: max_mem,
            include_infeed_outfeed: self.include_infeed_outfeed,
            roofline,
        }
    }
}

/// `std::max(a, b)`: `a` unless `a < b`.
fn max_like_std(a: f64, b: f64) -> f64 {
    if a < b { b } else { a }
}

fn step_string(record: &RooflineModelRecord) -> String {
    match record.record_type {
        RecordType::All => "Total".into(),
        RecordType::AverageStep => "Average".into(),
        RecordType::PerStep => record.step_num.to_string(),
    }
}

/// `RidgePoint`: peak GFLOP/s over peak GB/s (given in GiB/s).
fn ridge_point(peak_gigaflops_per_second: f64, peak_gibibytes_per_second: f64) -> f64 {
    safe_divide(peak_gigaflops_per_second, peak_gibibytes_per_second * ((1u64 << 30) as f64 / 1.0e9))
}

/// The records DataTable: XProf's GPU layout when the device type names a GPU, else the
/// TPU layout (also for the empty table of CPU-only profiles).
pub fn roofline_model_data_table(db: &RooflineModel) -> DataTable {
    use ColumnType::{Boolean, Number, String as Text};
    let is_gpu = db.device_type.contains("GPU");
    let mut columns: Vec<(&str, ColumnType, &str)> = vec![
        ("step", Text, "Step"),
        ("rank", Number, "Rank"),
        ("category", Text, "Category"),
        ("operation", Text, "Operation"),
        ("occurrences", Number, "# Occurrences"),
        ("total_time", Number, "Total Time (us)"),
        ("avg_time", Number, "Avg. time (us)"),
        ("total_self_time", Number, "Total self time (us)"),
        ("avg_self_time", Number, "Avg. self time (us)"),
        ("total_self_time_percent", Number, "Total self time (%)"),
        ("cumulative_total_self_time_percent", Number, "Cumulative total self time (%)"),
    ];
    if is_gpu {
        columns.extend([
            ("measured_flop_rate", Number, "Normalized FLOP Rate (GFLOP/s)"),
            ("model_flop_rate", Number, "Model FLOP Rate (GFLOP/s)"),
            ("measured_memory_bw", Number, "Memory BW (GiB/s)"),
            ("hbm_bw", Number, "HBM BW (GiB/s)"),
            ("vmem_write_bw", Number, "SHM/L1 BW (GiB/s)"),
            ("operational_intensity", Number, "Operational Intensity (FLOP/Byte)"),
            ("hbm_operational_intensity", Number, "HBM Operational Intensity (FLOP/Byte)"),
            ("vmem_write_operational_intensity", Number, "SHM/L1 Operational Intensity (FLOP/Byte)"),
        ]);
    } else {
        columns.extend([
            ("dma_stall_percent", Number, "%time stalled by DMA"),
            ("measured_flop_rate", Number, "Normalized FLOP Rate (GFLOP/s)"),
            ("model_flop_rate", Number, "Model FLOP Rate (GFLOP/s)"),
            ("measured_memory_bw", Number, "Memory BW (GiB/s)"),
            ("hbm_bw", Number, "HBM BW (GiB/s)"),
            ("cmem_read_bw", Number, "CMEM Read BW (GiB/s)"),
            ("cmem_write_bw", Number, "CMEM Write BW (GiB/s)"),
            ("vmem_read_bw", Number, "VMEM Read BW (GiB/s)"),
            ("vmem_write_bw", Number, "VMEM Write BW (GiB/s)"),
            ("operational_intensity", Number, "Operational Intensity (FLOP/Byte)"),
            ("hbm_operational_intensity", Number, "HBM Operational Intensity (FLOP/Byte)"),
            ("cmem_read_operational_intensity", Number, "CMEM Read Operational Intensity (FLOP/Byte)"),
            ("cmem_write_operational_intensity", Number, "CMEM Write Operational Intensity (FLOP/Byte)"),
            ("vmem_read_operational_intensity", Number, "VMEM Read Operational Intensity (FLOP/Byte)"),
            ("vmem_write_operational_intensity", Number, "VMEM Write Operational Intensity (FLOP/Byte)"),
        ]);
    }
    columns.extend([
        ("bottleneck_operational_intensity", Number, "Bottleneck Operational Intensity (FLOP/Byte)"),
        ("bound_by", Text, "Bound by"),
        ("total_time_per_core", Number, "Total Time per core (us)"),
        ("total_time_in_percentage", Number, "Total Time (%)"),
        ("optimal_flop_rate", Number, "Optimal FLOP Rate (GFLOP/s)"),
        ("roofline_efficiency", Number, "Roofline efficiency (%)"),
        ("compute_efficiency", Number, "FLOP Rate / Peak (%)"),
        ("max_mem_bw_utilization", Number, "Max memory BW utilization (among supported memories) (%)"),
        ("include_infeed_outfeed", Boolean, "Include Infeed/Outfeed"),
        ("hlo_module_id", Text, "Program ID"),
        ("source_info", Text, "Source Info"),
    ]);
    let mut table = DataTable::new();
    for (id, ty, label) in columns {
        table.column(id, ty, label);
    }
    for r in &db.records {
        let m = &r.roofline;
        let mut cells: Vec<Cell> = vec![
            step_string(r).into(),
            (r.rank.rank as f64).into(),
            r.hlo_category.as_str().into(),
            r.hlo_name.as_str().into(),
            f64::from(r.times.occurrences).into(),
            r.times.total_time_in_us.into(),
            r.times.avg_time_in_us.into(),
            r.times.total_self_time_in_us.into(),
            r.times.avg_self_time_in_us.into(),
            r.rank.fraction.into(),
            r.rank.cumulative_fraction.into(),
        ];
        if is_gpu {
            cells.extend(
                [
                    m.measured_flop_rate,
                    m.model_flop_rate,
                    m.measured_memory_bw,
                    m.hbm_bw,
                    m.vmem_write_bw,
                    m.operational_intensity,
                    m.hbm_operational_intensity,
                    m.vmem_write_operational_intensity,
                ]
                .map(Cell::from),
            );
        } else {
            cells.extend(
                [
                    r.dma_stall_fraction,
                    m.measured_flop_rate,
                    m.model_flop_rate,
                    m.measured_memory_bw,
                    m.hbm_bw,
                    m.cmem_read_bw,
                    m.cmem_write_bw,
                    m.vmem_read_bw,
                    m.vmem_write_bw,
                    m.operational_intensity,
                    m.hbm_operational_intensity,
                    m.cmem_read_operational_intensity,
                    m.cmem_write_operational_intensity,
                    m.vmem_read_operational_intensity,
                    m.vmem_write_operational_intensity,
                ]
                .map(Cell::from),
            );
        }
        cells.push(m.bottleneck_operational_intensity.into());
        cells.push(m.bound_by.as_str().into());
        cells.extend(
            [
                r.total_time_per_core_in_us,
                r.total_time_in_percentage,
                r.optimal_flop_rate,
                r.roofline_efficiency,
                r.flop_rate_relative_to_hw_limit,
                r.memory_bw_relative_to_hw_limit,
            ]
            .map(Cell::from),
        );
        cells.push(r.include_infeed_outfeed.into());
        cells.push(r.hlo_module_id.to_string().into());
        cells.push(source_info_formatted_text(&r.source_info).into());
        table.row(cells);
    }
    let flag = |b: bool| if b { "1" } else { "0" };
    let ridge = |bw: f64| six_digits(ridge_point(db.peak_flop_rate, bw));
    table.prop("device_type", db.device_type.as_str());
    table.prop("peak_flop_rate", six_digits(db.peak_flop_rate));
    table.prop("peak_hbm_bw", six_digits(db.peak_hbm_bw));
    table.prop("peak_vmem_write_bw", six_digits(db.peak_vmem_write_bw));
    table.prop("hbm_ridge_point", ridge(db.peak_hbm_bw));
    table.prop("vmem_write_ridge_point", ridge(db.peak_vmem_write_bw));
    if !is_gpu {
        table.prop("megacore", flag(db.megacore));
        table.prop("has_cmem", flag(db.has_cmem));
        table.prop("has_merged_vmem", flag(db.has_merged_vmem));
        table.prop("peak_cmem_read_bw", six_digits(db.peak_cmem_read_bw));
        table.prop("peak_cmem_write_bw", six_digits(db.peak_cmem_write_bw));
        table.prop("peak_vmem_read_bw", six_digits(db.peak_vmem_read_bw));
        table.prop("cmem_read_ridge_point", ridge(db.peak_cmem_read_bw));
        table.prop("cmem_write_ridge_point", ridge(db.peak_cmem_write_bw));
        table.prop("vmem_read_ridge_point", ridge(db.peak_vmem_read_bw));
        table.prop("time_scale_multiplier", six_digits(db.time_scale_multiplier));
    }
    table
}
