//! The `smart_suggestion` tool's report: XProf's `SmartSuggestionReport` as its processor
//! prints it (protobuf JSON with every field). XProf 2.24.2's open-source build registers
//! one rule, `BarrierCoresRule` (`xprof/convert/smart_suggestion/all_rules.h`,
//! `RegisterAllRulesFor3P`), which needs `barrier-cores` events; a run without any gets no
//! suggestion. The rule and its event-time-fraction analysis are in `event_time_fraction.rs`.

use oxprof_model::XSpace;
use oxprof_report::{ColumnKind, NumberFormat, Report, Table, XprofBody, json_of};
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
    fn an_empty_report_prints_as_xprof_does() {
        assert_eq!(SmartSuggestionReport::default().xprof_body().text, r#"{"suggestions":[]}"#);
    }
}
