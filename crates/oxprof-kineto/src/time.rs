//! Microsecond timestamps as Chrome traces write them (`"ts": 4458676522690.655`) into
//! integer picoseconds, from the decimal text: an `f64` holds 15–16 significant digits, so
//! an epoch-based microsecond timestamp (16 digits before the point, 3 after) would lose
//! its nanoseconds through a float. Exponent forms fall back to `f64` (they carry no more
//! precision than that anyway).

/// Picoseconds per microsecond.
const PS_PER_US: i128 = 1_000_000;

/// A number of microseconds (decimal text) as picoseconds; `None` for text that is not a
/// finite number. Digits past the picosecond are truncated.
pub(crate) fn us_text_to_ps(text: &[u8]) -> Option<i128> {
    let (negative, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let mut int: u64 = 0;
    let mut i = 0;
    // Up to 19 digits cannot overflow a u64: no checks in the loop.
    while let Some(&d) = digits.get(i) {
        if !d.is_ascii_digit() {
            break;
        }
        if i == 19 {
            return float_fallback(text);
        }
        int = int * 10 + u64::from(d - b'0');
        i += 1;
    }
    let mut any = i > 0;
    // Up to 6 fractional digits are picoseconds; later ones are truncated.
    let mut frac: u64 = 0;
    let mut frac_digits = 0u32;
    if digits.get(i) == Some(&b'.') {
        i += 1;
        while let Some(&d) = digits.get(i) {
            if !d.is_ascii_digit() {
                break;
            }
            if frac_digits < 6 {
                frac = frac * 10 + u64::from(d - b'0');
                frac_digits += 1;
            }
            any = true;
            i += 1;
        }
    }
    if i != digits.len() {
        return float_fallback(text);
    }
    if !any {
        return None;
    }
    let frac = frac * 10u64.pow(6 - frac_digits);
    let ps = i128::from(int) * PS_PER_US + i128::from(frac);
    Some(if negative { -ps } else { ps })
}

#[cold]
fn float_fallback(text: &[u8]) -> Option<i128> {
    let v: f64 = std::str::from_utf8(text).ok()?.parse().ok()?;
    let ps = v * 1e6;
    // i128 holds far more than any timestamp; refuse what it cannot hold.
    (ps.is_finite() && ps.abs() < 1e36).then(|| ps.round() as i128)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_text_keeps_every_digit() {
        let t = |s: &str| us_text_to_ps(s.as_bytes());
        assert_eq!(t("4458676522690.655"), Some(4_458_676_522_690_655_000));
        // 16 digits before the point: an f64 would round the nanoseconds away.
        assert_eq!(t("1623142623460111.123"), Some(1_623_142_623_460_111_123_000));
        assert_eq!(t("0.000001"), Some(1));
        assert_eq!(t("0.0000019"), Some(1)); // below a picosecond: truncated
        assert_eq!(t("-2.5"), Some(-2_500_000));
        assert_eq!(t("+7"), Some(7_000_000));
        assert_eq!(t("12."), Some(12_000_000));
        assert_eq!(t(".5"), Some(500_000));
        assert_eq!(t("1.5e3"), Some(1_500_000_000));
        for bad in ["", "-", ".", "NaN", "Infinity", "-Infinity", "1e400", "abc", "1.2.3"] {
            assert_eq!(t(bad), None, "{bad}");
        }
        // More digits than u64 holds: through a float (still finite).
        assert!(t("123456789012345678901234").is_some());
    }
}
