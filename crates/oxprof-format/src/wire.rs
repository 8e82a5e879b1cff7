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

/// A cursor over one protobuf message's bytes. `base` is the absolute file offset of
/// `buf[0]`, so errors can say where in the file they happened.
#[derive(Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8], base: usize) -> Self {
        Reader { buf, pos: 0, base }
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Absolute file offset of the cursor.
    #[inline]
    pub(crate) fn offset(&self) -> usize {
        self.base + self.pos
    }

    fn error(&self, what: &'static str) -> WireError {
        WireError { offset: self.offset() as u64, what }
    }

    #[inline]
    pub(crate) fn varint(&mut self) -> Result<u64, WireError> {
        let buf = self.buf;
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
    #[inline]
    pub(crate) fn tag(&mut self) -> Result<(u32, WireType), WireError> {
        let start = self.pos;
        let key = self.varint()?;
        let wire_type = match key & 7 {
            0 => WireType::Varint,
            1 => WireType::Fixed64,
            2 => WireType::Len,
            3 => WireType::StartGroup,
            4 => WireType::EndGroup,
            5 => WireType::Fixed32,
            _ => {
                self.pos = start;
                return Err(self.error("invalid wire type (the data is not a protobuf message)"));
            }
        };
        let field = key >> 3;
        if field == 0 || field > u64::from(u32::MAX >> 3) {
            self.pos = start;
            return Err(self.error("invalid field number 0"));
        }
        Ok((field as u32, wire_type))
    }

    /// Reads a length-delimited field's bytes; returns them with their absolute offset.
    #[inline]
    pub(crate) fn len_delimited(&mut self) -> Result<(&'a [u8], usize), WireError> {
        let len = self.varint()?;
        let remaining = (self.buf.len() - self.pos) as u64;
        if len > remaining {
            return Err(self.error("length runs past the end of its message (truncated data)"));
        }
        let start = self.pos;
        self.pos += len as usize;
        Ok((&self.buf[start..self.pos], self.base + start))
    }

    #[inline]
    pub(crate) fn fixed64(&mut self) -> Result<u64, WireError> {
        let Some(bytes) = self.buf.get(self.pos..self.pos + 8) else {
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
                if self.buf.len() - self.pos < 4 {
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
