//! Tables for people: the DataTables of a tool's JSON output as Markdown (CSV like
//! XProf's `/data_csv` is `oxprof_wire::csv`).

use serde_json::Value;

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

/// XProf's HTML in text (links in advice, line breaks) as Markdown: `<a href="U" …>T</a>`
/// becomes `[T](U)`, `<br>` a space; other text is left as it is.
fn html_to_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        let link = tail.strip_prefix("<a ").and_then(|after| {
            let open_end = after.find('>')?;
            let href = after[..open_end].split("href=\"").nth(1)?.split('"').next()?;
            let body = &after[open_end + 1..];
            let close = body.find("</a>")?;
            Some((format!("[{}]({href})", &body[..close]), 3 + open_end + 1 + close + 4))
        });
        if let Some((markdown, consumed)) = link {
            out.push_str(&markdown);
            rest = &tail[consumed..];
        } else if let Some(after) = ["<br>", "<br/>", "<br />"].iter().find_map(|br| tail.strip_prefix(br)) {
            out.push(' ');
            rest = after;
        } else {
            out.push('<');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// A GitHub-flavoured Markdown table of a DataTable.
pub fn to_markdown(table: &Value) -> String {
    let labels = labels(table);
    let header: Vec<&str> = labels.iter().map(String::as_str).collect();
    markdown_table(&header, &rows(table))
}

/// A GitHub-flavoured Markdown table from a header and rows of cell texts (HTML links as
/// Markdown links, `|` escaped, line breaks as spaces).
pub fn markdown_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let esc = |s: &str| html_to_markdown(s).replace('|', "\\|").replace('\n', " ");
    let mut out = format!("| {} |\n", header.iter().map(|l| esc(l)).collect::<Vec<_>>().join(" | "));
    out.push_str(&format!("|{}\n", "---|".repeat(header.len().max(1))));
    for row in rows {
        out.push_str(&format!("| {} |\n", row.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")));
    }
    out
}

/// Property values with at least this many words read as sentences.
const SENTENCE_WORDS: usize = 5;

/// Every DataTable of a tool's JSON (a table, or an array of them) as Markdown: each
/// table's custom properties as a list (empty values left out; sentences such as XProf's
/// conclusions and advice first, then the figures in key order), then its rows. Tables
/// with neither are skipped.
pub fn all_to_markdown(json: &Value) -> String {
    let tables: Vec<&Value> = match json {
        Value::Array(items) => items.iter().filter(|t| t.get("cols").is_some()).collect(),
        Value::Object(m) if m.contains_key("cols") => vec![json],
        _ => Vec::new(),
    };
    let mut parts = Vec::new();
    for table in tables {
        let mut part = String::new();
        if let Some(props) = table.get("p").and_then(Value::as_object) {
            let mut items: Vec<(&String, String)> = props
                .iter()
                .map(|(key, value)| (key, value.as_str().map_or_else(|| value.to_string(), str::to_string)))
                .filter(|(_, text)| !text.is_empty())
                .collect();
            // Stable: sentences keep their key order among themselves, as do figures.
            items.sort_by_key(|(_, text)| text.split_whitespace().count() < SENTENCE_WORDS);
            for (key, text) in items {
                part.push_str(&format!("- **{key}**: {}\n", html_to_markdown(&text).replace('\n', " ")));
            }
        }
        if table["rows"].as_array().is_some_and(|r| !r.is_empty()) {
            if !part.is_empty() {
                part.push('\n');
            }
            part.push_str(&to_markdown(table));
        }
        if !part.is_empty() {
            parts.push(part);
        }
    }
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_the_first_table() {
        let json = json!([{}, {"cols": [{"id": "a", "label": "A", "type": "string"}, {"id": "b", "label": "B|x", "type": "number"}],
            "rows": [{"c": [{"v": "x\"y"}, {"v": 1.5}]}]}]);
        let t = oxprof_wire::csv::first_table(&json).unwrap();
        assert_eq!(to_markdown(t), "| A | B\\|x |\n|---|---|\n| x\"y | 1.5 |\n");
        let with_props = json!([{"cols": [], "rows": [], "p": {"verdict": "input-bound", "empty": ""}}, t]);
        let md = all_to_markdown(&with_props);
        assert!(md.starts_with("- **verdict**: input-bound\n\n| A |"), "{md}");
    }

    #[test]
    fn sentences_come_first_and_links_become_markdown() {
        let json = json!({"cols": [], "rows": [], "p": {
            "a_figure": "1.5",
            "b_conclusion": "Your program is HIGHLY input-bound because of <b>this</b>.",
            "c_advice": "Try <a href=\"https://x.org/map\" target=\"_blank\">Dataset map()</a> or<br/>more <a bad",
        }});
        assert_eq!(
            all_to_markdown(&json),
            "- **b_conclusion**: Your program is HIGHLY input-bound because of <b>this</b>.\n\
             - **c_advice**: Try [Dataset map()](https://x.org/map) or more <a bad\n\
             - **a_figure**: 1.5\n"
        );
    }
}
