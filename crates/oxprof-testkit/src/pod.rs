//! A synthetic TPU pod for tests and benchmarks: the per-host XSpace files of one synchronous
//! data-parallel training job on `hosts` TPU v4 hosts, with stragglers and slow-input hosts
//! planted, deterministic (the same [`PodSpec`] writes the same bytes), written one host at a
//! time per thread so the generator's memory is bounded by one host's planes.
//!
//! Each host (`<out>/plugins/profile/<run>/<host>.xplane.pb`) holds what XProf reads from a
//! TPU host (the layout of `gen_tpu_training`, through [`crate::tpu`]):
//! * `/device:TPU:<n>` per TensorCore: TPU v4 plane stats and `core_details`; `Steps`,
//!   `XLA Modules` (one `jit_train_step(1)` run per step) and `XLA Ops`: the device infeed,
//!   then a transformer-like program of `layers` × 8 HLO ops (forward convolution fusion,
//!   loop fusion, copy; backward two dots, loop fusion, ICI all-reduce; optimizer fusion;
//!   one loop body for all layers, as JAX's `scan` compiles it, or every layer its own ops)
//!   whose event metadata carries category, flops, bytes and their breakdown, shape,
//!   framework op and source, then (with `megascale`) the DCN collectives of
//!   [`crate::tpu::dcn`], then the outfeed. Op times follow a roofline of each op's flops
//!   and bytes on TPU v4 peaks, with idle gaps between ops.
//! * `/host:CPU`: MXU/HBM utilization stats and the Python thread: a `train` step marker
//!   (`_r=1`, `step_num`) per step, `PjitFunction`, one `DoEnqueueProgram` per core (linked
//!   to the device's module by ordinal, queue and run id), the `IteratorGetNext` input wait
//!   and `InfeedEnqueueTuple`; with `megascale`, `MegaScale:` TraceMes per collective.
//! * `/host:metadata`: the program's `Hlo Proto`; `Task Environment`: start and stop times.
//!
//! One step on one core of host `h` (pod-wide step period `P`, the same on every host):
//!
//! ```text
//! host   |train (step marker) ..................................................|
//!          |Pjit| |DoEnqueue×cores| |IteratorGetNext (+ slow input)| |Enqueue|
//! device                           |infeed ...........................| |op| |op| … |dcn| |outfeed|
//!        ^ s·P + skew(h)                                             ops × slowdown(h)
//! ```
//!
//! Variation comes from the seed: each host runs `±1.5%` fast or slow, each step `±2%`
//! on every host, each op `±3%`, idle gaps between ops `0.2–1 µs`, clock skew up to 20 µs.
//! A straggler's device ops and the gaps between them take `slowdown×` as long (its infeed,
//! DCN transfers and outfeed do not); a slow-input host's `IteratorGetNext` (and
//! so its device infeed) waits an extra `fraction × the step's compute time`. The other
//! hosts do not wait for them in a collective (they idle until the next step): the
//! straggler shows as a longer step, not as the others' collective time.

use crate::XSpaceBuilder;
use crate::tpu::{self, BF16, F32, PS_PER_US, XlaOp, dcn, instruction, parameter, shape, wire};
use prost::Message;
use rand_core::Rng;
use rand_pcg::Pcg64;
use rayon::prelude::*;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The first step's number.
pub const FIRST_STEP: u32 = 100;
/// HLO ops per layer of the program.
pub const OPS_PER_LAYER: u32 = 8;
const PROGRAM_ID: u64 = 1;
const PROGRAM: &str = "jit_train_step";
/// Start of the profile on every host (ns).
const T0_NS: i64 = 1_700_000_000_000_000_000;
/// Tokens per core and model width: activations are `[TOKENS, WIDTH]` bf16, weights
/// `[WIDTH, WIDTH]` f32.
const TOKENS: i64 = 1024;
const WIDTH: i64 = 1024;
/// TPU v4 peaks (as the plane stats say) and the fraction of them ops reach; ICI bandwidth
/// for the per-layer all-reduce.
const PEAK_FLOPS: f64 = 275e12;
const PEAK_HBM: f64 = 1200e9;
const EFFICIENCY: f64 = 0.7;
const ICI_BYTES_PER_S: f64 = 200e9;
/// Host-side times (µs): from the step marker to the program's launch and to the device
/// step's start.
const LAUNCH_US: i64 = 26;
const DEVICE_START_US: i64 = 40;
/// Largest values the spec accepts.
const MAX_HOSTS: usize = 100_000;
const MAX_CORES: u32 = 64;
const MAX_OPS_PER_STEP: u32 = 1 << 20;
const MAX_STEPS: u32 = 1 << 20;
const MAX_FACTOR: f64 = 100.0;

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct PodSpec {
    /// Number of hosts.
    pub hosts: usize,
    /// TensorCores per host (`/device:TPU:0..n`).
    pub cores_per_host: u32,
    /// Steps in the profile.
    pub steps: u32,
    /// HLO ops per step on each core (rounded down to whole layers of [`OPS_PER_LAYER`],
    /// at least one), besides the infeed, outfeed and DCN ops.
    pub ops_per_step: u32,
    /// Seed of all variation.
    pub seed: u64,
    /// Straggler hosts: (host index, slowdown ≥ 1 of all its device ops).
    pub stragglers: Vec<(usize, f64)>,
    /// Slow-input hosts: (host index, extra input wait per step as a fraction of the
    /// step's compute time).
    pub slow_input_hosts: Vec<(usize, f64)>,
    /// DCN collectives between slices (`MegaScale:` TraceMes and host send/recv ops).
    pub megascale: bool,
    /// The layers run one loop body (JAX's `scan` over layers, as MaxText does by
    /// default): each layer's ops repeat the body's names, so a step has 8 distinct ops
    /// however deep the model. False: every layer has its own ops (an unrolled model).
    pub scan_layers: bool,
    /// The run's folder name under `plugins/profile/`.
    pub run: String,
}

impl PodSpec {
    /// `hosts` hosts of 4 TensorCores, 20 steps of 8192 ops, seed 42, DCN collectives, and
    /// (with at least 4 hosts) a straggler at three quarters of the hosts running 1.5× as
    /// long and a slow-input host at a quarter waiting 60% of its compute time for input.
    pub fn new(hosts: usize) -> PodSpec {
        let (stragglers, slow_input_hosts) =
            if hosts >= 4 { (vec![(hosts * 3 / 4, 1.5)], vec![(hosts / 4, 0.6)]) } else { (Vec::new(), Vec::new()) };
        PodSpec {
            hosts,
            cores_per_host: 4,
            steps: 20,
            ops_per_step: 8192,
            seed: 42,
            stragglers,
            slow_input_hosts,
            megascale: true,
            scan_layers: true,
            run: "2026_01_01_00_00_00".to_string(),
        }
    }

    /// Checks the spec is within the generator's limits.
    pub fn validate(&self) -> Result<(), PodError> {
        let bad = |what: String| Err(PodError::Spec(what));
        if self.hosts == 0 || self.hosts > MAX_HOSTS {
            return bad(format!("hosts must be 1..={MAX_HOSTS}, not {}", self.hosts));
        }
        if self.cores_per_host == 0 || self.cores_per_host > MAX_CORES {
            return bad(format!("cores per host must be 1..={MAX_CORES}, not {}", self.cores_per_host));
        }
        if self.steps == 0 || self.steps > MAX_STEPS {
            return bad(format!("steps must be 1..={MAX_STEPS}, not {}", self.steps));
        }
        if self.ops_per_step < OPS_PER_LAYER || self.ops_per_step > MAX_OPS_PER_STEP {
            return bad(format!(
                "ops per step must be {OPS_PER_LAYER}..={MAX_OPS_PER_STEP}, not {}",
                self.ops_per_step
            ));
        }
        for &(host, factor) in &self.stragglers {
            if host >= self.hosts || !(1.0..=MAX_FACTOR).contains(&factor) {
                return bad(format!(
                    "straggler {host}:{factor}: the host must be below {} and the slowdown 1..={MAX_FACTOR}",
                    self.hosts
                ));
            }
        }
        for &(host, fraction) in &self.slow_input_hosts {
            if host >= self.hosts || !(0.0..=MAX_FACTOR).contains(&fraction) {
                return bad(format!(
                    "slow input {host}:{fraction}: the host must be below {} and the extra wait 0..={MAX_FACTOR}",
                    self.hosts
                ));
            }
        }
        let run_ok = !self.run.is_empty()
            && self.run != "."
            && self.run != ".."
            && !self.run.contains(['/', '\\'])
            && self.run.len() <= 255;
        if !run_ok {
            return bad(format!("run name {:?} must be one folder name", self.run));
        }
        Ok(())
    }

    /// Host `host`'s name (`tpu-pod-host-007`; zero-padded so names sort by index).
    pub fn host_name(&self, host: usize) -> String {
        let width = self.hosts.saturating_sub(1).to_string().len().max(3);
        format!("tpu-pod-host-{host:0width$}")
    }

    /// The slowdown planted on `host` (1 when none; the largest when several).
    pub fn slowdown(&self, host: usize) -> f64 {
        self.stragglers.iter().filter(|(h, _)| *h == host).map(|(_, f)| *f).fold(1.0, f64::max)
    }

    /// The extra input wait planted on `host`, as a fraction of its compute time.
    pub fn input_wait(&self, host: usize) -> f64 {
        self.slow_input_hosts.iter().filter(|(h, _)| *h == host).map(|(_, f)| *f).fold(0.0, f64::max)
    }

    /// The run's folder under `out`.
    pub fn run_dir(&self, out: &Path) -> PathBuf {
        out.join("plugins/profile").join(&self.run)
    }
}

/// Why a pod could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PodError {
    /// The spec is outside the generator's limits.
    #[error("invalid pod: {0}")]
    Spec(String),
    /// A host file exists already: the generator never writes over a file.
    #[error("{}: exists; the generator writes only new files (choose an empty folder)", .0.display())]
    Exists(PathBuf),
    /// Reading or writing failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// What [`write_pod`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct PodSummary {
    /// The run's folder.
    pub run_dir: PathBuf,
    /// Each host's file and its size in bytes, in host order.
    pub files: Vec<(PathBuf, u64)>,
}

impl PodSummary {
    /// Bytes written in all.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|(_, n)| n).sum()
    }
}

/// Writes every host of `spec` under `out` (`<out>/plugins/profile/<run>/<host>.xplane.pb`),
/// hosts in parallel on rayon's pool, each streamed plane by plane to its file. Refuses to
/// write over an existing file (or through a link).
pub fn write_pod(spec: &PodSpec, out: &Path) -> Result<PodSummary, PodError> {
    spec.validate()?;
    let run_dir = spec.run_dir(out);
    std::fs::create_dir_all(&run_dir).map_err(|source| PodError::Io { path: run_dir.clone(), source })?;
    let program = Program::new(spec);
    let files = (0..spec.hosts)
        .into_par_iter()
        .map(|host| {
            let path = run_dir.join(format!("{}.xplane.pb", spec.host_name(host)));
            let io = |source: std::io::Error| PodError::Io { path: path.clone(), source };
            // `create_new` fails on any existing entry, links included: nothing is overwritten.
            let file = std::fs::OpenOptions::new().write(true).create_new(true).open(&path).map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists { PodError::Exists(path.clone()) } else { io(e) }
            })?;
            let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
            let n = write_host(spec, &program, host, &mut w).map_err(io)?;
            w.into_inner().map_err(|e| io(e.into_error()))?.sync_all().map_err(io)?;
            Ok((path, n))
        })
        .collect::<Result<Vec<_>, PodError>>()?;
    Ok(PodSummary { run_dir, files })
}

/// Host `host`'s file as bytes (for tests; [`write_pod`] streams instead).
pub fn host_bytes(spec: &PodSpec, host: usize) -> Result<Vec<u8>, PodError> {
    spec.validate()?;
    let mut out = Vec::new();
    write_host(spec, &Program::new(spec), host, &mut out)
        .map_err(|source| PodError::Io { path: PathBuf::new(), source })?;
    Ok(out)
}

/// The number of steps that makes a host file about `bytes` long (at least 1), measured
/// on host 0: a first guess from one and two steps, then corrected by the size at that
/// guess (later steps take more bytes: their timestamps are longer varints).
pub fn steps_for_host_bytes(spec: &PodSpec, bytes: u64) -> Result<u32, PodError> {
    let size = |steps: u32| -> Result<u64, PodError> {
        let spec = PodSpec { steps, ..spec.clone() };
        spec.validate()?;
        let mut counter = Counter(0);
        write_host(&spec, &Program::new(&spec), 0, &mut counter)
            .map_err(|source| PodError::Io { path: PathBuf::new(), source })?;
        Ok(counter.0)
    };
    let (one, two) = (size(1)?, size(2)?);
    let per_step = two.saturating_sub(one).max(1);
    let fixed = one.saturating_sub(per_step);
    let clamp = |steps: f64| steps.clamp(1.0, f64::from(MAX_STEPS)) as u32;
    let guess = clamp(bytes.saturating_sub(fixed).div_ceil(per_step) as f64);
    if guess <= 2 {
        return Ok(guess);
    }
    let at_guess = size(guess)?;
    let per_step = at_guess.saturating_sub(fixed).max(1) as f64 / f64::from(guess);
    Ok(clamp((bytes.saturating_sub(fixed) as f64 / per_step).round()))
}

/// A writer that only counts.
struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What an op does in the step, for its timing.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// Bound by flops or HBM bytes (a roofline).
    Compute,
    /// An ICI all-reduce: bound by the link.
    AllReduce,
}

/// One HLO op of the program.
#[derive(Debug, Clone)]
struct ProgramOp {
    name: String,
    opcode: &'static str,
    category: &'static str,
    tf_op: String,
    flops: u64,
    hbm: (u64, u64),
    element_type: i32,
    dims: [i64; 2],
    kind: Kind,
    /// Its operands in the HLO.
    operands: &'static [Operand],
    /// Its time on a nominal host (ps).
    nominal_ps: f64,
}

/// An operand of a program op in the HLO.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Operand {
    /// The latest activation (`bf16[TOKENS, WIDTH]`; at first the `activations` parameter).
    Activation,
    /// The `weights` parameter (`f32[WIDTH, WIDTH]`).
    Weights,
    /// The latest weight gradient (`f32[WIDTH, WIDTH]`).
    Gradient,
}

impl ProgramOp {
    fn xla_op(&self, symbol_id: u64) -> XlaOp<'_> {
        XlaOp {
            name: &self.name,
            opcode: self.opcode,
            category: self.category,
            tf_op: &self.tf_op,
            symbol_id,
            flops: self.flops,
            hbm: self.hbm,
            element_type: self.element_type,
            dims: &self.dims,
        }
    }
}

/// The step program shared by every host: its ops, their HLO, and the pod-wide timing.
struct Program {
    /// The distinct ops, in the order of a layer (all layers' when unrolled).
    ops: Vec<ProgramOp>,
    /// How many times a step runs them (the layers, when scanned).
    iterations: u32,
    hlo: Vec<u8>,
    /// Sum of the ops' nominal times (ps).
    compute_ps: f64,
    /// The pod's step period (ps): long enough for the slowest host's longest step.
    period_ps: i64,
}

const ACT_BYTES: u64 = (TOKENS * WIDTH * 2) as u64;
const WEIGHT_BYTES: u64 = (WIDTH * WIDTH * 4) as u64;
const DOT_FLOPS: u64 = (2 * TOKENS * WIDTH * WIDTH) as u64;
const ELEMENTWISE_FLOPS: u64 = (8 * TOKENS * WIDTH) as u64;

/// Where an op's framework op is.
#[derive(Debug, Clone, Copy)]
enum Pass {
    Forward,
    Backward,
    Optimizer,
}

/// One op of a layer.
struct LayerOp {
    opcode: &'static str,
    category: &'static str,
    pass: Pass,
    /// The framework op's type (the last part of its name).
    framework: &'static str,
    flops: u64,
    /// HBM bytes read and written.
    hbm: (u64, u64),
    /// The result is `f32[WIDTH, WIDTH]` (else `bf16[TOKENS, WIDTH]`).
    weight_shaped: bool,
    kind: Kind,
    operands: &'static [Operand],
}

/// A layer: forward matmul fusion, activation, layout copy; backward matmuls for the input
/// and the weight gradients, activation gradient, the gradient's all-reduce; the
/// optimizer's update.
const LAYER: [LayerOp; OPS_PER_LAYER as usize] = {
    use Operand::{Activation as Act, Gradient as Grad, Weights};
    let (a, w) = (ACT_BYTES, WEIGHT_BYTES);
    [
        LayerOp {
            opcode: "fusion",
            category: "convolution fusion",
            pass: Pass::Forward,
            framework: "dot_general",
            flops: DOT_FLOPS,
            hbm: (a + w, a),
            weight_shaped: false,
            kind: Kind::Compute,
            operands: &[Act, Weights],
        },
        LayerOp {
            opcode: "fusion",
            category: "loop fusion",
            pass: Pass::Forward,
            framework: "gelu",
            flops: ELEMENTWISE_FLOPS,
            hbm: (a, a),
            weight_shaped: false,
            kind: Kind::Compute,
            operands: &[Act],
        },
        LayerOp {
            opcode: "copy",
            category: "data formatting",
            pass: Pass::Forward,
            framework: "transpose",
            flops: 0,
            hbm: (a, a),
            weight_shaped: false,
            kind: Kind::Compute,
            operands: &[Act],
        },
        LayerOp {
            opcode: "dot",
            category: "convolution",
            pass: Pass::Backward,
            framework: "dot_general",
            flops: DOT_FLOPS,
            hbm: (a + w, a),
            weight_shaped: false,
            kind: Kind::Compute,
            operands: &[Act, Weights],
        },
        LayerOp {
            opcode: "dot",
            category: "convolution",
            pass: Pass::Backward,
            framework: "dot_general",
            flops: DOT_FLOPS,
            hbm: (2 * a, w),
            weight_shaped: true,
            kind: Kind::Compute,
            operands: &[Act, Act],
        },
        LayerOp {
            opcode: "fusion",
            category: "loop fusion",
            pass: Pass::Backward,
            framework: "mul",
            flops: ELEMENTWISE_FLOPS,
            hbm: (2 * a, a),
            weight_shaped: false,
            kind: Kind::Compute,
            operands: &[Act, Act],
        },
        LayerOp {
            opcode: "all-reduce",
            category: "all-reduce",
            pass: Pass::Backward,
            framework: "psum",
            flops: (WIDTH * WIDTH) as u64,
            hbm: (w, w),
            weight_shaped: true,
            kind: Kind::AllReduce,
            operands: &[Grad],
        },
        LayerOp {
            opcode: "fusion",
            category: "loop fusion",
            pass: Pass::Optimizer,
            framework: "mul",
            flops: (10 * WIDTH * WIDTH) as u64,
            hbm: (3 * w, 2 * w),
            weight_shaped: true,
            kind: Kind::Compute,
            operands: &[Weights, Grad],
        },
    ]
};

impl Program {
    fn new(spec: &PodSpec) -> Program {
        let layers = (spec.ops_per_step / OPS_PER_LAYER).max(1);
        // Scanned: one loop body that every layer runs; unrolled: each layer its own ops.
        let (distinct, iterations) = if spec.scan_layers { (1, layers) } else { (layers, 1) };
        let mut ops = Vec::with_capacity((distinct * OPS_PER_LAYER) as usize);
        for l in 0..distinct {
            for op in &LAYER {
                let number = ops.len() + 1;
                let scope = "jit(train_step)/jit(main)";
                let tf_op = match (op.pass, spec.scan_layers) {
                    (Pass::Forward, false) => format!("{scope}/jvp(layer_{l})/{}:", op.framework),
                    (Pass::Backward, false) => format!("{scope}/transpose(jvp(layer_{l}))/{}:", op.framework),
                    (Pass::Optimizer, false) => format!("{scope}/optimizer/adam_{l}/{}:", op.framework),
                    (Pass::Forward, true) => format!("{scope}/jvp(while)/body/layer/{}:", op.framework),
                    (Pass::Backward, true) => format!("{scope}/transpose(jvp(while))/body/layer/{}:", op.framework),
                    (Pass::Optimizer, true) => format!("{scope}/while/body/optimizer/adam/{}:", op.framework),
                };
                let (element_type, dims) =
                    if op.weight_shaped { (F32, [WIDTH, WIDTH]) } else { (BF16, [TOKENS, WIDTH]) };
                let bytes = (op.hbm.0 + op.hbm.1) as f64;
                let seconds = match op.kind {
                    Kind::Compute => (op.flops as f64 / PEAK_FLOPS).max(bytes / PEAK_HBM) / EFFICIENCY,
                    Kind::AllReduce => op.hbm.1 as f64 / ICI_BYTES_PER_S,
                };
                ops.push(ProgramOp {
                    name: format!("{}.{number}", op.opcode),
                    opcode: op.opcode,
                    category: op.category,
                    tf_op,
                    flops: op.flops,
                    hbm: op.hbm,
                    element_type,
                    dims,
                    kind: op.kind,
                    operands: op.operands,
                    nominal_ps: seconds * 1e12,
                });
            }
        }
        let compute_ps = ops.iter().map(|o| o.nominal_ps).sum::<f64>() * f64::from(iterations);
        // The slowest host's longest step, from the bounds of the variation below: host
        // ±1.5%, step ±2%, op ±3%, gaps ≤ 1 µs, input ≤ 1.2% + its planted wait, enqueue,
        // DCN and outfeed, plus the host's lead and tail.
        let planted = spec.stragglers.iter().chain(&spec.slow_input_hosts).map(|p| p.0);
        let slowest = planted
            .chain([0])
            .map(|h| compute_ps * (spec.slowdown(h) * 1.015 * 1.02 * 1.03 + 0.012 + spec.input_wait(h)))
            .fold(0.0, f64::max);
        let worst_slowdown = spec.stragglers.iter().map(|s| s.1).fold(1.0, f64::max);
        let fixed = (DEVICE_START_US + 100 + 2 * i64::from(spec.cores_per_host) + 20 + 20) * PS_PER_US
            + enqueue_ps(compute_ps)
            + dcn_bound_ps()
            + outfeed_ps(compute_ps) * 2
            + (f64::from(layers * OPS_PER_LAYER) * worst_slowdown) as i64 * PS_PER_US;
        let period_ps = slowest as i64 + fixed;
        let hlo = hlo_proto(&ops, spec.megascale);
        Program { ops, iterations, hlo, compute_ps, period_ps }
    }
}

/// The host's enqueue of a step's input onto the device (at least 8 µs).
fn enqueue_ps(compute_ps: f64) -> i64 {
    ((compute_ps * 0.005) as i64).max(8 * PS_PER_US)
}

/// The device outfeed (at least 2 µs).
fn outfeed_ps(compute_ps: f64) -> i64 {
    ((compute_ps * 0.003) as i64).max(2 * PS_PER_US)
}

/// Nominal (send, send-done, recv, recv-done) times of a DCN collective (µs).
const DCN_US: [f64; 4] = [3.0, 18.0, 2.0, 26.0];

/// An upper bound of the DCN ops' time in a step, gaps included.
fn dcn_bound_ps() -> i64 {
    let per = DCN_US.iter().sum::<f64>() * 1.2 + 4.0;
    (per * dcn::COLLECTIVES.len() as f64) as i64 * PS_PER_US
}

/// The program's `HloProto`: a reducer, one fused computation per fusion, and the entry
/// computation whose instructions carry the device ops' names and the JAX op names (the
/// backward pass under `transpose(jvp(...))`, so XProf marks the run as training); with
/// `megascale`, the DCN collectives' instructions too.
fn hlo_proto(ops: &[ProgramOp], megascale: bool) -> Vec<u8> {
    let act = || shape(BF16, &[TOKENS, WIDTH]);
    let weight = || shape(F32, &[WIDTH, WIDTH]);
    let scalar = || shape(F32, &[]);
    let mut computations = vec![wire::HloComputationProto {
        name: "region_add".to_string(),
        instructions: vec![
            parameter("x", 20_000, 0, scalar()),
            parameter("y", 20_001, 1, scalar()),
            instruction("sum", "add", 20_002, &[20_000, 20_001], scalar()),
        ],
        program_shape: Some(wire::ProgramShapeProto {
            parameters: vec![scalar(), scalar()],
            result: Some(scalar()),
            parameter_names: vec!["x".into(), "y".into()],
        }),
        id: 2,
        root_id: 20_002,
        is_fusion_computation: false,
    }];
    let dcn = if megascale { dcn::instructions() } else { dcn::Instructions::default() };
    let first_param = dcn.parameters.len() as i64;
    let (act_id, weight_id) = (300, 301);
    let mut instructions = dcn.instructions;
    instructions.push(parameter("activations", act_id, first_param, act()));
    instructions.push(parameter("weights", weight_id, first_param + 1, weight()));
    let mut parameters = dcn.parameters;
    parameters.extend([act(), weight()]);
    let mut parameter_names: Vec<String> = (0..first_param).map(|i| format!("p{i}")).collect();
    parameter_names.extend(["activations".to_string(), "weights".to_string()]);
    let (mut last_act, mut last_grad, mut root) = (act_id, weight_id, act_id);
    for (index, op) in ops.iter().enumerate() {
        let id = 1_000 + index as i64;
        let result = shape(op.element_type, &op.dims);
        let operand = |o: &Operand| match o {
            Operand::Activation => (last_act, act()),
            Operand::Weights => (weight_id, weight()),
            Operand::Gradient => (last_grad, weight()),
        };
        let (operand_ids, operand_shapes): (Vec<i64>, Vec<wire::ShapeProto>) = op.operands.iter().map(operand).unzip();
        let mut i = instruction(&op.name, op.opcode, id, &operand_ids, result.clone());
        let framework = op.tf_op.trim_end_matches(':');
        i.metadata = Some(wire::OpMetadata {
            op_type: framework.rsplit('/').next().unwrap_or("").to_string(),
            op_name: framework.to_string(),
            source_file: "train.py".to_string(),
            source_line: 40 + index as i32 + 1,
        });
        // A weight gradient contracts the tokens of two activations; the others contract
        // an activation's width with the weights' rows.
        let contracting = if op.element_type == F32 { (0, 0) } else { (1, 0) };
        let dot_numbers = wire::DotDimensionNumbers {
            lhs_contracting_dimensions: vec![contracting.0],
            rhs_contracting_dimensions: vec![contracting.1],
        };
        match op.opcode {
            "dot" => i.dot_dimension_numbers = Some(dot_numbers),
            "all-reduce" => i.called_computation_ids = vec![2],
            "fusion" => {
                // Each fusion calls its own computation (XLA never shares them).
                let computation_id = 10_000 + index as i64;
                let base = 100_000 + 4 * index as i64;
                let mut fused: Vec<wire::HloInstructionProto> = (0..)
                    .zip(&operand_shapes)
                    .map(|(k, s)| parameter(&format!("param_{k}.{}", index + 1), base + k, k, s.clone()))
                    .collect();
                let (body_opcode, fusion_kind) =
                    if op.category == "convolution fusion" { ("dot", "kOutput") } else { ("multiply", "kLoop") };
                let last_param = base + operand_ids.len() as i64 - 1;
                let mut body = instruction(
                    &format!("{body_opcode}.f{}", index + 1),
                    body_opcode,
                    base + 3,
                    &[base, last_param],
                    result.clone(),
                );
                if body_opcode == "dot" {
                    body.dot_dimension_numbers = Some(dot_numbers);
                }
                fused.push(body);
                computations.push(wire::HloComputationProto {
                    name: format!("fused_computation.{}", index + 1),
                    instructions: fused,
                    program_shape: Some(wire::ProgramShapeProto {
                        parameter_names: (0..operand_shapes.len()).map(|k| format!("param_{k}")).collect(),
                        parameters: operand_shapes,
                        result: Some(result.clone()),
                    }),
                    id: computation_id,
                    root_id: base + 3,
                    is_fusion_computation: true,
                });
                i.fusion_kind = fusion_kind.to_string();
                i.called_computation_ids = vec![computation_id];
            }
            _ => {}
        }
        if op.element_type == BF16 {
            last_act = id;
        } else if op.opcode != "fusion" {
            last_grad = id;
        }
        root = id;
        instructions.push(i);
    }
    let root_shape = ops.last().map_or_else(act, |o| shape(o.element_type, &o.dims));
    let program_shape = wire::ProgramShapeProto { parameters, result: Some(root_shape), parameter_names };
    computations.push(wire::HloComputationProto {
        name: "main".to_string(),
        instructions,
        program_shape: Some(program_shape.clone()),
        id: 1,
        root_id: root,
        is_fusion_computation: false,
    });
    wire::HloProto {
        hlo_module: Some(wire::HloModuleProto {
            name: PROGRAM.to_string(),
            entry_computation_name: "main".to_string(),
            computations,
            host_program_shape: Some(program_shape),
            id: PROGRAM_ID as i64,
            entry_computation_id: 1,
        }),
    }
    .encode_to_vec()
}

/// A uniform number in `[lo, hi)`.
fn uniform(r: &mut Pcg64, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * ((r.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
}

/// Streams of the seed's generator: one per host step (shared by its host and device
/// planes), per core step, per host, per pod step and for a host's counters, so any of
/// them can be replayed alone.
fn rng(seed: u64, stream: u128) -> Pcg64 {
    Pcg64::new(u128::from(seed) << 64 | 0x5eed, stream)
}

fn host_stream(host: usize) -> u128 {
    1 << 120 | host as u128
}

fn host_step_stream(host: usize, step: u32) -> u128 {
    2 << 120 | (host as u128) << 32 | u128::from(step)
}

fn core_step_stream(host: usize, core: u32, step: u32) -> u128 {
    3 << 120 | (host as u128) << 64 | u128::from(core) << 32 | u128::from(step)
}

fn pod_step_stream(step: u32) -> u128 {
    4 << 120 | u128::from(step)
}

fn host_counters_stream(host: usize) -> u128 {
    5 << 120 | host as u128
}

/// One host's fixed traits.
struct HostTraits {
    /// Speed factor (±1.5%) times the planted slowdown.
    factor: f64,
    /// The planted slowdown (1 when none).
    slowdown: f64,
    /// Clock skew of its step starts (ps).
    skew_ps: i64,
}

/// A host's step as its host thread sees it.
struct HostStep {
    /// Start of the `train` marker (ps from the line start).
    start_ps: i64,
    /// The input wait (`IteratorGetNext`).
    input_ps: i64,
    /// The enqueue onto the device.
    enqueue_ps: i64,
}

/// One op on a device line: its metadata index (program ops, then DCN ops), start, length.
#[derive(Debug, Clone, Copy)]
struct Slot {
    op: usize,
    /// Which run of the loop body (0 for ops outside it).
    iteration: u32,
    start_ps: i64,
    duration_ps: i64,
}

/// A core's step: begin, DCN span (when any), end.
#[derive(Debug, Clone, Copy, Default)]
struct CoreStep {
    begin_ps: i64,
    dcn_ps: (i64, i64),
    end_ps: i64,
}

/// Everything of one host that is random, derived from the seed on demand.
struct Host<'a> {
    spec: &'a PodSpec,
    program: &'a Program,
    host: usize,
    traits: HostTraits,
    /// The pod-wide step factors (±2%), one per step.
    step_factors: &'a [f64],
}

impl<'a> Host<'a> {
    fn new(spec: &'a PodSpec, program: &'a Program, host: usize, step_factors: &'a [f64]) -> Host<'a> {
        let mut r = rng(spec.seed, host_stream(host));
        let traits = HostTraits {
            factor: uniform(&mut r, 0.985, 1.015) * spec.slowdown(host),
            slowdown: spec.slowdown(host),
            skew_ps: (uniform(&mut r, 0.0, 20.0) * PS_PER_US as f64) as i64,
        };
        Host { spec, program, host, traits, step_factors }
    }

    fn step(&self, step: u32) -> HostStep {
        let mut r = rng(self.spec.seed, host_step_stream(self.host, step));
        let compute = self.program.compute_ps;
        let jitter_ps = (uniform(&mut r, 0.0, 3.0) * PS_PER_US as f64) as i64;
        let input = compute * (uniform(&mut r, 0.008, 0.012) + self.spec.input_wait(self.host));
        HostStep {
            start_ps: i64::from(step) * self.program.period_ps + self.traits.skew_ps + jitter_ps,
            input_ps: input as i64,
            enqueue_ps: enqueue_ps(compute),
        }
    }

    /// Core `core`'s ops in step `step`, into `slots` (cleared first).
    fn core_step(&self, core: u32, step: u32, slots: &mut Vec<Slot>) -> CoreStep {
        slots.clear();
        let h = self.step(step);
        let mut r = rng(self.spec.seed, core_step_stream(self.host, core, step));
        let begin = h.start_ps + DEVICE_START_US * PS_PER_US + i64::from(core) * 3 * PS_PER_US / 2;
        // The infeed waits until the host has enqueued the step's input.
        let input_ready = h.start_ps + DEVICE_START_US * PS_PER_US + h.input_ps + h.enqueue_ps;
        let infeed_ps = (input_ready - begin).max(PS_PER_US);
        let ops = &self.program.ops;
        let (infeed, outfeed) = (ops.len(), ops.len() + 1);
        slots.push(Slot { op: infeed, iteration: 0, start_ps: begin, duration_ps: infeed_ps });
        let mut t = begin + infeed_ps;
        let factor = self.traits.factor * self.step_factors.get(step as usize).copied().unwrap_or(1.0);
        for iteration in 0..self.program.iterations {
            for (index, op) in ops.iter().enumerate() {
                t += (uniform(&mut r, 0.2, 1.0) * self.traits.slowdown * PS_PER_US as f64) as i64;
                let duration = (op.nominal_ps * factor * uniform(&mut r, 0.97, 1.03)) as i64;
                slots.push(Slot { op: index, iteration, start_ps: t, duration_ps: duration.max(1) });
                t += duration;
            }
        }
        let mut dcn_ps = (t, t);
        if self.spec.megascale {
            let first = ops.len() + 2;
            for index in 0..dcn::COLLECTIVES.len() {
                for (k, us) in DCN_US.iter().enumerate() {
                    t += (uniform(&mut r, 0.5, 1.0) * PS_PER_US as f64) as i64;
                    let duration = (us * uniform(&mut r, 0.85, 1.2) * PS_PER_US as f64) as i64;
                    slots.push(Slot { op: first + 4 * index + k, iteration: 0, start_ps: t, duration_ps: duration });
                    t += duration;
                }
            }
            dcn_ps.1 = t;
        }
        t += PS_PER_US / 2;
        let out = (outfeed_ps(self.program.compute_ps) as f64 * uniform(&mut r, 0.9, 1.1)) as i64;
        slots.push(Slot { op: outfeed, iteration: 0, start_ps: t, duration_ps: out });
        t += out + PS_PER_US;
        CoreStep { begin_ps: begin, dcn_ps, end_ps: t }
    }
}

/// A program op's position in its step (below [`MAX_OPS_PER_STEP`]).
fn op_position(program: &Program, slot: &Slot) -> u64 {
    u64::from(slot.iteration) * program.ops.len() as u64 + slot.op as u64
}

/// The device ops' metadata names, by [`Slot::op`]: the program's ops, the infeed and
/// outfeed, then the DCN ops.
fn declare_device_ops(p: &mut crate::PlaneBuilder, program: &Program, megascale: bool) -> Vec<String> {
    let mut names: Vec<String> =
        program.ops.iter().enumerate().map(|(i, op)| op.xla_op(i as u64 + 1).declare(p, PROGRAM_ID)).collect();
    let feed = |name: &'static str, opcode: &'static str, tf_op: &'static str, hbm, dims: &'static [i64]| XlaOp {
        name,
        opcode,
        category: opcode,
        tf_op,
        symbol_id: 0,
        flops: 0,
        hbm,
        element_type: BF16,
        dims,
    };
    names.push(
        feed("infeed.0", "infeed", "jit(train_step)/jit(main)/infeed:", (0, ACT_BYTES), &[TOKENS, WIDTH])
            .declare(p, PROGRAM_ID),
    );
    names.push(
        feed("outfeed.0", "outfeed", "jit(train_step)/jit(main)/outfeed:", (4096, 0), &[1024]).declare(p, PROGRAM_ID),
    );
    if megascale {
        dcn::declare_ops(p, PROGRAM_ID);
        for c in &dcn::COLLECTIVES {
            names.extend(dcn::op_names(c).iter().map(|n| dcn::long_name(n)));
        }
    }
    names
}

/// Writes host `host`'s XSpace to `w`, one plane at a time (the bytes are those of the
/// whole space encoded at once: planes, then the host name); returns the bytes written.
fn write_host(spec: &PodSpec, program: &Program, host: usize, w: &mut impl Write) -> std::io::Result<u64> {
    let step_factors: Vec<f64> =
        (0..spec.steps).map(|s| uniform(&mut rng(spec.seed, pod_step_stream(s)), 0.98, 1.02)).collect();
    let h = Host::new(spec, program, host, &step_factors);
    let name = spec.host_name(host);
    let mut written = 0u64;
    let mut put = |bytes: Vec<u8>| -> std::io::Result<()> {
        written += bytes.len() as u64;
        w.write_all(&bytes)
    };
    let mut slots = Vec::with_capacity(program.ops.len() * program.iterations as usize + 16);
    // Per step: the latest end over cores, and core 0's DCN span (for the host's TraceMes).
    let mut step_end = vec![0i64; spec.steps as usize];
    let mut step_dcn = vec![(0i64, 0i64); spec.steps as usize];
    for core in 0..spec.cores_per_host {
        let bytes = XSpaceBuilder::new()
            .plane(&format!("/device:TPU:{core}"), |p| {
                p.id(i64::from(core) + 1);
                let chip = core / 2;
                let chips_per_host = spec.cores_per_host.div_ceil(2);
                let details = wire::CoreDetails {
                    hostname: name.clone(),
                    device_ordinal: core,
                    core_num: core % 2,
                    local_chip_id: chip,
                    global_chip_id: host as u32 * chips_per_host + chip,
                    global_core_id: host as u32 * spec.cores_per_host + core,
                };
                tpu::tpu_v4_core_stats(p, &details);
                let names = declare_device_ops(p, program, spec.megascale);
                // The steps' spans first (the ops are drawn again, identically, below).
                let steps: Vec<CoreStep> = (0..spec.steps).map(|step| h.core_step(core, step, &mut slots)).collect();
                p.line(1, "Steps", T0_NS, |l| {
                    for (step, c) in (0..).zip(&steps) {
                        l.event(&(FIRST_STEP + step).to_string(), c.begin_ps, c.end_ps - c.begin_ps);
                    }
                });
                p.line(2, "XLA Modules", T0_NS, |l| {
                    for (step, c) in (0..).zip(&steps) {
                        l.event(&format!("{PROGRAM}({PROGRAM_ID})"), c.begin_ps, c.end_ps - c.begin_ps)
                            .stat("run_id", i64::from(FIRST_STEP + step))
                            .stat("replica_id", 0i64)
                            .stat("queue_id", 0i64)
                            .stat("core_type", 0i64);
                    }
                });
                let all_reduce_base = (host as u64) << 40;
                p.line(3, "XLA Ops", T0_NS, |l| {
                    for step in 0..spec.steps {
                        h.core_step(core, step, &mut slots);
                        for slot in &slots {
                            let e = l.event(&names[slot.op], slot.start_ps, slot.duration_ps);
                            // The same id on every core of the host: XProf splits an
                            // all-reduce into compute (the fastest core) and sync.
                            if program.ops.get(slot.op).is_some_and(|o| o.kind == Kind::AllReduce) {
                                e.stat(
                                    "all_reduce_unique_id",
                                    all_reduce_base | op_position(program, slot) << 20 | u64::from(step),
                                );
                            }
                        }
                    }
                });
                for (s, c) in steps.iter().enumerate() {
                    step_end[s] = step_end[s].max(c.end_ps);
                    if core == 0 {
                        step_dcn[s] = c.dcn_ps;
                    }
                }
            })
            .to_bytes();
        put(bytes)?;
    }
    let bytes = XSpaceBuilder::new()
        .plane("/host:CPU", |p| {
            p.id(0);
            let mut r = rng(spec.seed, host_counters_stream(host));
            // Hardware counters as the TPU runtime reports them (ALL_HOSTS shows their mean).
            p.stat(
                "matrix_unit_utilization_percent",
                (uniform(&mut r, 35.0, 45.0) / spec.slowdown(host) * 100.0).round() / 100.0,
            );
            p.stat("hbm_utilization_percent", (uniform(&mut r, 55.0, 65.0) * 100.0).round() / 100.0);
            let us = |v: i64| v * PS_PER_US;
            p.line(1, "python", T0_NS, |l| {
                for step in 0..spec.steps {
                    let s = h.step(step);
                    let t = s.start_ps;
                    let end = step_end[step as usize] + us(20);
                    let step_num = i64::from(FIRST_STEP + step);
                    l.event("train", t, end - t).stat("_r", 1i64).stat("step_num", step_num);
                    l.event("PjitFunction(train_step)", t + us(5), us(20));
                    // One launch per TensorCore: XProf links `DoEnqueueProgram` to the `XLA
                    // Modules` event with the same (device ordinal, queue, run id, core type).
                    for core in 0..spec.cores_per_host {
                        l.event("DoEnqueueProgram", t + us(LAUNCH_US) + i64::from(core) * us(3) / 2, us(1))
                            .stat("device_ordinal", i64::from(core))
                            .stat("queue_id", 0i64)
                            .stat("run_id", step_num)
                            .stat("core_type", 0i64);
                    }
                    let input_start = t + us(DEVICE_START_US);
                    l.event("IteratorGetNext", input_start, s.input_ps);
                    l.event(
                        "infeed_enqueue/InfeedEnqueueTuple:InfeedEnqueueTuple",
                        input_start + s.input_ps,
                        s.enqueue_ps,
                    );
                }
            });
            if spec.megascale {
                // The megascale runtime's TraceMes: XProf only tests that their names exist.
                p.line(2, "megascale_dcn", T0_NS, |l| {
                    for &(start, end) in &step_dcn {
                        for c in &dcn::COLLECTIVES {
                            l.event(&format!("MegaScale: {}", c.rendezvous), start, end - start);
                        }
                    }
                });
            }
        })
        .to_bytes();
    put(bytes)?;
    let bytes = XSpaceBuilder::new()
        .plane("/host:metadata", |p| {
            p.id(100);
            p.event_metadata_stat(
                &format!("{PROGRAM}({PROGRAM_ID})"),
                "Hlo Proto",
                crate::Value::Bytes(program.hlo.clone()),
            );
        })
        .plane("Task Environment", |p| {
            p.id(101);
            p.stat("profile_start_time", T0_NS as u64);
            let stop_ns = T0_NS + i64::from(spec.steps) * program.period_ps / 1_000 + 1_000_000;
            p.stat("profile_stop_time", stop_ns as u64);
        })
        .to_bytes();
    put(bytes)?;
    put(XSpaceBuilder::new().hostname(&name).to_bytes())?;
    Ok(written)
}
