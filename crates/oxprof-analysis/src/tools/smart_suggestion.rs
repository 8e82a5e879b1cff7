//! The `smart_suggestion` tool's report: XProf's `SmartSuggestionReport` as its processor
//! prints it (protobuf JSON with every field). XProf 2.24.2's open-source build registers
//! one rule, `BarrierCoresRule` (`xprof/convert/smart_suggestion/all_rules.h`,
//! `RegisterAllRulesFor3P`), which needs `barrier-cores` events; a run without any gets no
//! suggestion. The rule and its event-time-fraction analysis are in `event_time_fraction.rs`.

use crate::report::{ColumnKind, NumberFormat, Report, Table, XprofBody, json_of};
use oxprof_model::XSpace;
use oxprof_wire::datatable::CellValue;
use oxprof_wire::protobuf_json::{self, Field};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The event name `BarrierCoresRule` measures (matched as a substring of event names).
pub const BARRIER_CORES: &str = "barrier-cores";

/// Whether any plane of `space` names an event kind containing `barrier-cores` (the only
/// events XProf 2.24.2's open-source rule set reads).
pub fn mentions_barrier_cores(space: &XSpace) -> bool {
    space.planes.iter().any(|p| p.event_metadata().iter().any(|m| p.str(m.name).contains(BARRIER_CORES)))
}

/// Whether XProf's event-time-fraction analysis finds no `barrier-cores` time in `space`
/// (every such event lies on a TensorCore plane `/device:TPU:<n>` without a `Steps` line,
/// so it belongs to no step). `Err` names the first plane where it could find some (its
/// step analysis is not ported).
pub fn barrier_cores_time_is_nil(space: &XSpace) -> Result<(), String> {
    for plane in &space.planes {
        let any = plane.lines.iter().any(|l| l.events(plane).any(|e| e.name().contains(BARRIER_CORES)));
        if !any {
            continue;
        }
        let tensor_core = plane
            .name
            .strip_prefix("/device:TPU:")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if !tensor_core || plane.lines.iter().any(|l| l.name == "Steps") {
            return Err(plane.name.clone());
        }
    }
    Ok(())
}

/// `SmartSuggestionReport` and `SmartSuggestion` in field-number order.
const SUGGESTION: protobuf_json::Message =
    protobuf_json::Message { fields: &[("ruleName", Field::Scalar), ("suggestionText", Field::Scalar)] };
const REPORT: protobuf_json::Message =
    protobuf_json::Message { fields: &[("suggestions", Field::Message(&SUGGESTION))] };

/// XProf's `SmartSuggestionReport`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SmartSuggestionReport {
    /// Suggestions, in rule order.
    pub suggestions: Vec<SmartSuggestion>,
}

/// One suggestion.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SmartSuggestion {
    /// The rule that made it.
    pub rule_name: String,
    /// What to do, as HTML.
    pub suggestion_text: String,
}

impl Report for SmartSuggestionReport {
    fn xprof_body(&self) -> XprofBody {
        // MessageToJsonString: lowerCamelCase names, no spaces.
        let suggestions: Vec<Value> = self
            .suggestions
            .iter()
            .map(|s| json!({"ruleName": s.rule_name, "suggestionText": s.suggestion_text}))
            .collect();
        // protobuf's escapes (`<` `>` as `\u003c` `\u003e`); keys in field order.
        XprofBody::json(protobuf_json::print(&json!({ "suggestions": suggestions }), Some(&REPORT)))
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    fn tables(&self) -> Vec<Table> {
        let mut table = Table::new("suggestions")
            .column("rule_name", "Rule", ColumnKind::Text, NumberFormat::Shortest)
            .column("suggestion_text", "Suggestion (HTML)", ColumnKind::Text, NumberFormat::Shortest);
        for s in &self.suggestions {
            table.push_row(vec![CellValue::Text(s.rule_name.clone()), CellValue::Text(s.suggestion_text.clone())]);
        }
        vec![table]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn barrier_cores_without_steps_take_no_step_time() {
        use oxprof_model::ModelBuilder;
        // /device:TPU:0  XLA Ops: |barrier-cores|   (no Steps line: in no step)
        let no_steps = ModelBuilder::new()
            .plane("/device:TPU:0", |p| {
                p.line(1, "XLA Ops", 0, |l| {
                    l.event("barrier-cores.1", 0, 10);
                });
            })
            .build()
            .unwrap();
        assert!(mentions_barrier_cores(&no_steps));
        assert_eq!(barrier_cores_time_is_nil(&no_steps), Ok(()));
        // The same with a Steps line: the analysis would need XProf's TPU steps.
        let steps = ModelBuilder::new()
            .plane("/device:TPU:0", |p| {
                p.line(1, "Steps", 0, |l| {
                    l.event("1", 0, 100);
                });
                p.line(2, "XLA Ops", 0, |l| {
                    l.event("barrier-cores.1", 0, 10);
                });
            })
            .build()
            .unwrap();
        assert_eq!(barrier_cores_time_is_nil(&steps), Err("/device:TPU:0".to_string()));
    }

    #[test]
    fn an_empty_report_prints_as_xprof_does() {
        assert_eq!(SmartSuggestionReport::default().xprof_body().text, r#"{"suggestions":[]}"#);
    }
}
