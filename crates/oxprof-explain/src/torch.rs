//! The PyTorch facts torch-tb-profiler's views do not hold, read from what the session keeps
//! of HTA's rows beside the parse (its per-rank parts and host spans, so nothing is read
//! twice):
//!
//! * the GPU's idle time by HTA's causes (host wait, kernel wait, other);
//! * DataLoader spans of any category: Kineto writes `enumerate(DataLoader)#…__next__` as a
//!   `user_annotation`, which torch-tb-profiler 0.4.3 drops, so its DataLoader share is 0 on
//!   modern traces; whether the loader runs in the training process or waits for workers;
//! * torch.compile's compiling inside steps: `… (dynamo_timed)` spans (Dynamo's and
//!   Inductor's timers, recorded with `record_function`), and the compiled regions'
//!   recompile ids (`Torch-Compiled Region: F/N`, N > 0 after a recompile).

use oxprof_pytorch::hta::host_spans::{HostSpans, is_compile, recompile_number};
use oxprof_pytorch::hta::idle_time::{IdleCategory, IdleTimeRow};
use oxprof_pytorch::hta::trace::{ProfilerStep, merge_intervals};
use oxprof_pytorch::parse::is_data_loader;
use serde::Serialize;
use std::collections::BTreeMap;

/// The GPU's idle time on its busiest stream, by HTA's causes.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct GpuIdle {
    /// The CUDA stream (the one with the most kernels).
    pub stream: i64,
    /// Streams with GPU work.
    pub streams: usize,
    /// Idle time between its kernels per step, ms.
    pub idle_ms_per_step: f64,
    /// Of that: the next kernel's launch started after the previous kernel ended, ms.
    pub host_wait_ms: f64,
    /// Short (< 30 µs) gaps between back-to-back kernels, ms.
    pub kernel_wait_ms: f64,
    /// The rest (syncs, events, other streams), ms.
    pub other_ms: f64,
}

impl GpuIdle {
    /// HTA's rows of one rank, per step (`steps` ≥ 1): the stream with the most gaps.
    pub(crate) fn from_rows(rows: &[IdleTimeRow], steps: usize) -> Option<GpuIdle> {
        let mut by_stream: BTreeMap<i64, (u64, [i64; 3])> = BTreeMap::new();
        for row in rows {
            let slot = by_stream.entry(row.stream).or_default();
            slot.0 += row.gaps;
            let i = match row.idle_category {
                IdleCategory::HostWait => 0,
                IdleCategory::KernelWait => 1,
                IdleCategory::Other => 2,
            };
            slot.1[i] += row.idle_time_us;
        }
        let streams = by_stream.len();
        let (&stream, &(gaps, us)) = by_stream.iter().max_by_key(|(stream, (gaps, _))| (*gaps, -**stream))?;
        if gaps == 0 {
            return None;
        }
        let per_step = |us: i64| us as f64 / 1000.0 / steps.max(1) as f64;
        Some(GpuIdle {
            stream,
            streams,
            idle_ms_per_step: per_step(us.iter().sum()),
            host_wait_ms: per_step(us[0]),
            kernel_wait_ms: per_step(us[1]),
            other_ms: per_step(us[2]),
        })
    }
}

/// The DataLoader as the training process sees it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct DataLoader {
    /// Its span's name (`enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__`, …).
    pub name: String,
    /// Whether batches come from worker processes (`num_workers > 0`): the training process
    /// only waits; else loading and preprocessing run in it.
    pub workers: bool,
    /// Batches fetched per step.
    pub calls_per_step: f64,
    /// Time in the fetches per step, ms.
    pub ms_per_step: f64,
}

/// torch.compile in the profile.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TorchCompile {
    /// Compiling (the outermost `(dynamo_timed)` spans) in the median step, ms.
    pub median_step_ms: f64,
    /// Steps that compiled.
    pub steps_compiling: usize,
    /// The compile spans that took longest (name, total ms over the profile), at most 3.
    pub top: Vec<(String, f64)>,
    /// The highest recompile number of a compiled region (`Torch-Compiled Region: 0/3` → 3).
    pub max_recompile: u32,
}

/// The steps' windows (µs), or the host events' whole span as one step.
fn windows(trace: &HostSpans, steps: &[ProfilerStep]) -> Vec<(i64, i64)> {
    if !steps.is_empty() {
        return steps.iter().map(|s| (s.ts, s.end)).collect();
    }
    match trace.host_window {
        Some((s, e)) if e > s => vec![(s, e)],
        _ => Vec::new(),
    }
}

/// The merged host spans of the events whose name passes `test`, clipped to each window:
/// (µs covered, spans starting in it) per window.
fn per_window(trace: &HostSpans, windows: &[(i64, i64)], test: &[bool]) -> Vec<(i64, u64)> {
    let spans: Vec<(i64, i64)> =
        trace.spans.iter().filter(|e| test[e.name as usize] && e.end > e.ts).map(|e| (e.ts, e.end)).collect();
    let mut starts: Vec<i64> = spans.iter().map(|s| s.0).collect();
    starts.sort_unstable();
    // Disjoint, sorted intervals and the time they cover before each: the time covered in
    // any window is then two binary searches, whatever the number of windows and spans (a
    // trace of many overlapping steps must not cost steps × spans).
    let merged = merge_intervals(spans);
    let mut before = Vec::with_capacity(merged.len() + 1);
    before.push(0i64);
    for (start, end) in &merged {
        before.push(before[before.len() - 1].saturating_add(end - start));
    }
    let covered_until = |t: i64| {
        let k = merged.partition_point(|(start, _)| *start < t);
        let partial = k.checked_sub(1).map_or(0, |last| (t.min(merged[last].1) - merged[last].0).max(0));
        before[k.saturating_sub(1)].saturating_add(partial)
    };
    windows
        .iter()
        .map(|&(start, end)| {
            let time = (covered_until(end) - covered_until(start)).max(0);
            let count = starts.partition_point(|s| *s < end) - starts.partition_point(|s| *s < start);
            (time, count as u64)
        })
        .collect()
}

/// The host time of the events whose name passes `test`, by name (µs).
fn host_totals(trace: &HostSpans, test: &[bool]) -> BTreeMap<u32, i64> {
    let mut totals: BTreeMap<u32, i64> = BTreeMap::new();
    for e in trace.spans.iter().filter(|e| test[e.name as usize]) {
        *totals.entry(e.name).or_default() += (e.end - e.ts).max(0);
    }
    totals
}

/// The DataLoader's fetches per step (`None`: the trace has none).
pub(crate) fn data_loader(trace: &HostSpans, steps: &[ProfilerStep]) -> Option<DataLoader> {
    let test = trace.names_where(is_data_loader);
    let totals = host_totals(trace, &test);
    let (&name, _) = totals.iter().max_by_key(|(name, us)| (**us, std::cmp::Reverse(**name)))?;
    let windows = windows(trace, steps);
    let rows = per_window(trace, &windows, &test);
    let n = rows.len().max(1) as f64;
    let name = trace.names[name as usize].clone();
    Some(DataLoader {
        workers: name.contains("MultiProcessing"),
        name,
        calls_per_step: rows.iter().map(|r| r.1 as f64).sum::<f64>() / n,
        ms_per_step: rows.iter().map(|r| r.0 as f64).sum::<f64>() / 1000.0 / n,
    })
}

/// torch.compile's compiling in the steps (`None`: no compile spans and no recompiled
/// region).
pub(crate) fn torch_compile(trace: &HostSpans, steps: &[ProfilerStep]) -> Option<TorchCompile> {
    let test = trace.names_where(is_compile);
    let max_recompile = trace.names.iter().filter_map(|n| recompile_number(n)).max().unwrap_or(0);
    if !test.contains(&true) && max_recompile == 0 {
        return None;
    }
    let windows = windows(trace, steps);
    let mut per_step: Vec<i64> = per_window(trace, &windows, &test).into_iter().map(|r| r.0).collect();
    let steps_compiling = per_step.iter().filter(|us| **us > 0).count();
    per_step.sort_unstable();
    let median = per_step.get(per_step.len() / 2).copied().unwrap_or(0);
    let mut top: Vec<(String, f64)> = host_totals(trace, &test)
        .into_iter()
        .map(|(name, us)| (trace.names[name as usize].clone(), us as f64 / 1000.0))
        .collect();
    top.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    top.truncate(3);
    Some(TorchCompile { median_step_ms: median as f64 / 1000.0, steps_compiling, top, max_recompile })
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_pytorch::hta::trace::{HtaEvent, RankTrace};

    /// A rank's kept spans and its steps, from host spans `(name, ts, end)` and steps
    /// `(ts, end)`.
    fn rank(spans: &[(&str, i64, i64)], steps: &[(i64, i64)]) -> (HostSpans, Vec<ProfilerStep>) {
        let mut t = RankTrace { cats: vec!["user_annotation".into()], ..RankTrace::default() };
        for &(name, ts, end) in spans {
            let index = match t.names.iter().position(|n| n == name) {
                Some(i) => i,
                None => {
                    t.names.push(name.to_string());
                    t.names.len() - 1
                }
            };
            t.events.push(HtaEvent { name: index as u32, cat: 0, ts, end, stream: -1, correlation: -1 });
        }
        let steps = steps.iter().enumerate().map(|(i, &(ts, end))| ProfilerStep { step: i as i64, ts, end }).collect();
        (HostSpans::of_rank(&t), steps)
    }

    fn compile_of(rank: &(HostSpans, Vec<ProfilerStep>)) -> Option<TorchCompile> {
        torch_compile(&rank.0, &rank.1)
    }

    fn loader_of(rank: &(HostSpans, Vec<ProfilerStep>)) -> Option<DataLoader> {
        data_loader(&rank.0, &rank.1)
    }

    #[test]
    fn compile_spans_count_once_per_step_nested_or_not() {
        let t = rank(
            &[
                ("_compile.compile_inner (dynamo_timed)", 0, 600),
                ("compile_fx_inner (dynamo_timed)", 100, 500), // nested: not counted again
                ("_compile.compile_inner (dynamo_timed)", 1000, 1400),
                ("_compile.compile_inner (dynamo_timed)", 2000, 2500),
                ("Torch-Compiled Region: 0/2", 2500, 2600),
                ("aten::mm", 0, 900),
            ],
            &[(0, 1000), (1000, 2000), (2000, 3000)],
        );
        let c = compile_of(&t).unwrap();
        assert_eq!((c.median_step_ms, c.steps_compiling, c.max_recompile), (0.5, 3, 2));
        assert_eq!(c.top[0], ("_compile.compile_inner (dynamo_timed)".to_string(), 1.5));
        // A program compiled once, in the first step, is warm-up: the median step has none.
        let warm = rank(&[("_compile.compile_inner (dynamo_timed)", 0, 600)], &[(0, 1000), (1000, 2000), (2000, 3000)]);
        assert_eq!(compile_of(&warm).unwrap().median_step_ms, 0.0);
        assert_eq!(compile_of(&rank(&[("aten::mm", 0, 9)], &[(0, 10)])), None);
    }

    /// The windowed sums equal a direct clip-and-merge per window, and a hostile trace of
    /// many overlapping steps and spans costs (steps + spans) · log, not steps × spans.
    #[test]
    fn windows_are_summed_by_search_not_by_scan() {
        let compile = "x (dynamo_timed)";
        let spans: Vec<(&str, i64, i64)> =
            vec![(compile, 0, 10), (compile, 5, 20), (compile, 30, 40), (compile, 35, 36), (compile, 50, 51)];
        let windows = [(0, 100), (8, 32), (20, 30), (36, 60), (100, 200), (-5, 6)];
        let t = rank(&spans, &[]);
        let test = t.0.names_where(is_compile);
        let got = per_window(&t.0, &windows, &test);
        let naive: Vec<(i64, u64)> = windows
            .iter()
            .map(|&(a, b)| {
                let inside = spans.iter().filter(|s| s.2 > a && s.1 < b).map(|s| (s.1.max(a), s.2.min(b))).collect();
                let merged = merge_intervals(inside);
                let time = merged.iter().map(|(x, y)| y - x).sum();
                (time, spans.iter().filter(|s| s.1 >= a && s.1 < b).count() as u64)
            })
            .collect();
        assert_eq!(got, naive);
        assert_eq!(got[0], (31, 5));
        // 200,000 spans in 200,000 steps that all overlap: ~4e10 steps of a scan.
        let many: Vec<(&str, i64, i64)> = (0..200_000).map(|i| (compile, 2 * i, 2 * i + 1)).collect();
        let steps: Vec<(i64, i64)> = (0..200_000).map(|i| (i, 400_000 + i)).collect();
        let t = rank(&many, &steps);
        let c = compile_of(&t).unwrap();
        assert_eq!(c.steps_compiling, 200_000);
    }

    #[test]
    fn the_data_loader_says_whether_workers_feed_it() {
        let multi = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
        let t = rank(&[(multi, 0, 300), (multi, 1000, 1100)], &[(0, 1000), (1000, 2000)]);
        let d = loader_of(&t).unwrap();
        assert!(d.workers, "{d:?}");
        assert_eq!((d.calls_per_step, d.ms_per_step), (1.0, 0.2));
        let single = rank(&[("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 500)], &[]);
        let d = loader_of(&single).unwrap();
        assert!(!d.workers && d.ms_per_step == 0.5, "{d:?}");
        assert_eq!(loader_of(&rank(&[("aten::mm", 0, 9)], &[])), None);
    }

    #[test]
    fn gpu_idle_reads_the_stream_with_the_most_gaps() {
        let row = |stream, idle_category, idle_time_us, gaps| IdleTimeRow {
            rank: 0,
            stream,
            idle_category,
            idle_time_us,
            gaps,
            idle_time_ratio: None,
        };
        let rows = [
            row(7, IdleCategory::HostWait, 8000, 10),
            row(7, IdleCategory::KernelWait, 400, 30),
            row(7, IdleCategory::Other, 1600, 2),
            row(20, IdleCategory::Other, 50_000, 1),
        ];
        let idle = GpuIdle::from_rows(&rows, 4).unwrap();
        assert_eq!((idle.stream, idle.streams), (7, 2));
        assert_eq!(
            (idle.idle_ms_per_step, idle.host_wait_ms, idle.kernel_wait_ms, idle.other_ms),
            (2.5, 2.0, 0.1, 0.4)
        );
        assert_eq!(GpuIdle::from_rows(&[], 4), None);
    }
}
