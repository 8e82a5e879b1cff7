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

use super::kinds::{EventKind, FxHashMap, FxHashSet, HOST_THREADS_PLANE, PlaneKinds, RawValue, Span, StatKind};
use super::kinds::{StatScan, TPU_PLANE_PREFIX};
use super::preprocess::{ContextId, Facts, PlaneMutators, Region, is_tpu_parent_line, sorted_line_order};
use super::preprocess::{span_at, threadpool_regions};
use super::tables::NO_GROUP;
use oxprof_format::{XLine, XPlane, XSpace};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

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

/// Low id bits kept in place by [`RawContextKey`]'s hash.
const LOCALITY_BITS: u32 = 10;

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
    ///   id = | high bits ............ | low 10 bits |
    ///   h  = | fmix(high ^ packed) ... | low 10 bits |   (top 7 bits ^= hash of low bits)
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
    // Inter-thread connection keys, in node order.
    executors: Vec<(u64, u64, u32)>,
    loop_executors: Vec<(i64, i64, u32)>,
    iterators: Vec<(u64, u64, u32, bool)>,
    launches: Vec<(u64, u32)>,
    executes: Vec<(u64, u32)>,
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
    pub(crate) metadata: BTreeMap<i64, GroupBuild>,
    /// Step names of non-implicit roots: `(plane, line, event)` → name.
    pub(crate) step_names: BTreeMap<(u32, u32, u32), String>,
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
            line_starts: Vec::new(),
            node_event: Vec::new(),
            nest_parent: Vec::new(),
            nest_hops: Vec::new(),
            node_type: Vec::new(),
            flags: Vec::new(),
            group: Vec::new(),
            roots: Vec::new(),
            executors: Vec::new(),
            loop_executors: Vec::new(),
            iterators: Vec::new(),
            launches: Vec::new(),
            executes: Vec::new(),
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
            metadata: BTreeMap::new(),
            step_names: BTreeMap::new(),
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
                *self.raw_context_keys[usize::from(pid.is_some())].entry(RawContextKey { packed, id }).or_insert(next)
            }
            other => *self.context_keys.entry(other).or_insert(next),
        };
        if index == next {
            self.context_key_count += 1;
        }
        index
    }

    /// XProf's `ConnectIntraThread` over every plane (TPU planes: `ConnectIntraThreadTPU`).
    pub(crate) fn connect_intra_thread(&mut self) {
        self.reserve_for_contexts();
        for plane_index in 0..self.space.planes.len() {
            let plane = &self.space.planes[plane_index];
            if plane.name.starts_with(TPU_PLANE_PREFIX) {
                super::tpu::connect_intra_thread_tpu(self, plane_index);
            } else {
                self.connect_plane_lines(plane_index);
            }
        }
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

    /// Classifies one event (or region) of a line: its facts, node type and node flags, or
    /// `None` for a plain event.
    fn classify(
        &mut self,
        plane_index: usize,
        line: &XLine,
        global: usize,
        index: u32,
        scan: &mut StatScan,
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
        self.classify_scanned(plane_index, line, kind, has_type, scan, facts)
    }

    fn classify_scanned(
        &mut self,
        plane_index: usize,
        line: &XLine,
        kind: EventKind,
        has_type: bool,
        scan: &StatScan,
        facts: Facts,
    ) -> (Facts, Option<(NodeType, u8)>) {
        let plane = &self.space.planes[plane_index];
        let correlation = scan.get(StatKind::CorrelationId);
        let ty = node_type(kind, has_type, plane.name == HOST_THREADS_PLANE, correlation.is_some());
        if kind == EventKind::TfDataCapturedFunction
            && has_type
            && let Some(step) = scan.get(StatKind::StepId)
        {
            self.tf_data_step_ids.insert(step.int_value());
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
        let next = self.node_event.len() as u32;
        match (ty, step, iter) {
            (NodeType::ExecutorStateProcess, Some(s), Some(i)) => {
                self.executors.push((s.int_or_uint(), i.int_or_uint(), next));
                self.loop_executors.push((s.int_value(), i.int_value(), next));
            }
            (NodeType::IteratorGetNextOp, Some(s), Some(i)) => {
                self.iterators.push((s.int_or_uint(), i.int_or_uint(), next, false))
            }
            (NodeType::IteratorGetNextAsOptionalOp, Some(s), Some(i)) => {
                self.iterators.push((s.int_or_uint(), i.int_or_uint(), next, true))
            }
            _ => {}
        }
        match (ty, correlation) {
            (NodeType::KernelLaunch, Some(c)) => self.launches.push((c.int_or_uint(), next)),
            (NodeType::KernelExecute, Some(c)) => self.executes.push((c.int_or_uint(), next)),
            _ => {}
        }
        if let Some(level) = facts.root_level {
            self.roots.push(Root { node: next, level, step_id: step.map(RawValue::int_value) });
        }
        (facts, Some((ty, flags)))
    }

    /// `ConnectIntraThread` for the lines of a non-TPU plane: a nesting-stack sweep per line
    /// that creates nodes and their compressed nesting edges.
    fn connect_plane_lines(&mut self, plane_index: usize) {
        let plane = &self.space.planes[plane_index];
        let mut stack: Vec<Frame> = Vec::new();
        let mut scan = StatScan::default();
        for (line_index, line) in plane.lines.iter().enumerate() {
            let global = self.line_base[plane_index] as usize + line_index;
            let order = self.line_order(plane_index, line_index);
            let len = order.as_ref().map_or(line.event_count(), Vec::len);
            let start = self.node_event.len() as u32;
            stack.clear();
            for pos in 0..len {
                let index = order.as_ref().map_or(pos as u32, |o| o[pos]);
                let (facts, node) = self.classify(plane_index, line, global, index, &mut scan);
                let span = span_at(plane, line, &self.regions[global], index);
                if facts.is_async {
                    if let Some((ty, flags)) = node {
                        let id = self.add_node(global as u32, index, ty, flags, (NONE, 0));
                        self.set_context_group(&facts, id);
                    }
                    continue;
                }
                let parent = pop_to_parent(&mut stack, span);
                match node {
                    Some((ty, flags)) => {
                        let nest = parent.filter(|p| p.anchor != NONE).map_or((NONE, 0), |p| (p.anchor, p.distance));
                        let id = self.add_node(global as u32, index, ty, flags, nest);
                        self.set_context_group(&facts, id);
                        stack.push(Frame { span, anchor: id, distance: 0 });
                    }
                    None => {
                        let (anchor, distance) = parent.map_or((NONE, 0), |p| (p.anchor, p.distance + 1));
                        stack.push(Frame { span, anchor, distance });
                    }
                }
            }
            self.line_nodes[global] = (start, self.node_event.len() as u32);
        }
    }

    /// Adds a TPU grouping-line node (no nesting parent).
    pub(crate) fn add_tpu_step_node(
        &mut self,
        plane_index: usize,
        global: u32,
        line: &XLine,
        index: u32,
    ) -> (u32, Facts) {
        let (facts, node) = self.classify(plane_index, line, global as usize, index, &mut StatScan::default());
        // ConnectIntraThreadTPU never sets a root level: drop what `classify` recorded.
        let next = self.node_event.len() as u32;
        if self.roots.last().is_some_and(|r| r.node == next) {
            self.roots.pop();
        }
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
            if self.iterators.iter().all(|i| i.3 != optional) {
                continue;
            }
            let parents: FxHashMap<(u64, u64), u32> = self.executors.iter().map(|&(s, i, n)| ((s, i), n)).collect();
            for &(s, i, child, opt) in &self.iterators {
                if opt == optional
                    && let Some(&parent) = parents.get(&(s, i))
                {
                    self.edges.push((parent, child));
                }
            }
        }
        if !self.executes.is_empty() {
            let parents: FxHashMap<u64, u32> = self.launches.iter().map(|&(c, n)| (c, n)).collect();
            for &(c, child) in &self.executes {
                if let Some(&parent) = parents.get(&c) {
                    self.edges.push((parent, child));
                }
            }
        }
        self.launches = Vec::new();
        self.executes = Vec::new();
        self.iterators = Vec::new();
        self.executors = Vec::new();
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
        for &(step_id, iter_num, node) in &std::mem::take(&mut self.loop_executors) {
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
        let mut nest_children: Vec<u32> = (0..n as u32).filter(|&c| self.nest_parent[c as usize] != NONE).collect();
        nest_children.sort_by_key(|&c| self.nest_parent[c as usize]);
        self.nest_children = nest_children;
        let mut edges = std::mem::take(&mut self.edges);
        let mut by_child: Vec<(u32, u32)> = edges.iter().map(|&(p, c)| (c, p)).collect();
        by_child.sort_by_key(|e| e.0);
        by_child.shrink_to_fit();
        edges.sort_by_key(|e| e.0);
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
            if !self.node_type.contains(&NodeType::EagerKernelExecute) {
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
