//! An HLO module as XLA holds it in memory after `HloModule::CreateFromProto`: instructions
//! linked to their operands, users, called computations and computation, computations
//! linked to their root, parameters and calling fusion, plus the post order XLA visits
//! them in.
//!
//! Orders follow XLA exactly, because XProf's outputs depend on them:
//! * a computation's instruction list (`instructions()`) is sorted by proto id;
//! * an instruction's users are in creation order (proto order), each user once;
//! * `MakeInstructionPostOrder` starts a depth-first walk at every instruction without
//!   users, in list order, pushing operands in reverse and then control predecessors.

use crate::{HloInstruction, HloModule, StackFrameIndex};
use std::collections::HashMap;

/// The opcodes oxprof's logic distinguishes; every other opcode is `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Opcode {
    Abs,
    Add,
    AfterAll,
    AllGather,
    AllGatherStart,
    AllReduce,
    AllReduceStart,
    And,
    AsyncStart,
    Atan2,
    Bitcast,
    BitcastConvert,
    Broadcast,
    Call,
    Cbrt,
    Ceil,
    Clamp,
    Clz,
    Compare,
    Complex,
    Concatenate,
    Conditional,
    Constant,
    Convert,
    Convolution,
    Copy,
    Cos,
    CustomCall,
    Divide,
    Dot,
    DynamicReshape,
    DynamicSlice,
    DynamicUpdateSlice,
    Erf,
    Exp,
    Expm1,
    Floor,
    Fusion,
    Gather,
    GetTupleElement,
    Imag,
    Iota,
    IsFinite,
    Log,
    Log1p,
    Logistic,
    Map,
    Maximum,
    Minimum,
    Multiply,
    Negate,
    Not,
    Or,
    Parameter,
    PopulationCount,
    Power,
    Real,
    Reduce,
    ReducePrecision,
    ReduceScatter,
    ReduceWindow,
    Remainder,
    Reshape,
    RoundNearestAfz,
    RoundNearestEven,
    Rsqrt,
    Scatter,
    Select,
    SelectAndScatter,
    ShiftLeft,
    ShiftRightArithmetic,
    ShiftRightLogical,
    Sign,
    Sin,
    Slice,
    Sort,
    Sqrt,
    StochasticConvert,
    Subtract,
    Tan,
    Tanh,
    TopK,
    Transpose,
    Tuple,
    While,
    Xor,
    Other,
}

impl Opcode {
    /// `StringToHloOpcode`, for the opcodes oxprof distinguishes.
    pub(crate) fn parse(s: &str) -> Opcode {
        use Opcode::*;
        match s {
            "abs" => Abs,
            "add" => Add,
            "after-all" => AfterAll,
            "all-gather" => AllGather,
            "all-gather-start" => AllGatherStart,
            "all-reduce" => AllReduce,
            "all-reduce-start" => AllReduceStart,
            "and" => And,
            "async-start" => AsyncStart,
            "atan2" => Atan2,
            "bitcast" => Bitcast,
            "bitcast-convert" => BitcastConvert,
            "broadcast" => Broadcast,
            "call" => Call,
            "cbrt" => Cbrt,
            "ceil" => Ceil,
            "clamp" => Clamp,
            "count-leading-zeros" => Clz,
            "compare"
            | "equal-to"
            | "not-equal-to"
            | "greater-than-or-equal-to"
            | "greater-than"
            | "less-than-or-equal-to"
            | "less-than" => Compare,
            "complex" => Complex,
            "concatenate" => Concatenate,
            "conditional" => Conditional,
            "constant" => Constant,
            "convert" => Convert,
            "convolution" => Convolution,
            "copy" => Copy,
            "cosine" => Cos,
            "custom-call" => CustomCall,
            "divide" => Divide,
            "dot" => Dot,
            "dynamic-reshape" => DynamicReshape,
            "dynamic-slice" => DynamicSlice,
            "dynamic-update-slice" => DynamicUpdateSlice,
            "erf" => Erf,
            "exponential" => Exp,
            "exponential-minus-one" => Expm1,
            "floor" => Floor,
            "fusion" => Fusion,
            "gather" => Gather,
            "get-tuple-element" => GetTupleElement,
            "imag" => Imag,
            "iota" => Iota,
            "is-finite" => IsFinite,
            "log" => Log,
            "log-plus-one" => Log1p,
            "logistic" => Logistic,
            "map" => Map,
            "maximum" => Maximum,
            "minimum" => Minimum,
            "multiply" => Multiply,
            "negate" => Negate,
            "not" => Not,
            "or" => Or,
            "parameter" => Parameter,
            "popcnt" => PopulationCount,
            "power" => Power,
            "real" => Real,
            "reduce" => Reduce,
            "reduce-precision" => ReducePrecision,
            "reduce-scatter" => ReduceScatter,
            "reduce-window" => ReduceWindow,
            "remainder" => Remainder,
            "reshape" => Reshape,
            "round-nearest-afz" => RoundNearestAfz,
            "round-nearest-even" => RoundNearestEven,
            "rsqrt" => Rsqrt,
            "scatter" => Scatter,
            "select" => Select,
            "select-and-scatter" => SelectAndScatter,
            "shift-left" => ShiftLeft,
            "shift-right-arithmetic" => ShiftRightArithmetic,
            "shift-right-logical" => ShiftRightLogical,
            "sign" => Sign,
            "sine" => Sin,
            "slice" => Slice,
            "sort" => Sort,
            "sqrt" => Sqrt,
            "stochastic-convert" => StochasticConvert,
            "subtract" => Subtract,
            "tan" => Tan,
            "tanh" => Tanh,
            "topk" => TopK,
            "transpose" => Transpose,
            "tuple" => Tuple,
            "while" => While,
            "xor" => Xor,
            _ => Other,
        }
    }

    /// `IsOpElementwise`: the opcodes XLA treats as elementwise.
    pub(crate) fn is_elementwise_op(self) -> bool {
        use Opcode::*;
        matches!(
            self,
            Abs | RoundNearestAfz
                | RoundNearestEven
                | Ceil
                | Clz
                | Convert
                | BitcastConvert
                | Copy
                | Cos
                | Erf
                | Exp
                | Expm1
                | Floor
                | Imag
                | IsFinite
                | Log
                | Log1p
                | Not
                | Negate
                | PopulationCount
                | Real
                | ReducePrecision
                | Rsqrt
                | Logistic
                | Sign
                | Sin
                | Sqrt
                | Cbrt
                | Tan
                | Tanh
                | Add
                | Atan2
                | Compare
                | Complex
                | Divide
                | Maximum
                | Minimum
                | Multiply
                | Power
                | Remainder
                | Subtract
                | And
                | Or
                | Xor
                | ShiftLeft
                | ShiftRightArithmetic
                | ShiftRightLogical
                | StochasticConvert
                | Select
                | Clamp
        )
    }
}

/// One instruction and its links.
#[derive(Debug, Clone)]
pub struct Node {
    /// The decoded instruction.
    pub hlo: HloInstruction,
    /// Parsed opcode.
    pub(crate) op: Opcode,
    /// Operand node indices.
    pub operands: Vec<usize>,
    /// User node indices (creation order, unique).
    pub users: Vec<usize>,
    /// Control predecessor node indices.
    pub control_preds: Vec<usize>,
    /// Called computation indices.
    pub called: Vec<usize>,
}

/// One computation and its links.
#[derive(Debug, Clone)]
pub struct Comp {
    /// Name.
    pub name: String,
    /// Instructions, sorted by proto id (XLA's `instructions()` order).
    pub instrs: Vec<usize>,
    /// Instructions in proto order: XLA's `instructions()` order when the module is loaded
    /// without preserving instruction ids, as XProf loads it (`fused_instructions()`).
    pub proto_order: Vec<usize>,
    /// Root node.
    pub root: usize,
    /// Parameters by parameter number.
    pub params: Vec<Option<usize>>,
    /// The fusion instruction calling this computation (the last one created wins).
    pub fusion_instr: Option<usize>,
}

/// A module in memory.
#[derive(Debug, Clone)]
pub struct Graph {
    /// Every instruction of every computation.
    pub nodes: Vec<Node>,
    /// Computations in proto order (callees first).
    pub comps: Vec<Comp>,
    /// Entry computation.
    pub entry: usize,
    /// Stack frames.
    pub stack_frames: Option<StackFrameIndex>,
}

impl Graph {
    /// `HloModule::CreateFromProto`: links instructions and computations by id. `None` when
    /// the proto is malformed the way XLA rejects (an unknown operand, called computation or
    /// root id, or no computation), as XProf then leaves the module out of its map.
    pub fn build(module: HloModule) -> Option<Graph> {
        let HloModule { computations, entry_computation_id, entry_computation_name, stack_frame_index, .. } = module;
        let mut nodes: Vec<Node> = Vec::new();
        let mut comps: Vec<Comp> = Vec::with_capacity(computations.len());
        let mut comp_by_id: HashMap<i64, usize> = HashMap::with_capacity(computations.len());
        let mut entry = None;
        for computation in computations {
            let comp_index = comps.len();
            let mut by_id: HashMap<i64, usize> = HashMap::with_capacity(computation.instructions.len());
            let mut order: Vec<(i64, usize)> = Vec::with_capacity(computation.instructions.len());
            let mut params: Vec<Option<usize>> = Vec::new();
            for hlo in computation.instructions {
                let index = nodes.len();
                let op = Opcode::parse(&hlo.opcode);
                let operands = hlo.operand_ids.iter().map(|id| by_id.get(id).copied()).collect::<Option<Vec<_>>>()?;
                let control_preds =
                    hlo.control_predecessor_ids.iter().map(|id| by_id.get(id).copied()).collect::<Option<Vec<_>>>()?;
                let called = hlo
                    .called_computation_ids
                    .iter()
                    .map(|id| comp_by_id.get(id).copied())
                    .collect::<Option<Vec<_>>>()?;
                for &operand in &operands {
                    let users = &mut nodes.get_mut(operand)?.users;
                    if !users.contains(&index) {
                        users.push(index);
                    }
                }
                if op == Opcode::Fusion
                    && let Some(&fused) = called.first()
                {
                    comps.get_mut(fused)?.fusion_instr = Some(index);
                }
                if op == Opcode::Parameter {
                    let number = usize::try_from(hlo.parameter_number).ok()?;
                    if params.len() <= number {
                        params.resize(number + 1, None);
                    }
                    if let Some(slot) = params.get_mut(number) {
                        *slot = Some(index);
                    }
                }
                if by_id.insert(hlo.id, index).is_some() {
                    return None;
                }
                order.push((hlo.id, index));
                nodes.push(Node { hlo, op, operands, users: Vec::new(), control_preds, called });
            }
            let proto_order: Vec<usize> = order.iter().map(|&(_, index)| index).collect();
            order.sort_by_key(|&(id, _)| id);
            let root = *by_id.get(&computation.root_id)?;
            if computation.id == entry_computation_id || (entry.is_none() && computation.name == entry_computation_name)
            {
                entry = Some(comp_index);
            }
            comp_by_id.insert(computation.id, comp_index);
            comps.push(Comp {
                name: computation.name,
                instrs: order.into_iter().map(|(_, index)| index).collect(),
                proto_order,
                root,
                params,
                fusion_instr: None,
            });
        }
        let entry = entry.or_else(|| comps.len().checked_sub(1))?;
        Some(Graph { nodes, comps, entry, stack_frames: stack_frame_index })
    }

    /// The node at `index` (every index the graph hands out is valid).
    pub fn node(&self, index: usize) -> Option<&Node> {
        self.nodes.get(index)
    }

    /// The operand `i` of a node.
    pub(crate) fn operand(&self, node: &Node, i: usize) -> Option<&Node> {
        node.operands.get(i).and_then(|&o| self.nodes.get(o))
    }

    /// The computation a fusion (or call-like) instruction calls first.
    pub(crate) fn called_comp(&self, node: &Node) -> Option<&Comp> {
        node.called.first().and_then(|&c| self.comps.get(c))
    }

    /// `HloComputation::MakeInstructionPostOrder` of computation `comp` (no channel
    /// dependencies: oxprof only orders fused computations).
    ///
    /// ```text
    /// for each instruction without users, in list order:
    ///   stack = [it]
    ///   top new        -> mark visiting; push operands (last first), control preds
    ///   top visiting   -> pop, mark visited, emit
    ///   top visited    -> pop
    /// ```
    pub fn post_order(&self, comp: usize) -> Vec<usize> {
        const NEW: u8 = 0;
        const VISITING: u8 = 1;
        const VISITED: u8 = 2;
        let Some(c) = self.comps.get(comp) else { return Vec::new() };
        let mut state: HashMap<usize, u8> = HashMap::with_capacity(c.instrs.len());
        let mut out = Vec::with_capacity(c.instrs.len());
        let mut stack: Vec<usize> = Vec::new();
        for &start in &c.instrs {
            if self.nodes.get(start).is_none_or(|n| !n.users.is_empty()) {
                continue;
            }
            if state.get(&start).copied().unwrap_or(NEW) != VISITED {
                stack.push(start);
            }
            while let Some(&current) = stack.last() {
                let current_state = state.get(&current).copied().unwrap_or(NEW);
                if current_state == NEW {
                    state.insert(current, VISITING);
                } else {
                    stack.pop();
                    if current_state != VISITED {
                        state.insert(current, VISITED);
                        out.push(current);
                    }
                    continue;
                }
                let Some(node) = self.nodes.get(current) else { continue };
                for &operand in node.operands.iter().rev().chain(node.control_preds.iter()) {
                    if state.get(&operand).copied().unwrap_or(NEW) != VISITED {
                        stack.push(operand);
                    }
                }
            }
        }
        out
    }

    /// `HloModule::get_stack_frame` walked up to the outermost frame
    /// (`GetOpLocationStack`): `file:line:column\n` per frame, innermost first; stops at
    /// an empty or unknown frame.
    pub(crate) fn op_location_stack(&self, mut frame_id: i32) -> String {
        let mut out = String::new();
        let Some(index) = &self.stack_frames else { return out };
        let mut guard = 0usize;
        while frame_id != 0 && guard <= index.stack_frames.len() {
            guard += 1;
            // Ids are 1-based; 0 and negative ids point nowhere.
            let at = |id: i32| id.checked_sub(1).and_then(|i| usize::try_from(i).ok());
            let Some(&(location_id, parent)) = at(frame_id).and_then(|i| index.stack_frames.get(i)) else {
                break;
            };
            let location = at(location_id).and_then(|i| index.file_locations.get(i));
            let Some(&(file_id, function_id, line, column)) = location else { break };
            let file = at(file_id).and_then(|i| index.file_names.get(i));
            let function = at(function_id).and_then(|i| index.function_names.get(i));
            let file = file.map_or("", String::as_str);
            let function = function.map_or("", String::as_str);
            if file.is_empty() && function.is_empty() && line == 0 && column == 0 {
                break;
            }
            out.push_str(&format!("{file}:{line}:{column}\n"));
            frame_id = parent;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{HloComputation, Shape};

    fn instr(name: &str, opcode: &str, id: i64, operands: &[i64]) -> HloInstruction {
        HloInstruction {
            name: name.into(),
            opcode: opcode.into(),
            id,
            operand_ids: operands.to_vec(),
            shape: Shape { element_type: 11, ..Default::default() },
            ..Default::default()
        }
    }

    //   p0(1)  p1(2)
    //     \    /  \
    //     add(5)  neg(4)      dead: neg has no users
    //        \
    //        mul(3) = mul(add, add)   root
    #[test]
    fn links_users_and_post_order_like_xla() {
        let mut mul = instr("mul", "multiply", 3, &[5, 5]);
        mul.called_computation_ids = vec![];
        let module = HloModule {
            name: "m".into(),
            entry_computation_id: 9,
            computations: vec![HloComputation {
                name: "main".into(),
                id: 9,
                root_id: 3,
                instructions: vec![
                    instr("p0", "parameter", 1, &[]),
                    instr("p1", "parameter", 2, &[]),
                    instr("add", "add", 5, &[1, 2]),
                    instr("neg", "negate", 4, &[2]),
                    mul,
                ],
                ..Default::default()
            }],
            ..Default::default()
        };
        let g = Graph::build(module).unwrap();
        let names = |v: &[usize]| v.iter().map(|&i| g.nodes[i].hlo.name.as_str()).collect::<Vec<_>>();
        // instructions() is sorted by id.
        assert_eq!(names(&g.comps[0].instrs), ["p0", "p1", "mul", "neg", "add"]);
        // Users in creation order, once each.
        assert_eq!(names(&g.nodes[1].users), ["add", "neg"]);
        assert_eq!(names(&g.nodes[2].users), ["mul"]);
        // Walks start at instructions without users in list order: mul, then neg.
        assert_eq!(names(&g.post_order(0)), ["p0", "p1", "add", "mul", "neg"]);
    }

    #[test]
    fn rejects_unknown_ids() {
        let module = HloModule {
            computations: vec![HloComputation {
                root_id: 1,
                instructions: vec![instr("a", "negate", 1, &[7])],
                ..Default::default()
            }],
            ..Default::default()
        };
        assert!(Graph::build(module).is_none());
    }
}
