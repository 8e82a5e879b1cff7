//! PyTorch GPU kernels (`pytorch_kernel_stats`): torch-tb-profiler's kernel view. Every
//! kernel by name (calls, total/mean/max/min time, blocks per SM and estimated achieved
//! occupancy weighted by time, Tensor Cores used), and by name, launching operator (the
//! `cpu_op` whose runtime call has the kernel's correlation id) and launch configuration.

use super::parse::{Parsed, Ty};
use super::us;
use oxprof_report::{ColumnKind, NumberFormat, Report, Table, XprofBody, json_of};
use oxprof_wire::datatable::CellValue;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Kernels of one name.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KernelRow {
    /// Kernel name.
    pub name: String,
    /// Whether its name says it uses Tensor Cores.
    pub tensor_cores_used: bool,
    /// Calls.
    pub calls: u64,
    /// Total time, µs.
    pub total_us: f64,
    /// Mean time, µs.
    pub mean_us: f64,
    /// Longest, µs.
    pub max_us: f64,
    /// Shortest, µs.
    pub min_us: f64,
    /// Blocks per SM, time-weighted mean (missing counts as 0).
    pub mean_blocks_per_sm: f64,
    /// Estimated achieved occupancy %, time-weighted mean (missing counts as 0).
    pub mean_occupancy_pct: f64,
}

/// Kernels of one name, operator and launch configuration.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KernelOpRow {
    /// Kernel name.
    pub name: String,
    /// Launching operator (`N/A` when none; `CallTreeRoot` for kernels no runtime call launched).
    pub operator: String,
    /// Grid, as Python prints it (`[80, 1, 1]`).
    pub grid: String,
    /// Block.
    pub block: String,
    /// Registers per thread.
    pub registers_per_thread: i64,
    /// Shared memory, bytes.
    pub shared_memory: i64,
    /// Calls.
    pub calls: u64,
    /// Total time, µs.
    pub total_us: f64,
    /// Mean, µs.
    pub mean_us: f64,
    /// Longest, µs.
    pub max_us: f64,
    /// Shortest, µs.
    pub min_us: f64,
    /// Blocks per SM, time-weighted mean.
    pub mean_blocks_per_sm: f64,
    /// Estimated achieved occupancy %, time-weighted mean.
    pub mean_occupancy_pct: f64,
    /// Whether its name says it uses Tensor Cores.
    pub tensor_cores_used: bool,
    /// Whether the launching operator may use Tensor Cores.
    pub op_tc_eligible: bool,
}

/// The kernel view.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PytorchKernelStats {
    /// By name, most time first.
    pub by_name: Vec<KernelRow>,
    /// By name, operator and launch configuration, most time first.
    pub by_name_op: Vec<KernelOpRow>,
    /// Share of kernel time in Tensor Core kernels (`None` without kernels).
    pub tc_used_ratio: Option<f64>,
    /// oxprof's notes.
    pub notes: Vec<String>,
}

impl PytorchKernelStats {
    /// Aggregates the parsed run's kernels.
    pub fn from_parsed(p: &Parsed) -> PytorchKernelStats {
        let mut by_name: Vec<KernelRow> = Vec::new();
        // (Σ bps·dur, Σ occ·dur) per row, for the weighted means.
        let mut weights: Vec<(f64, f64)> = Vec::new();
        let has_kernel = !p.role_ranges[0].is_empty();
        let mut tc_used_ratio = None;
        if has_kernel {
            let mut index: FxHashMap<&str, usize> = FxHashMap::default();
            let (mut tc, mut all) = (0.0, 0.0);
            for k in p.devices.iter().filter(|d| d.ty == Ty::Kernel) {
                let i = *index.entry(p.text(k.name)).or_insert_with(|| {
                    by_name.push(KernelRow {
                        name: p.text(k.name).to_string(),
                        tensor_cores_used: k.tc_used,
                        calls: 0,
                        total_us: 0.0,
                        mean_us: 0.0,
                        max_us: f64::MIN,
                        min_us: f64::MAX,
                        mean_blocks_per_sm: 0.0,
                        mean_occupancy_pct: 0.0,
                    });
                    weights.push((0.0, 0.0));
                    by_name.len() - 1
                });
                let r = &mut by_name[i];
                r.calls += 1;
                r.total_us += k.dur;
                r.max_us = r.max_us.max(k.dur);
                r.min_us = r.min_us.min(k.dur);
                weights[i].0 += k.kernel.blocks_per_sm.unwrap_or(0.0) * k.dur;
                weights[i].1 += k.kernel.occupancy.unwrap_or(0.0) * k.dur;
                all += k.dur;
                if k.tc_used {
                    tc += k.dur;
                }
            }
            for (r, w) in by_name.iter_mut().zip(&weights) {
                r.mean_us = r.total_us / r.calls as f64;
                if r.total_us != 0.0 {
                    r.mean_blocks_per_sm = w.0 / r.total_us;
                    r.mean_occupancy_pct = w.1 / r.total_us;
                }
            }
            tc_used_ratio = Some(if all > 0.0 { tc / all } else { 0.0 });
        }
        by_name.sort_by(|a, b| b.total_us.total_cmp(&a.total_us).then_with(|| a.name.cmp(&b.name)));

        let kernels = &p.op_kernels;
        // torch-tb-profiler's `name###op###grid###block###registers###shared` key, borrowed.
        let mut index: FxHashMap<(&str, &str, &str, &str, i64, i64), usize> = FxHashMap::default();
        let mut by_op: Vec<KernelOpRow> = Vec::new();
        let mut w2: Vec<(f64, f64)> = Vec::new();
        for &d in kernels {
            let k = &p.devices[d];
            let op = k.op().map_or("N/A", |o| p.text(p.nodes[o].name));
            let key =
                (p.text(k.name), op, &*k.kernel.grid, &*k.kernel.block, k.kernel.registers, k.kernel.shared_memory);
            let i = *index.entry(key).or_insert_with(|| {
                by_op.push(KernelOpRow {
                    name: p.text(k.name).to_string(),
                    operator: op.to_string(),
                    grid: k.kernel.grid.to_string(),
                    block: k.kernel.block.to_string(),
                    registers_per_thread: k.kernel.registers,
                    shared_memory: k.kernel.shared_memory,
                    calls: 0,
                    total_us: 0.0,
                    mean_us: 0.0,
                    max_us: 0.0,
                    min_us: f64::MAX,
                    mean_blocks_per_sm: 0.0,
                    mean_occupancy_pct: 0.0,
                    tensor_cores_used: k.tc_used,
                    op_tc_eligible: k.op_tc_eligible,
                });
                w2.push((0.0, 0.0));
                by_op.len() - 1
            });
            let dur = k.end - k.start;
            let r = &mut by_op[i];
            r.calls += 1;
            r.total_us += dur;
            r.min_us = r.min_us.min(dur);
            r.max_us = r.max_us.max(dur);
            w2[i].0 += k.kernel.blocks_per_sm.unwrap_or(0.0) * dur;
            w2[i].1 += k.kernel.occupancy.unwrap_or(0.0) * dur;
        }
        for (r, w) in by_op.iter_mut().zip(&w2) {
            r.mean_us = r.total_us / r.calls as f64;
            if r.total_us > 0.0 {
                r.mean_blocks_per_sm = w.0 / r.total_us;
                r.mean_occupancy_pct = w.1 / r.total_us;
            }
        }
        by_op.sort_by(|a, b| {
            b.total_us
                .total_cmp(&a.total_us)
                .then_with(|| a.name.cmp(&b.name))
                .then_with(|| a.operator.cmp(&b.operator))
        });
        let mut notes = Vec::new();
        if p.devices.iter().all(|d| d.ty != Ty::Kernel) {
            notes.push("no GPU kernels in this trace (a CPU-only run): nothing to show".into());
        }
        PytorchKernelStats { by_name, by_name_op: by_op, tc_used_ratio, notes }
    }
}

impl Report for PytorchKernelStats {
    fn xprof_body(&self) -> XprofBody {
        super::tables_body(&self.tables())
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    fn tables(&self) -> Vec<Table> {
        let mut by_name = Table::new("by_name")
            .title("Kernels by name")
            .rows_described("kernels, most time first", Some(200))
            .column("name", "Name", ColumnKind::Text, NumberFormat::Shortest)
            .column("tensor_cores_used", "Tensor Cores used", ColumnKind::Boolean, NumberFormat::Shortest)
            .column("calls", "Calls", ColumnKind::Integer, NumberFormat::Shortest)
            .column("total_us", "Total (µs)", ColumnKind::Number, NumberFormat::Fixed(1))
            .column("mean_us", "Mean (µs)", ColumnKind::Number, NumberFormat::Fixed(2))
            .column("max_us", "Max (µs)", ColumnKind::Number, NumberFormat::Fixed(2))
            .column("min_us", "Min (µs)", ColumnKind::Number, NumberFormat::Fixed(2))
            .column("mean_blocks_per_sm", "Mean blocks per SM", ColumnKind::Number, NumberFormat::Fixed(2))
            .column(
                "mean_occupancy_pct",
                "Mean est. achieved occupancy (%)",
                ColumnKind::Number,
                NumberFormat::Fixed(2),
            );
        if let Some(r) = self.tc_used_ratio {
            by_name = by_name.fact("tensor_core_kernel_time", format!("{:.2}%", r * 100.0));
        }
        for r in &self.by_name {
            by_name.push_row(vec![
                CellValue::Text(r.name.clone()),
                CellValue::Bool(r.tensor_cores_used),
                CellValue::Int(r.calls as i64),
                us(r.total_us),
                us(r.mean_us),
                us(r.max_us),
                us(r.min_us),
                CellValue::Number(r.mean_blocks_per_sm),
                CellValue::Number(r.mean_occupancy_pct),
            ]);
        }
        let mut by_op = Table::new("by_name_op")
            .title("Kernels by name and operator")
            .rows_described("kernel and operator pairs, most time first", Some(200))
            .column("name", "Name", ColumnKind::Text, NumberFormat::Shortest)
            .column("operator", "Operator", ColumnKind::Text, NumberFormat::Shortest)
            .column("grid", "Grid", ColumnKind::Text, NumberFormat::Shortest)
            .column("block", "Block", ColumnKind::Text, NumberFormat::Shortest)
            .column("registers_per_thread", "Registers per thread", ColumnKind::Integer, NumberFormat::Shortest)
            .column("shared_memory", "Shared memory (bytes)", ColumnKind::Integer, NumberFormat::Shortest)
            .column("tensor_cores_used", "Tensor Cores used", ColumnKind::Boolean, NumberFormat::Shortest)
            .column("op_tc_eligible", "Operator Tensor Cores eligible", ColumnKind::Boolean, NumberFormat::Shortest)
            .column("calls", "Calls", ColumnKind::Integer, NumberFormat::Shortest)
            .column("total_us", "Total (µs)", ColumnKind::Number, NumberFormat::Fixed(1))
            .column("mean_us", "Mean (µs)", ColumnKind::Number, NumberFormat::Fixed(2))
            .column("max_us", "Max (µs)", ColumnKind::Number, NumberFormat::Fixed(2))
            .column("min_us", "Min (µs)", ColumnKind::Number, NumberFormat::Fixed(2))
            .column("mean_blocks_per_sm", "Mean blocks per SM", ColumnKind::Number, NumberFormat::Fixed(2))
            .column(
                "mean_occupancy_pct",
                "Mean est. achieved occupancy (%)",
                ColumnKind::Number,
                NumberFormat::Fixed(2),
            );
        for r in &self.by_name_op {
            by_op.push_row(vec![
                CellValue::Text(r.name.clone()),
                CellValue::Text(r.operator.clone()),
                CellValue::Text(r.grid.clone()),
                CellValue::Text(r.block.clone()),
                CellValue::Int(r.registers_per_thread),
                CellValue::Int(r.shared_memory),
                CellValue::Bool(r.tensor_cores_used),
                CellValue::Bool(r.op_tc_eligible),
                CellValue::Int(r.calls as i64),
                us(r.total_us),
                us(r.mean_us),
                us(r.max_us),
                us(r.min_us),
                CellValue::Number(r.mean_blocks_per_sm),
                CellValue::Number(r.mean_occupancy_pct),
            ]);
        }
        vec![by_name, by_op]
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}
