//! Tables for people: the first DataTable of a tool's JSON output as Markdown (CSV like
//! XProf's `/data_csv` is `oxprof_analysis::tools::csv`).

use serde_json::Value;

/// The first DataTable in a tool's JSON: the value itself, or the first element of an
/// array that has `cols`.
pub fn first_table(json: &Value) -> Option<&Value> {
    match json {
        Value::Object(m) if m.contains_key("cols") => Some(json),
        Value::Array(items) => items.iter().find(|t| t.get("cols").is_some()),
        _ => None,
    }
}

fn cell_text(cell: &Value) -> String {
    let v = cell.get("v").unwrap_or(&Value::Null);
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    }
}

fn labels(table: &Value) -> Vec<String> {
    table["cols"]
        .as_array()
        .map(|cols| {
            cols.iter()
                .map(|c| c["label"].as_str().or_else(|| c["id"].as_str()).unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn rows(table: &Value) -> Vec<Vec<String>> {
    table["rows"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|r| r["c"].as_array().map(|cells| cells.iter().map(cell_text).collect()).unwrap_or_default())
                .collect()
        })
        .unwrap_or_default()
}

/// A GitHub-flavoured Markdown table.
pub fn to_markdown(table: &Value) -> String {
    let esc = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let labels = labels(table);
    let mut out = format!("| {} |\n", labels.iter().map(|l| esc(l)).collect::<Vec<_>>().join(" | "));
    out.push_str(&format!("|{}\n", "---|".repeat(labels.len().max(1))));
    for row in rows(table) {
        out.push_str(&format!("| {} |\n", row.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_the_first_table() {
        let json = json!([{}, {"cols": [{"id": "a", "label": "A", "type": "string"}, {"id": "b", "label": "B|x", "type": "number"}],
            "rows": [{"c": [{"v": "x\"y"}, {"v": 1.5}]}]}]);
        let t = first_table(&json).unwrap();
        assert_eq!(to_markdown(t), "| A | B\\|x |\n|---|---|\n| x\"y | 1.5 |\n");
    }
}
