//! Python's `json.dumps(value, sort_keys=True)`, as XProf's Python server writes its
//! listing routes (`/runs`, `/run_tools`, `/hosts`, `/config`): `", "` and `": "`
//! separators, keys sorted, non-ASCII escaped as `\uXXXX` (UTF-16 units).

use serde_json::Value;

/// `json.dumps(value, sort_keys=True)`.
pub fn dumps_sorted(value: &Value) -> String {
    let mut out = String::new();
    write_value(value, &mut out);
    out
}

fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_string(key, out);
                out.push_str(": ");
                if let Some(v) = map.get(key) {
                    write_value(v, out);
                }
            }
            out.push('}');
        }
        Value::String(s) => write_string(s, out),
        other => out.push_str(&other.to_string()),
    }
}

/// `json.dumps` with `ensure_ascii=True`: everything outside printable ASCII as `\uXXXX`.
fn write_string(s: &str, out: &mut String) {
    crate::json_string::write_escaped(out, s, |c| !(' '..='~').contains(&c));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matches_xprof_listing_bodies() {
        let v = json!({"srcPathPrefix": null, "enableTabNameLabel": false, "hideCaptureProfileButton": false});
        assert_eq!(
            dumps_sorted(&v),
            r#"{"enableTabNameLabel": false, "hideCaptureProfileButton": false, "srcPathPrefix": null}"#
        );
        assert_eq!(dumps_sorted(&json!(["a", "é", "\u{1F600}"])), r#"["a", "\u00e9", "\ud83d\ude00"]"#);
        assert_eq!(dumps_sorted(&json!([{"hostname": "vm"}])), r#"[{"hostname": "vm"}]"#);
    }
}
