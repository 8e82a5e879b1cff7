//! JSON string escaping for every dialect: they all write `\"`, `\\`, `\n`, `\r`, `\t`,
//! `\b` and `\f`, and differ only in which other characters they write as `\uXXXX`
//! (UTF-16 units, so characters beyond the BMP become surrogate pairs).

use std::fmt::Write as _;

/// Appends `text` as a quoted JSON string, writing the characters `as_unicode` accepts as
/// `\uXXXX` escapes. Runs of characters written as they are are copied whole (most text
/// has nothing to escape).
pub(crate) fn write_escaped(out: &mut String, text: &str, as_unicode: impl Fn(char) -> bool) {
    out.push('"');
    let bytes = text.as_bytes();
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        let (c, len) = match bytes[i] {
            b if b < 0x80 => (char::from(b), 1),
            _ => match text[i..].chars().next() {
                Some(c) => (c, c.len_utf8()),
                None => break,
            },
        };
        let named = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            '\u{8}' => "\\b",
            '\u{c}' => "\\f",
            c if as_unicode(c) => "",
            _ => {
                i += len;
                continue;
            }
        };
        out.push_str(&text[start..i]);
        if named.is_empty() {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push_str(named);
        }
        i += len;
        start = i;
    }
    out.push_str(&text[start..]);
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
