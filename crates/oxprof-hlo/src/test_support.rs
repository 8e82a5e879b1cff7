//! Hand-built HLO for tests.

/// An f32 array shape with the default (major-to-minor) layout, for hand-built HLO.
pub(crate) fn f32_shape(dims: &[i64]) -> crate::Shape {
    let layout = crate::Layout { minor_to_major: (0..dims.len() as i64).rev().collect(), ..Default::default() };
    crate::Shape {
        element_type: crate::primitive::F32,
        dimensions: dims.to_vec(),
        layout: Some(layout),
        ..Default::default()
    }
}

/// A hand-built HLO instruction.
pub(crate) fn hlo_instr(
    name: &str,
    opcode: &str,
    id: i64,
    operands: &[i64],
    shape: crate::Shape,
) -> crate::HloInstruction {
    crate::HloInstruction {
        name: name.into(),
        opcode: opcode.into(),
        id,
        operand_ids: operands.to_vec(),
        shape,
        ..Default::default()
    }
}
