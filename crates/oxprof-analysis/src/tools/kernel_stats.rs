//! The GPU kernel stats tool: one DataTable row per (kernel, op) report of the OpStats'
//! `KernelStatsDb`, in the database's order (total duration descending), as XProf's
//! `GenerateKernelStatsDataTable` (`xprof/convert/xplane_to_kernel_stats_db.cc`) renders it.

use crate::op_stats::{KernelReport, KernelStatsDb, OpStats};
use oxprof_wire::datatable::{Cell, ColumnType, DataTable};
use serde_json::Value;

/// The `kernel_stats` tool's JSON body for `op_stats`.
pub fn kernel_stats(op_stats: &OpStats) -> Value {
    kernel_stats_data_table(&op_stats.kernel_stats_db).to_json()
}

/// Nanoseconds to microseconds (`tsl::profiler::NanoToMicro`).
fn nano_to_micro(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// The kernel stats DataTable: columns as XProf names them, rank 1.. in report order.
///
/// The average duration is XProf's integer division `total_duration_ns / occurrences`
/// (truncated to whole nanoseconds) before the conversion to µs; a report without
/// occurrences (never produced by the converter) averages 0 instead of trapping.
pub fn kernel_stats_data_table(db: &KernelStatsDb) -> DataTable {
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
    for (index, report) in db.reports.iter().enumerate() {
        table.row(report_cells(index as f64 + 1.0, report));
    }
    table
}

fn join_dims(dims: &[u32]) -> String {
    dims.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

fn report_cells(rank: f64, report: &KernelReport) -> Vec<Cell> {
    // uint32 + uint32 in C++ wraps; the sum is then widened to a double.
    let shmem_bytes = report.static_shmem_bytes.wrapping_add(report.dynamic_shmem_bytes);
    let avg_ns = report.total_duration_ns.checked_div(u64::from(report.occurrences)).unwrap_or(0);
    vec![
        rank.into(),
        report.name.as_str().into(),
        f64::from(report.registers_per_thread).into(),
        f64::from(shmem_bytes).into(),
        join_dims(&report.block_dim).into(),
        join_dims(&report.grid_dim).into(),
        f64::from(report.occupancy_pct).into(),
        report.is_op_tensor_core_eligible.into(),
        report.is_kernel_using_tensor_core.into(),
        report.op_name.as_str().into(),
        f64::from(report.occurrences).into(),
        nano_to_micro(report.total_duration_ns).into(),
        nano_to_micro(avg_ns).into(),
        nano_to_micro(report.min_duration_ns).into(),
        nano_to_micro(report.max_duration_ns).into(),
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
        let json = kernel_stats_data_table(&db).to_json();
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
