//! JSON string escaping for every dialect: they all write `\"`, `\\`, `\n`, `\r`, `\t`,
//! `\b` and `\f`, and differ only in which other characters they write as `\uXXXX`
//! (UTF-16 units, so characters beyond the BMP become surrogate pairs).

use std::fmt::Write as _;

/// Appends `text` as a quoted JSON string, writing the characters `as_unicode` accepts as
/// `\uXXXX` escapes.
pub(crate) fn write_escaped(out: &mut String, text: &str, as_unicode: impl Fn(char) -> bool) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if as_unicode(c) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Control characters only: what `json.dumps(ensure_ascii=False)` and nlohmann's `dump()`
/// escape beyond the named escapes.
pub(crate) fn is_control(c: char) -> bool {
    (c as u32) < 0x20
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_escapes_then_the_dialects_choice() {
        let mut out = String::new();
        write_escaped(&mut out, "a\"\\\n\r\t\u{8}\u{c}\u{1}é😀<", is_control);
        assert_eq!(out, "\"a\\\"\\\\\\n\\r\\t\\b\\f\\u0001é😀<\"");
        out.clear();
        write_escaped(&mut out, "é😀<", |c| (c as u32) > 0x7e || c == '<');
        assert_eq!(out, "\"\\u00e9\\ud83d\\ude00\\u003c\"");
    }
}
