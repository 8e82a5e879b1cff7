//! Hand-built HLO for tests.

/// An f32 array shape with the default (major-to-minor) layout, for hand-built HLO.
pub fn f32_shape(dims: &[i64]) -> oxprof_hlo::Shape {
    let layout = oxprof_hlo::Layout { minor_to_major: (0..dims.len() as i64).rev().collect(), ..Default::default() };
    oxprof_hlo::Shape {
        element_type: oxprof_hlo::primitive::F32,
        dimensions: dims.to_vec(),
        layout: Some(layout),
        ..Default::default()
    }
}

/// A hand-built HLO instruction.
pub fn hlo_instr(
    name: &str,
    opcode: &str,
    id: i64,
    operands: &[i64],
    shape: oxprof_hlo::Shape,
) -> oxprof_hlo::HloInstruction {
    oxprof_hlo::HloInstruction {
        name: name.into(),
        opcode: opcode.into(),
        id,
        operand_ids: operands.to_vec(),
        shape,
        ..Default::default()
    }
}
