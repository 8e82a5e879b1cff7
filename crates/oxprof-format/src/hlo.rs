//! XLA HLO modules carried by profiles: the `xla.HloProto` bytes stored as the `Hlo Proto`
//! stat of `/host:metadata` event metadata (one per XLA program), decoded into a small
//! typed model of modules, computations and instructions.
//!
//! Only the fields oxprof's analyses read are decoded (names, opcodes, ids, op metadata,
//! fusion and call structure, shapes); everything else in the proto is skipped.

use crate::error::DecodeError;
use crate::model::XSpace;
use crate::schema::{METADATA_PLANE_NAME, StatType};
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
        #[prost(string, tag = "11")]
        pub fusion_kind: String,
        #[prost(string, tag = "28")]
        pub custom_call_target: String,
        #[prost(int64, tag = "35")]
        pub id: i64,
        #[prost(int64, repeated, tag = "36")]
        pub operand_ids: Vec<i64>,
        #[prost(int64, repeated, tag = "38")]
        pub called_computation_ids: Vec<i64>,
        #[prost(bool, tag = "47")]
        pub is_host_transfer: bool,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ShapeProto {
        #[prost(int32, tag = "2")]
        pub element_type: i32,
        #[prost(int64, repeated, tag = "3")]
        pub dimensions: Vec<i64>,
        #[prost(message, repeated, tag = "4")]
        pub tuple_shapes: Vec<ShapeProto>,
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
    }
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
}

/// A shape: element type (`xla.PrimitiveType` number), dimensions, tuple elements.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shape {
    /// `xla.PrimitiveType` number (e.g. 11 = F32, 13 = TUPLE).
    pub element_type: i32,
    /// Dimension sizes.
    pub dimensions: Vec<i64>,
    /// Elements of a tuple.
    pub tuple_shapes: Vec<Shape>,
}

/// One HLO instruction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HloInstruction {
    /// Name, e.g. `fusion.3`.
    pub name: String,
    /// Opcode, e.g. `fusion`, `custom-call`.
    pub opcode: String,
    /// Result shape.
    pub shape: Shape,
    /// Framework provenance.
    pub metadata: OpMetadata,
    /// Fusion kind (`kLoop`, `kInput`, `kOutput`, `kCustom`) for fusions.
    pub fusion_kind: String,
    /// Target of a custom call.
    pub custom_call_target: String,
    /// Id within the module.
    pub id: i64,
    /// Operand instruction ids.
    pub operand_ids: Vec<i64>,
    /// Called computation ids (fusion bodies, while bodies, …).
    pub called_computation_ids: Vec<i64>,
    /// Send/recv to or from the host.
    pub is_host_transfer: bool,
}

/// One HLO computation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HloComputation {
    /// Name.
    pub name: String,
    /// Id.
    pub id: i64,
    /// Root instruction id.
    pub root_id: i64,
    /// Whether it is a fusion body.
    pub is_fusion_computation: bool,
    /// Instructions in dependency order.
    pub instructions: Vec<HloInstruction>,
}

/// One HLO module (an XLA program).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
}

fn convert_shape(s: wire::ShapeProto) -> Shape {
    Shape {
        element_type: s.element_type,
        dimensions: s.dimensions,
        tuple_shapes: s.tuple_shapes.into_iter().map(convert_shape).collect(),
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
                instructions: c
                    .instructions
                    .into_iter()
                    .map(|i| {
                        let md = i.metadata.unwrap_or_default();
                        HloInstruction {
                            name: i.name,
                            opcode: i.opcode,
                            shape: convert_shape(i.shape.unwrap_or_default()),
                            metadata: OpMetadata {
                                op_type: md.op_type,
                                op_name: md.op_name,
                                source_file: md.source_file,
                                source_line: md.source_line,
                            },
                            fusion_kind: i.fusion_kind,
                            custom_call_target: i.custom_call_target,
                            id: i.id,
                            operand_ids: i.operand_ids,
                            called_computation_ids: i.called_computation_ids,
                            is_host_transfer: i.is_host_transfer,
                        }
                    })
                    .collect(),
            })
            .collect(),
    })
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
                        metadata: Some(wire::OpMetadata {
                            op_type: "dot_general".into(),
                            op_name: "jit(step)/transpose(jvp(f))/dot_general".into(),
                            ..Default::default()
                        }),
                        id: 3,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            }),
        };
        let m = decode_hlo_proto(&proto.encode_to_vec()).unwrap();
        assert_eq!(m.name, "jit_step");
        assert_eq!(m.computations[0].instructions[0].metadata.op_type, "dot_general");
        assert!(decode_hlo_proto(&[0xff, 0xff, 0xff]).is_err());
    }
}
