//! The `utilization_viewer` tool: TPU unit utilization computed from performance counters,
//! as XProf's `ConvertXSpaceToUtilizationViewer` (`xprof/convert/xplane_to_utilization_viewer.cc`
//! with `tpu_generic_utilization_utils.cc`) does for TPU v6e and v7x: per TPU plane with a
//! `device_id` and per counter sample (line), rows of achieved vs peak for the TensorCore
//! units (scalar, vector, MXU, XLU; on v7x also throttled clocks), HBM and ICI bandwidth,
//! and the SparseCores, per core (v7x has two dies, each a TensorCore, its HBM and two
//! SparseCores). Planes of other TPU generations are skipped as XProf does.

use crate::tools::tpu_counter_ids_v6e::TPU_V6E_COUNTERS;
use crate::tools::tpu_counter_ids_v7x::TPU_V7X_COUNTERS;
use oxprof_model::schema::{StatType, TPU_PLANE_PREFIX};
use oxprof_model::{StatValue, XPlane, XSpace};
use oxprof_report::{Report, Table, XprofBody, json_of};
use oxprof_wire::datatable::{ColumnType, DataTable};
use oxprof_wire::nlohmann;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

/// The `utilization_viewer` report.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UtilizationViewer {
    /// Rows: plane by plane, sample by sample, in XProf's metric order.
    pub rows: Vec<UtilizationRow>,
}

/// One metric of one sample.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UtilizationRow {
    /// Host index (XProf always writes 0).
    pub host: u64,
    /// The plane's `device_id`.
    pub device: u64,
    /// The sample (line id).
    pub sample: u64,
    /// The core (or 0 for chip-wide metrics).
    pub node: u64,
    /// Metric name.
    pub name: String,
    /// Achieved amount.
    pub achieved: f64,
    /// Peak amount over the same time.
    pub peak: f64,
    /// Unit of both.
    pub unit: String,
}

const TC: &str = "VF_CHIP_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_";
const V6E: &str = "TPU v6 Lite";
const V7X: &str = "TPU v7x";
const MXUS_PER_CORE: u64 = 2;
const HBM_BYTES_PER_BEAT: u64 = 32;
const ICI_BYTES_PER_FLIT: u64 = 128;
/// `kPeakIciRdBwBytesPerSecond`, over an approximate 1 GHz clock.
const PEAK_ICI_BPS: f64 = 294947368421.0526;
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// The TPU generations XProf's viewer computes (`ShouldProcessDevice`: exact device types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Generation {
    V6e,
    V7x,
}

impl Generation {
    fn of(device_type: &str) -> Option<Generation> {
        match device_type {
            V6E => Some(Generation::V6e),
            V7X => Some(Generation::V7x),
            _ => None,
        }
    }
    /// TensorCore clock (`GetTensorCoreFrequencyHz`).
    fn frequency_hz(self) -> f64 {
        match self {
            Generation::V6e => 1.75e9,
            Generation::V7x => 1.9e9,
        }
    }
    /// Peak HBM bandwidth per core (`GetPeakHbmBandwidthBps`).
    fn peak_hbm_bps(self) -> f64 {
        match self {
            Generation::V6e => 1525.5 * GIB,
            Generation::V7x => 3433.0 * GIB,
        }
    }
    /// Cycles per XLU instruction (`GetCyclesPerXlu`).
    fn cycles_per_xlu(self) -> u64 {
        match self {
            Generation::V6e => 4,
            Generation::V7x => 1,
        }
    }
    /// TensorCores (v7x: one per die).
    fn tensor_cores(self) -> u64 {
        match self {
            Generation::V6e => 1,
            Generation::V7x => 2,
        }
    }
    fn counters(self) -> &'static [(&'static str, u64)] {
        match self {
            Generation::V6e => TPU_V6E_COUNTERS,
            Generation::V7x => TPU_V7X_COUNTERS,
        }
    }
}

/// The id of a counter by name (0, which no counter has, when unknown).
fn counter_id(generation: Generation, name: &str) -> u64 {
    let table = generation.counters();
    table.binary_search_by(|(n, _)| (*n).cmp(name)).map_or(0, |i| table[i].1)
}

/// The id of a v6e counter by name.
#[cfg(test)]
fn id(name: &str) -> u64 {
    counter_id(Generation::V6e, name)
}

/// Sums with `u64` wraparound, as XProf's `uint64_t` arithmetic.
fn wsum(values: impl IntoIterator<Item = u64>) -> u64 {
    values.into_iter().fold(0u64, u64::wrapping_add)
}

/// One sample's counters by id (`TpuCounterUtil`: absent counters read 0).
struct Sample {
    counters: HashMap<u64, u64>,
    generation: Generation,
}

impl Sample {
    fn get(&self, id: u64) -> u64 {
        self.counters.get(&id).copied().unwrap_or(0)
    }
    fn named(&self, name: &str) -> u64 {
        self.get(counter_id(self.generation, name))
    }
    /// A TensorCore statistics counter of `core` (v7x: the core's die).
    fn tc(&self, core: u64, suffix: &str) -> u64 {
        match self.generation {
            Generation::V6e => self.named(&format!("{TC}{suffix}")),
            Generation::V7x => self.named(&format!(
                "VF_CHIP_DIE{core}_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_{suffix}"
            )),
        }
    }
    fn sum_tc(&self, core: u64, suffixes: &[&str]) -> u64 {
        wsum(suffixes.iter().map(|s| self.tc(core, s)))
    }
    /// A v7x power manager throttle counter of `die`.
    fn pwrmgr(&self, die: u64, suffix: &str) -> u64 {
        self.named(&format!("VF_CHIP_DIE{die}_PWRMGR_PWRMGR_TC_THROTTLE_CORE_DEBUG_STATS_UNPRIVILEGED_{suffix}"))
    }
}

/// A counter value as XProf reads it: a non-zero double (clamped to `u64`, truncated),
/// else the integer value (0 for strings).
fn counter_value(value: StatValue<'_>) -> u64 {
    match value {
        StatValue::Double(d) if d != 0.0 => {
            if d < 0.0 || d.is_nan() {
                0
            } else if d >= u64::MAX as f64 {
                u64::MAX
            } else {
                d as u64
            }
        }
        StatValue::Int64(x) => x as u64,
        StatValue::Uint64(x) => x,
        _ => 0,
    }
}

struct Rows<'a> {
    out: &'a mut Vec<UtilizationRow>,
    device: u64,
    sample: u64,
}

impl Rows<'_> {
    fn add(&mut self, node: u64, name: &str, achieved: f64, peak: f64, unit: &str) {
        self.out.push(UtilizationRow {
            host: 0,
            device: self.device,
            sample: self.sample,
            node,
            name: name.to_string(),
            achieved,
            peak,
            unit: unit.to_string(),
        });
    }
}

const INSTRUCTIONS: &str = "instructions";
const CYCLES: &str = "cycles";

/// `ComputeTpuGenericTcUnitUtilization` for TensorCore `core`.
fn tensor_core(s: &Sample, core: u64, rows: &mut Rows<'_>) {
    let generation = s.generation;
    let v7x = generation == Generation::V7x;
    // v7x counts the core's cycles (throttled ones included) in its power manager.
    let cycles = if v7x { s.pwrmgr(core, "CYCLE_COUNT") } else { s.tc(core, "CYCLES") };
    if cycles == 0 {
        return;
    }
    let c = cycles as f64;
    let times = |k: u64| cycles.wrapping_mul(k) as f64;
    let node = core;
    if v7x {
        for (metric, counter) in [
            ("Clocks Skipped", "CLOCKS_SKIPPED"),
            ("Ext Throttle Clocks Skipped", "EXT_THROTTLE_CLOCKS_SKIPPED"),
            ("LDIDT Droop Clocks Skipped", "LDIDT_DROOP_CLOCKS_SKIPPED"),
        ] {
            rows.add(node, metric, s.pwrmgr(core, counter) as f64, c, CYCLES);
        }
    }
    let tc = |name: &str| s.tc(core, name);
    rows.add(
        node,
        "Scalar Unit",
        s.sum_tc(core, &["SCALAR_ALU_INSTRUCTION_0", "SCALAR_ALU_INSTRUCTION_1"]) as f64,
        times(2),
        INSTRUCTIONS,
    );
    let vpu_issued = s.sum_tc(
        core,
        &[
            "VECTOR_ALU_INSTRUCTION_0",
            "VECTOR_ALU_INSTRUCTION_1",
            "VECTOR_ALU_INSTRUCTION_2",
            "VECTOR_ALU_INSTRUCTION_3",
        ],
    );
    rows.add(node, "Vector ALUs", vpu_issued as f64, times(4), INSTRUCTIONS);
    let vpu_ops = wsum(
        ["FADD", "FMUL", "MISC", "INT", "FMAC"]
            .iter()
            .flat_map(|k| (0..4).map(move |i| format!("VPU_VALU_{k}_OPS_{i}")))
            .map(|n| tc(&n)),
    );
    rows.add(node, "VPU Utilization", vpu_ops as f64, times(4), INSTRUCTIONS);
    rows.add(node, "Vmem Stores", tc("VST_INSTRUCTION") as f64, c, INSTRUCTIONS);
    rows.add(
        node,
        "Vmem Loads",
        s.sum_tc(core, &["VLD_INSTRUCTION_0", "VLD_INSTRUCTION_1"]) as f64,
        times(2),
        INSTRUCTIONS,
    );
    rows.add(node, "No MXU Busy", tc("MXU_BUSY_0") as f64, c, CYCLES);
    rows.add(node, "1 MXU Busy", tc("MXU_BUSY_1") as f64, c, CYCLES);
    rows.add(node, "2 MXU Busy", tc("MXU_BUSY_2") as f64, c, CYCLES);
    rows.add(node, "Avg MXU Busy", 0.5 * tc("MXU_BUSY_1") as f64 + tc("MXU_BUSY_2") as f64, c, CYCLES);
    // Cycles per instruction of each matmul kind (XProf's kCpiMxu* constants), weighted sums.
    let weighted = |terms: &[(u64, &str)], u: u32| {
        wsum(terms.iter().map(|(cpi, kind)| cpi.wrapping_mul(tc(&format!("MATMUL_{kind}_MXU_{u}")))))
    };
    let both = times(MXUS_PER_CORE);
    match generation {
        Generation::V6e => {
            let bf16 = |u| weighted(&[(4, "LMR_BF16"), (8, "VREG_F8"), (8, "VREG_BF16"), (4, "VREG_F32")], u);
            let i8 = |u| weighted(&[(2, "LMR_I8"), (8, "VREG_I8")], u);
            let i4 = |u| weighted(&[(2, "LMR_I4"), (8, "VREG_I4")], u);
            let mxu = |u| wsum([bf16(u), i8(u), i4(u)]);
            rows.add(node, "MXU0", mxu(0) as f64, c, CYCLES);
            rows.add(node, "MXU1", mxu(1) as f64, c, CYCLES);
            rows.add(node, "MXU BF16", bf16(0).wrapping_add(bf16(1)) as f64, both, CYCLES);
            rows.add(node, "MXU I8", i8(0).wrapping_add(i8(1)) as f64, both, CYCLES);
            rows.add(node, "MXU I4", i4(0).wrapping_add(i4(1)) as f64, both, CYCLES);
        }
        Generation::V7x => {
            let bf16 = |u| weighted(&[(4, "LMR_BF16"), (8, "VREG_BF16"), (4, "VREG_F32")], u);
            let f8 = |u| weighted(&[(8, "VREG_F8")], u);
            let mxu = |u| bf16(u).wrapping_add(f8(u));
            rows.add(node, "MXU0", mxu(0) as f64, c, CYCLES);
            rows.add(node, "MXU1", mxu(1) as f64, c, CYCLES);
            rows.add(node, "MXU BF16", bf16(0).wrapping_add(bf16(1)) as f64, both, CYCLES);
            rows.add(node, "MXU E4M3 + E5M2", f8(0).wrapping_add(f8(1)) as f64, both, CYCLES);
        }
    }
    rows.add(
        node,
        "MXU matpush",
        s.sum_tc(core, &["MATPUSH_CYCLES_MXU_0", "MATPUSH_CYCLES_MXU_1"]) as f64,
        both,
        CYCLES,
    );
    rows.add(node, "No XLU Busy", tc("XLU_BUSY_0") as f64, c, CYCLES);
    rows.add(node, "1 XLU Busy", tc("XLU_BUSY_1") as f64, c, CYCLES);
    rows.add(node, "2 XLUs Busy", tc("XLU_BUSY_2") as f64, c, CYCLES);
    rows.add(node, "Avg XLU Busy", 0.5 * tc("XLU_BUSY_1") as f64 + tc("XLU_BUSY_2") as f64, c, CYCLES);
    let xlu_peak = (cycles / generation.cycles_per_xlu()) as f64;
    for u in 0..2 {
        let issued = s.sum_tc(
            core,
            &[
                &format!("PACKED_XLU_{u}"),
                &format!("ROTATE_PERMUTE_INSTRUCTION_XLU_{u}"),
                &format!("ROTATE_PERMUTE_SET_INSTRUCTION_XLU_{u}"),
                &format!("TRANSPOSE_XLU_{u}"),
            ],
        );
        rows.add(node, &format!("XLU{u}"), issued as f64, xlu_peak, INSTRUCTIONS);
    }
}

/// `ComputeTpuGenericBandwidthUtilization` for `core`: HBM traffic of the sample (v6e: the
/// chip's two stacks; v7x: the four stacks of the core's die).
fn hbm_bandwidth(s: &Sample, core: u64, rows: &mut Rows<'_>) {
    let hbm = |channel: &str| {
        match s.generation {
        Generation::V6e => wsum((0..2).flat_map(|stack| (0..16).map(move |controller| (stack, controller))).map(
            |(stack, controller)| {
                s.named(&format!(
                    "VF_CHIP_HBM_{stack}_HBMC_{controller}_CMN_HI_FREQ_STATS_COUNTERS_UNPRIVILEGED_{channel}"
                ))
            },
        )),
        Generation::V7x => wsum((0..4).flat_map(|stack| (0..16).map(move |controller| (stack, controller))).map(
            |(stack, controller)| {
                s.named(&format!(
                    "VF_CHIP_DIE{core}_HBM_{stack}_SS_HBMC_{controller}_CMN_HI_FREQ_STATS_COUNTERS_UNPRIVILEGED_{channel}"
                ))
            },
        )),
    }
    };
    let read_beats = hbm("RD_RESP_PS0").wrapping_add(hbm("RD_RESP_PS1"));
    let write_beats = wsum(["WR_REQ_PS0", "PARTIAL_WRITE_REQ_PS0", "WR_REQ_PS1", "PARTIAL_WRITE_REQ_PS1"].map(hbm));
    let read = read_beats.wrapping_mul(HBM_BYTES_PER_BEAT);
    let write = write_beats.wrapping_mul(HBM_BYTES_PER_BEAT);
    let cycles = s.tc(core, "CYCLES");
    if cycles == 0 {
        return;
    }
    let seconds = cycles as f64 / s.generation.frequency_hz();
    rows.add(
        0,
        &format!("HBM Rd+Wr - core {core}"),
        read.wrapping_add(write) as f64,
        s.generation.peak_hbm_bps() * seconds,
        "bytes",
    );
    let total = read as f64 + write as f64;
    if total > 0.0 {
        rows.add(core, "HBM Read Ratio", read as f64, total, "percent");
        rows.add(core, "HBM Write Ratio", write as f64, total, "percent");
    }
}

/// `ComputeTpuGenericIciBandwidthUtilization` (chip-wide; v7x reads die 1's four routers
/// and die 0's cycles).
fn ici_bandwidth(s: &Sample, rows: &mut Rows<'_>) {
    let flits = |kind: &str| {
        match s.generation {
        Generation::V6e => wsum((0..2).map(|q| {
            s.named(&format!(
                "VF_CHIP_OCI_ICR_PERF_COUNTERS_FIFO_STATS_COUNTERS_UNPRIVILEGED_BN_{kind}_REQ_{q}_INSERTION_COUNT"
            ))
        })),
        Generation::V7x => wsum((0..4).map(|router| {
            s.named(&format!(
                "VF_CHIP_DIE1_OCI_ICR_{router}_PERF_COUNTERS_FIFO_STATS_COUNTERS_UNPRIVILEGED_BN_{kind}_REQ_0_INSERTION_COUNT"
            ))
        })),
    }
    };
    let read = flits("RD").wrapping_mul(ICI_BYTES_PER_FLIT);
    let write = flits("WR").wrapping_mul(ICI_BYTES_PER_FLIT);
    let cycles = match s.generation {
        Generation::V6e => s.tc(0, "CYCLES"),
        Generation::V7x => s.pwrmgr(0, "CYCLE_COUNT"),
    };
    if cycles == 0 {
        return;
    }
    let peak = PEAK_ICI_BPS * (cycles as f64 / 1e9);
    rows.add(0, "ICI (Read)", read as f64, peak, "bytes");
    rows.add(0, "ICI (Write)", write as f64, peak, "bytes");
}

/// `ComputeTpuv6eScUnitUtilization` for SparseCore `core` (0 or 1).
fn sparse_core_v6e(s: &Sample, core: u64, rows: &mut Rows<'_>) {
    let tile =
        |t: u32, name: &str| s.named(&format!("VF_CHIP_SC_{core}_SCT_{t}_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_{name}"));
    let tiles = |name: &str| wsum((0..16).map(|t| tile(t, name)));
    let scs = |name: &str| s.named(&format!("VF_CHIP_SC_{core}_SCS_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_{name}"));
    // The TEC and TAC cycle counts are the same counter (tile 0's cycles).
    let tile_peak = tile(0, "CYCLES").wrapping_mul(16) as f64;
    for (metric, name) in [
        ("TEC Scalar Issue", "TEC_SCALAR_ISSUE"),
        ("TEC Scalar Issue: S0 slot", "TEC_S0_INSTRUCTION"),
        ("TEC Scalar Issue: S1 slot", "TEC_S1_INSTRUCTION"),
        ("TEC Scalar Issue: Smisc slot", "TEC_SMISC_INSTRUCTION"),
        ("SC Vector Issue", "VECTOR_ISSUE"),
        ("SC Vector Issue:V0 Slot", "V0_INSTRUCTION"),
        ("SC Vector Issue: V1 Slot", "V1_INSTRUCTION"),
        ("SC Vector Issue: V2 Slot", "V2_INSTRUCTION"),
        ("SC Vector Issue: VLD Slot", "VLD_INSTRUCTION"),
        ("SC Vector Issue: VST Slot", "VST_INSTRUCTION"),
        ("SC Vector Issue:VEX Slot", "VEX_INSTRUCTION"),
        ("SC Vector Issue:VRES Slot", "VRES_INSTRUCTION"),
    ] {
        rows.add(core, metric, tiles(name) as f64, tile_peak, INSTRUCTIONS);
    }
    scs_rows(core, scs, rows);
}

/// `ComputeTpuv7xScUnitUtilization` for SparseCore `core` (0 or 1) of `die` (node
/// `2 * die + core`): scalar issue from the tiles' SCTD counters, vector issue from their
/// SCTC counters, both over tile 0's SCTD cycles.
fn sparse_core_v7x(s: &Sample, die: u64, core: u64, rows: &mut Rows<'_>) {
    let node = (die << 1) + core;
    let tile = |t: u32, sub: &str, name: &str| {
        s.named(&format!("VF_CHIP_DIE{die}_SC_{core}_{sub}_{t}_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_{name}"))
    };
    let tiles = |sub: &str, name: &str| wsum((0..16).map(|t| tile(t, sub, name)));
    let scs =
        |name: &str| s.named(&format!("VF_CHIP_DIE{die}_SC_{core}_SCS_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_{name}"));
    let tile_peak = tile(0, "SCTD", "CYCLES").wrapping_mul(16) as f64;
    for (metric, sub, name) in [
        ("TEC Scalar Issue", "SCTD", "TEC_SCALAR_ISSUE"),
        ("TEC Scalar Issue: S0 slot", "SCTD", "TEC_S0_INSTRUCTION"),
        ("TEC Scalar Issue: S1 slot", "SCTD", "TEC_S1_INSTRUCTION"),
        ("TEC Scalar Issue: Smisc slot", "SCTD", "TEC_SMISC_INSTRUCTION"),
        ("SC Vector Issue", "SCTC", "VECTOR_ISSUE"),
        ("SC Vector Issue: V0 Slot", "SCTC", "V0_INSTRUCTION"),
        ("SC Vector Issue: V1 Slot", "SCTC", "V1_INSTRUCTION"),
        ("SC Vector Issue: V2 Slot", "SCTC", "V2_INSTRUCTION"),
        ("SC Vector Issue: VLD Slot", "SCTC", "VLD_INSTRUCTION"),
        ("SC Vector Issue: VST Slot", "SCTC", "VST_INSTRUCTION"),
        ("SC Vector Issue: VEX Slot", "SCTC", "VEX_INSTRUCTION"),
        ("SC Vector Issue: VRES Slot", "SCTC", "VRES_INSTRUCTION"),
    ] {
        rows.add(node, metric, tiles(sub, name) as f64, tile_peak, INSTRUCTIONS);
    }
    scs_rows(node, scs, rows);
}

/// The SparseCore sequencer's scalar issue rows, over its own cycles.
fn scs_rows(node: u64, scs: impl Fn(&str) -> u64, rows: &mut Rows<'_>) {
    let scs_cycles = scs("CYCLES") as f64;
    for (metric, name) in [
        ("SCS Scalar Issue", "SCALAR_ISSUE"),
        ("SCS: S0 Slot", "S0_INSTRUCTION"),
        ("SCS: S1 Slot", "S1_INSTRUCTION"),
        ("SCS: Smisc Slot", "SMISC_INSTRUCTION"),
    ] {
        rows.add(node, metric, scs(name) as f64, scs_cycles, INSTRUCTIONS);
    }
}

/// The plane's last stat of a type, as XProf's `ForEachStat` keeps it.
fn last_stat<'a>(plane: &'a XPlane, ty: StatType) -> Option<oxprof_model::Stat<'a>> {
    plane.stats().filter(|s| s.stat_type() == Some(ty)).last()
}

impl UtilizationViewer {
    /// The report of one host's XSpace.
    pub fn from_space(space: &XSpace) -> UtilizationViewer {
        let mut out = Vec::new();
        for plane in space.planes_with_prefix(TPU_PLANE_PREFIX) {
            let Some(device) = last_stat(plane, StatType::DeviceId).map(|s| s.as_i64().unwrap_or(0)) else { continue };
            if device == -1 {
                continue;
            }
            let device_type = last_stat(plane, StatType::DeviceTypeString).and_then(|s| s.as_str()).unwrap_or("");
            let Some(generation) = Generation::of(device_type) else { continue };
            for line in &plane.lines {
                let mut counters = HashMap::new();
                for event in line.events(plane) {
                    let Some(value) = event.stat(StatType::CounterValue) else { continue };
                    let mut counter = event.stat(StatType::PerformanceCounterId).and_then(|s| s.as_u64()).unwrap_or(0);
                    if counter == 0 {
                        // XProf falls back to the event's metadata id.
                        counter = event.metadata().key() as u64;
                    }
                    if counter != 0 {
                        counters.insert(counter, counter_value(value.value));
                    }
                }
                if counters.is_empty() {
                    continue;
                }
                let sample = Sample { counters, generation };
                let mut rows = Rows { out: &mut out, device: device as u64, sample: line.id as u64 };
                // XProf repeats the chip-wide ICI rows once per TensorCore.
                for core in 0..generation.tensor_cores() {
                    tensor_core(&sample, core, &mut rows);
                    hbm_bandwidth(&sample, core, &mut rows);
                    ici_bandwidth(&sample, &mut rows);
                }
                match generation {
                    Generation::V6e => (0..2).for_each(|core| sparse_core_v6e(&sample, core, &mut rows)),
                    Generation::V7x => {
                        for die in 0..2 {
                            for core in 0..2 {
                                sparse_core_v7x(&sample, die, core, &mut rows);
                            }
                        }
                    }
                }
            }
        }
        UtilizationViewer { rows: out }
    }

    /// XProf's DataTable.
    pub fn data_table(&self) -> DataTable {
        let mut table = DataTable::new();
        table
            .column("host", ColumnType::Number, "Host")
            .column("device", ColumnType::Number, "Device")
            .column("sample", ColumnType::Number, "Sample")
            .column("node", ColumnType::Number, "Node")
            .column("name", ColumnType::String, "Name")
            .column("achieved", ColumnType::Number, "Achieved")
            .column("peak", ColumnType::Number, "Peak")
            .column("unit", ColumnType::String, "Unit");
        for r in &self.rows {
            table.row(vec![
                (r.host as f64).into(),
                (r.device as f64).into(),
                (r.sample as f64).into(),
                (r.node as f64).into(),
                r.name.as_str().into(),
                r.achieved.into(),
                r.peak.into(),
                r.unit.as_str().into(),
            ]);
        }
        table
    }
}

impl Report for UtilizationViewer {
    fn xprof_body(&self) -> XprofBody {
        XprofBody::json(nlohmann::dump(&self.data_table().to_json()))
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    fn tables(&self) -> Vec<Table> {
        vec![Table::from_data_table("utilization", &self.data_table())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_model::ModelBuilder;

    #[test]
    fn counter_ids_are_sorted_for_lookup() {
        assert!(TPU_V6E_COUNTERS.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(id(&format!("{TC}CYCLES")), 3257466888);
        assert_eq!(id("nope"), 0);
    }

    #[test]
    fn one_v6e_sample_gives_tensor_core_bandwidth_and_sparse_core_rows() {
        // /device:TPU:0 (v6e, device 3), line 9: CYCLES=1000, MXU_BUSY_2=250
        let space = ModelBuilder::new()
            .plane("/device:TPU:0", |p| {
                p.stat("device_id", 3i64).stat("device_type_string", V6E);
                p.line(9, "sample", 0, |l| {
                    l.event("a", 0, 1)
                        .stat("performance_counter_id", id(&format!("{TC}CYCLES")))
                        .stat("counter_value", 1000u64);
                    l.event("b", 1, 1)
                        .stat("performance_counter_id", id(&format!("{TC}MXU_BUSY_2")))
                        .stat("counter_value", 250.0f64);
                });
            })
            .build()
            .unwrap();
        let report = UtilizationViewer::from_space(&space);
        // 20 TensorCore rows, HBM (no traffic: no ratios), 2 ICI, 2 x 16 SparseCore rows.
        assert_eq!(report.rows.len(), 21 + 1 + 2 + 32);
        let two = report.rows.iter().find(|r| r.name == "2 MXU Busy").unwrap();
        assert_eq!((two.device, two.sample, two.achieved, two.peak), (3, 9, 250.0, 1000.0));
        let xlu = report.rows.iter().find(|r| r.name == "XLU0").unwrap();
        assert_eq!(xlu.peak, 250.0);
    }

    #[test]
    fn v7x_counter_ids_are_sorted_and_cover_what_the_viewer_reads() {
        assert!(TPU_V7X_COUNTERS.windows(2).all(|w| w[0].0 < w[1].0));
        let v7x = |name: String| counter_id(Generation::V7x, &name);
        for die in 0..2 {
            assert_ne!(
                v7x(format!("VF_CHIP_DIE{die}_PWRMGR_PWRMGR_TC_THROTTLE_CORE_DEBUG_STATS_UNPRIVILEGED_CYCLE_COUNT")),
                0
            );
            assert_ne!(
                v7x(format!("VF_CHIP_DIE{die}_HBM_3_SS_HBMC_15_CMN_HI_FREQ_STATS_COUNTERS_UNPRIVILEGED_RD_RESP_PS1")),
                0
            );
            for core in 0..2 {
                // Only tile 0 counts cycles.
                for (sub, tile, name) in
                    [("SCTD", 0, "CYCLES"), ("SCTD", 15, "TEC_SMISC_INSTRUCTION"), ("SCTC", 15, "VEX_INSTRUCTION")]
                {
                    let n =
                        format!("VF_CHIP_DIE{die}_SC_{core}_{sub}_{tile}_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_{name}");
                    assert_ne!(v7x(n.clone()), 0, "{n}");
                }
            }
        }
        assert_ne!(
            v7x("VF_CHIP_DIE1_OCI_ICR_3_PERF_COUNTERS_FIFO_STATS_COUNTERS_UNPRIVILEGED_BN_WR_REQ_0_INSERTION_COUNT"
                .into()),
            0
        );
    }

    #[test]
    fn one_v7x_sample_gives_rows_for_both_dies_and_other_generations_are_skipped() {
        // /device:TPU:0 (v7x, device 2), line 4: die 1's power manager counts 1900 cycles,
        // 100 of them skipped; die 1's TensorCore counts 1000 cycles and 50 HBM read beats.
        let v7x = |name: &str| counter_id(Generation::V7x, name);
        let pwr = "VF_CHIP_DIE1_PWRMGR_PWRMGR_TC_THROTTLE_CORE_DEBUG_STATS_UNPRIVILEGED_";
        let tc1 = "VF_CHIP_DIE1_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_";
        let counters = [
            (v7x(&format!("{pwr}CYCLE_COUNT")), 1900u64),
            (v7x(&format!("{pwr}CLOCKS_SKIPPED")), 100),
            (v7x(&format!("{tc1}CYCLES")), 1000),
            (v7x("VF_CHIP_DIE1_HBM_2_SS_HBMC_7_CMN_HI_FREQ_STATS_COUNTERS_UNPRIVILEGED_RD_RESP_PS0"), 50),
        ];
        let space = |ty: &'static str| {
            ModelBuilder::new()
                .plane("/device:TPU:0", move |p| {
                    p.stat("device_id", 2i64).stat("device_type_string", ty);
                    p.line(4, "sample", 0, |l| {
                        for (i, (counter, value)) in counters.iter().enumerate() {
                            l.event(&format!("c{i}"), i as i64, 1)
                                .stat("performance_counter_id", *counter)
                                .stat("counter_value", *value);
                        }
                    });
                })
                .build()
                .unwrap()
        };
        let report = UtilizationViewer::from_space(&space(V7X));
        // Die 0 has no cycles: only its SparseCores answer. Die 1: 3 throttle + 20
        // TensorCore rows, HBM with both ratios, ICI absent (die 0's cycles are 0), then
        // 4 SparseCores x 16 rows.
        assert_eq!(report.rows.len(), 23 + 3 + 64);
        let skipped = report.rows.iter().find(|r| r.name == "Clocks Skipped").unwrap();
        assert_eq!(
            (skipped.device, skipped.sample, skipped.node, skipped.achieved, skipped.peak),
            (2, 4, 1, 100.0, 1900.0)
        );
        let hbm = report.rows.iter().find(|r| r.name == "HBM Rd+Wr - core 1").unwrap();
        assert_eq!((hbm.node, hbm.achieved), (0, 1600.0));
        assert!((hbm.peak - 3433.0 * GIB * 1000.0 / 1.9e9).abs() < 1e-6);
        let xlu = report.rows.iter().find(|r| r.name == "XLU1").unwrap();
        assert_eq!(xlu.peak, 1900.0);
        assert_eq!(report.rows.last().map(|r| (r.node, r.name.as_str())), Some((3, "SCS: Smisc Slot")));
        assert_eq!(UtilizationViewer::from_space(&space("TPU v5 lite")).rows.len(), 0);
    }
}
