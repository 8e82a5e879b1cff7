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

/// [`us_text_to_ps`] of the number at the start of `bytes`, read in one pass, with its
/// length: for plain decimals (`-`, 1 to 18 digits, a fraction) only; `None` for anything
/// else (exponents, signs, long integers), which the general path reads.
#[inline]
pub(crate) fn us_prefix_to_ps(bytes: &[u8]) -> Option<(i128, usize)> {
    let negative = bytes.first() == Some(&b'-');
    let start = usize::from(negative);
    let (int, int_digits) = leading_digits(&bytes[start..]);
    if int_digits == 0 || int_digits > 18 {
        return None;
    }
    let mut i = start + int_digits;
    let mut frac: u64 = 0;
    let mut frac_digits = 0u32;
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        while let Some(&d) = bytes.get(i) {
            if !d.is_ascii_digit() {
                break;
            }
            if frac_digits < 6 {
                frac = frac * 10 + u64::from(d - b'0');
                frac_digits += 1;
            }
            i += 1;
        }
    }
    let ps = i128::from(int) * PS_PER_US + i128::from(frac * 10u64.pow(6 - frac_digits));
    Some((if negative { -ps } else { ps }, i))
}

/// The value of the ASCII digits `bytes` starts with (at most 19 read, so no overflow) and
/// how many there are; eight at a time while eight are there.
#[inline]
pub(crate) fn leading_digits(bytes: &[u8]) -> (u64, usize) {
    let mut value: u64 = 0;
    let mut n = 0;
    while n < 16
        && let Some(chunk) = bytes.get(n..n + 8)
    {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let Some(eight) = eight_digits(u64::from_le_bytes(word)) else { break };
        value = value * 100_000_000 + eight;
        n += 8;
    }
    while n < 19
        && let Some(&d) = bytes.get(n)
        && d.is_ascii_digit()
    {
        value = value * 10 + u64::from(d - b'0');
        n += 1;
    }
    (value, n)
}

/// Eight ASCII digits (little-endian in a word) as their value, `None` unless all eight are
/// digits (Lemire's SWAR conversion, as in fast_float).
#[inline]
fn eight_digits(word: u64) -> Option<u64> {
    let all_digits = ((word & 0xF0F0_F0F0_F0F0_F0F0)
        | (((word.wrapping_add(0x0606_0606_0606_0606)) & 0xF0F0_F0F0_F0F0_F0F0) >> 4))
        == 0x3333_3333_3333_3333;
    if !all_digits {
        return None;
    }
    const MASK: u64 = 0x0000_00FF_0000_00FF;
    const MUL1: u64 = 0x000F_4240_0000_0064;
    const MUL2: u64 = 0x0000_2710_0000_0001;
    let mut v = word.wrapping_sub(0x3030_3030_3030_3030);
    v = v.wrapping_mul(10).wrapping_add(v >> 8);
    Some((v & MASK).wrapping_mul(MUL1).wrapping_add(((v >> 16) & MASK).wrapping_mul(MUL2)) >> 32)
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

    /// The one-pass reader agrees with the text reader wherever it answers, and answers
    /// for the plain decimals traces write.
    #[test]
    fn prefix_reader_matches_the_text_reader() {
        let mut texts: Vec<String> = [
            "0",
            "7",
            "-7",
            "12.",
            "1712195495519689.047",
            "63.813",
            "-0.5",
            "99999999",
            "100000000",
            "123456789012345678",
            "1234567890123456789",
            "12345678.9",
            "1.1234567",
            "00000000000000001",
            "1e3",
            "-",
            ".5",
            "+1",
            "-.5",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Every length of digits around the eight-at-a-time boundaries, with fractions.
        for len in 1..=20 {
            let digits: String = (0..len).map(|i| char::from(b'1' + (i % 9) as u8)).collect();
            texts.push(digits.clone());
            texts.push(format!("-{digits}.25"));
            texts.push(format!("{digits}.0000019"));
        }
        for text in &texts {
            for end in [",", "}", " ", "]"] {
                let bytes = format!("{text}{end}");
                match us_prefix_to_ps(bytes.as_bytes()) {
                    // The scanner takes it only when what follows cannot continue a number.
                    Some((ps, n)) if n == text.len() => {
                        assert_eq!(Some(ps), us_text_to_ps(text.as_bytes()), "{text}");
                    }
                    Some((_, n)) => assert!(b"+-.eE".contains(&bytes.as_bytes()[n]), "{text}"),
                    None => {
                        let plain = text.trim_start_matches('-');
                        let int = plain.split('.').next().unwrap_or("");
                        let simple = !int.is_empty() && int.len() <= 18 && int.bytes().all(|b| b.is_ascii_digit());
                        assert!(!simple || plain.contains('e'), "{text} should be read in one pass");
                    }
                }
            }
        }
        assert_eq!(leading_digits(b"1234567890123456789012"), (1_234_567_890_123_456_789, 19));
        assert_eq!(leading_digits(b"12345678x"), (12_345_678, 8));
        assert_eq!(leading_digits(b"x"), (0, 0));
    }
}
