//! XLA HLO modules carried by profiles: the `xla.HloProto` bytes stored as the `Hlo Proto`
//! stat of `/host:metadata` event metadata (one per XLA program), decoded into a typed model
//! of modules, computations and instructions.
//!
//! The model keeps what oxprof's analyses read: names, opcodes, ids, operands, called
//! computations, shapes with layouts, op metadata and stack frames, and the instruction
//! attributes XLA's cost analysis and HLO printer use (dimensions, windows, dimension
//! numbers, literals, custom-call and collective attributes, ...). Everything else in the
//! proto is skipped. Field numbers follow `xla/service/hlo.proto` and `xla/xla_data.proto`.

use crate::error::DecodeError;
use oxprof_model::XSpace;
use oxprof_model::schema::{METADATA_PLANE_NAME, StatType};
use prost::Message;

/// Wire types for the subset of `xla/service/hlo.proto` and `xla/xla_data.proto` oxprof
/// reads. Field numbers follow upstream; unknown fields are skipped by prost.
mod wire {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct HloProto {
        #[prost(message, optional, tag = "1")]
        pub hlo_module: Option<HloModuleProto>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct HloModuleProto {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub entry_computation_name: String,
        #[prost(message, repeated, tag = "3")]
        pub computations: Vec<HloComputationProto>,
        #[prost(int64, tag = "5")]
        pub id: i64,
        #[prost(int64, tag = "6")]
        pub entry_computation_id: i64,
        #[prost(message, optional, tag = "17")]
        pub stack_frame_index: Option<StackFrameIndexProto>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct StackFrameIndexProto {
        #[prost(string, repeated, tag = "1")]
        pub file_names: Vec<String>,
        #[prost(string, repeated, tag = "2")]
        pub function_names: Vec<String>,
        #[prost(message, repeated, tag = "3")]
        pub file_locations: Vec<FileLocation>,
        #[prost(message, repeated, tag = "4")]
        pub stack_frames: Vec<StackFrame>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct FileLocation {
        #[prost(int32, tag = "1")]
        pub file_name_id: i32,
        #[prost(int32, tag = "2")]
        pub function_name_id: i32,
        #[prost(int32, tag = "3")]
        pub line: i32,
        #[prost(int32, tag = "4")]
        pub column: i32,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct StackFrame {
        #[prost(int32, tag = "1")]
        pub file_location_id: i32,
        #[prost(int32, tag = "2")]
        pub parent_frame_id: i32,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct HloComputationProto {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, repeated, tag = "2")]
        pub instructions: Vec<HloInstructionProto>,
        #[prost(int64, tag = "5")]
        pub id: i64,
        #[prost(int64, tag = "6")]
        pub root_id: i64,
        #[prost(bool, tag = "7")]
        pub is_fusion_computation: bool,
        #[prost(string, tag = "8")]
        pub execution_thread: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct SliceDimensions {
        #[prost(int64, tag = "1")]
        pub start: i64,
        #[prost(int64, tag = "2")]
        pub limit: i64,
        #[prost(int64, tag = "3")]
        pub stride: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct HloInstructionProto {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub opcode: String,
        #[prost(message, optional, tag = "3")]
        pub shape: Option<ShapeProto>,
        #[prost(message, optional, tag = "7")]
        pub metadata: Option<OpMetadata>,
        #[prost(message, optional, tag = "8")]
        pub literal: Option<LiteralProto>,
        #[prost(int64, tag = "9")]
        pub parameter_number: i64,
        #[prost(string, tag = "11")]
        pub fusion_kind: String,
        #[prost(int64, tag = "13")]
        pub tuple_index: i64,
        #[prost(int64, repeated, tag = "14")]
        pub dimensions: Vec<i64>,
        #[prost(message, optional, tag = "15")]
        pub window: Option<Window>,
        #[prost(message, optional, tag = "16")]
        pub convolution_dimension_numbers: Option<ConvolutionDimensionNumbers>,
        #[prost(message, repeated, tag = "17")]
        pub slice_dimensions: Vec<SliceDimensions>,
        #[prost(int32, tag = "18")]
        pub exponent_bits: i32,
        #[prost(int32, tag = "19")]
        pub mantissa_bits: i32,
        #[prost(int64, repeated, tag = "20")]
        pub dynamic_slice_sizes: Vec<i64>,
        #[prost(message, optional, tag = "21")]
        pub padding_config: Option<PaddingConfig>,
        #[prost(int32, tag = "23")]
        pub distribution: i32,
        #[prost(float, tag = "24")]
        pub epsilon: f32,
        #[prost(int64, tag = "25")]
        pub feature_index: i64,
        #[prost(int64, tag = "26")]
        pub channel_id: i64,
        #[prost(string, tag = "28")]
        pub custom_call_target: String,
        #[prost(message, optional, tag = "30")]
        pub dot_dimension_numbers: Option<DotDimensionNumbers>,
        #[prost(int32, tag = "31")]
        pub fft_type: i32,
        #[prost(int64, repeated, tag = "32")]
        pub fft_length: Vec<i64>,
        #[prost(message, optional, tag = "33")]
        pub gather_dimension_numbers: Option<GatherDimensionNumbers>,
        #[prost(int64, repeated, tag = "34")]
        pub gather_slice_sizes: Vec<i64>,
        #[prost(int64, tag = "35")]
        pub id: i64,
        #[prost(int64, repeated, tag = "36")]
        pub operand_ids: Vec<i64>,
        #[prost(int64, repeated, tag = "37")]
        pub control_predecessor_ids: Vec<i64>,
        #[prost(int64, repeated, tag = "38")]
        pub called_computation_ids: Vec<i64>,
        #[prost(message, optional, tag = "40")]
        pub sharding: Option<OpSharding>,
        #[prost(bytes = "vec", tag = "43")]
        pub backend_config: Vec<u8>,
        #[prost(bool, tag = "47")]
        pub is_host_transfer: bool,
        #[prost(message, optional, tag = "48")]
        pub scatter_dimension_numbers: Option<ScatterDimensionNumbers>,
        #[prost(message, repeated, tag = "49")]
        pub replica_groups: Vec<ReplicaGroup>,
        #[prost(int64, tag = "50")]
        pub feature_group_count: i64,
        #[prost(message, optional, tag = "51")]
        pub precision_config: Option<PrecisionConfig>,
        #[prost(message, repeated, tag = "57")]
        pub operand_shapes_with_layout: Vec<ShapeProto>,
        #[prost(int64, tag = "58")]
        pub batch_group_count: i64,
        #[prost(bool, tag = "60")]
        pub is_stable: bool,
        #[prost(string, tag = "63")]
        pub comparison_direction: String,
        #[prost(bool, tag = "65")]
        pub custom_call_has_side_effect: bool,
        #[prost(int64, tag = "66")]
        pub delta: i64,
        #[prost(bool, tag = "67")]
        pub indices_are_sorted: bool,
        #[prost(message, optional, tag = "68")]
        pub frontend_attributes: Option<FrontendAttributes>,
        #[prost(bool, tag = "69")]
        pub unique_indices: bool,
        #[prost(int32, tag = "70")]
        pub rng_algorithm: i32,
        #[prost(bool, tag = "71")]
        pub use_global_device_ids: bool,
        #[prost(string, tag = "72")]
        pub comparison_type: String,
        #[prost(bool, tag = "73")]
        pub is_cross_program_prefetch: bool,
        #[prost(message, repeated, tag = "74")]
        pub output_operand_aliasing: Vec<OutputOperandAliasing>,
        #[prost(int32, tag = "75")]
        pub padding_type: i32,
        #[prost(int32, tag = "76")]
        pub custom_call_schedule: i32,
        #[prost(int32, tag = "77")]
        pub custom_call_api_version: i32,
        #[prost(int32, tag = "80")]
        pub cross_program_prefetch_index: i32,
        #[prost(int64, tag = "81")]
        pub k: i64,
        #[prost(bool, tag = "85")]
        pub largest: bool,
        #[prost(bool, tag = "89")]
        pub is_composite: bool,
        #[prost(message, optional, tag = "87")]
        pub collective_device_list: Option<CollectiveDeviceListProto>,
        #[prost(message, optional, tag = "92")]
        pub iota_collective_device_list: Option<IotaReplicaGroupListProto>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ShapeProto {
        #[prost(int32, tag = "2")]
        pub element_type: i32,
        #[prost(int64, repeated, tag = "3")]
        pub dimensions: Vec<i64>,
        #[prost(message, repeated, tag = "4")]
        pub tuple_shapes: Vec<ShapeProto>,
        #[prost(message, optional, tag = "5")]
        pub layout: Option<LayoutProto>,
        #[prost(bool, repeated, tag = "6")]
        pub is_dynamic_dimension: Vec<bool>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct LayoutProto {
        #[prost(int64, repeated, tag = "1")]
        pub minor_to_major: Vec<i64>,
        #[prost(message, repeated, tag = "6")]
        pub tiles: Vec<TileProto>,
        #[prost(int64, tag = "7")]
        pub element_size_in_bits: i64,
        #[prost(int64, tag = "8")]
        pub memory_space: i64,
        #[prost(int32, tag = "11")]
        pub index_primitive_type: i32,
        #[prost(int32, tag = "12")]
        pub pointer_primitive_type: i32,
        #[prost(message, optional, boxed, tag = "10")]
        pub physical_shape: Option<Box<ShapeProto>>,
        #[prost(int64, tag = "15")]
        pub dynamic_shape_metadata_prefix_bytes: i64,
        #[prost(int64, tag = "16")]
        pub tail_padding_alignment_in_elements: i64,
        #[prost(message, repeated, tag = "17")]
        pub split_configs: Vec<SplitConfigProto>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TileProto {
        #[prost(int64, repeated, tag = "1")]
        pub dimensions: Vec<i64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct SplitConfigProto {
        #[prost(int64, tag = "1")]
        pub dimension: i64,
        #[prost(int64, repeated, tag = "2")]
        pub split_indices: Vec<i64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct OpMetadata {
        #[prost(string, tag = "1")]
        pub op_type: String,
        #[prost(string, tag = "2")]
        pub op_name: String,
        #[prost(string, tag = "3")]
        pub source_file: String,
        #[prost(int32, tag = "4")]
        pub source_line: i32,
        #[prost(string, tag = "12")]
        pub deduplicated_name: String,
        #[prost(int32, tag = "15")]
        pub stack_frame_id: i32,
        #[prost(string, tag = "16")]
        pub scheduling_name: String,
        #[prost(int32, tag = "17")]
        pub source_end_line: i32,
        #[prost(int32, tag = "18")]
        pub source_column: i32,
        #[prost(int32, tag = "19")]
        pub source_end_column: i32,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Window {
        #[prost(message, repeated, tag = "1")]
        pub dimensions: Vec<WindowDimension>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct WindowDimension {
        #[prost(int64, tag = "1")]
        pub size: i64,
        #[prost(int64, tag = "2")]
        pub stride: i64,
        #[prost(int64, tag = "3")]
        pub padding_low: i64,
        #[prost(int64, tag = "4")]
        pub padding_high: i64,
        #[prost(int64, tag = "5")]
        pub window_dilation: i64,
        #[prost(int64, tag = "6")]
        pub base_dilation: i64,
        #[prost(bool, tag = "7")]
        pub window_reversal: bool,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ConvolutionDimensionNumbers {
        #[prost(int64, tag = "3")]
        pub kernel_input_feature_dimension: i64,
        #[prost(int64, tag = "4")]
        pub kernel_output_feature_dimension: i64,
        #[prost(int64, repeated, tag = "6")]
        pub kernel_spatial_dimensions: Vec<i64>,
        #[prost(int64, tag = "7")]
        pub input_batch_dimension: i64,
        #[prost(int64, tag = "8")]
        pub input_feature_dimension: i64,
        #[prost(int64, tag = "9")]
        pub output_batch_dimension: i64,
        #[prost(int64, tag = "10")]
        pub output_feature_dimension: i64,
        #[prost(int64, repeated, tag = "11")]
        pub input_spatial_dimensions: Vec<i64>,
        #[prost(int64, repeated, tag = "12")]
        pub output_spatial_dimensions: Vec<i64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct DotDimensionNumbers {
        #[prost(int64, repeated, tag = "1")]
        pub lhs_contracting_dimensions: Vec<i64>,
        #[prost(int64, repeated, tag = "2")]
        pub rhs_contracting_dimensions: Vec<i64>,
        #[prost(int64, repeated, tag = "3")]
        pub lhs_batch_dimensions: Vec<i64>,
        #[prost(int64, repeated, tag = "4")]
        pub rhs_batch_dimensions: Vec<i64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct GatherDimensionNumbers {
        #[prost(int64, repeated, tag = "1")]
        pub offset_dims: Vec<i64>,
        #[prost(int64, repeated, tag = "2")]
        pub collapsed_slice_dims: Vec<i64>,
        #[prost(int64, repeated, tag = "3")]
        pub start_index_map: Vec<i64>,
        #[prost(int64, tag = "4")]
        pub index_vector_dim: i64,
        #[prost(int64, repeated, tag = "5")]
        pub operand_batching_dims: Vec<i64>,
        #[prost(int64, repeated, tag = "6")]
        pub start_indices_batching_dims: Vec<i64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ScatterDimensionNumbers {
        #[prost(int64, repeated, tag = "1")]
        pub update_window_dims: Vec<i64>,
        #[prost(int64, repeated, tag = "2")]
        pub inserted_window_dims: Vec<i64>,
        #[prost(int64, repeated, tag = "3")]
        pub scatter_dims_to_operand_dims: Vec<i64>,
        #[prost(int64, tag = "4")]
        pub index_vector_dim: i64,
        #[prost(int64, repeated, tag = "5")]
        pub input_batching_dims: Vec<i64>,
        #[prost(int64, repeated, tag = "6")]
        pub scatter_indices_batching_dims: Vec<i64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct PaddingConfig {
        #[prost(message, repeated, tag = "1")]
        pub dimensions: Vec<PaddingConfigDimension>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct PaddingConfigDimension {
        #[prost(int64, tag = "1")]
        pub edge_padding_low: i64,
        #[prost(int64, tag = "2")]
        pub edge_padding_high: i64,
        #[prost(int64, tag = "3")]
        pub interior_padding: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct PrecisionConfig {
        #[prost(int32, repeated, tag = "1")]
        pub operand_precision: Vec<i32>,
        #[prost(int32, tag = "2")]
        pub algorithm: i32,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ReplicaGroup {
        #[prost(int64, repeated, tag = "1")]
        pub replica_ids: Vec<i64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct IotaReplicaGroupListProto {
        #[prost(int64, tag = "1")]
        pub num_replica_groups: i64,
        #[prost(int64, tag = "2")]
        pub num_devices_per_group: i64,
        #[prost(int64, repeated, tag = "3")]
        pub iota_reshape_dims: Vec<i64>,
        #[prost(int32, repeated, tag = "4")]
        pub iota_transpose_perm: Vec<i32>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct CollectiveDeviceListProto {
        #[prost(message, repeated, tag = "1")]
        pub replica_groups: Vec<ReplicaGroup>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct OpSharding {
        #[prost(int32, tag = "1")]
        pub r#type: i32,
        #[prost(int64, repeated, tag = "3")]
        pub tile_assignment_dimensions: Vec<i64>,
        #[prost(int64, repeated, tag = "4")]
        pub tile_assignment_devices: Vec<i64>,
        #[prost(message, repeated, tag = "5")]
        pub tuple_shardings: Vec<OpSharding>,
        #[prost(bool, tag = "6")]
        pub replicate_on_last_tile_dim: bool,
        #[prost(int32, repeated, tag = "8")]
        pub last_tile_dims: Vec<i32>,
        #[prost(int64, repeated, tag = "9")]
        pub iota_reshape_dims: Vec<i64>,
        #[prost(int32, repeated, tag = "10")]
        pub iota_transpose_perm: Vec<i32>,
        #[prost(bool, tag = "11")]
        pub is_shard_group: bool,
        #[prost(int64, tag = "12")]
        pub shard_group_id: i64,
        #[prost(int32, tag = "13")]
        pub shard_group_type: i32,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct OutputOperandAliasing {
        #[prost(int64, repeated, tag = "1")]
        pub output_shape_index: Vec<i64>,
        #[prost(int64, tag = "2")]
        pub operand_index: i64,
        #[prost(int64, repeated, tag = "3")]
        pub operand_shape_index: Vec<i64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct FrontendAttributes {
        #[prost(btree_map = "string, string", tag = "1")]
        pub map: std::collections::BTreeMap<String, String>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct LiteralProto {
        #[prost(message, optional, tag = "1")]
        pub shape: Option<ShapeProto>,
        #[prost(bool, repeated, tag = "2")]
        pub preds: Vec<bool>,
        #[prost(bytes = "vec", tag = "3")]
        pub u8s: Vec<u8>,
        #[prost(int32, repeated, tag = "4")]
        pub s32s: Vec<i32>,
        #[prost(int64, repeated, tag = "5")]
        pub s64s: Vec<i64>,
        #[prost(uint32, repeated, tag = "6")]
        pub u32s: Vec<u32>,
        #[prost(uint64, repeated, tag = "7")]
        pub u64s: Vec<u64>,
        #[prost(float, repeated, tag = "8")]
        pub f32s: Vec<f32>,
        #[prost(double, repeated, tag = "9")]
        pub f64s: Vec<f64>,
        #[prost(message, repeated, tag = "10")]
        pub tuple_literals: Vec<LiteralProto>,
        #[prost(bytes = "vec", tag = "11")]
        pub f16s: Vec<u8>,
        #[prost(float, repeated, tag = "12")]
        pub c64s: Vec<f32>,
        #[prost(bytes = "vec", tag = "13")]
        pub bf16s: Vec<u8>,
        #[prost(bytes = "vec", tag = "15")]
        pub s8s: Vec<u8>,
        #[prost(bytes = "vec", tag = "16")]
        pub u16s: Vec<u8>,
        #[prost(bytes = "vec", tag = "17")]
        pub s16s: Vec<u8>,
        #[prost(double, repeated, tag = "18")]
        pub c128s: Vec<f64>,
    }

    /// `xla.HloProto` read for the module attributes the HLO printer needs.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct HloProtoModuleExtras {
        #[prost(message, optional, tag = "1")]
        pub hlo_module: Option<ModuleExtrasProto>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ModuleExtrasProto {
        #[prost(message, optional, tag = "4")]
        pub host_program_shape: Option<ProgramShapeProto>,
        #[prost(message, optional, tag = "7")]
        pub schedule: Option<HloScheduleProto>,
        #[prost(message, optional, tag = "8")]
        pub input_output_alias: Option<HloInputOutputAliasProto>,
        #[prost(message, optional, tag = "17")]
        pub stack_frame_index: Option<StackFrameIndexEnds>,
        #[prost(message, optional, tag = "19")]
        pub frontend_attributes: Option<FrontendAttributes>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ProgramShapeProto {
        #[prost(message, repeated, tag = "1")]
        pub parameters: Vec<ShapeProto>,
        #[prost(message, optional, tag = "2")]
        pub result: Option<ShapeProto>,
        #[prost(string, repeated, tag = "3")]
        pub parameter_names: Vec<String>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct HloScheduleProto {
        #[prost(btree_map = "int64, message", tag = "1")]
        pub sequences: std::collections::BTreeMap<i64, InstructionSequence>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct InstructionSequence {
        #[prost(int64, repeated, tag = "1")]
        pub instruction_ids: Vec<i64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct HloInputOutputAliasProto {
        #[prost(message, repeated, tag = "1")]
        pub entries: Vec<AliasEntryProto>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct AliasEntryProto {
        #[prost(int64, repeated, tag = "1")]
        pub output_shape_index: Vec<i64>,
        #[prost(int64, tag = "2")]
        pub parameter_number: i64,
        #[prost(int64, repeated, tag = "3")]
        pub parameter_shape_index: Vec<i64>,
        #[prost(int32, tag = "4")]
        pub kind: i32,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct StackFrameIndexEnds {
        #[prost(message, repeated, tag = "3")]
        pub file_locations: Vec<FileLocationEnds>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct FileLocationEnds {
        #[prost(int32, tag = "5")]
        pub end_line: i32,
        #[prost(int32, tag = "6")]
        pub end_column: i32,
    }

    /// `xla.HloProto` read for its buffer assignment only (field 3).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct HloProtoBufferAssignment {
        #[prost(message, optional, tag = "3")]
        pub buffer_assignment: Option<BufferAssignmentProto>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct BufferAssignmentProto {
        #[prost(message, repeated, tag = "1")]
        pub logical_buffers: Vec<LogicalBufferProto>,
        #[prost(message, repeated, tag = "3")]
        pub buffer_allocations: Vec<BufferAllocationProto>,
        #[prost(message, repeated, tag = "4")]
        pub heap_simulator_traces: Vec<HeapSimulatorTrace>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct LogicalBufferProto {
        #[prost(int64, tag = "1")]
        pub id: i64,
        #[prost(int64, tag = "2")]
        pub size: i64,
        #[prost(message, optional, tag = "3")]
        pub defined_at: Option<LogicalBufferLocation>,
        #[prost(int64, tag = "4")]
        pub color: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct LogicalBufferLocation {
        #[prost(string, tag = "2")]
        pub instruction_name: String,
        #[prost(int64, repeated, tag = "3")]
        pub shape_index: Vec<i64>,
        #[prost(int64, tag = "4")]
        pub instruction_id: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct BufferAllocationProto {
        #[prost(int64, tag = "1")]
        pub index: i64,
        #[prost(int64, tag = "2")]
        pub size: i64,
        #[prost(bool, tag = "3")]
        pub is_thread_local: bool,
        #[prost(bool, tag = "5")]
        pub is_entry_computation_parameter: bool,
        #[prost(int64, tag = "6")]
        pub parameter_number: i64,
        #[prost(bool, tag = "7")]
        pub maybe_live_out: bool,
        #[prost(int64, tag = "8")]
        pub color: i64,
        #[prost(message, repeated, tag = "9")]
        pub assigned: Vec<BufferAllocationAssigned>,
        #[prost(bool, tag = "11")]
        pub is_tuple: bool,
        #[prost(bool, tag = "12")]
        pub is_constant: bool,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct BufferAllocationAssigned {
        #[prost(int64, tag = "1")]
        pub logical_buffer_id: i64,
        #[prost(int64, tag = "2")]
        pub offset: i64,
        #[prost(int64, tag = "3")]
        pub size: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct HeapSimulatorTrace {
        #[prost(message, repeated, tag = "1")]
        pub events: Vec<HeapSimulatorEvent>,
        #[prost(bool, tag = "2")]
        pub whole_module_simulation: bool,
        #[prost(int64, tag = "3")]
        pub buffer_allocation_index: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct HeapSimulatorEvent {
        #[prost(int32, tag = "1")]
        pub kind: i32,
        #[prost(int64, tag = "2")]
        pub buffer_id: i64,
        #[prost(string, tag = "3")]
        pub computation_name: String,
        #[prost(string, tag = "4")]
        pub instruction_name: String,
        #[prost(int64, tag = "5")]
        pub share_with_canonical_id: i64,
    }
}

/// `xla.PrimitiveType` numbers oxprof names.
pub mod primitive {
    /// Invalid.
    pub const INVALID: i32 = 0;
    /// Boolean.
    pub const PRED: i32 = 1;
    /// Signed integers.
    pub const S8: i32 = 2;
    /// 16-bit signed.
    pub const S16: i32 = 3;
    /// 32-bit signed.
    pub const S32: i32 = 4;
    /// 64-bit signed.
    pub const S64: i32 = 5;
    /// Unsigned 8-bit.
    pub const U8: i32 = 6;
    /// Unsigned 16-bit.
    pub const U16: i32 = 7;
    /// Unsigned 32-bit.
    pub const U32: i32 = 8;
    /// Unsigned 64-bit.
    pub const U64: i32 = 9;
    /// IEEE half.
    pub const F16: i32 = 10;
    /// IEEE single.
    pub const F32: i32 = 11;
    /// IEEE double.
    pub const F64: i32 = 12;
    /// Tuple.
    pub const TUPLE: i32 = 13;
    /// Opaque.
    pub const OPAQUE_TYPE: i32 = 14;
    /// Complex single.
    pub const C64: i32 = 15;
    /// bfloat16.
    pub const BF16: i32 = 16;
    /// Token.
    pub const TOKEN: i32 = 17;
    /// Complex double.
    pub const C128: i32 = 18;
    /// Buffer.
    pub const BUFFER: i32 = 34;

    /// `primitive_util::LowercasePrimitiveTypeName` (`f32`, `bf16`, `pred`, …).
    pub fn name(element_type: i32) -> &'static str {
        match element_type {
            1 => "pred",
            30 => "s1",
            26 => "s2",
            21 => "s4",
            2 => "s8",
            3 => "s16",
            4 => "s32",
            5 => "s64",
            31 => "u1",
            27 => "u2",
            22 => "u4",
            6 => "u8",
            7 => "u16",
            8 => "u32",
            9 => "u64",
            10 => "f16",
            11 => "f32",
            16 => "bf16",
            12 => "f64",
            19 => "f8e5m2",
            28 => "f8e4m3",
            20 => "f8e4m3fn",
            23 => "f8e4m3b11fnuz",
            29 => "f8e3m4",
            24 => "f8e5m2fnuz",
            25 => "f8e4m3fnuz",
            32 => "f4e2m1fn",
            33 => "f8e8m0fnu",
            15 => "c64",
            18 => "c128",
            13 => "tuple",
            14 => "opaque",
            17 => "token",
            34 => "buffer",
            _ => "invalid",
        }
    }

    /// `primitive_util::BitWidth` (0 for non-array types).
    pub fn bit_width(element_type: i32) -> u32 {
        match element_type {
            2 | 6 => 8,
            1 | 30 | 31 => 1,
            26 | 27 => 2,
            21 | 22 | 32 => 4,
            19 | 28 | 20 | 23 | 29 | 24 | 25 | 33 => 8,
            3 | 7 | 10 | 16 => 16,
            4 | 8 | 11 => 32,
            5 | 9 | 12 | 15 => 64,
            18 => 128,
            _ => 0,
        }
    }

    /// `ShapeUtil::ByteSizeOfPrimitiveType` (sub-byte types take a byte; 0 for
    /// non-array types).
    pub fn byte_size(element_type: i32) -> i64 {
        match element_type {
            1 | 2 | 6 | 30 | 31 | 26 | 27 | 21 | 22 | 32 | 19 | 28 | 20 | 23 | 29 | 24 | 25 | 33 => 1,
            3 | 7 | 10 | 16 => 2,
            4 | 8 | 11 => 4,
            5 | 9 | 12 | 15 => 8,
            18 => 16,
            _ => 0,
        }
    }

    /// Whether the type is an array element type (not tuple, opaque or token).
    pub fn is_array_type(element_type: i32) -> bool {
        !matches!(element_type, INVALID | TUPLE | OPAQUE_TYPE | TOKEN) && element_type != BUFFER
    }
}

/// Stack frames of a module (`xla.StackFrameIndexProto`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StackFrameIndex {
    /// File names (1-based ids in file locations).
    pub file_names: Vec<String>,
    /// Function names (1-based ids in file locations).
    pub function_names: Vec<String>,
    /// `(file_name_id, function_name_id, line, column)`.
    pub file_locations: Vec<(i32, i32, i32, i32)>,
    /// `(file_location_id, parent_frame_id)`, 1-based.
    pub stack_frames: Vec<(i32, i32)>,
}

/// Framework provenance of an HLO instruction (`xla.OpMetadata`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpMetadata {
    /// Framework op type, e.g. `MatMul` or `dot_general`.
    pub op_type: String,
    /// Framework op name, e.g. `jit(train_step)/jit(main)/dot_general`.
    pub op_name: String,
    /// Source file.
    pub source_file: String,
    /// Source line.
    pub source_line: i32,
    /// Deduplicated name (instructions XLA found identical share it).
    pub deduplicated_name: String,
    /// Stack frame id (1-based into the module's stack frame index; 0 = none).
    pub stack_frame_id: i32,
    /// Last source line (0 = unset).
    pub source_end_line: i32,
    /// Source column (0 = unset).
    pub source_column: i32,
    /// Last source column (0 = unset).
    pub source_end_column: i32,
    /// Scheduling name.
    pub scheduling_name: String,
}

/// A layout (`xla.LayoutProto`, the fields oxprof prints and sizes with).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    /// Dimension order, minor first.
    pub minor_to_major: Vec<i64>,
    /// Tiles (`T(8,128)`); a dimension of -1 is a combined dimension (`*`).
    pub tiles: Vec<Vec<i64>>,
    /// Tail padding alignment in elements (printed as `L(n)` when not 1).
    pub tail_padding_alignment_in_elements: i64,
    /// Element size in bits (0 = the type's own).
    pub element_size_in_bits: i64,
    /// Memory space (0 = default).
    pub memory_space: i64,
    /// Index type of sparse layouts (`#(…)`).
    pub index_primitive_type: i32,
    /// Pointer type of sparse layouts (`*(…)`).
    pub pointer_primitive_type: i32,
    /// Dynamic shape metadata prefix (`M(n)`).
    pub dynamic_shape_metadata_prefix_bytes: i64,
    /// Split configs `(dimension, split indices)`.
    pub split_configs: Vec<(i64, Vec<i64>)>,
    /// Physical shape (`P(…)`).
    pub physical_shape: Option<Box<Shape>>,
}

/// A shape: element type (`xla.PrimitiveType` number), dimensions, tuple elements, layout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shape {
    /// `xla.PrimitiveType` number (e.g. 11 = F32, 13 = TUPLE).
    pub element_type: i32,
    /// Dimension sizes.
    pub dimensions: Vec<i64>,
    /// Which dimensions are dynamic (bounded by their size).
    pub is_dynamic_dimension: Vec<bool>,
    /// Elements of a tuple.
    pub tuple_shapes: Vec<Shape>,
    /// Layout, when the proto has one.
    pub layout: Option<Layout>,
}

impl Shape {
    /// Whether the shape is a tuple.
    pub fn is_tuple(&self) -> bool {
        self.element_type == primitive::TUPLE
    }

    /// Whether the shape is an array (not a tuple, token or opaque value).
    pub fn is_array(&self) -> bool {
        primitive::is_array_type(self.element_type)
    }

    /// `ShapeUtil::ElementsIn`: product of the dimensions (1 for scalars), wrapping.
    pub fn elements(&self) -> i64 {
        self.dimensions.iter().fold(1i64, |acc, &d| acc.wrapping_mul(d))
    }

    /// `ShapeUtil::ElementsInRecursive`: elements of an array, summed over tuple leaves.
    pub fn elements_recursive(&self) -> i64 {
        if self.is_tuple() {
            self.tuple_shapes.iter().fold(0i64, |acc, s| acc.wrapping_add(s.elements_recursive()))
        } else if self.is_array() {
            self.elements()
        } else {
            0
        }
    }

    /// Rank (number of dimensions).
    pub fn rank(&self) -> usize {
        self.dimensions.len()
    }
}

/// A window dimension (`xla.WindowDimension`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowDimension {
    /// Window size.
    pub size: i64,
    /// Stride.
    pub stride: i64,
    /// Low padding.
    pub padding_low: i64,
    /// High padding.
    pub padding_high: i64,
    /// Window dilation.
    pub window_dilation: i64,
    /// Base dilation.
    pub base_dilation: i64,
    /// Window reversal.
    pub window_reversal: bool,
}

/// Convolution dimension numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConvolutionDimensionNumbers {
    /// Input batch dimension.
    pub input_batch_dimension: i64,
    /// Input feature dimension.
    pub input_feature_dimension: i64,
    /// Input spatial dimensions.
    pub input_spatial_dimensions: Vec<i64>,
    /// Kernel input feature dimension.
    pub kernel_input_feature_dimension: i64,
    /// Kernel output feature dimension.
    pub kernel_output_feature_dimension: i64,
    /// Kernel spatial dimensions.
    pub kernel_spatial_dimensions: Vec<i64>,
    /// Output batch dimension.
    pub output_batch_dimension: i64,
    /// Output feature dimension.
    pub output_feature_dimension: i64,
    /// Output spatial dimensions.
    pub output_spatial_dimensions: Vec<i64>,
}

/// Dot dimension numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DotDimensionNumbers {
    /// Contracting dimensions of the left operand.
    pub lhs_contracting_dimensions: Vec<i64>,
    /// Contracting dimensions of the right operand.
    pub rhs_contracting_dimensions: Vec<i64>,
    /// Batch dimensions of the left operand.
    pub lhs_batch_dimensions: Vec<i64>,
    /// Batch dimensions of the right operand.
    pub rhs_batch_dimensions: Vec<i64>,
}

/// Gather dimension numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GatherDimensionNumbers {
    /// Offset dims.
    pub offset_dims: Vec<i64>,
    /// Collapsed slice dims.
    pub collapsed_slice_dims: Vec<i64>,
    /// Start index map.
    pub start_index_map: Vec<i64>,
    /// Index vector dim.
    pub index_vector_dim: i64,
    /// Operand batching dims.
    pub operand_batching_dims: Vec<i64>,
    /// Start indices batching dims.
    pub start_indices_batching_dims: Vec<i64>,
}

/// Scatter dimension numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScatterDimensionNumbers {
    /// Update window dims.
    pub update_window_dims: Vec<i64>,
    /// Inserted window dims.
    pub inserted_window_dims: Vec<i64>,
    /// Scatter dims to operand dims.
    pub scatter_dims_to_operand_dims: Vec<i64>,
    /// Index vector dim.
    pub index_vector_dim: i64,
    /// Input batching dims.
    pub input_batching_dims: Vec<i64>,
    /// Scatter indices batching dims.
    pub scatter_indices_batching_dims: Vec<i64>,
}

/// Iota replica groups (`[groups,size]<=[reshape]T(perm)`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IotaReplicaGroups {
    /// Number of groups.
    pub num_replica_groups: i64,
    /// Devices per group.
    pub num_devices_per_group: i64,
    /// Reshape dims.
    pub reshape_dims: Vec<i64>,
    /// Transpose permutation.
    pub transpose_perm: Vec<i32>,
}

/// An instruction's sharding (`xla.OpSharding`, the parts XLA prints).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sharding {
    /// `xla.OpSharding.Type` (0 replicated, 1 maximal, 2 tuple, 3 other, 4 manual, 5 unknown).
    pub kind: i32,
    /// Tile assignment dimensions.
    pub tile_assignment_dimensions: Vec<i64>,
    /// Explicit tile assignment devices.
    pub tile_assignment_devices: Vec<i64>,
    /// Tuple element shardings.
    pub tuple_shardings: Vec<Sharding>,
    /// The last tile dimension replicates.
    pub replicate_on_last_tile_dim: bool,
    /// Types of the last tile dimensions.
    pub last_tile_dims: Vec<i32>,
    /// Iota tile assignment reshape dims.
    pub iota_reshape_dims: Vec<i64>,
    /// Iota tile assignment transpose permutation.
    pub iota_transpose_perm: Vec<i32>,
    /// Shard group: `(id, type)` (type 0 = shard as, 1 = shard like).
    pub shard_group: Option<(i64, i32)>,
}

fn convert_sharding(s: wire::OpSharding) -> Sharding {
    Sharding {
        kind: s.r#type,
        tile_assignment_dimensions: s.tile_assignment_dimensions,
        tile_assignment_devices: s.tile_assignment_devices,
        tuple_shardings: s.tuple_shardings.into_iter().map(convert_sharding).collect(),
        replicate_on_last_tile_dim: s.replicate_on_last_tile_dim,
        last_tile_dims: s.last_tile_dims,
        iota_reshape_dims: s.iota_reshape_dims,
        iota_transpose_perm: s.iota_transpose_perm,
        shard_group: s.is_shard_group.then_some((s.shard_group_id, s.shard_group_type)),
    }
}

/// A literal (constants): its shape and values, as stored.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Literal {
    /// Shape.
    pub shape: Shape,
    /// Booleans.
    pub preds: Vec<bool>,
    /// 8-bit values (u8s or s8s bytes).
    pub u8s: Vec<u8>,
    /// Signed 8-bit bytes.
    pub s8s: Vec<u8>,
    /// 32-bit signed.
    pub s32s: Vec<i32>,
    /// 64-bit signed.
    pub s64s: Vec<i64>,
    /// 32-bit unsigned.
    pub u32s: Vec<u32>,
    /// 64-bit unsigned.
    pub u64s: Vec<u64>,
    /// Single floats.
    pub f32s: Vec<f32>,
    /// Doubles.
    pub f64s: Vec<f64>,
    /// Half floats (little-endian bytes).
    pub f16s: Vec<u8>,
    /// bfloat16 (little-endian bytes).
    pub bf16s: Vec<u8>,
    /// 16-bit unsigned (little-endian bytes).
    pub u16s: Vec<u8>,
    /// 16-bit signed (little-endian bytes).
    pub s16s: Vec<u8>,
    /// Complex singles (re, im pairs).
    pub c64s: Vec<f32>,
    /// Complex doubles (re, im pairs).
    pub c128s: Vec<f64>,
    /// Tuple elements.
    pub tuple_literals: Vec<Literal>,
}

/// One HLO instruction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HloInstruction {
    /// Name, e.g. `fusion.3`.
    pub name: String,
    /// Opcode, e.g. `fusion`, `custom-call`.
    pub opcode: String,
    /// Result shape.
    pub shape: Shape,
    /// Framework provenance.
    pub metadata: OpMetadata,
    /// Constant value.
    pub literal: Option<Literal>,
    /// Parameter number.
    pub parameter_number: i64,
    /// Fusion kind (`kLoop`, `kInput`, `kOutput`, `kCustom`) for fusions.
    pub fusion_kind: String,
    /// Tuple index of a get-tuple-element.
    pub tuple_index: i64,
    /// Dimensions (broadcast, reduce, transpose, concatenate, …).
    pub dimensions: Vec<i64>,
    /// Window (convolution, reduce-window, …).
    pub window: Option<Vec<WindowDimension>>,
    /// Convolution dimension numbers.
    pub convolution_dimension_numbers: Option<ConvolutionDimensionNumbers>,
    /// Convolution feature group count (0 when absent = 1).
    pub feature_group_count: i64,
    /// Convolution batch group count (0 when absent = 1).
    pub batch_group_count: i64,
    /// Slice `(start, limit, stride)` per dimension.
    pub slice_dimensions: Vec<(i64, i64, i64)>,
    /// Reduce-precision exponent bits.
    pub exponent_bits: i32,
    /// Reduce-precision mantissa bits.
    pub mantissa_bits: i32,
    /// Dynamic-slice sizes.
    pub dynamic_slice_sizes: Vec<i64>,
    /// Pad `(low, high, interior)` per dimension.
    pub padding_config: Option<Vec<(i64, i64, i64)>>,
    /// Rng distribution.
    pub distribution: i32,
    /// Batch-norm epsilon.
    pub epsilon: f32,
    /// Batch-norm feature index.
    pub feature_index: i64,
    /// Channel id (0 = none).
    pub channel_id: i64,
    /// Target of a custom call.
    pub custom_call_target: String,
    /// Dot dimension numbers.
    pub dot_dimension_numbers: Option<DotDimensionNumbers>,
    /// FFT type.
    pub fft_type: i32,
    /// FFT lengths.
    pub fft_length: Vec<i64>,
    /// Compare direction (`EQ`, `GT`, …).
    pub comparison_direction: String,
    /// Compare type (`FLOAT`, `TOTALORDER`, …).
    pub comparison_type: String,
    /// Gather dimension numbers.
    pub gather_dimension_numbers: Option<GatherDimensionNumbers>,
    /// Gather slice sizes.
    pub gather_slice_sizes: Vec<i64>,
    /// Scatter dimension numbers.
    pub scatter_dimension_numbers: Option<ScatterDimensionNumbers>,
    /// Id within the module.
    pub id: i64,
    /// Operand instruction ids.
    pub operand_ids: Vec<i64>,
    /// Control predecessor instruction ids.
    pub control_predecessor_ids: Vec<i64>,
    /// Called computation ids (fusion bodies, while bodies, …).
    pub called_computation_ids: Vec<i64>,
    /// Sharding, when set.
    pub sharding: Option<Sharding>,
    /// Backend config (JSON text on GPU).
    pub backend_config: Vec<u8>,
    /// Send/recv to or from the host.
    pub is_host_transfer: bool,
    /// Replica groups (explicit list).
    pub replica_groups: Vec<Vec<i64>>,
    /// Replica groups in iota form.
    pub iota_replica_groups: Option<IotaReplicaGroups>,
    /// Collectives: global device ids.
    pub use_global_device_ids: bool,
    /// Dot/conv precision per operand (`xla.PrecisionConfig.Precision` numbers).
    pub operand_precision: Vec<i32>,
    /// Precision algorithm (0 = unset).
    pub precision_algorithm: i32,
    /// Custom-call operand layout constraints.
    pub operand_shapes_with_layout: Vec<Shape>,
    /// Sort stability.
    pub is_stable: bool,
    /// Custom call has side effects.
    pub custom_call_has_side_effect: bool,
    /// Output-to-operand aliasing `(output index, operand number, operand index)`.
    pub output_operand_aliasing: Vec<(Vec<i64>, i64, Vec<i64>)>,
    /// Custom-call schedule.
    pub custom_call_schedule: i32,
    /// Custom-call API version (`xla.CustomCallApiVersion`).
    pub custom_call_api_version: i32,
    /// Gather/scatter: indices are sorted.
    pub indices_are_sorted: bool,
    /// Scatter: unique indices.
    pub unique_indices: bool,
    /// Frontend attributes.
    pub frontend_attributes: Vec<(String, String)>,
    /// Rng algorithm.
    pub rng_algorithm: i32,
    /// Copy-start of a cross-program prefetch.
    pub is_cross_program_prefetch: bool,
    /// Cross-program prefetch index.
    pub cross_program_prefetch_index: i32,
    /// Custom-call padding type.
    pub padding_type: i32,
    /// Top-k: k.
    pub k: i64,
    /// Top-k: largest.
    pub largest: bool,
    /// Iota / collective-permute delta.
    pub delta: i64,
    /// Composite call.
    pub is_composite: bool,
}

/// One HLO computation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HloComputation {
    /// Name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// Root instruction id.
    pub root_id: i64,
    /// Whether it is a fusion body.
    pub is_fusion_computation: bool,
    /// Execution thread (empty = main).
    pub execution_thread: String,
    /// Instructions in dependency order.
    pub instructions: Vec<HloInstruction>,
}

/// One HLO module (an XLA program).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HloModule {
    /// Module name, e.g. `jit_train_step`.
    pub name: String,
    /// Module id.
    pub id: i64,
    /// Entry computation name.
    pub entry_computation_name: String,
    /// Entry computation id.
    pub entry_computation_id: i64,
    /// Computations, callees before callers.
    pub computations: Vec<HloComputation>,
    /// Stack frames referenced by instruction metadata.
    pub stack_frame_index: Option<StackFrameIndex>,
}

fn convert_layout(l: wire::LayoutProto) -> Layout {
    Layout {
        minor_to_major: l.minor_to_major,
        tiles: l.tiles.into_iter().map(|t| t.dimensions).collect(),
        tail_padding_alignment_in_elements: l.tail_padding_alignment_in_elements,
        element_size_in_bits: l.element_size_in_bits,
        memory_space: l.memory_space,
        index_primitive_type: l.index_primitive_type,
        pointer_primitive_type: l.pointer_primitive_type,
        dynamic_shape_metadata_prefix_bytes: l.dynamic_shape_metadata_prefix_bytes,
        split_configs: l.split_configs.into_iter().map(|s| (s.dimension, s.split_indices)).collect(),
        physical_shape: l.physical_shape.map(|s| Box::new(convert_shape(*s))),
    }
}

fn convert_shape(s: wire::ShapeProto) -> Shape {
    Shape {
        element_type: s.element_type,
        dimensions: s.dimensions,
        is_dynamic_dimension: s.is_dynamic_dimension,
        tuple_shapes: s.tuple_shapes.into_iter().map(convert_shape).collect(),
        layout: s.layout.map(convert_layout),
    }
}

fn convert_literal(l: wire::LiteralProto) -> Literal {
    Literal {
        shape: convert_shape(l.shape.unwrap_or_default()),
        preds: l.preds,
        u8s: l.u8s,
        s8s: l.s8s,
        s32s: l.s32s,
        s64s: l.s64s,
        u32s: l.u32s,
        u64s: l.u64s,
        f32s: l.f32s,
        f64s: l.f64s,
        f16s: l.f16s,
        bf16s: l.bf16s,
        u16s: l.u16s,
        s16s: l.s16s,
        c64s: l.c64s,
        c128s: l.c128s,
        tuple_literals: l.tuple_literals.into_iter().map(convert_literal).collect(),
    }
}

fn convert_instruction(i: wire::HloInstructionProto) -> HloInstruction {
    let md = i.metadata.unwrap_or_default();
    let precision = i.precision_config.unwrap_or_default();
    // XProf 2.24.2's XLA reads explicit replica groups from the legacy list (field 49) or
    // the collective device list (87), and iota groups from field 92 only: the iota list
    // inside field 87 is not read (those groups print as `{}`; found by running it).
    let iota_replica_groups = i.iota_collective_device_list.map(|g| IotaReplicaGroups {
        num_replica_groups: g.num_replica_groups,
        num_devices_per_group: g.num_devices_per_group,
        reshape_dims: g.iota_reshape_dims,
        transpose_perm: g.iota_transpose_perm,
    });
    let mut replica_groups: Vec<Vec<i64>> = i.replica_groups.into_iter().map(|g| g.replica_ids).collect();
    if replica_groups.is_empty()
        && let Some(list) = i.collective_device_list
    {
        replica_groups = list.replica_groups.into_iter().map(|g| g.replica_ids).collect();
    }
    HloInstruction {
        name: i.name,
        opcode: i.opcode,
        shape: convert_shape(i.shape.unwrap_or_default()),
        metadata: OpMetadata {
            op_type: md.op_type,
            op_name: md.op_name,
            source_file: md.source_file,
            source_line: md.source_line,
            deduplicated_name: md.deduplicated_name,
            stack_frame_id: md.stack_frame_id,
            source_end_line: md.source_end_line,
            source_column: md.source_column,
            source_end_column: md.source_end_column,
            scheduling_name: md.scheduling_name,
        },
        literal: i.literal.map(convert_literal),
        parameter_number: i.parameter_number,
        fusion_kind: i.fusion_kind,
        tuple_index: i.tuple_index,
        dimensions: i.dimensions,
        window: i.window.map(|w| {
            w.dimensions
                .into_iter()
                .map(|d| WindowDimension {
                    size: d.size,
                    stride: d.stride,
                    padding_low: d.padding_low,
                    padding_high: d.padding_high,
                    window_dilation: d.window_dilation,
                    base_dilation: d.base_dilation,
                    window_reversal: d.window_reversal,
                })
                .collect()
        }),
        convolution_dimension_numbers: i.convolution_dimension_numbers.map(|c| ConvolutionDimensionNumbers {
            input_batch_dimension: c.input_batch_dimension,
            input_feature_dimension: c.input_feature_dimension,
            input_spatial_dimensions: c.input_spatial_dimensions,
            kernel_input_feature_dimension: c.kernel_input_feature_dimension,
            kernel_output_feature_dimension: c.kernel_output_feature_dimension,
            kernel_spatial_dimensions: c.kernel_spatial_dimensions,
            output_batch_dimension: c.output_batch_dimension,
            output_feature_dimension: c.output_feature_dimension,
            output_spatial_dimensions: c.output_spatial_dimensions,
        }),
        feature_group_count: i.feature_group_count,
        batch_group_count: i.batch_group_count,
        slice_dimensions: i.slice_dimensions.into_iter().map(|s| (s.start, s.limit, s.stride)).collect(),
        exponent_bits: i.exponent_bits,
        mantissa_bits: i.mantissa_bits,
        dynamic_slice_sizes: i.dynamic_slice_sizes,
        padding_config: i.padding_config.map(|p| {
            p.dimensions.into_iter().map(|d| (d.edge_padding_low, d.edge_padding_high, d.interior_padding)).collect()
        }),
        distribution: i.distribution,
        epsilon: i.epsilon,
        feature_index: i.feature_index,
        channel_id: i.channel_id,
        custom_call_target: i.custom_call_target,
        dot_dimension_numbers: i.dot_dimension_numbers.map(|d| DotDimensionNumbers {
            lhs_contracting_dimensions: d.lhs_contracting_dimensions,
            rhs_contracting_dimensions: d.rhs_contracting_dimensions,
            lhs_batch_dimensions: d.lhs_batch_dimensions,
            rhs_batch_dimensions: d.rhs_batch_dimensions,
        }),
        fft_type: i.fft_type,
        fft_length: i.fft_length,
        comparison_direction: i.comparison_direction,
        comparison_type: i.comparison_type,
        gather_dimension_numbers: i.gather_dimension_numbers.map(|g| GatherDimensionNumbers {
            offset_dims: g.offset_dims,
            collapsed_slice_dims: g.collapsed_slice_dims,
            start_index_map: g.start_index_map,
            index_vector_dim: g.index_vector_dim,
            operand_batching_dims: g.operand_batching_dims,
            start_indices_batching_dims: g.start_indices_batching_dims,
        }),
        gather_slice_sizes: i.gather_slice_sizes,
        scatter_dimension_numbers: i.scatter_dimension_numbers.map(|s| ScatterDimensionNumbers {
            update_window_dims: s.update_window_dims,
            inserted_window_dims: s.inserted_window_dims,
            scatter_dims_to_operand_dims: s.scatter_dims_to_operand_dims,
            index_vector_dim: s.index_vector_dim,
            input_batching_dims: s.input_batching_dims,
            scatter_indices_batching_dims: s.scatter_indices_batching_dims,
        }),
        id: i.id,
        operand_ids: i.operand_ids,
        control_predecessor_ids: i.control_predecessor_ids,
        called_computation_ids: i.called_computation_ids,
        sharding: i.sharding.map(convert_sharding),
        backend_config: i.backend_config,
        is_host_transfer: i.is_host_transfer,
        replica_groups,
        iota_replica_groups,
        use_global_device_ids: i.use_global_device_ids,
        operand_precision: precision.operand_precision,
        precision_algorithm: precision.algorithm,
        operand_shapes_with_layout: i.operand_shapes_with_layout.into_iter().map(convert_shape).collect(),
        is_stable: i.is_stable,
        custom_call_has_side_effect: i.custom_call_has_side_effect,
        output_operand_aliasing: i
            .output_operand_aliasing
            .into_iter()
            .map(|a| (a.output_shape_index, a.operand_index, a.operand_shape_index))
            .collect(),
        custom_call_schedule: i.custom_call_schedule,
        custom_call_api_version: i.custom_call_api_version,
        indices_are_sorted: i.indices_are_sorted,
        unique_indices: i.unique_indices,
        frontend_attributes: i.frontend_attributes.map(|f| f.map.into_iter().collect()).unwrap_or_default(),
        rng_algorithm: i.rng_algorithm,
        is_cross_program_prefetch: i.is_cross_program_prefetch,
        cross_program_prefetch_index: i.cross_program_prefetch_index,
        padding_type: i.padding_type,
        k: i.k,
        largest: i.largest,
        delta: i.delta,
        is_composite: i.is_composite,
    }
}

/// Decodes serialized `xla.HloProto` bytes into a module.
pub fn decode_hlo_proto(bytes: &[u8]) -> Result<HloModule, DecodeError> {
    let proto = wire::HloProto::decode(bytes).map_err(|_| DecodeError::NotAnHloProto(bytes.len()))?;
    let m = proto.hlo_module.unwrap_or_default();
    Ok(HloModule {
        name: m.name,
        id: m.id,
        entry_computation_name: m.entry_computation_name,
        entry_computation_id: m.entry_computation_id,
        computations: m
            .computations
            .into_iter()
            .map(|c| HloComputation {
                name: c.name,
                id: c.id,
                root_id: c.root_id,
                is_fusion_computation: c.is_fusion_computation,
                execution_thread: c.execution_thread,
                instructions: c.instructions.into_iter().map(convert_instruction).collect(),
            })
            .collect(),
        stack_frame_index: m.stack_frame_index.map(|s| StackFrameIndex {
            file_names: s.file_names,
            function_names: s.function_names,
            file_locations: s
                .file_locations
                .into_iter()
                .map(|l| (l.file_name_id, l.function_name_id, l.line, l.column))
                .collect(),
            stack_frames: s.stack_frames.into_iter().map(|f| (f.file_location_id, f.parent_frame_id)).collect(),
        }),
    })
}

/// Module attributes XLA's HLO printer shows that [`HloModule`] does not carry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModuleExtras {
    /// Entry parameter shapes with layouts (`host_program_shape`), when present.
    pub program_parameters: Vec<Shape>,
    /// Entry result shape with layout, when there is a program shape.
    pub program_result: Option<Shape>,
    /// Schedule: instruction ids in execution order, by computation id; `None` when the
    /// module is not scheduled.
    pub schedule: Option<Vec<(i64, Vec<i64>)>>,
    /// Input/output aliasing: `(output index, parameter number, parameter index, kind)`
    /// (kind 1 = may-alias, 2 = must-alias).
    pub input_output_alias: Vec<(Vec<i64>, i64, Vec<i64>, i32)>,
    /// Module frontend attributes, sorted by key.
    pub frontend_attributes: Vec<(String, String)>,
    /// `(end_line, end_column)` of each stack-frame-index file location.
    pub file_location_ends: Vec<(i32, i32)>,
}

/// Decodes the [`ModuleExtras`] of serialized `xla.HloProto` bytes.
pub fn decode_module_extras(bytes: &[u8]) -> Result<ModuleExtras, DecodeError> {
    let proto = wire::HloProtoModuleExtras::decode(bytes).map_err(|_| DecodeError::NotAnHloProto(bytes.len()))?;
    let m = proto.hlo_module.unwrap_or_default();
    let (program_parameters, program_result) = match m.host_program_shape {
        Some(p) => {
            (p.parameters.into_iter().map(convert_shape).collect(), Some(convert_shape(p.result.unwrap_or_default())))
        }
        None => (Vec::new(), None),
    };
    Ok(ModuleExtras {
        program_parameters,
        program_result,
        schedule: m.schedule.map(|s| s.sequences.into_iter().map(|(k, v)| (k, v.instruction_ids)).collect()),
        input_output_alias: m
            .input_output_alias
            .map(|a| {
                a.entries
                    .into_iter()
                    .map(|e| (e.output_shape_index, e.parameter_number, e.parameter_shape_index, e.kind))
                    .collect()
            })
            .unwrap_or_default(),
        frontend_attributes: m.frontend_attributes.map(|f| f.map.into_iter().collect()).unwrap_or_default(),
        file_location_ends: m
            .stack_frame_index
            .map(|s| s.file_locations.into_iter().map(|l| (l.end_line, l.end_column)).collect())
            .unwrap_or_default(),
    })
}

/// XLA's buffer assignment of a module (`xla.BufferAssignmentProto`, field 3 of
/// `xla.HloProto`): logical buffers, the allocations they were packed into, and the heap
/// simulator traces (buffer aliases are skipped).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BufferAssignment {
    /// Logical buffers (one per value an instruction defines).
    pub logical_buffers: Vec<LogicalBuffer>,
    /// Buffer allocations, in proto order.
    pub buffer_allocations: Vec<BufferAllocation>,
    /// Heap simulator traces, in proto order.
    pub heap_simulator_traces: Vec<HeapSimulatorTrace>,
}

/// `xla.LogicalBufferProto`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogicalBuffer {
    /// Id (referenced by allocations and heap events).
    pub id: i64,
    /// Size in bytes (padded, as allocated).
    pub size: i64,
    /// Memory color (memory space).
    pub color: i64,
    /// Id of the defining instruction.
    pub instruction_id: i64,
    /// Name of the defining instruction (deprecated in the proto; may be empty).
    pub instruction_name: String,
    /// Index of the buffer within the instruction's (tuple) shape.
    pub shape_index: Vec<i64>,
}

/// `xla.BufferAllocationProto`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BufferAllocation {
    /// Index.
    pub index: i64,
    /// Size in bytes.
    pub size: i64,
    /// Thread-local.
    pub is_thread_local: bool,
    /// Holds a tuple's index table.
    pub is_tuple: bool,
    /// Holds an entry computation parameter.
    pub is_entry_computation_parameter: bool,
    /// Holds a constant.
    pub is_constant: bool,
    /// Parameter number of an entry parameter.
    pub parameter_number: i64,
    /// May be live out of the program.
    pub maybe_live_out: bool,
    /// Memory color (memory space).
    pub color: i64,
    /// Logical buffers placed in it: `(logical buffer id, offset, size)`.
    pub assigned: Vec<(i64, i64, i64)>,
}

/// Kind of a heap simulator event (`xla.HeapSimulatorTrace.Event.Kind`).
pub mod heap_event_kind {
    /// A buffer is allocated.
    pub const ALLOC: i32 = 0;
    /// A buffer is freed.
    pub const FREE: i32 = 1;
    /// A buffer shares the memory of a canonical buffer.
    pub const SHARE_WITH: i32 = 2;
}

/// One heap simulator event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeapSimulatorEvent {
    /// [`heap_event_kind`] number.
    pub kind: i32,
    /// Logical buffer id.
    pub buffer_id: i64,
    /// Computation of the instruction causing the event.
    pub computation_name: String,
    /// Instruction causing the event.
    pub instruction_name: String,
    /// For `SHARE_WITH`: the canonical buffer.
    pub share_with_canonical_id: i64,
}

/// `xla.HeapSimulatorTrace`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeapSimulatorTrace {
    /// Events in simulation order.
    pub events: Vec<HeapSimulatorEvent>,
    /// Whether the whole module was simulated at once.
    pub whole_module_simulation: bool,
    /// Allocation the trace claims to belong to (not trusted by XProf).
    pub buffer_allocation_index: i64,
}

/// Decodes the buffer assignment of serialized `xla.HloProto` bytes; `Ok(None)` when the
/// proto has none.
pub fn decode_buffer_assignment(bytes: &[u8]) -> Result<Option<BufferAssignment>, DecodeError> {
    let proto = wire::HloProtoBufferAssignment::decode(bytes).map_err(|_| DecodeError::NotAnHloProto(bytes.len()))?;
    Ok(proto.buffer_assignment.map(|b| BufferAssignment {
        logical_buffers: b
            .logical_buffers
            .into_iter()
            .map(|l| {
                let at = l.defined_at.unwrap_or_default();
                LogicalBuffer {
                    id: l.id,
                    size: l.size,
                    color: l.color,
                    instruction_id: at.instruction_id,
                    instruction_name: at.instruction_name,
                    shape_index: at.shape_index,
                }
            })
            .collect(),
        buffer_allocations: b
            .buffer_allocations
            .into_iter()
            .map(|a| BufferAllocation {
                index: a.index,
                size: a.size,
                is_thread_local: a.is_thread_local,
                is_tuple: a.is_tuple,
                is_entry_computation_parameter: a.is_entry_computation_parameter,
                is_constant: a.is_constant,
                parameter_number: a.parameter_number,
                maybe_live_out: a.maybe_live_out,
                color: a.color,
                assigned: a.assigned.into_iter().map(|x| (x.logical_buffer_id, x.offset, x.size)).collect(),
            })
            .collect(),
        heap_simulator_traces: b
            .heap_simulator_traces
            .into_iter()
            .map(|t| HeapSimulatorTrace {
                events: t
                    .events
                    .into_iter()
                    .map(|e| HeapSimulatorEvent {
                        kind: e.kind,
                        buffer_id: e.buffer_id,
                        computation_name: e.computation_name,
                        instruction_name: e.instruction_name,
                        share_with_canonical_id: e.share_with_canonical_id,
                    })
                    .collect(),
                whole_module_simulation: t.whole_module_simulation,
                buffer_allocation_index: t.buffer_allocation_index,
            })
            .collect(),
    }))
}

/// The raw `Hlo Proto` bytes of every program in `/host:metadata`, by program id, as XProf
/// reads them (`ParseHloProtosFromXSpace`): the program id is the `program_id` stat when
/// present, else the event metadata id; the first entry for an id wins. The legacy stat
/// name `HLO Proto` is accepted too.
pub fn hlo_proto_bytes(space: &XSpace) -> Vec<(u64, &[u8])> {
    let mut out: Vec<(u64, &[u8])> = Vec::new();
    for plane in space.planes.iter().filter(|p| p.name == METADATA_PLANE_NAME) {
        let legacy = plane.stat_metadata_named("HLO Proto");
        for id in plane.event_metadata_ids() {
            let md = plane.event_metadata_at(id);
            let mut bytes = None;
            let mut program_id = None;
            for stat in plane.metadata_stats(id) {
                match stat.stat_type() {
                    Some(StatType::HloProto) => bytes = stat.as_bytes().or(bytes),
                    Some(StatType::ProgramId) => program_id = stat.as_u64(),
                    _ if Some(stat.metadata_id()) == legacy => bytes = stat.as_bytes().or(bytes),
                    _ => {}
                }
            }
            let Some(bytes) = bytes else { continue };
            let program_id = program_id.unwrap_or(md.id as u64);
            if !out.iter().any(|&(p, _)| p == program_id) {
                out.push((program_id, bytes));
            }
        }
    }
    out
}

/// Every HLO module of a profile that decodes, by program id (in `/host:metadata` order).
/// Modules that do not decode are skipped and counted in the second value.
pub fn hlo_modules(space: &XSpace) -> (Vec<(u64, HloModule)>, usize) {
    let mut failed = 0;
    let modules = hlo_proto_bytes(space)
        .into_iter()
        .filter_map(|(id, bytes)| match decode_hlo_proto(bytes) {
            Ok(m) => Some((id, m)),
            Err(_) => {
                failed += 1;
                None
            }
        })
        .collect();
    (modules, failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_a_module_written_by_prost() {
        let proto = wire::HloProto {
            hlo_module: Some(wire::HloModuleProto {
                name: "jit_step".into(),
                id: 7,
                computations: vec![wire::HloComputationProto {
                    name: "main".into(),
                    instructions: vec![wire::HloInstructionProto {
                        name: "dot.1".into(),
                        opcode: "dot".into(),
                        shape: Some(wire::ShapeProto {
                            element_type: primitive::F32,
                            dimensions: vec![2, 3],
                            layout: Some(wire::LayoutProto {
                                minor_to_major: vec![1, 0],
                                tiles: vec![wire::TileProto { dimensions: vec![8, 128] }],
                                memory_space: 1,
                                ..Default::default()
                            }),
                            ..Default::default()
                        }),
                        metadata: Some(wire::OpMetadata {
                            op_type: "dot_general".into(),
                            op_name: "jit(step)/transpose(jvp(f))/dot_general".into(),
                            stack_frame_id: 2,
                            ..Default::default()
                        }),
                        dot_dimension_numbers: Some(wire::DotDimensionNumbers {
                            lhs_contracting_dimensions: vec![1],
                            ..Default::default()
                        }),
                        id: 3,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                stack_frame_index: Some(wire::StackFrameIndexProto {
                    file_names: vec!["f.py".into()],
                    stack_frames: vec![wire::StackFrame { file_location_id: 1, parent_frame_id: 0 }],
                    ..Default::default()
                }),
                ..Default::default()
            }),
        };
        let m = decode_hlo_proto(&proto.encode_to_vec()).unwrap();
        assert_eq!(m.name, "jit_step");
        let dot = &m.computations[0].instructions[0];
        assert_eq!(dot.metadata.op_type, "dot_general");
        assert_eq!(dot.metadata.stack_frame_id, 2);
        let layout = dot.shape.layout.as_ref().unwrap();
        assert_eq!(
            (layout.minor_to_major.as_slice(), layout.tiles.as_slice(), layout.memory_space),
            (&[1, 0][..], &[vec![8, 128]][..], 1)
        );
        assert_eq!(dot.dot_dimension_numbers.as_ref().unwrap().lhs_contracting_dimensions, vec![1]);
        assert_eq!(m.stack_frame_index.as_ref().unwrap().stack_frames, vec![(1, 0)]);
        assert_eq!((dot.shape.elements(), dot.shape.rank()), (6, 2));
        assert!(decode_hlo_proto(&[0xff, 0xff, 0xff]).is_err());
    }

    #[test]
    fn primitive_types() {
        assert_eq!((primitive::name(primitive::BF16), primitive::byte_size(primitive::BF16)), ("bf16", 2));
        assert_eq!(primitive::bit_width(primitive::PRED), 1);
        assert!(!primitive::is_array_type(primitive::TUPLE));
    }
}
