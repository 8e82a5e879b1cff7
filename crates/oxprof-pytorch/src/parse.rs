//! A PyTorch run (a Kineto trace imported by `oxprof-kineto`) read the way torch-tb-profiler
//! 0.4.3's `RunProfileData.process` reads it, once, for the overview, operator and kernel
//! reports: events by category, the operator tree of each thread with its runtimes and the
//! device activity they launched (by correlation id), the steps (host `ProfilerStep#N`
//! widened by the device work they launched), the role ranges of the step-time breakdown,
//! and GPU metrics.
//!
//! Times are microseconds as `f64`, computed from the model's exact picoseconds the way
//! Python computes them from the JSON text (`ts` the double nearest the decimal, `end = ts +
//! dur`), so oxprof's sums equal the reference's to rounding. The one deliberate difference
//! from 0.4.3: `cuda_runtime` and `cuda_driver` events are runtime events too (0.4.3 knows
//! only the category `runtime`, which Kineto stopped writing in 2022).

use oxprof_model::{Event, StatMetadataId, StatValue, XPlane, XSpace};
use rustc_hash::FxHashMap;
use std::sync::Arc;

use super::id_index::{IdIndex, IdLists};
use super::ranges::{self, Range};
use super::start_order::{LineAt, StartOrder};

/// The category of an event as torch-tb-profiler types it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    Trace,
    Operator,
    ProfilerStep,
    Runtime,
    Kernel,
    Memcpy,
    Memset,
    Python,
    PythonFunction,
    Module,
    /// A `user_annotation` kept by torch-tb-profiler: a gloo/NCCL collective.
    UserAnnotation,
    /// Ignored (memory instants' duration events, other categories).
    Other,
}

/// Collective ops torch-tb-profiler recognises.
const COMM_OPS: [&str; 10] = [
    "nccl:broadcast",
    "nccl:reduce",
    "nccl:all_reduce",
    "nccl:all_gather",
    "nccl:reduce_scatter",
    "gloo:broadcast",
    "gloo:reduce",
    "gloo:all_reduce",
    "gloo:all_gather",
    "gloo:reduce_scatter",
];

/// Kernel-name substrings of Tensor Core kernels (torch-tb-profiler's `TC_Allowlist`).
const TC_KERNELS: [&str; 18] = [
    "h884",
    "s884",
    "h1688",
    "s1688",
    "hmma",
    "i8816",
    "16816",
    "dgrad_1x1_stride_2x2",
    "first_layer_wgrad_kernel",
    "conv1x1",
    "conv2d_c1_k1",
    "direct_group",
    "xmma_implicit_gemm",
    "xmma_sparse_conv",
    "xmma_warp_specialized_implicit_gemm",
    "xmma_gemm",
    "xmma_sparse_gemm",
    "c1688",
];

/// Operators that may use Tensor Cores (torch-tb-profiler's `TC_OP_Allowlist`).
const TC_OPS: &[&str] = &[
    "aten::_convolution",
    "aten::conv1d",
    "aten::conv2d",
    "aten::conv3d",
    "aten::conv_tbc",
    "aten::conv_transpose1d",
    "aten::conv_transpose2d",
    "aten::conv_transpose3d",
    "aten::convolution",
    "aten::cudnn_convolution",
    "aten::cudnn_convolution_transpose",
    "aten::prelu",
    "aten::addmm",
    "aten::addmv",
    "aten::addr",
    "aten::matmul",
    "aten::mm",
    "aten::mv",
    "aten::linear",
    "aten::addbmm",
    "aten::baddbmm",
    "aten::bmm",
    "aten::chain_matmul",
    "aten::linalg_multi_dot",
    "aten::_thnn_fused_lstm_cell",
    "aten::_thnn_fused_gru_cell",
    "aten::lstm_cell",
    "aten::gru_cell",
    "aten::rnn_tanh_cell",
    "aten::rnn_relu_cell",
    "CudnnConvolutionBackward",
    "BmmBackward0",
    "aten::cudnn_convolution_transpose_backward",
    "CudnnConvolutionTransposeBackward",
    "MmBackward",
    "aten::cudnn_convolution_backward_weight",
    "aten::addmm_",
    "AddmvBackward",
    "MvBackward",
    "aten::cudnn_convolution_transpose_backward_weight",
    "aten::cudnn_convolution_transpose_backward_input",
    "AddmmBackward",
    "aten::cudnn_convolution_backward_input",
    "AddbmmBackward",
    "aten::cudnn_convolution_backward",
];

pub(crate) fn kernel_uses_tensor_cores(name: &str) -> bool {
    TC_KERNELS.iter().any(|p| name.contains(p))
}

fn op_is_tc_eligible(name: &str) -> bool {
    TC_OPS.contains(&name)
}

/// What a name tells, by torch-tb-profiler's allow-lists.
#[derive(Debug, Clone, Copy)]
struct NameFacts {
    tensor_core_kernel: bool,
    tensor_core_op: bool,
    data_loader: bool,
    /// Not a name torch-tb-profiler's operator views leave out (`is_operator_node`).
    listed: bool,
}

impl NameFacts {
    /// A text that is not a name.
    const NONE: NameFacts =
        NameFacts { tensor_core_kernel: false, tensor_core_op: false, data_loader: false, listed: false };

    fn of(name: &str) -> NameFacts {
        NameFacts {
            tensor_core_kernel: kernel_uses_tensor_cores(name),
            tensor_core_op: op_is_tc_eligible(name),
            data_loader: is_data_loader(name),
            listed: !matches!(name, "DataParallel.forward" | "DistributedDataParallel.forward")
                && !name.starts_with("Optimizer."),
        }
    }
}

/// Whether `name` is a DataLoader's (or DataPipe's) fetch, as torch-tb-profiler tells it.
pub fn is_data_loader(name: &str) -> bool {
    (name.starts_with("enumerate(DataLoader)#") && name.ends_with(".__next__"))
        || name.starts_with("enumerate(DataPipe)#")
}

/// The roles of the step-time breakdown, in torch-tb-profiler's order (`ProfileRole`).
pub const ROLES: [&str; 8] =
    ["Kernel", "Memcpy", "Memset", "Communication", "Runtime", "DataLoader", "CPU Exec", "Other"];
const KERNEL: usize = 0;
const MEMCPY: usize = 1;
const MEMSET: usize = 2;
pub(crate) const COMMUNICATION: usize = 3;
const RUNTIME: usize = 4;
pub(crate) const DATA_LOADER: usize = 5;
const CPU_OP: usize = 6;

/// Kernel launch facts Kineto records as args: one per distinct set, shared by the kernels
/// launched alike (a few per kernel name, where devices are millions).
#[derive(Debug, Clone, Default)]
pub(crate) struct KernelArgs {
    pub blocks_per_sm: Option<f64>,
    pub occupancy: Option<f64>,
    /// Python's `str()` of the arg (`[80, 1, 1]`, `None`).
    pub grid: Arc<str>,
    pub block: Arc<str>,
    pub registers: i64,
    pub shared_memory: i64,
    pub device: Option<i64>,
}

impl KernelArgs {
    /// Everything it holds, floats by their bits (so equal sets hash alike).
    fn key(&self) -> impl Eq + std::hash::Hash + '_ {
        (
            self.blocks_per_sm.map(f64::to_bits),
            self.occupancy.map(f64::to_bits),
            &*self.grid,
            &*self.block,
            self.registers,
            self.shared_memory,
            self.device,
        )
    }
}

impl PartialEq for KernelArgs {
    fn eq(&self, other: &KernelArgs) -> bool {
        self.key() == other.key()
    }
}

impl Eq for KernelArgs {}

impl std::hash::Hash for KernelArgs {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

/// One event as torch-tb-profiler reads it, while the walk in start order is at it (never
/// kept: tens of millions on multi-GB traces): texts are indices into [`Texts`].
struct Ev {
    ty: Ty,
    thread: u32,
    /// Index into [`Texts::all`].
    name: u32,
    /// Index into [`Texts::all`]: `Input Dims` as Python prints it.
    shape: u32,
    /// Index into [`Texts::all`] ([`NO_TEXT`]: none).
    stack: u32,
    ts: f64,
    dur: f64,
    ext: Option<i64>,
    corr: Option<i64>,
    /// A device activity's launch facts (default for copies and sets).
    kernel: Option<Arc<KernelArgs>>,
    /// A python function's ids.
    python: PythonIds,
}

/// [`Parsed::texts`] entries every parse has: no shape, and no `Input Dims`.
const SHAPE_NONE: u32 = 0;
const SHAPE_EMPTY_LIST: u32 = 1;
/// No text (a node without a call stack).
pub(crate) const NO_TEXT: u32 = u32::MAX;

/// The end of a list of children or runtimes.
pub(crate) const NO_LINK: u32 = u32::MAX;

pub(crate) fn link(id: u32) -> Option<usize> {
    (id != NO_LINK).then_some(id as usize)
}

/// What events refer to by index, each text made once: names, shapes and stacks repeat
/// across millions of events. The table becomes [`Parsed::texts`]: nodes and devices hold
/// 4-byte indices instead of a pointer each.
struct Texts<'a> {
    all: Vec<Box<str>>,
    /// What torch-tb-profiler decides from each name by substring matching, once per name
    /// (by index into `all`; shapes and stacks have none).
    facts: Vec<NameFacts>,
    shape_ids: FxHashMap<&'a str, u32>,
    stack_ids: FxHashMap<&'a str, u32>,
    /// Python's `str()` of kernels' `grid`/`block` texts, by the text.
    kernel_texts: FxHashMap<&'a str, Arc<str>>,
    /// `None`, what an absent `grid`/`block` reads as.
    none_text: Arc<str>,
    /// Each distinct set of launch facts, once.
    kernel_args: rustc_hash::FxHashSet<Arc<KernelArgs>>,
}

impl<'a> Texts<'a> {
    fn new() -> Texts<'a> {
        Texts {
            all: vec![Box::from(""), Box::from("[]")],
            facts: vec![NameFacts::NONE; 2],
            shape_ids: FxHashMap::default(),
            stack_ids: FxHashMap::default(),
            kernel_texts: FxHashMap::default(),
            none_text: Arc::from("None"),
            kernel_args: Default::default(),
        }
    }

    /// The shared copy of a set of launch facts.
    fn kernel_args(&mut self, args: KernelArgs) -> Arc<KernelArgs> {
        if let Some(kept) = self.kernel_args.get(&args) {
            return kept.clone();
        }
        let args = Arc::new(args);
        self.kernel_args.insert(args.clone());
        args
    }

    fn push(&mut self, text: Box<str>, facts: NameFacts) -> u32 {
        let id = self.all.len() as u32;
        self.all.push(text);
        self.facts.push(facts);
        id
    }

    /// The index of a name first met now.
    fn add_name(&mut self, name: &str) -> u32 {
        self.push(Box::from(name), NameFacts::of(name))
    }

    fn shape_of(&mut self, dims: Option<&'a str>) -> u32 {
        let Some(dims) = dims else { return SHAPE_EMPTY_LIST };
        if let Some(&id) = self.shape_ids.get(dims) {
            return id;
        }
        let id = self.push(Box::from(repr_text(Some(dims), "[]")), NameFacts::NONE);
        self.shape_ids.insert(dims, id);
        id
    }

    fn stack_of(&mut self, stack: Option<&'a str>) -> u32 {
        let Some(stack) = stack else { return NO_TEXT };
        if let Some(&id) = self.stack_ids.get(stack) {
            return id;
        }
        let id = self.push(Box::from(stack), NameFacts::NONE);
        self.stack_ids.insert(stack, id);
        id
    }

    fn kernel_text(&mut self, text: Option<&'a str>) -> Arc<str> {
        match text {
            None => self.none_text.clone(),
            Some(t) => self.kernel_texts.entry(t).or_insert_with(|| Arc::from(repr_text(Some(t), "None"))).clone(),
        }
    }
}

/// The ids a `python_function` event carries.
#[derive(Debug, Clone, Copy, Default)]
struct PythonIds {
    id: Option<i64>,
    parent: Option<i64>,
    module: Option<i64>,
}

/// A `python_function` event as the module hierarchy reads it (torch-tb-profiler's
/// `PythonFunctionEvent` / `ModuleEvent`).
#[derive(Debug, Clone)]
pub(crate) struct PythonFn {
    /// Start, µs.
    pub ts: f64,
    /// `Python id` (absent: `None`, which Python keys like any other id).
    pub id: Option<i64>,
    /// `Python parent id`.
    pub parent: Option<i64>,
    /// For an `nn.Module` forward: its name (`nn.Module: Linear_0`) and `Python module id`.
    pub module: Option<(String, i64)>,
}

/// A `[memory]` instant (an allocator event of `profile_memory`), as torch-tb-profiler's
/// `MemoryRecord` holds it.
#[derive(Debug, Clone)]
pub(crate) struct MemRecord {
    pub ts: f64,
    pub thread: u32,
    /// `CPU`, `GPU<id>`; `None` for other device types (torch-tb-profiler skips them).
    pub device: Option<String>,
    /// `Addr` (absent before PyTorch 1.10).
    pub addr: Option<i64>,
    /// `Bytes`: positive for an allocation, negative for a release.
    pub bytes: i64,
    /// `Total Allocated` / `Total Reserved`, NaN when absent.
    pub total_allocated: f64,
    pub total_reserved: f64,
    /// The operator an allocation happened in, and that operator's parent (any node); a
    /// release takes its allocation's.
    pub op: Option<usize>,
    pub parent: Option<usize>,
}

/// What kind of tree node an operator-like event is (torch-tb-profiler's node classes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NodeKind {
    Root,
    Operator,
    ProfilerStep,
    Module,
    DataLoader,
    Optimizer,
}

/// A node of a thread's operator tree.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    /// Index into [`Parsed::texts`].
    pub name: u32,
    pub kind: NodeKind,
    pub ty: Ty,
    pub start: f64,
    pub end: f64,
    /// A module node's `Python module id`, another node's external id (when `has_ext`):
    /// one field for both, as a module node drops its external id ([`Node::ext`],
    /// [`Node::module_id`]).
    id: i64,
    has_ext: bool,
    /// Index into [`Parsed::texts`]: `Input Dims` as Python prints it.
    pub shape: u32,
    /// Index into [`Parsed::texts`] ([`NO_TEXT`]: none).
    pub stack: u32,
    /// Whether the name is one torch-tb-profiler's operator views list (see
    /// [`Node::is_listed_operator`]).
    pub listed_name: bool,
    pub tc_eligible: bool,
    /// Children in start order, as a list through [`Node::next_sibling`] ([`NO_LINK`]:
    /// none; read with [`Parsed::children`]). Links instead of a vector per node: tens of
    /// millions of nodes on multi-GB traces.
    pub first_child: u32,
    pub next_sibling: u32,
    /// Runtimes it launched, as a list through [`Runtime::next`] ([`Parsed::node_runtimes`]);
    /// of a root, its index in [`Parsed::root_runtimes`] (a root's runtimes may also be an
    /// operator's, as in torch-tb-profiler, where both hold the same object).
    pub first_runtime: u32,
}

/// A node's times (torch-tb-profiler's `fill_stats`), in [`Parsed::node_times`] by node:
/// apart from the nodes, so that the walk, which holds the model, does not carry them.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NodeTimes {
    pub device_total: f64,
    pub host_self: f64,
    pub device_self: f64,
    pub tc_self: f64,
    pub tc_total: f64,
}

impl Node {
    /// The external id its runtimes are joined by (a module node has none: always 0 in
    /// traces).
    pub(crate) fn ext(&self) -> Option<i64> {
        (self.kind != NodeKind::Module && self.has_ext).then_some(self.id)
    }

    /// `Python module id` of a module node (0 otherwise).
    pub(crate) fn module_id(&self) -> i64 {
        if self.kind == NodeKind::Module { self.id } else { 0 }
    }

    pub(crate) fn duration(&self) -> f64 {
        self.end - self.start
    }

    /// torch-tb-profiler's `is_operator_node`: the plain operators its views list.
    pub(crate) fn is_listed_operator(&self) -> bool {
        self.kind == NodeKind::Operator && self.ty == Ty::Operator && self.listed_name
    }
}

/// A CUDA runtime call with the device activity it launched.
#[derive(Debug, Clone)]
pub(crate) struct Runtime {
    /// `None` for the stand-in of device activity no runtime launched.
    pub span: Option<(f64, f64)>,
    /// The device activity it launched, as a list through [`Device::next_in_runtime`]
    /// from this to `last_device` ([`NO_LINK`]: none; read with [`Parsed::runtime_devices`]);
    /// of a stand-in, its index in [`Parsed::standin_devices`] (each main thread's stand-in
    /// holds the same activity).
    pub first_device: u32,
    pub last_device: u32,
    pub device_duration: f64,
    pub tc_duration: f64,
    /// The next runtime of its operator ([`NO_LINK`]: the last).
    pub next: u32,
}

/// Kernel, memcpy or memset activity.
#[derive(Debug, Clone)]
pub(crate) struct Device {
    /// Index into [`Parsed::texts`].
    pub name: u32,
    pub ty: Ty,
    pub start: f64,
    pub end: f64,
    /// The raw `dur` (what the per-name kernel table sums).
    pub dur: f64,
    pub kernel: Arc<KernelArgs>,
    pub tc_used: bool,
    /// The operator whose runtime launched it ([`NO_LINK`]: none; read with
    /// [`Device::op`]).
    pub launched_by: u32,
    pub op_tc_eligible: bool,
    /// The next device activity of its runtime ([`NO_LINK`]: the last).
    pub next_in_runtime: u32,
}

impl Device {
    /// The operator whose runtime launched it.
    pub(crate) fn op(&self) -> Option<usize> {
        link(self.launched_by)
    }
}

/// The run as torch-tb-profiler's `RunProfileData` holds it after `process()`.
#[derive(Debug, Default)]
pub struct Parsed {
    /// Names, shapes and call stacks, each once: what nodes and devices refer to by index.
    pub(crate) texts: Vec<Box<str>>,
    pub(crate) nodes: Vec<Node>,
    /// Each node's times, made once the trees are built.
    pub(crate) node_times: Vec<NodeTimes>,
    pub(crate) runtimes: Vec<Runtime>,
    pub(crate) devices: Vec<Device>,
    /// Roots of the per-thread trees, by thread.
    pub(crate) roots: Vec<usize>,
    /// The runtimes of each root (external id 0, and the stand-in of device activity no
    /// runtime launched), by [`Node::first_runtime`].
    pub(crate) root_runtimes: Vec<Vec<usize>>,
    /// The device activity of each stand-in runtime, by [`Runtime::first_device`].
    pub(crate) standin_devices: Vec<Vec<usize>>,
    /// Steps after device widening: (name, start, end) in µs.
    pub(crate) steps: Vec<(String, f64, f64)>,
    /// Whether steps came from `ProfilerStep#N` (else one step spans the host events).
    pub(crate) has_profiler_steps: bool,
    /// Steps dropped at the end because their device work looks cut off.
    pub(crate) tail_steps_removed: usize,
    pub(crate) role_ranges: Vec<Vec<Range>>,
    pub(crate) global_span: (f64, f64),
    pub(crate) comm_libs: (bool, bool),
    pub(crate) use_dp: bool,
    pub(crate) use_ddp: bool,
    pub(crate) used_devices: Vec<i64>,
    /// Kernels per device id (from the `device` arg).
    pub(crate) kernel_devices: Vec<i64>,
    /// Events whose category torch-tb-profiler cannot read (no `cat`): skipped.
    pub(crate) skipped_no_category: u64,
    /// Overlapping events on one thread that the tree could not nest: left out of it.
    pub(crate) unnested: u64,
    /// The trace's `deviceProperties`, in its order.
    pub(crate) device_props: Vec<DeviceProps>,
    /// Whether the space looked like a PyTorch trace.
    pub(crate) pytorch: bool,
    /// The thread of each tree in `roots`.
    pub(crate) root_threads: Vec<u32>,
    /// `[memory]` instants by time (stable).
    pub(crate) memory: Vec<MemRecord>,
    /// torch-tb-profiler's `profiler_start_ts`: the first event it keeps, memory instants too.
    pub(crate) profiler_start: f64,
    /// Memory records (indices into `memory`) inside each listed operator, as its
    /// `MemorySnapshot.op_memory_table` (`memory::attribute`).
    pub(crate) mem_ops: FxHashMap<usize, Vec<usize>>,
    /// `python_function` events by start (then `Python id`), for the module hierarchy.
    pub(crate) python_fns: Vec<PythonFn>,
    /// Nodes the memory walk entered (`processed_node`): statistics skip the others' subtrees.
    pub(crate) mem_visited: Vec<bool>,
    /// Memory records no operator encloses (outside every tree or in a non-operator node).
    pub(crate) mem_unattributed: u64,
    /// Listed operators of every tree in torch-tb-profiler's traversal order, and the
    /// kernels they (and the trees' roots) launched ([`Parsed::operators_and_kernels`]):
    /// walked once here instead of by each view.
    pub(crate) listed_ops: Vec<usize>,
    pub(crate) op_kernels: Vec<usize>,
}

/// A GPU's properties from the trace's `deviceProperties`.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct DeviceProps {
    /// Device id.
    pub id: i64,
    /// `name`.
    pub name: Option<String>,
    /// `totalGlobalMem`, bytes.
    pub memory_bytes: Option<i64>,
    /// `computeMajor`.
    pub compute_major: Option<i64>,
    /// `computeMinor`.
    pub compute_minor: Option<i64>,
    /// `numSms`.
    pub sm_count: Option<i64>,
}

/// Whether a space was imported from a PyTorch (Kineto) trace.
pub fn is_pytorch(space: &XSpace) -> bool {
    space.plane(oxprof_model::schema::HOST_THREADS_PLANE_NAME).is_some_and(|p| {
        p.stats().any(|s| matches!(s.name(), "schemaVersion" | "baseTimeNanoseconds" | "traceName" | "distributedInfo"))
            || p.stat_metadata_named("External id").is_some()
    })
}

/// Stat ids of one plane for the args read.
struct Keys {
    category: Option<StatMetadataId>,
    phase: Option<StatMetadataId>,
    ext: [Option<StatMetadataId>; 2],
    corr: Option<StatMetadataId>,
    dims: [Option<StatMetadataId>; 2],
    stack: Option<StatMetadataId>,
    module_id: Option<StatMetadataId>,
    python_id: Option<StatMetadataId>,
    python_parent_id: Option<StatMetadataId>,
    device: Option<StatMetadataId>,
    mem: [Option<StatMetadataId>; 6],
    bps: Option<StatMetadataId>,
    occupancy: Option<StatMetadataId>,
    grid: Option<StatMetadataId>,
    block: Option<StatMetadataId>,
    regs: Option<StatMetadataId>,
    smem: Option<StatMetadataId>,
    /// Which of the args an event's stat is, by stat metadata index: one lookup per stat
    /// instead of comparing it with every key.
    args: Vec<Arg>,
}

/// The event args the parse reads (see [`Keys`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arg {
    Other,
    ExtUpper,
    ExtLower,
    Corr,
    Dims,
    DimsLower,
    Stack,
    PythonId,
    PythonParentId,
    ModuleId,
    Device,
    BlocksPerSm,
    Occupancy,
    Grid,
    Block,
    Registers,
    SharedMemory,
}

impl Keys {
    /// What an event's stat is to the parse.
    #[inline]
    fn arg(&self, id: StatMetadataId) -> Arg {
        self.args.get(id.index()).copied().unwrap_or(Arg::Other)
    }

    fn with_args(mut self, stat_metadata: usize) -> Keys {
        let mut args = vec![Arg::Other; stat_metadata];
        for (key, arg) in [
            (self.ext[0], Arg::ExtUpper),
            (self.ext[1], Arg::ExtLower),
            (self.corr, Arg::Corr),
            (self.dims[0], Arg::Dims),
            (self.dims[1], Arg::DimsLower),
            (self.stack, Arg::Stack),
            (self.python_id, Arg::PythonId),
            (self.python_parent_id, Arg::PythonParentId),
            (self.module_id, Arg::ModuleId),
            (self.device, Arg::Device),
            (self.bps, Arg::BlocksPerSm),
            (self.occupancy, Arg::Occupancy),
            (self.grid, Arg::Grid),
            (self.block, Arg::Block),
            (self.regs, Arg::Registers),
            (self.smem, Arg::SharedMemory),
        ] {
            // The first key of a name wins, as the comparisons in order did.
            if let Some(slot) = key.and_then(|k| args.get_mut(k.index()))
                && *slot == Arg::Other
            {
                *slot = arg;
            }
        }
        self.args = args;
        self
    }

    fn of(p: &XPlane) -> Keys {
        let k = |n: &str| p.stat_metadata_named(n);
        Keys {
            category: k("category"),
            phase: k("ph"),
            ext: [k("External id"), k("external id")],
            corr: k("correlation_id"),
            dims: [k("Input Dims"), k("Input dims")],
            stack: k("Call stack"),
            module_id: k("Python module id"),
            python_id: k("Python id"),
            python_parent_id: k("Python parent id"),
            device: k("device"),
            mem: [k("Addr"), k("Bytes"), k("Total Allocated"), k("Total Reserved"), k("Device Type"), k("Device Id")],
            bps: k("blocks per SM"),
            occupancy: k("est. achieved occupancy %"),
            grid: k("grid"),
            block: k("block"),
            regs: k("registers per thread"),
            smem: k("shared memory"),
            args: Vec::new(),
        }
        .with_args(p.stat_metadata_count())
    }
}

/// Picoseconds as the double Python reads from the same decimal microseconds.
fn ps_to_us(ps: i128) -> f64 {
    const EXACT: i128 = 1 << 53;
    if ps.abs() < EXACT {
        // Both exact: one correctly rounded division.
        ps as f64 / 1e6
    } else {
        // Whole µs (exact) plus the fraction: the fraction's rounding error is far below
        // half an ulp of numbers this large, so the sum rounds as the decimal would.
        let q = ps.div_euclid(1_000_000);
        let r = ps.rem_euclid(1_000_000);
        q as f64 + r as f64 / 1e6
    }
}

/// Python's `str()` of a JSON value (`[[2, 3], []]`, `'a'`, `None`).
pub(crate) fn py_repr(v: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match v {
        Value::Null => out.push_str("None"),
        Value::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (_, Some(u), _) => out.push_str(&u.to_string()),
            (_, _, Some(f)) => {
                let s = format!("{f:?}");
                out.push_str(&s);
            }
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => {
            // Python quotes with ' unless the text has ' and no ".
            let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
            out.push(quote);
            for ch in s.chars() {
                match ch {
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    c if c == quote => {
                        out.push('\\');
                        out.push(c);
                    }
                    c => out.push(c),
                }
            }
            out.push(quote);
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                py_repr(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                py_repr(&Value::String(k.clone()), out);
                out.push_str(": ");
                py_repr(item, out);
            }
            out.push('}');
        }
    }
}

fn repr_text(text: Option<&str>, absent: &str) -> String {
    match text {
        None => absent.to_string(),
        Some(t) => match serde_json::from_str::<serde_json::Value>(t) {
            Ok(v) => {
                let mut s = String::new();
                py_repr(&v, &mut s);
                s
            }
            Err(_) => {
                let mut s = String::new();
                py_repr(&serde_json::Value::String(t.to_string()), &mut s);
                s
            }
        },
    }
}

fn category_type(cat: &str, name: &str, has_module_id: bool) -> Ty {
    match cat.to_ascii_lowercase().as_str() {
        "trace" => Ty::Trace,
        "cpu_op" | "operator" => {
            if name.starts_with("ProfilerStep#") {
                Ty::ProfilerStep
            } else {
                Ty::Operator
            }
        }
        "runtime" | "cuda_runtime" | "cuda_driver" => Ty::Runtime,
        "kernel" => Ty::Kernel,
        "memcpy" | "gpu_memcpy" => Ty::Memcpy,
        "memset" | "gpu_memset" => Ty::Memset,
        "python" => Ty::Python,
        "python_function" if has_module_id => Ty::Module,
        "python_function" => Ty::PythonFunction,
        "user_annotation" | "gpu_user_annotation" => {
            if name.starts_with("ProfilerStep#") {
                Ty::ProfilerStep
            } else if COMM_OPS.contains(&name) {
                Ty::UserAnnotation
            } else {
                Ty::Other
            }
        }
        _ => Ty::Other,
    }
}

fn stat_i64(v: StatValue<'_>) -> Option<i64> {
    match v {
        StatValue::Int64(x) => Some(x),
        StatValue::Uint64(x) => i64::try_from(x).ok(),
        StatValue::Double(d) if d.fract() == 0.0 => Some(d as i64),
        StatValue::Str(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn stat_f64(v: StatValue<'_>) -> Option<f64> {
    match v {
        StatValue::Int64(x) => Some(x as f64),
        StatValue::Uint64(x) => Some(x as f64),
        StatValue::Double(d) => Some(d),
        _ => None,
    }
}

fn base_name(line: &str) -> &str {
    match line.rfind(" (overlap ") {
        Some(i) if line.ends_with(')') => &line[..i],
        _ => line,
    }
}

/// How one plane's events are read: its stat ids, and per event metadata what
/// torch-tb-profiler makes of its events.
struct PlaneRead {
    keys: Keys,
    kinds: Vec<Kind>,
    /// Each event name's index into [`Texts::all`], made on first use.
    name_ids: Vec<u32>,
}

/// What torch-tb-profiler makes of the events of one event metadata entry.
#[derive(Clone, Copy)]
struct Kind {
    /// Whether its events have a category (complete ones without are counted and skipped).
    categorized: bool,
    complete: bool,
    /// A `[memory]` instant.
    memory: bool,
    /// Its type, and its type when the event has a `Python module id` (a module's forward).
    ty: Ty,
    ty_with_module: Ty,
}

impl Kind {
    /// The type of one of its complete events.
    fn ty_of(&self, e: &Event<'_>, keys: &Keys) -> Ty {
        if self.ty == self.ty_with_module || keys.module_id.is_none() {
            return self.ty;
        }
        if e.stats().any(|s| Some(s.metadata_id()) == keys.module_id) { self.ty_with_module } else { self.ty }
    }
}

/// The lines to walk and what one pass over every event finds before the walk: threads,
/// the memory instants, how many rows of each kind the parse makes.
struct Survey {
    planes: Vec<PlaneRead>,
    lines: Vec<LineAt>,
    /// The thread of each of `lines`.
    line_threads: Vec<u32>,
    threads: usize,
    /// `[memory]` instants by time (stable).
    memory: Vec<MemRecord>,
    /// Complete events without a category.
    skipped: u64,
    devices: usize,
    runtimes: usize,
    nodes: usize,
}

/// Times as the trace wrote them, from the host plane: `baseTimeNanoseconds` and the shift
/// the importer may have applied to epoch-based times (ns).
fn base_and_shift_ns(space: &XSpace) -> (i64, i64) {
    let host = space.plane(oxprof_model::schema::HOST_THREADS_PLANE_NAME);
    let stat = |name: &str| {
        host.and_then(|p| p.stats().find(|s| s.name() == name).and_then(|s| stat_i64(s.value))).unwrap_or(0)
    };
    (stat("baseTimeNanoseconds"), stat(oxprof_model::schema::TIME_SHIFT_STAT))
}

/// One pass over every event of `space` in the model's order (see [`Survey`]).
fn survey(space: &XSpace) -> Survey {
    let (base_ns, shift_ns) = base_and_shift_ns(space);
    let mut threads: FxHashMap<(i64, &str), u32> = FxHashMap::default();
    let mut out = Survey {
        planes: Vec::with_capacity(space.planes.len()),
        lines: Vec::new(),
        line_threads: Vec::new(),
        threads: 0,
        memory: Vec::new(),
        skipped: 0,
        devices: 0,
        runtimes: 0,
        nodes: 0,
    };
    for (plane_index, plane) in space.planes.iter().enumerate() {
        let keys = Keys::of(plane);
        let kinds: Vec<Kind> = plane
            .event_metadata_ids()
            .map(|id| {
                let mut cat = None;
                let mut complete = true;
                let mut instant = false;
                for s in plane.metadata_stats(id) {
                    if Some(s.metadata_id()) == keys.category {
                        cat = s.as_str();
                    } else if Some(s.metadata_id()) == keys.phase {
                        complete = false;
                        instant = s.as_str() == Some("i");
                    }
                }
                let name = plane.str(plane.event_metadata_at(id).name);
                let (ty, ty_with_module) = match cat {
                    Some(cat) => (category_type(cat, name, false), category_type(cat, name, true)),
                    None => (Ty::Other, Ty::Other),
                };
                Kind { categorized: cat.is_some(), complete, memory: instant && name == "[memory]", ty, ty_with_module }
            })
            .collect();
        for (line_index, line) in plane.lines.iter().enumerate() {
            let next = threads.len() as u32;
            let thread = *threads.entry((plane.id, base_name(&line.name))).or_insert(next);
            let line_ps = (i128::from(line.timestamp_ns) + i128::from(shift_ns) - i128::from(base_ns)) * 1000;
            out.lines.push(LineAt { plane: plane_index as u32, line: line_index as u32, line_ps });
            out.line_threads.push(thread);
            for e in line.events(plane) {
                let Some(kind) = kinds.get(e.metadata_id().index()) else { continue };
                if kind.memory {
                    out.memory.push(read_memory(&e, &keys, thread, line_ps));
                }
                if !kind.complete {
                    continue;
                }
                if !kind.categorized {
                    // torch-tb-profiler fails on such a trace; oxprof counts and skips them.
                    out.skipped += 1;
                    continue;
                }
                match kind.ty_of(&e, &keys) {
                    Ty::Kernel | Ty::Memcpy | Ty::Memset => out.devices += 1,
                    Ty::Runtime => out.runtimes += 1,
                    Ty::Python | Ty::Operator | Ty::ProfilerStep | Ty::Module | Ty::UserAnnotation => out.nodes += 1,
                    _ => {}
                }
            }
        }
        let name_ids = vec![u32::MAX; plane.event_metadata_count()];
        out.planes.push(PlaneRead { keys, kinds, name_ids });
    }
    out.threads = threads.len();
    out.memory.sort_by(|a, b| a.ts.total_cmp(&b.ts));
    out
}

fn read_memory(e: &Event<'_>, keys: &Keys, thread: u32, line_ps: i128) -> MemRecord {
    let mut r = MemRecord {
        ts: ps_to_us(line_ps + i128::from(e.offset_ps())),
        thread,
        device: None,
        addr: None,
        bytes: 0,
        total_allocated: f64::NAN,
        total_reserved: f64::NAN,
        op: None,
        parent: None,
    };
    let (mut dtype, mut did) = (None, None);
    for s in e.stats() {
        let id = Some(s.metadata_id());
        let [addr, bytes, allocated, reserved, device_type, device_id] = keys.mem;
        if id == addr {
            // Addresses are keys only: a u64 above i64::MAX keeps its bits.
            r.addr = match s.value {
                StatValue::Uint64(x) => Some(x as i64),
                v => stat_i64(v),
            };
        } else if id == bytes {
            r.bytes = stat_i64(s.value).unwrap_or(0);
        } else if id == allocated {
            r.total_allocated = stat_f64(s.value).unwrap_or(f64::NAN);
        } else if id == reserved {
            r.total_reserved = stat_f64(s.value).unwrap_or(f64::NAN);
        } else if id == device_type {
            dtype = stat_i64(s.value);
        } else if id == device_id {
            did = stat_i64(s.value);
        }
    }
    r.device = match dtype {
        Some(0) => Some("CPU".to_string()),
        Some(1) => Some(format!("GPU{}", did.map_or_else(|| "None".to_string(), |d| d.to_string()))),
        _ => None,
    };
    r
}

/// An event starting at `ts` (µs) as torch-tb-profiler reads it; `None` for what it
/// ignores (other types, instants, events without a category).
fn read_event<'a>(e: &Event<'a>, ts: f64, plane: &mut PlaneRead, thread: u32, texts: &mut Texts<'a>) -> Option<Ev> {
    let kind = *plane.kinds.get(e.metadata_id().index())?;
    let keys = &plane.keys;
    let ty = kind.ty_of(e, keys);
    if ty == Ty::Other || !kind.complete || !kind.categorized {
        return None;
    }
    let name_id = match plane.name_ids.get_mut(e.metadata_id().index()) {
        Some(id) if *id != u32::MAX => *id,
        slot => {
            let id = texts.add_name(e.name());
            if let Some(slot) = slot {
                *slot = id;
            }
            id
        }
    };
    let mut ev = Ev {
        ty,
        thread,
        name: name_id,
        shape: SHAPE_NONE,
        stack: NO_TEXT,
        ts,
        dur: ps_to_us(i128::from(e.duration_ps())),
        ext: None,
        corr: None,
        kernel: None,
        python: PythonIds::default(),
    };
    let mut dims: [Option<&str>; 2] = [None, None];
    let mut stack = None;
    let mut ext_lower = None;
    let mut kernel = (ty == Ty::Kernel).then(KernelArgs::default);
    let python = &mut ev.python;
    let mut grid = None;
    let mut block = None;
    let python_fn = matches!(ty, Ty::PythonFunction | Ty::Module);
    for s in e.stats() {
        match keys.arg(s.metadata_id()) {
            Arg::Other => {}
            Arg::ExtUpper => ev.ext = stat_i64(s.value),
            Arg::ExtLower => ext_lower = stat_i64(s.value),
            Arg::Corr => ev.corr = stat_i64(s.value),
            Arg::Dims => dims[0] = s.as_str(),
            Arg::DimsLower => dims[1] = s.as_str(),
            Arg::Stack => stack = s.as_str(),
            Arg::PythonId if python_fn => python.id = stat_i64(s.value),
            Arg::PythonParentId if python_fn => python.parent = stat_i64(s.value),
            Arg::ModuleId if python_fn => python.module = stat_i64(s.value),
            arg => {
                let Some(kernel) = kernel.as_mut() else { continue };
                match arg {
                    Arg::Device => kernel.device = stat_i64(s.value),
                    Arg::BlocksPerSm => kernel.blocks_per_sm = stat_f64(s.value),
                    Arg::Occupancy => kernel.occupancy = stat_f64(s.value),
                    Arg::Grid => grid = s.as_str(),
                    Arg::Block => block = s.as_str(),
                    Arg::Registers => kernel.registers = stat_i64(s.value).unwrap_or(0),
                    Arg::SharedMemory => kernel.shared_memory = stat_i64(s.value).unwrap_or(0),
                    _ => {}
                }
            }
        }
    }
    // torch-tb-profiler reads `external id` first, then `External id`.
    if ext_lower.is_some() {
        ev.ext = ext_lower;
    }
    ev.stack = texts.stack_of(stack);
    if matches!(ty, Ty::Operator | Ty::ProfilerStep | Ty::Python | Ty::UserAnnotation) {
        ev.shape = texts.shape_of(dims[0].or(dims[1]));
    }
    if let Some(mut kernel) = kernel {
        kernel.grid = texts.kernel_text(grid);
        kernel.block = texts.kernel_text(block);
        ev.kernel = Some(texts.kernel_args(kernel));
    } else if matches!(ty, Ty::Memcpy | Ty::Memset) {
        ev.kernel = Some(texts.kernel_args(KernelArgs::default()));
    }
    Some(ev)
}

/// Builds the parsed run: one pass over the events to count them, then one walk in
/// torch-tb-profiler's order (by start, stably) that builds nodes, runtimes, devices, steps
/// and role ranges as the events come, keeping no row per event.
pub fn parse(space: &XSpace) -> Parsed {
    parse_releasing(space, drop)
}

/// [`parse`] of a model the caller may share: `release` gets it back as soon as the walk
/// has read it, before the trees are built, so that its last holder can free it then
/// instead of holding the model through the rest of the parse.
pub fn parse_releasing<S: std::ops::Deref<Target = XSpace>>(model: S, release: impl FnOnce(S)) -> Parsed {
    let space: &XSpace = &model;
    let Survey { mut planes, lines, line_threads, threads, memory, skipped, devices, runtimes, nodes } = survey(space);
    let mut texts = Texts::new();
    let mut p = Parsed { skipped_no_category: skipped, pytorch: is_pytorch(space), ..Parsed::default() };
    p.profiler_start = memory.iter().map(|r| r.ts).fold(f64::INFINITY, f64::min);
    p.memory = memory;
    p.device_props = device_props(space);

    // Nodes (torch-tb-profiler's `parse_nodes`).
    let mut thread_ops: Vec<Vec<usize>> = Vec::new();
    let mut thread_order: Vec<u32> = Vec::new();
    let mut zero_rts: FxHashMap<u32, Vec<usize>> = FxHashMap::default();
    let mut corr_to_device: FxHashMap<Option<i64>, Vec<usize>> = FxHashMap::default();
    let mut corr_order: Vec<Option<i64>> = Vec::new();
    // Both joins see every runtime: ids index vectors (`id_index`), not hash maps.
    let mut corr_to_runtime = IdIndex::for_rows(runtimes);
    let mut ext_to_runtime = IdLists::for_rows(runtimes);
    let mut comm_ext: rustc_hash::FxHashSet<Option<i64>> = Default::default();
    let mut used_devices = std::collections::BTreeSet::new();
    let mut device_order: Vec<usize> = Vec::new();
    // Each thread's index into `thread_ops`, by thread id (dense: the survey numbered them).
    let mut thread_index: Vec<Option<usize>> = vec![None; threads];
    // The rows are wide and tens of millions on big traces: sized once, never copied.
    p.devices.reserve_exact(devices);
    device_order.reserve_exact(devices);
    p.runtimes.reserve_exact(runtimes + 1);
    p.nodes.reserve_exact(nodes + threads);

    // Steps and role ranges (`parse_steps`), merged as the events come in start order. A
    // kernel's role waits for the end: whether it is communication depends on operators
    // that may start after it.
    let mut roles: Vec<ranges::Union> = (0..7).map(|_| ranges::Union::default()).collect();
    let mut kernel_ranges: Vec<(Range, Option<i64>)> = Vec::new();
    let mut steps: Vec<(String, f64, f64)> = Vec::new();
    let (mut cpu_min, mut cpu_max) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut global_min, mut global_max) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut profiler_span = None;

    for (line, event, ts) in StartOrder::new(space, &lines, ps_to_us) {
        let plane = &mut planes[lines[line].plane as usize];
        let Some(e) = read_event(&event, ts, plane, line_threads[line], &mut texts) else {
            continue;
        };
        let name: &str = &texts.all[e.name as usize];
        let facts = texts.facts[e.name as usize];
        p.profiler_start = p.profiler_start.min(e.ts);
        match e.ty {
            Ty::Kernel | Ty::Memcpy | Ty::Memset => {
                let d = p.devices.len();
                p.devices.push(Device {
                    name: e.name,
                    ty: e.ty,
                    start: e.ts,
                    end: e.ts + e.dur,
                    dur: e.dur,
                    kernel: e.kernel.unwrap_or_default(),
                    tc_used: facts.tensor_core_kernel,
                    launched_by: NO_LINK,
                    op_tc_eligible: false,
                    next_in_runtime: NO_LINK,
                });
                if let Some(dev) = p.devices[d].kernel.device {
                    used_devices.insert(dev);
                }
                match corr_to_runtime.get(e.corr) {
                    Some(rt) => p.append_device(rt, d),
                    None => {
                        let list = corr_to_device.entry(e.corr).or_default();
                        if list.is_empty() {
                            corr_order.push(e.corr);
                        }
                        list.push(d);
                    }
                }
                device_order.push(d);
            }
            Ty::Runtime => {
                let mut devices = corr_to_device.remove(&e.corr).unwrap_or_default();
                devices.sort_by(|&a, &b| {
                    let (a, b) = (&p.devices[a], &p.devices[b]);
                    a.start.total_cmp(&b.start).then(b.end.total_cmp(&a.end))
                });
                let rt = p.runtimes.len();
                p.runtimes.push(Runtime {
                    span: Some((e.ts, e.ts + e.dur)),
                    first_device: NO_LINK,
                    last_device: NO_LINK,
                    device_duration: 0.0,
                    tc_duration: 0.0,
                    next: NO_LINK,
                });
                for d in devices {
                    p.append_device(rt, d);
                }
                corr_to_runtime.insert(e.corr, rt);
                ext_to_runtime.push(e.ext, rt);
                if e.ext == Some(0) {
                    zero_rts.entry(e.thread).or_default().push(rt);
                }
            }
            Ty::Python | Ty::Operator | Ty::ProfilerStep | Ty::Module | Ty::UserAnnotation => {
                let kind = match e.ty {
                    Ty::ProfilerStep => NodeKind::ProfilerStep,
                    Ty::Module => NodeKind::Module,
                    _ if facts.data_loader => NodeKind::DataLoader,
                    _ if name.starts_with("Optimizer.step") => NodeKind::Optimizer,
                    _ => NodeKind::Operator,
                };
                if COMM_OPS.contains(&name) {
                    if name.starts_with("nccl") {
                        p.comm_libs.0 = true;
                    } else {
                        p.comm_libs.1 = true;
                    }
                    comm_ext.insert(e.ext);
                }
                p.use_dp |= name == "DataParallel.forward";
                p.use_ddp |= name == "DistributedDataParallel.forward";
                let node = p.nodes.len();
                p.nodes.push(Node {
                    name: e.name,
                    kind,
                    ty: e.ty,
                    start: e.ts,
                    end: e.ts + e.dur,
                    // Module nodes drop their external id (always 0 in traces).
                    id: if kind == NodeKind::Module { e.python.module.unwrap_or(0) } else { e.ext.unwrap_or(0) },
                    has_ext: kind != NodeKind::Module && e.ext.is_some(),
                    shape: e.shape,
                    stack: e.stack,
                    listed_name: facts.listed,
                    tc_eligible: facts.tensor_core_op,
                    first_child: NO_LINK,
                    next_sibling: NO_LINK,
                    first_runtime: NO_LINK,
                });
                let t = match thread_index.get(e.thread as usize).copied().flatten() {
                    Some(t) => t,
                    None => {
                        thread_ops.push(Vec::new());
                        thread_order.push(e.thread);
                        if let Some(slot) = thread_index.get_mut(e.thread as usize) {
                            *slot = Some(thread_ops.len() - 1);
                        }
                        thread_ops.len() - 1
                    }
                };
                thread_ops[t].push(node);
            }
            _ => {}
        }
        if matches!(e.ty, Ty::PythonFunction | Ty::Module) {
            p.python_fns.push(PythonFn {
                ts: e.ts,
                id: e.python.id,
                parent: e.python.parent,
                module: (e.ty == Ty::Module).then(|| (name.to_string(), e.python.module.unwrap_or(0))),
            });
        }

        let r = (e.ts, e.ts + e.dur);
        match e.ty {
            Ty::Kernel => kernel_ranges.push((r, e.ext)),
            Ty::Memcpy => roles[MEMCPY].push_in_order(r),
            Ty::Memset => roles[MEMSET].push_in_order(r),
            Ty::Runtime => roles[RUNTIME].push_in_order(r),
            Ty::Operator | Ty::UserAnnotation if facts.data_loader => roles[DATA_LOADER].push_in_order(r),
            Ty::ProfilerStep => {
                steps.push((name.split('#').nth(1).unwrap_or("").to_string(), r.0, r.1));
            }
            Ty::Python | Ty::Operator | Ty::UserAnnotation if COMM_OPS.contains(&name) => {
                roles[COMMUNICATION].push_in_order(r)
            }
            Ty::Python | Ty::Operator | Ty::UserAnnotation => roles[CPU_OP].push_in_order(r),
            _ => {}
        }
        if matches!(e.ty, Ty::Python | Ty::Operator | Ty::ProfilerStep) {
            cpu_min = cpu_min.min(r.0);
            cpu_max = cpu_max.max(r.1);
        }
        global_min = global_min.min(r.0);
        global_max = global_max.max(r.1);
        if e.ty == Ty::Trace && name == "PyTorch Profiler (0)" {
            profiler_span = Some(r);
        }
    }
    // The walk's join by correlation is done: its index goes before the trees are built.
    drop(corr_to_runtime);
    // torch-tb-profiler sorts by start, stably on the trace's order, which is `Python id`'s.
    p.python_fns.sort_by(|a, b| a.ts.total_cmp(&b.ts).then(a.id.cmp(&b.id)));
    p.used_devices = used_devices.into_iter().collect();
    let root_texts = (texts.add_name("CallTreeRoot"), texts.push(Box::from("None"), NameFacts::NONE));
    // The texts' lookups borrow the model: dropped here, and the model released.
    p.texts = {
        let texts = texts;
        texts.all
    };
    release(model);

    p.global_span = profiler_span.unwrap_or((global_min, global_max));
    p.has_profiler_steps = !steps.is_empty();
    if steps.is_empty() {
        // torch-tb-profiler spans the host events; without any (a GPU-only trace) its step
        // runs from +2^63 to -2^63 and every number is nonsense: oxprof spans all events.
        if cpu_min <= cpu_max {
            steps.push(("0".to_string(), cpu_min, cpu_max));
        } else if global_min <= global_max {
            steps.push(("0".to_string(), global_min, global_max));
        }
    }
    let (mut kernels, mut communication) = (ranges::Union::default(), roles[COMMUNICATION].take());
    for (r, ext) in kernel_ranges {
        if comm_ext.contains(&ext) {
            communication.push(r);
        } else {
            kernels.push_in_order(r);
        }
    }
    roles[KERNEL] = kernels;
    p.role_ranges = roles.into_iter().map(ranges::Union::finish).collect();
    p.role_ranges[COMMUNICATION] = ranges::merge(communication);

    // Runtimes to operators: the first operator (threads in order, ops by start) with
    // the runtime's external id takes them.
    for ops in &mut thread_ops {
        ops.sort_by(|&a, &b| {
            let (a, b) = (&p.nodes[a], &p.nodes[b]);
            a.start.total_cmp(&b.start).then(b.end.total_cmp(&a.end))
        });
    }
    for ops in &thread_ops {
        for &op in ops {
            if let Some(rts) = ext_to_runtime.take(p.nodes[op].ext()) {
                p.set_runtimes(op, &rts);
            }
        }
    }
    drop(ext_to_runtime);
    // Device activity no runtime launched: kernels under the main thread's root.
    let stale: Vec<usize> = corr_order
        .iter()
        .filter_map(|c| corr_to_device.get(c))
        .flatten()
        .copied()
        .filter(|&d| p.devices[d].ty == Ty::Kernel)
        .collect();

    for (t, ops) in thread_ops.iter().enumerate() {
        let is_main = ops.iter().any(|&o| p.text(p.nodes[o].name).starts_with("ProfilerStep#"));
        let mut root_rts = zero_rts.get(&thread_order[t]).cloned().unwrap_or_default();
        if is_main && !stale.is_empty() {
            let rt = p.runtimes.len();
            let mut devices = stale.clone();
            devices.sort_by(|&a, &b| {
                let (a, b) = (&p.devices[a], &p.devices[b]);
                a.start.total_cmp(&b.start).then(b.end.total_cmp(&a.end))
            });
            p.runtimes.push(Runtime {
                span: None,
                first_device: p.standin_devices.len() as u32,
                last_device: NO_LINK,
                device_duration: 0.0,
                tc_duration: 0.0,
                next: NO_LINK,
            });
            p.standin_devices.push(devices);
            // torch-tb-profiler fills the stand-in once on creation (and again with the root).
            fill_runtime(&mut p, rt, None);
            root_rts.push(rt);
        }
        let root = build_tree(&mut p, ops, root_rts, root_texts);
        p.roots.push(root);
        p.root_threads.push(thread_order[t]);
    }

    // Device steps (`update_device_steps`).
    update_device_steps(&mut p, &mut steps, &device_order);
    p.steps = steps;
    super::memory::attribute(&mut p);
    (p.listed_ops, p.op_kernels) = p.operators_and_kernels();
    p.kernel_devices = {
        let mut ids: Vec<i64> =
            p.devices.iter().filter(|d| d.ty == Ty::Kernel).filter_map(|d| d.kernel.device).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    };
    p
}

/// The trace's `deviceProperties` list, in its order (the host plane keeps it as JSON
/// text); else what the GPU planes carry.
fn device_props(space: &XSpace) -> Vec<DeviceProps> {
    let host = space.plane(oxprof_model::schema::HOST_THREADS_PLANE_NAME);
    let text = host.and_then(|p| p.stats().find(|s| s.name() == "deviceProperties").and_then(|s| s.as_str()));
    if let Some(serde_json::Value::Array(list)) = text.and_then(|t| serde_json::from_str(t).ok()) {
        return list
            .iter()
            .enumerate()
            .map(|(i, d)| DeviceProps {
                id: d["id"].as_i64().unwrap_or(i as i64),
                name: d["name"].as_str().map(str::to_string),
                memory_bytes: d["totalGlobalMem"].as_i64(),
                compute_major: d["computeMajor"].as_i64(),
                compute_minor: d["computeMinor"].as_i64(),
                sm_count: d["numSms"].as_i64(),
            })
            .collect();
    }
    let mut out = Vec::new();
    for plane in space.planes_with_prefix(oxprof_model::schema::GPU_PLANE_PREFIX) {
        let mut props = DeviceProps { id: plane.id, ..DeviceProps::default() };
        let mut any = false;
        for s in plane.stats() {
            match s.name() {
                "name" => props.name = s.as_str().map(str::to_string),
                "totalGlobalMem" => props.memory_bytes = stat_i64(s.value),
                "computeMajor" => props.compute_major = stat_i64(s.value),
                "computeMinor" => props.compute_minor = stat_i64(s.value),
                "numSms" => props.sm_count = stat_i64(s.value),
                _ => continue,
            }
            any = true;
        }
        if any {
            out.push(props);
        }
    }
    out
}

/// Nests a thread's operators (sorted by start, longest first) under a root by time,
/// merges a node with a lone same-named child, and fills the statistics.
/// `root_texts`: the indices of the root's name and shape.
fn build_tree(p: &mut Parsed, ops: &[usize], root_runtimes: Vec<usize>, root_texts: (u32, u32)) -> usize {
    let root = p.nodes.len();
    p.nodes.push(Node {
        name: root_texts.0,
        kind: NodeKind::Root,
        ty: Ty::Python,
        start: f64::MIN,
        end: f64::MAX,
        id: 0,
        has_ext: false,
        shape: root_texts.1,
        stack: NO_TEXT,
        listed_name: false,
        tc_eligible: false,
        first_child: NO_LINK,
        next_sibling: NO_LINK,
        first_runtime: p.root_runtimes.len() as u32,
    });
    p.root_runtimes.push(root_runtimes);
    // (node, its last child so far)
    let mut stack = vec![(root, NO_LINK)];
    for &op in ops {
        while let Some(&(tail, last)) = stack.last() {
            let (start, end) = (p.nodes[op].start, p.nodes[op].end);
            if start < p.nodes[tail].end {
                if end <= p.nodes[tail].end {
                    match link(last) {
                        Some(last) => p.nodes[last].next_sibling = op as u32,
                        None => p.nodes[tail].first_child = op as u32,
                    }
                    if let Some(top) = stack.last_mut() {
                        top.1 = op as u32;
                    }
                    stack.push((op, NO_LINK));
                } else {
                    // Overlaps its parent without nesting: torch-tb-profiler drops it.
                    p.unnested += 1;
                }
                break;
            }
            stack.pop();
        }
    }
    remove_dup_nodes(p, root);
    fill_stats(p, root);
    root
}

fn remove_dup_nodes(p: &mut Parsed, root: usize) {
    let mut todo = vec![root];
    while let Some(n) = todo.pop() {
        loop {
            let node = &p.nodes[n];
            let Some(c) = link(node.first_child).filter(|&c| p.nodes[c].next_sibling == NO_LINK) else {
                break;
            };
            let child = &p.nodes[c];
            if p.text(node.name) == p.text(child.name) && node.ty == Ty::Operator && child.ty == Ty::Operator {
                let (children, runtimes) = (child.first_child, child.first_runtime);
                p.nodes[c].first_child = NO_LINK;
                p.nodes[c].first_runtime = NO_LINK;
                p.nodes[n].first_child = children;
                p.nodes[n].first_runtime = runtimes;
            } else {
                break;
            }
        }
        todo.extend(p.children(n));
    }
}

fn fill_runtime(p: &mut Parsed, rt: usize, op: Option<usize>) {
    let (op_tc, op_ok) = match op {
        Some(o) => (p.nodes[o].tc_eligible, true),
        None => (false, false),
    };
    // A stand-in's activity is a vector (one per run); a runtime's a list through the
    // devices, walked without collecting it (millions of runtimes).
    let standin = p.runtimes[rt].span.is_none();
    let mut side = if standin { p.runtime_devices(rt).collect() } else { Vec::new() }.into_iter();
    let mut next = if standin { NO_LINK } else { p.runtimes[rt].first_device };
    let (mut dd, mut tc) = (0.0, 0.0);
    loop {
        let d = match side.next() {
            Some(d) => d,
            None => match link(next) {
                Some(d) => {
                    next = p.devices[d].next_in_runtime;
                    d
                }
                None => break,
            },
        };
        let dev = &mut p.devices[d];
        if op_ok {
            dev.launched_by = op.map_or(NO_LINK, |o| o as u32);
            dev.op_tc_eligible = op_tc;
        }
        let dur = dev.end - dev.start;
        dd += dur;
        if dev.tc_used {
            tc += dur;
        }
    }
    let r = &mut p.runtimes[rt];
    r.device_duration += dd;
    r.tc_duration += tc;
}

/// torch-tb-profiler's `OperatorNode.fill_stats`, post-order without recursion.
fn fill_stats(p: &mut Parsed, root: usize) {
    if p.node_times.len() < p.nodes.len() {
        // Sized once for every tree (the roots are the last nodes made).
        if p.node_times.capacity() == 0 {
            p.node_times.reserve_exact(p.nodes.capacity());
        }
        p.node_times.resize(p.nodes.len(), NodeTimes::default());
    }
    // (node, children done?)
    let mut todo = vec![(root, false)];
    // Reused for every node: millions of nodes on big traces.
    let (mut children, mut rts): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
    while let Some((n, done)) = todo.pop() {
        if !done {
            children.clear();
            children.extend(p.children(n));
            children.sort_by(|&a, &b| {
                let (a, b) = (&p.nodes[a], &p.nodes[b]);
                a.start.total_cmp(&b.start).then(b.end.total_cmp(&a.end))
            });
            rts.clear();
            rts.extend(p.node_runtimes(n));
            rts.sort_by(|&a, &b| {
                let key = |r: &Runtime| r.span.map_or((f64::MAX, f64::MIN), |(s, e)| (s, -e));
                let (a, b) = (key(&p.runtimes[a]), key(&p.runtimes[b]));
                a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1))
            });
            p.set_runtimes(n, &rts);
            todo.push((n, true));
            for &c in children.iter().rev() {
                todo.push((c, false));
            }
            p.set_children(n, &children);
            continue;
        }
        rts.clear();
        rts.extend(p.node_runtimes(n));
        for &rt in &rts {
            fill_runtime(p, rt, Some(n));
        }
        let node = &p.nodes[n];
        let mut host_self = node.end - node.start;
        let (mut device_total, mut device_self, mut tc_self, mut tc_total) = (0.0, 0.0, 0.0, 0.0);
        let mut tc_eligible = node.tc_eligible;
        let is_op = node.ty == Ty::Operator;
        for c in p.children(n) {
            let (child, times) = (&p.nodes[c], &p.node_times[c]);
            device_total += times.device_total;
            host_self -= child.end - child.start;
            tc_total += times.tc_total;
            if is_op && !tc_eligible && child.tc_eligible {
                tc_eligible = true;
            }
        }
        for &rt in &rts {
            let r = &p.runtimes[rt];
            if let Some((s, e)) = r.span {
                host_self -= e - s;
            }
            device_total += r.device_duration;
            device_self += r.device_duration;
            tc_self += r.tc_duration;
            tc_total += r.tc_duration;
            if is_op && !tc_eligible && r.tc_duration > 0.0 {
                tc_eligible = true;
            }
        }
        let module_extra = if node.kind == NodeKind::Module { children_self_device(p, n) } else { 0.0 };
        p.nodes[n].tc_eligible = tc_eligible;
        let times = &mut p.node_times[n];
        times.host_self = host_self;
        times.device_total += device_total;
        times.device_self += device_self + module_extra;
        times.tc_self += tc_self;
        times.tc_total += tc_total;
    }
}

/// torch-tb-profiler's `get_chilren_self_device_time`: a module's own device time includes
/// the total device time of its direct child operators.
fn children_self_device(p: &Parsed, n: usize) -> f64 {
    p.children(n).filter(|&c| p.nodes[c].is_listed_operator()).map(|c| p.node_times[c].device_total).sum()
}

/// torch-tb-profiler's `_find_device_steps` and `_update_steps_duration`: a step runs
/// from the end of the previous one to the end of the last device activity its runtimes
/// launched; trailing steps whose launches look cut off are dropped.
fn update_device_steps(p: &mut Parsed, steps: &mut Vec<(String, f64, f64)>, device_order: &[usize]) {
    let mut rts: Vec<usize> = (0..p.runtimes.len()).filter(|&r| p.runtimes[r].span.is_some()).collect();
    let start_of = |r: usize| p.runtimes[r].span.map_or(f64::MAX, |s| s.0);
    rts.sort_by(|&a, &b| start_of(a).total_cmp(&start_of(b)));
    const NONE_MIN: f64 = f64::MAX;
    const NONE_MAX: f64 = f64::MIN;
    let mut steps_device = vec![(NONE_MIN, NONE_MAX); steps.len()];
    let mut matched_count = vec![0usize; steps.len()];
    let mut matched = vec![false; p.devices.len()];
    let (mut i_step, mut i_rt) = (0, 0);
    let (mut dmin, mut dmax) = (NONE_MIN, NONE_MAX);
    while i_step < steps.len() && i_rt < rts.len() {
        let (s_start, s_end) = (steps[i_step].1, steps[i_step].2);
        let Some((r_start, r_end)) = p.runtimes[rts[i_rt]].span else { break };
        if r_start < s_start {
            i_rt += 1;
        } else if r_end <= s_end {
            for d in p.runtime_devices(rts[i_rt]) {
                dmin = dmin.min(p.devices[d].start);
                dmax = dmax.max(p.devices[d].end);
                matched[d] = true;
                matched_count[i_step] += 1;
            }
            i_rt += 1;
        } else if r_start < s_end {
            i_rt += 1;
        } else {
            steps_device[i_step] = (dmin, dmax);
            i_step += 1;
            dmin = NONE_MIN;
            dmax = NONE_MAX;
        }
    }
    while i_step < steps.len() {
        steps_device[i_step] = (dmin, dmax);
        dmin = NONE_MIN;
        dmax = NONE_MAX;
        i_step += 1;
    }
    let any_matched = matched.iter().any(|&m| m);
    if !any_matched || steps.is_empty() {
        return;
    }
    let mut prev_end = steps[0].1;
    if steps_device[0].0 != NONE_MIN {
        for &d in device_order {
            if !matched[d] && p.devices[d].end < steps_device[0].0 {
                prev_end = prev_end.max(p.devices[d].end);
            }
        }
    }
    for (i, step) in steps.iter_mut().enumerate() {
        let start = prev_end.max(step.1);
        let mut end = step.2;
        if steps_device[i].0 == NONE_MIN {
            end = end.max(start);
        } else {
            end = end.max(steps_device[i].1);
            if end < start {
                end = start;
            }
        }
        *step = (std::mem::take(&mut step.0), start, end);
        prev_end = end;
    }
    if steps.len() > 1
        && let Some(last) = (0..steps.len()).rev().find(|&i| matched_count[i] > 0)
    {
        let mut keep = last + 1;
        if last > 0 && (matched_count[last - 1] as f64) * 0.8 > matched_count[last] as f64 {
            keep = last;
        }
        if keep < steps.len() {
            p.tail_steps_removed = steps.len() - keep;
            steps.truncate(keep);
        }
    }
}

impl Parsed {
    /// A text of [`Parsed::texts`] by index ("" for [`NO_TEXT`]).
    pub(crate) fn text(&self, id: u32) -> &str {
        self.texts.get(id as usize).map_or("", |t| t)
    }

    /// A node's call stack, if it has one.
    pub(crate) fn stack(&self, node: &Node) -> Option<&str> {
        (node.stack != NO_TEXT).then(|| self.text(node.stack))
    }

    /// Whether the space it was read from is a PyTorch (Kineto) trace.
    pub fn is_pytorch(&self) -> bool {
        self.pytorch
    }

    /// A node's children, in start order once the tree is built.
    pub(crate) fn children(&self, n: usize) -> impl Iterator<Item = usize> + Clone + '_ {
        std::iter::successors(link(self.nodes[n].first_child), move |&c| link(self.nodes[c].next_sibling))
    }

    /// The runtimes a node launched.
    pub(crate) fn node_runtimes(&self, n: usize) -> impl Iterator<Item = usize> + Clone + '_ {
        let node = &self.nodes[n];
        let (root, first) = match node.kind {
            NodeKind::Root => {
                (self.root_runtimes.get(node.first_runtime as usize).map_or(&[][..], Vec::as_slice), None)
            }
            _ => (&[][..], link(node.first_runtime)),
        };
        root.iter().copied().chain(std::iter::successors(first, move |&r| link(self.runtimes[r].next)))
    }

    /// The device activity a runtime launched.
    pub(crate) fn runtime_devices(&self, rt: usize) -> impl Iterator<Item = usize> + Clone + '_ {
        let r = &self.runtimes[rt];
        let (standin, first) = match r.span {
            None => (self.standin_devices.get(r.first_device as usize).map_or(&[][..], Vec::as_slice), None),
            Some(_) => (&[][..], link(r.first_device)),
        };
        standin.iter().copied().chain(std::iter::successors(first, move |&d| link(self.devices[d].next_in_runtime)))
    }

    /// Appends device activity to a (not stand-in) runtime's.
    fn append_device(&mut self, rt: usize, d: usize) {
        let r = &mut self.runtimes[rt];
        match link(r.last_device) {
            Some(last) => self.devices[last].next_in_runtime = d as u32,
            None => r.first_device = d as u32,
        }
        r.last_device = d as u32;
    }

    /// Makes `children` a node's children, in that order.
    fn set_children(&mut self, n: usize, children: &[usize]) {
        self.nodes[n].first_child = children.first().map_or(NO_LINK, |&c| c as u32);
        for pair in children.windows(2) {
            self.nodes[pair[0]].next_sibling = pair[1] as u32;
        }
        if let Some(&last) = children.last() {
            self.nodes[last].next_sibling = NO_LINK;
        }
    }

    /// Makes `runtimes` the runtimes a node launched, in that order.
    fn set_runtimes(&mut self, n: usize, runtimes: &[usize]) {
        if self.nodes[n].kind == NodeKind::Root {
            if let Some(list) = self.root_runtimes.get_mut(self.nodes[n].first_runtime as usize) {
                *list = runtimes.to_vec();
            }
            return;
        }
        self.nodes[n].first_runtime = runtimes.first().map_or(NO_LINK, |&r| r as u32);
        for pair in runtimes.windows(2) {
            self.runtimes[pair[0]].next = pair[1] as u32;
        }
        if let Some(&last) = runtimes.last() {
            self.runtimes[last].next = NO_LINK;
        }
    }

    /// Heap bytes, roughly (what a cache weighs it at).
    pub fn heap_bytes(&self) -> usize {
        let node = |_: &Node| std::mem::size_of::<Node>();
        let device = |_: &Device| std::mem::size_of::<Device>();
        self.texts.iter().map(|t| t.len() + 16).sum::<usize>()
            + self.nodes.iter().map(node).sum::<usize>()
            + self.node_times.len() * std::mem::size_of::<NodeTimes>()
            + self.devices.iter().map(device).sum::<usize>()
            + self.runtimes.len() * std::mem::size_of::<Runtime>()
            + self.standin_devices.iter().map(|d| 24 + 8 * d.len()).sum::<usize>()
            + self.role_ranges.iter().map(|r| 16 * r.len()).sum::<usize>()
            + 64 * (self.steps.len() + self.roots.len())
            + self
                .python_fns
                .iter()
                .map(|f| std::mem::size_of::<PythonFn>() + f.module.as_ref().map_or(0, |m| m.0.len()))
                .sum::<usize>()
            + 8 * (self.listed_ops.len() + self.op_kernels.len())
            + self.root_runtimes.iter().map(|r| 24 + 8 * r.len()).sum::<usize>()
    }

    /// Listed operators and the kernels of every tree, in torch-tb-profiler's traversal
    /// order (`get_operator_and_kernels`).
    pub(crate) fn operators_and_kernels(&self) -> (Vec<usize>, Vec<usize>) {
        let mut ops = Vec::new();
        let mut kernels = Vec::new();
        for &root in &self.roots {
            // (node, children visited?)
            let mut todo = vec![(root, false)];
            while let Some((n, done)) = todo.pop() {
                let node = &self.nodes[n];
                if !done {
                    todo.push((n, true));
                    let first = todo.len();
                    todo.extend(self.children(n).map(|c| (c, false)));
                    todo[first..].reverse();
                    continue;
                }
                for rt in self.node_runtimes(n) {
                    kernels.extend(self.runtime_devices(rt).filter(|&d| self.devices[d].ty == Ty::Kernel));
                }
                if node.is_listed_operator() {
                    ops.push(n);
                }
            }
        }
        (ops, kernels)
    }
}
