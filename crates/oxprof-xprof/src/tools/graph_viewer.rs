//! `graph_viewer` views of an HLO module: XLA's `HloModule::ToString` with the print
//! options XProf's graph viewer uses (`short_txt`, `long_txt`, and the metadata-rich
//! `me_graph`), the Graphviz graph of a node's neighbourhood ([`graph_dot`], wrapped by
//! [`graph_html`] in XProf's page), the protobuf text of the module's proto
//! ([`proto_text`]) and the operand/user names of a node ([`adjacent_nodes`]).
//!
//! Layout of the text (`HloModule::Print`):
//!
//! ```text
//! HloModule <name>, is_scheduled=true, entry_computation_layout={(..)->..}, frontend_attributes={..}
//! [FileNames / FunctionNames / FileLocations / StackFrames tables, with metadata only]
//!
//! <computation>          one per computation, callees before callers (DFS post order),
//!   <instruction>        in schedule order when scheduled, else in post order
//!   ROOT <instruction>
//! }
//!
//! ENTRY <entry computation> ...
//! ```

pub use oxprof_hlo::DotRenderOptions;
use oxprof_hlo::{HloGraph, PrintOptions, hlo_proto_text, print_instruction, print_shape_with_layout, render_dot};
use oxprof_hlo::{HloModule, ModuleExtras, Shape};
use oxprof_wire::cxx_printf::c_escape;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// Which text view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// `short_txt`: `HloPrintOptions::ShortParsable()`.
    Short,
    /// `long_txt`: default print options, large constants included.
    Long,
    /// `me_graph` as XProf 2.24.2 answers it: `long_txt` with metadata and the stack
    /// frame index.
    Metadata,
}

/// A shape without its layouts (`ShapeUtil::HumanString`).
fn without_layout(shape: &Shape) -> Shape {
    Shape {
        element_type: shape.element_type,
        dimensions: shape.dimensions.clone(),
        is_dynamic_dimension: shape.is_dynamic_dimension.clone(),
        tuple_shapes: shape.tuple_shapes.iter().map(without_layout).collect(),
        layout: None,
    }
}

fn human_string(shape: &Shape) -> String {
    let mut out = String::new();
    print_shape_with_layout(&without_layout(shape), &mut out);
    out
}

fn with_layout(shape: &Shape) -> String {
    let mut out = String::new();
    print_shape_with_layout(shape, &mut out);
    out
}

fn shape_index(index: &[i64]) -> String {
    let parts: Vec<String> = index.iter().map(i64::to_string).collect();
    format!("{{{}}}", parts.join(","))
}

/// `FrontendAttributesToString`: sorted `key=value`, values that look like JSON objects
/// unquoted.
fn frontend_attributes(attributes: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = attributes.iter().collect();
    sorted.sort();
    let parts: Vec<String> = sorted
        .iter()
        .map(|(k, v)| {
            let t = v.trim();
            if t.starts_with('{') && t.ends_with('}') { format!("{k}={v}") } else { format!("{k}=\"{v}\"") }
        })
        .collect();
    format!("{{{}}}", parts.join(","))
}

/// `HloModule::MakeComputationPostOrder(dfs_postorder=true)`: for each computation no
/// instruction calls, in module order, its embedded computations (depth-first, callees
/// first, each once) and then itself.
fn computation_post_order(graph: &HloGraph, proto_order: &[Vec<usize>]) -> Vec<usize> {
    let called: HashSet<usize> = graph.nodes.iter().flat_map(|n| n.called.iter().copied()).collect();
    let mut added: HashSet<usize> = HashSet::new();
    let mut order = Vec::with_capacity(graph.comps.len());
    for (root, _) in graph.comps.iter().enumerate() {
        if called.contains(&root) {
            continue;
        }
        for embedded in embedded_computations(graph, proto_order, root) {
            if added.insert(embedded) {
                order.push(embedded);
            }
        }
        if added.insert(root) {
            order.push(root);
        }
    }
    order
}

/// `HloComputation::MakeEmbeddedComputationsList`: computations reachable from `comp`'s
/// instructions, each after the computations it calls; called computations are visited
/// in the order the instruction lists them.
fn embedded_computations(graph: &HloGraph, proto_order: &[Vec<usize>], comp: usize) -> Vec<usize> {
    let mut visited: HashSet<usize> = HashSet::new();
    let mut out = Vec::new();
    // (computation, next instruction position)
    let mut stack: Vec<(usize, usize)> = Vec::new();
    let Some(first) = proto_order.get(comp) else { return out };
    let push_called = |called: &[usize], visited: &mut HashSet<usize>, stack: &mut Vec<(usize, usize)>| {
        for &callee in called.iter().rev() {
            if visited.insert(callee) {
                stack.push((callee, 0));
            }
        }
    };
    for &instr in first {
        let Some(node) = graph.nodes.get(instr) else { continue };
        push_called(&node.called, &mut visited, &mut stack);
        while let Some(&(current, position)) = stack.last() {
            let instrs = proto_order.get(current).map_or(&[][..], |c| c.as_slice());
            match instrs.get(position) {
                None => {
                    stack.pop();
                    out.push(current);
                }
                Some(&next) => {
                    if let Some(top) = stack.last_mut() {
                        top.1 += 1;
                    }
                    if let Some(n) = graph.nodes.get(next) {
                        push_called(&n.called, &mut visited, &mut stack);
                    }
                }
            }
        }
    }
    out
}

/// The stack frame index as XLA rebuilds it when it loads a module: frames are interned
/// in the order instructions reference them (computations and instructions in proto
/// order), each after its parent; equal frames, locations and names are merged and
/// unreferenced ones dropped. Instructions' `stack_frame_id`s are renumbered to match.
struct FrameIndex {
    file_names: Vec<String>,
    function_names: Vec<String>,
    /// `(file, function, line, end_line, column, end_column)`, 1-based ids.
    locations: Vec<(i32, i32, i32, i32, i32, i32)>,
    /// `(location, parent)`, 1-based ids, 0 = none.
    frames: Vec<(i32, i32)>,
    renumbered: HashMap<i32, i32>,
}

impl FrameIndex {
    fn build(module: &HloModule, extras: &ModuleExtras) -> FrameIndex {
        let mut index = FrameIndex {
            file_names: Vec::new(),
            function_names: Vec::new(),
            locations: Vec::new(),
            frames: Vec::new(),
            renumbered: HashMap::new(),
        };
        let Some(source) = &module.stack_frame_index else { return index };
        for computation in &module.computations {
            for instruction in &computation.instructions {
                let id = instruction.metadata.stack_frame_id;
                if id != 0 {
                    index.intern(source, extras, id, 0);
                }
            }
        }
        index
    }

    fn intern_name(names: &mut Vec<String>, name: &str) -> i32 {
        match names.iter().position(|n| n == name) {
            Some(i) => i as i32 + 1,
            None => {
                names.push(name.to_string());
                names.len() as i32
            }
        }
    }

    /// New id of frame `id` (1-based in the proto), 0 when it does not exist.
    fn intern(&mut self, source: &oxprof_hlo::StackFrameIndex, extras: &ModuleExtras, id: i32, depth: usize) -> i32 {
        if let Some(&new) = self.renumbered.get(&id) {
            return new;
        }
        let at = |i: i32| usize::try_from(i).ok().and_then(|i| i.checked_sub(1));
        let Some(&(location, parent)) = at(id).and_then(|i| source.stack_frames.get(i)) else { return 0 };
        let new_parent = if parent != 0 && depth < source.stack_frames.len() {
            self.intern(source, extras, parent, depth + 1)
        } else {
            0
        };
        let (file, function, line, column) =
            at(location).and_then(|i| source.file_locations.get(i)).copied().unwrap_or_default();
        let (end_line, end_column) =
            at(location).and_then(|i| extras.file_location_ends.get(i)).copied().unwrap_or_default();
        let file_name = at(file).and_then(|i| source.file_names.get(i)).map_or("", String::as_str);
        let function_name = at(function).and_then(|i| source.function_names.get(i)).map_or("", String::as_str);
        let file = Self::intern_name(&mut self.file_names, file_name);
        let function = Self::intern_name(&mut self.function_names, function_name);
        let key = (file, function, line, end_line, column, end_column);
        let location = match self.locations.iter().position(|l| *l == key) {
            Some(i) => i as i32 + 1,
            None => {
                self.locations.push(key);
                self.locations.len() as i32
            }
        };
        let frame = (location, new_parent);
        let new = match self.frames.iter().position(|f| *f == frame) {
            Some(i) => i as i32 + 1,
            None => {
                self.frames.push(frame);
                self.frames.len() as i32
            }
        };
        self.renumbered.insert(id, new);
        new
    }
}

/// The module's text as XProf's graph viewer returns it for `kind`.
pub fn module_text(
    module: &HloModule,
    extras: &ModuleExtras,
    kind: TextKind,
    show_metadata: bool,
) -> Result<String, String> {
    let frames = FrameIndex::build(module, extras);
    let mut module = module.clone();
    for computation in &mut module.computations {
        for instruction in &mut computation.instructions {
            let id = &mut instruction.metadata.stack_frame_id;
            if *id != 0 {
                *id = frames.renumbered.get(id).copied().unwrap_or(0);
            }
        }
    }
    let module = &module;
    let computation_ids: Vec<i64> = module.computations.iter().map(|c| c.id).collect();
    let threads: Vec<String> = module.computations.iter().map(|c| c.execution_thread.clone()).collect();
    let graph =
        HloGraph::build(module.clone()).ok_or_else(|| "the HLO module does not link (unknown ids)".to_string())?;
    let long = kind != TextKind::Short;
    let options = PrintOptions {
        percent: long,
        operand_shapes: false,
        large_constants: long,
        metadata: kind == TextKind::Metadata || show_metadata,
        backend_config: true,
        control_dependencies: long,
        operand_index_annotations: long,
    };
    let mut out = String::new();
    out.push_str("HloModule ");
    out.push_str(&module.name);
    if extras.schedule.is_some() {
        out.push_str(", is_scheduled=true");
    }
    if !extras.input_output_alias.is_empty() {
        let mut entries = extras.input_output_alias.clone();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let parts: Vec<String> = entries
            .iter()
            .map(|(output, parameter, index, kind)| {
                let kind = if *kind == 2 { "must-alias" } else { "may-alias" };
                format!("{}: ({parameter}, {}, {kind})", shape_index(output), shape_index(index))
            })
            .collect();
        let _ = write!(out, ", input_output_alias={{ {} }}", parts.join(", "));
    }
    if let Some(result) = &extras.program_result {
        let params = Shape {
            element_type: oxprof_hlo::primitive::TUPLE,
            tuple_shapes: extras.program_parameters.clone(),
            ..Default::default()
        };
        let _ = write!(out, ", entry_computation_layout={{{}->{}}}", with_layout(&params), with_layout(result));
    }
    if !extras.frontend_attributes.is_empty() {
        out.push_str(", frontend_attributes=");
        out.push_str(&frontend_attributes(&extras.frontend_attributes));
    }
    if options.metadata {
        print_stack_frame_index(&frames, &mut out);
    }
    out.push_str("\n\n");

    let schedule: HashMap<i64, &Vec<i64>> = extras.schedule.iter().flatten().map(|(comp, ids)| (*comp, ids)).collect();
    // Node indices of each computation's instructions in proto order (`Graph` numbers
    // nodes in that order).
    let mut proto_order: Vec<Vec<usize>> = Vec::with_capacity(module.computations.len());
    let mut next = 0usize;
    for c in &module.computations {
        proto_order.push((next..next + c.instructions.len()).collect());
        next += c.instructions.len();
    }
    for comp in computation_post_order(&graph, &proto_order) {
        let Some(c) = graph.comps.get(comp) else { continue };
        if comp == graph.entry {
            out.push_str("ENTRY ");
        }
        if options.percent {
            out.push('%');
        }
        out.push_str(&c.name);
        if long {
            let params: Vec<String> = c
                .params
                .iter()
                .flatten()
                .filter_map(|&p| graph.nodes.get(p))
                .map(|p| format!("{}: {}", p.hlo.name, human_string(&p.hlo.shape)))
                .collect();
            let result = graph.nodes.get(c.root).map(|r| human_string(&r.hlo.shape)).unwrap_or_default();
            let _ = write!(out, " ({}) -> {result}", params.join(", "));
        }
        out.push_str(" {\n");
        let sequence = computation_ids.get(comp).and_then(|id| schedule.get(id));
        let order: Vec<usize> = match sequence {
            Some(ids) => {
                let by_id: HashMap<i64, usize> =
                    c.instrs.iter().filter_map(|&i| graph.nodes.get(i).map(|n| (n.hlo.id, i))).collect();
                ids.iter().filter_map(|id| by_id.get(id).copied()).collect()
            }
            None => graph.post_order(comp),
        };
        for index in order {
            let Some(node) = graph.nodes.get(index) else { continue };
            out.push_str("  ");
            if index == c.root {
                out.push_str("ROOT ");
            }
            print_instruction(&graph, node, options, &mut out);
            out.push('\n');
        }
        out.push('}');
        if let Some(thread) = threads.get(comp).filter(|t| !t.is_empty() && t.as_str() != "main") {
            let _ = write!(out, ", execution_thread=\"{thread}\"");
        }
        out.push_str("\n\n");
    }
    Ok(out)
}

/// `HloModule::PrintStackFrameIndex` (parents print one above their id, as XLA does).
fn print_stack_frame_index(index: &FrameIndex, out: &mut String) {
    if index.frames.is_empty() {
        return;
    }
    out.push_str("\n\nFileNames\n");
    for (i, name) in index.file_names.iter().enumerate() {
        let _ = writeln!(out, "{} \"{}\"", i + 1, c_escape(name));
    }
    out.push_str("\nFunctionNames\n");
    for (i, name) in index.function_names.iter().enumerate() {
        let _ = writeln!(out, "{} \"{}\"", i + 1, c_escape(name));
    }
    out.push_str("\nFileLocations\n");
    for (i, &(file, function, line, end_line, column, end_column)) in index.locations.iter().enumerate() {
        let _ = writeln!(
            out,
            "{} {{file_name_id={file} function_name_id={function} line={line} end_line={end_line} column={column} end_column={end_column}}}",
            i + 1
        );
    }
    out.push_str("\nStackFrames\n");
    for (i, &(location, parent)) in index.frames.iter().enumerate() {
        let _ = writeln!(out, "{} {{file_location_id={location} parent_frame_id={}}}", i + 1, parent + 1);
    }
}

/// `type=pbtxt`: the `xla.HloProto` bytes in protobuf text format, as XProf prints them
/// (C++ `TextFormat` with unknown fields hidden, XProf's schema).
pub fn proto_text(hlo_proto: &[u8]) -> Result<String, String> {
    hlo_proto_text(hlo_proto)
}

/// `type=graph`'s DOT (XProf's `Plot` with `format=dot`): the whole computation when
/// `node_name` names one, else the neighbourhood of `options.radius` steps around the
/// instruction named so (see [`crate::hlo_lookup`]'s DOT port for what differs from run
/// to run in XProf's text).
pub fn graph_dot(module: &HloModule, node_name: &str, options: DotRenderOptions) -> Result<String, String> {
    render_dot(module, node_name, options)
}

/// XProf's `WrapDotInHtml` (layout engine `dot`): a page that renders the DOT with
/// Graphviz in WebAssembly, as `type=graph&format=html` answers.
///
/// XProf pastes the DOT into a JavaScript template literal as is, so a backtick or `${`
/// in a name or op name would end the literal and run as script. oxprof escapes `\`,
/// `` ` `` and `${` in that case only (the page then shows the same DOT as the others),
/// and is byte for byte XProf's page otherwise.
pub fn graph_html(dot: &str) -> String {
    super::graphviz_html::wrap_dot_in_html(dot, "dot")
}

/// `GetAdjacentNodes` (`type=adj_nodes`): the names of an instruction's operands and
/// users, looking through `get-tuple-element`s, as `{"consumer_names":[..],"operand_names":[..]}`.
pub fn adjacent_nodes(module: &HloModule, node_name: &str) -> Result<String, String> {
    if node_name.is_empty() {
        return Err("node_name should not be empty".into());
    }
    let graph =
        HloGraph::build(module.clone()).ok_or_else(|| "the HLO module does not link (unknown ids)".to_string())?;
    let Some(start) = graph.nodes.iter().position(|n| n.hlo.name == node_name) else {
        if graph.comps.iter().any(|c| c.name == node_name) {
            return Err("GetAdjacentNodes is not implemented for HloComputation.".into());
        }
        return Err(format!("Couldn't find HloInstruction or HloComputation named {node_name}."));
    };
    let is_gte = |i: usize| graph.nodes.get(i).is_some_and(|n| n.hlo.name.starts_with("get-tuple-element"));
    // Depth-first, in operand (user) order, expanding get-tuple-elements in place.
    let walk = |next: &dyn Fn(usize) -> Vec<usize>| {
        let mut names = Vec::new();
        let mut stack: Vec<usize> = next(start).into_iter().rev().collect();
        let mut steps = 0usize;
        while let Some(i) = stack.pop() {
            steps += 1;
            if steps > graph.nodes.len().saturating_mul(4) + 16 {
                break;
            }
            if is_gte(i) {
                stack.extend(next(i).into_iter().rev());
            } else if let Some(n) = graph.nodes.get(i) {
                names.push(serde_json::Value::String(n.hlo.name.clone()));
            }
        }
        names
    };
    let operands = walk(&|i| graph.nodes.get(i).map(|n| n.operands.clone()).unwrap_or_default());
    let users = walk(&|i| graph.nodes.get(i).map(|n| n.users.clone()).unwrap_or_default());
    let mut object = serde_json::Map::new();
    object.insert("consumer_names".into(), serde_json::Value::Array(users));
    object.insert("operand_names".into(), serde_json::Value::Array(operands));
    Ok(serde_json::Value::Object(object).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_hlo::HloComputation;

    use oxprof_testkit::hlo::{f32_shape as f32s, hlo_instr as instr};

    /// `main` calls `fused` through a fusion; the fused computation prints first.
    fn module() -> (HloModule, ModuleExtras) {
        let mut p = instr("p", "parameter", 1, &[], f32s(&[4]));
        p.metadata.op_name = "x's".into();
        let mut fusion = instr("f", "fusion", 2, &[1], f32s(&[4]));
        fusion.fusion_kind = "kLoop".into();
        fusion.called_computation_ids = vec![10];
        fusion.backend_config = br#"{"k":1}"#.to_vec();
        let mut q = instr("q", "parameter", 3, &[], f32s(&[4]));
        q.parameter_number = 0;
        let neg = instr("n", "negate", 4, &[3], f32s(&[4]));
        let module = HloModule {
            name: "jit_f".into(),
            entry_computation_name: "main".into(),
            entry_computation_id: 20,
            computations: vec![
                HloComputation {
                    name: "fused".into(),
                    id: 10,
                    root_id: 4,
                    instructions: vec![q, neg],
                    ..Default::default()
                },
                HloComputation {
                    name: "main".into(),
                    id: 20,
                    root_id: 2,
                    instructions: vec![p, fusion],
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let extras = ModuleExtras {
            program_parameters: vec![f32s(&[4])],
            program_result: Some(f32s(&[4])),
            schedule: Some(vec![(20, vec![1, 2])]),
            ..Default::default()
        };
        (module, extras)
    }

    #[test]
    fn graph_page_embeds_the_dot_once() {
        let (m, _) = module();
        let dot = graph_dot(&m, "f", DotRenderOptions::default()).unwrap();
        let page = graph_html(&dot);
        assert!(page.starts_with("\n<!DOCTYPE html>\n<html>\n"));
        assert!(page.contains(&format!("const data = `{dot}`;\n    const results")));
        assert!(page.contains("hpccWasm.graphviz.layout(dot_data, \"svg\", \"dot\")"));
        assert!(!page.contains("$DOT") && !page.contains("$LAYOUT_ENGINE"));
        // A DOT that happens to contain the placeholders is not rewritten.
        assert!(graph_html("$LAYOUT_ENGINE").contains("const data = `$LAYOUT_ENGINE`;"));
        // Backticks and `${` cannot end the script's template literal.
        let hostile = graph_html("a`;alert(1);` ${x} \\`");
        assert!(hostile.contains("const data = `a\\`;alert(1);\\` \\${x} \\\\\\``;"), "{hostile}");
    }

    #[test]
    fn short_and_long_text_like_xla() {
        let (m, extras) = module();
        let short = module_text(&m, &extras, TextKind::Short, false).unwrap();
        assert_eq!(
            short,
            "HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[4]{0})->f32[4]{0}}\n\n\
             fused {\n  q = f32[4]{0} parameter(0)\n  ROOT n = f32[4]{0} negate(q)\n}\n\n\
             ENTRY main {\n  p = f32[4]{0} parameter(0)\n  ROOT f = f32[4]{0} fusion(p), kind=kLoop, calls=fused, backend_config={\"k\":1}\n}\n\n"
        );
        let long = module_text(&m, &extras, TextKind::Long, false).unwrap();
        assert!(long.contains("%fused (q: f32[4]) -> f32[4] {\n  %q = f32[4]{0} parameter(0)\n"), "{long}");
        assert!(long.contains("ENTRY %main (p: f32[4]) -> f32[4] {"), "{long}");
        let with_metadata = module_text(&m, &extras, TextKind::Metadata, false).unwrap();
        assert!(with_metadata.contains("parameter(0), metadata={op_name=\"x\\'s\"}"), "{with_metadata}");
    }

    #[test]
    fn adjacent_nodes_name_operands_and_users() {
        let (m, _) = module();
        assert_eq!(adjacent_nodes(&m, "p").unwrap(), r#"{"consumer_names":["f"],"operand_names":[]}"#);
        assert_eq!(adjacent_nodes(&m, "n").unwrap(), r#"{"consumer_names":[],"operand_names":["q"]}"#);
        assert!(adjacent_nodes(&m, "main").unwrap_err().contains("not implemented"));
        assert!(adjacent_nodes(&m, "nope").is_err());
    }

    #[test]
    fn unlinked_modules_are_errors() {
        let (mut m, extras) = module();
        m.computations[1].instructions[1].operand_ids = vec![99];
        assert!(module_text(&m, &extras, TextKind::Short, false).is_err());
    }
}
