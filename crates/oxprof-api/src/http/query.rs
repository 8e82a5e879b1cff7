//! URL query strings: `application/x-www-form-urlencoded` decoding (as werkzeug's
//! `request.args`), and the checks every name-like parameter goes through.

use super::HttpError;

/// Decoded query parameters in URL order; the first occurrence of a name wins, as with
/// werkzeug's `request.args.get`.
#[derive(Debug, Clone, Default)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Parses a raw query string (without the `?`). Malformed percent escapes or bytes
    /// that are not UTF-8 after decoding are a 400.
    pub fn parse(raw: &str) -> Result<Query, HttpError> {
        let mut pairs = Vec::new();
        for part in raw.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = part.split_once('=').unwrap_or((part, ""));
            let name = decode_component(name)?;
            let value =
                decode_component(value).map_err(|_| HttpError::bad_parameter(&name, "malformed percent-encoding"))?;
            pairs.push((name, value));
        }
        Ok(Query { pairs })
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The first value of `name`, treating an empty value as absent.
    pub fn get_nonempty(&self, name: &str) -> Option<&str> {
        self.get(name).filter(|v| !v.is_empty())
    }

    /// All pairs, first occurrence of each name only, in URL order.
    pub fn unique_pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs
            .iter()
            .enumerate()
            .filter(|(i, (k, _))| !self.pairs[..*i].iter().any(|(earlier, _)| earlier == k))
            .map(|(_, (k, v))| (k.as_str(), v.as_str()))
    }

    /// XProf's `_get_bool_arg`: `true` (any case) is true, anything else false, absent → default.
    pub fn bool_arg(&self, name: &str, default: bool) -> bool {
        self.get(name).map_or(default, |v| v.eq_ignore_ascii_case("true"))
    }
}

/// Decodes one form component: `+` is a space, `%XX` a byte; the result must be UTF-8.
fn decode_component(raw: &str) -> Result<String, HttpError> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
                    .and_then(|h| std::str::from_utf8(h).ok());
                let byte = hex.and_then(|h| u8::from_str_radix(h, 16).ok());
                match byte {
                    Some(byte) => {
                        out.push(byte);
                        i += 2;
                    }
                    None => return Err(HttpError::bad_request("malformed percent-encoding in the query string")),
                }
            }
            _ => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| HttpError::bad_request("the query string is not UTF-8 after decoding"))
}

/// Longest accepted name-like parameter.
const MAX_NAME_LEN: usize = 1024;

/// Checks a run name: slash-separated components, none empty, `.` or `..`, no
/// backslashes or control characters. Run names are only ever looked up among the
/// discovered runs, never joined to a path; this check rejects traversal attempts early
/// with a clear 400.
pub fn check_run_name(name: &str, value: &str) -> Result<(), HttpError> {
    check_common(name, value)?;
    if value.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return Err(HttpError::bad_parameter(
            name,
            "must be a run name as /runs lists it (no empty, '.' or '..' parts)",
        ));
    }
    Ok(())
}

/// Checks a single-component name (host, tool, module): no `/`, `\`, control characters,
/// and not `.` or `..`.
pub fn check_plain_name(name: &str, value: &str) -> Result<(), HttpError> {
    check_common(name, value)?;
    if value.contains('/') || value == "." || value == ".." {
        return Err(HttpError::bad_parameter(name, "must be a plain name (no '/', '.' or '..')"));
    }
    Ok(())
}

fn check_common(name: &str, value: &str) -> Result<(), HttpError> {
    if value.len() > MAX_NAME_LEN {
        return Err(HttpError::bad_parameter(name, "too long"));
    }
    if value.chars().any(|c| c.is_control() || c == '\\') {
        return Err(HttpError::bad_parameter(name, "contains a control character or a backslash"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_like_werkzeug() {
        let q = Query::parse("run=train%2F2024&tag=trace_viewer%40&x=a+b&run=second&flag").unwrap();
        assert_eq!(q.get("run"), Some("train/2024"));
        assert_eq!(q.get("tag"), Some("trace_viewer@"));
        assert_eq!(q.get("x"), Some("a b"));
        assert_eq!(q.get("flag"), Some(""));
        assert_eq!(q.get_nonempty("flag"), None);
        assert_eq!(q.unique_pairs().count(), 4);
    }

    #[test]
    fn rejects_bad_encodings() {
        assert_eq!(Query::parse("run=%zz").unwrap_err().status, 400);
        assert_eq!(Query::parse("run=%ff%fe").unwrap_err().status, 400);
        assert_eq!(Query::parse("run=%4").unwrap_err().status, 400);
        assert_eq!(Query::parse("run=%+4").unwrap_err().status, 400);
    }

    #[test]
    fn name_checks() {
        assert!(check_run_name("run", "train/2024_01_01").is_ok());
        for bad in ["../x", "a/../b", "/abs", "a//b", "a\\b", "a\0b", ".", "a/"] {
            assert_eq!(check_run_name("run", bad).unwrap_err().status, 400, "{bad:?}");
        }
        assert!(check_plain_name("host", "10.0.0.1_8466").is_ok());
        for bad in ["a/b", "..", ".", "a\\b", "x\ny"] {
            assert_eq!(check_plain_name("host", bad).unwrap_err().status, 400, "{bad:?}");
        }
    }
}
