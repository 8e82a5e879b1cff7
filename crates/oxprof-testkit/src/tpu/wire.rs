//! The protobuf messages synthetic TPU profiles carry inside stats, hand-declared with the
//! fields the generators set: `xla.HloProto` (the `Hlo Proto` of `/host:metadata`; field
//! numbers from `xla/service/hlo.proto` and `xla/xla_data.proto`), and the profiler's
//! `MemoryAccessBreakdown`, `CoreDetails` and `DcnCollectiveInfoProto`. Unset fields are not
//! written, so a generator that leaves some alone writes the same bytes as one that never
//! declared them.

use std::collections::BTreeMap;

/// `xla.HloProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HloProto {
    /// The module.
    #[prost(message, optional, tag = "1")]
    pub hlo_module: Option<HloModuleProto>,
}

/// `xla.HloModuleProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HloModuleProto {
    /// Module name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Name of the entry computation.
    #[prost(string, tag = "2")]
    pub entry_computation_name: String,
    /// Computations, callees before callers.
    #[prost(message, repeated, tag = "3")]
    pub computations: Vec<HloComputationProto>,
    /// The entry computation's signature.
    #[prost(message, optional, tag = "4")]
    pub host_program_shape: Option<ProgramShapeProto>,
    /// Module (program) id.
    #[prost(int64, tag = "5")]
    pub id: i64,
    /// Id of the entry computation.
    #[prost(int64, tag = "6")]
    pub entry_computation_id: i64,
}

/// `xla.HloComputationProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HloComputationProto {
    /// Computation name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Instructions, operands first.
    #[prost(message, repeated, tag = "2")]
    pub instructions: Vec<HloInstructionProto>,
    /// Signature.
    #[prost(message, optional, tag = "4")]
    pub program_shape: Option<ProgramShapeProto>,
    /// Computation id.
    #[prost(int64, tag = "5")]
    pub id: i64,
    /// Id of the root instruction.
    #[prost(int64, tag = "6")]
    pub root_id: i64,
    /// Whether a fusion instruction calls it.
    #[prost(bool, tag = "7")]
    pub is_fusion_computation: bool,
}

/// `xla.ProgramShapeProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProgramShapeProto {
    /// Parameter shapes.
    #[prost(message, repeated, tag = "1")]
    pub parameters: Vec<ShapeProto>,
    /// Result shape.
    #[prost(message, optional, tag = "2")]
    pub result: Option<ShapeProto>,
    /// Parameter names.
    #[prost(string, repeated, tag = "3")]
    pub parameter_names: Vec<String>,
}

/// `xla.DotDimensionNumbers`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DotDimensionNumbers {
    /// Contracting dimensions of the left operand.
    #[prost(int64, repeated, tag = "1")]
    pub lhs_contracting_dimensions: Vec<i64>,
    /// Contracting dimensions of the right operand.
    #[prost(int64, repeated, tag = "2")]
    pub rhs_contracting_dimensions: Vec<i64>,
}

/// `xla.HloInstructionProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HloInstructionProto {
    /// Instruction name (the device op's display name).
    #[prost(string, tag = "1")]
    pub name: String,
    /// Opcode.
    #[prost(string, tag = "2")]
    pub opcode: String,
    /// Result shape.
    #[prost(message, optional, tag = "3")]
    pub shape: Option<ShapeProto>,
    /// The framework op it came from.
    #[prost(message, optional, tag = "7")]
    pub metadata: Option<OpMetadata>,
    /// Parameter number (parameters only).
    #[prost(int64, tag = "9")]
    pub parameter_number: i64,
    /// Fusion kind (`kLoop`, `kOutput`, …).
    #[prost(string, tag = "11")]
    pub fusion_kind: String,
    /// Tuple index (get-tuple-element).
    #[prost(int64, tag = "13")]
    pub tuple_index: i64,
    /// Channel id (send, recv and their done ops).
    #[prost(int64, tag = "26")]
    pub channel_id: i64,
    /// Dot dimension numbers.
    #[prost(message, optional, tag = "30")]
    pub dot_dimension_numbers: Option<DotDimensionNumbers>,
    /// Instruction id.
    #[prost(int64, tag = "35")]
    pub id: i64,
    /// Operand ids.
    #[prost(int64, repeated, tag = "36")]
    pub operand_ids: Vec<i64>,
    /// Called computations' ids.
    #[prost(int64, repeated, tag = "38")]
    pub called_computation_ids: Vec<i64>,
    /// Whether a send/recv talks to the host.
    #[prost(bool, tag = "47")]
    pub is_host_transfer: bool,
    /// Frontend attributes (DCN rendezvous names).
    #[prost(message, optional, tag = "68")]
    pub frontend_attributes: Option<FrontendAttributes>,
}

/// `xla.FrontendAttributes`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FrontendAttributes {
    /// Attribute name → value.
    #[prost(btree_map = "string, string", tag = "1")]
    pub map: BTreeMap<String, String>,
}

/// `xla.ShapeProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ShapeProto {
    /// `xla.PrimitiveType`.
    #[prost(int32, tag = "2")]
    pub element_type: i32,
    /// Dimensions.
    #[prost(int64, repeated, tag = "3")]
    pub dimensions: Vec<i64>,
    /// Elements of a tuple.
    #[prost(message, repeated, tag = "4")]
    pub tuple_shapes: Vec<ShapeProto>,
    /// Layout.
    #[prost(message, optional, tag = "5")]
    pub layout: Option<LayoutProto>,
}

/// `xla.LayoutProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LayoutProto {
    /// Dimensions from minor to major.
    #[prost(int64, repeated, tag = "1")]
    pub minor_to_major: Vec<i64>,
}

/// `xla.OpMetadata`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct OpMetadata {
    /// Framework op type.
    #[prost(string, tag = "1")]
    pub op_type: String,
    /// Framework op name.
    #[prost(string, tag = "2")]
    pub op_name: String,
    /// Source file.
    #[prost(string, tag = "3")]
    pub source_file: String,
    /// Source line.
    #[prost(int32, tag = "4")]
    pub source_line: i32,
}

/// `tensorflow.profiler.MemoryAccessBreakdown` (op_metrics.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct MemoryAccessBreakdown {
    /// Bytes per operation type and memory space.
    #[prost(message, repeated, tag = "1")]
    pub memory_accessed: Vec<MemoryAccessed>,
}

/// One entry of [`MemoryAccessBreakdown`].
#[derive(Clone, PartialEq, prost::Message)]
pub struct MemoryAccessed {
    /// READ = 1, WRITE = 2.
    #[prost(int32, tag = "1")]
    pub operation_type: i32,
    /// 1 = HBM.
    #[prost(int32, tag = "2")]
    pub memory_space: i32,
    /// Bytes.
    #[prost(uint64, tag = "3")]
    pub bytes_accessed: u64,
}

/// `tensorflow.profiler.CoreDetails` (op_stats.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct CoreDetails {
    /// Host of the core.
    #[prost(string, tag = "1")]
    pub hostname: String,
    /// Device ordinal on the host.
    #[prost(uint32, tag = "2")]
    pub device_ordinal: u32,
    /// TensorCore number on its chip.
    #[prost(uint32, tag = "3")]
    pub core_num: u32,
    /// Chip on the host.
    #[prost(uint32, tag = "4")]
    pub local_chip_id: u32,
    /// Chip in the pod.
    #[prost(uint32, tag = "5")]
    pub global_chip_id: u32,
    /// Core in the pod.
    #[prost(uint32, tag = "6")]
    pub global_core_id: u32,
}

/// `tensorflow.profiler.DcnCollectiveInfoProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DcnCollectiveInfoProto {
    /// Transfer type (2 = one-to-one, 4 = all-gather, 5 = all-reduce).
    #[prost(int32, tag = "1")]
    pub transfer_type: i32,
    /// Groups of endpoints.
    #[prost(message, repeated, tag = "2")]
    pub endpoint_groups: Vec<EndpointGroup>,
    /// Source-destination pairs.
    #[prost(message, repeated, tag = "3")]
    pub one_to_one_groups: Vec<OneToOneGroup>,
}

/// A DCN endpoint.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Endpoint {
    /// Slice.
    #[prost(int32, tag = "1")]
    pub slice_id: i32,
    /// Device in the slice.
    #[prost(int32, tag = "2")]
    pub device_id: i32,
}

/// Endpoints of one group.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EndpointGroup {
    /// Endpoints.
    #[prost(message, repeated, tag = "1")]
    pub endpoints: Vec<Endpoint>,
}

/// One source-destination pair.
#[derive(Clone, PartialEq, prost::Message)]
pub struct OneToOneGroup {
    /// Source.
    #[prost(message, optional, tag = "1")]
    pub source: Option<Endpoint>,
    /// Destination.
    #[prost(message, optional, tag = "2")]
    pub destination: Option<Endpoint>,
}
