//! The XSpace encoder: the model back to `.xplane.pb` bytes, with a hand-written protobuf
//! writer (fields in field-number order, as protobuf's C++ writes them).
//!
//! What the model holds is written as the input had it: metadata under their map keys,
//! events with their offsets or occurrence counts, stats with their value kinds (a
//! `compressed_str_value` becomes a `str_value`), ref stats with their raw keys. Repairs are
//! not written back: placeholder metadata (made for ids the input lacked) is left out, so
//! the references stay as dangling as they were and a decoder makes the same placeholders
//! again. Lines a metadata-only decode left out cannot be written.
//!
//! Message lengths are written after their bodies: the body goes right after a one-byte
//! length slot and is moved up in place when its length needs more bytes, which only
//! lines, planes and the odd large metadata entry do.

use oxprof_model::{Stat, StatValue, Stats, XLine, XPlane, XSpace};

/// Protobuf wire types used here.
const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LEN: u32 = 2;

/// Writes `space` as XSpace protobuf bytes.
pub fn encode_xspace(space: &XSpace) -> Vec<u8> {
    let mut w = Writer { buf: Vec::with_capacity(estimate(space)) };
    for plane in &space.planes {
        w.message(1, |w| write_plane(w, plane));
    }
    for (field, texts) in [(2, &space.errors), (3, &space.warnings), (4, &space.hostnames)] {
        for text in texts {
            w.len_field(field, text.as_bytes());
        }
    }
    w.buf
}

/// A first guess of the output size (events take about 28 bytes on the wire).
fn estimate(space: &XSpace) -> usize {
    space.planes.iter().map(|p| p.event_count() * 28 + p.lines.iter().map(XLine::stat_count).sum::<usize>() * 8).sum()
}

fn write_plane(w: &mut Writer, plane: &XPlane) {
    w.int64(1, plane.id);
    w.string(2, &plane.name);
    for line in &plane.lines {
        w.message(3, |w| write_line(w, plane, line));
    }
    for id in plane.event_metadata_ids() {
        let m = plane.event_metadata_at(id);
        if m.is_placeholder() {
            continue;
        }
        w.message(4, |w| {
            w.int64(1, m.key());
            w.message(2, |w| {
                w.int64(1, m.id);
                w.string(2, plane.str(m.name));
                w.bytes(3, &m.metadata);
                w.string(4, plane.str(m.display_name));
                write_stats(w, 5, plane.metadata_stats(id));
                if !m.child_ids.is_empty() {
                    w.message(6, |w| m.child_ids.iter().for_each(|&c| w.varint(c as u64)));
                }
            });
        });
    }
    for m in plane.stat_metadata() {
        if m.is_placeholder() {
            continue;
        }
        w.message(5, |w| {
            w.int64(1, m.key());
            w.message(2, |w| {
                w.int64(1, m.id);
                w.string(2, plane.str(m.name));
                w.string(3, plane.str(m.description));
            });
        });
    }
    write_stats(w, 6, plane.stats());
}

fn write_line(w: &mut Writer, plane: &XPlane, line: &XLine) {
    w.int64(1, line.id);
    w.string(2, &line.name);
    w.int64(3, line.timestamp_ns);
    for event in line.events(plane) {
        w.message(4, |w| {
            w.int64(1, event.metadata().key());
            let occurrences = event.num_occurrences();
            // A oneof member is written even when 0: its presence is what it says.
            if occurrences.is_none() {
                w.key(2, VARINT);
                w.varint(event.offset_ps() as u64);
            }
            w.int64(3, event.duration_ps());
            write_stats(w, 4, event.stats());
            if let Some(n) = occurrences {
                w.key(5, VARINT);
                w.varint(n as u64);
            }
        });
    }
    w.int64(9, line.duration_ps);
    w.int64(10, line.display_id);
    w.string(11, &line.display_name);
}

#[inline]
fn write_stats(w: &mut Writer, field: u32, stats: Stats<'_>) {
    for stat in stats {
        w.message(field, |w| write_stat(w, &stat));
    }
}

#[inline]
fn write_stat(w: &mut Writer, stat: &Stat<'_>) {
    w.int64(1, stat.metadata().key());
    match stat.value {
        StatValue::Unset => {}
        StatValue::Double(d) => {
            w.key(2, FIXED64);
            w.buf.extend_from_slice(&d.to_bits().to_le_bytes());
        }
        StatValue::Uint64(x) => {
            w.key(3, VARINT);
            w.varint(x);
        }
        StatValue::Int64(x) => {
            w.key(4, VARINT);
            w.varint(x as u64);
        }
        StatValue::Str(s) => w.len_field(5, s.as_bytes()),
        StatValue::Bytes(b) => w.len_field(6, b),
        StatValue::Ref(_) => {
            w.key(7, VARINT);
            w.varint(stat.ref_key().unwrap_or(0));
        }
    }
}

/// Protobuf output into one buffer.
struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    #[inline]
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    #[inline]
    fn key(&mut self, field: u32, wire_type: u32) {
        self.varint(u64::from(field << 3 | wire_type));
    }

    /// A singular `int64` field (left out when 0, as proto3 does).
    #[inline]
    fn int64(&mut self, field: u32, v: i64) {
        if v != 0 {
            self.key(field, VARINT);
            self.varint(v as u64);
        }
    }

    /// A singular `string` field (left out when empty).
    #[inline]
    fn string(&mut self, field: u32, s: &str) {
        self.bytes(field, s.as_bytes());
    }

    /// A singular `bytes` field (left out when empty).
    #[inline]
    fn bytes(&mut self, field: u32, b: &[u8]) {
        if !b.is_empty() {
            self.len_field(field, b);
        }
    }

    /// A length-delimited field, written even when empty (repeated elements, oneof members).
    #[inline]
    fn len_field(&mut self, field: u32, b: &[u8]) {
        self.key(field, LEN);
        self.varint(b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    /// A nested message (or packed field) written by `body`.
    #[inline]
    fn message(&mut self, field: u32, body: impl FnOnce(&mut Writer)) {
        self.key(field, LEN);
        let slot = self.buf.len();
        self.buf.push(0);
        body(self);
        let start = slot + 1;
        let len = self.buf.len() - start;
        if len < 0x80 {
            self.buf[slot] = len as u8;
            return;
        }
        self.widen_length(slot, len);
    }

    /// Writes a length of two or more bytes at `slot`, moving the body up to make room.
    #[cold]
    fn widen_length(&mut self, slot: usize, len: usize) {
        let mut prefix = Vec::with_capacity(10);
        let mut v = len as u64;
        while v >= 0x80 {
            prefix.push(v as u8 | 0x80);
            v >>= 7;
        }
        prefix.push(v as u8);
        let start = slot + 1;
        let extra = prefix.len() - 1;
        self.buf.resize(self.buf.len() + extra, 0);
        self.buf.copy_within(start..start + len, start + extra);
        self.buf[slot..slot + prefix.len()].copy_from_slice(&prefix);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_model::{ModelBuilder, Value, compare::first_difference};

    #[test]
    fn long_messages_get_multi_byte_lengths() {
        let mut w = Writer { buf: Vec::new() };
        w.message(1, |w| w.len_field(2, &[7u8; 300]));
        let mut r = crate::wire::Reader::new(&w.buf, 0);
        let (field, _) = r.tag().unwrap();
        assert_eq!(field, 1);
        let (body, _) = r.len_delimited().unwrap();
        assert!(r.is_empty());
        assert_eq!(body.len(), 303);
        assert_eq!(&body[..3], &[0x12, 0xac, 0x02]);
    }

    #[test]
    fn a_built_model_round_trips_through_the_decoder() {
        let space = ModelBuilder::new()
            .hostname("vm")
            .error("e")
            .warning("")
            .plane("/host:CPU", |p| {
                p.id(3).stat("cores", 8u64).event_display_name("op", "Op");
                p.event_metadata_stat("op", "flops", -2.5);
                p.line(1, "main", 1_700_000_000_000_000_000, |l| {
                    l.display_name("Main").duration_ps(77);
                    l.event("op", 0, 0);
                    l.event("op", 1 << 40, i64::MAX).stat("s", "x".repeat(200)).stat("n", -1i64);
                    l.aggregated_event("agg", 0, 5).stat("r", Value::Ref("cores".into())).stat("u", u64::MAX);
                    l.event("big", 3, 4).stat("b", Value::Bytes(vec![0; 20_000])).stat("z", 0.0);
                });
                p.line(2, "empty", 0, |_| {});
            })
            .plane("", |_| {})
            .build()
            .unwrap();
        let bytes = encode_xspace(&space);
        let decoded = crate::decode_xspace(&bytes).unwrap();
        assert_eq!(first_difference(&space, &decoded), None);
        assert!(decoded.diagnostics.is_empty());
        assert_eq!(encode_xspace(&decoded), bytes, "encoding is deterministic");
    }
}
