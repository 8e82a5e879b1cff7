//! Test-only reference: a straightforward port of XProf's full `EventForest` (one node per
//! event, parent/child vectors, plain BFS) for non-TPU spaces. The compact forest must give
//! exactly its results. It shares the name tables and mutator effects (`kinds`,
//! `preprocess`), which have their own tests.

use super::derived::process_ungrouped_events;
use super::forest::{NodeType, node_type};
use super::kinds::{EventKind, PlaneKinds, RawValue, Span, StatKind};
use super::preprocess::{ContextId, PlaneMutators, is_tpu_parent_line, sorted_line_order, span_at, threadpool_regions};
use super::tables::NO_GROUP;
use super::{GroupMetadata, every_plane_grouped, has_loop_ops};
use oxprof_model::XSpace;
use oxprof_model::schema::{GPU_PLANE_PREFIX, HOST_THREADS_PLANE_NAME};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

struct Node {
    plane: usize,
    line: usize,
    /// Event index (`>= count`: a threadpool region).
    event: usize,
    span: Span,
    ty: NodeType,
    root_level: Option<i32>,
    parents: Vec<usize>,
    children: Vec<usize>,
    group: Option<i64>,
    implicit: bool,
    graph_type: Option<String>,
    iter_num: Option<i64>,
    step_num: Option<i64>,
    step_id_int: Option<i64>,
    step_iter: Option<(u64, u64)>,
    loop_key: Option<(i64, i64)>,
    correlation: Option<u64>,
    is_func: Option<i64>,
    name: String,
    tf_data: bool,
}

/// What the reference computes.
pub(crate) struct Reference {
    pub(crate) groups: Vec<Vec<Vec<Option<i64>>>>,
    pub(crate) eager: Vec<Vec<Vec<bool>>>,
    pub(crate) metadata: BTreeMap<i64, GroupMetadata>,
    pub(crate) step_names: BTreeMap<(u32, u32, u32), String>,
}

type Key = (i32, ContextId, Option<i32>);

/// A TF loop iteration: `(iter_num, first event, events)`.
type Iteration = (i64, usize, Vec<usize>);

/// Full-forest grouping of a non-TPU XSpace (None when it is grouped or has loop ops).
pub(crate) fn reference_group(space: &XSpace) -> Option<Reference> {
    if every_plane_grouped(space) || has_loop_ops(space) {
        return None;
    }
    let mut nodes: Vec<Node> = Vec::new();
    let mut contexts: Vec<(Key, Vec<usize>, Vec<usize>)> = Vec::new();
    let mut context_index: HashMap<Key, usize> = HashMap::new();
    let mut line_nodes: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
    for (pi, plane) in space.planes.iter().enumerate() {
        let kinds = PlaneKinds::new(plane);
        let mutators = PlaneMutators::new(plane, &kinds);
        let is_host = plane.name == HOST_THREADS_PLANE_NAME;
        for (li, line) in plane.lines.iter().enumerate() {
            let regions = if mutators.threadpool { threadpool_regions(plane, line, &kinds) } else { Vec::new() };
            let order: Vec<u32> = if regions.is_empty() {
                (0..line.event_count() as u32).collect()
            } else {
                sorted_line_order(plane, line, &regions)
            };
            let mut stack: Vec<usize> = Vec::new();
            for &index in &order {
                let index = index as usize;
                let span = span_at(plane, line, &regions, index as u32);
                let id = nodes.len();
                let (facts, node) = if index >= line.event_count() {
                    let facts = mutators.region_facts(regions[index - line.event_count()].region_id);
                    let node = Node {
                        plane: pi,
                        line: li,
                        event: index,
                        span,
                        ty: NodeType::Unknown,
                        root_level: None,
                        parents: vec![],
                        children: vec![],
                        group: None,
                        implicit: is_tpu_parent_line(line),
                        graph_type: None,
                        iter_num: None,
                        step_num: None,
                        step_id_int: None,
                        step_iter: None,
                        loop_key: None,
                        correlation: None,
                        is_func: None,
                        name: String::new(),
                        tf_data: false,
                    };
                    (facts, node)
                } else {
                    let event = line.event(plane, index);
                    let kind = kinds.event_kind(&event);
                    let has_type = kinds.event_has_type(&event);
                    let scan = kinds.scan(&event);
                    let facts = mutators.facts(kind, line, &scan);
                    let correlation = scan.get(StatKind::CorrelationId);
                    let ty = node_type(kind, has_type, is_host, correlation.is_some());
                    let step = scan.get(StatKind::StepId);
                    let iter = scan.get(StatKind::IterNum);
                    let node = Node {
                        plane: pi,
                        line: li,
                        event: index,
                        span,
                        ty,
                        root_level: facts.root_level,
                        parents: vec![],
                        children: vec![],
                        group: None,
                        implicit: matches!(
                            ty,
                            NodeType::FunctionRun
                                | NodeType::SessionRun
                                | NodeType::RunGraph
                                | NodeType::ExecutorStateProcess
                        ) || is_tpu_parent_line(line),
                        graph_type: kinds.str_stat(&event, StatKind::GraphType).map(str::to_string),
                        iter_num: iter.map(RawValue::int_value),
                        step_num: scan.get(StatKind::StepNum).map(RawValue::int_value),
                        step_id_int: step.map(RawValue::int_value),
                        step_iter: step.zip(iter).map(|(s, i)| (s.int_or_uint(), i.int_or_uint())),
                        loop_key: step.zip(iter).map(|(s, i)| (s.int_value(), i.int_value())),
                        correlation: correlation.map(RawValue::int_or_uint),
                        is_func: scan.get(StatKind::IsFunc).map(RawValue::int_value),
                        name: event.name().to_string(),
                        tf_data: kind == EventKind::TfDataCapturedFunction && has_type,
                    };
                    (facts, node)
                };
                nodes.push(node);
                line_nodes.entry((pi, li)).or_default().push(id);
                for (side, ctx) in [(true, facts.producer), (false, facts.consumer)] {
                    if let Some((ty, cid)) = ctx {
                        let key = (ty, cid, facts.pid);
                        let at = *context_index.entry(key).or_insert_with(|| {
                            contexts.push((key, vec![], vec![]));
                            contexts.len() - 1
                        });
                        if side {
                            contexts[at].1.push(id);
                        } else {
                            contexts[at].2.push(id);
                        }
                    }
                }
                if !facts.is_async {
                    while let Some(&top) = stack.last() {
                        if nodes[top].span.includes(span) {
                            add_child(&mut nodes, top, id);
                            break;
                        }
                        stack.pop();
                    }
                    stack.push(id);
                }
            }
        }
    }
    // ConnectInterThread.
    let of_type =
        |nodes: &[Node], ty: NodeType| -> Vec<usize> { (0..nodes.len()).filter(|&i| nodes[i].ty == ty).collect() };
    for child_ty in [NodeType::IteratorGetNextOp, NodeType::IteratorGetNextAsOptionalOp] {
        let mut map = HashMap::new();
        for p in of_type(&nodes, NodeType::ExecutorStateProcess) {
            if let Some(k) = nodes[p].step_iter {
                map.insert(k, p);
            }
        }
        for c in of_type(&nodes, child_ty) {
            if let Some(&p) = nodes[c].step_iter.and_then(|k| map.get(&k)) {
                add_child(&mut nodes, p, c);
            }
        }
    }
    let mut map = HashMap::new();
    for p in of_type(&nodes, NodeType::KernelLaunch) {
        if let Some(k) = nodes[p].correlation {
            map.insert(k, p);
        }
    }
    for c in of_type(&nodes, NodeType::KernelExecute) {
        if let Some(&p) = nodes[c].correlation.and_then(|k| map.get(&k)) {
            add_child(&mut nodes, p, c);
        }
    }
    // ConnectContextGroups.
    for (_, producers, consumers) in &contexts {
        if producers.len() >= 64 && consumers.len() >= 64 {
            continue;
        }
        for &p in producers {
            for &c in consumers {
                add_child(&mut nodes, p, c);
            }
        }
    }
    // GroupEvents.
    let tf_data: HashSet<i64> = nodes.iter().filter(|n| n.tf_data).filter_map(|n| n.step_id_int).collect();
    let mut loops: Vec<(i64, Vec<Iteration>)> = Vec::new();
    for e in of_type(&nodes, NodeType::ExecutorStateProcess) {
        let Some((step, iter)) = nodes[e].loop_key else { continue };
        if tf_data.contains(&step) {
            continue;
        }
        let li = match loops.iter().position(|l| l.0 == step) {
            Some(i) => i,
            None => {
                loops.push((step, vec![]));
                loops.len() - 1
            }
        };
        let ts = nodes[e].span.begin as i64;
        match loops[li].1.iter_mut().find(|it| it.0 == iter) {
            Some(it) => {
                if ts < nodes[it.1].span.begin as i64 {
                    it.1 = e;
                }
                it.2.push(e);
            }
            None => loops[li].1.push((iter, e, vec![e])),
        }
    }
    let mut iters: Vec<Iteration> =
        loops.into_iter().filter(|(_, its)| !(its.len() == 1 && its[0].0 == 0)).flat_map(|l| l.1).collect();
    iters.sort_by_key(|it| nodes[it.1].span.begin as i64);
    let mut loop_roots = vec![];
    for (_, first, events) in &iters {
        loop_roots.push(*first);
        for &e in events {
            if e != *first {
                add_child(&mut nodes, *first, e);
            }
        }
    }
    let mut meta: BTreeMap<i64, (String, BTreeSet<i64>, BTreeSet<i64>)> = BTreeMap::new();
    let mut step_names = BTreeMap::new();
    let mut next = 0i64;
    let mut process_root =
        |nodes: &mut Vec<Node>, meta: &mut BTreeMap<i64, (String, BTreeSet<i64>, BTreeSet<i64>)>, g: i64, r: usize| {
            // PropagateGroupId.
            let mut queue = VecDeque::from([r]);
            let mut seen = HashSet::from([r]);
            while let Some(n) = queue.pop_front() {
                match nodes[n].group {
                    Some(h) => {
                        if h != g {
                            meta.entry(g).or_default().2.insert(h);
                            meta.entry(h).or_default().1.insert(g);
                        }
                    }
                    None => {
                        nodes[n].group = Some(g);
                        for &c in &nodes[n].children {
                            if seen.insert(c) {
                                queue.push_back(c);
                            }
                        }
                    }
                }
            }
            let mut name = String::new();
            if let Some(a) = find_parent(nodes, r, true, |n| n.graph_type.is_some()) {
                name.push_str(nodes[a].graph_type.as_deref().unwrap_or(""));
                name.push(' ');
            } else if !nodes[r].implicit {
                name.push_str(&nodes[r].name);
                name.push(' ');
            }
            let mut step_num = nodes[r].group.unwrap_or(0);
            if let Some(a) = find_parent(nodes, r, true, |n| n.iter_num.is_some()) {
                step_num = nodes[a].iter_num.unwrap_or(0);
            } else if let Some(a) = find_parent(nodes, r, true, |n| n.step_num.is_some()) {
                step_num = nodes[a].step_num.unwrap_or(0);
            }
            name.push_str(&step_num.to_string());
            if !nodes[r].implicit {
                step_names.insert((nodes[r].plane as u32, nodes[r].line as u32, nodes[r].event as u32), name.clone());
            }
            meta.entry(g).or_default().0 = name;
        };
    if !loop_roots.is_empty() {
        for r in loop_roots {
            process_root(&mut nodes, &mut meta, next, r);
            next += 1;
        }
    } else {
        let mut roots: Vec<usize> = (0..nodes.len())
            .filter(|&i| nodes[i].root_level.is_some())
            .filter(|&i| nodes[i].step_id_int.is_none_or(|s| !tf_data.contains(&s)))
            .collect();
        roots.sort_by(|&a, &b| {
            let (la, lb) = (nodes[a].root_level.unwrap_or(0), nodes[b].root_level.unwrap_or(0));
            lb.cmp(&la).then((nodes[a].span.begin as i64).cmp(&(nodes[b].span.begin as i64)))
        });
        for r in roots {
            if nodes[r].group.is_some() {
                continue;
            }
            let level = nodes[r].root_level.unwrap_or(0);
            if find_parent(&nodes, r, false, |n| n.root_level == Some(level)).is_some() {
                continue;
            }
            process_root(&mut nodes, &mut meta, next, r);
            next += 1;
        }
    }
    // Output.
    let mut groups: Vec<Vec<Vec<u32>>> =
        space.planes.iter().map(|p| p.lines.iter().map(|l| vec![NO_GROUP; l.event_count()]).collect()).collect();
    let mut eager: Vec<Vec<Vec<bool>>> =
        space.planes.iter().map(|p| p.lines.iter().map(|l| vec![false; l.event_count()]).collect()).collect();
    for i in 0..nodes.len() {
        let n = &nodes[i];
        if n.event >= space.planes[n.plane].lines[n.line].event_count() {
            continue;
        }
        groups[n.plane][n.line][n.event] = n.group.map_or(NO_GROUP, |g| g as u32);
        if matches!(n.ty, NodeType::KernelExecute | NodeType::TfOpRun) {
            let found = find_parent(&nodes, i, true, |m| m.ty == NodeType::EagerKernelExecute);
            eager[n.plane][n.line][n.event] = found.is_some_and(|e| nodes[e].is_func.is_some_and(|f| f == 0));
        }
    }
    for (pi, plane) in space.planes.iter().enumerate() {
        if plane.name.starts_with(GPU_PLANE_PREFIX) {
            process_ungrouped_events(plane, &mut groups[pi]);
        }
    }
    let _ = line_nodes;
    Some(Reference {
        groups: groups
            .into_iter()
            .map(|p| {
                p.into_iter()
                    .map(|l| l.into_iter().map(|g| (g != NO_GROUP).then_some(i64::from(g))).collect())
                    .collect()
            })
            .collect(),
        eager,
        metadata: meta
            .into_iter()
            .map(|(g, (name, parents, children))| {
                (
                    g,
                    GroupMetadata {
                        name,
                        parents: parents.into_iter().collect(),
                        children: children.into_iter().collect(),
                    },
                )
            })
            .collect(),
        step_names,
    })
}

fn add_child(nodes: &mut [Node], parent: usize, child: usize) {
    nodes[parent].children.push(child);
    nodes[child].parents.push(parent);
}

/// `FindParentWithComparator`.
fn find_parent(nodes: &[Node], start: usize, include_self: bool, matches: impl Fn(&Node) -> bool) -> Option<usize> {
    let mut queue = VecDeque::new();
    let mut seen = HashSet::from([start]);
    if include_self {
        queue.push_back(start);
    } else {
        for &p in &nodes[start].parents {
            queue.push_back(p);
            seen.insert(p);
        }
    }
    while let Some(n) = queue.pop_front() {
        if matches(&nodes[n]) {
            return Some(n);
        }
        for &p in &nodes[n].parents {
            if seen.insert(p) {
                queue.push_back(p);
            }
        }
    }
    None
}
