//! XLA's HLO as profiles carry it, and what XProf computes from it:
//!
//! * the typed model: the `xla.HloProto` of each program decoded into modules,
//!   computations and instructions ([`decode_hlo_proto`], [`hlo_modules`]);
//! * [`HloModuleMap`]: XProf's HLO module map — categories, framework op names, HLO text,
//!   fusion children — with a port of XLA's GPU HLO cost analysis (FLOPs, bytes, memory
//!   breakdown per instruction, in f32 like XLA);
//! * XLA's printers: [`HloGraph`] (a module linked the way XLA holds it),
//!   [`print_instruction`] (`HloInstruction::ToString`), [`render_dot`] (XLA's HLO graph
//!   dumper, the DOT of an op's neighbourhood), [`hlo_proto_text`] (protobuf text of an
//!   `HloProto` over the generated schema table);
//!
//! Numbers and strings are printed the way XLA's C++ prints them by `oxprof_wire::cxx_printf`.
//!
//! Invariant: no IO; the prost wire types stay private to this crate. Depends on the
//! profile model only to find the HLO protos a profile holds.

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod cost;
mod dot;
mod error;
mod graph;
mod lookup;
mod model;
mod pbtxt;
mod pbtxt_schema;
mod print;
#[cfg(test)]
mod test_support;

pub use dot::{RenderOptions as DotRenderOptions, render as render_dot};
pub use error::DecodeError;
pub use graph::{Comp as HloGraphComputation, Graph as HloGraph, Node as HloGraphNode};
pub use lookup::{CostAnalysis, HloMemoryAccess, HloModuleMap, HloPerformance, HloSourceInfo, InstructionView};
pub use model::{
    BufferAllocation, BufferAssignment, ConvolutionDimensionNumbers, DotDimensionNumbers, GatherDimensionNumbers,
    HeapSimulatorEvent, HeapSimulatorTrace, HloComputation, HloInstruction, HloModule, IotaReplicaGroups, Layout,
    Literal, LogicalBuffer, ModuleExtras, OpMetadata, ScatterDimensionNumbers, Shape, Sharding, StackFrameIndex,
    WindowDimension, decode_buffer_assignment, decode_hlo_proto, decode_module_extras, heap_event_kind, hlo_modules,
    hlo_proto_bytes, primitive,
};
pub use pbtxt::hlo_proto_text;
pub use print::{PrintOptions, print_instruction, print_shape as print_shape_with_layout};
