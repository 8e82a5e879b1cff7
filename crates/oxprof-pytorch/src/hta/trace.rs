//! One rank's events the way HTA 0.6.1 holds them (its trace data frame): every complete
//! event with a category (not `Trace`), its name, category, start and end in whole
//! microseconds, its `stream` and `correlation` args (−1 when absent), and HTA's two
//! steps before any analysis: rounding and the filter of incomplete steps.
//!
//! * **Rounding.** HTA rounds nanosecond-resolution traces to whole microseconds (start
//!   up, end down: `round_down_time_stamps`, pytorch/pytorch#122425), so an event shorter
//!   than a microsecond can end before it starts; it does so in floating point (see
//!   [`hta_rounding`]). Integer traces are unchanged by the same rounding, so it is always
//!   applied (HTA skips it when every `ts` is an integer, keeping fractional `dur`s: such
//!   a trace would differ by the fractions).
//! * **Filter** (`_filter_irrelevant_gpu_kernels`, when the run has two or more distinct
//!   `ProfilerStep#N` names): per rank, host events are kept when they start before the
//!   last `ProfilerStep` starts (the last step may be cut short by the profiler), and GPU
//!   events (a `stream` ≥ 0 with a `correlation` ≥ 0, or `Event Sync`/`Context Sync`) only
//!   when a kept host event has their correlation, once per such host event (HTA's inner
//!   join).
//!
//! Also HTA's kernel classification ([`kernel_type`], from `hta/common/types.py`) and its
//! interval merge ([`merge_intervals`]).

use oxprof_model::{XPlane, XSpace};
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// A line whose events become rows, with its plane and the plane's kept event kinds.
type LineToRead<'s> = (&'s XPlane, &'s [Option<(u32, u32)>], &'s oxprof_model::XLine);

/// An event as HTA keeps it (times in µs, rounded as HTA rounds them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HtaEvent {
    /// Index into [`RankTrace::names`].
    pub name: u32,
    /// Index into [`RankTrace::cats`].
    pub cat: u32,
    /// Start, µs (rounded up).
    pub ts: i64,
    /// End, µs (rounded down; may precede `ts` for sub-µs events, as in HTA).
    pub end: i64,
    /// The `stream` arg, −1 when absent or not an integer.
    pub stream: i64,
    /// The `correlation` arg, −1 when absent.
    pub correlation: i64,
}

impl HtaEvent {
    /// `end - ts` (HTA's `dur` after rounding).
    pub fn dur(&self) -> i64 {
        self.end - self.ts
    }
}

/// A `ProfilerStep#N` of a rank (µs, rounded as HTA rounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfilerStep {
    /// N.
    pub step: i64,
    /// Start, µs.
    pub ts: i64,
    /// End, µs.
    pub end: i64,
}

/// One rank's events.
#[derive(Debug, Clone, Default)]
pub struct RankTrace {
    /// The rank (`distributedInfo.rank`, else the host's position in the run).
    pub rank: i64,
    /// The host (file) it came from.
    pub host: String,
    /// Event names.
    pub names: Vec<String>,
    /// Categories.
    pub cats: Vec<String>,
    /// Events, in model order (threads, then streams).
    pub events: Vec<HtaEvent>,
    /// The host's `ProfilerStep#N` events (before the filter), by start.
    pub steps: Vec<ProfilerStep>,
}

/// Host partners' starts by correlation ([`RankTrace::host_partner_start`]).
#[derive(Debug, Clone, Default)]
pub struct PartnerStarts {
    /// (correlation, start), one per correlation, by correlation.
    pairs: Vec<(i64, i64)>,
}

impl PartnerStarts {
    /// The start of the host partner of `correlation`.
    pub fn get(&self, correlation: i64) -> Option<i64> {
        let i = self.pairs.binary_search_by_key(&correlation, |&(corr, _)| corr).ok()?;
        Some(self.pairs[i].1)
    }
}

/// Names HTA treats as GPU events without a stream (device-wide synchronisation).
const DEVICE_SYNC_NAMES: [&str; 2] = ["Event Sync", "Context Sync"];

impl RankTrace {
    /// Heap bytes, roughly (what a cache weighs it at).
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of::<RankTrace>()
            + self.host.len()
            + self.names.iter().chain(&self.cats).map(|s| s.len() + std::mem::size_of::<String>()).sum::<usize>()
            + self.events.capacity() * std::mem::size_of::<HtaEvent>()
            + self.steps.capacity() * std::mem::size_of::<ProfilerStep>()
    }

    /// The events of one host's space. `fallback_rank` is used when the trace has no
    /// `distributedInfo.rank`.
    pub fn from_space(space: &XSpace, host: &str, fallback_rank: i64) -> RankTrace {
        let mut out = RankTrace { host: host.to_string(), rank: fallback_rank, ..RankTrace::default() };
        let mut names: FxHashMap<String, u32> = FxHashMap::default();
        let mut cats: FxHashMap<String, u32> = FxHashMap::default();
        let base_time_ns = space.planes.iter().find_map(|p| plane_i64(p, "baseTimeNanoseconds")).unwrap_or(0);
        // The importer may have shifted epoch-based times into the trace viewer's range.
        let shift_ns =
            space.planes.iter().find_map(|p| plane_i64(p, oxprof_model::schema::TIME_SHIFT_STAT)).unwrap_or(0);
        if let Some(rank) = space.planes.iter().find_map(distributed_rank) {
            out.rank = rank;
        }
        // Per plane and event kind: (name, category), or None for kinds HTA drops.
        let plane_kinds: Vec<Vec<Option<(u32, u32)>>> = space
            .planes
            .iter()
            .map(|plane| {
                plane
                    .event_metadata_ids()
                    .map(|id| {
                        let m = plane.event_metadata_at(id);
                        let mut cat = None;
                        for s in plane.metadata_stats(id) {
                            match s.name() {
                                "ph" => return None, // instants and counters have no `dur`
                                "category" => cat = s.as_str(),
                                _ => {}
                            }
                        }
                        let cat = cat.filter(|c| *c != "Trace")?;
                        Some((
                            intern(&mut names, &mut out.names, plane.str(m.name)),
                            intern(&mut cats, &mut out.cats, cat),
                        ))
                    })
                    .collect()
            })
            .collect();
        // Millions of rows on big traces: counted first and sized once, never regrown; each
        // line fills its own part of them, lines in parallel.
        let lines: Vec<LineToRead<'_>> = space
            .planes
            .iter()
            .zip(&plane_kinds)
            .flat_map(|(plane, kinds)| plane.lines.iter().map(move |line| (plane, kinds.as_slice(), line)))
            .collect();
        let kept: Vec<usize> = lines
            .par_iter()
            .map(|&(plane, kinds, line)| {
                line.events(plane).filter(|e| kinds[e.metadata_id().index()].is_some()).count()
            })
            .collect();
        out.events = vec![HtaEvent::default(); kept.iter().sum()];
        let mut parts: Vec<&mut [HtaEvent]> = Vec::with_capacity(lines.len());
        let mut rest = out.events.as_mut_slice();
        for &count in &kept {
            let (part, after) = rest.split_at_mut(count);
            parts.push(part);
            rest = after;
        }
        lines.par_iter().zip(parts).for_each(|(&(plane, kinds, line), part)| {
            let stream_id = plane.stat_metadata_named("stream");
            let corr_id = plane.stat_metadata_named("correlation_id");
            // The file's own `ts` (µs, as picoseconds): the line's time less the trace's
            // `baseTimeNanoseconds`, which the importer added (plus any shift it took off).
            let line_ps = (i128::from(line.timestamp_ns) + i128::from(shift_ns) - i128::from(base_time_ns)) * 1000;
            let kept_events = line.events(plane).filter_map(|e| Some((e, kinds[e.metadata_id().index()]?)));
            for (slot, (e, (name, cat))) in part.iter_mut().zip(kept_events) {
                let (mut stream, mut correlation) = (-1, -1);
                for (id, value) in e.stats().int_values() {
                    let v = match value {
                        oxprof_model::IntValue::Int64(v) => v,
                        oxprof_model::IntValue::Uint64(v) => v as i64,
                        oxprof_model::IntValue::NotInt => continue,
                    };
                    if Some(id) == stream_id {
                        stream = v;
                    } else if Some(id) == corr_id {
                        correlation = v;
                    }
                }
                let (ts, end) = hta_rounding(line_ps + i128::from(e.offset_ps()), e.duration_ps());
                *slot = HtaEvent { name, cat, ts, end, stream, correlation };
            }
        });
        let mut steps: Vec<ProfilerStep> = out
            .events
            .iter()
            .filter(|e| e.stream == -1)
            .filter_map(|e| {
                let step = profiler_step_number(&out.names[e.name as usize])?;
                Some(ProfilerStep { step, ts: e.ts, end: e.end })
            })
            .collect();
        steps.sort_by_key(|s| (s.ts, s.step));
        out.steps = steps;
        out
    }

    /// The rank without its events (names, categories and steps kept).
    pub fn without_events(&self) -> RankTrace {
        RankTrace {
            rank: self.rank,
            host: self.host.clone(),
            names: self.names.clone(),
            cats: self.cats.clone(),
            events: Vec::new(),
            steps: self.steps.clone(),
        }
    }

    /// The name of an event.
    pub fn name(&self, e: &HtaEvent) -> &str {
        &self.names[e.name as usize]
    }

    /// The category of an event.
    pub fn cat(&self, e: &HtaEvent) -> &str {
        &self.cats[e.cat as usize]
    }

    /// HTA's GPU events: a `stream` other than −1 (kernels, copies, sets, syncs, GPU
    /// annotations).
    pub fn gpu_events(&self) -> impl Iterator<Item = &HtaEvent> {
        self.events.iter().filter(|e| e.stream != -1)
    }

    /// `pred` of every name, by name index (so per-event tests are a lookup, not string
    /// comparisons).
    pub fn names_where(&self, pred: impl Fn(&str) -> bool) -> Vec<bool> {
        self.names.iter().map(|n| pred(n)).collect()
    }

    /// Whether HTA's filters count each event as a GPU kernel (`GPUKernelFilter`): a test
    /// per event, built once.
    pub fn gpu_kernel_test(&self) -> impl Fn(&HtaEvent) -> bool + use<> {
        let sync = self.names_where(|n| DEVICE_SYNC_NAMES.contains(&n));
        move |e: &HtaEvent| (e.stream >= 0 && e.correlation >= 0) || sync[e.name as usize]
    }

    /// For each event that is a host-side partner of a GPU kernel (same correlation): the
    /// kernel's host partner's start, by correlation (the last host event of a correlation
    /// wins, as HTA's `transform_correlation_to_index` assigns).
    pub fn host_partner_start(&self) -> PartnerStarts {
        let is_gpu = self.gpu_kernel_test();
        let partner = |e: &&HtaEvent| e.correlation != -1 && !is_gpu(e);
        // Sorted pairs, sized once (16 bytes a partner, where a hash map of millions
        // takes several times that while it grows).
        let mut pairs = Vec::with_capacity(self.events.iter().filter(partner).count());
        pairs.extend(self.events.iter().filter(partner).map(|e| (e.correlation, e.ts)));
        // Stable: of equal correlations the last in event order ends each run.
        pairs.sort_by_key(|&(corr, _)| corr);
        let mut last = 0;
        for i in 0..pairs.len() {
            if i + 1 == pairs.len() || pairs[i + 1].0 != pairs[i].0 {
                pairs[last] = pairs[i];
                last += 1;
            }
        }
        pairs.truncate(last);
        PartnerStarts { pairs }
    }

    /// Correlations of the GPU kernels (what a host event needs to be linked), sorted, each
    /// once.
    pub fn gpu_kernel_correlations(&self) -> Vec<i64> {
        let is_gpu = self.gpu_kernel_test();
        sorted_ids(self.events.iter().filter(|e| e.correlation != -1 && is_gpu(e)).map(|e| e.correlation))
    }

    /// HTA's kernel type of every name, by name index.
    pub fn kernel_types(&self) -> Vec<KernelType> {
        self.names.iter().map(|n| kernel_type(n)).collect()
    }
}

const PS_PER_US: i128 = 1_000_000;

/// An event's start and end as HTA computes them from the file's `ts` and `dur`
/// (`round_down_time_stamps`): both read as Python floats, `end = ts + dur` in floating
/// point, then the start rounded up and the end down. On epoch-microsecond timestamps a
/// float is only good to 0.25 µs, so this is not the exact rounding of the decimal
/// values: HTA's numbers are reproduced, imprecision included.
fn hta_rounding(ts_ps: i128, dur_ps: i64) -> (i64, i64) {
    let as_float_us = |ps: i128| ps.div_euclid(PS_PER_US) as f64 + ps.rem_euclid(PS_PER_US) as f64 / 1e6;
    let ts = as_float_us(ts_ps);
    let end = ts + as_float_us(i128::from(dur_ps));
    (ts.ceil() as i64, end.floor() as i64)
}

fn intern(map: &mut FxHashMap<String, u32>, list: &mut Vec<String>, s: &str) -> u32 {
    if let Some(&i) = map.get(s) {
        return i;
    }
    let i = list.len() as u32;
    list.push(s.to_string());
    map.insert(s.to_string(), i);
    i
}

fn plane_i64(plane: &XPlane, name: &str) -> Option<i64> {
    plane.stats().find(|s| s.name() == name).and_then(|s| s.as_i64())
}

/// `distributedInfo.rank` of the trace's top-level metadata (a plane stat holding JSON).
fn distributed_rank(plane: &XPlane) -> Option<i64> {
    let text = plane.stats().find(|s| s.name() == "distributedInfo")?.as_str()?.to_string();
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value.get("rank")?.as_i64()
}

/// N of a `ProfilerStep#N` name (HTA's pattern `^ProfilerStep#(\d+)`).
pub fn profiler_step_number(name: &str) -> Option<i64> {
    let rest = name.strip_prefix("ProfilerStep#")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    rest[..digits].parse().ok()
}

/// What [`filter_incomplete_steps`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilterSummary {
    /// Whether the filter ran (two or more distinct `ProfilerStep#N` names in the run).
    pub applied: bool,
    /// Distinct `ProfilerStep#N` names in the run.
    pub step_names: usize,
    /// Events dropped (host events from the last step on, GPU events not launched from a
    /// kept host event), all ranks.
    pub dropped_events: u64,
}

/// HTA's `_filter_irrelevant_gpu_kernels` (default `include_last_profiler_step=False`) on
/// every rank of a run.
pub fn filter_incomplete_steps(ranks: &mut [RankTrace]) -> FilterSummary {
    let mut step_names: Vec<&str> = Vec::new();
    for r in ranks.iter() {
        for n in &r.names {
            if profiler_step_number(n).is_some() && !step_names.contains(&n.as_str()) {
                step_names.push(n);
            }
        }
    }
    let mut summary = FilterSummary { step_names: step_names.len(), ..FilterSummary::default() };
    if step_names.len() < 2 {
        return summary;
    }
    summary.applied = true;
    for r in ranks.iter_mut() {
        let before = r.events.len() as u64;
        filter_rank(r);
        summary.dropped_events += before.saturating_sub(r.events.len() as u64);
    }
    summary
}

fn filter_rank(r: &mut RankTrace) {
    if let Some(events) = filtered_events(r) {
        r.events = events;
    }
}

/// The events HTA's step filter keeps of one rank (GPU events first, then host events),
/// or `None` when it keeps them all as they are (a rank without host events).
pub fn filtered_events(r: &RankTrace) -> Option<Vec<HtaEvent>> {
    let keep = StepFilter::of(r)?;
    // A copy of most of the rank's rows: sized once, not regrown.
    let mut out = Vec::with_capacity(keep.gpu(r).map(|e| keep.times(e)).sum::<usize>() + keep.host(r).count());
    for e in keep.gpu(r) {
        out.extend(std::iter::repeat_n(*e, keep.times(e)));
    }
    out.extend(keep.host(r).copied());
    Some(out)
}

/// [`filtered_events`] in place of the rank's rows (what it returns, in the same order;
/// `false`: it keeps them all as they are). The rows are compacted where they lie and only
/// the smaller of the kept GPU and host events is copied aside, so a multi-GB trace's rows
/// are not held twice.
pub fn filter_events_in_place(r: &mut RankTrace) -> bool {
    let Some(keep) = StepFilter::of(r) else { return false };
    if keep.gpu(r).any(|e| keep.times(e) > 1) {
        // A kernel joined to several kept host events repeats: that output is longer than
        // its share of the rows.
        if let Some(events) = filtered_events(r) {
            r.events = events;
        }
        return true;
    }
    let kept_gpu = |i: usize, e: &HtaEvent| keep.is_gpu[i] && keep.times(e) == 1;
    let kept_host = |i: usize, e: &HtaEvent| !keep.is_gpu[i] && e.ts < keep.last_start;
    let (gpu, host) = (keep.gpu(r).filter(|e| keep.times(e) == 1).count(), keep.host(r).count());
    let aside: Vec<HtaEvent>;
    if gpu <= host {
        // GPU events aside; host events compacted to the front, then moved after them.
        aside = r.events.iter().enumerate().filter(|&(i, e)| kept_gpu(i, e)).map(|(_, e)| *e).collect();
        compact(&mut r.events, kept_host);
        r.events.splice(0..0, aside);
    } else {
        aside = r.events.iter().enumerate().filter(|&(i, e)| kept_host(i, e)).map(|(_, e)| *e).collect();
        compact(&mut r.events, kept_gpu);
        r.events.extend(aside);
    }
    r.events.shrink_to_fit();
    true
}

/// Keeps the events `keep(index, event)` says, in order, where they lie.
fn compact(events: &mut Vec<HtaEvent>, keep: impl Fn(usize, &HtaEvent) -> bool) {
    let mut kept = 0;
    for i in 0..events.len() {
        if keep(i, &events[i]) {
            events[kept] = events[i];
            kept += 1;
        }
    }
    events.truncate(kept);
}

/// What HTA's step filter keeps of a rank.
struct StepFilter {
    /// Whether each event counts as a GPU event.
    is_gpu: Vec<bool>,
    /// Host events starting before this are kept.
    last_start: i64,
    /// Kept host events per correlation.
    kept_corr: FxHashMap<i64, u32>,
}

impl StepFilter {
    /// `None`: the rank has no host events (nothing to filter by).
    fn of(r: &RankTrace) -> Option<StepFilter> {
        let test = r.gpu_kernel_test();
        let is_gpu: Vec<bool> = r.events.iter().map(test).collect();
        let is_step = r.names_where(|n| profiler_step_number(n).is_some());
        let cpu = || r.events.iter().zip(&is_gpu).filter(|(_, g)| !**g).map(|(e, _)| e);
        cpu().next()?;
        let step_starts = cpu().filter(|e| is_step[e.name as usize]).map(|e| e.ts).max();
        let last_start = step_starts.or_else(|| cpu().map(|e| e.ts).min())?;
        let mut kept_corr: FxHashMap<i64, u32> = FxHashMap::default();
        for e in cpu().filter(|e| e.ts < last_start) {
            *kept_corr.entry(e.correlation).or_default() += 1;
        }
        Some(StepFilter { is_gpu, last_start, kept_corr })
    }

    /// How often a GPU event is kept: once per kept host event of its correlation (HTA's
    /// inner join). Only kernels with a correlation can repeat; a sync without one is kept
    /// once (repeats would only repeat the same interval in the unions that read syncs).
    fn times(&self, e: &HtaEvent) -> usize {
        let times = self.kept_corr.get(&e.correlation).copied().unwrap_or(0) as usize;
        if e.correlation < 0 { times.min(1) } else { times }
    }

    fn gpu<'r>(&'r self, r: &'r RankTrace) -> impl Iterator<Item = &'r HtaEvent> + 'r {
        r.events.iter().zip(&self.is_gpu).filter(|(_, g)| **g).map(|(e, _)| e)
    }

    fn host<'r>(&'r self, r: &'r RankTrace) -> impl Iterator<Item = &'r HtaEvent> + 'r {
        r.events.iter().zip(&self.is_gpu).filter(move |(e, g)| !**g && e.ts < self.last_start).map(|(e, _)| e)
    }
}

/// Ids sorted, each once: a set looked up by binary search (millions of correlations on
/// big traces, where a hash set misses the cache on every probe).
pub(crate) fn sorted_ids(ids: impl Iterator<Item = i64>) -> Vec<i64> {
    let mut ids: Vec<i64> = ids.collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Some of a rank's events by correlation: `(correlation, event index)` pairs, sorted and
/// sized once (a vector per correlation would be millions of allocations on big traces).
pub(crate) struct ByCorrelation {
    pairs: Vec<(i64, usize)>,
}

impl ByCorrelation {
    /// The events `keep` says, each correlation's in event order.
    pub(crate) fn of(trace: &RankTrace, keep: impl Fn(&HtaEvent) -> bool) -> ByCorrelation {
        let mut pairs = Vec::with_capacity(trace.events.iter().filter(|e| keep(e)).count());
        pairs.extend(trace.events.iter().enumerate().filter(|(_, e)| keep(e)).map(|(i, e)| (e.correlation, i)));
        // (correlation, event) pairs are distinct: unstable gives event order within a
        // correlation, without a stable sort's buffer.
        pairs.sort_unstable();
        ByCorrelation { pairs }
    }

    /// The kept events of `correlation`, in event order.
    pub(crate) fn events(&self, correlation: i64) -> impl Iterator<Item = usize> + '_ {
        let from = self.pairs.partition_point(|&(c, _)| c < correlation);
        self.pairs[from..].iter().take_while(move |&&(c, _)| c == correlation).map(|&(_, i)| i)
    }
}

/// HTA's kernel types (`hta.utils.utils.KernelType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum KernelType {
    /// Collectives (`nccl…`, `hip…`, `hccl…`, `…ncclKernel…`).
    Communication,
    /// Copies and sets (`Memcpy…`, `Memset…`, `hipMemcpy…`, `dma…`).
    Memory,
    /// Everything that is not one of HTA's non-compute patterns.
    Computation,
    /// The rest (syncs, waits, launches recorded on the GPU).
    Other,
}

/// HTA's `get_kernel_type`: the first of communication, memory, computation whose
/// pattern matches (Python `re.match`, so anchored at the start).
pub fn kernel_type(name: &str) -> KernelType {
    if is_comm_kernel(name) {
        KernelType::Communication
    } else if is_memory_kernel(name) {
        KernelType::Memory
    } else if is_compute_kernel(name) {
        KernelType::Computation
    } else {
        KernelType::Other
    }
}

/// `(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)`.
fn is_comm_kernel(name: &str) -> bool {
    name.starts_with("nccl") || name.starts_with("hip") || name.starts_with("hccl") || name.contains("ncclKernel")
}

/// `(^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)`.
fn is_memory_kernel(name: &str) -> bool {
    let n = name.strip_prefix("hip").unwrap_or(name);
    n.starts_with("Memcpy") || n.starts_with("Memset") || name.starts_with("dma")
}

/// Not any of `(^nccl)|(.*Memcpy)|(.*Memset)|(.*dma)|(^.*Sync)|(^Stream Wait Event)|
/// (cuda.*LaunchKernel)|(^runFunction)|(^hip)|(^job_exe)|(^packet)|(^pe_exe)|
/// (^cpum_exe_subgraph)|(^hccl)|(^collective_subgraph_execution)` (`.` stops at a newline).
fn is_compute_kernel(name: &str) -> bool {
    let first_line = name.split('\n').next().unwrap_or(name);
    let prefixes = [
        "nccl",
        "Stream Wait Event",
        "runFunction",
        "hip",
        "job_exe",
        "packet",
        "pe_exe",
        "cpum_exe_subgraph",
        "hccl",
        "collective_subgraph_execution",
    ];
    let excluded = prefixes.iter().any(|p| name.starts_with(p))
        || ["Memcpy", "Memset", "dma", "Sync"].iter().any(|s| first_line.contains(s))
        || first_line.strip_prefix("cuda").is_some_and(|rest| rest.contains("LaunchKernel"));
    !excluded
}

/// HTA's `merge_kernel_intervals`: sorted by start, an interval opens a new group when
/// it starts after every earlier interval ended (touching intervals merge); each group is
/// (its first start, its latest end).
pub fn merge_intervals(mut intervals: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    intervals.sort_by_key(|&(ts, _)| ts);
    let mut out: Vec<(i64, i64)> = Vec::new();
    let mut max_end: Option<i64> = None;
    for (ts, end) in intervals {
        match (out.last_mut(), max_end) {
            (Some(group), Some(m)) if ts <= m => group.1 = group.1.max(end),
            _ => out.push((ts, end)),
        }
        max_end = Some(max_end.map_or(end, |m| m.max(end)));
    }
    out
}

/// Σ (end − start) of merged intervals.
pub fn merged_length(merged: &[(i64, i64)]) -> i64 {
    merged.iter().map(|&(ts, end)| end - ts).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_types_follow_htas_patterns() {
        assert_eq!(kernel_type("ncclKernel_AllReduce_RING_LL_Sum_float"), KernelType::Communication);
        assert_eq!(kernel_type("void at::ncclKernel<x>"), KernelType::Communication);
        assert_eq!(kernel_type("Memcpy HtoD (Pageable -> Device)"), KernelType::Memory);
        assert_eq!(kernel_type("Memset (Device)"), KernelType::Memory);
        assert_eq!(kernel_type("void gemm_kernel<float>"), KernelType::Computation);
        assert_eq!(kernel_type("Event Sync"), KernelType::Other);
        assert_eq!(kernel_type("cudaLaunchKernel"), KernelType::Other);
        assert_eq!(kernel_type("Stream Wait Event"), KernelType::Other);
        assert_eq!(kernel_type("foo_dma_bar"), KernelType::Other);
    }

    #[test]
    fn merge_joins_overlapping_and_touching_intervals() {
        // |--a--|           a 0..10, b 5..12, c 12..20 (touches b), d 30..40
        //    |--b--|
        //          |--c--|
        //                      |--d--|
        let merged = merge_intervals(vec![(12, 20), (0, 10), (30, 40), (5, 12)]);
        assert_eq!(merged, vec![(0, 20), (30, 40)]);
        assert_eq!(merged_length(&merged), 30);
    }

    /// A rank of two steps and `hosts` host events, each launching `kernels` kernels (its
    /// correlation shared by `repeat` host events), a sync every fifth.
    fn mixed_rank(hosts: i64, kernels: i64, repeat: i64) -> RankTrace {
        let names = ["ProfilerStep#1", "ProfilerStep#2", "aten::mm", "sgemm", "Event Sync"];
        let mut r = RankTrace { names: names.map(String::from).to_vec(), cats: vec!["x".into()], ..Default::default() };
        let event = |name, ts, stream, correlation| HtaEvent { name, cat: 0, ts, end: ts + 3, stream, correlation };
        for h in 0..hosts {
            let ts = (h * 37) % 1000;
            r.events.push(event(2, ts, -1, h / repeat));
            for _ in 0..kernels {
                r.events.push(event(3, ts + 1, 7, h / repeat));
            }
            if h % 5 == 0 {
                r.events.push(event(4, ts + 2, -1, -1));
            }
        }
        r.events.push(HtaEvent { name: 0, cat: 0, ts: 0, end: 400, stream: -1, correlation: -1 });
        r.events.push(HtaEvent { name: 1, cat: 0, ts: 400, end: 900, stream: -1, correlation: -1 });
        r
    }

    /// Filtering in place gives exactly the copy's events, in its order: GPU-heavy and
    /// host-heavy ranks (either side copied aside), kernels repeated by the join, and a
    /// rank without host events (left as it is).
    #[test]
    fn filtering_in_place_equals_the_copy() {
        // Host only; fewer kept kernels than host events; more; kernels repeated by the join.
        for (hosts, kernels, repeat) in [(200, 0, 1), (200, 1, 1), (200, 3, 1), (200, 1, 3)] {
            let rank = mixed_rank(hosts, kernels, repeat);
            let mut own = rank.clone();
            let applied = filter_events_in_place(&mut own);
            match filtered_events(&rank) {
                Some(copy) => {
                    assert!(applied);
                    assert_eq!(own.events, copy, "{hosts} {kernels} {repeat}");
                    assert_ne!(copy.len(), rank.events.len(), "{hosts} {kernels} {repeat}: the filter drops events");
                }
                None => assert!(!applied && own.events == rank.events),
            }
        }
        let gpu_only = RankTrace {
            events: vec![HtaEvent { name: 0, cat: 0, ts: 1, end: 2, stream: 7, correlation: 1 }],
            names: vec!["k".into()],
            ..Default::default()
        };
        let mut own = gpu_only.clone();
        assert!(!filter_events_in_place(&mut own) && own.events == gpu_only.events);
    }

    /// A GPU event is kept once per kept host event of its correlation (once at most
    /// without one), as counting the host events directly says.
    #[test]
    fn the_filter_keeps_a_gpu_event_once_per_kept_host_event_of_its_correlation() {
        for (hosts, kernels, repeat) in [(200, 1, 1), (200, 2, 3), (60, 1, 5)] {
            let rank = mixed_rank(hosts, kernels, repeat);
            let keep = StepFilter::of(&rank).unwrap();
            for e in keep.gpu(&rank) {
                let host = |h: &&HtaEvent| h.stream == -1 && h.correlation == e.correlation && h.ts < keep.last_start;
                let naive = rank.events.iter().filter(host).count();
                let naive = if e.correlation < 0 { naive.min(1) } else { naive };
                assert_eq!(keep.times(e), naive, "{e:?} of {hosts} {kernels} {repeat}");
            }
        }
    }

    /// The partners' starts answer as a map filled in event order does (the last host
    /// event of a correlation wins), for present and absent correlations.
    #[test]
    fn partner_starts_are_the_last_host_event_of_each_correlation() {
        for (hosts, kernels, repeat) in [(200, 1, 1), (200, 2, 3), (0, 0, 1)] {
            let rank = mixed_rank(hosts, kernels, repeat);
            let is_gpu = rank.gpu_kernel_test();
            let mut map = FxHashMap::default();
            for e in rank.events.iter().filter(|e| e.correlation != -1 && !is_gpu(e)) {
                map.insert(e.correlation, e.ts);
            }
            let starts = rank.host_partner_start();
            for corr in -2..hosts + 3 {
                assert_eq!(starts.get(corr), map.get(&corr).copied(), "{corr} of {hosts} {kernels} {repeat}");
            }
        }
    }

    #[test]
    fn step_numbers_need_digits() {
        assert_eq!(profiler_step_number("ProfilerStep#12"), Some(12));
        assert_eq!(profiler_step_number("ProfilerStep#"), None);
        assert_eq!(profiler_step_number("ProfilerStep 3"), None);
    }
}
