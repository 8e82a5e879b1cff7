//! The `hta_distributed` tool's report: one row per rank of a run with HTA's temporal
//! breakdown ([`super::temporal`]), communication–computation overlap
//! ([`super::overlap`]), communication kernel totals ([`super::comm_ops`]) and steps
//! ([`super::stragglers`]), plus the detail tables behind them.

use super::comm_ops::CommOpStats;
use super::overlap::CommCompOverlap;
use super::parts::{RankView, filter_summary, parts_of, sorted, views};
use super::stragglers::{RankSteps, StepSpread, stragglers_of};
use super::temporal::TemporalBreakdown;
use super::trace::{FilterSummary, ProfilerStep, RankTrace};
use oxprof_report::{ColumnKind, NumberFormat, Report, Table, XprofBody, json_of};
use oxprof_wire::datatable::CellValue;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One rank's row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankRow {
    /// The rank.
    pub rank: i64,
    /// The host (file) of the rank.
    pub host: String,
    /// GPU events analysed (after HTA's step filter).
    pub gpu_events: u64,
    /// HTA's temporal breakdown (`None` without GPU events).
    pub temporal: Option<TemporalBreakdown>,
    /// HTA's overlap.
    pub overlap: CommCompOverlap,
    /// Communication kernels (calls).
    pub comm_kernels: u64,
    /// Steps.
    pub steps: RankSteps,
}

/// The report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HtaDistributed {
    /// One row per rank, by rank.
    pub ranks: Vec<RankRow>,
    /// Communication kernels per rank and name.
    pub comm_ops: Vec<CommOpStats>,
    /// Steps recorded by two or more ranks.
    pub steps: Vec<StepSpread>,
    /// What HTA's incomplete-step filter dropped.
    pub filter: FilterSummary,
    /// Notes for people.
    pub notes: Vec<String>,
}

impl HtaDistributed {
    /// The report of a run's ranks (HTA's step filter is applied here).
    pub fn compute(ranks: Vec<RankTrace>) -> HtaDistributed {
        let parts = parts_of(&ranks);
        HtaDistributed::from_parts(&views(&ranks, &parts))
    }

    /// The report of the selected ranks' parts (HTA's step filter applied to them when
    /// their step names call for it; see [`super::parts`]).
    pub fn from_parts(ranks: &[RankView<'_>]) -> HtaDistributed {
        let ranks = sorted(ranks);
        let filter = filter_summary(&ranks);
        let steps_of: Vec<(i64, &[ProfilerStep])> = ranks.iter().map(|r| (r.rank, r.steps)).collect();
        let (steps, per_rank_steps) = stragglers_of(&steps_of);
        let mut comm_ops = Vec::new();
        let mut rows = Vec::new();
        for (r, rank_steps) in ranks.iter().zip(per_rank_steps) {
            let p = r.parts.relabelled(r.rank);
            rows.push(RankRow {
                rank: r.rank,
                host: r.host.to_string(),
                gpu_events: p.gpu_events,
                temporal: p.temporal,
                overlap: p.overlap,
                comm_kernels: p.comm_ops.iter().map(|o| o.calls).sum(),
                steps: rank_steps,
            });
            comm_ops.extend(p.comm_ops);
        }
        let mut notes = Vec::new();
        if rows.iter().all(|r| r.gpu_events == 0) {
            notes.push(NO_GPU_NOTE.to_string());
        }
        if rows.len() < 2 {
            notes.push(
                "one rank: a distributed run has one trace per rank (torch.profiler's tensorboard_trace_handler \
                 writes one per process); put them in one run directory to compare ranks"
                    .into(),
            );
        }
        if rows.iter().any(|r| r.gpu_events > 0) && comm_ops.is_empty() {
            notes.push("no communication kernels (nccl…, hccl…, hip…): overlap is undefined".into());
        }
        for r in &rows {
            if r.temporal.as_ref().is_some_and(|t| t.non_compute_time_us < 0) {
                notes.push(format!(
                    "rank {}: negative non-compute time, as HTA's arithmetic gives it: HTA rounds starts up and ends \
                     down to whole µs, so sub-µs kernels become negative intervals (HTA itself stops with an \
                     AssertionError on this trace)",
                    r.rank
                ));
            }
        }
        if filter.applied && filter.dropped_events > 0 {
            notes.push(format!(
                "as HTA does, the last ProfilerStep (often cut short) and everything after it are left out, with GPU \
                 events not launched from a kept host event: {} events",
                filter.dropped_events
            ));
        }
        HtaDistributed { ranks: rows, comm_ops, steps, filter, notes }
    }
}

/// The note every GPU tool gives on a CPU-only trace.
pub const NO_GPU_NOTE: &str = "no GPU activity: the trace has no GPU kernels, copies or sets (a CPU-only PyTorch \
     trace); record with torch.profiler's ProfilerActivity.CUDA to get HTA's GPU analyses";

/// The first of `tables` as a DataTable JSON (`cols`, `rows` of `c`/`v`): what `/data_csv`
/// and `oxprof data --format csv` write for the HTA tools, whose bodies are their reports.
pub(crate) fn first_table_json(tables: &[Table]) -> Option<Value> {
    let table = tables.first()?;
    let cols: Vec<Value> = table
        .columns
        .iter()
        .map(|c| {
            let ty = if matches!(c.kind, ColumnKind::Text) { "string" } else { "number" };
            serde_json::json!({ "id": c.name, "label": c.label, "type": ty })
        })
        .collect();
    let rows: Vec<Value> = table
        .rows
        .iter()
        .map(|r| {
            let cells: Vec<Value> = r
                .iter()
                .map(|cell| {
                    let v = match cell {
                        CellValue::Number(x) => serde_json::Number::from_f64(*x).map_or(Value::Null, Value::Number),
                        CellValue::Int(n) => Value::from(*n),
                        CellValue::Text(t) => Value::from(t.as_str()),
                        CellValue::Bool(b) => Value::from(*b),
                        CellValue::Null => Value::Null,
                    };
                    serde_json::json!({ "v": v })
                })
                .collect();
            serde_json::json!({ "c": cells })
        })
        .collect();
    Some(serde_json::json!({ "cols": cols, "rows": rows }))
}

fn us(v: i64) -> CellValue {
    CellValue::Int(v)
}

fn opt(v: Option<f64>) -> CellValue {
    v.map_or(CellValue::Null, CellValue::Number)
}

impl Report for HtaDistributed {
    fn xprof_body(&self) -> XprofBody {
        XprofBody::json(self.to_json().to_string())
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }

    /// The ranks table (one row per rank) as a DataTable, for CSV.
    fn xprof_body_json(&self) -> Option<Value> {
        first_table_json(&self.tables())
    }

    fn tables(&self) -> Vec<Table> {
        let n = NumberFormat::Shortest;
        let p = NumberFormat::Fixed(2);
        let mut ranks = Table::new("ranks")
            .title("Ranks")
            .rows_described("ranks", None)
            .column("rank", "Rank", ColumnKind::Integer, n)
            .column("host", "Host", ColumnKind::Text, n)
            .column("kernel_time_us", "GPU span (µs)", ColumnKind::Integer, n)
            .column("idle_time_us", "Idle (µs)", ColumnKind::Integer, n)
            .column("compute_time_us", "Compute (µs)", ColumnKind::Integer, n)
            .column("non_compute_time_us", "Non-compute (µs)", ColumnKind::Integer, n)
            .column("idle_time_pctg", "Idle %", ColumnKind::Number, p)
            .column("compute_time_pctg", "Compute %", ColumnKind::Number, p)
            .column("non_compute_time_pctg", "Non-compute %", ColumnKind::Number, p)
            .column("comm_time_us", "Communication (µs)", ColumnKind::Integer, n)
            .column("comp_comm_overlap_pctg", "Comm–comp overlap %", ColumnKind::Number, p)
            .column("comm_kernels", "Comm kernels", ColumnKind::Integer, n)
            .column("steps", "Steps", ColumnKind::Integer, n)
            .column("mean_step_us", "Mean step (µs)", ColumnKind::Number, NumberFormat::Fixed(1))
            .column("slowest_in", "Slowest in steps", ColumnKind::Integer, n);
        for r in &self.ranks {
            let t = r.temporal.as_ref();
            ranks.push_row(vec![
                CellValue::Int(r.rank),
                CellValue::Text(r.host.clone()),
                t.map_or(CellValue::Null, |t| us(t.kernel_time_us)),
                t.map_or(CellValue::Null, |t| us(t.idle_time_us)),
                t.map_or(CellValue::Null, |t| us(t.compute_time_us)),
                t.map_or(CellValue::Null, |t| us(t.non_compute_time_us)),
                opt(t.map(|t| t.idle_time_pctg)),
                opt(t.map(|t| t.compute_time_pctg)),
                opt(t.map(|t| t.non_compute_time_pctg)),
                us(r.overlap.comm_time_us),
                opt(r.overlap.comp_comm_overlap_pctg),
                CellValue::Int(r.comm_kernels as i64),
                CellValue::Int(r.steps.steps as i64),
                opt(r.steps.mean_step_us),
                CellValue::Int(r.steps.slowest_in as i64),
            ]);
        }
        let mut ops = Table::new("comm_ops")
            .title("Communication kernels")
            .rows_described("kernels per rank, most time first", Some(50))
            .column("rank", "Rank", ColumnKind::Integer, n)
            .column("name", "Kernel", ColumnKind::Text, n)
            .column("calls", "Calls", ColumnKind::Integer, n)
            .column("total_us", "Total (µs)", ColumnKind::Integer, n)
            .column("mean_us", "Mean (µs)", ColumnKind::Number, NumberFormat::Fixed(2))
            .column("min_us", "Min (µs)", ColumnKind::Integer, n)
            .column("max_us", "Max (µs)", ColumnKind::Integer, n);
        for o in &self.comm_ops {
            ops.push_row(vec![
                CellValue::Int(o.rank),
                CellValue::Text(o.name.clone()),
                CellValue::Int(o.calls as i64),
                us(o.total_us),
                CellValue::Number(o.mean_us),
                us(o.min_us),
                us(o.max_us),
            ]);
        }
        let mut steps = Table::new("stragglers")
            .title("Slowest rank per step")
            .rows_described("steps recorded by two or more ranks", Some(50))
            .column("step", "Step", ColumnKind::Integer, n)
            .column("ranks", "Ranks", ColumnKind::Integer, n)
            .column("slowest_rank", "Slowest rank", ColumnKind::Integer, n)
            .column("slowest_us", "Slowest (µs)", ColumnKind::Integer, n)
            .column("fastest_us", "Fastest (µs)", ColumnKind::Integer, n)
            .column("mean_us", "Mean (µs)", ColumnKind::Number, NumberFormat::Fixed(1));
        for s in &self.steps {
            steps.push_row(vec![
                CellValue::Int(s.step),
                CellValue::Int(s.ranks as i64),
                CellValue::Int(s.slowest_rank),
                us(s.slowest_us),
                us(s.fastest_us),
                CellValue::Number(s.mean_us),
            ]);
        }
        vec![ranks, ops, steps]
    }
}
