//! Protobuf wire-format primitives over a byte slice: varints, tags, length-delimited
//! fields and skipping. Kept minimal and branch-light because the XSpace decoder spends
//! most of its time here.

use crate::error::WireError;

/// Protobuf wire types (the low 3 bits of a tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireType {
    Varint,
    Fixed64,
    Len,
    StartGroup,
    EndGroup,
    Fixed32,
}

/// A cursor over one protobuf message's bytes, `buf[pos..end]`. `base` is the absolute
/// file offset of `buf[0]`, so errors can say where in the file they happened.
///
/// `buf` may extend past `end` (a nested message keeps its parent's buffer, see
/// [`Reader::nested`]): varints are then decoded from an 8-byte window even at the end of
/// a small message, and only the result is checked against `end`.
#[derive(Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    end: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8], base: usize) -> Self {
        Reader { buf, pos: 0, end: buf.len(), base }
    }

    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.end
    }

    /// Reads a length-delimited field as a reader of its own (sharing this one's buffer).
    #[inline(always)]
    pub(crate) fn nested(&mut self) -> Result<Reader<'a>, WireError> {
        let len = self.varint()?;
        if len > (self.end - self.pos) as u64 {
            return Err(self.error("length runs past the end of its message (truncated data)"));
        }
        let start = self.pos;
        self.pos += len as usize;
        Ok(Reader { buf: self.buf, pos: start, end: self.pos, base: self.base })
    }

    /// Absolute file offset of the cursor.
    #[inline]
    pub(crate) fn offset(&self) -> usize {
        self.base + self.pos
    }

    #[cold]
    fn error(&self, what: &'static str) -> WireError {
        WireError { offset: self.offset() as u64, what }
    }

    /// Reads a varint. Values of up to 8 bytes (56 bits) with 8 bytes of input left are
    /// decoded without a loop: most varints in an XSpace are ids, offsets and durations.
    #[inline(always)]
    pub(crate) fn varint(&mut self) -> Result<u64, WireError> {
        if let Some(window) = self.buf.get(self.pos..self.pos + 8) {
            let mut raw = [0u8; 8];
            raw.copy_from_slice(window);
            let word = u64::from_le_bytes(raw);
            if word & 0x80 == 0 && self.pos < self.end {
                self.pos += 1;
                return Ok(word & 0x7f);
            }
            // A byte below 0x80 ends the varint: its top bit is the first clear one.
            let stops = !word & 0x8080_8080_8080_8080;
            let next = self.pos + (stops.trailing_zeros() as usize + 1) / 8;
            if stops != 0 && next <= self.end {
                self.pos = next;
                // Keep the bytes up to the last one, drop the continuation bits and join
                // the 7-bit groups pairwise: 7+7 -> 14, 14+14 -> 28, 28+28 -> 56 bits.
                let x = word & (stops ^ (stops - 1));
                let x = ((x & 0x7f00_7f00_7f00_7f00) >> 1) | (x & 0x007f_007f_007f_007f);
                let x = ((x & 0x3fff_0000_3fff_0000) >> 2) | (x & 0x0000_3fff_0000_3fff);
                let x = ((x & 0x0fff_ffff_0000_0000) >> 4) | (x & 0x0000_0000_0fff_ffff);
                return Ok(x);
            }
        }
        self.varint_slow()
    }

    /// Varints near the end of the buffer, and 9- or 10-byte ones.
    #[inline(never)]
    fn varint_slow(&mut self) -> Result<u64, WireError> {
        let buf = &self.buf[..self.end];
        let mut pos = self.pos;
        let Some(&first) = buf.get(pos) else {
            return Err(self.error("truncated varint"));
        };
        pos += 1;
        if first < 0x80 {
            self.pos = pos;
            return Ok(u64::from(first));
        }
        let mut value = u64::from(first & 0x7f);
        let mut shift = 7;
        loop {
            let Some(&byte) = buf.get(pos) else {
                return Err(self.error("truncated varint"));
            };
            pos += 1;
            if shift == 63 && byte > 1 {
                return Err(self.error("varint longer than 64 bits"));
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                self.pos = pos;
                return Ok(value);
            }
            shift += 7;
            if shift > 63 {
                return Err(self.error("varint longer than 10 bytes"));
            }
        }
    }

    /// Reads a tag; returns the field number and wire type.
    #[inline(always)]
    pub(crate) fn tag(&mut self) -> Result<(u32, WireType), WireError> {
        let key = self.key()?;
        self.split_key(key)
    }

    /// Reads a tag as its raw key, `field << 3 | wire type`, so that hot loops match known
    /// fields with one comparison; any other key goes through [`Reader::split_key`].
    #[inline(always)]
    pub(crate) fn key(&mut self) -> Result<u64, WireError> {
        // Tags of fields 1 to 15 are one byte.
        match self.buf[..self.end].get(self.pos) {
            Some(&byte) if byte < 0x80 => {
                self.pos += 1;
                Ok(u64::from(byte))
            }
            _ => self.varint(),
        }
    }

    /// Checks a key just read by [`Reader::key`] and splits it into field and wire type.
    pub(crate) fn split_key(&mut self, key: u64) -> Result<(u32, WireType), WireError> {
        let wire_type = match key & 7 {
            0 => WireType::Varint,
            1 => WireType::Fixed64,
            2 => WireType::Len,
            3 => WireType::StartGroup,
            4 => WireType::EndGroup,
            5 => WireType::Fixed32,
            _ => return Err(self.key_error(key, "invalid wire type (the data is not a protobuf message)")),
        };
        let field = key >> 3;
        if field == 0 || field > u64::from(u32::MAX >> 3) {
            return Err(self.key_error(key, "invalid field number 0"));
        }
        Ok((field as u32, wire_type))
    }

    /// An error pointing at the start of the key just read (as encoded minimally).
    #[cold]
    fn key_error(&self, key: u64, what: &'static str) -> WireError {
        let key_len = (64 - (key | 1).leading_zeros()).div_ceil(7) as usize;
        WireError { offset: (self.offset() - key_len.min(self.pos)) as u64, what }
    }

    /// Reads a length-delimited field's bytes; returns them with their absolute offset.
    #[inline]
    pub(crate) fn len_delimited(&mut self) -> Result<(&'a [u8], usize), WireError> {
        let len = self.varint()?;
        let remaining = (self.end - self.pos) as u64;
        if len > remaining {
            return Err(self.error("length runs past the end of its message (truncated data)"));
        }
        let start = self.pos;
        self.pos += len as usize;
        Ok((&self.buf[start..self.pos], self.base + start))
    }

    #[inline]
    pub(crate) fn fixed64(&mut self) -> Result<u64, WireError> {
        let Some(bytes) = self.buf[..self.end].get(self.pos..self.pos + 8) else {
            return Err(self.error("truncated fixed64"));
        };
        self.pos += 8;
        let mut raw = [0u8; 8];
        raw.copy_from_slice(bytes);
        Ok(u64::from_le_bytes(raw))
    }

    /// Skips a field of the given wire type (groups are skipped to their end tag).
    pub(crate) fn skip(&mut self, field: u32, wire_type: WireType) -> Result<(), WireError> {
        match wire_type {
            WireType::Varint => {
                self.varint()?;
            }
            WireType::Fixed64 => {
                self.fixed64()?;
            }
            WireType::Len => {
                self.len_delimited()?;
            }
            WireType::Fixed32 => {
                if self.end - self.pos < 4 {
                    return Err(self.error("truncated fixed32"));
                }
                self.pos += 4;
            }
            WireType::StartGroup => self.skip_group(field)?,
            WireType::EndGroup => return Err(self.error("unexpected end-group tag")),
        }
        Ok(())
    }

    fn skip_group(&mut self, field: u32) -> Result<(), WireError> {
        // Iterative, so hostile nesting cannot overflow the stack.
        let mut open = vec![field];
        while let Some(&innermost) = open.last() {
            if self.is_empty() {
                return Err(self.error("unterminated group"));
            }
            let (f, wt) = self.tag()?;
            match wt {
                WireType::StartGroup => open.push(f),
                WireType::EndGroup if f == innermost => {
                    open.pop();
                }
                WireType::EndGroup => return Err(self.error("mismatched end-group tag")),
                other => self.skip(f, other)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_varints_of_every_length() {
        for value in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut buf = Vec::new();
            prost::encoding::encode_varint(value, &mut buf);
            let mut r = Reader::new(&buf, 0);
            assert_eq!(r.varint().unwrap(), value);
            assert!(r.is_empty());
        }
    }

    #[test]
    fn reads_varints_followed_by_more_bytes() {
        // The 8-byte window path: every length from 1 to 10 bytes, with other data after.
        let mut values = vec![0u64, 1, 127, 128, 16_383, 16_384, u64::MAX, 1 << 55, (1 << 56) - 1, 1 << 56];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for shift in 0..64 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            values.push(x >> shift);
        }
        let mut buf = Vec::new();
        for &v in &values {
            prost::encoding::encode_varint(v, &mut buf);
            buf.push(0xff); // a non-terminal byte right after the varint
        }
        buf.extend_from_slice(&[0; 9]);
        let mut r = Reader::new(&buf, 0);
        for &v in &values {
            assert_eq!(r.varint().unwrap(), v);
            assert_eq!(r.buf[r.pos], 0xff);
            r.pos += 1;
        }
    }

    #[test]
    fn nested_message_stops_at_its_end_though_its_buffer_goes_on() {
        // Field 1 (len 2) holding a varint cut short: 0x80 0x80, then a parent byte 0x01
        // that would complete the varint if the nested reader looked past its end.
        let buf = [0x0a, 0x02, 0x80, 0x80, 0x01, 0, 0, 0, 0, 0, 0, 0, 0];
        let mut r = Reader::new(&buf, 0);
        assert_eq!(r.tag().unwrap(), (1, WireType::Len));
        let mut inner = r.nested().unwrap();
        assert!(inner.varint().is_err(), "a varint may not run past its message");
        // Keys of known fields come back raw; others are checked when split.
        let mut keys = Reader::new(&[0x08, 0x07, 0x0f], 0);
        assert_eq!(keys.key().unwrap(), 0x08);
        assert_eq!(keys.varint().unwrap(), 7);
        let key = keys.key().unwrap();
        let err = keys.split_key(key).unwrap_err();
        assert_eq!(err.offset, 2, "the error points at the bad key");
    }

    #[test]
    fn rejects_overlong_and_truncated_varints() {
        let mut r = Reader::new(&[0xff; 11], 0);
        assert!(r.varint().is_err());
        let mut r = Reader::new(&[0x80, 0x80], 5);
        let err = r.varint().unwrap_err();
        assert_eq!(err.offset, 5, "errors point at the start of the bad varint");
    }

    #[test]
    fn length_past_end_is_an_error() {
        let mut r = Reader::new(&[0x0a, 0x05, 1, 2], 0);
        let (field, wt) = r.tag().unwrap();
        assert_eq!((field, wt), (1, WireType::Len));
        assert!(r.len_delimited().is_err());
    }

    #[test]
    fn skips_nested_groups() {
        // field 2 start group, field 3 varint 1, field 2 end group, then field 1 varint 7
        let buf = [0x13, 0x18, 0x01, 0x14, 0x08, 0x07];
        let mut r = Reader::new(&buf, 0);
        let (f, wt) = r.tag().unwrap();
        r.skip(f, wt).unwrap();
        let (f, _) = r.tag().unwrap();
        assert_eq!(f, 1);
        assert_eq!(r.varint().unwrap(), 7);
    }
}
