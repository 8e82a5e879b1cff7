//! A compact port of XProf's `EventForest` (`xla/tsl/profiler/utils/group_events.cc`):
//! only the events that can matter get a node, plain events take the group of their
//! innermost node ancestor on the same line.
//!
//! # Why a compressed forest gives XProf's answer
//!
//! XProf makes a node of every event. A *plain* event here is one that is not a root, has no
//! producer/consumer context, takes part in no inter-thread connection, is not
//! `EagerExecute`, and carries no `graph_type`/`iter_num`/`step_num`/`_a` stat. Its only
//! edge in XProf's forest is to its nesting parent (and to its nesting children). Hence:
//!
//! * group propagation reaches a plain event only through its parent, so it always ends up
//!   with the group of its nearest non-plain ancestor (its *anchor*), or none;
//! * the upward searches (`GetContextStat`, `FindParent`, `RootNeedsGrouping`) never match a
//!   plain event; they only pass through it. The compressed nesting edge keeps the number of
//!   plain events skipped (`nest_hops`), and the search replays them as queue steps, so the
//!   breadth-first order — which decides ties between several candidate ancestors — is
//!   XProf's.
//!
//! ```text
//! line   |root (node)-----------------------------|
//!          |plain a-------------|  |plain c---|
//!            |node b (_p=7)|          |plain d|
//! forest:  root ──(hops 1)──▶ b        (a, c, d: anchored at root / root / root)
//! ```

use super::kinds::{EventKind, FxHashMap, FxHashSet, PlaneKinds, RawValue, Span, StatKind, StatScan};
use super::preprocess::{ContextId, Facts, PlaneMutators, Region, is_tpu_parent_line, sorted_line_order};
use super::preprocess::{span_at, threadpool_regions};
use super::tables::NO_GROUP;
use oxprof_model::schema::{HOST_THREADS_PLANE_NAME, TPU_PLANE_PREFIX};
use oxprof_model::{XLine, XPlane, XSpace};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

pub(crate) const NONE: u32 = u32::MAX;

/// XProf's event type of a node (`GetEventType`), reduced to what grouping uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum NodeType {
    Unknown,
    Other,
    FunctionRun,
    SessionRun,
    RunGraph,
    ExecutorStateProcess,
    EagerKernelExecute,
    TfOpRun,
    IteratorGetNextOp,
    IteratorGetNextAsOptionalOp,
    KernelLaunch,
    KernelExecute,
}

/// `GetEventType(is_host_plane, event)`.
pub(crate) fn node_type(kind: EventKind, has_type: bool, is_host_plane: bool, has_correlation: bool) -> NodeType {
    if has_type {
        return match kind {
            EventKind::FunctionRun => NodeType::FunctionRun,
            EventKind::SessionRun => NodeType::SessionRun,
            EventKind::RunGraph => NodeType::RunGraph,
            EventKind::ExecutorStateProcess => NodeType::ExecutorStateProcess,
            EventKind::EagerKernelExecute => NodeType::EagerKernelExecute,
            EventKind::TfOpRun => NodeType::TfOpRun,
            EventKind::IteratorGetNextOp => NodeType::IteratorGetNextOp,
            EventKind::IteratorGetNextAsOptionalOp => NodeType::IteratorGetNextAsOptionalOp,
            EventKind::KernelLaunchNamed => NodeType::KernelLaunch,
            EventKind::KernelExecuteNamed => NodeType::KernelExecute,
            _ => NodeType::Other,
        };
    }
    match (has_correlation, is_host_plane) {
        (true, true) => NodeType::KernelLaunch,
        (true, false) => NodeType::KernelExecute,
        (false, _) => NodeType::Unknown,
    }
}

// Node flags.
const F_GRAPH_TYPE: u8 = 1;
const F_ITER_NUM: u8 = 2;
const F_STEP_NUM: u8 = 4;
const F_ROOT: u8 = 8;
const F_IMPLICIT_ROOT: u8 = 16;
const F_EKE_COMPILED: u8 = 32;
const F_ASYNC: u8 = 64;

/// A context group key: `(context type, context id, pid)`.
type ContextKey = (i32, ContextId, Option<i32>);

/// A raw-id context key: context type and pid packed in one word, and the id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RawContextKey {
    packed: u64,
    id: u64,
}

/// Low id bits kept in place by [`RawContextKey`]'s hash: runs of 64 consecutive ids share
/// 64 consecutive buckets (~1.5 KB). Longer runs (1024) made runs of different id
/// sequences collide into long probe chains: on the 85 MB JAX profile grouping took
/// 111–115 ms with 10 bits, 92–104 ms with 4–8 bits.
const LOCALITY_BITS: u32 = 6;

impl std::hash::Hash for RawContextKey {
    /// A hash that keeps nearby ids in nearby buckets, so the context map is walked almost
    /// sequentially rather than missing the cache on every event.
    ///
    /// Context ids are mostly counters: a thunk's `_p` and its end's `_c` on the same
    /// thread are `base + k`, `base + k + 1`, … Their low [`LOCALITY_BITS`] bits are kept as
    /// they are (consecutive ids land in consecutive buckets); the higher id bits and the
    /// type/pid word are mixed (fmix64) into the bucket block and into the 7 top bits
    /// hashbrown compares first. Ids that differ only in low bits cannot cluster: they map
    /// to distinct buckets of one block (tables smaller than a block see the low bits only,
    /// bounded by the block size).
    ///
    /// ```text
    ///   id = | high bits ............ | low 6 bits  |
    ///   h  = | fmix(high ^ packed) ... | low 6 bits  |   (top 7 bits ^= hash of low bits)
    /// ```
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let mut mixed = (self.id >> LOCALITY_BITS) ^ self.packed.rotate_left(29);
        mixed ^= mixed >> 33;
        mixed = mixed.wrapping_mul(0xff51_afd7_ed55_8ccd);
        mixed ^= mixed >> 33;
        mixed = mixed.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        mixed ^= mixed >> 33;
        let low = self.id & ((1 << LOCALITY_BITS) - 1);
        // The top 7 bits also vary with the low bits, or every slot of a probed group of
        // one block would pass hashbrown's first filter.
        let tag = low.wrapping_mul(0x9e37_79b9_7f4a_7c15) & (0x7f << 57);
        state.write_u64(((mixed << LOCALITY_BITS) | low) ^ tag);
    }
}

/// Passes a precomputed 64-bit hash through (for [`RawContextKey`]).
#[derive(Default)]
struct PassThroughHasher(u64);

impl std::hash::Hasher for PassThroughHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }

    fn write_u64(&mut self, i: u64) {
        self.0 = i;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Raw context keys → key index.
type RawContextMap = std::collections::HashMap<RawContextKey, u32, std::hash::BuildHasherDefault<PassThroughHasher>>;

/// Producer role bit in a context entry.
const PRODUCER_BIT: u32 = 1 << 31;

/// What one root needs for sorting and the tf.data exclusion.
#[derive(Debug, Clone, Copy)]
struct Root {
    node: u32,
    level: i32,
    step_id: Option<i64>,
}

/// The outcome of grouping, before it is laid out per line.
#[derive(Debug, Default)]
pub(crate) struct GroupBuild {
    pub(crate) name: String,
    pub(crate) parents: BTreeSet<i64>,
    pub(crate) children: BTreeSet<i64>,
}

/// Reusable breadth-first search state (an epoch-stamped visited set).
#[derive(Default)]
struct Search {
    epoch: u32,
    seen: Vec<u32>,
    queue: VecDeque<(u32, u32)>,
}

impl Search {
    fn begin(&mut self, nodes: usize) {
        if self.seen.len() < nodes {
            self.seen.resize(nodes, 0);
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.seen.iter_mut().for_each(|s| *s = 0);
            self.epoch = 1;
        }
        self.queue.clear();
    }

    /// Marks `node` seen; false if it already was.
    fn mark(&mut self, node: u32) -> bool {
        match self.seen.get_mut(node as usize) {
            Some(s) if *s != self.epoch => {
                *s = self.epoch;
                true
            }
            _ => false,
        }
    }
}

/// The compressed event forest of one XSpace.
pub(crate) struct Forest<'s> {
    pub(crate) space: &'s XSpace,
    pub(crate) kinds: Vec<PlaneKinds>,
    pub(crate) mutators: Vec<PlaneMutators>,
    /// First global line index of each plane.
    pub(crate) line_base: Vec<u32>,
    /// Regions added by the threadpool mutator, per global line (empty for most).
    pub(crate) regions: Vec<Vec<Region>>,
    /// Node range `[start, end)` of each global line.
    pub(crate) line_nodes: Vec<(u32, u32)>,
    /// Stack-free event ranges of each swept line in stored order (empty for TPU lines and
    /// lines with threadpool regions): the layout replays them in parallel.
    pub(crate) line_cuts: Vec<Vec<std::ops::Range<usize>>>,
    // Per node.
    /// `(first node, global line)` for each line with nodes, in node order.
    line_starts: Vec<(u32, u32)>,
    pub(crate) node_event: Vec<u32>,
    nest_parent: Vec<u32>,
    nest_hops: Vec<u32>,
    pub(crate) node_type: Vec<NodeType>,
    flags: Vec<u8>,
    pub(crate) group: Vec<u32>,
    roots: Vec<Root>,
    keys: ConnectionKeys,
    tf_data_step_ids: FxHashSet<i64>,
    /// Raw-id context keys → key index, without and with pid.
    raw_context_keys: [RawContextMap; 2],
    /// Other (hashed-tuple) context keys → key index.
    context_keys: FxHashMap<ContextKey, u32>,
    context_key_count: u32,
    context_entries: Vec<(u32, u32)>,
    /// Grouping-line nodes per TensorCore plane (XProf's `tensor_core_root_events_per_core_`).
    pub(crate) tensor_core_steps: Vec<Vec<u32>>,
    // Graph (built by `finish_graph`).
    edges: Vec<(u32, u32)>,
    /// Nodes with a nesting parent, sorted by it (stable).
    nest_children: Vec<u32>,
    /// Extra edges `(parent, child)` sorted by parent (stable).
    edges_by_parent: Vec<(u32, u32)>,
    /// Extra edges `(child, parent)` sorted by child (stable: XProf's parent order).
    edges_by_child: Vec<(u32, u32)>,
    search: Search,
    eager_memo: Vec<u8>,
    /// No node is `EagerExecute` (known after the first `is_eager` call).
    without_eager_executes: bool,
    pub(crate) metadata: BTreeMap<i64, GroupBuild>,
    /// Step names of non-implicit roots: `(plane, line, event)` → name.
    pub(crate) step_names: BTreeMap<(u32, u32, u32), String>,
    /// Events per chunk of the parallel intra-thread sweep ([`CHUNK_EVENTS`]; tests use
    /// tiny chunks to check that chunking changes nothing).
    pub(crate) chunk_events: usize,
}

/// The nodes one chunk of a line creates, with chunk-local node ids, before
/// [`Forest::merge`] renumbers them (adds the number of nodes made before the chunk).
///
/// Chunks are swept in parallel; everything that needs forest-wide state (node ids, the
/// context-key table) waits for the merge, which runs in chunk order so that every id is
/// what a single sequential sweep would give.
#[derive(Default)]
pub(crate) struct Pending {
    node_event: Vec<u32>,
    /// `(nesting parent, plain events between)`; the parent is chunk-local or [`NONE`].
    nest: Vec<(u32, u32)>,
    node_type: Vec<NodeType>,
    flags: Vec<u8>,
    /// Context registrations in node order: raw keys inline, others in `other_keys`.
    contexts: Vec<PendingContext>,
    other_keys: Vec<ContextKey>,
    roots: Vec<Root>,
    keys: ConnectionKeys,
    tf_data_step_ids: Vec<i64>,
}

/// Inter-thread connection keys of nodes, in node order.
#[derive(Default)]
struct ConnectionKeys {
    /// `ExecutorState::Process` nodes: `(step_id, iter_num)` as ints-or-uints, node.
    executors: Vec<(u64, u64, u32)>,
    /// The same as ints, for TF loops.
    loop_executors: Vec<(i64, i64, u32)>,
    /// `IteratorGetNext(AsOptional)` nodes: `(step_id, iter_num, node, optional)`.
    iterators: Vec<(u64, u64, u32, bool)>,
    /// Kernel launches and executions by correlation id.
    launches: Vec<(u64, u32)>,
    executes: Vec<(u64, u32)>,
}

impl ConnectionKeys {
    /// Appends another table's keys with their nodes renumbered by `base`.
    fn append_shifted(&mut self, other: &ConnectionKeys, base: u32) {
        self.executors.extend(other.executors.iter().map(|&(s, i, n)| (s, i, n + base)));
        self.loop_executors.extend(other.loop_executors.iter().map(|&(s, i, n)| (s, i, n + base)));
        self.iterators.extend(other.iterators.iter().map(|&(s, i, n, o)| (s, i, n + base, o)));
        self.launches.extend(other.launches.iter().map(|&(c, n)| (c, n + base)));
        self.executes.extend(other.executes.iter().map(|&(c, n)| (c, n + base)));
    }
}

/// One producer/consumer registration of a pending node (24 bytes instead of a 48-byte
/// [`ContextKey`]): `with_pid` 0/1 selects the raw map, 2 means `id` indexes `other_keys`.
#[derive(Clone, Copy)]
struct PendingContext {
    packed: u64,
    id: u64,
    node: u32,
    with_pid: u8,
}

impl Pending {
    /// Appends a node; returns its chunk-local id.
    fn add_node(&mut self, event: u32, node_type: NodeType, flags: u8, nest: (u32, u32)) -> u32 {
        let id = self.node_event.len() as u32;
        self.node_event.push(event);
        self.nest.push(nest);
        self.node_type.push(node_type);
        self.flags.push(flags);
        id
    }

    /// `SetContextGroup`: registers a node as producer and/or consumer.
    fn set_context_group(&mut self, facts: &Facts, node: u32) {
        if let Some((ty, id)) = facts.producer {
            self.push_context((ty, id, facts.pid), node | PRODUCER_BIT);
        }
        if let Some((ty, id)) = facts.consumer {
            self.push_context((ty, id, facts.pid), node);
        }
    }

    fn push_context(&mut self, key: ContextKey, node: u32) {
        let entry = match key {
            (ty, ContextId::Raw(id), pid) => {
                // (type, pid) in one word; keys with and without a pid in separate maps.
                let packed = (u64::from(ty as u32) << 32) | u64::from(pid.unwrap_or(0) as u32);
                PendingContext { packed, id, node, with_pid: u8::from(pid.is_some()) }
            }
            other => {
                self.other_keys.push(other);
                PendingContext { packed: 0, id: (self.other_keys.len() - 1) as u64, node, with_pid: 2 }
            }
        };
        self.contexts.push(entry);
    }
}

/// One piece of a line for the parallel sweep: events `range` (positions in `order` when
/// the line has threadpool regions), starting with an empty nesting stack.
struct Chunk {
    plane: usize,
    line: usize,
    /// Global line index.
    global: u32,
    range: std::ops::Range<usize>,
    /// The line's last chunk.
    last: bool,
}

/// What the intra-thread sweep reads: the model and the per-plane classification tables.
#[derive(Clone, Copy)]
pub(crate) struct SweepCtx<'a> {
    space: &'a XSpace,
    kinds: &'a [PlaneKinds],
    mutators: &'a [PlaneMutators],
    regions: &'a [Vec<Region>],
    line_base: &'a [u32],
}

impl SweepCtx<'_> {
    /// Classifies one event (or region) of a line: its facts, node type and node flags, or
    /// `None` for a plain event.
    fn classify(
        &self,
        plane_index: usize,
        line: &XLine,
        global: usize,
        index: u32,
        scan: &mut StatScan,
        out: &mut Pending,
    ) -> (Facts, Option<(NodeType, u8)>) {
        let plane = &self.space.planes[plane_index];
        let count = line.event_count();
        if index as usize >= count {
            let region = self.regions[global].get(index as usize - count).map_or(0, |r| r.region_id);
            let facts = self.mutators[plane_index].region_facts(region);
            return (facts, Some((NodeType::Unknown, 0)));
        }
        let kinds = &self.kinds[plane_index];
        let event = line.event(plane, index as usize);
        let kind = kinds.event_kind(&event);
        let has_type = kinds.event_has_type(&event);
        kinds.scan_into(&event, scan);
        // Fast path: without any stat grouping reads, only a few kinds can be nodes.
        if scan.is_empty()
            && !matches!(
                kind,
                EventKind::TraceContext
                    | EventKind::EagerKernelExecute
                    | EventKind::ProcessBatch
                    | EventKind::OrbaxProcessBatch
                    | EventKind::BatchingSessionRun
            )
        {
            return (Facts::default(), None);
        }
        let facts = self.mutators[plane_index].facts(kind, line, scan);
        self.classify_scanned(plane_index, line, kind, has_type, scan, facts, out)
    }

    /// The node decision for a scanned event; connection keys and roots of the node about
    /// to be created go to `out` under the id it will get there.
    #[allow(clippy::too_many_arguments)]
    fn classify_scanned(
        &self,
        plane_index: usize,
        line: &XLine,
        kind: EventKind,
        has_type: bool,
        scan: &StatScan,
        facts: Facts,
        out: &mut Pending,
    ) -> (Facts, Option<(NodeType, u8)>) {
        let plane = &self.space.planes[plane_index];
        let correlation = scan.get(StatKind::CorrelationId);
        let ty = node_type(kind, has_type, plane.name == HOST_THREADS_PLANE_NAME, correlation.is_some());
        if kind == EventKind::TfDataCapturedFunction
            && has_type
            && let Some(step) = scan.get(StatKind::StepId)
        {
            out.tf_data_step_ids.push(step.int_value());
        }
        let mut flags = 0;
        if scan.get(StatKind::GraphType).is_some() {
            flags |= F_GRAPH_TYPE;
        }
        if scan.get(StatKind::IterNum).is_some() {
            flags |= F_ITER_NUM;
        }
        if scan.get(StatKind::StepNum).is_some() {
            flags |= F_STEP_NUM;
        }
        if facts.is_async {
            flags |= F_ASYNC;
        }
        if matches!(
            ty,
            NodeType::FunctionRun | NodeType::SessionRun | NodeType::RunGraph | NodeType::ExecutorStateProcess
        ) || is_tpu_parent_line(line)
        {
            flags |= F_IMPLICIT_ROOT;
        }
        if ty == NodeType::EagerKernelExecute {
            let is_func = scan.get(StatKind::IsFunc);
            if is_func.is_none_or(|v| v.int_value() != 0) {
                flags |= F_EKE_COMPILED;
            }
        }
        let step = scan.get(StatKind::StepId);
        let iter = scan.get(StatKind::IterNum);
        let connects = match ty {
            NodeType::ExecutorStateProcess | NodeType::IteratorGetNextOp | NodeType::IteratorGetNextAsOptionalOp => {
                step.is_some() && iter.is_some()
            }
            NodeType::KernelLaunch | NodeType::KernelExecute => correlation.is_some(),
            NodeType::EagerKernelExecute => true,
            _ => false,
        };
        let is_node = connects
            || flags & (F_GRAPH_TYPE | F_ITER_NUM | F_STEP_NUM | F_ASYNC) != 0
            || facts.root_level.is_some()
            || facts.producer.is_some()
            || facts.consumer.is_some();
        if !is_node {
            return (facts, None);
        }
        if facts.root_level.is_some() {
            flags |= F_ROOT;
        }
        // Remember the connection keys of the node about to be created.
        let next = out.node_event.len() as u32;
        match (ty, step, iter) {
            (NodeType::ExecutorStateProcess, Some(s), Some(i)) => {
                out.keys.executors.push((s.int_or_uint(), i.int_or_uint(), next));
                out.keys.loop_executors.push((s.int_value(), i.int_value(), next));
            }
            (NodeType::IteratorGetNextOp, Some(s), Some(i)) => {
                out.keys.iterators.push((s.int_or_uint(), i.int_or_uint(), next, false))
            }
            (NodeType::IteratorGetNextAsOptionalOp, Some(s), Some(i)) => {
                out.keys.iterators.push((s.int_or_uint(), i.int_or_uint(), next, true))
            }
            _ => {}
        }
        match (ty, correlation) {
            (NodeType::KernelLaunch, Some(c)) => out.keys.launches.push((c.int_or_uint(), next)),
            (NodeType::KernelExecute, Some(c)) => out.keys.executes.push((c.int_or_uint(), next)),
            _ => {}
        }
        if let Some(level) = facts.root_level {
            out.roots.push(Root { node: next, level, step_id: step.map(RawValue::int_value) });
        }
        (facts, Some((ty, flags)))
    }

    /// Whether the sweep treats an event as async (it then leaves the nesting stack alone).
    fn is_async(&self, plane_index: usize, line: &XLine, global: usize, index: u32) -> bool {
        let mut scratch = Pending::default();
        self.classify(plane_index, line, global, index, &mut StatScan::default(), &mut scratch).0.is_async
    }

    /// Sweeps one chunk with an empty nesting stack.
    fn sweep_chunk(&self, chunk: &Chunk, order: Option<&[u32]>) -> Pending {
        let plane = &self.space.planes[chunk.plane];
        let line = &plane.lines[chunk.line];
        let global = self.line_base[chunk.plane] as usize + chunk.line;
        let regions = &self.regions[global];
        let mut out = Pending::default();
        let mut stack: Vec<Frame> = Vec::new();
        let mut scan = StatScan::default();
        for pos in chunk.range.clone() {
            let index = order.map_or(pos as u32, |o| o[pos]);
            let (facts, node) = self.classify(chunk.plane, line, global, index, &mut scan, &mut out);
            let span = span_at(plane, line, regions, index);
            if facts.is_async {
                if let Some((ty, flags)) = node {
                    let id = out.add_node(index, ty, flags, (NONE, 0));
                    out.set_context_group(&facts, id);
                }
                continue;
            }
            let parent = pop_to_parent(&mut stack, span);
            match node {
                Some((ty, flags)) => {
                    let nest = parent.filter(|p| p.anchor != NONE).map_or((NONE, 0), |p| (p.anchor, p.distance));
                    let id = out.add_node(index, ty, flags, nest);
                    out.set_context_group(&facts, id);
                    stack.push(Frame { span, anchor: id, distance: 0 });
                }
                None => {
                    let (anchor, distance) = parent.map_or((NONE, 0), |p| (p.anchor, p.distance + 1));
                    stack.push(Frame { span, anchor, distance });
                }
            }
        }
        out
    }
}

/// Events per chunk of the parallel intra-thread sweep (lines are cut only where the
/// nesting stack is empty, so chunks can be longer).
const CHUNK_EVENTS: usize = 1 << 16;

#[cfg(test)]
thread_local! {
    /// Tests: chunk size of forests built on this thread (tiny chunks cut at every
    /// stack-free point).
    pub(crate) static FORCE_CHUNK_EVENTS: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

fn chunk_events() -> usize {
    #[cfg(test)]
    if let Some(n) = FORCE_CHUNK_EVENTS.with(|f| f.get()) {
        return n;
    }
    CHUNK_EVENTS
}

/// One frame of the nesting stack: an event's span and its anchor (nearest node among
/// itself and its ancestors) with the number of plain events between.
#[derive(Clone, Copy)]
struct Frame {
    span: Span,
    anchor: u32,
    distance: u32,
}

impl<'s> Forest<'s> {
    pub(crate) fn new(space: &'s XSpace) -> Forest<'s> {
        let kinds: Vec<PlaneKinds> = space.planes.iter().map(PlaneKinds::new).collect();
        let mutators = space.planes.iter().zip(&kinds).map(|(p, k)| PlaneMutators::new(p, k)).collect();
        let mut line_base = Vec::with_capacity(space.planes.len());
        let mut lines = 0u32;
        for plane in &space.planes {
            line_base.push(lines);
            lines += plane.lines.len() as u32;
        }
        Forest {
            space,
            kinds,
            mutators,
            line_base,
            regions: vec![Vec::new(); lines as usize],
            line_nodes: vec![(0, 0); lines as usize],
            line_cuts: vec![Vec::new(); lines as usize],
            line_starts: Vec::new(),
            node_event: Vec::new(),
            nest_parent: Vec::new(),
            nest_hops: Vec::new(),
            node_type: Vec::new(),
            flags: Vec::new(),
            group: Vec::new(),
            roots: Vec::new(),
            keys: ConnectionKeys::default(),
            tf_data_step_ids: FxHashSet::default(),
            raw_context_keys: [RawContextMap::default(), RawContextMap::default()],
            context_keys: FxHashMap::default(),
            context_key_count: 0,
            context_entries: Vec::new(),
            tensor_core_steps: Vec::new(),
            edges: Vec::new(),
            nest_children: Vec::new(),
            edges_by_parent: Vec::new(),
            edges_by_child: Vec::new(),
            search: Search::default(),
            eager_memo: Vec::new(),
            without_eager_executes: false,
            metadata: BTreeMap::new(),
            step_names: BTreeMap::new(),
            chunk_events: chunk_events(),
        }
    }

    #[cfg(test)]
    pub(crate) fn debug_counts(&self) -> String {
        format!("keys {} entries {} edges {}", self.context_key_count, self.context_entries.len(), self.edges.len())
    }

    pub(crate) fn node_count(&self) -> usize {
        self.node_event.len()
    }

    /// The global line of a node.
    pub(crate) fn node_line(&self, node: u32) -> u32 {
        let at = self.line_starts.partition_point(|&(first, _)| first <= node);
        at.checked_sub(1).and_then(|i| self.line_starts.get(i)).map_or(0, |&(_, line)| line)
    }

    /// `(plane, line)` of a global line index.
    pub(crate) fn plane_line(&self, global_line: u32) -> (usize, usize) {
        let plane = self.line_base.partition_point(|&b| b <= global_line).saturating_sub(1);
        let base = self.line_base.get(plane).copied().unwrap_or(0);
        (plane, (global_line - base) as usize)
    }

    fn plane_and_line(&self, node: u32) -> (&'s XPlane, &'s XLine, usize) {
        let (plane_index, line_index) = self.plane_line(self.node_line(node));
        let plane = &self.space.planes[plane_index];
        (plane, &plane.lines[line_index], plane_index)
    }

    /// Span of a node's event (or region).
    pub(crate) fn node_span(&self, node: u32) -> Span {
        let (plane, line, _) = self.plane_and_line(node);
        let regions = &self.regions[self.node_line(node) as usize];
        span_at(plane, line, regions, self.node_event[node as usize])
    }

    /// `TimestampPs()` of a node (signed, as XProf's `EventNode::operator<` compares).
    fn node_timestamp(&self, node: u32) -> i64 {
        self.node_span(node).begin as i64
    }

    /// Appends a node; returns its id.
    fn add_node(&mut self, global_line: u32, event: u32, node_type: NodeType, flags: u8, nest: (u32, u32)) -> u32 {
        let id = self.node_event.len() as u32;
        if self.line_starts.last().is_none_or(|&(_, line)| line != global_line) {
            self.line_starts.push((id, global_line));
        }
        self.node_event.push(event);
        self.nest_parent.push(nest.0);
        self.nest_hops.push(nest.1);
        self.node_type.push(node_type);
        self.flags.push(flags);
        id
    }

    /// `SetContextGroup`: registers a node as producer and/or consumer.
    fn set_context_group(&mut self, facts: &Facts, node: u32) {
        if let Some((ty, id)) = facts.producer {
            let key = self.context_key((ty, id, facts.pid));
            self.context_entries.push((key, node | PRODUCER_BIT));
        }
        if let Some((ty, id)) = facts.consumer {
            let key = self.context_key((ty, id, facts.pid));
            self.context_entries.push((key, node));
        }
    }

    fn context_key(&mut self, key: ContextKey) -> u32 {
        let next = self.context_key_count;
        let index = match key {
            (ty, ContextId::Raw(id), pid) => {
                // (type, pid) in one word; keys with and without a pid in separate maps.
                let packed = (u64::from(ty as u32) << 32) | u64::from(pid.unwrap_or(0) as u32);
                return self.raw_context_key(pid.is_some(), RawContextKey { packed, id });
            }
            other => *self.context_keys.entry(other).or_insert(next),
        };
        if index == next {
            self.context_key_count += 1;
        }
        index
    }

    /// The read-only view the sweep classifies with.
    fn ctx(&self) -> SweepCtx<'_> {
        SweepCtx {
            space: self.space,
            kinds: &self.kinds,
            mutators: &self.mutators,
            regions: &self.regions,
            line_base: &self.line_base,
        }
    }

    /// The key index of a raw-id context key (a new index when first seen).
    fn raw_context_key(&mut self, with_pid: bool, key: RawContextKey) -> u32 {
        let next = self.context_key_count;
        let index = *self.raw_context_keys[usize::from(with_pid)].entry(key).or_insert(next);
        if index == next {
            self.context_key_count += 1;
        }
        index
    }

    /// XProf's `ConnectIntraThread` over every plane (TPU planes: `ConnectIntraThreadTPU`).
    pub(crate) fn connect_intra_thread(&mut self) {
        self.reserve_for_contexts();
        self.connect_lines();
    }

    /// Sizes the node, entry and key tables from an upper bound on context entries (one
    /// column scan), so they do not double while full.
    fn reserve_for_contexts(&mut self) {
        let mut bound = 0usize;
        for (plane, kinds) in self.space.planes.iter().zip(&self.kinds) {
            for line in &plane.lines {
                bound += line
                    .event_stat_metadata_ids()
                    .filter(|&m| matches!(kinds.stat_kind(m), Some(StatKind::ProducerId | StatKind::ConsumerId)))
                    .count();
            }
        }
        self.context_entries.reserve_exact(bound);
        // Both maps: which one the keys fall into (with or without pid) is not known yet,
        // and growing a map of ~10^6 keys by rehashing holds two copies at once. Reserved
        // but unused buckets cost address space only.
        for keys in &mut self.raw_context_keys {
            keys.reserve(bound / 2);
        }
        for nodes in [&mut self.node_event, &mut self.nest_parent, &mut self.nest_hops] {
            nodes.reserve_exact(bound);
        }
        self.node_type.reserve_exact(bound);
        self.flags.reserve_exact(bound);
    }

    /// The regions and visiting order of a (non-TPU) line.
    pub(crate) fn line_order(&mut self, plane_index: usize, line_index: usize) -> Option<Vec<u32>> {
        let plane = &self.space.planes[plane_index];
        let line = &plane.lines[line_index];
        let global = (self.line_base[plane_index] as usize) + line_index;
        if !self.mutators[plane_index].threadpool {
            return None;
        }
        if self.regions[global].is_empty() {
            self.regions[global] = threadpool_regions(plane, line, &self.kinds[plane_index]);
        }
        let regions = &self.regions[global];
        (!regions.is_empty()).then(|| sorted_line_order(plane, line, regions))
    }

    /// `ConnectIntraThread` for every non-TPU line, TPU planes (`ConnectIntraThreadTPU`) in
    /// their turn: a nesting-stack sweep per line that creates nodes and their compressed
    /// nesting edges.
    ///
    /// Lines are cut into chunks where the nesting stack is empty (no earlier event can be
    /// the parent of anything later). Chunks are swept in parallel into [`Pending`] tables
    /// and merged in line and chunk order, so node ids, context keys and every list are
    /// exactly those of one sequential sweep.
    ///
    /// ```text
    /// line  |A-----------|  |B------|   |C---------|     chunk cuts: before B, before C
    ///         |a1| |a2|        |b1|       |c1|            (max end so far < end of next)
    /// ```
    fn connect_lines(&mut self) {
        let mut orders: Vec<Vec<Option<Vec<u32>>>> = Vec::with_capacity(self.space.planes.len());
        for plane_index in 0..self.space.planes.len() {
            let lines = self.space.planes[plane_index].lines.len();
            let is_tpu = self.space.planes[plane_index].name.starts_with(TPU_PLANE_PREFIX);
            orders.push(if is_tpu {
                Vec::new()
            } else {
                (0..lines).map(|l| self.line_order(plane_index, l)).collect()
            });
        }
        let mut plane_index = 0;
        while plane_index < self.space.planes.len() {
            if self.space.planes[plane_index].name.starts_with(TPU_PLANE_PREFIX) {
                super::tpu::connect_intra_thread_tpu(self, plane_index);
                plane_index += 1;
                continue;
            }
            // A run of non-TPU planes goes through one pipeline.
            let end = (plane_index..self.space.planes.len())
                .find(|&p| self.space.planes[p].name.starts_with(TPU_PLANE_PREFIX))
                .unwrap_or(self.space.planes.len());
            self.sweep_and_merge(plane_index..end, &orders);
            plane_index = end;
        }
    }

    /// Sweeps the lines of `planes` chunk by chunk and merges the chunks in order.
    ///
    /// The calling thread merges chunk after chunk; while the next one is not swept yet it
    /// sweeps an unclaimed chunk itself, and the other pool threads claim chunks in order.
    /// So merging overlaps sweeping, and a one-thread pool simply sweeps and merges in turn
    /// (nobody ever waits for a chunk that no thread is working on).
    fn sweep_and_merge(&mut self, planes: std::ops::Range<usize>, orders: &[Vec<Option<Vec<u32>>>]) {
        // Read-only parts move into the sweep context; merging needs only the node tables.
        let kinds = std::mem::take(&mut self.kinds);
        let mutators = std::mem::take(&mut self.mutators);
        let regions = std::mem::take(&mut self.regions);
        let line_base = self.line_base.clone();
        let ctx = SweepCtx {
            space: self.space,
            kinds: &kinds,
            mutators: &mutators,
            regions: &regions,
            line_base: &line_base,
        };
        let chunk_size = self.chunk_events;
        let mut chunks: Vec<Chunk> = Vec::new();
        for plane_index in planes {
            let plane = &self.space.planes[plane_index];
            let line_cuts: Vec<Vec<std::ops::Range<usize>>> = plane
                .lines
                .par_iter()
                .zip(&orders[plane_index])
                .enumerate()
                .map(|(line_index, (line, order))| match order {
                    // Threadpool regions: visited in a computed order, kept whole.
                    Some(o) => std::iter::once(0..o.len()).collect(),
                    None => {
                        let global = line_base[plane_index] as usize + line_index;
                        stack_free_cuts(plane, line, chunk_size, |i| ctx.is_async(plane_index, line, global, i))
                    }
                })
                .collect();
            for (line_index, cuts) in line_cuts.into_iter().enumerate() {
                let global = self.line_base[plane_index] + line_index as u32;
                let count = cuts.len();
                if orders[plane_index][line_index].is_none() {
                    self.line_cuts[global as usize] = cuts.clone();
                }
                for (k, range) in cuts.into_iter().enumerate() {
                    chunks.push(Chunk { plane: plane_index, line: line_index, global, range, last: k + 1 == count });
                }
            }
        }
        let slots: Vec<Mutex<Option<Pending>>> = chunks.iter().map(|_| Mutex::new(None)).collect();
        let claimed = AtomicUsize::new(0);
        let sweep_next = || -> bool {
            let i = claimed.fetch_add(1, Ordering::Relaxed);
            let Some(chunk) = chunks.get(i) else { return false };
            let order = orders.get(chunk.plane).and_then(|o| o.get(chunk.line)).and_then(|o| o.as_deref());
            let pending = ctx.sweep_chunk(chunk, order);
            if let Ok(mut slot) = slots[i].lock() {
                *slot = Some(pending);
            }
            true
        };
        rayon::scope(|scope| {
            for _ in 1..rayon::current_num_threads() {
                scope.spawn(|_| while sweep_next() {});
            }
            let mut line_start = None;
            for (i, chunk) in chunks.iter().enumerate() {
                let pending = loop {
                    if let Some(p) = slots[i].lock().ok().and_then(|mut s| s.take()) {
                        break p;
                    }
                    if !sweep_next() {
                        // Chunk `i` is being swept by another thread right now.
                        std::thread::yield_now();
                    }
                };
                let start = *line_start.get_or_insert(self.node_event.len() as u32);
                self.merge(chunk.global, pending);
                if chunk.last {
                    self.line_nodes[chunk.global as usize] = (start, self.node_event.len() as u32);
                    line_start = None;
                }
            }
        });
        self.kinds = kinds;
        self.mutators = mutators;
        self.regions = regions;
    }

    /// Appends a chunk's nodes (renumbered after the existing ones) and registers their
    /// contexts, in the chunk's order.
    fn merge(&mut self, global_line: u32, pending: Pending) {
        let base = self.node_event.len() as u32;
        if pending.node_event.is_empty() {
            return;
        }
        if self.line_starts.last().is_none_or(|&(_, line)| line != global_line) {
            self.line_starts.push((base, global_line));
        }
        self.node_event.extend_from_slice(&pending.node_event);
        self.nest_parent.extend(pending.nest.iter().map(|&(p, _)| if p == NONE { NONE } else { p + base }));
        self.nest_hops.extend(pending.nest.iter().map(|&(_, hops)| hops));
        self.node_type.extend_from_slice(&pending.node_type);
        self.flags.extend_from_slice(&pending.flags);
        for c in &pending.contexts {
            let key = match c.with_pid {
                2 => match pending.other_keys.get(c.id as usize) {
                    Some(&key) => self.context_key(key),
                    None => continue,
                },
                with_pid => self.raw_context_key(with_pid == 1, RawContextKey { packed: c.packed, id: c.id }),
            };
            let node = (c.node & !PRODUCER_BIT) + base;
            self.context_entries.push((key, node | (c.node & PRODUCER_BIT)));
        }
        self.roots.extend(pending.roots.iter().map(|r| Root { node: r.node + base, ..*r }));
        self.keys.append_shifted(&pending.keys, base);
        self.tf_data_step_ids.extend(pending.tf_data_step_ids);
    }

    /// Adds a TPU grouping-line node (no nesting parent).
    pub(crate) fn add_tpu_step_node(
        &mut self,
        plane_index: usize,
        global: u32,
        line: &XLine,
        index: u32,
    ) -> (u32, Facts) {
        let mut pending = Pending::default();
        let (facts, node) =
            self.ctx().classify(plane_index, line, global as usize, index, &mut StatScan::default(), &mut pending);
        // ConnectIntraThreadTPU never sets a root level: drop what `classify` recorded.
        pending.roots.clear();
        // The connection keys `classify` recorded, for the node about to be added.
        let base = self.node_event.len() as u32;
        self.keys.append_shifted(&pending.keys, base);
        self.tf_data_step_ids.extend(pending.tf_data_step_ids);
        let (ty, flags) = node.unwrap_or_else(|| {
            let plane = &self.space.planes[plane_index];
            let event = line.event(plane, index as usize);
            let kinds = &self.kinds[plane_index];
            let scan = kinds.scan(&event);
            let ty = node_type(
                kinds.event_kind(&event),
                kinds.event_has_type(&event),
                false,
                scan.get(StatKind::CorrelationId).is_some(),
            );
            (ty, if is_tpu_parent_line(line) { F_IMPLICIT_ROOT } else { 0 })
        });
        let id = self.add_node(global, index, ty, flags & !F_ROOT, (NONE, 0));
        (id, facts)
    }

    /// Registers context stats of a TPU event on its step node.
    pub(crate) fn attribute_context(&mut self, facts: &Facts, node: u32) {
        self.set_context_group(facts, node);
    }

    /// Facts of a non-node TPU event.
    pub(crate) fn facts_of(&self, plane_index: usize, line: &XLine, index: usize) -> Facts {
        let plane = &self.space.planes[plane_index];
        let kinds = &self.kinds[plane_index];
        let event = line.event(plane, index);
        let scan = kinds.scan(&event);
        self.mutators[plane_index].facts(kinds.event_kind(&event), line, &scan)
    }

    /// `ConnectInterThread` (executor → iterator on `{step_id, iter_num}`, kernel launch →
    /// execute on `correlation_id`; the last parent with a key wins) and
    /// `ConnectContextGroups` (every producer → every consumer of a context, unless both
    /// sides have 64 or more events).
    pub(crate) fn connect_inter_thread(&mut self) {
        for optional in [false, true] {
            if self.keys.iterators.iter().all(|i| i.3 != optional) {
                continue;
            }
            let parents: FxHashMap<(u64, u64), u32> =
                self.keys.executors.iter().map(|&(s, i, n)| ((s, i), n)).collect();
            for &(s, i, child, opt) in &self.keys.iterators {
                if opt == optional
                    && let Some(&parent) = parents.get(&(s, i))
                {
                    self.edges.push((parent, child));
                }
            }
        }
        if !self.keys.executes.is_empty() {
            let parents: FxHashMap<u64, u32> = self.keys.launches.iter().map(|&(c, n)| (c, n)).collect();
            for &(c, child) in &self.keys.executes {
                if let Some(&parent) = parents.get(&c) {
                    self.edges.push((parent, child));
                }
            }
        }
        self.keys.launches = Vec::new();
        self.keys.executes = Vec::new();
        self.keys.iterators = Vec::new();
        self.keys.executors = Vec::new();
        // Context groups: bucket the entries by key, keeping their order.
        let keys = self.context_key_count as usize;
        self.context_keys = FxHashMap::default();
        self.raw_context_keys = [RawContextMap::default(), RawContextMap::default()];
        let entries = std::mem::take(&mut self.context_entries);
        let mut start = vec![0u32; keys + 1];
        for &(k, _) in &entries {
            start[k as usize + 1] += 1;
        }
        for k in 0..keys {
            start[k + 1] += start[k];
        }
        let mut fill = start.clone();
        let mut bucketed = vec![0u32; entries.len()];
        for &(k, node) in &entries {
            bucketed[fill[k as usize] as usize] = node;
            fill[k as usize] += 1;
        }
        drop(entries);
        for k in 0..keys {
            let group = &bucketed[start[k] as usize..start[k + 1] as usize];
            let producers = group.iter().filter(|&&n| n & PRODUCER_BIT != 0).count();
            let consumers = group.len() - producers;
            if producers == 0 || consumers == 0 || (producers >= 64 && consumers >= 64) {
                continue;
            }
            for &p in group.iter().filter(|&&n| n & PRODUCER_BIT != 0) {
                for &c in group.iter().filter(|&&n| n & PRODUCER_BIT == 0) {
                    self.edges.push((p & !PRODUCER_BIT, c));
                }
            }
        }
    }

    /// `ProcessTensorFlowLoop`: each iteration of a TF loop (executor events with the same
    /// `step_id` and `iter_num`) becomes a root, its first event the parent of the others.
    /// Returns the roots in order of their first event.
    pub(crate) fn process_tensorflow_loop(&mut self) -> Vec<u32> {
        struct Iteration {
            iter_num: i64,
            first: u32,
            events: Vec<u32>,
        }
        let mut loops: Vec<(i64, Vec<Iteration>)> = Vec::new();
        let mut loop_index: FxHashMap<i64, usize> = FxHashMap::default();
        for &(step_id, iter_num, node) in &std::mem::take(&mut self.keys.loop_executors) {
            if self.tf_data_step_ids.contains(&step_id) {
                continue;
            }
            let li = *loop_index.entry(step_id).or_insert_with(|| {
                loops.push((step_id, Vec::new()));
                loops.len() - 1
            });
            let iterations = &mut loops[li].1;
            let ts = self.node_timestamp(node);
            match iterations.iter_mut().find(|it| it.iter_num == iter_num) {
                Some(it) => {
                    if ts < self.node_timestamp(it.first) {
                        it.first = node;
                    }
                    it.events.push(node);
                }
                None => iterations.push(Iteration { iter_num, first: node, events: vec![node] }),
            }
        }
        let mut iterations: Vec<Iteration> = loops
            .into_iter()
            .filter(|(_, its)| !(its.len() == 1 && its[0].iter_num == 0))
            .flat_map(|(_, its)| its)
            .collect();
        iterations.sort_by_key(|it| self.node_timestamp(it.first));
        let mut roots = Vec::with_capacity(iterations.len());
        for it in iterations {
            roots.push(it.first);
            for &e in &it.events {
                if e != it.first {
                    self.edges.push((it.first, e));
                }
            }
        }
        roots
    }

    /// Builds the adjacency (nesting children, extra children, extra parents) from the node
    /// arrays and the edge list.
    pub(crate) fn finish_graph(&mut self) {
        let n = self.node_count();
        self.group = vec![NO_GROUP; n];
        // Nodes are numbered in sweep order, so children of one parent stay in node order
        // under the stable sort.
        let mut nest_children: Vec<(u32, u32)> =
            (0..n as u32).filter_map(|c| Some((self.nest_parent[c as usize], c)).filter(|&(p, _)| p != NONE)).collect();
        nest_children.par_sort_unstable();
        let nest_children: Vec<u32> = nest_children.into_iter().map(|(_, c)| c).collect();
        self.nest_children = nest_children;
        let mut edges = std::mem::take(&mut self.edges);
        let mut by_child: Vec<(u32, u32)> = edges.iter().map(|&(p, c)| (c, p)).collect();
        by_child.par_sort_by_key(|e| e.0);
        by_child.shrink_to_fit();
        edges.par_sort_by_key(|e| e.0);
        edges.shrink_to_fit();
        self.edges_by_parent = edges;
        self.edges_by_child = by_child;
    }

    fn extra_parents(&self, node: u32) -> impl Iterator<Item = u32> + '_ {
        let start = self.edges_by_child.partition_point(|e| e.0 < node);
        self.edges_by_child[start..].iter().take_while(move |e| e.0 == node).map(|e| e.1)
    }

    fn children_of(&self, node: u32) -> impl Iterator<Item = u32> + '_ {
        let start = self.nest_children.partition_point(|&c| self.nest_parent[c as usize] < node);
        let nest =
            self.nest_children[start..].iter().take_while(move |&&c| self.nest_parent[c as usize] == node).copied();
        let start = self.edges_by_parent.partition_point(|e| e.0 < node);
        let extra = self.edges_by_parent[start..].iter().take_while(move |e| e.0 == node).map(|e| e.1);
        nest.chain(extra)
    }

    /// XProf's upward breadth-first search (`FindParentWithComparator`, `GetContextStat`):
    /// the first node, in BFS order over parents, that matches. Plain events skipped by a
    /// compressed nesting edge are replayed as queue steps that never match.
    fn find_ancestor(&mut self, start: u32, include_self: bool, matches: impl Fn(&Self, u32) -> bool) -> Option<u32> {
        let mut search = std::mem::take(&mut self.search);
        search.begin(self.node_count());
        search.mark(start);
        if include_self {
            search.queue.push_back((start, 0));
        } else {
            // XProf queues the start's parents without checking `seen` (a self-loop from a
            // node that both produces and consumes a context finds the node itself).
            let parent = self.nest_parent[start as usize];
            if parent != NONE {
                let hops = self.nest_hops[start as usize];
                if hops == 0 {
                    search.mark(parent);
                }
                search.queue.push_back((parent, hops));
            }
            for p in self.extra_parents(start) {
                search.mark(p);
                search.queue.push_back((p, 0));
            }
        }
        let mut found = None;
        while let Some((node, hops)) = search.queue.pop_front() {
            if hops > 0 {
                enqueue(&mut search, node, hops - 1);
                continue;
            }
            if matches(self, node) {
                found = Some(node);
                break;
            }
            self.push_parents(node, &mut search);
        }
        self.search = search;
        found
    }

    fn push_parents(&self, node: u32, search: &mut Search) {
        let parent = self.nest_parent[node as usize];
        if parent != NONE {
            enqueue(search, parent, self.nest_hops[node as usize]);
        }
        for p in self.extra_parents(node) {
            enqueue(search, p, 0);
        }
    }

    fn is_root(&self, node: u32) -> bool {
        self.flags[node as usize] & F_ROOT != 0
    }

    fn root_level(&self, node: u32) -> i32 {
        if !self.is_root(node) {
            return 0;
        }
        let at = self.roots.partition_point(|r| r.node < node);
        self.roots.get(at).filter(|r| r.node == node).map_or(0, |r| r.level)
    }

    /// `RootNeedsGrouping`.
    fn root_needs_grouping(&mut self, root: u32) -> bool {
        if self.group[root as usize] != NO_GROUP {
            return false;
        }
        let level = self.root_level(root);
        self.find_ancestor(root, false, |f, p| f.is_root(p) && f.root_level(p) == level).is_none()
    }

    /// `EventNode::PropagateGroupId`: the group spreads to every reachable ungrouped node;
    /// reaching a node of another group records the group relation.
    fn propagate_group(&mut self, group: u32, root: u32) {
        let mut search = std::mem::take(&mut self.search);
        search.begin(self.node_count());
        search.mark(root);
        search.queue.push_back((root, 0));
        while let Some((node, _)) = search.queue.pop_front() {
            let current = self.group[node as usize];
            if current != NO_GROUP {
                if current != group {
                    self.metadata.entry(i64::from(group)).or_default().children.insert(i64::from(current));
                    self.metadata.entry(i64::from(current)).or_default().parents.insert(i64::from(group));
                }
                continue;
            }
            self.group[node as usize] = group;
            for child in self.children_of(node) {
                if search.mark(child) {
                    search.queue.push_back((child, 0));
                }
            }
        }
        self.search = search;
    }

    /// Reads a node's canonical stat (`GetStat`).
    fn node_stat(&self, node: u32, kind: StatKind) -> Option<RawValue> {
        let (plane, line, plane_index) = self.plane_and_line(node);
        let event = super::preprocess::event_at(plane, line, self.node_event[node as usize] as usize)?;
        self.kinds[plane_index].scan(&event).get(kind)
    }

    /// `EventNode::GetGroupName`.
    fn group_name(&mut self, root: u32) -> String {
        let mut name = String::new();
        if let Some(n) = self.find_ancestor(root, true, |f, n| f.flags[n as usize] & F_GRAPH_TYPE != 0) {
            let (plane, line, plane_index) = self.plane_and_line(n);
            if let Some(event) = super::preprocess::event_at(plane, line, self.node_event[n as usize] as usize) {
                name.push_str(self.kinds[plane_index].str_stat(&event, StatKind::GraphType).unwrap_or(""));
            }
            name.push(' ');
        } else if self.flags[root as usize] & F_IMPLICIT_ROOT == 0 {
            let (plane, line, _) = self.plane_and_line(root);
            if let Some(event) = super::preprocess::event_at(plane, line, self.node_event[root as usize] as usize) {
                name.push_str(event.name());
            }
            name.push(' ');
        }
        let mut step_num = i64::from(self.group[root as usize]);
        if let Some(n) = self.find_ancestor(root, true, |f, n| f.flags[n as usize] & F_ITER_NUM != 0) {
            step_num = self.node_stat(n, StatKind::IterNum).map_or(0, RawValue::int_value);
        } else if let Some(n) = self.find_ancestor(root, true, |f, n| f.flags[n as usize] & F_STEP_NUM != 0) {
            step_num = self.node_stat(n, StatKind::StepNum).map_or(0, RawValue::int_value);
        }
        name.push_str(&step_num.to_string());
        name
    }

    /// `ProcessRootEvent`.
    fn process_root(&mut self, group: u32, root: u32) {
        self.propagate_group(group, root);
        let name = self.group_name(root);
        if self.flags[root as usize] & F_IMPLICIT_ROOT == 0 {
            let (plane, line) = self.plane_line(self.node_line(root));
            self.step_names.insert((plane as u32, line as u32, self.node_event[root as usize]), name.clone());
        }
        self.metadata.entry(i64::from(group)).or_default().name = name;
    }

    /// `CreateEventGroups`: TF loop iterations, else top roots by (level descending,
    /// timestamp); then the TPU lock-step fallback when no TensorCore step got a group.
    pub(crate) fn create_event_groups(&mut self, loop_roots: Vec<u32>) {
        let mut next: u32 = 0;
        if !loop_roots.is_empty() {
            for root in loop_roots {
                self.process_root(next, root);
                next += 1;
            }
        } else {
            let mut roots: Vec<(i32, i64, u32)> = self
                .roots
                .iter()
                .filter(|r| r.step_id.is_none_or(|s| !self.tf_data_step_ids.contains(&s)))
                .map(|r| (r.level, 0, r.node))
                .collect();
            for r in &mut roots {
                r.1 = self.node_timestamp(r.2);
            }
            // absl::c_sort is not stable; ties keep node order here.
            roots.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            for (_, _, root) in roots {
                if self.root_needs_grouping(root) {
                    self.process_root(next, root);
                    next += 1;
                }
            }
        }
        let cores = std::mem::take(&mut self.tensor_core_steps);
        let needs = cores.iter().all(|core| core.iter().all(|&e| self.root_needs_grouping(e)));
        if needs {
            for core in &cores {
                let mut id = next;
                for &event in core {
                    if self.root_needs_grouping(event) {
                        self.process_root(id, event);
                        id += 1;
                    }
                }
            }
        }
        self.tensor_core_steps = cores;
    }

    /// `EventNode::IsEager` of a node (memoised): the nearest `EagerExecute` ancestor (in
    /// BFS order, the node itself included) exists and is not a compiled function.
    pub(crate) fn is_eager(&mut self, node: u32) -> bool {
        if node == NONE {
            return false;
        }
        if self.eager_memo.is_empty() {
            if self.without_eager_executes || self.has_no_eager_executes() {
                // Remembered: without it, every call would scan all nodes again.
                self.without_eager_executes = true;
                return false;
            }
            self.eager_memo = vec![0; self.node_count()];
        }
        match self.eager_memo[node as usize] {
            1 => return false,
            2 => return true,
            _ => {}
        }
        let found = self.find_ancestor(node, true, |f, n| f.node_type[n as usize] == NodeType::EagerKernelExecute);
        let eager = found.is_some_and(|e| self.flags[e as usize] & F_EKE_COMPILED == 0);
        self.eager_memo[node as usize] = if eager { 2 } else { 1 };
        eager
    }

    /// Whether no node is `EagerExecute` (then no event is eager).
    pub(crate) fn has_no_eager_executes(&self) -> bool {
        !self.node_type.contains(&NodeType::EagerKernelExecute)
    }

    /// The group runs `(first event, group)` of one stack-free range of a swept line
    /// (see [`Self::line_cuts`]): the anchor sweep of [`Self::for_each_anchor`] on that
    /// range alone, read-only so ranges can be laid out in parallel.
    pub(crate) fn anchor_group_runs(
        &self,
        plane_index: usize,
        line_index: usize,
        range: std::ops::Range<usize>,
    ) -> Vec<(u32, u32)> {
        let plane = &self.space.planes[plane_index];
        let line = &plane.lines[line_index];
        let global = self.line_base[plane_index] as usize + line_index;
        let (first, end) = self.line_nodes[global];
        // Nodes of an unordered line are in event order.
        let nodes = &self.node_event[first as usize..end as usize];
        let mut cursor = first + nodes.partition_point(|&e| (e as usize) < range.start) as u32;
        let mut stack: Vec<Frame> = Vec::new();
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for index in range {
            let index = index as u32;
            let node = if cursor < end && self.node_event[cursor as usize] == index {
                cursor += 1;
                cursor - 1
            } else {
                NONE
            };
            let anchor = if node != NONE && self.is_async(node) {
                node
            } else {
                let span = span_at(plane, line, &[], index);
                let parent = pop_to_parent(&mut stack, span);
                let anchor = if node != NONE { node } else { parent.map_or(NONE, |p| p.anchor) };
                stack.push(Frame { span, anchor, distance: 0 });
                anchor
            };
            let group = if anchor == NONE { NO_GROUP } else { self.group[anchor as usize] };
            if runs.last().is_none_or(|&(_, g)| g != group) {
                runs.push((index, group));
            }
        }
        runs
    }

    /// Whether a node is async (never nested).
    pub(crate) fn is_async(&self, node: u32) -> bool {
        self.flags[node as usize] & F_ASYNC != 0
    }

    /// Replays the nesting sweep of a non-TPU line and reports, per event in file order
    /// position, its anchor node (`NONE` for none). `visit(event_index, anchor)` is called in
    /// the line's visiting order.
    pub(crate) fn for_each_anchor(
        &mut self,
        plane_index: usize,
        line_index: usize,
        mut visit: impl FnMut(&mut Self, u32, u32),
    ) {
        let plane = &self.space.planes[plane_index];
        let line = &plane.lines[line_index];
        let global = self.line_base[plane_index] as usize + line_index;
        let order = self.line_order(plane_index, line_index);
        let len = order.as_ref().map_or(line.event_count(), Vec::len);
        let (mut cursor, end) = self.line_nodes[global];
        let mut stack: Vec<Frame> = Vec::new();
        for pos in 0..len {
            let index = order.as_ref().map_or(pos as u32, |o| o[pos]);
            let node = if cursor < end && self.node_event[cursor as usize] == index {
                cursor += 1;
                cursor - 1
            } else {
                NONE
            };
            if node != NONE && self.is_async(node) {
                visit(self, index, node);
                continue;
            }
            let span = span_at(plane, line, &self.regions[global], index);
            let parent = pop_to_parent(&mut stack, span);
            let anchor = if node != NONE { node } else { parent.map_or(NONE, |p| p.anchor) };
            stack.push(Frame { span, anchor, distance: 0 });
            visit(self, index, anchor);
        }
    }
}

/// Cuts a line (in stored order) into event ranges of about `target` events, each starting
/// where no earlier event can include the next one: the largest end so far is below the
/// next event's end, so the nesting stack is empty there (`Span::includes` needs the
/// parent's end at or after the child's). Async events never pop the stack, so a cut
/// never starts at one.
fn stack_free_cuts(
    plane: &XPlane,
    line: &XLine,
    target: usize,
    is_async: impl Fn(u32) -> bool,
) -> Vec<std::ops::Range<usize>> {
    let count = line.event_count();
    let target = target.max(1);
    if count <= target {
        return std::iter::once(0..count).collect();
    }
    let mut cuts = Vec::with_capacity(count / target + 1);
    let mut start = 0;
    let mut max_end = 0u64;
    for index in 0..count {
        let end = Span::of(&line.event(plane, index)).end();
        if index >= start + target && max_end < end && !is_async(index as u32) {
            cuts.push(start..index);
            start = index;
        }
        max_end = max_end.max(end);
    }
    cuts.push(start..count);
    cuts
}

/// Pops the nesting stack until its top includes `span`; returns that top (the parent).
fn pop_to_parent(stack: &mut Vec<Frame>, span: Span) -> Option<Frame> {
    while let Some(&top) = stack.last() {
        if top.span.includes(span) {
            return Some(top);
        }
        stack.pop();
    }
    None
}

/// Queues a (possibly virtual) parent: real nodes (`hops == 0`) once, virtual plain steps
/// always.
fn enqueue(search: &mut Search, node: u32, hops: u32) {
    if hops == 0 {
        if search.mark(node) {
            search.queue.push_back((node, 0));
        }
    } else {
        search.queue.push_back((node, hops));
    }
}
