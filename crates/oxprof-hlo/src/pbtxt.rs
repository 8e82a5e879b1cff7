//! Protobuf text format of an `xla.HloProto` as XProf's graph viewer prints it (`type=pbtxt`:
//! C++ `TextFormat::Printer` with unknown fields hidden), straight from the wire bytes with
//! the schema XProf was built with ([`super::pbtxt_schema`]).
//!
//! What C++ prints, and so this printer:
//!
//! ```text
//! hlo_module {                 a set message field: `name {`, its fields, `}`
//!   name: "jit_f"              fields in field-number order; proto3 scalars only when
//!   computations {             not zero (oneof / `optional` ones whenever set)
//!     ...                      repeated fields one element per line
//!   }
//!   schedule {
//!     sequences {              map entries sorted by key, key and value always printed
//!       key: 7
//!       value { ... }
//!     }
//!   }
//! }
//! ```
//!
//! Strings and bytes are C-escaped (octal for bytes outside printable ASCII), floats use
//! `SimpleFtoa`/`SimpleDtoa` (shortest of `%.6g`/`%.9g`, `%.15g`/`%.17g` that reads back),
//! enums print their value names. Fields the schema does not know, or with the wrong wire
//! type, are skipped, as C++ keeps them as hidden unknown fields.

use super::pbtxt_schema::{ENUMS, HLO_PROTO, MESSAGES};
use oxprof_wire::cxx_printf::format_g;
use std::fmt::Write as _;

/// Deepest message nesting protobuf parses (its default recursion limit).
const MAX_DEPTH: usize = 100;

/// Scalar and message kinds of the schema (all of protobuf's; `HloProto` uses a subset).
#[allow(dead_code)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Double,
    Float,
    Int64,
    Uint64,
    Int32,
    Fixed64,
    Fixed32,
    Bool,
    String,
    Bytes,
    Uint32,
    Sfixed32,
    Sfixed64,
    Sint32,
    Sint64,
    /// Index into the schema's messages.
    Message(usize),
    /// Index into the schema's enums.
    Enum(usize),
}

/// One field of a message.
#[derive(Debug)]
pub(crate) struct Field {
    pub(crate) number: u32,
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
    pub(crate) repeated: bool,
    /// Printed whenever set, even with a zero value (messages, oneofs, `optional`).
    pub(crate) presence: bool,
}

/// One message.
#[derive(Debug)]
pub(crate) struct Message {
    /// Full name (documentation of the generated table).
    #[allow(dead_code)]
    pub(crate) name: &'static str,
    pub(crate) map_entry: bool,
    /// Sorted by number.
    pub(crate) fields: &'static [Field],
}

/// A field value as read from the wire.
#[derive(Debug, Clone, Copy)]
enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Bytes(&'a [u8]),
}

/// Reads a base-128 varint.
fn varint(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let mut result = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        result |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(result);
        }
    }
    None
}

/// The fields of one message on the wire, in wire order: `(number, wire type, value)`.
/// `None` when the bytes are not a well-formed message.
fn read_fields(bytes: &[u8]) -> Option<Vec<(u32, u8, Value<'_>)>> {
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < bytes.len() {
        let key = varint(bytes, &mut pos)?;
        let number = u32::try_from(key >> 3).ok()?;
        let wire = (key & 7) as u8;
        let value = match wire {
            0 => Value::Varint(varint(bytes, &mut pos)?),
            1 => {
                let raw = bytes.get(pos..pos + 8)?;
                pos += 8;
                Value::Fixed64(u64::from_le_bytes(raw.try_into().ok()?))
            }
            2 => {
                let len = usize::try_from(varint(bytes, &mut pos)?).ok()?;
                let end = pos.checked_add(len)?;
                let raw = bytes.get(pos..end)?;
                pos = end;
                Value::Bytes(raw)
            }
            5 => {
                let raw = bytes.get(pos..pos + 4)?;
                pos += 4;
                Value::Fixed32(u32::from_le_bytes(raw.try_into().ok()?))
            }
            _ => return None,
        };
        if number == 0 {
            return None;
        }
        out.push((number, wire, value));
    }
    Some(out)
}

/// The wire type a scalar kind is written with (unpacked).
fn wire_type(kind: Kind) -> u8 {
    match kind {
        Kind::Double | Kind::Fixed64 | Kind::Sfixed64 => 1,
        Kind::Float | Kind::Fixed32 | Kind::Sfixed32 => 5,
        Kind::String | Kind::Bytes | Kind::Message(_) => 2,
        _ => 0,
    }
}

/// A decoded scalar or a message's bytes.
#[derive(Debug, Clone, PartialEq)]
enum Scalar<'a> {
    I64(i64),
    U64(u64),
    F32(f32),
    F64(f64),
    Bool(bool),
    Enum(usize, i32),
    Str(&'a [u8]),
    /// The concatenated wire bytes of a message (C++ merges repeated occurrences).
    Msg(usize, Vec<&'a [u8]>),
}

impl Scalar<'_> {
    /// Whether a proto3 scalar without presence is at its default (then not printed).
    fn is_default(&self) -> bool {
        match self {
            Scalar::I64(v) => *v == 0,
            Scalar::U64(v) => *v == 0,
            Scalar::F32(v) => v.to_bits() == 0,
            Scalar::F64(v) => v.to_bits() == 0,
            Scalar::Bool(v) => !*v,
            Scalar::Enum(_, v) => *v == 0,
            Scalar::Str(v) => v.is_empty(),
            Scalar::Msg(..) => false,
        }
    }
}

/// Decodes one value of `kind` (unpacked).
fn scalar(kind: Kind, value: Value<'_>) -> Option<Scalar<'_>> {
    Some(match (kind, value) {
        (Kind::Int64, Value::Varint(v)) => Scalar::I64(v as i64),
        (Kind::Uint64, Value::Varint(v)) => Scalar::U64(v),
        (Kind::Int32, Value::Varint(v)) => Scalar::I64(i64::from(v as i32)),
        (Kind::Uint32, Value::Varint(v)) => Scalar::U64(u64::from(v as u32)),
        (Kind::Sint32, Value::Varint(v)) => {
            let v = v as u32;
            Scalar::I64(i64::from((v >> 1) as i32 ^ -((v & 1) as i32)))
        }
        (Kind::Sint64, Value::Varint(v)) => Scalar::I64((v >> 1) as i64 ^ -((v & 1) as i64)),
        (Kind::Bool, Value::Varint(v)) => Scalar::Bool(v != 0),
        (Kind::Enum(e), Value::Varint(v)) => Scalar::Enum(e, v as i32),
        (Kind::Fixed64, Value::Fixed64(v)) => Scalar::U64(v),
        (Kind::Sfixed64, Value::Fixed64(v)) => Scalar::I64(v as i64),
        (Kind::Double, Value::Fixed64(v)) => Scalar::F64(f64::from_bits(v)),
        (Kind::Fixed32, Value::Fixed32(v)) => Scalar::U64(u64::from(v)),
        (Kind::Sfixed32, Value::Fixed32(v)) => Scalar::I64(i64::from(v as i32)),
        (Kind::Float, Value::Fixed32(v)) => Scalar::F32(f32::from_bits(v)),
        (Kind::String | Kind::Bytes, Value::Bytes(b)) => Scalar::Str(b),
        (Kind::Message(m), Value::Bytes(b)) => Scalar::Msg(m, vec![b]),
        _ => return None,
    })
}

/// The values of a packed repeated scalar field.
fn packed(kind: Kind, bytes: &[u8]) -> Vec<Scalar<'_>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let value = match wire_type(kind) {
            0 => match varint(bytes, &mut pos) {
                Some(v) => Value::Varint(v),
                None => break,
            },
            1 => match bytes.get(pos..pos + 8).and_then(|r| r.try_into().ok()) {
                Some(raw) => {
                    pos += 8;
                    Value::Fixed64(u64::from_le_bytes(raw))
                }
                None => break,
            },
            5 => match bytes.get(pos..pos + 4).and_then(|r| r.try_into().ok()) {
                Some(raw) => {
                    pos += 4;
                    Value::Fixed32(u32::from_le_bytes(raw))
                }
                None => break,
            },
            _ => break,
        };
        if let Some(s) = scalar(kind, value) {
            out.push(s);
        }
    }
    out
}

/// protobuf's `SimpleFtoa`.
fn simple_ftoa(v: f32) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let short = format_g(f64::from(v), 6);
    if short.parse::<f32>().ok() == Some(v) { short } else { format_g(f64::from(v), 9) }
}

/// protobuf's `SimpleDtoa`.
fn simple_dtoa(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let short = format_g(v, 15);
    if short.parse::<f64>().ok() == Some(v) { short } else { format_g(v, 17) }
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

/// Sort key of a map entry: its key field (number 1) as decoded.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
enum MapKey<'a> {
    Int(i128),
    Bool(bool),
    Str(&'a [u8]),
}

fn map_key<'a>(message: &Message, parts: &[&'a [u8]]) -> MapKey<'a> {
    let key_field = message.fields.iter().find(|f| f.number == 1);
    let mut key = None;
    for part in parts {
        for (number, _, value) in read_fields(part).unwrap_or_default() {
            if number != 1 {
                continue;
            }
            if let Some(field) = key_field
                && let Some(s) = scalar(field.kind, value)
            {
                key = Some(s);
            }
        }
    }
    match key {
        Some(Scalar::I64(v)) => MapKey::Int(i128::from(v)),
        Some(Scalar::U64(v)) => MapKey::Int(i128::from(v)),
        Some(Scalar::Bool(v)) => MapKey::Bool(v),
        Some(Scalar::Str(s)) => MapKey::Str(s),
        _ => match key_field.map(|f| f.kind) {
            Some(Kind::String | Kind::Bytes) => MapKey::Str(&[]),
            Some(Kind::Bool) => MapKey::Bool(false),
            _ => MapKey::Int(0),
        },
    }
}

/// Prints one value of `field` at `depth`.
fn print_value(field: &Field, value: &Scalar<'_>, depth: usize, out: &mut String) {
    indent(out, depth);
    out.push_str(field.name);
    match value {
        Scalar::Msg(m, parts) => {
            out.push_str(" {\n");
            print_message(*m, parts, depth + 1, out);
            indent(out, depth);
            out.push_str("}\n");
            return;
        }
        Scalar::I64(v) => {
            let _ = write!(out, ": {v}");
        }
        Scalar::U64(v) => {
            let _ = write!(out, ": {v}");
        }
        Scalar::F32(v) => {
            let _ = write!(out, ": {}", simple_ftoa(*v));
        }
        Scalar::F64(v) => {
            let _ = write!(out, ": {}", simple_dtoa(*v));
        }
        Scalar::Bool(v) => {
            let _ = write!(out, ": {v}");
        }
        Scalar::Enum(e, v) => {
            let name = ENUMS.get(*e).and_then(|values| values.iter().find(|(n, _)| n == v)).map(|(_, name)| *name);
            match name {
                Some(name) => {
                    let _ = write!(out, ": {name}");
                }
                None => {
                    let _ = write!(out, ": {v}");
                }
            }
        }
        Scalar::Str(s) => {
            out.push_str(": \"");
            oxprof_wire::cxx_printf::c_escape_into(s, out);
            out.push('"');
        }
    }
    out.push('\n');
}

/// Prints the fields of message `m` whose wire bytes are `parts` (concatenated).
fn print_message(m: usize, parts: &[&[u8]], depth: usize, out: &mut String) {
    let Some(message) = MESSAGES.get(m) else { return };
    if depth > MAX_DEPTH {
        return;
    }
    let wire: Vec<(u32, u8, Value<'_>)> = parts.iter().flat_map(|p| read_fields(p).unwrap_or_default()).collect();
    for field in message.fields {
        let mut values: Vec<Scalar<'_>> = Vec::new();
        for &(number, wire_type_seen, value) in &wire {
            if number != field.number {
                continue;
            }
            let expected = wire_type(field.kind);
            let decoded: Vec<Scalar<'_>> = if wire_type_seen == expected {
                scalar(field.kind, value).into_iter().collect()
            } else if field.repeated && wire_type_seen == 2 && expected != 2 {
                match value {
                    Value::Bytes(b) => packed(field.kind, b),
                    _ => Vec::new(),
                }
            } else {
                // A wire type the schema does not expect: an unknown field to C++.
                Vec::new()
            };
            if field.repeated {
                values.extend(decoded);
            } else {
                for d in decoded {
                    // Singular: the last value wins; messages merge.
                    match (values.last_mut(), d) {
                        (Some(Scalar::Msg(_, acc)), Scalar::Msg(_, more)) => acc.extend(more),
                        (_, d) => values = vec![d],
                    }
                }
            }
        }
        if !field.repeated {
            if let Some(v) = values.first()
                && (field.presence || message.map_entry || !v.is_default())
            {
                print_value(field, v, depth, out);
            }
            continue;
        }
        let entry_message = match field.kind {
            Kind::Message(e) => MESSAGES.get(e).filter(|e| e.map_entry),
            _ => None,
        };
        if let Some(entry) = entry_message {
            let mut entries: Vec<(MapKey<'_>, Scalar<'_>)> = values
                .into_iter()
                .map(|v| {
                    let key = match &v {
                        Scalar::Msg(_, parts) => map_key(entry, parts),
                        _ => MapKey::Int(0),
                    };
                    (key, v)
                })
                .collect();
            // Later entries with an equal key replace earlier ones, as in a map.
            entries.reverse();
            let mut unique: Vec<(MapKey<'_>, Scalar<'_>)> = Vec::new();
            for (key, value) in entries {
                if !unique.iter().any(|(k, _)| *k == key) {
                    unique.push((key, value));
                }
            }
            unique.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
            for (_, value) in &unique {
                print_map_entry(field, value, depth, out);
            }
            continue;
        }
        for v in &values {
            print_value(field, v, depth, out);
        }
    }
}

/// A map entry: `name {`, `key: ..`, `value ..`, `}` with key and value always printed.
fn print_map_entry(field: &Field, value: &Scalar<'_>, depth: usize, out: &mut String) {
    let Scalar::Msg(m, parts) = value else { return };
    let Some(entry) = MESSAGES.get(*m) else { return };
    indent(out, depth);
    out.push_str(field.name);
    out.push_str(" {\n");
    let wire: Vec<(u32, u8, Value<'_>)> = parts.iter().flat_map(|p| read_fields(p).unwrap_or_default()).collect();
    for f in entry.fields {
        let mut last: Option<Scalar<'_>> = None;
        for &(number, wire_type_seen, v) in &wire {
            if number == f.number && wire_type_seen == wire_type(f.kind) {
                match (last.as_mut(), scalar(f.kind, v)) {
                    (Some(Scalar::Msg(_, acc)), Some(Scalar::Msg(_, more))) => acc.extend(more),
                    (_, Some(s)) => last = Some(s),
                    (_, None) => {}
                }
            }
        }
        let v = last.unwrap_or(match f.kind {
            Kind::Message(mm) => Scalar::Msg(mm, Vec::new()),
            Kind::String | Kind::Bytes => Scalar::Str(&[]),
            Kind::Bool => Scalar::Bool(false),
            Kind::Float => Scalar::F32(0.0),
            Kind::Double => Scalar::F64(0.0),
            Kind::Enum(e) => Scalar::Enum(e, 0),
            Kind::Uint32 | Kind::Uint64 | Kind::Fixed32 | Kind::Fixed64 => Scalar::U64(0),
            _ => Scalar::I64(0),
        });
        print_value(f, &v, depth + 1, out);
    }
    indent(out, depth);
    out.push_str("}\n");
}

/// `TextFormat::Printer::PrintToString` of an `xla.HloProto` (unknown fields hidden).
/// `Err` when the bytes are not a protobuf message (XProf then fails to load the module).
pub fn hlo_proto_text(bytes: &[u8]) -> Result<String, String> {
    if read_fields(bytes).is_none() {
        return Err("the HLO proto does not decode".into());
    }
    let mut out = String::new();
    print_message(HLO_PROTO, &[bytes], 0, &mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(number: u32, wire: u8) -> Vec<u8> {
        let mut out = Vec::new();
        push_varint(&mut out, u64::from(number) << 3 | u64::from(wire));
        out
    }

    fn push_varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn varint_field(number: u32, v: u64) -> Vec<u8> {
        let mut out = key(number, 0);
        push_varint(&mut out, v);
        out
    }

    fn bytes_field(number: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = key(number, 2);
        push_varint(&mut out, payload.len() as u64);
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn prints_like_cpp_text_format() {
        // HloProto { hlo_module { name, id = 0, unknown field 999, schedule { two map
        // entries, out of key order, one with packed instruction ids } } }
        let packed_ids = bytes_field(1, &[3, 4]);
        let entry7 = [varint_field(1, 7), bytes_field(2, &packed_ids)].concat();
        let entry2 = [varint_field(1, 2), bytes_field(2, &[])].concat();
        let schedule = [bytes_field(1, &entry7), bytes_field(1, &entry2)].concat();
        let module = [
            bytes_field(1, "a\"\n\u{e9}".as_bytes()),
            varint_field(5, 0),
            varint_field(999, 5),
            bytes_field(7, &schedule),
            // A second occurrence of a singular string: the last one wins.
            bytes_field(2, b"first"),
            bytes_field(2, b"main"),
        ]
        .concat();
        let proto = bytes_field(1, &module);
        let text = hlo_proto_text(&proto).unwrap();
        assert_eq!(
            text,
            "hlo_module {\n  name: \"a\\\"\\n\\303\\251\"\n  entry_computation_name: \"main\"\n  schedule {\n    \
             sequences {\n      key: 2\n      value {\n      }\n    }\n    sequences {\n      key: 7\n      \
             value {\n        instruction_ids: 3\n        instruction_ids: 4\n      }\n    }\n  }\n}\n"
        );
        assert_eq!(hlo_proto_text(&[]).unwrap(), "");
        assert!(hlo_proto_text(&[0x0a, 0x05, 1]).is_err());
    }

    #[test]
    fn floats_round_trip_like_protobuf() {
        assert_eq!(simple_ftoa(0.1), "0.1");
        assert_eq!(simple_ftoa(1e-7), "1e-07");
        assert_eq!(simple_ftoa(16_777_217.0), "16777216");
        assert_eq!(simple_ftoa(f32::NAN), "nan");
        assert_eq!(simple_dtoa(0.1), "0.1");
        assert_eq!(simple_dtoa(1.0 / 3.0), "0.33333333333333331");
        assert_eq!(simple_dtoa(f64::NEG_INFINITY), "-inf");
    }
}
