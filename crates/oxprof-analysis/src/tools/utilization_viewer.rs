//! The `utilization_viewer` tool: TPU unit utilization computed from performance counters,
//! as XProf's `ConvertXSpaceToUtilizationViewer` (`xprof/convert/xplane_to_utilization_viewer.cc`
//! with `tpu_generic_utilization_utils.cc`) does for TPU v6e: per TPU plane with a
//! `device_id` and per counter sample (line), rows of achieved vs peak for the TensorCore
//! units (scalar, vector, MXU, XLU), HBM and ICI bandwidth, and both SparseCores. Planes of
//! other TPU generations are skipped as XProf does; TPU v7x, which XProf supports, is
//! reported as not computed ([`UtilizationError`]).

use crate::report::{Report, Table, XprofBody, json_of};
use crate::tools::tpu_counter_ids_v6e::TPU_V6E_COUNTERS;
use oxprof_model::schema::{StatType, TPU_PLANE_PREFIX};
use oxprof_model::{StatValue, XPlane, XSpace};
use oxprof_wire::datatable::{ColumnType, DataTable};
use oxprof_wire::nlohmann;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

/// A TPU generation XProf's viewer supports and oxprof does not yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UtilizationError {
    /// The plane.
    pub plane: String,
    /// Its `device_type_string`.
    pub device_type: String,
}

impl std::fmt::Display for UtilizationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is a {}; oxprof computes the utilization viewer for TPU v6e (\"TPU v6 Lite\") only",
            self.plane, self.device_type
        )
    }
}

impl std::error::Error for UtilizationError {}

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
/// TPU v6e TensorCore clock (`GetTensorCoreFrequencyHz`).
const V6E_FREQUENCY_HZ: f64 = 1.75e9;
/// TPU v6e peak HBM bandwidth (`GetPeakHbmBandwidthBps`): 1525.5 GiB/s.
const V6E_PEAK_HBM_BPS: f64 = 1525.5 * 1024.0 * 1024.0 * 1024.0;
/// Cycles per XLU instruction on v6e (`GetCyclesPerXlu`).
const V6E_CYCLES_PER_XLU: u64 = 4;
const MXUS_PER_CORE: u64 = 2;
const HBM_BYTES_PER_BEAT: u64 = 32;
const ICI_BYTES_PER_FLIT: u64 = 128;
/// `kPeakIciRdBwBytesPerSecond`, over an approximate 1 GHz clock.
const PEAK_ICI_BPS: f64 = 294947368421.0526;

/// The id of a v6e counter by name (0, which no counter has, when unknown).
fn id(name: &str) -> u64 {
    TPU_V6E_COUNTERS.binary_search_by(|(n, _)| (*n).cmp(name)).map_or(0, |i| TPU_V6E_COUNTERS[i].1)
}

/// One sample's counters by id (`TpuCounterUtil`: absent counters read 0).
struct Sample(HashMap<u64, u64>);

impl Sample {
    fn get(&self, id: u64) -> u64 {
        self.0.get(&id).copied().unwrap_or(0)
    }
    fn named(&self, name: &str) -> u64 {
        self.get(id(name))
    }
    fn tc(&self, suffix: &str) -> u64 {
        self.named(&format!("{TC}{suffix}"))
    }
    fn sum_tc(&self, suffixes: &[&str]) -> u64 {
        suffixes.iter().fold(0u64, |acc, s| acc.wrapping_add(self.tc(s)))
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

/// `ComputeTpuGenericTcUnitUtilization` for v6e (one TensorCore, core 0).
fn tensor_core(s: &Sample, rows: &mut Rows<'_>) {
    let cycles = s.tc("CYCLES");
    if cycles == 0 {
        return;
    }
    let c = cycles as f64;
    let node = 0;
    rows.add(
        node,
        "Scalar Unit",
        s.sum_tc(&["SCALAR_ALU_INSTRUCTION_0", "SCALAR_ALU_INSTRUCTION_1"]) as f64,
        (cycles * 2) as f64,
        INSTRUCTIONS,
    );
    let vpu_issued = s.sum_tc(&[
        "VECTOR_ALU_INSTRUCTION_0",
        "VECTOR_ALU_INSTRUCTION_1",
        "VECTOR_ALU_INSTRUCTION_2",
        "VECTOR_ALU_INSTRUCTION_3",
    ]);
    rows.add(node, "Vector ALUs", vpu_issued as f64, (cycles * 4) as f64, INSTRUCTIONS);
    let vpu_ops: Vec<String> = ["FADD", "FMUL", "MISC", "INT", "FMAC"]
        .iter()
        .flat_map(|k| (0..4).map(move |i| format!("VPU_VALU_{k}_OPS_{i}")))
        .collect();
    let vpu_ops = vpu_ops.iter().fold(0u64, |acc, n| acc.wrapping_add(s.tc(n)));
    rows.add(node, "VPU Utilization", vpu_ops as f64, (cycles * 4) as f64, INSTRUCTIONS);
    rows.add(node, "Vmem Stores", s.tc("VST_INSTRUCTION") as f64, c, INSTRUCTIONS);
    rows.add(
        node,
        "Vmem Loads",
        s.sum_tc(&["VLD_INSTRUCTION_0", "VLD_INSTRUCTION_1"]) as f64,
        (cycles * 2) as f64,
        INSTRUCTIONS,
    );
    rows.add(node, "No MXU Busy", s.tc("MXU_BUSY_0") as f64, c, CYCLES);
    rows.add(node, "1 MXU Busy", s.tc("MXU_BUSY_1") as f64, c, CYCLES);
    rows.add(node, "2 MXU Busy", s.tc("MXU_BUSY_2") as f64, c, CYCLES);
    rows.add(node, "Avg MXU Busy", 0.5 * s.tc("MXU_BUSY_1") as f64 + s.tc("MXU_BUSY_2") as f64, c, CYCLES);
    // Cycles per instruction of each matmul kind (XProf's kCpiMxu* constants).
    let bf16 = |u: u32| {
        4 * s.tc(&format!("MATMUL_LMR_BF16_MXU_{u}"))
            + 8 * s.tc(&format!("MATMUL_VREG_F8_MXU_{u}"))
            + 8 * s.tc(&format!("MATMUL_VREG_BF16_MXU_{u}"))
            + 4 * s.tc(&format!("MATMUL_VREG_F32_MXU_{u}"))
    };
    let i8 = |u: u32| 2 * s.tc(&format!("MATMUL_LMR_I8_MXU_{u}")) + 8 * s.tc(&format!("MATMUL_VREG_I8_MXU_{u}"));
    let i4 = |u: u32| 2 * s.tc(&format!("MATMUL_LMR_I4_MXU_{u}")) + 8 * s.tc(&format!("MATMUL_VREG_I4_MXU_{u}"));
    let mxu = |u: u32| bf16(u) + i8(u) + i4(u);
    rows.add(node, "MXU0", mxu(0) as f64, c, CYCLES);
    rows.add(node, "MXU1", mxu(1) as f64, c, CYCLES);
    let both = (cycles * MXUS_PER_CORE) as f64;
    rows.add(node, "MXU BF16", (bf16(0) + bf16(1)) as f64, both, CYCLES);
    rows.add(node, "MXU I8", (i8(0) + i8(1)) as f64, both, CYCLES);
    rows.add(node, "MXU I4", (i4(0) + i4(1)) as f64, both, CYCLES);
    rows.add(node, "MXU matpush", s.sum_tc(&["MATPUSH_CYCLES_MXU_0", "MATPUSH_CYCLES_MXU_1"]) as f64, both, CYCLES);
    rows.add(node, "No XLU Busy", s.tc("XLU_BUSY_0") as f64, c, CYCLES);
    rows.add(node, "1 XLU Busy", s.tc("XLU_BUSY_1") as f64, c, CYCLES);
    rows.add(node, "2 XLUs Busy", s.tc("XLU_BUSY_2") as f64, c, CYCLES);
    rows.add(node, "Avg XLU Busy", 0.5 * s.tc("XLU_BUSY_1") as f64 + s.tc("XLU_BUSY_2") as f64, c, CYCLES);
    let xlu_peak = (cycles / V6E_CYCLES_PER_XLU) as f64;
    for u in 0..2 {
        let issued = s.sum_tc(&[
            &format!("PACKED_XLU_{u}"),
            &format!("ROTATE_PERMUTE_INSTRUCTION_XLU_{u}"),
            &format!("ROTATE_PERMUTE_SET_INSTRUCTION_XLU_{u}"),
            &format!("TRANSPOSE_XLU_{u}"),
        ]);
        rows.add(node, &format!("XLU{u}"), issued as f64, xlu_peak, INSTRUCTIONS);
    }
}

/// `ComputeTpuGenericBandwidthUtilization` for v6e (core 0): HBM traffic of the sample.
fn hbm_bandwidth(s: &Sample, rows: &mut Rows<'_>) {
    let hbm = |channel: &str| {
        let mut sum = 0u64;
        for stack in 0..2 {
            for controller in 0..16 {
                sum = sum.wrapping_add(s.named(&format!(
                    "VF_CHIP_HBM_{stack}_HBMC_{controller}_CMN_HI_FREQ_STATS_COUNTERS_UNPRIVILEGED_{channel}"
                )));
            }
        }
        sum
    };
    let read_beats = hbm("RD_RESP_PS0").wrapping_add(hbm("RD_RESP_PS1"));
    let write_beats = ["WR_REQ_PS0", "PARTIAL_WRITE_REQ_PS0", "WR_REQ_PS1", "PARTIAL_WRITE_REQ_PS1"]
        .iter()
        .fold(0u64, |acc, c| acc.wrapping_add(hbm(c)));
    let read = read_beats.wrapping_mul(HBM_BYTES_PER_BEAT);
    let write = write_beats.wrapping_mul(HBM_BYTES_PER_BEAT);
    let cycles = s.tc("CYCLES");
    if cycles == 0 {
        return;
    }
    let seconds = cycles as f64 / V6E_FREQUENCY_HZ;
    rows.add(0, "HBM Rd+Wr - core 0", read.wrapping_add(write) as f64, V6E_PEAK_HBM_BPS * seconds, "bytes");
    let total = read as f64 + write as f64;
    if total > 0.0 {
        rows.add(0, "HBM Read Ratio", read as f64, total, "percent");
        rows.add(0, "HBM Write Ratio", write as f64, total, "percent");
    }
}

/// `ComputeTpuGenericIciBandwidthUtilization` for v6e.
fn ici_bandwidth(s: &Sample, rows: &mut Rows<'_>) {
    let icr = |kind: &str| {
        (0..2).fold(0u64, |acc, q| {
            acc.wrapping_add(s.named(&format!(
                "VF_CHIP_OCI_ICR_PERF_COUNTERS_FIFO_STATS_COUNTERS_UNPRIVILEGED_BN_{kind}_REQ_{q}_INSERTION_COUNT"
            )))
        })
    };
    let read = icr("RD").wrapping_mul(ICI_BYTES_PER_FLIT);
    let write = icr("WR").wrapping_mul(ICI_BYTES_PER_FLIT);
    let cycles = s.tc("CYCLES");
    if cycles == 0 {
        return;
    }
    let peak = PEAK_ICI_BPS * (cycles as f64 / 1e9);
    rows.add(0, "ICI (Read)", read as f64, peak, "bytes");
    rows.add(0, "ICI (Write)", write as f64, peak, "bytes");
}

/// `ComputeTpuv6eScUnitUtilization` for SparseCore `core` (0 or 1).
fn sparse_core(s: &Sample, core: u64, rows: &mut Rows<'_>) {
    let tile =
        |t: u32, name: &str| s.named(&format!("VF_CHIP_SC_{core}_SCT_{t}_SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_{name}"));
    let tiles = |name: &str| (0..16).fold(0u64, |acc, t| acc.wrapping_add(tile(t, name)));
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
    let scs_cycles = scs("CYCLES") as f64;
    for (metric, name) in [
        ("SCS Scalar Issue", "SCALAR_ISSUE"),
        ("SCS: S0 Slot", "S0_INSTRUCTION"),
        ("SCS: S1 Slot", "S1_INSTRUCTION"),
        ("SCS: Smisc Slot", "SMISC_INSTRUCTION"),
    ] {
        rows.add(core, metric, scs(name) as f64, scs_cycles, INSTRUCTIONS);
    }
}

/// The plane's last stat of a type, as XProf's `ForEachStat` keeps it.
fn last_stat<'a>(plane: &'a XPlane, ty: StatType) -> Option<oxprof_model::Stat<'a>> {
    plane.stats().filter(|s| s.stat_type() == Some(ty)).last()
}

impl UtilizationViewer {
    /// The report of one host's XSpace.
    pub fn from_space(space: &XSpace) -> Result<UtilizationViewer, UtilizationError> {
        let mut out = Vec::new();
        for plane in space.planes_with_prefix(TPU_PLANE_PREFIX) {
            let Some(device) = last_stat(plane, StatType::DeviceId).map(|s| s.as_i64().unwrap_or(0)) else { continue };
            if device == -1 {
                continue;
            }
            let device_type = last_stat(plane, StatType::DeviceTypeString).and_then(|s| s.as_str()).unwrap_or("");
            match device_type {
                V6E => {}
                V7X => {
                    return Err(UtilizationError { plane: plane.name.clone(), device_type: device_type.to_string() });
                }
                _ => continue,
            }
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
                let sample = Sample(counters);
                let mut rows = Rows { out: &mut out, device: device as u64, sample: line.id as u64 };
                tensor_core(&sample, &mut rows);
                hbm_bandwidth(&sample, &mut rows);
                ici_bandwidth(&sample, &mut rows);
                for core in 0..2 {
                    sparse_core(&sample, core, &mut rows);
                }
            }
        }
        Ok(UtilizationViewer { rows: out })
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
        let report = UtilizationViewer::from_space(&space).unwrap();
        // 20 TensorCore rows, HBM (no traffic: no ratios), 2 ICI, 2 x 16 SparseCore rows.
        assert_eq!(report.rows.len(), 21 + 1 + 2 + 32);
        let two = report.rows.iter().find(|r| r.name == "2 MXU Busy").unwrap();
        assert_eq!((two.device, two.sample, two.achieved, two.peak), (3, 9, 250.0, 1000.0));
        let xlu = report.rows.iter().find(|r| r.name == "XLU0").unwrap();
        assert_eq!(xlu.peak, 250.0);
    }

    #[test]
    fn v7x_is_refused_and_other_generations_skipped() {
        let plane = |ty: &'static str| {
            ModelBuilder::new()
                .plane("/device:TPU:0", move |p| {
                    p.stat("device_id", 0i64).stat("device_type_string", ty);
                    p.line(1, "s", 0, |l| {
                        l.event("c", 0, 1).stat("performance_counter_id", 5u64).stat("counter_value", 1u64);
                    });
                })
                .build()
                .unwrap()
        };
        assert!(UtilizationViewer::from_space(&plane("TPU v7x")).is_err());
        assert_eq!(UtilizationViewer::from_space(&plane("TPU v5 lite")).unwrap().rows.len(), 0);
    }
}
