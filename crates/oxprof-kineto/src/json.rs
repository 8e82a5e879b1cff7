//! A lenient, allocation-free JSON scanner over a byte buffer: the tokens the importer
//! needs (strings, numbers as their text, literals, brackets) and fast skipping of values it
//! does not look into. It is not a general parser: callers walk objects themselves, which is
//! what lets the importer stream `traceEvents` without building a tree.
//!
//! Input may still be arriving ([`Scanner::incoming`]): wherever a token runs into the end
//! of the bytes so far, the scanner waits for more and reads the token again from its
//! start, so callers see the same tokens as over the whole buffer. The hot paths are
//! unchanged: only reaching the end of the buffer (rare) asks for more.
//!
//! Leniency (what real traces need): trailing commas before `]`/`}` (counted by callers),
//! `NaN`/`Infinity`/`-Infinity` as numbers (Python's `json.dumps` writes them), control
//! characters inside strings, and invalid escapes (kept as written). Strings are returned
//! as raw bytes; UTF-8 is checked where they are kept (the interner).

use memchr::memchr2;
use oxprof_model::Incoming;

/// Why scanning stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonError {
    /// The buffer ended inside a value.
    Eof,
    /// A byte that cannot start or continue the expected token.
    Unexpected {
        /// Offset of the byte.
        at: usize,
        /// What the scanner expected there.
        expected: &'static str,
    },
}

/// A cursor over a JSON buffer.
#[derive(Clone)]
pub(crate) struct Scanner<'a> {
    /// The bytes arrived so far (all of them without `incoming`).
    buf: &'a [u8],
    pos: usize,
    /// Where more bytes come from while the input is still arriving.
    incoming: Option<&'a dyn Incoming>,
}

impl<'a> Scanner<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Scanner { buf, pos: 0, incoming: None }
    }

    /// A scanner over all of `buf`, starting at `pos` (a second reader's half of it).
    pub(crate) fn at(buf: &'a [u8], pos: usize) -> Self {
        Scanner { buf, pos: pos.min(buf.len()), incoming: None }
    }

    /// All of the input, when it is all here (not still arriving).
    pub(crate) fn whole(&self) -> Option<&'a [u8]> {
        match self.incoming {
            None => Some(self.buf),
            Some(_) => None,
        }
    }

    /// A scanner over input that is still arriving.
    pub(crate) fn incoming(source: &'a dyn Incoming) -> Self {
        Scanner { buf: source.wait_past(0), pos: 0, incoming: Some(source) }
    }

    /// Waits for more input; `false` when there is no more (the buffer is all of it).
    #[cold]
    #[inline(never)]
    pub(crate) fn more(&mut self) -> bool {
        let Some(source) = self.incoming else { return false };
        let now = source.wait_past(self.buf.len());
        let grew = now.len() > self.buf.len();
        if grew {
            self.buf = now;
        }
        grew
    }

    /// Every byte scanned so far, and whatever else has arrived.
    pub(crate) fn bytes_so_far(&self) -> usize {
        self.buf.len()
    }

    /// Current offset.
    #[inline]
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// The bytes from `start` to the current position.
    pub(crate) fn since(&self, start: usize) -> &'a [u8] {
        &self.buf[start.min(self.pos)..self.pos]
    }

    /// Skips whitespace and returns the next byte (not consumed), if any.
    #[inline]
    pub(crate) fn peek(&mut self) -> Option<u8> {
        // Most tokens follow no whitespace or one space: decide those without the loop.
        match self.buf.get(self.pos) {
            Some(&b) if b > b' ' => return Some(b),
            Some(&b' ') => match self.buf.get(self.pos + 1) {
                Some(&b) if b > b' ' => {
                    self.pos += 1;
                    return Some(b);
                }
                _ => {}
            },
            _ => {}
        }
        loop {
            while let Some(&b) = self.buf.get(self.pos) {
                if matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                    self.pos += 1;
                } else {
                    return Some(b);
                }
            }
            if !self.more() {
                return None;
            }
        }
    }

    /// Consumes one byte (after [`Scanner::peek`] saw it).
    #[inline]
    pub(crate) fn bump(&mut self) {
        self.pos += 1;
    }

    /// Consumes `byte` (after whitespace) or fails.
    #[inline]
    pub(crate) fn expect(&mut self, byte: u8, expected: &'static str) -> Result<(), JsonError> {
        match self.peek() {
            Some(b) if b == byte => {
                self.pos += 1;
                Ok(())
            }
            Some(_) => Err(JsonError::Unexpected { at: self.pos, expected }),
            None => Err(JsonError::Eof),
        }
    }

    /// Reads a string (the opening quote next, after whitespace). Without escapes the
    /// content is borrowed from the buffer; with escapes it is decoded into `scratch` and
    /// the returned slice borrows `scratch`'s storage through the caller.
    #[inline]
    pub(crate) fn string<'s>(&mut self, scratch: &'s mut Vec<u8>) -> Result<StrRef<'a, 's>, JsonError> {
        self.expect(b'"', "a string")?;
        let start = self.pos;
        loop {
            match find_quote_or_backslash(&self.buf[start..]) {
                Some(i) if self.buf[start + i] == b'"' => {
                    self.pos = start + i + 1;
                    return Ok(StrRef::Borrowed(&self.buf[start..start + i]));
                }
                Some(i) => {
                    scratch.clear();
                    scratch.extend_from_slice(&self.buf[start..start + i]);
                    self.pos = start + i;
                    match self.unescape_rest(scratch) {
                        Ok(()) => break,
                        // Cut inside an escape or before the closing quote: from the start.
                        Err(JsonError::Eof) if self.more() => self.pos = start,
                        Err(e) => return Err(e),
                    }
                }
                None if self.more() => {}
                None => return Err(JsonError::Eof),
            }
        }
        Ok(StrRef::Scratch(scratch))
    }

    /// Decodes from a backslash to the closing quote into `out`.
    #[cold]
    fn unescape_rest(&mut self, out: &mut Vec<u8>) -> Result<(), JsonError> {
        loop {
            let rest = &self.buf[self.pos..];
            let Some(i) = memchr2(b'"', b'\\', rest) else { return Err(JsonError::Eof) };
            out.extend_from_slice(&rest[..i]);
            self.pos += i;
            if self.buf[self.pos] == b'"' {
                self.pos += 1;
                return Ok(());
            }
            // A backslash: one escape.
            let Some(&e) = self.buf.get(self.pos + 1) else { return Err(JsonError::Eof) };
            self.pos += 2;
            match e {
                b'"' => out.push(b'"'),
                b'\\' => out.push(b'\\'),
                b'/' => out.push(b'/'),
                b'b' => out.push(8),
                b'f' => out.push(12),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'u' => {
                    let unit = self.hex4()?;
                    let c = if (0xd800..0xdc00).contains(&unit) {
                        // A high surrogate: a low one should follow as `\uXXXX`.
                        if self.buf.get(self.pos..self.pos + 2) == Some(b"\\u") {
                            let save = self.pos;
                            self.pos += 2;
                            let low = self.hex4()?;
                            if (0xdc00..0xe000).contains(&low) {
                                char::from_u32(0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00))
                            } else {
                                self.pos = save;
                                None
                            }
                        } else {
                            None
                        }
                    } else {
                        char::from_u32(unit)
                    };
                    let mut tmp = [0u8; 4];
                    out.extend_from_slice(c.unwrap_or('\u{fffd}').encode_utf8(&mut tmp).as_bytes());
                }
                // An invalid escape: kept as written.
                other => {
                    out.push(b'\\');
                    out.push(other);
                }
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let Some(digits) = self.buf.get(self.pos..self.pos + 4) else { return Err(JsonError::Eof) };
        let mut v = 0u32;
        for &d in digits {
            let x = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return Err(JsonError::Unexpected { at: self.pos, expected: "four hex digits after \\u" }),
            };
            v = v * 16 + u32::from(x);
        }
        self.pos += 4;
        Ok(v)
    }

    /// Reads a number's text (or `NaN`/`Infinity`/`-Infinity`).
    #[inline]
    fn number(&mut self) -> Result<&'a [u8], JsonError> {
        loop {
            match self.number_so_far() {
                // A number running to the end of the bytes so far may go on.
                Err(JsonError::Eof) if self.more() => {}
                other => return other,
            }
        }
    }

    #[inline]
    fn number_so_far(&mut self) -> Result<&'a [u8], JsonError> {
        let start = self.pos;
        let rest = &self.buf[start..];
        let n = rest.iter().position(|&b| !NUMBER_BYTE[usize::from(b)]);
        match n {
            Some(0) | Some(1) if matches!(rest.first(), Some(b'N' | b'I' | b'-')) => self.non_finite(),
            Some(0) => Err(JsonError::Unexpected { at: start, expected: "a value" }),
            Some(n) => {
                self.pos += n;
                Ok(&rest[..n])
            }
            // A number running to the end of the buffer: the file was cut in it.
            None => Err(JsonError::Eof),
        }
    }

    /// `NaN`, `Infinity`, `-Infinity` (Python's `json.dumps` writes them).
    #[cold]
    fn non_finite(&mut self) -> Result<&'a [u8], JsonError> {
        let rest = &self.buf[self.pos..];
        for word in [&b"NaN"[..], b"Infinity", b"-Infinity"] {
            if rest.starts_with(word) {
                self.pos += word.len();
                return Ok(word);
            }
            if word.starts_with(rest) {
                return Err(JsonError::Eof);
            }
        }
        Err(JsonError::Unexpected { at: self.pos, expected: "a value" })
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<(), JsonError> {
        loop {
            match self.literal_so_far(word) {
                Err(JsonError::Eof) if self.more() => {}
                other => return other,
            }
        }
    }

    fn literal_so_far(&mut self, word: &'static [u8]) -> Result<(), JsonError> {
        let rest = &self.buf[self.pos..];
        if rest.starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else if word.starts_with(rest) {
            Err(JsonError::Eof)
        } else {
            Err(JsonError::Unexpected { at: self.pos, expected: "a value" })
        }
    }

    /// Reads one value: scalars as tokens, arrays and objects as their raw text (skipped).
    #[inline]
    pub(crate) fn value<'s>(&mut self, scratch: &'s mut Vec<u8>) -> Result<ValueRef<'a, 's>, JsonError> {
        match self.peek() {
            None => Err(JsonError::Eof),
            Some(b'"') => Ok(ValueRef::Str(self.string(scratch)?)),
            Some(b'{' | b'[') => {
                let start = self.pos;
                self.skip_compound()?;
                Ok(ValueRef::Compound(&self.buf[start..self.pos]))
            }
            Some(b't') => self.literal(b"true").map(|()| ValueRef::Bool(true)),
            Some(b'f') => self.literal(b"false").map(|()| ValueRef::Bool(false)),
            Some(b'n') => self.literal(b"null").map(|()| ValueRef::Null),
            Some(_) => Ok(ValueRef::Num(self.number()?)),
        }
    }

    /// Skips one value of any kind.
    pub(crate) fn skip_value(&mut self) -> Result<(), JsonError> {
        let mut scratch = Vec::new();
        self.value(&mut scratch).map(|_| ())
    }

    /// Skips an array or object (next byte `[` or `{`), iteratively: strings are jumped
    /// over whole, brackets counted (leniently: any closing bracket closes).
    fn skip_compound(&mut self) -> Result<(), JsonError> {
        let start = self.pos;
        loop {
            match self.skip_compound_so_far() {
                // Cut inside: skip it again from its start with more bytes.
                Err(JsonError::Eof) if self.more() => self.pos = start,
                other => return other,
            }
        }
    }

    fn skip_compound_so_far(&mut self) -> Result<(), JsonError> {
        let mut depth = 0usize;
        loop {
            let Some(&b) = self.buf.get(self.pos) else { return Err(JsonError::Eof) };
            match b {
                b'"' => {
                    self.pos += 1;
                    loop {
                        let rest = &self.buf[self.pos..];
                        let Some(i) = memchr2(b'"', b'\\', rest) else { return Err(JsonError::Eof) };
                        if rest[i] == b'"' {
                            self.pos += i + 1;
                            break;
                        }
                        self.pos += i + 2;
                        if self.pos > self.buf.len() {
                            return Err(JsonError::Eof);
                        }
                    }
                }
                b'[' | b'{' => {
                    depth += 1;
                    self.pos += 1;
                }
                b']' | b'}' => {
                    depth = depth.saturating_sub(1);
                    self.pos += 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                _ => {
                    // Scalars and punctuation: jump to the next byte of interest.
                    let rest = &self.buf[self.pos + 1..];
                    let next = rest.iter().position(|&c| matches!(c, b'"' | b'[' | b']' | b'{' | b'}'));
                    match next {
                        Some(i) => self.pos += 1 + i,
                        None => return Err(JsonError::Eof),
                    }
                }
            }
        }
    }

    /// After a member or element: `,` (then `Ok(true)` unless a trailing comma precedes
    /// the closing bracket, which is consumed and counted in `trailing`) or the closing
    /// bracket (`Ok(false)`).
    #[inline(always)]
    pub(crate) fn next_member(&mut self, close: u8, trailing: &mut u64) -> Result<bool, JsonError> {
        // What traces write between members: `, "` (or `,"`), and the bracket right after
        // the last member.
        match self.buf.get(self.pos..self.pos + 3) {
            Some(&[b',', b' ', b'"']) => {
                self.pos += 2;
                return Ok(true);
            }
            Some(&[b',', b'"', _]) => {
                self.pos += 1;
                return Ok(true);
            }
            Some(&[b, _, _]) if b == close => {
                self.pos += 1;
                return Ok(false);
            }
            _ => {}
        }
        self.next_member_slow(close, trailing)
    }

    /// [`Scanner::next_member`] past whitespace, or near the end of the bytes so far.
    #[inline(never)]
    fn next_member_slow(&mut self, close: u8, trailing: &mut u64) -> Result<bool, JsonError> {
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                if self.peek() == Some(close) {
                    self.pos += 1;
                    *trailing += 1;
                    return Ok(false);
                }
                Ok(true)
            }
            Some(b) if b == close => {
                self.pos += 1;
                Ok(false)
            }
            Some(_) => Err(JsonError::Unexpected { at: self.pos, expected: "',' or a closing bracket" }),
            None => Err(JsonError::Eof),
        }
    }

    /// Right after an opening bracket: `Ok(false)` (and consumes it) if the container is
    /// empty.
    #[inline]
    pub(crate) fn first_member(&mut self, close: u8) -> Result<bool, JsonError> {
        match self.peek() {
            Some(b) if b == close => {
                self.pos += 1;
                Ok(false)
            }
            Some(_) => Ok(true),
            None => Err(JsonError::Eof),
        }
    }

    /// Reads an object key and its colon, packed by [`key_word`] (`None`: a longer key):
    /// keys of up to seven bytes (every key of an event but its args') are read without a
    /// search when they have no escape, and callers match them as integers.
    #[inline]
    pub(crate) fn key_word(&mut self, scratch: &mut Vec<u8>) -> Result<Option<u64>, JsonError> {
        if self.peek() == Some(b'"')
            && let Some(word) = self.buf.get(self.pos + 1..self.pos + 9)
        {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(word);
            let v = u64::from_le_bytes(bytes);
            let hit = has_byte(v, b'"') | has_byte(v, b'\\');
            let len = (hit.trailing_zeros() / 8) as usize;
            // The closing quote within eight bytes, before any backslash.
            if len < 8 && word[len] == b'"' {
                self.pos += len + 2;
                self.expect(b':', "':' after a key")?;
                let packed = if len == 0 { 0 } else { v & (u64::MAX >> (64 - 8 * len)) };
                return Ok(Some(packed | ((len as u64) << 56)));
            }
        }
        Ok(key_word(self.key(scratch)?.bytes()))
    }

    /// A string of exactly one byte without escape (`"X"`, a phase), consumed; `None` and
    /// nothing consumed for any other value.
    #[inline]
    pub(crate) fn one_byte_string(&mut self) -> Option<u8> {
        self.peek()?;
        match self.buf.get(self.pos..self.pos + 3) {
            Some(&[b'"', c, b'"']) if c != b'"' && c != b'\\' => {
                self.pos += 3;
                Some(c)
            }
            _ => None,
        }
    }

    /// A number read by `parse` straight from the bytes (no token first): `parse` answers
    /// the value and how many bytes it took, and the number is consumed only when no byte a
    /// number may hold follows them (so [`Scanner::value`] would have read the same text).
    /// `None` (nothing consumed): not such a number, the general path decides.
    #[inline]
    pub(crate) fn number_with<T>(&mut self, parse: impl FnOnce(&[u8]) -> Option<(T, usize)>) -> Option<T> {
        self.peek()?;
        let rest = &self.buf[self.pos..];
        let (v, n) = parse(rest)?;
        // A number running to the end of the bytes so far may go on: the general path waits.
        let &next = rest.get(n)?;
        if n == 0 || NUMBER_BYTE[usize::from(next)] {
            return None;
        }
        self.pos += n;
        Some(v)
    }

    /// Reads an object key and its colon.
    #[inline]
    pub(crate) fn key<'s>(&mut self, scratch: &'s mut Vec<u8>) -> Result<StrRef<'a, 's>, JsonError> {
        let k = self.string(scratch)?;
        self.expect(b':', "':' after a key")?;
        Ok(k)
    }
}

/// Bytes a number's text is made of (a table: one load per byte instead of six tests).
static NUMBER_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = b'0';
    while b <= b'9' {
        t[b as usize] = true;
        b += 1;
    }
    t[b'-' as usize] = true;
    t[b'+' as usize] = true;
    t[b'.' as usize] = true;
    t[b'e' as usize] = true;
    t[b'E' as usize] = true;
    t
};

/// Bytes of `v` equal to `byte` (high bit of each such byte set; bytes above the first
/// match may be set spuriously, so only the lowest set bit is meaningful).
#[inline]
fn has_byte(v: u64, byte: u8) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let x = v ^ (ONES * u64::from(byte));
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// An object key of up to seven bytes packed as [`Scanner::key_word`] answers it (bytes
/// little-endian, length in the top byte): `None` for longer keys.
pub(crate) const fn key_word(bytes: &[u8]) -> Option<u64> {
    if bytes.len() > 7 {
        return None;
    }
    let mut word = (bytes.len() as u64) << 56;
    let mut i = 0;
    while i < bytes.len() {
        word |= (bytes[i] as u64) << (8 * i);
        i += 1;
    }
    Some(word)
}

/// The first `"` or `\\` in `bytes`. Most strings of a trace are short keys and names: eight
/// bytes at a time (SWAR) for the first 64 bytes beats a vectorised search's set-up; longer
/// strings (kernel names, call stacks) go to memchr's.
#[inline]
fn find_quote_or_backslash(bytes: &[u8]) -> Option<usize> {
    let mut at = 0;
    while at + 8 <= bytes.len().min(64) {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[at..at + 8]);
        let v = u64::from_le_bytes(word);
        let hit = has_byte(v, b'"') | has_byte(v, b'\\');
        if hit != 0 {
            return Some(at + (hit.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    memchr2(b'"', b'\\', &bytes[at..]).map(|i| at + i)
}

/// A string's bytes: borrowed from the input, or decoded into the caller's scratch buffer.
#[derive(Debug)]
pub(crate) enum StrRef<'a, 's> {
    Borrowed(&'a [u8]),
    Scratch(&'s [u8]),
}

impl StrRef<'_, '_> {
    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            StrRef::Borrowed(b) => b,
            StrRef::Scratch(b) => b,
        }
    }
}

/// One value as [`Scanner::value`] reads it.
#[derive(Debug)]
pub(crate) enum ValueRef<'a, 's> {
    Str(StrRef<'a, 's>),
    Num(&'a [u8]),
    Bool(bool),
    Null,
    Compound(&'a [u8]),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(text: &str) -> Vec<String> {
        let mut s = Scanner::new(text.as_bytes());
        let mut scratch = Vec::new();
        let mut out = Vec::new();
        let mut trailing = 0;
        s.expect(b'[', "[").unwrap();
        if s.first_member(b']').unwrap() {
            loop {
                let v = match s.value(&mut scratch).unwrap() {
                    ValueRef::Str(x) => format!("s:{}", String::from_utf8_lossy(x.bytes())),
                    ValueRef::Num(n) => format!("n:{}", String::from_utf8_lossy(n)),
                    ValueRef::Bool(b) => format!("b:{b}"),
                    ValueRef::Null => "null".into(),
                    ValueRef::Compound(c) => format!("c:{}", String::from_utf8_lossy(c)),
                };
                out.push(v);
                if !s.next_member(b']', &mut trailing).unwrap() {
                    break;
                }
            }
        }
        out.push(format!("trailing:{trailing}"));
        out
    }

    #[test]
    fn scalars_compounds_and_escapes() {
        let got =
            values(r#"[ "a\"b\u00e9\ud83d\ude00\q", -1.5e3, NaN, -Infinity, true, null, {"x":[1,"]"]}, [[],{}], ]"#);
        assert_eq!(
            got,
            [
                "s:a\"bé😀\\q",
                "n:-1.5e3",
                "n:NaN",
                "n:-Infinity",
                "b:true",
                "null",
                r#"c:{"x":[1,"]"]}"#,
                "c:[[],{}]",
                "trailing:1"
            ]
        );
    }

    #[test]
    fn quotes_and_backslashes_are_found_at_any_offset() {
        for len in 0..200 {
            for (special, at) in [(b'"', len / 2), (b'\\', len), (b'"', len + 3)] {
                let mut bytes = vec![b'a'; len + 5];
                // Bytes with the high bit set must not look like a match.
                bytes.iter_mut().step_by(3).for_each(|b| *b = 0xe9);
                bytes[at] = special;
                let want = bytes.iter().position(|&b| b == b'"' || b == b'\\');
                assert_eq!(find_quote_or_backslash(&bytes), want, "len {len} at {at}");
            }
        }
        assert_eq!(find_quote_or_backslash(b""), None);
    }

    /// Short keys come packed whether read fast or decoded from escapes; longer ones do not.
    #[test]
    fn short_keys_are_packed_words() {
        let mut scratch = Vec::new();
        let read = |text: &str, scratch: &mut Vec<u8>| {
            let mut s = Scanner::new(text.as_bytes());
            s.key_word(scratch).map(|w| (w, s.pos()))
        };
        let ph = key_word(b"ph");
        assert_eq!(read(r#" "ph": "X""#, &mut scratch), Ok((ph, 6)));
        assert_eq!(read(r#""p\u0068":1"#, &mut scratch), Ok((ph, 10)));
        // At the end of the bytes (no eight bytes to look at) and with a NUL after "ph".
        assert_eq!(read(r#""ph":"#, &mut scratch), Ok((ph, 5)));
        assert_ne!(read("\"ph\u{0}\":1, \"x\":2", &mut scratch).map(|(w, _)| w), Ok(ph));
        assert_eq!(read(r#""1234567": 1, "#, &mut scratch), Ok((key_word(b"1234567"), 10)));
        assert_eq!(read(r#""External id": 1"#, &mut scratch), Ok((None, 14)));
        assert_eq!(
            read(r#""ph" 1"#, &mut scratch).map(|_| ()),
            Err(JsonError::Unexpected { at: 5, expected: "':' after a key" })
        );
        assert_eq!(key_word(b""), Some(0));
        assert_ne!(key_word(b"ph"), key_word(b"ph\0"));
    }

    /// Numbers read straight from the bytes only when what follows ends them.
    #[test]
    fn numbers_are_read_straight_only_when_they_end() {
        let int = |b: &[u8]| {
            let n = b.iter().take_while(|c| c.is_ascii_digit()).count();
            (n > 0).then(|| (b[..n].iter().fold(0u64, |v, d| v * 10 + u64::from(d - b'0')), n))
        };
        let read = |text: &str| {
            let mut s = Scanner::new(text.as_bytes());
            (s.number_with(int), s.pos())
        };
        assert_eq!(read(" 1102, "), (Some(1102), 5));
        assert_eq!(read("12}"), (Some(12), 2));
        // Continued by bytes a number holds, or cut at the end of the bytes: not taken.
        assert_eq!(read("1e3,"), (None, 0));
        assert_eq!(read("1.5,"), (None, 0));
        assert_eq!(read("12"), (None, 0));
        assert_eq!(read(r#""12","#), (None, 0));
    }

    /// Between members, the fast forms and the general one agree.
    #[test]
    fn members_are_separated_alike_with_any_spacing() {
        for text in [r#"{"a":1,"b":2}"#, r#"{"a": 1, "b": 2 }"#, "{ \"a\" : 1 ,\n \"b\":2,}", r#"{"a":1, "b":2, }"#] {
            let mut s = Scanner::new(text.as_bytes());
            let (mut scratch, mut trailing, mut keys) = (Vec::new(), 0, Vec::new());
            s.expect(b'{', "{").unwrap();
            assert!(s.first_member(b'}').unwrap());
            loop {
                keys.push(String::from_utf8_lossy(s.key(&mut scratch).unwrap().bytes()).into_owned());
                s.skip_value().unwrap();
                if !s.next_member(b'}', &mut trailing).unwrap() {
                    break;
                }
            }
            assert_eq!((keys, s.pos()), (vec!["a".to_string(), "b".to_string()], text.len()), "{text}");
            assert_eq!(trailing, u64::from(text.contains(",}") || text.contains(", }")), "{text}");
        }
    }

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        assert_eq!(values(r#"["\ud800x", "\udc00"]"#)[..2], ["s:\u{fffd}x", "s:\u{fffd}"]);
    }

    #[test]
    fn truncation_is_eof_and_garbage_is_unexpected() {
        let mut scratch = Vec::new();
        for cut in [r#""abc"#, "[1, {\"a\": ", "123", "tru", r#""a\"#, r#""\u12"#] {
            assert_eq!(Scanner::new(cut.as_bytes()).value(&mut scratch).map(|_| ()), Err(JsonError::Eof), "{cut}");
        }
        assert!(matches!(Scanner::new(b"?").value(&mut scratch), Err(JsonError::Unexpected { at: 0, .. })));
        assert!(matches!(Scanner::new(b"trux").value(&mut scratch), Err(JsonError::Unexpected { .. })));
    }
}
