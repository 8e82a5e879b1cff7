//! What kind of model a profile ran, from the framework ops behind its HLO instructions
//! (XProf's `ModelTracker`): whether it trains (gradients seen) or only runs inference.

use oxprof_grouping::tf_op::{is_jax_op_type, is_tf_op_name, is_tf_op_type, parse_tf_name_scopes};
use oxprof_hlo::HloModule;

/// Facts gathered from op names and types.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelTracker {
    has_tf_gradients_op: bool,
    has_tf_gradient_tape_op: bool,
    has_jax_transpose_namescope: bool,
}

/// `IsJaxOpNameAndType`: a JAX op type whose name's last scope mentions it.
fn is_jax_op_name_and_type(op_name: &str, op_type: &str) -> bool {
    !op_name.is_empty()
        && is_jax_op_type(op_type)
        && op_name.rsplit('/').next().is_some_and(|last| last.contains(op_type))
}

impl ModelTracker {
    /// Looks at one framework op (`ModelTracker::ProcessOp`).
    pub fn process_op(&mut self, op_name: &str, op_type: &str) {
        if is_tf_op_type(op_type) && is_tf_op_name(op_name) {
            self.process_tf_op(op_name);
        } else if is_jax_op_name_and_type(op_name, op_type) || op_type.is_empty() {
            // JAX HLOs sometimes lack op_type: the name alone is checked then.
            self.process_jax_op(op_name);
        }
    }

    /// TF gradients: a name scope `gradient_tape` or `gradients*` (`gradients_2`, …).
    fn process_tf_op(&mut self, op_name: &str) {
        if self.has_tf_gradient_tape_op && self.has_tf_gradients_op {
            return;
        }
        for scope in parse_tf_name_scopes(op_name) {
            if let Some(rest) = scope.strip_prefix("gradient") {
                if rest == "_tape" {
                    self.has_tf_gradient_tape_op = true;
                } else if rest.starts_with('s') {
                    self.has_tf_gradients_op = true;
                }
            }
        }
    }

    /// JAX gradients: a name scope starting `transpose(` (as in `transpose(jvp(f))`), not
    /// a plain `transpose[permutation=…]`.
    fn process_jax_op(&mut self, op_name: &str) {
        if !self.has_jax_transpose_namescope && op_name.split('/').any(|s| s.starts_with("transpose(")) {
            self.has_jax_transpose_namescope = true;
        }
    }

    /// Looks at every instruction of a module.
    pub fn process_module(&mut self, module: &HloModule) {
        for instruction in module.computations.iter().flat_map(|c| &c.instructions) {
            self.process_op(&instruction.metadata.op_name, &instruction.metadata.op_type);
        }
    }

    /// `GetTaskType`: `Training` when gradients were seen, else `Inference`.
    pub fn task_type(&self) -> &'static str {
        if self.is_training() { "Training" } else { "Inference" }
    }

    /// Whether gradients were computed, i.e. the model trains.
    pub fn is_training(&self) -> bool {
        self.has_tf_gradients_op || self.has_tf_gradient_tape_op || self.has_jax_transpose_namescope
    }
}

/// Whether any module trains (XProf stops at the first training module).
pub fn any_module_trains<'a>(modules: impl IntoIterator<Item = &'a HloModule>) -> bool {
    modules.into_iter().any(|m| {
        let mut tracker = ModelTracker::default();
        tracker.process_module(m);
        tracker.is_training()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_gradients() {
        let mut t = ModelTracker::default();
        t.process_op("model/dense/MatMul", "MatMul");
        assert!(!t.is_training());
        t.process_op("gradient_tape/model/dense/MatMul", "MatMul");
        assert!(t.is_training());
        let mut t = ModelTracker::default();
        t.process_op("jit(f)/transpose[permutation=(1, 0)]", "transpose");
        assert!(!t.is_training());
        t.process_op("jit(f)/transpose(jvp(loss))/dot_general", "dot_general");
        assert!(t.is_training());
        let mut t = ModelTracker::default();
        t.process_op("gradients_2/x/Mul", "Mul");
        assert!(t.is_training());
    }
}
