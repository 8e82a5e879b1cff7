//! The `hta_gpu_idle` tool's report: per rank, HTA's idle time breakdown per stream
//! ([`super::idle_time`]), kernel launch statistics ([`super::launch_stats`]) with the
//! worst launch delays, and queue length per stream ([`super::queue_length`]).

use super::distributed::NO_GPU_NOTE;
use super::idle_time::IdleTimeRow;
use super::launch_stats::{Launch, LaunchSummary};
use super::parts::{RankView, filter_summary, parts_of, sorted, views};
use super::queue_length::QueueLengthSummary;
use super::trace::{FilterSummary, RankTrace};
use oxprof_report::{ColumnKind, NumberFormat, Report, Table, XprofBody, json_of};
use oxprof_wire::datatable::CellValue;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How many launches with the longest delay each rank lists.
pub const WORST_LAUNCHES: usize = 20;

/// A launch of a rank, with its names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankLaunch {
    /// The rank.
    pub rank: i64,
    /// The launch.
    #[serde(flatten)]
    pub launch: Launch,
    /// The runtime call.
    pub launch_name: String,
    /// The GPU event.
    pub kernel_name: String,
}

/// The report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HtaGpuIdle {
    /// Idle time per rank, stream and category.
    pub idle: Vec<IdleTimeRow>,
    /// Launch statistics per rank.
    pub launch_summary: Vec<LaunchSummary>,
    /// Each rank's launches with the longest delay (at most [`WORST_LAUNCHES`]).
    pub worst_launches: Vec<RankLaunch>,
    /// Queue length per rank and stream.
    pub queue_length: Vec<QueueLengthSummary>,
    /// What HTA's incomplete-step filter dropped.
    pub filter: FilterSummary,
    /// Notes for people.
    pub notes: Vec<String>,
}

impl HtaGpuIdle {
    /// The report of the selected ranks (HTA's step filter is applied here, over them).
    pub fn compute(ranks: Vec<RankTrace>) -> HtaGpuIdle {
        let parts = parts_of(&ranks);
        HtaGpuIdle::from_parts(&views(&ranks, &parts))
    }

    /// The report of the selected ranks' parts (see [`super::parts`]).
    pub fn from_parts(ranks: &[RankView<'_>]) -> HtaGpuIdle {
        let ranks = sorted(ranks);
        let filter = filter_summary(&ranks);
        let mut out = HtaGpuIdle {
            idle: Vec::new(),
            launch_summary: Vec::new(),
            worst_launches: Vec::new(),
            queue_length: Vec::new(),
            filter,
            notes: Vec::new(),
        };
        for r in &ranks {
            let p = r.parts.relabelled(r.rank);
            out.idle.extend(p.idle);
            out.launch_summary.push(p.launch_summary);
            out.worst_launches.extend(p.worst_launches);
            out.queue_length.extend(p.queue_length);
        }
        if ranks.iter().all(|r| r.parts.gpu_events == 0) {
            out.notes.push(NO_GPU_NOTE.to_string());
        }
        if out.filter.applied && out.filter.dropped_events > 0 {
            out.notes.push(format!(
                "as HTA does, the last ProfilerStep (often cut short) and everything after it are left out, with GPU \
                 events not launched from a kept host event: {} events",
                out.filter.dropped_events
            ));
        }
        out
    }
}

/// A rank's [`WORST_LAUNCHES`] launches with the longest delay (longest first, then by
/// correlation), with their names; `all` is left in any order.
pub fn worst_launches(r: &RankTrace, all: &mut [Launch]) -> Vec<RankLaunch> {
    let worst = WORST_LAUNCHES.min(all.len());
    if worst == 0 {
        return Vec::new();
    }
    let by_delay = |a: &Launch, b: &Launch| b.launch_delay.cmp(&a.launch_delay).then(a.correlation.cmp(&b.correlation));
    all.select_nth_unstable_by(worst - 1, by_delay);
    let mut out: Vec<Launch> = all[..worst].to_vec();
    out.sort_by(by_delay);
    out.into_iter()
        .map(|launch| RankLaunch {
            rank: r.rank,
            launch_name: r.names[launch.launch_name as usize].clone(),
            kernel_name: r.names[launch.kernel_name as usize].clone(),
            launch,
        })
        .collect()
}

fn opt(v: Option<f64>) -> CellValue {
    v.map_or(CellValue::Null, CellValue::Number)
}

impl Report for HtaGpuIdle {
    fn xprof_body(&self) -> XprofBody {
        XprofBody::json(self.to_json().to_string())
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }

    /// The idle-time table as a DataTable, for CSV.
    fn xprof_body_json(&self) -> Option<Value> {
        super::distributed::first_table_json(&self.tables())
    }

    fn tables(&self) -> Vec<Table> {
        let n = NumberFormat::Shortest;
        let mut idle = Table::new("idle_time")
            .title("Idle time by cause")
            .rows_described("rank, stream and cause", None)
            .column("rank", "Rank", ColumnKind::Integer, n)
            .column("stream", "Stream", ColumnKind::Integer, n)
            .column("idle_category", "Cause", ColumnKind::Text, n)
            .column("idle_time_us", "Idle (µs)", ColumnKind::Integer, n)
            .column("gaps", "Gaps", ColumnKind::Integer, n)
            .column("idle_time_ratio", "Share of stream idle", ColumnKind::Number, NumberFormat::Percent(0));
        for r in &self.idle {
            idle.push_row(vec![
                CellValue::Int(r.rank),
                CellValue::Int(r.stream),
                CellValue::Text(r.idle_category.as_str().into()),
                CellValue::Int(r.idle_time_us),
                CellValue::Int(r.gaps as i64),
                opt(r.idle_time_ratio),
            ]);
        }
        let f2 = NumberFormat::Fixed(2);
        let mut launch = Table::new("launch_summary")
            .title("Kernel launches")
            .rows_described("ranks", None)
            .column("rank", "Rank", ColumnKind::Integer, n)
            .column("launches", "Launches", ColumnKind::Integer, n)
            .column("mean_cpu_duration_us", "Mean launch (µs)", ColumnKind::Number, f2)
            .column("mean_gpu_duration_us", "Mean GPU (µs)", ColumnKind::Number, f2)
            .column("mean_launch_delay_us", "Mean delay (µs)", ColumnKind::Number, f2)
            .column("max_launch_delay_us", "Max delay (µs)", ColumnKind::Integer, n)
            .column("short_kernels", "Short kernels", ColumnKind::Integer, n)
            .column("runtime_outliers", "Launches > 50 µs", ColumnKind::Integer, n)
            .column("launch_delay_outliers", "Delays > 100 µs", ColumnKind::Integer, n);
        for s in &self.launch_summary {
            launch.push_row(vec![
                CellValue::Int(s.rank),
                CellValue::Int(s.launches as i64),
                opt(s.mean_cpu_duration_us),
                opt(s.mean_gpu_duration_us),
                opt(s.mean_launch_delay_us),
                s.max_launch_delay_us.map_or(CellValue::Null, CellValue::Int),
                CellValue::Int(s.short_kernels as i64),
                CellValue::Int(s.runtime_outliers as i64),
                CellValue::Int(s.launch_delay_outliers as i64),
            ]);
        }
        let mut worst = Table::new("worst_launches")
            .title("Longest launch delays")
            .rows_described("launches per rank, longest delay first", Some(40))
            .column("rank", "Rank", ColumnKind::Integer, n)
            .column("correlation", "Correlation", ColumnKind::Integer, n)
            .column("launch_name", "Launch", ColumnKind::Text, n)
            .column("kernel_name", "Kernel", ColumnKind::Text, n)
            .column("cpu_duration", "Launch (µs)", ColumnKind::Integer, n)
            .column("gpu_duration", "GPU (µs)", ColumnKind::Integer, n)
            .column("launch_delay", "Delay (µs)", ColumnKind::Integer, n);
        for w in &self.worst_launches {
            let l = &w.launch;
            worst.push_row(vec![
                CellValue::Int(w.rank),
                CellValue::Int(l.correlation),
                CellValue::Text(w.launch_name.clone()),
                CellValue::Text(w.kernel_name.clone()),
                CellValue::Int(l.cpu_duration),
                CellValue::Int(l.gpu_duration),
                CellValue::Int(l.launch_delay),
            ]);
        }
        let mut queue = Table::new("queue_length")
            .title("Queue length per stream")
            .rows_described("rank and stream", None)
            .column("rank", "Rank", ColumnKind::Integer, n)
            .column("stream", "Stream", ColumnKind::Integer, n)
            .column("count", "Samples", ColumnKind::Integer, n)
            .column("mean", "Mean", ColumnKind::Number, f2)
            .column("std", "Std", ColumnKind::Number, f2)
            .column("min", "Min", ColumnKind::Number, n)
            .column("p25", "25%", ColumnKind::Number, n)
            .column("p50", "Median", ColumnKind::Number, n)
            .column("p75", "75%", ColumnKind::Number, n)
            .column("max", "Max", ColumnKind::Number, n);
        for q in &self.queue_length {
            queue.push_row(vec![
                CellValue::Int(q.rank),
                CellValue::Int(q.stream),
                CellValue::Int(q.count as i64),
                CellValue::Number(q.mean),
                opt(q.std),
                CellValue::Number(q.min),
                CellValue::Number(q.p25),
                CellValue::Number(q.p50),
                CellValue::Number(q.p75),
                CellValue::Number(q.max),
            ]);
        }
        vec![idle, launch, worst, queue]
    }
}
