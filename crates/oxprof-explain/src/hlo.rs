//! The HLO facts XProf's HLO detectors read: the time of every top-level instruction of
//! each program's entry computation (an op XLA did not fuse), by kind (reshapes and
//! dynamic-update-slices, copies and transposes, converts), with the instructions that cost
//! most.
//!
//! An instruction's kind comes from the run's HLO protos (the `/host:metadata` plane): its
//! opcode, or, for a fusion that wraps a single op (`wrapped_convert`, which XLA:CPU makes
//! of every op it does not fuse), that op's. Its time comes from the device's op metrics
//! (OpStats, by program id) on GPU and TPU runs, and on CPU runs from the host events that
//! name it (`hlo_op`, `hlo_module` stats of XLA:CPU's thunks).
//!
//! Also from the host plane: the time XLA or JAX spends compiling inside steps
//! ([`compile_in_steps`]), which XProf's step breakdown counts as compute on JAX runs.

use oxprof_api::ApiError;
use oxprof_api::session::{FileCounts, HostArtifact, Session};
use oxprof_format::HostFile;
use oxprof_hlo::{HloComputation, HloInstruction, HloModule, decode_hlo_proto, hlo_proto_bytes, primitive};
use oxprof_model::XSpace;
use oxprof_model::schema::{HOST_THREADS_PLANE_NAME, StatType};
use oxprof_xprof::op_stats::OpStats;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Most instructions a kind lists as evidence.
const TOP: usize = 5;

/// What XProf's HLO detectors look for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HloKind {
    /// Reshapes and dynamic-update-slices left outside fusions.
    Unfused,
    /// Copies and transposes (layout changes).
    Layout,
    /// Element type conversions.
    Convert,
}

/// One top-level instruction and its time.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct HloOpFact {
    /// The program (HLO module).
    pub module: String,
    /// The instruction.
    pub name: String,
    /// Its opcode (a single-op fusion's op).
    pub opcode: String,
    /// Its result shape and, for a convert, from what (`f32[2048,2048] from bf16`).
    pub detail: String,
    /// Times it ran in the profile.
    pub calls: u64,
    /// Its time per step, ms.
    pub ms_per_step: f64,
}

/// The top-level instructions of one kind.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct HloFamily {
    /// The kind.
    pub kind: HloKind,
    /// Instructions of this kind that ran.
    pub instructions: usize,
    /// Their time per step, ms.
    pub ms_per_step: f64,
    /// Converts whose operand is a convert back from the type they convert to (f32 → bf16
    /// → f32): precision lost for nothing.
    pub round_trips: usize,
    /// Those that cost most (at most 5), largest first.
    pub top: Vec<HloOpFact>,
}

/// The kind of an opcode, if a detector looks for it.
fn kind_of(opcode: &str) -> Option<HloKind> {
    match opcode {
        "reshape" | "dynamic-update-slice" => Some(HloKind::Unfused),
        "copy" | "transpose" => Some(HloKind::Layout),
        "convert" => Some(HloKind::Convert),
        _ => None,
    }
}

/// Instructions that carry no work of their own inside a fused computation.
fn is_plumbing(opcode: &str) -> bool {
    matches!(opcode, "parameter" | "constant" | "bitcast" | "tuple" | "get-tuple-element")
}

/// A decoded module, indexed for lookups.
struct Module {
    module: HloModule,
    /// Computation index by id.
    computations: HashMap<i64, usize>,
    /// (computation, instruction) of every entry instruction, by name.
    entry: HashMap<String, usize>,
    entry_index: Option<usize>,
}

impl Module {
    fn new(module: HloModule) -> Module {
        let computations: HashMap<i64, usize> =
            module.computations.iter().enumerate().map(|(i, c)| (c.id, i)).collect();
        let entry_index = computations
            .get(&module.entry_computation_id)
            .copied()
            .or_else(|| module.computations.iter().position(|c| c.name == module.entry_computation_name));
        let entry = entry_index
            .and_then(|i| module.computations.get(i))
            .map(|c| c.instructions.iter().enumerate().map(|(i, ins)| (ins.name.clone(), i)).collect())
            .unwrap_or_default();
        Module { module, computations, entry, entry_index }
    }

    fn entry_computation(&self) -> Option<&HloComputation> {
        self.module.computations.get(self.entry_index?)
    }

    /// The entry instruction `name`, if it is one.
    fn entry_instruction(&self, name: &str) -> Option<&HloInstruction> {
        self.entry_computation()?.instructions.get(*self.entry.get(name)?)
    }

    /// The op an instruction is: its own, or the one op of a fusion wrapping a single op.
    fn effective<'m>(&'m self, instruction: &'m HloInstruction) -> &'m HloInstruction {
        if instruction.opcode != "fusion" {
            return instruction;
        }
        let fused = instruction
            .called_computation_ids
            .first()
            .and_then(|id| self.computations.get(id))
            .and_then(|&i| self.module.computations.get(i));
        let Some(fused) = fused else { return instruction };
        let mut work = fused.instructions.iter().filter(|i| !is_plumbing(&i.opcode));
        match (work.next(), work.next()) {
            (Some(only), None) => only,
            _ => instruction,
        }
    }

    /// The element type of `instruction`'s first operand within its own computation.
    fn operand_type(&self, instruction: &HloInstruction, computation: &HloComputation) -> Option<i32> {
        let id = *instruction.operand_ids.first()?;
        computation.instructions.iter().find(|i| i.id == id).map(|i| i.shape.element_type)
    }

    /// The computation holding `instruction` (the entry's or a fused one).
    fn computation_of(&self, instruction: &HloInstruction) -> Option<&HloComputation> {
        self.module.computations.iter().find(|c| c.instructions.iter().any(|i| std::ptr::eq(i, instruction)))
    }

    /// Whether the entry instruction `top` (a convert, maybe wrapped) converts back what
    /// its operand (another convert, maybe wrapped) converted: `a → b → a`.
    fn is_round_trip(&self, top: &HloInstruction) -> bool {
        let Some(entry) = self.entry_computation() else { return false };
        let op = self.effective(top);
        let Some(&operand_id) = top.operand_ids.first() else { return false };
        let Some(operand) = entry.instructions.iter().find(|i| i.id == operand_id) else { return false };
        let inner = self.effective(operand);
        if inner.opcode != "convert" {
            return false;
        }
        let from = self.computation_of(inner).and_then(|c| self.operand_type(inner, c));
        from == Some(op.shape.element_type) && inner.shape.element_type != op.shape.element_type
    }
}

fn shape_text(instruction: &HloInstruction) -> String {
    let dims: Vec<String> = instruction.shape.dimensions.iter().map(i64::to_string).collect();
    format!("{}[{}]", primitive::name(instruction.shape.element_type), dims.join(","))
}

/// Where a timed op's module is found: by program id (OpStats) or by name (host events).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum ModuleKey {
    Program(u64),
    Name(String),
}

/// What explain reads of one XSpace host beside OpStats, from one decode of its host and
/// metadata planes: the HLO modules, XLA:CPU's op times and compiling inside steps. The
/// session keeps it (a [`HostArtifact`]), so explaining a run again decodes nothing.
pub(crate) struct HostHlo {
    /// Decoded modules by program id.
    modules: Vec<(u64, Arc<Module>)>,
    /// Modules that did not decode: (program id, why).
    unread: Vec<(u64, String)>,
    /// XLA:CPU's thunk events: (module, instruction) → (calls, picoseconds).
    cpu_ops: BTreeMap<(String, String), (u64, u64)>,
    /// Compiling in each step marker's span, ms ([`compile_in_steps`]).
    pub(crate) compile_ms: Vec<f64>,
    /// Heap bytes, bounded from above: the protos' encoded size × 8 (decoded instructions
    /// hold owned strings and vectors where the wire has varints; over-weighing only evicts
    /// sooner).
    weight: usize,
}

impl HostHlo {
    /// The facts of `space` (which must hold the host plane's lines).
    pub(crate) fn of(space: &XSpace) -> HostHlo {
        let mut out = HostHlo {
            modules: Vec::new(),
            unread: Vec::new(),
            cpu_ops: BTreeMap::new(),
            compile_ms: compile_in_steps(space),
            weight: std::mem::size_of::<HostHlo>(),
        };
        for (program_id, bytes) in hlo_proto_bytes(space) {
            out.weight += 8 * bytes.len();
            match decode_hlo_proto(bytes) {
                Ok(module) => out.modules.push((program_id, Arc::new(Module::new(module)))),
                Err(e) => out.unread.push((program_id, e.to_string())),
            }
        }
        for plane in space.planes.iter().filter(|p| p.name == HOST_THREADS_PLANE_NAME) {
            for event in plane.events() {
                let Some(op) = event.stat(StatType::HloOp).and_then(|s| s.as_str()) else { continue };
                let module = event.stat(StatType::HloModule).and_then(|s| s.as_str()).unwrap_or_default();
                let slot = out.cpu_ops.entry((module.to_string(), op.to_string())).or_default();
                slot.0 += 1;
                slot.1 += u64::try_from(event.duration_ps()).unwrap_or(0);
            }
        }
        out.weight += out.cpu_ops.keys().map(|(m, o)| m.len() + o.len() + 64).sum::<usize>();
        out
    }
}

impl HostArtifact for HostHlo {
    fn compute(session: &Session, file: &HostFile) -> Result<HostHlo, ApiError> {
        Ok(HostHlo::of(&session.load(file, &|plane| plane == HOST_THREADS_PLANE_NAME)?))
    }

    fn weight(&self) -> usize {
        self.weight
    }

    fn count(counts: &mut FileCounts, computed: bool) {
        if computed {
            counts.front_end_computed += 1;
        } else {
            counts.front_end_found += 1;
        }
    }
}

/// The HLO families of a run, gathered host by host ([`HloScan::add`]) from what each
/// host's profile holds, with the device's op metrics from OpStats when it has any.
pub(crate) struct HloScan {
    from_device: bool,
    modules: BTreeMap<u64, Arc<Module>>,
    /// (module, instruction) → (calls, picoseconds).
    timed: BTreeMap<(ModuleKey, String), (u64, u64)>,
}

impl HloScan {
    /// A scan whose times are `op_stats`' device ops when it has any.
    pub(crate) fn new(op_stats: &OpStats) -> HloScan {
        let device_ops = &op_stats.device_op_metrics_db.metrics_db;
        let mut timed: BTreeMap<(ModuleKey, String), (u64, u64)> = BTreeMap::new();
        for op in device_ops {
            let slot = timed.entry((ModuleKey::Program(op.hlo_module_id), op.name.clone())).or_default();
            slot.0 += u64::from(op.occurrences);
            slot.1 += op.self_time_ps;
        }
        HloScan { from_device: !device_ops.is_empty(), modules: BTreeMap::new(), timed }
    }

    /// Adds one host's HLO modules and, without device op metrics, XLA:CPU's op times.
    pub(crate) fn add(&mut self, host: &str, facts: &HostHlo, notes: &mut Vec<String>) {
        for (program_id, module) in &facts.modules {
            self.modules.entry(*program_id).or_insert_with(|| module.clone());
        }
        notes.extend(
            facts
                .unread
                .iter()
                .map(|(program_id, e)| format!("{host}: HLO module of program {program_id} not read: {e}")),
        );
        if self.from_device {
            return;
        }
        for ((module, op), (calls, ps)) in &facts.cpu_ops {
            let slot = self.timed.entry((ModuleKey::Name(module.clone()), op.clone())).or_default();
            slot.0 += calls;
            slot.1 += ps;
        }
    }

    /// The families, per step of a run of `steps` steps (0: per profile).
    pub(crate) fn finish(self, steps: usize) -> Vec<HloFamily> {
        let HloScan { modules, timed, .. } = self;
        if modules.is_empty() {
            return Vec::new();
        }
        let per_step = |ps: u64| ps as f64 / 1e9 / steps.max(1) as f64;
        let mut families: BTreeMap<HloKind, HloFamily> = BTreeMap::new();
        for ((key, name), (calls, ps)) in &timed {
            // The module holding `name` at the top level of its entry computation.
            let found = match key {
                ModuleKey::Program(id) => modules.get(id).and_then(|m| Some((m, m.entry_instruction(name)?))),
                ModuleKey::Name(module) => modules
                    .values()
                    .filter(|m| module.is_empty() || m.module.name == *module)
                    .find_map(|m| Some((m, m.entry_instruction(name)?))),
            };
            let Some((module, top)) = found else { continue };
            let op = module.effective(top);
            let Some(kind) = kind_of(&op.opcode) else { continue };
            let round_trip = kind == HloKind::Convert && module.is_round_trip(top);
            let detail = match kind {
                HloKind::Convert => {
                    let from = module.computation_of(op).and_then(|c| module.operand_type(op, c));
                    let from = from.map(primitive::name).unwrap_or("?");
                    format!("{} from {from}{}", shape_text(op), if round_trip { " (round trip)" } else { "" })
                }
                _ => shape_text(op),
            };
            let family = families.entry(kind).or_insert_with(|| HloFamily {
                kind,
                instructions: 0,
                ms_per_step: 0.0,
                round_trips: 0,
                top: Vec::new(),
            });
            family.instructions += 1;
            family.ms_per_step += per_step(*ps);
            family.round_trips += usize::from(round_trip);
            family.top.push(HloOpFact {
                module: module.module.name.clone(),
                name: name.clone(),
                opcode: op.opcode.clone(),
                detail,
                calls: *calls,
                ms_per_step: per_step(*ps),
            });
        }
        let mut out: Vec<HloFamily> = families.into_values().collect();
        for family in &mut out {
            family.top.sort_by(|a, b| b.ms_per_step.total_cmp(&a.ms_per_step).then(a.name.cmp(&b.name)));
            family.top.truncate(TOP);
        }
        out
    }
}

/// Whether a host event is XLA or JAX compiling (or lowering) a program.
fn is_compile_event(name: &str) -> bool {
    name.ends_with("::Compile")
        || name.starts_with("backend_compile")
        || matches!(name, "lower_sharding_computation" | "XlaCompile" | "_XlaCompile" | "TfrtCompile")
}

/// Compiling inside steps, from one host's host plane: for each span of a step marker
/// (an event with a `step_num`), the milliseconds compile events cover in it (their union,
/// so nested ones count once).
pub(crate) fn compile_in_steps(space: &XSpace) -> Vec<f64> {
    let mut steps: Vec<(i64, i64)> = Vec::new();
    let mut compiles: Vec<(i64, i64)> = Vec::new();
    for plane in space.planes.iter().filter(|p| p.name == HOST_THREADS_PLANE_NAME) {
        for event in plane.events() {
            if event.stat(StatType::StepNum).is_some() {
                steps.push((event.timestamp_ps(), event.end_timestamp_ps()));
            } else if is_compile_event(event.name()) {
                compiles.push((event.timestamp_ps(), event.end_timestamp_ps()));
            }
        }
    }
    steps.sort_unstable();
    steps.dedup();
    compiles.sort_unstable();
    let mut union: Vec<(i64, i64)> = Vec::new();
    for (start, end) in compiles {
        match union.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => union.push((start, end)),
        }
    }
    steps
        .iter()
        .map(|(step_start, step_end)| {
            let ps: i64 = union
                .iter()
                .map(|(start, end)| ((*end).min(*step_end) - (*start).max(*step_start)).max(0))
                .fold(0i64, i64::saturating_add);
            ps as f64 / 1e9
        })
        .collect()
}
