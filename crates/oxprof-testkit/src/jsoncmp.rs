//! Structural JSON comparison with numeric tolerance, for golden tests against XProf's
//! outputs (a port of `../shared/refkit/jsoncmp.py`): numbers match within a relative
//! tolerance; strings match exactly, or after comparing the numbers inside them at the
//! precision they were printed with ("12.3%" vs "12.3%"); int64 strings of proto JSON match
//! numbers.

use serde_json::Value;

/// Options of a comparison.
#[derive(Debug, Clone, Copy)]
pub struct CmpOptions {
    /// Relative tolerance.
    pub rel: f64,
    /// Absolute tolerance.
    pub abs: f64,
    /// Compare arrays of objects/arrays as multisets.
    pub unordered: bool,
}

impl Default for CmpOptions {
    fn default() -> Self {
        CmpOptions { rel: 1e-6, abs: 1e-9, unordered: false }
    }
}

/// The result: leaves compared, leaves matched, and the differences.
#[derive(Debug, Clone, Default)]
pub struct CmpReport {
    /// Leaves compared.
    pub total: usize,
    /// Leaves equal.
    pub ok: usize,
    /// `(path, expected, actual)` of each difference.
    pub diffs: Vec<(String, String, String)>,
}

impl CmpReport {
    /// True when nothing differs.
    pub fn is_match(&self) -> bool {
        self.diffs.is_empty()
    }

    /// A readable summary with up to `show` differences.
    pub fn summary(&self, show: usize) -> String {
        let mut out = String::new();
        for (p, e, a) in self.diffs.iter().take(show) {
            out.push_str(&format!("DIFF {p}: expected {} got {}\n", clip(e), clip(a)));
        }
        if self.diffs.len() > show {
            out.push_str(&format!("... {} more differences\n", self.diffs.len() - show));
        }
        out.push_str(&format!("match: {}/{} leaves", self.ok, self.total));
        out
    }
}

fn clip(s: &str) -> String {
    if s.len() > 160 { format!("{}…", &s[..s.floor_char_boundary(160)]) } else { s.to_string() }
}

/// Compares `expected` with `actual`.
pub fn compare(expected: &Value, actual: &Value, options: CmpOptions) -> CmpReport {
    let mut c = Cmp { o: options, report: CmpReport::default() };
    c.walk("$", expected, actual);
    c.report
}

struct Cmp {
    o: CmpOptions,
    report: CmpReport,
}

fn count_leaves(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.values().map(count_leaves).sum::<usize>().max(1),
        Value::Array(a) => a.iter().map(count_leaves).sum::<usize>().max(1),
        _ => 1,
    }
}

/// Splits a string into (text pieces, numbers) like `re.split`/`re.findall` with
/// `[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?`.
fn split_numbers(s: &str) -> (Vec<&str>, Vec<&str>) {
    let b = s.as_bytes();
    let (mut texts, mut nums) = (Vec::new(), Vec::new());
    let mut i = 0;
    let mut text_start = 0;
    while i < b.len() {
        if let Some(end) = number_at(b, i) {
            texts.push(&s[text_start..i]);
            nums.push(&s[i..end]);
            i = end;
            text_start = end;
        } else {
            i += 1;
        }
    }
    texts.push(&s[text_start..]);
    (texts, nums)
}

fn number_at(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = i - int_start;
    let mut frac_digits = 0;
    if i < b.len() && b[i] == b'.' {
        let dot = i;
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            frac_digits += 1;
        }
        if int_digits == 0 && frac_digits == 0 {
            i = dot;
        }
    }
    if int_digits == 0 && frac_digits == 0 {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'-' || b[j] == b'+') {
            j += 1;
        }
        let exp_start = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > exp_start {
            i = j;
        }
    }
    Some(i)
}

fn decimals(num: &str) -> usize {
    if num.contains(['e', 'E']) {
        return 0;
    }
    num.split_once('.').map_or(0, |(_, f)| f.len())
}

impl Cmp {
    fn num_eq(&self, a: f64, b: f64, decimals: Option<usize>) -> bool {
        if a.is_nan() && b.is_nan() {
            return true;
        }
        let mut tol = self.o.abs.max(self.o.rel * a.abs().max(b.abs()));
        if let Some(d) = decimals {
            tol = tol.max(0.51 * 10f64.powi(-(d as i32)));
        }
        (a - b).abs() <= tol
    }

    fn str_eq(&self, a: &str, b: &str) -> bool {
        if a == b {
            return true;
        }
        let (ta, na) = split_numbers(a);
        let (tb, nb) = split_numbers(b);
        if ta != tb || na.len() != nb.len() {
            return false;
        }
        na.iter().zip(&nb).all(|(x, y)| match (x.parse::<f64>(), y.parse::<f64>()) {
            (Ok(fx), Ok(fy)) => self.num_eq(fx, fy, Some(decimals(x).min(decimals(y)))),
            _ => x == y,
        })
    }

    fn leaf(&mut self, path: &str, a: &Value, b: &Value) {
        self.report.total += 1;
        let good = match (a, b) {
            (Value::Number(x), Value::Number(y)) => {
                self.num_eq(x.as_f64().unwrap_or(f64::NAN), y.as_f64().unwrap_or(f64::NAN), None)
            }
            (Value::String(x), Value::String(y)) => self.str_eq(x, y),
            (Value::String(s), Value::Number(n)) | (Value::Number(n), Value::String(s)) => {
                s.parse::<f64>().is_ok_and(|v| self.num_eq(v, n.as_f64().unwrap_or(f64::NAN), None))
            }
            _ => a == b,
        };
        if good {
            self.report.ok += 1;
        } else {
            self.report.diffs.push((path.to_string(), a.to_string(), b.to_string()));
        }
    }

    fn walk(&mut self, path: &str, a: &Value, b: &Value) {
        match (a, b) {
            (Value::Object(ma), Value::Object(mb)) => {
                let mut keys: Vec<&String> = ma.keys().chain(mb.keys()).collect();
                keys.sort();
                keys.dedup();
                for k in keys {
                    let p = format!("{path}.{k}");
                    match (ma.get(k), mb.get(k)) {
                        (Some(x), None) => {
                            self.report.total += count_leaves(x);
                            self.report.diffs.push((p, x.to_string(), "<missing>".into()));
                        }
                        (None, Some(y)) => self.report.diffs.push((p, "<absent in expected>".into(), y.to_string())),
                        (Some(x), Some(y)) => self.walk(&p, x, y),
                        (None, None) => {}
                    }
                }
            }
            (Value::Array(va), Value::Array(vb)) => {
                let (mut va, mut vb): (Vec<&Value>, Vec<&Value>) = (va.iter().collect(), vb.iter().collect());
                if self.o.unordered
                    && va.len() == vb.len()
                    && !va.is_empty()
                    && va.iter().all(|r| r.is_object() || r.is_array())
                {
                    va.sort_by_cached_key(|v| v.to_string());
                    vb.sort_by_cached_key(|v| v.to_string());
                }
                for i in 0..va.len().max(vb.len()) {
                    let p = format!("{path}[{i}]");
                    match (va.get(i), vb.get(i)) {
                        (Some(x), None) => {
                            self.report.total += count_leaves(x);
                            self.report.diffs.push((p, "<present>".into(), "<missing>".into()));
                        }
                        (None, Some(_)) => self.report.diffs.push((p, "<absent in expected>".into(), "<extra>".into())),
                        (Some(x), Some(y)) => self.walk(&p, x, y),
                        (None, None) => {}
                    }
                }
            }
            _ => self.leaf(path, a, b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tolerates_printed_precision_and_int64_strings() {
        let o = CmpOptions::default();
        assert!(compare(&json!({"a": "12.3%", "b": 1.0}), &json!({"a": "12.3%", "b": 1.0000000001}), o).is_match());
        assert!(compare(&json!({"a": "1.0 ms"}), &json!({"a": "1.04 ms"}), o).is_match());
        assert!(!compare(&json!({"a": "1.0 ms"}), &json!({"a": "1.1 ms"}), o).is_match());
        assert!(compare(&json!({"n": "123"}), &json!({"n": 123}), o).is_match());
        let r = compare(&json!([1, 2, {"x": 3}]), &json!([1, 5]), o);
        assert_eq!(r.diffs.len(), 2);
        assert_eq!(r.total, 3);
    }

    #[test]
    fn unordered_rows() {
        let o = CmpOptions { unordered: true, ..Default::default() };
        assert!(compare(&json!([{"a": 1}, {"a": 2}]), &json!([{"a": 2}, {"a": 1}]), o).is_match());
    }
}
