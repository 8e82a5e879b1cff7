//! Graphviz DOT of an HLO computation or of an instruction's neighbourhood: a port of XLA's
//! `HloDotDumper` (`xla/service/hlo_graph_dumper.cc`) as XProf's graph viewer calls it
//! (`RenderNeighborhoodAround` / `RenderGraph`).
//!
//! Shape of the output:
//!
//! ```text
//! digraph G {                     header: graph label and a stylesheet with one hover rule
//! ...stylesheet=< ... >           set per edge (highlight an edge when its ends are hovered)
//! <node> [label=<..>, ...];       one statement per shown instruction, in the computation's
//! subgraph cluster_<c> { ... }    instruction order; called computations (fusions, while
//!                                 bodies, ...) as clusters just before their caller
//! cluster_<c> [label=<ROOT>...];  the root tag
//! <from> -> <to> [...];           edges, in the order they were found
//! }
//! ```
//!
//! XLA names nodes and clusters by the addresses of its objects in memory, which change
//! from run to run; oxprof numbers them instead (instruction = node index + 1, cluster =
//! computation index + 1). XLA also emits the stylesheet's rules in the iteration order of
//! a hash map keyed by those addresses; oxprof emits them by descending edge id. Everything
//! else is byte for byte XLA's text.

use super::graph::{Graph, Node, Opcode};
use super::print::{extra_attributes, print_literal, print_shape};
use crate::{HloModule, Shape, primitive};
use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;

/// `HloRenderOptions` as XProf sets them from the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderOptions {
    /// `graph_width`: radius of the neighbourhood (XProf's default is 3).
    pub radius: i64,
    /// `show_metadata`: `backend_config="..."` in the node labels.
    pub show_backend_config: bool,
    /// Not `merge_fusion`: fused computations drawn as clusters.
    pub show_fusion_subcomputations: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions { radius: 3, show_backend_config: false, show_fusion_subcomputations: true }
    }
}

/// How the filter treats an instruction (`NodeFilterResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Filter {
    Normal,
    Hide,
    Highlight,
    SomeOperandsOmitted,
    OmitNodeOperands,
    SomeUsersOmitted,
}

/// Kinds of node colors (`ColorScheme`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Color {
    Brown,
    DarkBlue,
    DarkGreen,
    DarkOrange,
    DarkRed,
    Gray,
    Green,
    Orange,
    Purple,
    White,
    Yellow,
    DashedBorder,
}

impl Color {
    /// `(style, fill, stroke, font)`.
    fn attributes(self) -> (&'static str, &'static str, &'static str, &'static str) {
        match self {
            Color::Brown => ("filled", "#bcaaa4", "#8c7b75", "black"),
            Color::DarkBlue => ("filled", "#1565c0", "#003c8f", "white"),
            Color::DarkGreen => ("filled", "#2e7d32", "#005005", "white"),
            Color::DarkOrange => ("filled", "#ffb74d", "#c88719", "black"),
            Color::DarkRed => ("filled", "#b71c1c", "#7f0000", "white"),
            Color::Gray => ("filled", "#cfd8dc", "#9ea7aa", "black"),
            Color::Green => ("filled", "#c8e6c9", "#97b498", "black"),
            Color::Orange => ("filled", "#ffe0b2", "#cbae82", "black"),
            Color::Purple => ("filled", "#e1bee7", "#af8eb5", "black"),
            Color::White => ("filled", "white", "#9e9e9e", "black"),
            Color::Yellow => ("filled", "#fff9c4", "#cbc693", "black"),
            Color::DashedBorder => ("filled,dashed", "white", "#757575", "#757575"),
        }
    }

    /// `NodeColorAttributes`.
    fn node_attributes(self) -> String {
        let (style, fill, stroke, font) = self.attributes();
        format!("style=\"{style}\", fontcolor=\"{font}\", color=\"{stroke}\", fillcolor=\"{fill}\"")
    }
}

/// `HtmlLikeStringSanitize`.
fn sanitize(s: &str) -> String {
    s.replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// `ShapeUtil::HumanString`: the shape without layouts.
fn human_string(shape: &Shape) -> String {
    fn strip(shape: &Shape) -> Shape {
        Shape {
            element_type: shape.element_type,
            dimensions: shape.dimensions.clone(),
            is_dynamic_dimension: shape.is_dynamic_dimension.clone(),
            tuple_shapes: shape.tuple_shapes.iter().map(strip).collect(),
            layout: None,
        }
    }
    let mut out = String::new();
    print_shape(&strip(shape), &mut out);
    out
}

/// `ShapeUtil::HumanStringWithLayout`.
fn human_string_with_layout(shape: &Shape) -> String {
    let mut out = String::new();
    print_shape(shape, &mut out);
    out
}

/// `ShapeUtil::IsEffectiveScalar`: an array whose dimensions are all 1.
fn is_effective_scalar(shape: &Shape) -> bool {
    shape.is_array() && shape.dimensions.iter().all(|&d| d == 1)
}

fn has_primitive_type(shape: &Shape, element_type: i32) -> bool {
    if shape.is_tuple() {
        shape.tuple_shapes.iter().any(|s| has_primitive_type(s, element_type))
    } else {
        shape.element_type == element_type
    }
}

/// `IsSmall`: fewer than 4096 elements, or opaque/token.
fn is_small(shape: &Shape) -> bool {
    has_primitive_type(shape, primitive::OPAQUE_TYPE)
        || has_primitive_type(shape, primitive::TOKEN)
        || shape.elements_recursive() < 4096
}

/// Cuts `text` to at most `max` bytes (on a character boundary).
fn cut(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The module as the dumper sees it: the linked graph plus who calls each computation and
/// which computation holds each instruction.
pub(crate) struct DotModule {
    graph: Graph,
    /// Computation of every node.
    parent: Vec<usize>,
    /// Instructions calling each computation, in creation order.
    callers: Vec<Vec<usize>>,
}

impl DotModule {
    /// Links the module (`None` when XLA would reject it).
    pub(crate) fn new(module: &HloModule) -> Option<DotModule> {
        let graph = Graph::build(module.clone())?;
        let mut parent = vec![0usize; graph.nodes.len()];
        for (c, comp) in graph.comps.iter().enumerate() {
            for &i in &comp.proto_order {
                if let Some(slot) = parent.get_mut(i) {
                    *slot = c;
                }
            }
        }
        let mut callers = vec![Vec::new(); graph.comps.len()];
        for (i, node) in graph.nodes.iter().enumerate() {
            for &c in &node.called {
                if let Some(list) = callers.get_mut(c)
                    && !list.contains(&i)
                {
                    list.push(i);
                }
            }
        }
        Some(DotModule { graph, parent, callers })
    }

    fn node(&self, i: usize) -> Option<&Node> {
        self.graph.nodes.get(i)
    }

    fn name(&self, i: usize) -> &str {
        self.node(i).map_or("", |n| n.hlo.name.as_str())
    }

    fn opcode(&self, i: usize) -> &str {
        self.node(i).map_or("", |n| n.hlo.opcode.as_str())
    }

    fn op(&self, i: usize) -> Opcode {
        self.node(i).map_or(Opcode::Other, |n| n.op)
    }

    fn operands(&self, i: usize) -> &[usize] {
        self.node(i).map_or(&[][..], |n| n.operands.as_slice())
    }

    fn users(&self, i: usize) -> &[usize] {
        self.node(i).map_or(&[][..], |n| n.users.as_slice())
    }

    fn operand(&self, i: usize, k: usize) -> Option<usize> {
        self.operands(i).get(k).copied()
    }

    fn parent_of(&self, i: usize) -> usize {
        self.parent.get(i).copied().unwrap_or(usize::MAX)
    }

    fn comp_root(&self, c: usize) -> Option<usize> {
        self.graph.comps.get(c).map(|c| c.root)
    }

    fn comp_name(&self, c: usize) -> &str {
        self.graph.comps.get(c).map_or("", |c| c.name.as_str())
    }

    fn fusion_instr(&self, c: usize) -> Option<usize> {
        self.graph.comps.get(c).and_then(|c| c.fusion_instr)
    }

    /// `IsFusionComputation`.
    fn is_fusion_comp(&self, c: usize) -> bool {
        self.fusion_instr(c).is_some()
    }

    /// `IsFused` (with a fusion instruction present).
    fn is_fused(&self, i: usize) -> bool {
        self.is_fusion_comp(self.parent_of(i))
    }

    fn is_root(&self, i: usize) -> bool {
        self.comp_root(self.parent_of(i)) == Some(i)
    }

    fn shape(&self, i: usize) -> Option<&Shape> {
        self.node(i).map(|n| &n.hlo.shape)
    }

    /// `caller_instructions(opcode)`.
    fn callers_with(&self, c: usize, op: Opcode) -> impl Iterator<Item = usize> + '_ {
        self.callers.get(c).into_iter().flatten().copied().filter(move |&i| self.op(i) == op)
    }

    /// `FindInstruction`: case-insensitive name, a leading `%` ignored; computations in
    /// module order, instructions in their list order.
    pub(crate) fn find_instruction(&self, name: &str) -> Option<usize> {
        let name = name.strip_prefix('%').unwrap_or(name);
        let with_percent = format!("%{name}");
        self.graph.comps.iter().flat_map(|c| c.proto_order.iter().copied()).find(|&i| {
            let n = self.name(i);
            n.eq_ignore_ascii_case(name) || n.eq_ignore_ascii_case(&with_percent)
        })
    }

    /// `FindComputation`: case-insensitive name.
    pub(crate) fn find_computation(&self, name: &str) -> Option<usize> {
        self.graph.comps.iter().position(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// `IsAcfPrameter`: a fused parameter that only pipes an async collective fusion's
    /// implementation details through.
    fn is_acf_parameter(&self, i: usize) -> bool {
        if self.op(i) != Opcode::Parameter || !self.is_fused(i) || self.users(i).len() != 1 {
            return false;
        }
        let parent = self.parent_of(i);
        let Some(fusion) = self.fusion_instr(parent) else { return false };
        let number = self.node(i).map_or(-1, |n| n.hlo.parameter_number);
        let Some(input) = usize::try_from(number).ok().and_then(|k| self.operand(fusion, k)) else { return false };
        if self.op(input) != Opcode::GetTupleElement {
            return false;
        }
        let Some(gte_operand) = self.operand(input, 0) else { return false };
        if self.op(gte_operand) != Opcode::Fusion {
            return false;
        }
        let Some(&fused) = self.node(gte_operand).and_then(|n| n.called.first()) else { return false };
        let is_custom_call = |j: usize, target: &str| {
            self.node(j).is_some_and(|n| n.op == Opcode::CustomCall && n.hlo.custom_call_target == target)
        };
        let user = self.users(i).first().copied();
        let source_root = self.comp_root(fused);
        (self.comp_name(parent).starts_with("async_collective_fusion")
            && source_root.is_some_and(|r| is_custom_call(r, "AsyncCollectiveStart"))
            && user == self.comp_root(parent))
            || (user.is_some_and(|u| is_custom_call(u, "AsyncCollectiveDone"))
                && self.comp_name(fused).starts_with("async_collective_fusion"))
    }
}

/// `NodeFilter`: everything shown (`None`), or XLA's neighbourhood filter.
struct NodeFilter {
    /// Filter results of the neighbourhood, by node.
    nodes: Option<HashMap<usize, Filter>>,
    /// Computation of the neighbourhood's centre.
    center_comp: usize,
}

impl NodeFilter {
    fn all() -> NodeFilter {
        NodeFilter { nodes: None, center_comp: usize::MAX }
    }

    /// `MakeNodeRadiusAroundFilter` (no boundary): a breadth-first walk from `root` over
    /// operands, users and called computations' roots, up to `radius` steps (bitcasts do
    /// not count), then nodes marked by which of their operands/users are shown.
    ///
    /// The walk keeps XLA's quirks: a node can be queued several times and its result is
    /// overwritten each time it is dequeued; tuples (other than the root) do not lead to
    /// their operands; constants do not lead to their users; more than 16 users are not
    /// followed and mark the node `SomeUsersOmitted`.
    fn radius_around(m: &DotModule, root: usize, radius: i64) -> NodeFilter {
        let mut nodes: HashMap<usize, Filter> = HashMap::new();
        let mut worklist: VecDeque<(usize, i64)> = VecDeque::from([(root, 0)]);
        while let Some((instr, depth)) = worklist.pop_front() {
            nodes.insert(instr, if m.is_acf_parameter(instr) { Filter::Hide } else { Filter::Normal });
            if depth == radius {
                continue;
            }
            let op = m.op(instr);
            if instr == root || op != Opcode::Tuple {
                for &operand in m.operands(instr) {
                    if !nodes.contains_key(&operand) {
                        let bitcast = m.op(operand) == Opcode::Bitcast || op == Opcode::Bitcast;
                        worklist.push_back((operand, if bitcast { depth } else { depth + 1 }));
                    }
                }
            }
            for &c in m.node(instr).map_or(&[][..], |n| n.called.as_slice()) {
                if let Some(r) = m.comp_root(c) {
                    worklist.push_back((r, depth + 1));
                }
            }
            if op == Opcode::Constant {
                continue;
            }
            const MAX_USERS_TO_RENDER: usize = 16;
            if m.users(instr).len() > MAX_USERS_TO_RENDER {
                nodes.insert(instr, Filter::SomeUsersOmitted);
                continue;
            }
            for &user in m.users(instr) {
                if !nodes.contains_key(&user) {
                    worklist.push_back((user, depth + 1));
                }
            }
        }
        let center_comp = m.parent_of(root);
        let displayed: Vec<usize> = nodes.keys().copied().collect();
        let is_displayed = |i: usize, nodes: &HashMap<usize, Filter>| {
            nodes.contains_key(&i) || m.op(i) == Opcode::Constant || m.parent_of(i) != center_comp
        };
        for instr in displayed {
            let operands = m.operands(instr);
            let shown = operands.iter().filter(|&&o| is_displayed(o, &nodes)).count();
            let mut result = nodes.get(&instr).copied().unwrap_or(Filter::Normal);
            if shown > 0 && shown < operands.len() {
                result = Filter::SomeOperandsOmitted;
            } else if !operands.is_empty() && shown == 0 {
                result = Filter::OmitNodeOperands;
            }
            if result == Filter::SomeUsersOmitted && m.users(instr).iter().all(|&u| is_displayed(u, &nodes)) {
                result = Filter::Normal;
            }
            nodes.insert(instr, result);
        }
        nodes.insert(root, Filter::Highlight);
        NodeFilter { nodes: Some(nodes), center_comp }
    }

    fn result(&self, m: &DotModule, i: usize) -> Filter {
        let Some(nodes) = &self.nodes else { return Filter::Normal };
        if let Some(&r) = nodes.get(&i) {
            return r;
        }
        if m.parent_of(i) != self.center_comp && !m.is_acf_parameter(i) { Filter::Normal } else { Filter::Hide }
    }

    fn show(&self, m: &DotModule, i: usize) -> bool {
        self.result(m, i) != Filter::Hide
    }

    fn highlight(&self, m: &DotModule, i: usize) -> bool {
        self.result(m, i) == Filter::Highlight
    }

    fn some_or_all_operands_omitted(&self, m: &DotModule, i: usize) -> bool {
        matches!(self.result(m, i), Filter::OmitNodeOperands | Filter::SomeOperandsOmitted)
    }

    fn deemphasized(&self, m: &DotModule, i: usize) -> bool {
        matches!(self.result(m, i), Filter::OmitNodeOperands | Filter::SomeOperandsOmitted | Filter::SomeUsersOmitted)
    }
}

/// `MatchTrivialComputation`: `add`, `max`, `less-than`, ... for a computation that only
/// applies one binary op to its two effective-scalar parameters.
fn match_trivial_computation(m: &DotModule, c: usize) -> Option<&'static str> {
    let comp = m.graph.comps.get(c)?;
    if comp.instrs.len() != 3 {
        return None;
    }
    let root = comp.root;
    let operands = m.operands(root);
    if operands.len() != 2 || !m.shape(root).is_some_and(is_effective_scalar) {
        return None;
    }
    let is_param = |i: usize, number: i64| {
        m.node(i).is_some_and(|n| {
            n.op == Opcode::Parameter && n.hlo.parameter_number == number && is_effective_scalar(&n.hlo.shape)
        })
    };
    let (a, b) = (operands.first().copied()?, operands.get(1).copied()?);
    if !((is_param(a, 0) && is_param(b, 1)) || (is_param(a, 1) && is_param(b, 0))) {
        return None;
    }
    let node = m.node(root)?;
    match node.op {
        Opcode::Add => Some("add"),
        Opcode::Multiply => Some("multiply"),
        Opcode::Minimum => Some("min"),
        Opcode::Maximum => Some("max"),
        Opcode::Xor => Some("xor"),
        Opcode::And => Some("and"),
        Opcode::Or => Some("or"),
        Opcode::Compare => match node.hlo.comparison_direction.as_str() {
            "LE" => Some("less-or-equal"),
            "GE" => Some("greater-or-equal"),
            "GT" => Some("greater-than"),
            "LT" => Some("less-than"),
            "EQ" => Some("equal-to"),
            "NE" => Some("not-equal-to"),
            _ => None,
        },
        _ => None,
    }
}

/// The graph label, node text, edges and stylesheet of one dump (`HloDotDumper`).
struct Dumper<'a> {
    m: &'a DotModule,
    computation: usize,
    label: String,
    options: RenderOptions,
    filter: NodeFilter,
    next_node_id: i64,
    node_ids: HashMap<usize, i64>,
    root_node_id: i64,
    next_edge_id: i64,
    /// `(from, to or None for the root tag, edge id)` in insertion order.
    edge_ids: Vec<(usize, Option<usize>, i64)>,
    /// How many edges each `(from, to)` pair has.
    edge_counts: HashMap<(usize, usize), usize>,
    next_cluster_id: i64,
    cluster_ids: HashMap<usize, i64>,
    edges: Vec<String>,
}

impl<'a> Dumper<'a> {
    fn new(m: &'a DotModule, computation: usize, label: String, options: RenderOptions, filter: NodeFilter) -> Self {
        Dumper {
            m,
            computation,
            label,
            options,
            filter,
            next_node_id: 1,
            node_ids: HashMap::new(),
            root_node_id: 0,
            next_edge_id: 1,
            edge_ids: Vec::new(),
            edge_counts: HashMap::new(),
            next_cluster_id: 1,
            cluster_ids: HashMap::new(),
            edges: Vec::new(),
        }
    }

    /// The DOT name of an instruction (XLA: its address).
    fn instruction_id(&self, i: usize) -> String {
        (i + 1).to_string()
    }

    /// The DOT name of a computation's cluster (XLA: `cluster_<address>`).
    fn subcomputation_id(&self, c: usize) -> String {
        format!("cluster_{}", c + 1)
    }

    fn dump(mut self) -> String {
        let mut body = self.dump_computation(self.computation);
        body.push_str(&self.dump_root_tag());
        let mut out = self.header();
        out.push_str(&body);
        out.push_str(&self.edges.join("\n"));
        out.push_str("\n}");
        out
    }

    fn header(&self) -> String {
        let m = self.m;
        let c = self.computation;
        let mut graph_label = format!("{}<br/>Computation {}", self.label, m.comp_name(c));
        if let Some(fusion) = m.fusion_instr(c) {
            let _ = write!(graph_label, " (in fusion instruction {})", m.name(fusion));
        } else if c == m.graph.entry {
            graph_label.push_str("<br/>ENTRY computation");
        } else if m.callers.get(c).is_some_and(|v| !v.is_empty()) {
            let names: Vec<&str> = m.callers.get(c).into_iter().flatten().map(|&i| m.name(i)).collect();
            let _ = write!(graph_label, "<br/>Caller instructions: {}", names.join(", "));
        }
        const BLUE: &str = "#1976d2";
        const RED: &str = "#d32f2f";
        let mut rules: Vec<String> = Vec::new();
        let rule = |rules: &mut Vec<String>, kind: &str, id: i64, edge: i64, color: &str| {
            rules.push(format!(
                "  #{kind}{id}:hover ~ #edge{edge} text {{ fill: {color}; }}\n  \
                 #{kind}{id}:hover ~ #edge{edge} path {{ stroke: {color}; stroke-width: .2em; }}\n  \
                 #{kind}{id}:hover ~ #edge{edge} polygon {{ fill: {color}; stroke: {color}; stroke-width: .2em; }}\n"
            ));
        };
        let mut ordered: Vec<&(usize, Option<usize>, i64)> = self.edge_ids.iter().collect();
        ordered.sort_by_key(|e| std::cmp::Reverse(e.2));
        for &&(from, to, edge) in &ordered {
            // XLA aborts when an edge's ends were not drawn; they always are.
            let Some(&from_id) = self.node_ids.get(&from) else { continue };
            let to_id = match to {
                Some(t) => match self.node_ids.get(&t) {
                    Some(&id) => id,
                    None => continue,
                },
                None => self.root_node_id,
            };
            rule(&mut rules, "node", from_id, edge, BLUE);
            rule(&mut rules, "node", to_id, edge, RED);
            if let Some(to) = to {
                if m.is_fused(from)
                    && m.is_root(from)
                    && let Some(&cluster) = self.cluster_ids.get(&m.parent_of(from))
                {
                    rule(&mut rules, "clust", cluster, edge, BLUE);
                }
                if m.is_fused(to)
                    && m.op(to) == Opcode::Parameter
                    && let Some(&cluster) = self.cluster_ids.get(&m.parent_of(to))
                {
                    rule(&mut rules, "clust", cluster, edge, RED);
                }
            }
        }
        let stylesheet = rules.join("\n").replace('#', "%23");
        format!(
            "digraph G {{\nrankdir = TB;\ncompound = true;\nlabel = <<b>{graph_label}</b>>;\nlabelloc = t;\n\
             // Disable the tooltip.  Interestingly, \"\" doesn't work!\ntooltip = \" \";\n\
             // DOT graphs accept a stylesheet as a URI.  So naturally, an inline\n\
             // stylesheet is a data URI!\nstylesheet=<\n  data:text/css,\n  \
             @import url(https://fonts.googleapis.com/css?family=Roboto:400,700);\n  svg text {{\n    \
             font-family: 'Roboto';\n    font-size: 12px;\n  }}\n\n  {stylesheet}\n>\n\n"
        )
    }

    fn should_show_fusion_subcomputation(&self, i: usize) -> bool {
        self.m.node(i).and_then(|n| n.called.first().copied()).is_some_and(|c| self.should_show_subcomputation(c))
    }

    fn should_show_subcomputation(&self, c: usize) -> bool {
        let m = self.m;
        if let Some(fusion) = m.fusion_instr(c) {
            if !self.filter.show(m, fusion)
                || self.filter.some_or_all_operands_omitted(m, fusion)
                || !self.options.show_fusion_subcomputations
            {
                return false;
            }
        } else if match_trivial_computation(m, c).is_some() {
            return false;
        }
        // `show_while_subcomputations` is on in XProf.
        m.graph.comps.get(c).is_some_and(|comp| comp.instrs.iter().any(|&i| self.filter.show(m, i)))
    }

    /// `GetNodeForEdge`: a get-tuple-element's operand; a fusion drawn as a cluster's root.
    fn node_for_edge(&self, mut i: usize) -> usize {
        let m = self.m;
        if m.op(i) == Opcode::GetTupleElement
            && let Some(o) = m.operand(i, 0)
        {
            i = o;
        }
        let mut guard = 0;
        while m.op(i) == Opcode::Fusion && self.should_show_fusion_subcomputation(i) && guard <= m.graph.nodes.len() {
            guard += 1;
            match m.node(i).and_then(|n| n.called.first()).and_then(|&c| m.comp_root(c)) {
                Some(root) => i = root,
                None => break,
            }
        }
        i
    }

    fn dump_subcomputation(&mut self, subcomp: usize, parent_instr: usize) -> String {
        let m = self.m;
        let parent_is_fusion = m.op(parent_instr) == Opcode::Fusion;
        if !parent_is_fusion && let Some(root) = m.comp_root(subcomp) {
            let from = self.node_for_edge(root);
            self.insert_edge(from, Some(parent_instr));
            self.edges.push(format!(
                "{} -> {} [ltail=\"{}\", style=\"dashed\" tooltip=\"{} -> {}\"];",
                self.instruction_id(from),
                self.instruction_id(parent_instr),
                self.subcomputation_id(subcomp),
                m.comp_name(subcomp),
                m.name(parent_instr)
            ));
        }
        if self.cluster_ids.contains_key(&subcomp) {
            return String::new();
        }
        self.cluster_ids.insert(subcomp, self.next_cluster_id);
        self.next_cluster_id += 1;
        let id = self.subcomputation_id(subcomp);
        let (label, style) = if parent_is_fusion {
            let mut label = format!(
                "Fused expression for <b>{}</b><br/>{}",
                sanitize(m.name(parent_instr)),
                sanitize(&fusion_category(m, parent_instr))
            );
            let extra = self.extra_info(parent_instr);
            if !extra.is_empty() {
                label.push_str("<br/>");
                label.push_str(&extra);
            }
            let backend = self.backend_config(parent_instr);
            if !backend.is_empty() {
                label.push_str("<br/>");
                label.push_str(&backend);
            }
            let highlight = self.filter.highlight(m, parent_instr);
            let (fill, stroke) = if highlight { ("#ffcdd2", "#b71c1c") } else { ("#f5f5f5", "#c2c2c2") };
            (label, format!("style=\"rounded,filled,bold\"; fillcolor=\"{fill}\"; color=\"{stroke};\""))
        } else {
            (
                format!(
                    "Subcomputation for <b>{}</b><br/>{}",
                    sanitize(m.name(parent_instr)),
                    sanitize(m.comp_name(subcomp))
                ),
                "style=rounded; color=black;".to_string(),
            )
        };
        let body = self.dump_computation(subcomp);
        format!(
            "subgraph {id} {{\n{style}\nlabel = <{label}>;\nlabelloc = t;\ntooltip = \" \";\n{body}\n}}  // {id}\n\n"
        )
    }

    fn dump_computation(&mut self, c: usize) -> String {
        let m = self.m;
        let mut out = String::new();
        // XProf loads modules without preserving instruction ids: `instructions()` is the
        // proto's order.
        let instrs: Vec<usize> = m.graph.comps.get(c).map_or_else(Vec::new, |comp| comp.proto_order.clone());
        for i in instrs {
            if !self.filter.show(m, i) {
                continue;
            }
            let called: Vec<usize> = m.node(i).map_or_else(Vec::new, |n| n.called.clone());
            for subcomp in called {
                if self.should_show_subcomputation(subcomp) {
                    let text = self.dump_subcomputation(subcomp, i);
                    out.push_str(&text);
                }
            }
            let text = self.dump_instruction(i);
            out.push_str(&text);
        }
        out
    }

    fn dump_root_tag(&mut self) -> String {
        let m = self.m;
        let Some(root) = m.comp_root(self.computation) else { return String::new() };
        let from = self.node_for_edge(root);
        if !self.filter.show(m, from)
            || m.op(from) == Opcode::Constant
            || self.is_fused_broadcast_of_scalar_constant(from)
        {
            return String::new();
        }
        let to_id = self.subcomputation_id(self.computation);
        self.root_node_id = self.next_node_id;
        self.next_node_id += 1;
        self.insert_edge(from, None);
        self.edges.push(format!("{} -> {to_id} [tooltip=\" \"];", self.instruction_id(from)));
        format!("{to_id} [label=<ROOT>, shape=circle, tooltip=\" \", {}];\n", Color::Brown.node_attributes())
    }

    fn insert_edge(&mut self, from: usize, to: Option<usize>) {
        self.edge_ids.push((from, to, self.next_edge_id));
        self.next_edge_id += 1;
        if let Some(to) = to {
            *self.edge_counts.entry((from, to)).or_insert(0) += 1;
        }
    }

    /// `IsFusedBroadcastOfConstantEffectiveScalar`.
    fn is_fused_broadcast_of_scalar_constant(&self, i: usize) -> bool {
        let m = self.m;
        m.is_fusion_comp(m.parent_of(i))
            && m.op(i) == Opcode::Broadcast
            && m.operands(i).len() == 1
            && m.operand(i, 0)
                .is_some_and(|o| m.op(o) == Opcode::Constant && m.shape(o).is_some_and(is_effective_scalar))
    }

    /// `TryGetFusionParameterConstant`: the constant a fused parameter is bound to.
    fn fusion_parameter_constant(&self, i: usize) -> Option<usize> {
        let m = self.m;
        if m.op(i) != Opcode::Parameter || !m.is_fused(i) {
            return None;
        }
        let fusion = m.fusion_instr(m.parent_of(i))?;
        let number = usize::try_from(m.node(i)?.hlo.parameter_number).ok()?;
        let operand = m.operand(fusion, number)?;
        (m.op(operand) == Opcode::Constant).then_some(operand)
    }

    /// `ShouldMergeIntoUsers`: get-tuple-elements, fused parameters bound to constants and
    /// big tuple parameters only read by get-tuple-elements are drawn inside their users.
    fn should_merge_into_users(&self, i: usize) -> bool {
        let m = self.m;
        if (m.op(i) == Opcode::GetTupleElement && !m.is_root(i)) || self.fusion_parameter_constant(i).is_some() {
            return true;
        }
        const MIN_USERS_TO_OMIT: usize = 3;
        m.op(i) == Opcode::Parameter
            && m.shape(i).is_some_and(Shape::is_tuple)
            && !m.is_fused(i)
            && m.users(i).iter().filter(|&&u| self.filter.show(m, u)).count() > MIN_USERS_TO_OMIT
            && m.users(i).iter().all(|&u| !self.filter.show(m, u) || m.op(u) == Opcode::GetTupleElement)
    }

    fn dump_instruction(&mut self, i: usize) -> String {
        let m = self.m;
        if (m.op(i) == Opcode::Constant || self.is_fused_broadcast_of_scalar_constant(i)) && !m.is_root(i) {
            return String::new();
        }
        if self.should_merge_into_users(i) {
            return String::new();
        }
        if m.op(i) == Opcode::Fusion && self.should_show_fusion_subcomputation(i) {
            return String::new();
        }
        self.node_ids.insert(i, self.next_node_id);
        self.next_node_id += 1;
        let mut shape = if m.op(i) == Opcode::While { "ellipse" } else { "rect" };
        let label = self.node_label(i);
        let metadata = self.node_metadata(i);
        let backend = self.backend_config(i);
        let extra = self.extra_info(i);
        let inlined = self.inlined_operands(i);
        let trivial = self.trivial_computation_text(i);
        self.add_incoming_edges(i);
        let mut color = self.color(i);
        if self.filter.deemphasized(m, i) {
            color = Color::DashedBorder;
        }
        if self.filter.highlight(m, i) {
            shape = "diamond";
            color = Color::DarkRed;
        }
        let mut body = label;
        for part in [trivial, extra, inlined, backend] {
            if !part.is_empty() {
                body.push_str("<br/>");
                body.push_str(&part);
            }
        }
        format!(
            "{} [label=<{body}>, shape={shape}, tooltip=\"{metadata}\", {}];\n",
            self.instruction_id(i),
            color.node_attributes()
        )
    }

    /// `GetInstructionNodeInlinedOperands`: constants, merged parameters and
    /// get-tuple-elements written into the node.
    fn inlined_operands(&self, i: usize) -> String {
        let m = self.m;
        let stringify_constant = |constant: usize, shape: &Shape| -> String {
            let Some(c) = m.node(constant) else { return String::new() };
            if shape.is_array() && shape.dimensions.contains(&0) {
                return format!("{{}} ({})", human_string(&c.hlo.shape));
            }
            if shape.is_array()
                && c.hlo.shape.elements() <= 8
                && let Some(literal) = &c.hlo.literal
            {
                let mut text = String::new();
                print_literal(literal, &mut text);
                if text.len() <= 64 {
                    return format!("{} {text}", human_string(shape));
                }
            }
            let name = if c.hlo.name.starts_with("constant") {
                c.hlo.name.clone()
            } else {
                format!("constant {}", c.hlo.name)
            };
            format!("{name} {}", human_string(shape))
        };
        let operands = m.operands(i);
        let mut lines: Vec<String> = Vec::new();
        const MAX_OPERANDS_SHOWN: usize = 32;
        for (k, &operand) in operands.iter().enumerate() {
            let text = if m.op(operand) == Opcode::Constant {
                m.shape(operand).map(|s| stringify_constant(operand, s))
            } else if self.is_fused_broadcast_of_scalar_constant(operand) {
                match (m.operand(operand, 0), m.shape(operand)) {
                    (Some(constant), Some(shape)) => Some(stringify_constant(constant, shape)),
                    _ => None,
                }
            } else if self.should_merge_into_users(operand) {
                if m.op(operand) == Opcode::Parameter {
                    match self.fusion_parameter_constant(operand) {
                        Some(constant) => m.shape(constant).map(|s| stringify_constant(constant, s)),
                        None => Some(format!("Parameter {}", m.node(operand).map_or(0, |n| n.hlo.parameter_number))),
                    }
                } else if m.op(operand) == Opcode::GetTupleElement {
                    Some(self.tuple_element_text(operand))
                } else {
                    Some(m.name(operand).to_string())
                }
            } else {
                None
            };
            if let Some(text) = text {
                if operands.len() > 1 {
                    lines.push(format!("<b>operand {k}</b> = {text}"));
                } else {
                    lines.push(format!("<b>operand</b> = {text}"));
                }
            }
            if lines.len() == MAX_OPERANDS_SHOWN && k + 1 < operands.len() {
                lines.push("...".to_string());
                break;
            }
        }
        if m.op(i) == Opcode::Parameter
            && m.is_fused(i)
            && let Some(fusion) = m.fusion_instr(m.parent_of(i))
            && let Some(number) = m.node(i).and_then(|n| usize::try_from(n.hlo.parameter_number).ok())
            && let Some(input) = m.operand(fusion, number)
            && m.op(input) == Opcode::GetTupleElement
        {
            lines.push(self.tuple_element_text(input));
        }
        lines.join("<br/>")
    }

    /// `tuple-element 3 of arg_tuple.6 u32[]`.
    fn tuple_element_text(&self, gte: usize) -> String {
        let m = self.m;
        let index = m.node(gte).map_or(0, |n| n.hlo.tuple_index);
        let tuple = m.operand(gte, 0).map_or("", |t| m.name(t));
        let shape = m.shape(gte).map(human_string_with_layout).unwrap_or_default();
        format!("tuple-element {index} of {tuple} {shape}")
    }

    /// `GetInstructionColor` (no sharding colors).
    fn color(&self, i: usize) -> Color {
        let m = self.m;
        let parameter_color = if m.shape(i).is_some_and(is_small) { Color::Orange } else { Color::DarkOrange };
        let merged_parameter = m.operands(i).iter().any(|&o| {
            m.op(o) == Opcode::Parameter
                && self.should_merge_into_users(o)
                && self.fusion_parameter_constant(o).is_none()
        });
        if merged_parameter {
            return parameter_color;
        }
        self.opcode_color(i, parameter_color, 0)
    }

    fn opcode_color(&self, i: usize, parameter_color: Color, depth: usize) -> Color {
        let m = self.m;
        match m.opcode(i) {
            "abs"
            | "asin"
            | "asinh"
            | "acos"
            | "acosh"
            | "add"
            | "and"
            | "atan2"
            | "atanh"
            | "bitcast-convert"
            | "ceil"
            | "clamp"
            | "count-leading-zeros"
            | "compare"
            | "complex"
            | "convert"
            | "cosine"
            | "cosh"
            | "divide"
            | "erf"
            | "exponential"
            | "exponential-minus-one"
            | "floor"
            | "imag"
            | "iota"
            | "is-finite"
            | "log"
            | "log-plus-one"
            | "maximum"
            | "minimum"
            | "multiply"
            | "negate"
            | "not"
            | "popcnt"
            | "or"
            | "xor"
            | "power"
            | "real"
            | "reduce-precision"
            | "remainder"
            | "rng"
            | "rng-get-and-update-state"
            | "rng-bit-generator"
            | "round-nearest-afz"
            | "round-nearest-even"
            | "rsqrt"
            | "select"
            | "shift-left"
            | "shift-right-arithmetic"
            | "shift-right-logical"
            | "stochastic-convert"
            | "logistic"
            | "sign"
            | "sine"
            | "sinh"
            | "slice"
            | "sort"
            | "topk"
            | "sqrt"
            | "cbrt"
            | "subtract"
            | "tan"
            | "tanh" => Color::White,
            "add-dependency" | "after-all" | "get-tuple-element" | "opt-barrier" | "pad" | "tuple" | "constant" => {
                Color::White
            }
            "broadcast" | "dynamic-update-slice" => Color::Yellow,
            "concatenate" | "dynamic-slice" | "reshape" | "dynamic-reshape" | "reverse" | "transpose" | "copy"
            | "copy-start" | "copy-done" => Color::Green,
            "bitcast" => {
                if m.is_fused(i) {
                    Color::Green
                } else {
                    Color::White
                }
            }
            "async-start" | "async-update" | "async-done" => {
                let wrapped = m.node(i).and_then(|n| n.called.first()).and_then(|&c| m.comp_root(c));
                match wrapped {
                    Some(w) if depth < 8 => {
                        let color = if m.shape(w).is_some_and(is_small) { Color::Orange } else { Color::DarkOrange };
                        self.opcode_color(w, color, depth + 1)
                    }
                    _ => Color::White,
                }
            }
            "convolution" | "dot" | "ragged-dot" | "scaled-dot" | "fft" | "triangular-solve" | "cholesky" => {
                Color::DarkBlue
            }
            "parameter" => parameter_color,
            "batch-norm-grad"
            | "batch-norm-inference"
            | "batch-norm-training"
            | "reduce"
            | "reduce-window"
            | "scan"
            | "scatter"
            | "select-and-scatter"
            | "gather" => Color::Purple,
            "domain" | "fusion" | "map" | "get-dimension-size" | "set-dimension-size" => Color::Gray,
            "all-gather"
            | "all-gather-start"
            | "all-gather-done"
            | "all-reduce"
            | "reduce-scatter"
            | "all-reduce-start"
            | "all-reduce-done"
            | "all-to-all"
            | "collective-broadcast"
            | "collective-permute"
            | "collective-permute-start"
            | "collective-permute-done"
            | "infeed"
            | "outfeed"
            | "partition-id"
            | "ragged-all-to-all"
            | "recv"
            | "recv-done"
            | "send"
            | "send-done"
            | "replica-id" => Color::Brown,
            "call" | "conditional" | "custom-call" | "while" => Color::DarkGreen,
            _ => Color::White,
        }
    }

    /// `GetInstructionNodeLabel`.
    fn node_label(&self, i: usize) -> String {
        let m = self.m;
        let Some(node) = m.node(i) else { return String::new() };
        if node.op == Opcode::Parameter {
            return format!("<b>Parameter {}</b>", node.hlo.parameter_number);
        }
        if node.hlo.name.starts_with(node.hlo.opcode.as_str()) {
            return format!("<b>{}</b>", sanitize(&node.hlo.name));
        }
        let mut extended = node.hlo.opcode.clone();
        if node.op == Opcode::Fusion {
            extended.push(':');
            extended.push_str(&node.hlo.fusion_kind);
        }
        format!("<b>{}</b><br/>{}", sanitize(&node.hlo.name), sanitize(&extended))
    }

    /// `GetInstructionNodeMetadata`: the tooltip (op name, type, source, stack frames).
    fn node_metadata(&self, i: usize) -> String {
        let m = self.m;
        let Some(node) = m.node(i) else { return String::new() };
        let md = &node.hlo.metadata;
        let mut lines: Vec<String> = Vec::new();
        if !md.op_name.is_empty() {
            lines.push(sanitize(&md.op_name));
        }
        if !md.op_type.is_empty() {
            lines.push(format!("op_type: {}", sanitize(&md.op_type)));
        }
        if !md.source_file.is_empty() && md.source_line != 0 {
            lines.push(format!("source: {}:{}", md.source_file, md.source_line));
        }
        if let Some(index) = &m.graph.stack_frames {
            let at = |id: i32| id.checked_sub(1).and_then(|i| usize::try_from(i).ok());
            let mut frame_id = md.stack_frame_id;
            let mut guard = 0usize;
            while frame_id > 0 && guard <= index.stack_frames.len() {
                guard += 1;
                let Some(&(location, parent)) = at(frame_id).and_then(|k| index.stack_frames.get(k)) else {
                    break;
                };
                let Some(&(file, function, line, column)) = at(location).and_then(|k| index.file_locations.get(k))
                else {
                    break;
                };
                let file = at(file).and_then(|k| index.file_names.get(k)).map_or("", String::as_str);
                let function = at(function).and_then(|k| index.function_names.get(k)).map_or("", String::as_str);
                if file.is_empty() && function.is_empty() && line == 0 && column == 0 {
                    break;
                }
                let column = if column == 0 { String::new() } else { format!(":{column}") };
                lines.push(format!("{file}:{function}:{line}{column}"));
                frame_id = parent;
            }
        }
        lines.join("\n")
    }

    /// `GetInstructionNodeBackendConfig`: a cuDNN convolution's config summarized
    /// (`activation_mode`, `algo`, non-default scales), else the raw config when
    /// `show_metadata` is on.
    ///
    /// XLA reads the config as its `GpuBackendConfig` and prints it again: an empty
    /// `wait_on_operation_queues` newer compilers write is dropped. XProf's build
    /// summarizes cuDNN convolutions but not cuBLAS GEMMs (their raw config is shown, as
    /// in XProf's outputs).
    fn backend_config(&self, i: usize) -> String {
        let Some(node) = self.m.node(i) else { return String::new() };
        let raw = String::from_utf8_lossy(&node.hlo.backend_config);
        if node.op == Opcode::CustomCall
            && DNN_CONVOLUTION_TARGETS.contains(&node.hlo.custom_call_target.as_str())
            && let Ok(config) = serde_json::from_str::<serde_json::Value>(&raw)
        {
            let props = cudnn_conv_props(config.get("cudnn_conv_backend_config").unwrap_or(&serde_json::Value::Null));
            if !props.is_empty() {
                let joined: Vec<String> =
                    props.iter().map(|(k, v)| if k.is_empty() { v.clone() } else { format!("{k}={v}") }).collect();
                let lead = if props.len() > 1 { "<br/>" } else { "" };
                return format!("{lead}{}", joined.join("<br/>"));
            }
        }
        if !self.options.show_backend_config || raw.is_empty() {
            return String::new();
        }
        format!("backend_config=\"{}\"", raw.replace("\"wait_on_operation_queues\":[],", ""))
    }

    /// `GetInstructionNodeExtraInfo`: the producer of a called computation's parameter,
    /// the instruction's attributes and its shape.
    fn extra_info(&self, i: usize) -> String {
        let m = self.m;
        let Some(node) = m.node(i) else { return String::new() };
        let mut lines: Vec<String> = Vec::new();
        let parent = m.parent_of(i);
        let mut call_callers = m.callers_with(parent, Opcode::Call);
        let unique_caller = match (call_callers.next(), call_callers.next()) {
            (Some(c), None) => Some(c),
            _ => None,
        };
        if let Some(caller) = unique_caller
            && node.op == Opcode::Parameter
            && let Some(operand) = usize::try_from(node.hlo.parameter_number).ok().and_then(|k| m.operand(caller, k))
        {
            let producer = self.interesting_producer(operand);
            let producer_comp = m.parent_of(producer);
            let place = if producer_comp == m.graph.entry {
                "the ENTRY computation".to_string()
            } else {
                sanitize(m.comp_name(producer_comp))
            };
            lines.push(format!("<i>from {} in {place}</i>", sanitize(m.name(producer))));
        }
        for line in extra_attributes(&m.graph, node, true, false, true) {
            // XProf clears infeed/outfeed configs before drawing.
            if line.starts_with("infeed_config=") || line.starts_with("outfeed_config=") {
                continue;
            }
            const MAX_DEVICE_ID_FIELD_LEN: usize = 128;
            if (line.starts_with("replica_groups=")
                || line.starts_with("source_target_pairs=")
                || line.starts_with("control-predecessors="))
                && line.len() > MAX_DEVICE_ID_FIELD_LEN
            {
                lines.push(sanitize(&format!("{}...", cut(&line, MAX_DEVICE_ID_FIELD_LEN - 3))));
            } else if line.starts_with("feature_group_count=") {
                lines.push(format!("<b>{}</b>", sanitize(&line)));
            } else {
                lines.push(sanitize(&line));
            }
        }
        if node.op != Opcode::Fusion || !self.should_show_fusion_subcomputation(i) {
            let shape = &node.hlo.shape;
            let multidim = shape_is_multidim(shape);
            let text = if node.op != Opcode::Tuple && multidim {
                human_string_with_layout(shape)
            } else {
                human_string(shape)
            };
            const MAX_SHAPE_LEN: usize = 64;
            let text = if text.len() > MAX_SHAPE_LEN { format!("{}...", cut(&text, MAX_SHAPE_LEN - 3)) } else { text };
            lines.push(sanitize(&text));
        }
        lines.join("<br/>")
    }

    /// `GetInterestingProducer`: follows bitcasts, copies, tuple/get-tuple-element pairs
    /// and calls back to the instruction that really produced a value.
    fn interesting_producer(&self, mut i: usize) -> usize {
        let m = self.m;
        let mut tuple_index: Vec<i64> = Vec::new();
        for _ in 0..=m.graph.nodes.len() {
            let next = match m.op(i) {
                Opcode::Bitcast | Opcode::Copy => m.operand(i, 0),
                Opcode::GetTupleElement => {
                    tuple_index.push(m.node(i).map_or(0, |n| n.hlo.tuple_index));
                    m.operand(i, 0)
                }
                Opcode::Tuple => {
                    let Some(&index) = tuple_index.last() else { return i };
                    let Some(next) = usize::try_from(index).ok().and_then(|k| m.operand(i, k)) else { return i };
                    tuple_index.pop();
                    Some(next)
                }
                Opcode::Call => m.node(i).and_then(|n| n.called.first()).and_then(|&c| m.comp_root(c)),
                _ => return i,
            };
            match next {
                Some(n) => i = n,
                None => return i,
            }
        }
        i
    }

    fn add_incoming_edges(&mut self, i: usize) {
        let m = self.m;
        let operand_count = m.operands(i).len();
        let add_edge = |this: &mut Self, from_raw: usize, operand_num: usize, control: bool| {
            const MAX_EDGES_BETWEEN_TWO_NODES: usize = 64;
            // XLA counts edges by the unresolved source.
            if this.edge_counts.get(&(from_raw, i)).copied().unwrap_or(0) > MAX_EDGES_BETWEEN_TWO_NODES {
                return;
            }
            let from = this.node_for_edge(from_raw);
            if !this.filter.show(m, from)
                || m.op(from) == Opcode::Constant
                || this.is_fused_broadcast_of_scalar_constant(from)
                || this.should_merge_into_users(from)
            {
                return;
            }
            this.insert_edge(from, Some(i));
            let label = if control {
                "style=\"dotted\" color=\"gray\" label=\"ctrl\"".to_string()
            } else if operand_count > 1 {
                format!(" headlabel=\"{operand_num}\", labeldistance=2")
            } else {
                String::new()
            };
            let arrow = if m.shape(from).is_some_and(is_small) { "empty" } else { "normal" };
            let edge = format!(
                "{} -> {} [arrowhead={arrow} tooltip=\"{} -> {}\" {label}];",
                this.instruction_id(from),
                this.instruction_id(i),
                m.name(from),
                m.name(i)
            );
            this.edges.push(edge);
        };
        if m.op(i) == Opcode::Parameter && m.is_fused(i) {
            if m.parent_of(i) != self.computation
                && let Some(fusion) = m.fusion_instr(m.parent_of(i))
                && let Some(number) = m.node(i).and_then(|n| usize::try_from(n.hlo.parameter_number).ok())
                && let Some(input) = m.operand(fusion, number)
            {
                add_edge(self, input, 0, false);
            }
        } else {
            let operands: Vec<usize> = m.operands(i).to_vec();
            for (k, operand) in operands.into_iter().enumerate() {
                add_edge(self, operand, k, false);
            }
            let preds: Vec<usize> = m.node(i).map_or_else(Vec::new, |n| n.control_preds.clone());
            for pred in preds {
                add_edge(self, pred, 0, true);
            }
        }
    }

    /// `GetInstructionTrivialComputationStr`: `Subcomputation: <b>add</b>`.
    fn trivial_computation_text(&self, i: usize) -> String {
        let m = self.m;
        let Some(node) = m.node(i) else { return String::new() };
        if node.op == Opcode::Fusion {
            return String::new();
        }
        let mut lines = Vec::new();
        for (k, &c) in node.called.iter().enumerate() {
            let Some(kind) = match_trivial_computation(m, c) else { continue };
            if node.called.len() == 1 {
                lines.push(format!("Subcomputation: <b>{}</b>", sanitize(kind)));
            } else {
                lines.push(format!("Subcomputation {k}: <b>{}</b>", sanitize(kind)));
            }
        }
        lines.join("<br/>")
    }
}

/// `IsCustomCallToDnnConvolution` targets.
const DNN_CONVOLUTION_TARGETS: &[&str] = &[
    "__cudnn$convForward",
    "__cudnn$convBackwardInput",
    "__cudnn$convBackwardFilter",
    "__cudnn$convBiasActivationForward",
    "__cudnn$convForwardGraph",
];

/// absl's `StrCat` of a double (`%.6g`).
fn str_cat_double(v: f64) -> String {
    oxprof_wire::cxx_printf::format_g(v, 6)
}

/// A number in proto JSON (numbers or numeric strings).
fn json_f64(v: Option<&serde_json::Value>) -> f64 {
    match v {
        Some(serde_json::Value::Number(n)) => n.as_f64().unwrap_or(0.0),
        Some(serde_json::Value::String(s)) => s.parse().unwrap_or(0.0),
        _ => 0.0,
    }
}

/// `ExtractCudnnConvBackendConfigProps`.
fn cudnn_conv_props(config: &serde_json::Value) -> Vec<(String, String)> {
    let mut props = Vec::new();
    let conv_result_scale = match config.get("conv_result_scale") {
        None => 0.0,
        v => json_f64(v),
    };
    if conv_result_scale != 1.0 {
        props.push(("conv_result_scale".to_string(), str_cat_double(conv_result_scale)));
    }
    let side_input_scale = json_f64(config.get("side_input_scale"));
    if side_input_scale != 0.0 && side_input_scale != 1.0 {
        props.push(("side_input_scale".to_string(), str_cat_double(side_input_scale)));
    }
    let mode = config.get("activation_mode").and_then(|v| v.as_str()).unwrap_or("kNone");
    if mode == "kLeakyRelu" {
        props.push(("leakyrelu_alpha".to_string(), str_cat_double(json_f64(config.get("leakyrelu_alpha")))));
    }
    let mode_name = match mode {
        "kNone" => "none",
        "kSigmoid" => "sigmoid",
        "kRelu" => "relu",
        "kRelu6" => "relu6",
        "kReluX" => "reluX",
        "kTanh" => "tanh",
        "kBandPass" => "bandpass",
        "kElu" => "elu",
        "kLeakyRelu" => "leakyrelu",
        "kGeluExact" => "geluexact",
        other => other,
    };
    props.push(("activation_mode".to_string(), mode_name.to_string()));
    // `AlgorithmDesc::ToString`: `eng<id>{k=v,...}`, knobs by key.
    let algorithm = config.get("algorithm");
    let algo_id = algorithm.and_then(|a| a.get("algo_id")).map_or(0.0, |v| json_f64(Some(v))) as i64;
    let mut knobs: Vec<(i64, i64)> = algorithm
        .and_then(|a| a.get("tuning_knobs"))
        .and_then(|k| k.as_object())
        .map(|k| k.iter().map(|(key, v)| (key.parse().unwrap_or(0), json_f64(Some(v)) as i64)).collect())
        .unwrap_or_default();
    knobs.sort();
    let knobs: Vec<String> = knobs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    props.push(("algo".to_string(), format!("eng{algo_id}{{{}}}", knobs.join(","))));
    props
}

/// Whether any array in the shape has more than one dimension.
fn shape_is_multidim(shape: &Shape) -> bool {
    if shape.is_tuple() {
        shape.tuple_shapes.iter().any(shape_is_multidim)
    } else {
        shape.is_array() && shape.dimensions.len() > 1
    }
}

/// `HloFusionInstruction::ToCategory`.
fn fusion_category(m: &DotModule, i: usize) -> String {
    match m.node(i).map_or("", |n| n.hlo.fusion_kind.as_str()) {
        "kLoop" => "loop fusion".into(),
        "kInput" => "input fusion".into(),
        "kOutput" => "output fusion".into(),
        "kCustom" => "custom fusion".into(),
        other => other.to_string(),
    }
}

/// XProf's `Plot`: the DOT of the computation named `node_name` (whole), else of the
/// neighbourhood of the instruction named so. Errors are XProf's messages.
pub fn render(module: &HloModule, node_name: &str, options: RenderOptions) -> Result<String, String> {
    if node_name.is_empty() {
        return Err("node_name should not be empty".into());
    }
    let m = DotModule::new(module).ok_or_else(|| "the HLO module does not link (unknown ids)".to_string())?;
    let instr = m.find_instruction(node_name);
    let comp = m.find_computation(node_name);
    if let Some(c) = comp {
        return Ok(Dumper::new(&m, c, String::new(), options, NodeFilter::all()).dump());
    }
    let Some(i) = instr else {
        return Err(format!("Couldn't find HloInstruction or HloComputation named {node_name}."));
    };
    let label = format!("Neighborhood of {} nodes around {}", options.radius, m.name(i));
    let filter = NodeFilter::radius_around(&m, i, options.radius);
    Ok(Dumper::new(&m, m.parent_of(i), label, options, filter).dump())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{HloComputation, HloInstruction, Literal};

    use crate::test_support::{f32_shape as f32s, hlo_instr as instr};

    fn constant(name: &str, id: i64, value: f32) -> HloInstruction {
        let mut c = instr(name, "constant", id, &[], f32s(&[]));
        c.literal = Some(Literal { shape: f32s(&[]), f32s: vec![value], ..Default::default() });
        c
    }

    /// ```text
    /// fused:  q = parameter(0); two = constant(2); b = broadcast(two); ROOT m = multiply(q, b)
    /// sum:    x, y = parameters; ROOT s = add(x, y)                      (trivial: "add")
    /// main:   p = parameter(0); f = fusion(p) calls=fused; zero = constant(0);
    ///         ROOT r = reduce(f, zero) to_apply=sum
    /// ```
    fn module() -> HloModule {
        let q = instr("q", "parameter", 1, &[], f32s(&[4]));
        let two = constant("two", 2, 2.0);
        let b = instr("b", "broadcast", 3, &[2], f32s(&[4]));
        let m = instr("m", "multiply", 4, &[1, 3], f32s(&[4]));
        let x = instr("x", "parameter", 5, &[], f32s(&[]));
        let mut y = instr("y", "parameter", 6, &[], f32s(&[]));
        y.parameter_number = 1;
        let s = instr("s", "add", 7, &[5, 6], f32s(&[]));
        let mut p = instr("p", "parameter", 8, &[], f32s(&[4]));
        p.metadata.op_name = "jit(f)/<input>".into();
        let mut f = instr("f", "fusion", 9, &[8], f32s(&[4]));
        f.fusion_kind = "kLoop".into();
        f.called_computation_ids = vec![10];
        let zero = constant("zero", 10, 0.0);
        let mut r = instr("r", "reduce", 11, &[9, 10], f32s(&[]));
        r.dimensions = vec![0];
        r.called_computation_ids = vec![11];
        let comp = |name: &str, id: i64, root_id: i64, instructions: Vec<HloInstruction>| HloComputation {
            name: name.into(),
            id,
            root_id,
            instructions,
            ..Default::default()
        };
        HloModule {
            name: "jit_f".into(),
            entry_computation_name: "main".into(),
            entry_computation_id: 20,
            computations: vec![
                comp("fused", 10, 4, vec![q, two, b, m]),
                comp("sum", 11, 7, vec![x, y, s]),
                comp("main", 20, 11, vec![p, f, zero, r]),
            ],
            ..Default::default()
        }
    }

    /// The body after the stylesheet.
    fn body(dot: &str) -> &str {
        dot.split_once("\n>\n\n").map_or("", |(_, b)| b)
    }

    #[test]
    fn neighbourhood_draws_fusions_as_clusters_and_inlines_constants() {
        let dot = render(&module(), "r", RenderOptions::default()).unwrap();
        assert!(dot.starts_with(
            "digraph G {\nrankdir = TB;\ncompound = true;\n\
             label = <<b>Neighborhood of 3 nodes around r<br/>Computation main<br/>ENTRY computation</b>>;\n"
        ));
        // Edge 1 (p -> fused parameter q) lights up when p, q or the cluster is hovered.
        assert!(dot.contains("  %23clust1:hover ~ %23edge1 text { fill: %23d32f2f; }\n"), "{dot}");
        assert!(dot.contains("  %23clust1:hover ~ %23edge3 text { fill: %231976d2; }\n"), "{dot}");
        let expected = "\
8 [label=<<b>Parameter 0</b><br/>f32[4]>, shape=rect, tooltip=\"jit(f)/&lt;input&gt;\", style=\"filled\", fontcolor=\"black\", color=\"#cbae82\", fillcolor=\"#ffe0b2\"];
subgraph cluster_1 {
style=\"rounded,filled,bold\"; fillcolor=\"#f5f5f5\"; color=\"#c2c2c2;\"
label = <Fused expression for <b>f</b><br/>loop fusion<br/>kind=kLoop>;
labelloc = t;
tooltip = \" \";
1 [label=<<b>Parameter 0</b><br/>f32[4]>, shape=rect, tooltip=\"\", style=\"filled\", fontcolor=\"black\", color=\"#cbae82\", fillcolor=\"#ffe0b2\"];
4 [label=<<b>m</b><br/>multiply<br/>f32[4]<br/><b>operand 1</b> = f32[4] 2>, shape=rect, tooltip=\"\", style=\"filled\", fontcolor=\"black\", color=\"#9e9e9e\", fillcolor=\"white\"];

}  // cluster_1

11 [label=<<b>r</b><br/>reduce<br/>Subcomputation: <b>add</b><br/>dimensions={0}<br/>f32[]<br/><b>operand 1</b> = f32[] 0>, shape=diamond, tooltip=\"\", style=\"filled\", fontcolor=\"white\", color=\"#7f0000\", fillcolor=\"#b71c1c\"];
cluster_3 [label=<ROOT>, shape=circle, tooltip=\" \", style=\"filled\", fontcolor=\"black\", color=\"#8c7b75\", fillcolor=\"#bcaaa4\"];
8 -> 1 [arrowhead=empty tooltip=\"p -> q\" ];
1 -> 4 [arrowhead=empty tooltip=\"q -> m\"  headlabel=\"0\", labeldistance=2];
4 -> 11 [arrowhead=empty tooltip=\"m -> r\"  headlabel=\"0\", labeldistance=2];
11 -> cluster_3 [tooltip=\" \"];
}";
        assert_eq!(body(&dot), expected);
    }

    #[test]
    fn a_small_radius_dashes_nodes_whose_operands_are_cut() {
        // Radius 1 around r: f and zero are in, p is not, so f's operand is omitted: the
        // fusion is drawn as one dashed node (no cluster).
        let dot = render(&module(), "r", RenderOptions { radius: 1, ..Default::default() }).unwrap();
        let body = body(&dot);
        assert!(!body.contains("subgraph"), "{body}");
        assert!(body.starts_with("9 [label=<<b>f</b><br/>fusion:kLoop<br/>kind=kLoop<br/>f32[4]>, shape=rect, tooltip=\"\", style=\"filled,dashed\", fontcolor=\"#757575\", color=\"#757575\", fillcolor=\"white\"];\n"), "{body}");
        assert!(
            body.contains("9 -> 11 [arrowhead=empty tooltip=\"f -> r\"  headlabel=\"0\", labeldistance=2];"),
            "{body}"
        );
        assert!(!body.contains("tooltip=\"p -> "), "{body}");
    }

    #[test]
    fn merged_fusions_are_single_nodes() {
        let options = RenderOptions { show_fusion_subcomputations: false, ..Default::default() };
        let dot = render(&module(), "f", options).unwrap();
        assert!(!dot.contains("subgraph"), "{dot}");
        // The highlighted fusion itself.
        assert!(dot.contains("9 [label=<<b>f</b><br/>fusion:kLoop<br/>kind=kLoop<br/>f32[4]>, shape=diamond"), "{dot}");
        assert!(dot.contains("8 -> 9 [arrowhead=empty tooltip=\"p -> f\" ];"), "{dot}");
    }

    #[test]
    fn computations_draw_whole_and_names_match_like_xprof() {
        let m = module();
        let whole = render(&m, "MAIN", RenderOptions::default()).unwrap();
        assert!(whole.contains("label = <<b><br/>Computation main<br/>ENTRY computation</b>>;"), "{whole}");
        // Inside a fused computation the label names the fusion.
        let inner = render(&m, "%M", RenderOptions::default()).unwrap();
        assert!(inner.contains("Computation fused (in fusion instruction f)</b>>;"), "{inner}");
        assert_eq!(
            render(&m, "nope", RenderOptions::default()).unwrap_err(),
            "Couldn't find HloInstruction or HloComputation named nope."
        );
        assert_eq!(render(&m, "", RenderOptions::default()).unwrap_err(), "node_name should not be empty");
    }

    #[test]
    fn broken_modules_are_errors_not_panics() {
        let mut m = module();
        m.computations[2].instructions[3].operand_ids = vec![99];
        assert!(render(&m, "r", RenderOptions::default()).is_err());
        // Parameter numbers past the fusion's operands and huge radii are tolerated.
        let mut m = module();
        m.computations[0].instructions[0].parameter_number = 7;
        assert!(render(&m, "m", RenderOptions { radius: 1_000_000, ..Default::default() }).is_ok());
    }
}
