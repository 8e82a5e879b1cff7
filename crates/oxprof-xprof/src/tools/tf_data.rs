//! The `tf_data_bottleneck_analysis` tool: which tf.data input pipeline is slow, and which
//! of its iterators is the bottleneck, from the `Iterator::…` events of the host threads
//! (port of XProf's `xprof/convert/xplane_to_tf_data_stats.cc` and of the old frontend's
//! `tf_data_stats_proto_to_gviz.py`; XProf 2.24 no longer serves this tool).
//!
//! # Algorithm
//! 1. Per host (`/host:CPU` plane) an event forest: intra-thread nesting (an event's parent
//!    is the innermost enclosing event of its line; events with `_a` are not nested), plus
//!    XProf's `ConnectTfDataEvents`: a consumer iterator (the parent of a `…Consume` event,
//!    keyed by its `id` and the event's `element_id`) gets as children the producer
//!    iterators (first iterator child of a `…Produce` event, keyed by its `parent_id` and
//!    the produce event's `element_id`). This links the iterator graph across threads:
//!
//!    ```text
//!    python  |Iterator::Root---------------------------|
//!            | |Iterator::Root::Prefetch-------------| |
//!            |   |PrefetchConsume e=7|               |
//!    worker         |PrefetchProduce e=7-----------|
//!                   | |Iterator::Root::Prefetch::Map--|   (parent_id = Prefetch's id)
//!    ```
//! 2. Every root iterator call (`Iterator::X`, exactly two `::` parts) is one execution of
//!    its pipeline. Walking its children: a child iterator is on the critical path
//!    (`is_blocking`) when its parent is and their spans overlap; self time is duration
//!    minus the overlap with child iterators. The bottleneck of a call is the blocking
//!    iterator with the longest self time.
//! 3. Per pipeline (root iterator id): calls sorted by duration (descending), average /
//!    min / max latency and the calls slower than 50 µs. Pipelines whose root iterator is
//!    the parent of an `Iterator::Prefetch::Generator` are device pipelines ("Device:n"),
//!    the others host pipelines ("Host:n").
//! 4. Bottleneck analysis over all hosts: for each host pipeline its slowest call's
//!    bottleneck, sorted by the pipeline's max latency (descending), with a suggestion by
//!    iterator kind; the summary says input bound when the first one exceeds 50 µs.
//!
//! Not modelled: XProf's context-group connections (`_p`/`_c` stats), which link executor
//! events, not iterators. Deliberately different: iterator ids written as uint64 (ids
//! above 2^63, common in TensorFlow's traces) are kept, where XProf read them as 0 and
//! merged those iterators into one.
//!
//! # Output shape
//! The body is what the old TensorBoard frontend read: a JSON array of three Google
//! DataTables as Python's `gviz_api` writes them (keys `cols`, `rows`, then `p`):
//! 1. the input pipeline graph, one row per (host, pipeline, call rank, iterator):
//!    `host`, `input_pipeline` ("Host:0"), `rank` (0 = slowest call), `name` (`v` = iterator
//!    id, `f` = an HTML card with start time, total and self duration in µs and the call
//!    count), `parent` (parent iterator id or ""), `type` (0 off the critical path,
//!    1 blocking, 2 the bottleneck);
//! 2. the summary of all input pipelines: `host`, `input_pipeline`, `min`, `mean`, `max`
//!    (µs), `num_calls`, `num_slow_calls` (calls over 50 µs);
//! 3. the bottleneck analysis: `host`, `input_pipeline`, `max_latency` (µs), `bottleneck`
//!    (HTML: iterator type, long name, latency), `suggestion` (HTML); table properties
//!    `is_input_bound` ("true"/"false") and `summary_message`.
//!
//! Where XProf iterates hash maps (pipelines, hosts, iterators when breaking ties) oxprof
//! uses a fixed order: hosts by name, pipelines in order of their first root call,
//! iterators by id; equal durations keep file order.

use oxprof_grouping::tf_op::{TfOpCategory, iterator_name, parse_tf_op_fullname};
use oxprof_model::schema::{HOST_THREADS_PLANE_NAME, StatType};
use oxprof_model::{StatValue, XPlane, XSpace};
use oxprof_report::{Report, Table, XprofBody, json_of};
use oxprof_wire::datatable::{Cell, ColumnType, DataTable};
use oxprof_wire::gviz_api;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// A call slower than this (50 µs) is slow (`kSlowCallThresholdPs`).
pub const SLOW_CALL_THRESHOLD_PS: i64 = 50_000_000;

/// `IteratorStat`: one iterator within one pipeline call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IteratorStat {
    /// Iterator id.
    pub id: i64,
    /// Start of its first execution in the call (absolute ps, XProf's wrapping arithmetic).
    pub start_time_ps: i64,
    /// Sum of its executions' durations.
    pub duration_ps: i64,
    /// Duration minus the overlap with its child iterators.
    pub self_time_ps: i64,
    /// On the critical path of the call.
    pub is_blocking: bool,
    /// Executions within the call.
    pub num_calls: i64,
}

/// `IteratorMetadata`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IteratorMetadata {
    /// Iterator id.
    pub id: i64,
    /// Parent iterator id (0 for roots).
    pub parent_id: i64,
    /// Iterator type (last `::` part of the long name).
    pub name: String,
    /// Long name, e.g. `Iterator::Batch::Map`.
    pub long_name: String,
    /// Whether the iterator works asynchronously (Prefetch, ParallelMap, …).
    pub is_async: bool,
}

/// `InputPipelineStat`: one call of a pipeline.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputPipelineStat {
    /// The blocking iterator with the longest self time (0 if none).
    pub bottleneck_iterator_id: i64,
    /// Its self time.
    pub bottleneck_iterator_latency_ps: i64,
    /// Per iterator id.
    pub iterator_stats: BTreeMap<i64, IteratorStat>,
}

/// `InputPipelineMetadata.InputPipelineType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PipelineType {
    /// Runs the user's tf.data code.
    Host,
    /// Takes elements from a host pipeline to a device.
    Device,
}

/// `InputPipelineStats`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputPipelineStats {
    /// Root iterator id.
    pub id: i64,
    /// Host or device pipeline.
    pub pipeline_type: PipelineType,
    /// "Host:n" or "Device:n".
    pub name: String,
    /// Mean call latency (integer division, as XProf).
    pub avg_latency_ps: i64,
    /// Fastest call.
    pub min_latency_ps: i64,
    /// Slowest call.
    pub max_latency_ps: i64,
    /// Calls slower than [`SLOW_CALL_THRESHOLD_PS`].
    pub num_slow_calls: i64,
    /// Calls, slowest first.
    pub stats: Vec<InputPipelineStat>,
}

/// `TfDataStats` of one host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TfDataStats {
    /// Per iterator id.
    pub iterator_metadata: BTreeMap<i64, IteratorMetadata>,
    /// Pipelines in order of their first root call.
    pub input_pipelines: Vec<InputPipelineStats>,
}

/// `TfDataBottleneckAnalysis`: one host pipeline's bottleneck.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BottleneckAnalysis {
    /// Host.
    pub host: String,
    /// Pipeline name.
    pub input_pipeline: String,
    /// The pipeline's slowest call.
    pub max_latency_ps: i64,
    /// Bottleneck iterator type.
    pub iterator_name: String,
    /// Its long name.
    pub iterator_long_name: String,
    /// Its self time in the slowest call.
    pub iterator_latency_ps: i64,
    /// What to do (HTML).
    pub suggestion: String,
}

/// The `tf_data_bottleneck_analysis` report (XProf's `CombinedTfDataStats`): every host,
/// and the verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CombinedTfDataStats {
    /// The slowest host pipeline is slower than 50 µs.
    pub is_input_bound: bool,
    /// One-sentence summary.
    pub summary: String,
    /// Host pipelines, slowest first.
    pub bottleneck_analysis: Vec<BottleneckAnalysis>,
    /// Per host, by host name.
    pub tf_data_stats: BTreeMap<String, TfDataStats>,
}

impl CombinedTfDataStats {
    /// Whether any host has tf.data iterator calls.
    pub fn has_tf_data_events(&self) -> bool {
        self.tf_data_stats.values().any(|s| !s.input_pipelines.is_empty())
    }
}

/// The analysis over hosts given as `(host name, XSpace)`; a space without `/host:CPU`
/// contributes an empty host (XProf refuses such a host; the caller decides).
pub fn tf_data_bottleneck_analysis<'a>(hosts: impl IntoIterator<Item = (String, &'a XSpace)>) -> CombinedTfDataStats {
    combine(
        hosts.into_iter().map(|(host, space)| {
            (host, space.plane(HOST_THREADS_PLANE_NAME).map(host_tf_data_stats).unwrap_or_default())
        }),
    )
}

/// Combines per-host statistics (from [`host_tf_data_stats`]) and runs the bottleneck
/// analysis (`CombinedTfDataStatsBuilder::Finalize`).
///
/// Hosts with the same name (XSpaces carrying the same hostname) share one entry, as in
/// XProf's map: see [`merge_same_host`].
pub fn combine(hosts: impl IntoIterator<Item = (String, TfDataStats)>) -> CombinedTfDataStats {
    let mut combined = CombinedTfDataStats::default();
    for (host, stats) in hosts {
        match combined.tf_data_stats.entry(host) {
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(stats);
            }
            std::collections::btree_map::Entry::Occupied(mut o) => merge_same_host(o.get_mut(), stats),
        }
    }
    finalize(&mut combined);
    combined
}

/// A second `CombinedTfDataStatsBuilder::Add` into the same host entry: iterator metadata
/// already known is kept; calls of a pipeline already known are appended to it (its
/// latency figures become the new host's, as XProf overwrites them); new pipelines are
/// numbered from 0 among the pipelines this host adds.
fn merge_same_host(existing: &mut TfDataStats, new: TfDataStats) {
    for (id, metadata) in new.iterator_metadata {
        existing.iterator_metadata.entry(id).or_insert(metadata);
    }
    let (mut host_count, mut device_count) = (0, 0);
    for mut pipeline in new.input_pipelines {
        if let Some(known) = existing.input_pipelines.iter_mut().find(|p| p.id == pipeline.id) {
            known.stats.append(&mut pipeline.stats);
            known.avg_latency_ps = pipeline.avg_latency_ps;
            known.min_latency_ps = pipeline.min_latency_ps;
            known.max_latency_ps = pipeline.max_latency_ps;
            known.num_slow_calls = pipeline.num_slow_calls;
            continue;
        }
        pipeline.name = match pipeline.pipeline_type {
            PipelineType::Host => {
                host_count += 1;
                format!("Host:{}", host_count - 1)
            }
            PipelineType::Device => {
                device_count += 1;
                format!("Device:{}", device_count - 1)
            }
        };
        existing.input_pipelines.push(pipeline);
    }
}

// ---------------------------------------------------------------------------------------
// The event forest of one host plane, restricted to what the analysis reads.

/// The six producer/consumer event pairs `ConnectTfDataEvents` links, in its order.
const PRODUCE_CONSUME: [(&str, &str); 6] = [
    ("PrefetchProduce", "PrefetchConsume"),
    ("ParallelInterleaveProduce", "ParallelInterleaveConsume"),
    ("ParallelMapProduce", "ParallelMapConsume"),
    ("MapAndBatchProduce", "MapAndBatchConsume"),
    ("ParseExampleProduce", "ParseExampleConsume"),
    ("ParallelBatchProduce", "ParallelBatchConsume"),
];

/// `HostEventType::kDeviceInputPipelineSecondIterator`.
const DEVICE_SECOND_ITERATOR: &str = "Iterator::Prefetch::Generator";

/// What an event's metadata makes it, for this analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Other,
    /// `kIterator` or `kDeviceInputPipelineSecondIterator` (`IsIteratorEventType`);
    /// `tf_data`: its name parses as a tf.data op (the walk only follows those).
    Iterator {
        tf_data: bool,
        generator: bool,
    },
    Produce(u8),
    Consume(u8),
}

fn classify(name: &str) -> Kind {
    if let Some(i) = PRODUCE_CONSUME.iter().position(|&(p, _)| p == name) {
        return Kind::Produce(i as u8);
    }
    if let Some(i) = PRODUCE_CONSUME.iter().position(|&(_, c)| c == name) {
        return Kind::Consume(i as u8);
    }
    let tf_data = parse_tf_op_fullname(name).category == TfOpCategory::TfData;
    if name == DEVICE_SECOND_ITERATOR {
        Kind::Iterator { tf_data, generator: true }
    } else if name == "Iterator" || tf_data {
        Kind::Iterator { tf_data, generator: false }
    } else {
        Kind::Other
    }
}

/// An iterator event.
struct Node {
    begin_ps: u64,
    duration_ps: i64,
    metadata: u32,
    /// `id` stat (`kStepId`).
    id: Option<i64>,
    /// `parent_id` stat.
    parent_id: Option<i64>,
    tf_data: bool,
    generator: bool,
    /// Intra-thread iterator children (line order), then linked producer iterators.
    children: Vec<u32>,
}

impl Node {
    fn timestamp_ps(&self) -> i64 {
        self.begin_ps as i64
    }
}

/// `Timespan::OverlappedDurationPs` over XProf's unsigned timestamps.
fn overlap_ps(a_begin: u64, a_duration: i64, b_begin: u64, b_duration: i64) -> u64 {
    let a_end = a_begin.wrapping_add(a_duration as u64);
    let b_end = b_begin.wrapping_add(b_duration as u64);
    if !(a_begin <= b_end && b_begin <= a_end) {
        return 0;
    }
    a_end.min(b_end).wrapping_sub(a_begin.max(b_begin))
}

/// The forest: iterator nodes (creation order) plus the producer/consumer records.
#[derive(Default)]
struct Forest {
    nodes: Vec<Node>,
    /// `(pair, element_id, first iterator child)` of produce events with an `element_id`.
    produces: Vec<(u8, i64, u32)>,
    /// `(pair, element_id, parent iterator)` of consume events nested in an iterator.
    consumes: Vec<(u8, i64, u32)>,
}

/// What sits on the nesting stack.
#[derive(Clone, Copy)]
enum Slot {
    Plain,
    Iterator(u32),
    /// A produce event still looking for its first iterator child (`usize::MAX`: found or
    /// no `element_id`).
    Produce(usize),
}

/// An id-like stat (`id`, `parent_id`, `element_id`, `_a`) as a 64-bit pattern: int64 as
/// is, uint64 reinterpreted. XProf's `IntValue` reads uint64 stats as 0, and TensorFlow
/// writes iterator ids above 2^63 as uint64, so XProf merged all such iterators into one
/// "iterator 0"; oxprof keeps them apart (a deliberate difference).
fn int_stat(value: StatValue<'_>) -> i64 {
    match value {
        StatValue::Int64(x) => x,
        StatValue::Uint64(x) => x as i64,
        _ => 0,
    }
}

/// Builds the forest of one host plane (`ConnectIntraThread` + `ConnectTfDataEvents`).
fn build_forest(plane: &XPlane) -> Forest {
    let kinds: Vec<Kind> = plane.event_metadata().iter().map(|m| classify(plane.str(m.name))).collect();
    let mut forest = Forest::default();
    if !kinds.iter().any(|k| matches!(k, Kind::Iterator { .. })) {
        return forest;
    }
    let has_async = plane.stat_metadata_of_type(StatType::IsAsync).is_some();
    // Produce events of the current line still looking for their first iterator child:
    // `(pair, element_id)`, taken when found.
    let mut pending_produce: Vec<Option<(u8, i64)>> = Vec::new();
    let mut stack: Vec<(u64, u64, Slot)> = Vec::new();
    for line in &plane.lines {
        // Produce events of earlier lines that found no iterator child stay unmatched.
        stack.clear();
        pending_produce.clear();
        for event in line.events(plane) {
            let meta = event.metadata_id().index();
            let kind = kinds.get(meta).copied().unwrap_or(Kind::Other);
            let begin = event.timestamp_ps() as u64;
            let duration = event.duration_ps();
            let end = begin.wrapping_add(duration as u64);
            let slot = match kind {
                Kind::Iterator { tf_data, generator } => {
                    let stats = event.stats();
                    forest.nodes.push(Node {
                        begin_ps: begin,
                        duration_ps: duration,
                        metadata: meta as u32,
                        id: stats.get(StatType::StepId).map(|s| int_stat(s.value)),
                        parent_id: stats.get(StatType::ParentId).map(|s| int_stat(s.value)),
                        tf_data,
                        generator,
                        children: Vec::new(),
                    });
                    Slot::Iterator((forest.nodes.len() - 1) as u32)
                }
                Kind::Produce(pair) => match event.stats().get(StatType::ElementId) {
                    Some(element) => {
                        pending_produce.push(Some((pair, int_stat(element.value))));
                        Slot::Produce(pending_produce.len() - 1)
                    }
                    None => Slot::Produce(usize::MAX),
                },
                _ => Slot::Plain,
            };
            let is_async = has_async && event.stats().get(StatType::IsAsync).is_some_and(|s| int_stat(s.value) != 0);
            if is_async {
                continue;
            }
            while let Some(&(p_begin, p_end, _)) = stack.last() {
                if p_begin <= begin && end <= p_end {
                    break;
                }
                stack.pop();
            }
            let parent = stack.last().map(|&(_, _, s)| s);
            match (parent, slot) {
                (Some(Slot::Iterator(p)), Slot::Iterator(child)) => {
                    if let Some(node) = forest.nodes.get_mut(p as usize) {
                        node.children.push(child);
                    }
                }
                (Some(Slot::Produce(r)), Slot::Iterator(child)) => {
                    // Only the first iterator child of a produce event counts.
                    if let Some(pending) = pending_produce.get_mut(r).and_then(Option::take) {
                        forest.produces.push((pending.0, pending.1, child));
                    }
                }
                _ => {}
            }
            if let (Kind::Consume(pair), Some(Slot::Iterator(p))) = (kind, parent)
                && let Some(element) = event.stats().get(StatType::ElementId)
            {
                forest.consumes.push((pair, int_stat(element.value), p));
            }
            stack.push((begin, end, slot));
        }
    }
    connect_tf_data(&mut forest);
    forest
}

/// `ConnectTfDataEvents`: links producer iterators to consumer iterators by
/// (iterator id, element id), pair type by pair type.
fn connect_tf_data(forest: &mut Forest) {
    let mut producers: HashMap<(i64, i64), Vec<u32>> = HashMap::new();
    for pair in 0..PRODUCE_CONSUME.len() as u8 {
        for &(_, element, iterator) in forest.produces.iter().filter(|r| r.0 == pair) {
            let Some(parent_id) = forest.nodes.get(iterator as usize).and_then(|n| n.parent_id) else {
                continue;
            };
            producers.entry((parent_id, element)).or_default().push(iterator);
        }
    }
    for pair in 0..PRODUCE_CONSUME.len() as u8 {
        for i in 0..forest.consumes.len() {
            let (c, element, consumer) = forest.consumes[i];
            if c != pair {
                continue;
            }
            let Some(id) = forest.nodes.get(consumer as usize).and_then(|n| n.id) else { continue };
            if let Some(list) = producers.get(&(id, element))
                && let Some(node) = forest.nodes.get_mut(consumer as usize)
            {
                node.children.extend_from_slice(list);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Per-host statistics.

/// `IsAsyncIterator`.
fn is_async_iterator(name: &str) -> bool {
    matches!(
        name,
        "Prefetch"
            | "ParallelInterleave"
            | "ParallelMap"
            | "ParseExample"
            | "MapAndBatch"
            | "DataService"
            | "LegacyParallelInterleave"
            | "ParallelBatch"
    )
}

/// `SetIteratorMetadata`.
fn iterator_metadata(plane: &XPlane, node: &Node, id: i64) -> IteratorMetadata {
    let long_name = plane.event_metadata().get(node.metadata as usize).map_or("", |m| plane.str(m.name));
    let name = iterator_name(long_name).to_string();
    IteratorMetadata {
        id,
        parent_id: node.parent_id.unwrap_or(0),
        is_async: is_async_iterator(&name),
        name,
        long_name: long_name.to_string(),
    }
}

/// `CombinedTfDataStatsBuilder::Add` for one host plane.
pub fn host_tf_data_stats(plane: &XPlane) -> TfDataStats {
    let forest = build_forest(plane);
    let mut stats = TfDataStats::default();
    // `ProcessEventForest`: iterator metadata and root calls, then device pipelines.
    let mut roots: Vec<(i64, Vec<u32>)> = Vec::new();
    let mut root_index: HashMap<i64, usize> = HashMap::new();
    for (i, node) in forest.nodes.iter().enumerate().filter(|(_, n)| !n.generator) {
        let Some(id) = node.id else { continue };
        stats.iterator_metadata.entry(id).or_insert_with(|| iterator_metadata(plane, node, id));
        let name = plane.event_metadata().get(node.metadata as usize).map_or("", |m| plane.str(m.name));
        if name.split("::").count() == 2 {
            let slot = *root_index.entry(id).or_insert_with(|| {
                roots.push((id, Vec::new()));
                roots.len() - 1
            });
            if let Some((_, calls)) = roots.get_mut(slot) {
                calls.push(i as u32);
            }
        }
    }
    let mut device_pipelines: Vec<i64> = Vec::new();
    for node in forest.nodes.iter().filter(|n| n.generator) {
        let Some(id) = node.id else { continue };
        if let std::collections::btree_map::Entry::Vacant(v) = stats.iterator_metadata.entry(id) {
            v.insert(iterator_metadata(plane, node, id));
            if let Some(parent) = node.parent_id {
                device_pipelines.push(parent);
            }
        }
    }
    // `ProcessInputPipelines`.
    let (mut host_count, mut device_count) = (0i64, 0i64);
    for (root_id, mut calls) in roots {
        calls.sort_by_key(|&c| std::cmp::Reverse(forest.nodes.get(c as usize).map_or(0, |n| n.duration_ps)));
        let is_device = device_pipelines.contains(&root_id);
        let (pipeline_type, name) = if is_device {
            device_count += 1;
            (PipelineType::Device, format!("Device:{}", device_count - 1))
        } else {
            host_count += 1;
            (PipelineType::Host, format!("Host:{}", host_count - 1))
        };
        let mut pipeline = InputPipelineStats {
            id: root_id,
            pipeline_type,
            name,
            avg_latency_ps: 0,
            min_latency_ps: i64::MAX,
            max_latency_ps: 0,
            num_slow_calls: 0,
            stats: Vec::with_capacity(calls.len()),
        };
        let mut sum = 0i64;
        for &call in &calls {
            let mut stat = InputPipelineStat::default();
            walk_iterator(&forest, call, &mut stat, true, 0);
            set_bottleneck(&mut stat);
            pipeline.stats.push(stat);
            let latency = forest.nodes.get(call as usize).map_or(0, |n| n.duration_ps);
            sum = sum.wrapping_add(latency);
            pipeline.min_latency_ps = pipeline.min_latency_ps.min(latency);
            pipeline.max_latency_ps = pipeline.max_latency_ps.max(latency);
            if latency > SLOW_CALL_THRESHOLD_PS {
                pipeline.num_slow_calls += 1;
            }
        }
        pipeline.avg_latency_ps = if calls.is_empty() { 0 } else { sum / calls.len() as i64 };
        stats.input_pipelines.push(pipeline);
    }
    stats
}

/// `ProcessIteratorEvent`: accumulates one iterator execution and walks its tf.data
/// children (depth ≤ 100). A child is blocking when this one is and they overlap; the
/// overlap is taken off this iterator's self time.
fn walk_iterator(forest: &Forest, node_index: u32, stat: &mut InputPipelineStat, is_blocking: bool, level: u32) {
    if level > 100 {
        return;
    }
    let Some(node) = forest.nodes.get(node_index as usize) else { return };
    let Some(id) = node.id else { return };
    let entry = stat.iterator_stats.entry(id).or_insert_with(|| IteratorStat {
        id,
        start_time_ps: node.timestamp_ps(),
        ..IteratorStat::default()
    });
    entry.duration_ps = entry.duration_ps.wrapping_add(node.duration_ps);
    let mut self_time = node.duration_ps;
    for &child_index in &node.children {
        let Some(child) = forest.nodes.get(child_index as usize) else { continue };
        if !child.tf_data {
            continue;
        }
        let overlap = overlap_ps(node.begin_ps, node.duration_ps, child.begin_ps, child.duration_ps);
        walk_iterator(forest, child_index, stat, is_blocking && overlap != 0, level + 1);
        self_time = self_time.wrapping_sub(overlap as i64);
    }
    if let Some(entry) = stat.iterator_stats.get_mut(&id) {
        entry.self_time_ps = entry.self_time_ps.wrapping_add(self_time);
        entry.is_blocking |= is_blocking;
        entry.num_calls += 1;
    }
}

/// `SetBottleneckIteratorId`: the blocking iterator with the longest (positive) self time.
fn set_bottleneck(stat: &mut InputPipelineStat) {
    let (mut id, mut max_self) = (0i64, 0i64);
    for (&iterator, s) in &stat.iterator_stats {
        if s.is_blocking && s.self_time_ps > max_self {
            id = iterator;
            max_self = s.self_time_ps;
        }
    }
    stat.bottleneck_iterator_id = id;
    stat.bottleneck_iterator_latency_ps = max_self;
}

// ---------------------------------------------------------------------------------------
// Combining hosts.

/// `CombinedTfDataStatsBuilder::Finalize`: bottleneck analysis, suggestions, summary.
fn finalize(combined: &mut CombinedTfDataStats) {
    let mut rows = Vec::new();
    for (host, stats) in &combined.tf_data_stats {
        for pipeline in stats.input_pipelines.iter().filter(|p| p.pipeline_type == PipelineType::Host) {
            let Some(slowest) = pipeline.stats.first() else { continue };
            let metadata = stats.iterator_metadata.get(&slowest.bottleneck_iterator_id).cloned().unwrap_or_default();
            rows.push(BottleneckAnalysis {
                host: host.clone(),
                input_pipeline: pipeline.name.clone(),
                max_latency_ps: pipeline.max_latency_ps,
                suggestion: suggestion(&metadata.name),
                iterator_name: metadata.name,
                iterator_long_name: metadata.long_name,
                iterator_latency_ps: slowest.bottleneck_iterator_latency_ps,
            });
        }
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.max_latency_ps));
    let max_latency = rows.first().map_or(0, |r| r.max_latency_ps);
    combined.bottleneck_analysis = rows;
    (combined.is_input_bound, combined.summary) = if max_latency > SLOW_CALL_THRESHOLD_PS {
        (
            true,
            "Your profile has a tf.data input pipeline slower than 50 us. For each slow input pipeline, below shows a \
             bottleneck in the input pipeline and a suggestion on how to fix it."
                .into(),
        )
    } else if max_latency > 0 {
        (
            false,
            "Your profile does not have any tf.data input pipeline slower than 50 us. Your job could be still input \
             bound if this profile didn't capture all workers."
                .into(),
        )
    } else {
        (
            false,
            "No tf.data activity captured in your profile. If your job uses tf.data, try to capture a longer profile."
                .into(),
        )
    };
}

/// `BottleneckType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BottleneckType {
    /// Reading from storage or local memory.
    SlowSource,
    /// tf.data service.
    SlowDataService,
    /// Reading from remote memory.
    SlowRemoteSource,
    /// Map, Interleave: have a parallel version.
    SlowTransformationWithParallelVersion,
    /// Filter, Batch, Unbatch.
    SlowTransformationWithoutParallelVersion,
    /// Anything else.
    Other,
}

/// `GetBottleneckType` by iterator type.
pub fn bottleneck_type(iterator_name: &str) -> BottleneckType {
    use BottleneckType::*;
    match iterator_name {
        "TFRecord"
        | "SSTable"
        | "RecordIO"
        | "Spanner"
        | "TFColumn"
        | "SleepwalkRemoteDataset"
        | "TextLine"
        | "StitchedTimelineDataset"
        | "DateKeyDataset"
        | "CapacitorProto"
        | "LMDB"
        | "ExternalDataset"
        | "PearModel"
        | "FixedLengthRecordV2"
        | "FromTensor"
        | "TensorSlice"
        | "Generator"
        | "SyntheticDatasetOp" => SlowSource,
        "DataService" => SlowDataService,
        "GuzzlerDataGuzzlerRemoteDataset"
        | "ReverbDataset"
        | "DatasetSampleGame"
        | "Courier"
        | "ReverbEpisodeDataset" => SlowRemoteSource,
        "Map" | "Interleave" => SlowTransformationWithParallelVersion,
        "Filter" | "Batch" | "Unbatch" => SlowTransformationWithoutParallelVersion,
        _ => Other,
    }
}

fn anchor(url: &str, text: &str) -> String {
    format!("<a href=\"{url}\" target=\"_blank\">{text}</a>")
}

/// `GetSuggestion` for an iterator type (HTML).
pub fn suggestion(iterator_name: &str) -> String {
    const PLAYBOOK: &str = "https://www.tensorflow.org/guide/data_performance_analysis";
    const PLAYBOOK_SOURCE: &str = "https://www.tensorflow.org/guide/data_performance_analysis#source_datasets";
    const PLAYBOOK_CPU: &str =
        "https://www.tensorflow.org/guide/data_performance_analysis#3_are_you_reaching_high_cpu_utilization";
    const PLAYBOOK_TRANSFORMATION: &str =
        "https://www.tensorflow.org/guide/data_performance_analysis#transformation_datasets";
    const GUIDE_PARALLEL_EXTRACTION: &str =
        "https://www.tensorflow.org/guide/data_performance#parallelizing_data_extraction";
    const GUIDE_PARALLEL_TRANSFORMATION: &str =
        "https://www.tensorflow.org/guide/data_performance#parallelizing_data_transformation";
    const GUIDE_CACHE: &str = "https://www.tensorflow.org/guide/data_performance#caching";
    const DATA_SERVICE: &str =
        "https://www.tensorflow.org/api_docs/python/tf/data/experimental/service?version=nightly";
    match bottleneck_type(iterator_name) {
        BottleneckType::SlowSource => format!(
            "1. Check the locality of a host and input data. Ideally, they should be in the same cell (or very \
             close, like the same region).<br/>2. Parallelize reading from this dataset source. See {} and {} for \
             more details.<br/>",
            anchor(PLAYBOOK_SOURCE, "here"),
            anchor(GUIDE_PARALLEL_EXTRACTION, "here")
        ),
        BottleneckType::SlowDataService => format!(
            "1. Fetching data from tf.data service took a while. Profile the tf.data service worker to analyze the \
             issue further.<br/>2. See {} for more details on tf.data service.<br/>3. See {} for other suggestions.",
            anchor(DATA_SERVICE, "this"),
            anchor(PLAYBOOK, "this")
        ),
        BottleneckType::SlowRemoteSource => format!(
            "1. The remote data source is slow. Profile its host to analyze the issue further.<br/>2. See {} for \
             other suggestions.",
            anchor(PLAYBOOK, "this")
        ),
        BottleneckType::SlowTransformationWithParallelVersion => format!(
            "1. Parallelize this transformation by setting \
             <code>num_parallel_calls=tf.data.experimental.AUTOTUNE</code>. See {} for more details.<br/>2. \
             Consider adding <code>cache</code> after this transformation if your data fits into memory and it is \
             appropriate (e.g., there is no randomness in upstream transformations like <code>shuffle</code>). See \
             {} for more details.<br/>3. Find more resources {}.",
            anchor(GUIDE_PARALLEL_TRANSFORMATION, "this"),
            anchor(GUIDE_CACHE, "this"),
            anchor(PLAYBOOK_TRANSFORMATION, "here")
        ),
        BottleneckType::SlowTransformationWithoutParallelVersion => format!(
            "1. This transformation is inherently sequential. Add outer parallelism by running multiple copies of \
             the input pipeline over sharded inputs and combining the results. See {} for more details.<br/>2. \
             Consider adding <code>cache</code> after this transformation if your data fits into memory and it is \
             appropriate (e.g., there is no randomness in upstream transformations like <code>shuffle</code>). See \
             {} for more details.<br/>3. Find more resources {}.",
            anchor(PLAYBOOK_TRANSFORMATION, "this"),
            anchor(GUIDE_CACHE, "this"),
            anchor(PLAYBOOK_CPU, "here")
        ),
        BottleneckType::Other => format!("See {} for suggestions.", anchor(PLAYBOOK, "this")),
    }
}

// ---------------------------------------------------------------------------------------
// The old frontend's DataTables (`tf_data_stats_proto_to_gviz.py`).

/// `int(ps / 1000_000)`: Python's float division, truncated.
fn ps_to_us(ps: i64) -> i64 {
    (ps as f64 / 1_000_000.0).trunc() as i64
}

/// Python's `"{:,}".format(n)`.
fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A table with string and number columns given as `(id, type, label)`.
fn table_with_columns(cols: &[(&str, ColumnType, &str)]) -> DataTable {
    let mut table = DataTable::new();
    for &(id, ty, label) in cols {
        table.column(id, ty, label);
    }
    table
}

impl CombinedTfDataStats {
    /// The tool's body: `[graph table, summary table, bottleneck analysis table]` (see the
    /// module documentation), as `gviz_api` writes them.
    pub fn to_json_string(&self) -> String {
        gviz_api::to_json_array(&self.data_tables())
    }

    /// The three DataTables of the body.
    pub fn data_tables(&self) -> [DataTable; 3] {
        use ColumnType::{Number, String as Text};
        // 1. Input pipeline graph.
        let mut graph = table_with_columns(&[
            ("host", Text, "Host"),
            ("input_pipeline", Text, "Input Pipeline"),
            ("rank", Number, "Rank"),
            ("name", Text, "Name"),
            ("parent", Text, "Parent"),
            ("type", Number, "Type"),
        ]);
        for (host, stats) in &self.tf_data_stats {
            for pipeline in &stats.input_pipelines {
                for (rank, call) in pipeline.stats.iter().enumerate() {
                    for (id, s) in &call.iterator_stats {
                        let metadata = stats.iterator_metadata.get(id);
                        let name = metadata.map_or("", |m| m.name.as_str());
                        let parent = metadata.map_or(0, |m| m.parent_id);
                        let card = format!(
                            "<div style='padding: 1px;'><b>{name}</b><br/><div style='text-align: left;'>Start Time: \
                             {} us<br/>Total Duration: {} us<br/>Self Duration: {} us<br/># Calls: {}</div></div>",
                            ps_to_us(s.start_time_ps),
                            ps_to_us(s.duration_ps),
                            ps_to_us(s.self_time_ps),
                            s.num_calls
                        );
                        let kind: i64 = match (s.is_blocking, *id == call.bottleneck_iterator_id) {
                            (false, _) => 0,
                            (true, false) => 1,
                            (true, true) => 2,
                        };
                        graph.row(vec![
                            host.as_str().into(),
                            pipeline.name.as_str().into(),
                            (rank as i64).into(),
                            Cell::formatted(id.to_string(), card),
                            (if parent != 0 { parent.to_string() } else { String::new() }).into(),
                            kind.into(),
                        ]);
                    }
                }
            }
        }
        // 2. Summary of all input pipelines.
        let mut summary = table_with_columns(&[
            ("host", Text, "Host"),
            ("input_pipeline", Text, "Input Pipeline"),
            ("min", Number, "Min (us)"),
            ("mean", Number, "Avg (us)"),
            ("max", Number, "Max (us)"),
            ("num_calls", Number, "# calls"),
            ("num_slow_calls", Number, "# slow calls"),
        ]);
        for (host, stats) in &self.tf_data_stats {
            for p in &stats.input_pipelines {
                summary.row(vec![
                    host.as_str().into(),
                    p.name.as_str().into(),
                    ps_to_us(p.min_latency_ps).into(),
                    ps_to_us(p.avg_latency_ps).into(),
                    ps_to_us(p.max_latency_ps).into(),
                    (p.stats.len() as i64).into(),
                    p.num_slow_calls.into(),
                ]);
            }
        }
        // 3. Bottleneck analysis.
        let mut bottlenecks = table_with_columns(&[
            ("host", Text, "Host"),
            ("input_pipeline", Text, "Input Pipeline"),
            ("max_latency", Number, "Max Latency (us)"),
            ("bottleneck", Text, "Bottleneck"),
            ("suggestion", Text, "Suggestion"),
        ]);
        for b in &self.bottleneck_analysis {
            bottlenecks.row(vec![
                b.host.as_str().into(),
                b.input_pipeline.as_str().into(),
                ps_to_us(b.max_latency_ps).into(),
                format!(
                    "<u>Iterator Type</u>: <b>{}</b><br/><u>Long Name</u>: {}<br/><u>Latency</u>: {} us",
                    b.iterator_name,
                    b.iterator_long_name,
                    thousands(ps_to_us(b.iterator_latency_ps))
                )
                .into(),
                b.suggestion.as_str().into(),
            ]);
        }
        bottlenecks
            .prop("is_input_bound", if self.is_input_bound { "true" } else { "false" })
            .prop("summary_message", self.summary.as_str());
        [graph, summary, bottlenecks]
    }
}

/// Names of [`CombinedTfDataStats::data_tables`] as [`Table`]s.
const TABLE_NAMES: [&str; 3] = ["iterators", "pipelines", "bottlenecks"];

impl Report for CombinedTfDataStats {
    fn xprof_body(&self) -> XprofBody {
        XprofBody::json(self.to_json_string())
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    fn tables(&self) -> Vec<Table> {
        TABLE_NAMES.iter().zip(self.data_tables()).map(|(name, table)| Table::from_data_table(name, &table)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_testkit::XSpaceBuilder;
    use oxprof_xspace::decode_xspace;

    /// One pipeline `Root ← Prefetch ← Map ← Range`, two calls (times in µs):
    ///
    /// ```text
    /// python  0    10                           60        100  102 104 106
    ///         |Iterator::Root (id 1)-------------|         |Root (id 1)-|
    ///           |Iterator::Root::Prefetch (2)--|             |Prefetch-|
    ///             |PrefetchConsume e=1|                        |Consume e=2|
    /// worker     5                       50      70   80
    ///            |PrefetchProduce e=1-----|      |PrefetchProduce e=2|
    ///             |…Prefetch::Map (3)----|        |Map (3)----------|
    ///              |…Map::Range (4)|               |Range (4)|
    ///              5..15                           70..72
    /// ```
    /// Call 1 (60 µs) waits for the map: Root → Prefetch → Map → Range all overlap, so all
    /// block; Map's self time is 45 − 10 = 35 µs, the longest: the bottleneck. Call 2 (6 µs)
    /// took a prefetched element: Map ran before it, so only Root and Prefetch block.
    fn pipeline_space() -> XSpace {
        const US: i64 = 1_000_000;
        let bytes = XSpaceBuilder::new()
            .hostname("host0")
            .plane("/host:CPU", |p| {
                p.line(1, "python", 0, |l| {
                    l.event("Iterator::Root", 0, 60 * US).stat("id", 1i64);
                    l.event("Iterator::Root::Prefetch", 2 * US, 56 * US).stat("id", 2u64).stat("parent_id", 1i64);
                    l.event("PrefetchConsume", 4 * US, 50 * US).stat("element_id", 1i64);
                    l.event("Iterator::Root", 100 * US, 6 * US).stat("id", 1i64);
                    l.event("Iterator::Root::Prefetch", 101 * US, 4 * US).stat("id", 2u64).stat("parent_id", 1i64);
                    l.event("PrefetchConsume", 102 * US, 2 * US).stat("element_id", 2i64);
                });
                p.line(2, "worker", 0, |l| {
                    l.event("PrefetchProduce", 5 * US, 45 * US).stat("element_id", 1i64);
                    l.event("Iterator::Root::Prefetch::Map", 5 * US, 45 * US).stat("id", 3i64).stat("parent_id", 2u64);
                    l.event("Iterator::Root::Prefetch::Map::Range", 5 * US, 10 * US)
                        .stat("id", 4i64)
                        .stat("parent_id", 3i64);
                    l.event("PrefetchProduce", 70 * US, 10 * US).stat("element_id", 2i64);
                    l.event("Iterator::Root::Prefetch::Map", 70 * US, 10 * US).stat("id", 3i64).stat("parent_id", 2u64);
                    l.event("Iterator::Root::Prefetch::Map::Range", 70 * US, 2 * US)
                        .stat("id", 4i64)
                        .stat("parent_id", 3i64);
                });
            })
            .to_bytes();
        decode_xspace(&bytes).unwrap()
    }

    #[test]
    fn critical_path_and_bottleneck() {
        let space = pipeline_space();
        let combined = tf_data_bottleneck_analysis([("host0".to_string(), &space)]);
        let stats = &combined.tf_data_stats["host0"];
        assert_eq!(stats.input_pipelines.len(), 1);
        let pipeline = &stats.input_pipelines[0];
        assert_eq!((pipeline.name.as_str(), pipeline.id), ("Host:0", 1));
        assert_eq!(pipeline.max_latency_ps, 60_000_000);
        assert_eq!(pipeline.min_latency_ps, 6_000_000);
        assert_eq!(pipeline.avg_latency_ps, 33_000_000);
        assert_eq!(pipeline.num_slow_calls, 1);
        let slowest = &pipeline.stats[0];
        assert_eq!(slowest.bottleneck_iterator_id, 3);
        assert_eq!(slowest.bottleneck_iterator_latency_ps, 35_000_000);
        assert!(slowest.iterator_stats.values().all(|s| s.is_blocking));
        assert_eq!(slowest.iterator_stats[&1].self_time_ps, 4_000_000);
        // Prefetch: 56 − overlap with Map [5, 50] = 11.
        assert_eq!(slowest.iterator_stats[&2].self_time_ps, 11_000_000);
        let fast = &pipeline.stats[1];
        assert!(!fast.iterator_stats[&3].is_blocking && !fast.iterator_stats[&4].is_blocking);
        assert_eq!(fast.bottleneck_iterator_id, 2);
        // The uint64 id of Prefetch links consumer and producers.
        assert_eq!(stats.iterator_metadata[&3].parent_id, 2);
        let analysis = &combined.bottleneck_analysis[0];
        assert_eq!(analysis.iterator_name, "Map");
        assert_eq!(analysis.iterator_long_name, "Iterator::Root::Prefetch::Map");
        assert!(combined.is_input_bound);
        assert!(analysis.suggestion.contains("num_parallel_calls"));
    }

    #[test]
    fn renders_three_gviz_tables() {
        let space = pipeline_space();
        let combined = tf_data_bottleneck_analysis([("host0".to_string(), &space)]);
        let json: serde_json::Value = serde_json::from_str(&combined.to_json_string()).unwrap();
        let tables = json.as_array().unwrap();
        assert_eq!(tables.len(), 3);
        // Graph: 4 iterators in call 0 + 4 in call 1; the Map row of call 0 is the bottleneck.
        let graph = tables[0]["rows"].as_array().unwrap();
        assert_eq!(graph.len(), 8);
        let map_row = &graph[2]["c"];
        assert_eq!(map_row[3]["v"], "3");
        assert_eq!(map_row[4]["v"], "2");
        assert_eq!(map_row[5]["v"], 2);
        assert!(map_row[3]["f"].as_str().unwrap().contains("Self Duration: 35 us"));
        let summary = &tables[1]["rows"][0]["c"];
        assert_eq!(
            (summary[2]["v"].as_i64(), summary[3]["v"].as_i64(), summary[4]["v"].as_i64()),
            (Some(6), Some(33), Some(60))
        );
        assert_eq!(tables[2]["p"]["is_input_bound"], "true");
        assert!(tables[2]["rows"][0]["c"][3]["v"].as_str().unwrap().contains("<u>Latency</u>: 35 us"));
    }

    #[test]
    fn no_iterators_means_no_activity() {
        let bytes = XSpaceBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(1, "python", 0, |l| {
                    l.event("train", 0, 100);
                });
            })
            .to_bytes();
        let space = decode_xspace(&bytes).unwrap();
        let combined = tf_data_bottleneck_analysis([("h".to_string(), &space)]);
        assert!(!combined.has_tf_data_events());
        assert!(!combined.is_input_bound);
        assert!(combined.summary.starts_with("No tf.data activity"));
    }

    #[test]
    fn python_formatting() {
        assert_eq!(thousands(31032), "31,032");
        assert_eq!(thousands(-1234567), "-1,234,567");
        assert_eq!(thousands(12), "12");
        assert_eq!(ps_to_us(-1_500_000), -1);
    }
}
