//! The GPU kernel stats tool: OpStats' `KernelStatsDb` → [`KernelStats`] (one row per
//! (kernel, op), in the database's order: total duration descending) → XProf's DataTable,
//! as `GenerateKernelStatsDataTable` (`xprof/convert/xplane_to_kernel_stats_db.cc`) renders it.

use crate::op_stats::{KernelReport, KernelStatsDb, OpStats};
use oxprof_report::{Report, Table, XprofBody, json_of};
use oxprof_wire::datatable::{Cell, ColumnType, DataTable};
use oxprof_wire::nlohmann;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `kernel_stats` report: one row per (kernel, op) of the OpStats' kernel database,
/// total duration descending.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct KernelStats {
    /// The rows, in XProf's order.
    pub kernels: Vec<KernelStatsRow>,
}

/// One kernel launched for one op.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct KernelStatsRow {
    /// 1-based rank.
    pub rank: u64,
    /// Kernel name.
    pub kernel_name: String,
    /// Registers per thread.
    pub registers_per_thread: u32,
    /// Static plus dynamic shared memory (wrapping `uint32` addition, as in XProf).
    pub shared_memory_bytes: u32,
    /// Block dimensions.
    pub block_dim: Vec<u32>,
    /// Grid dimensions.
    pub grid_dim: Vec<u32>,
    /// Theoretical occupancy in percent.
    pub occupancy_percent: f32,
    /// The op could use TensorCores.
    pub is_op_tensor_core_eligible: bool,
    /// The kernel uses TensorCores.
    pub is_kernel_using_tensor_core: bool,
    /// The framework op that launched it.
    pub op_name: String,
    /// Launches.
    pub occurrences: u32,
    /// Total duration.
    pub total_duration_us: f64,
    /// Average duration (whole nanoseconds, as XProf divides).
    pub avg_duration_us: f64,
    /// Shortest launch.
    pub min_duration_us: f64,
    /// Longest launch.
    pub max_duration_us: f64,
}

/// The `kernel_stats` tool's JSON body for `op_stats`, as XProf's JSON value.
pub fn kernel_stats(op_stats: &OpStats) -> Value {
    KernelStats::from_op_stats(op_stats).xprof_json()
}

/// Nanoseconds to microseconds (`tsl::profiler::NanoToMicro`).
fn nano_to_micro(ns: u64) -> f64 {
    ns as f64 / 1e3
}

impl KernelStats {
    /// The report of `op_stats`.
    pub fn from_op_stats(op_stats: &OpStats) -> KernelStats {
        KernelStats::from_db(&op_stats.kernel_stats_db)
    }

    /// The report of a kernel database, rows in its order.
    pub fn from_db(db: &KernelStatsDb) -> KernelStats {
        KernelStats { kernels: db.reports.iter().enumerate().map(|(i, r)| row(i as u64 + 1, r)).collect() }
    }

    /// XProf's DataTable (`GenerateKernelStatsDataTable`).
    pub fn data_table(&self) -> DataTable {
        let mut table = DataTable::new();
        table
            .column("rank", ColumnType::Number, "Rank")
            .column("kernel_name", ColumnType::String, "Kernel Name")
            .column("registers_per_thread", ColumnType::Number, "Registers per thread")
            .column("shmem_bytes", ColumnType::Number, "Shared Mem bytes")
            .column("block_dim", ColumnType::String, "Block dim")
            .column("grid_dim", ColumnType::String, "Grid dim")
            .column("occupancy_pct", ColumnType::Number, "Theoretical Occupancy %")
            .column("is_op_tensor_core_eligible", ColumnType::Boolean, "Op is TensorCore eligible")
            .column("is_kernel_using_tensor_core", ColumnType::Boolean, "Kernel uses TensorCore")
            .column("op_name", ColumnType::String, "Op Name")
            .column("occurrences", ColumnType::Number, "Occurrences")
            .column("total_duration_us", ColumnType::Number, "Total Duration (μs)")
            .column("avg_duration_us", ColumnType::Number, "Avg Duration (μs)")
            .column("min_duration_us", ColumnType::Number, "Min Duration (μs)")
            .column("max_duration_us", ColumnType::Number, "Max Duration (μs)");
        for k in &self.kernels {
            table.row(row_cells(k));
        }
        table
    }

    /// XProf's JSON value of the body.
    pub fn xprof_json(&self) -> Value {
        self.data_table().to_json()
    }
}

impl Report for KernelStats {
    fn xprof_body(&self) -> XprofBody {
        XprofBody::json(nlohmann::dump(&self.xprof_json()))
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    fn tables(&self) -> Vec<Table> {
        vec![Table::from_data_table("kernels", &self.data_table())]
    }
}

fn join_dims(dims: &[u32]) -> String {
    dims.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// One row. The average is XProf's integer division `total_duration_ns / occurrences`
/// (truncated to whole nanoseconds) before the conversion to µs; a report without
/// occurrences (never produced by the converter) averages 0 instead of trapping.
fn row(rank: u64, report: &KernelReport) -> KernelStatsRow {
    let avg_ns = report.total_duration_ns.checked_div(u64::from(report.occurrences)).unwrap_or(0);
    KernelStatsRow {
        rank,
        kernel_name: report.name.clone(),
        registers_per_thread: report.registers_per_thread,
        // uint32 + uint32 in C++ wraps; the sum is then widened to a double.
        shared_memory_bytes: report.static_shmem_bytes.wrapping_add(report.dynamic_shmem_bytes),
        block_dim: report.block_dim.clone(),
        grid_dim: report.grid_dim.clone(),
        occupancy_percent: report.occupancy_pct,
        is_op_tensor_core_eligible: report.is_op_tensor_core_eligible,
        is_kernel_using_tensor_core: report.is_kernel_using_tensor_core,
        op_name: report.op_name.clone(),
        occurrences: report.occurrences,
        total_duration_us: nano_to_micro(report.total_duration_ns),
        avg_duration_us: nano_to_micro(avg_ns),
        min_duration_us: nano_to_micro(report.min_duration_ns),
        max_duration_us: nano_to_micro(report.max_duration_ns),
    }
}

fn row_cells(k: &KernelStatsRow) -> Vec<Cell> {
    vec![
        (k.rank as f64).into(),
        k.kernel_name.as_str().into(),
        f64::from(k.registers_per_thread).into(),
        f64::from(k.shared_memory_bytes).into(),
        join_dims(&k.block_dim).into(),
        join_dims(&k.grid_dim).into(),
        f64::from(k.occupancy_percent).into(),
        k.is_op_tensor_core_eligible.into(),
        k.is_kernel_using_tensor_core.into(),
        k.op_name.as_str().into(),
        f64::from(k.occurrences).into(),
        k.total_duration_us.into(),
        k.avg_duration_us.into(),
        k.min_duration_us.into(),
        k.max_duration_us.into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_reports_in_order_with_truncated_average() {
        let db = KernelStatsDb {
            reports: vec![
                KernelReport {
                    name: "gemm".into(),
                    registers_per_thread: 32,
                    static_shmem_bytes: 100,
                    dynamic_shmem_bytes: 28,
                    block_dim: vec![128, 1, 1],
                    grid_dim: vec![4, 2, 1],
                    total_duration_ns: 10,
                    min_duration_ns: 3,
                    max_duration_ns: 4,
                    occurrences: 3,
                    op_name: "dot".into(),
                    is_op_tensor_core_eligible: true,
                    ..Default::default()
                },
                KernelReport { name: "empty".into(), ..Default::default() },
            ],
        };
        let json = KernelStats::from_db(&db).xprof_json();
        let row = &json["rows"][0]["c"];
        assert_eq!(row[0]["v"], 1.0);
        assert_eq!(row[3]["v"], 128.0);
        assert_eq!(row[4]["v"], "128,1,1");
        assert_eq!(row[5]["v"], "4,2,1");
        assert_eq!(row[7]["v"], true);
        assert_eq!(row[12]["v"], 0.003); // 10 ns / 3 = 3 ns
        assert_eq!(json["rows"][1]["c"][12]["v"], 0.0);
        assert_eq!(json["cols"].as_array().map(Vec::len), Some(15));
    }
}
