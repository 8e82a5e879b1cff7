//! XLA's HLO as profiles carry it: the `xla.HloProto` of each program, decoded into a typed
//! model of modules, computations and instructions.
//!
//! Invariant: no IO; the prost wire types stay private to this crate. Depends on the
//! profile model only to find the HLO protos a profile holds.

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod error;
mod model;

pub use error::DecodeError;
pub use model::{
    BufferAllocation, BufferAssignment, ConvolutionDimensionNumbers, DotDimensionNumbers, GatherDimensionNumbers,
    HeapSimulatorEvent, HeapSimulatorTrace, HloComputation, HloInstruction, HloModule, IotaReplicaGroups, Layout,
    Literal, LogicalBuffer, ModuleExtras, OpMetadata, ScatterDimensionNumbers, Shape, Sharding, StackFrameIndex,
    WindowDimension, decode_buffer_assignment, decode_hlo_proto, decode_module_extras, heap_event_kind, hlo_modules,
    hlo_proto_bytes, primitive,
};
