//! Numbers and strings as XProf's C++ prints them: C's `printf("%.Ng")` and `"%.Nf"`
//! (glibc), tsl's `OneDigit`/`TwoDigits`/`ThreeDigits`, absl's `StrCat(double)` and
//! `CEscape`. The one place number text is formatted the way XProf's C++ does.

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

/// `snprintf("%.<decimals>f")` as glibc prints it: `nan`/`-nan`/`inf`/`-inf` for
/// non-finite values, ties to even on the exact binary value (as Rust does).
pub fn printf_fixed(v: f64, decimals: usize) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan".into() } else { "nan".into() };
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf".into() } else { "inf".into() };
    }
    format!("{v:.decimals$}")
}

/// `tsl::profiler::FormatDouble`: printf into a 32-byte buffer, so at most 31 characters.
fn format_double_buffered(v: f64, decimals: usize) -> String {
    let mut text = printf_fixed(v, decimals);
    text.truncate(31);
    text
}

/// `tsl::profiler::OneDigit` (`%.1f`).
pub fn one_digit(v: f64) -> String {
    format_double_buffered(v, 1)
}

/// `tsl::profiler::TwoDigits` (`%.2f`).
pub fn two_digits(v: f64) -> String {
    format_double_buffered(v, 2)
}

/// `tsl::profiler::ThreeDigits` (`%.3f`).
pub fn three_digits(v: f64) -> String {
    format_double_buffered(v, 3)
}

/// `absl::StrCat(double)`: six significant digits like `%.6g` (`4.90776e+13`, `0.5`,
/// `100`), `nan`, `inf`/`-inf`.
pub fn six_digits(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf".into() } else { "inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // Scientific rendering at six significant digits tells the decimal exponent after
    // rounding, which picks %g's style.
    let scientific = format!("{v:.5e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..6).contains(&exponent) {
        let mantissa = strip_zeros(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
    } else {
        let decimals = usize::try_from(5 - exponent).unwrap_or(0);
        strip_zeros(&format!("{v:.decimals$}")).to_string()
    }
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
    fn formats_like_printf_and_absl() {
        assert_eq!(one_digit(0.25), "0.2");
        assert_eq!(two_digits(0.125), "0.12");
        assert_eq!(three_digits(f64::INFINITY), "inf");
        assert_eq!(one_digit(1e300).len(), 31);
        assert_eq!(printf_fixed(-f64::NAN, 1), "-nan");
        assert_eq!(six_digits(49077649552010.0), "4.90776e+13");
        assert_eq!(six_digits(0.5), "0.5");
        assert_eq!(six_digits(100.0), "100");
        assert_eq!(six_digits(123456.7), "123457");
        assert_eq!(six_digits(999999.7), "1e+06");
        assert_eq!(six_digits(0.0001234567), "0.000123457");
        assert_eq!(six_digits(0.00001234567), "1.23457e-05");
    }

    #[test]
    fn c_escape_like_absl() {
        assert_eq!(c_escape("a\"b'\n\u{1}é"), "a\\\"b\\'\\n\\001\\303\\251");
    }
}
