//! What synthetic TPU profiles share, whichever generator writes them
//! (`crates/oxprof-xspace/examples/gen_tpu_training.rs`, `gen_tpu_megascale.rs` and the pod
//! of [`crate::pod`]): the protobuf messages carried in stats ([`wire`]), HLO shapes and
//! instructions, an XLA op's event metadata as XProf reads it ([`XlaOp`]), a TPU v4
//! TensorCore plane's hardware stats, the DCN collectives ([`dcn`]) and gzip that writes the
//! same bytes on every run.

pub mod dcn;
pub mod wire;

use crate::{PlaneBuilder, Value};
use prost::Message;
use std::io::Write;
use std::path::Path;

/// Picoseconds per microsecond.
pub const PS_PER_US: i64 = 1_000_000;
/// `xla.PrimitiveType` U32.
pub const U32: i32 = 8;
/// `xla.PrimitiveType` F32.
pub const F32: i32 = 11;
/// `xla.PrimitiveType` TUPLE.
pub const TUPLE: i32 = 13;
/// `xla.PrimitiveType` BF16.
pub const BF16: i32 = 16;
/// `xla.PrimitiveType` TOKEN.
pub const TOKEN: i32 = 17;

/// An array shape with the default (major-to-minor) layout.
pub fn shape(element_type: i32, dims: &[i64]) -> wire::ShapeProto {
    wire::ShapeProto {
        element_type,
        dimensions: dims.to_vec(),
        tuple_shapes: Vec::new(),
        layout: Some(wire::LayoutProto { minor_to_major: (0..dims.len() as i64).rev().collect() }),
    }
}

/// A tuple shape.
pub fn tuple(elements: Vec<wire::ShapeProto>) -> wire::ShapeProto {
    wire::ShapeProto { element_type: TUPLE, dimensions: Vec::new(), tuple_shapes: elements, layout: None }
}

/// The token shape.
pub fn token() -> wire::ShapeProto {
    wire::ShapeProto { element_type: TOKEN, ..Default::default() }
}

/// An instruction with its name, opcode, id, operands and shape.
pub fn instruction(
    name: &str,
    opcode: &str,
    id: i64,
    operands: &[i64],
    shape: wire::ShapeProto,
) -> wire::HloInstructionProto {
    wire::HloInstructionProto {
        name: name.to_string(),
        opcode: opcode.to_string(),
        shape: Some(shape),
        id,
        operand_ids: operands.to_vec(),
        ..Default::default()
    }
}

/// A parameter instruction.
pub fn parameter(name: &str, id: i64, number: i64, shape: wire::ShapeProto) -> wire::HloInstructionProto {
    wire::HloInstructionProto { parameter_number: number, ..instruction(name, "parameter", id, &[], shape) }
}

/// Frontend attributes from pairs.
pub fn attributes(pairs: &[(&str, &str)]) -> Option<wire::FrontendAttributes> {
    Some(wire::FrontendAttributes { map: pairs.iter().map(|&(k, v)| (k.to_string(), v.to_string())).collect() })
}

/// One XLA op of a program as the device's `XLA Ops` line names it, with the facts its
/// event metadata carries.
#[derive(Debug, Clone, Copy)]
pub struct XlaOp<'a> {
    /// HLO instruction name (the event's display name).
    pub name: &'a str,
    /// Opcode.
    pub opcode: &'a str,
    /// XProf's `hlo_category`.
    pub category: &'a str,
    /// The framework op (`tf_op`), ending with `:`.
    pub tf_op: &'a str,
    /// `symbol_id`.
    pub symbol_id: u64,
    /// FLOPs per run.
    pub flops: u64,
    /// HBM bytes read, written.
    pub hbm: (u64, u64),
    /// Result element type ([`BF16`] or [`F32`]).
    pub element_type: i32,
    /// Result dimensions.
    pub dims: &'a [i64],
}

impl XlaOp<'_> {
    /// The result shape as XLA prints it (`bf16[128,4096]`).
    pub fn shape_text(&self) -> String {
        format!(
            "{}[{}]",
            if self.element_type == BF16 { "bf16" } else { "f32" },
            self.dims.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
        )
    }

    /// The event metadata name (the HLO text of the instruction, shortened).
    pub fn long_name(&self) -> String {
        format!("%{} = {} {}()", self.name, self.shape_text(), self.opcode)
    }

    /// `MemoryAccessBreakdown` of its HBM reads and writes.
    pub fn memory_breakdown(&self) -> Vec<u8> {
        // OperationType READ=1, WRITE=2; memory space 1 = HBM.
        let mut accessed = Vec::new();
        for (operation_type, bytes) in [(1, self.hbm.0), (2, self.hbm.1)] {
            if bytes > 0 {
                accessed.push(wire::MemoryAccessed { operation_type, memory_space: 1, bytes_accessed: bytes });
            }
        }
        wire::MemoryAccessBreakdown { memory_accessed: accessed }.encode_to_vec()
    }

    /// Declares its event metadata on a device plane, with the stats XProf's OpStats read
    /// (category, program and symbol ids, flops, bytes and their breakdown, shape, framework
    /// op, source); returns the metadata name events use.
    pub fn declare(&self, p: &mut PlaneBuilder, program_id: u64) -> String {
        let shape = self.shape_text();
        let long_name = format!("%{} = {shape} {}()", self.name, self.opcode);
        p.event_display_name(&long_name, self.name);
        p.event_metadata_stat(&long_name, "hlo_category", self.category);
        p.event_metadata_stat(&long_name, "program_id", program_id);
        p.event_metadata_stat(&long_name, "symbol_id", self.symbol_id);
        p.event_metadata_stat(&long_name, "flops", self.flops);
        p.event_metadata_stat(&long_name, "model_flops", self.flops);
        p.event_metadata_stat(&long_name, "bytes_accessed", self.hbm.0 + self.hbm.1);
        p.event_metadata_stat(&long_name, "raw_bytes_accessed", self.hbm.0 + self.hbm.1);
        p.event_metadata_stat(&long_name, "memory_access_breakdown", Value::Bytes(self.memory_breakdown()));
        p.event_metadata_stat(&long_name, "shape_with_layout", shape.as_str());
        p.event_metadata_stat(&long_name, "tf_op", self.tf_op);
        p.event_metadata_stat(&long_name, "source", format!("train.py:{}", 40 + self.symbol_id));
        long_name
    }
}

/// The plane stats of a TPU v4 TensorCore: its `core_details`, device type, peak FLOPS and
/// bandwidths (what XProf's `PerfEnv` and roofline read).
pub fn tpu_v4_core_stats(p: &mut PlaneBuilder, details: &wire::CoreDetails) {
    p.stat("core_details", Value::Bytes(details.encode_to_vec()));
    p.stat("device_type_string", "TPU v4");
    p.stat("peak_teraflops_per_second", 275.0);
    p.stat("peak_hbm_bw_gigabytes_per_second", 1200.0);
    p.stat("peak_cmem_rd_bw_gigabytes_per_second", 0.0);
    p.stat("peak_cmem_wr_bw_gigabytes_per_second", 0.0);
    p.stat("peak_vmem_rd_bw_gigabytes_per_second", 11000.0);
    p.stat("peak_vmem_wr_bw_gigabytes_per_second", 9000.0);
    p.stat("peak_sram_rd_bw_gigabytes_per_second", 11000.0);
    p.stat("peak_sram_wr_bw_gigabytes_per_second", 9000.0);
    p.stat("has_megacore", 1i64);
    p.stat("has_merged_vmem", 0i64);
}

/// Writes `bytes` gzipped to `path` (creating its folder): level 9 and no file name or time
/// in the header, so the same bytes on every run.
pub fn write_gz(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(path.parent().unwrap_or(Path::new(".")))?;
    let mut gz = flate2::GzBuilder::new().mtime(0).write(std::fs::File::create(path)?, flate2::Compression::best());
    gz.write_all(bytes)?;
    gz.finish()?;
    Ok(())
}
