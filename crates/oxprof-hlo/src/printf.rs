//! C-style number and string formats that XProf's outputs depend on: `printf("%.Ng")`,
//! protobuf's `SimpleDtoa` (its JSON printer's doubles) and protobuf's JSON string escapes.
//! One implementation for every tool that must print numbers byte for byte as XProf does.

use std::fmt::Write;

/// C's `printf("%.{precision}g", value)` for finite values: `precision` significant digits
/// (at least 1), trailing zeros removed, scientific (`1.5e-06`, `2e+17`) when the exponent
/// after rounding is below -4 or not below `precision`.
pub fn format_g(value: f64, precision: usize) -> String {
    let precision = precision.max(1);
    if value == 0.0 {
        return if value.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // Rust rounds the exact binary value like glibc's printf; the exponent after rounding
    // picks the style.
    let scientific = format!("{:.*e}", precision - 1, value);
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if exponent < -4 || exponent >= precision as i32 {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip_zeros(mantissa), exponent.unsigned_abs())
    } else {
        let decimals = usize::try_from(precision as i32 - 1 - exponent).unwrap_or(0);
        strip_zeros(&format!("{value:.decimals$}")).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.') } else { s }
}

/// absl's `CEscape`: C escapes for `\n`, `\t`, `\r`, `\\`, `"`, `'` and octal escapes for
/// non-printable bytes (how XLA prints string attributes).
pub fn c_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    c_escape_into(s.as_bytes(), &mut out);
    out
}

/// [`c_escape`] on bytes, appended to `out` (protobuf's text format escapes `bytes` fields
/// the same way).
pub fn c_escape_into(bytes: &[u8], out: &mut String) {
    for &b in bytes {
        match b {
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\'' => out.push_str("\\'"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{b:03o}");
            }
        }
    }
}

/// protobuf's `SimpleDtoa` as its JSON printer writes doubles: `%.15g` when that reads back
/// as the same double, else `%.17g`; non-finite values as the quoted strings `"NaN"`,
/// `"Infinity"`, `"-Infinity"`.
pub fn proto_json_double(value: f64) -> String {
    if value.is_nan() {
        return "\"NaN\"".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "\"Infinity\"".into() } else { "\"-Infinity\"".into() };
    }
    let short = format_g(value, 15);
    if short.parse::<f64>().ok() == Some(value) { short } else { format_g(value, 17) }
}

/// Appends `text` as a JSON string with protobuf's JSON printer escapes (control
/// characters, `<`, `>`, U+2028 and U+2029 as `\uXXXX`).
pub fn write_proto_json_string(out: &mut String, text: &str) {
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
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_g_matches_printf() {
        assert_eq!(format_g(0.03193, 6), "0.03193");
        assert_eq!(format_g(1_795_325_752_204.891, 6), "1.79533e+12");
        assert_eq!(format_g(0.000_012_345_6, 6), "1.23456e-05");
        assert_eq!(format_g(100_000.0, 6), "100000");
        assert_eq!(format_g(1_000_000.0, 6), "1e+06");
        assert_eq!(format_g(-0.0, 6), "-0");
        assert_eq!(format_g(0.00048828125, 9), "0.00048828125");
        assert_eq!(format_g(466688986.0, 9), "466688986");
        assert_eq!(format_g(1.0, 0), "1");
    }

    #[test]
    fn proto_doubles_round_trip_like_simple_dtoa() {
        assert_eq!(proto_json_double(0.069_671_487_717_328_98), "0.069671487717328978");
        assert_eq!(proto_json_double(8.142_000_327_721_873e-6), "8.142000327721873e-06");
        assert_eq!(proto_json_double(f64::NAN), "\"NaN\"");
        assert_eq!(proto_json_double(f64::NEG_INFINITY), "\"-Infinity\"");
    }

    #[test]
    fn c_escape_like_absl() {
        assert_eq!(c_escape("a\"b'\n\u{1}é"), "a\\\"b\\'\\n\\001\\303\\251");
    }

    #[test]
    fn proto_strings_escape_html_and_controls() {
        let mut out = String::new();
        write_proto_json_string(&mut out, "a<b>\"\u{1}\u{2028}é");
        assert_eq!(out, "\"a\\u003cb\\u003e\\\"\\u0001\\u2028é\"");
    }
}
