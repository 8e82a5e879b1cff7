//! XProf's HLO module map ([`oxprof_hlo::HloModuleMap`]) as the analyses read it: the
//! [`HloModuleLookup`] and [`HloInstruction`] seams of the device op metrics and kernel
//! statistics (their tests pass fakes through the same seams).
//!
//! The map itself, XLA's GPU cost analysis and XLA's printers (the HLO graph dumper's DOT:
//! [`oxprof_hlo::render_dot`]) live in `oxprof-hlo`.

use crate::op_stats::device_op_metrics::{HloInstruction, HloModuleLookup, HloPerformance, HloSourceInfo};
use oxprof_hlo::{HloModuleMap, InstructionView};

impl HloInstruction for InstructionView {
    fn name(&self) -> &str {
        InstructionView::name(self)
    }

    fn category(&self) -> &str {
        InstructionView::category(self)
    }

    fn is_parameter_or_tuple(&self) -> bool {
        InstructionView::is_parameter_or_tuple(self)
    }

    fn tf_op_name(&self) -> &str {
        InstructionView::tf_op_name(self)
    }

    fn op_full_name(&self) -> &str {
        InstructionView::op_full_name(self)
    }

    fn deduplicated_name(&self) -> &str {
        InstructionView::deduplicated_name(self)
    }

    fn expression(&self) -> &str {
        InstructionView::expression(self)
    }

    fn source_info(&self) -> HloSourceInfo {
        InstructionView::source_info(self)
    }

    fn flops(&self) -> u64 {
        InstructionView::flops(self)
    }

    fn bytes_accessed(&self) -> u64 {
        InstructionView::bytes_accessed(self)
    }

    fn performance(&self) -> Option<HloPerformance> {
        InstructionView::performance(self)
    }

    fn fused_children(&self) -> Vec<&dyn HloInstruction> {
        InstructionView::fused_children(self).iter().map(|c| c as &dyn HloInstruction).collect()
    }
}

impl HloModuleLookup for HloModuleMap {
    fn instruction(&self, program_id: u64, name: &str) -> Option<&dyn HloInstruction> {
        self.view(program_id, name).map(|v| v as &dyn HloInstruction)
    }
}

#[cfg(test)]
mod tests;
