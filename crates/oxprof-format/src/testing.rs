//! Building XSpace files in tests: a builder with exact timestamps that writes real
//! protobuf bytes (through prost types generated from the vendored schema), so tests
//! exercise the same decoder as real profiles.
//!
//! ```
//! use oxprof_format::testing::XSpaceBuilder;
//! // python  |-- train 0 --------|
//! //            |- matmul -|
//! let bytes = XSpaceBuilder::new()
//!     .plane("/host:CPU", |p| {
//!         p.line(1, "python", 1_000, |l| {
//!             l.event("train", 0, 100).stat("step_num", 0i64).stat("_r", 1i64);
//!             l.event("matmul", 10, 50);
//!         });
//!     })
//!     .to_bytes();
//! let space = oxprof_format::decode_xspace(&bytes).unwrap();
//! assert_eq!(space.event_count(), 2);
//! ```

use crate::pb;
use prost::Message;
use std::collections::HashMap;

/// A stat value for the builder.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `int64_value`.
    I64(i64),
    /// `uint64_value`.
    U64(u64),
    /// `double_value`.
    F64(f64),
    /// `str_value`.
    Str(String),
    /// `bytes_value`.
    Bytes(Vec<u8>),
    /// `ref_value` naming a stat metadata (created if needed).
    Ref(String),
    /// `compressed_str_value` (gzipped by the builder).
    Compressed(String),
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::I64(v)
    }
}
impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Value::U64(v)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::F64(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Str(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Str(v)
    }
}

/// Builds an XSpace.
#[derive(Default)]
pub struct XSpaceBuilder {
    space: pb::XSpace,
}

impl XSpaceBuilder {
    /// An empty XSpace.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a plane (its id is its position unless set with [`PlaneBuilder::id`]).
    pub fn plane(mut self, name: &str, build: impl FnOnce(&mut PlaneBuilder)) -> Self {
        let mut p = PlaneBuilder {
            plane: pb::XPlane { id: self.space.planes.len() as i64, name: name.to_string(), ..Default::default() },
            event_ids: HashMap::new(),
            stat_ids: HashMap::new(),
        };
        build(&mut p);
        self.space.planes.push(p.plane);
        self
    }

    /// Adds a host name.
    pub fn hostname(mut self, name: &str) -> Self {
        self.space.hostnames.push(name.to_string());
        self
    }

    /// Adds an error message.
    pub fn error(mut self, text: &str) -> Self {
        self.space.errors.push(text.to_string());
        self
    }

    /// Adds a warning message.
    pub fn warning(mut self, text: &str) -> Self {
        self.space.warnings.push(text.to_string());
        self
    }

    /// The serialized XSpace.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.space.encode_to_vec()
    }
}

/// Builds one plane.
pub struct PlaneBuilder {
    plane: pb::XPlane,
    event_ids: HashMap<String, i64>,
    stat_ids: HashMap<String, i64>,
}

impl PlaneBuilder {
    /// Sets the plane id.
    pub fn id(&mut self, id: i64) -> &mut Self {
        self.plane.id = id;
        self
    }

    /// The id of the stat metadata named `name`, creating it.
    pub fn stat_metadata(&mut self, name: &str) -> i64 {
        stat_id(&mut self.plane, &mut self.stat_ids, name)
    }

    /// The id of the event metadata named `name`, creating it.
    pub fn event_metadata(&mut self, name: &str) -> i64 {
        event_id(&mut self.plane, &mut self.event_ids, name)
    }

    /// Sets the display name of an event metadata entry.
    pub fn event_display_name(&mut self, name: &str, display_name: &str) -> &mut Self {
        let id = self.event_metadata(name);
        if let Some(m) = self.plane.event_metadata.get_mut(&id) {
            m.display_name = display_name.to_string();
        }
        self
    }

    /// Adds a stat to an event metadata entry.
    pub fn event_metadata_stat(&mut self, event: &str, stat: &str, value: impl Into<Value>) -> &mut Self {
        let id = self.event_metadata(event);
        let s = make_stat(&mut self.plane, &mut self.stat_ids, stat, value.into());
        if let Some(m) = self.plane.event_metadata.get_mut(&id) {
            m.stats.push(s);
        }
        self
    }

    /// Adds a plane-level stat.
    pub fn stat(&mut self, name: &str, value: impl Into<Value>) -> &mut Self {
        let s = make_stat(&mut self.plane, &mut self.stat_ids, name, value.into());
        self.plane.stats.push(s);
        self
    }

    /// Adds a line starting at `timestamp_ns`.
    pub fn line(
        &mut self,
        id: i64,
        name: &str,
        timestamp_ns: i64,
        build: impl FnOnce(&mut LineBuilder<'_>),
    ) -> &mut Self {
        let mut l = LineBuilder {
            plane: &mut self.plane,
            event_ids: &mut self.event_ids,
            stat_ids: &mut self.stat_ids,
            line: pb::XLine { id, display_id: id, name: name.to_string(), timestamp_ns, ..Default::default() },
        };
        build(&mut l);
        let line = l.line;
        self.plane.lines.push(line);
        self
    }
}

/// Builds one line.
pub struct LineBuilder<'p> {
    plane: &'p mut pb::XPlane,
    event_ids: &'p mut HashMap<String, i64>,
    stat_ids: &'p mut HashMap<String, i64>,
    line: pb::XLine,
}

impl<'p> LineBuilder<'p> {
    /// Sets the display name.
    pub fn display_name(&mut self, name: &str) -> &mut Self {
        self.line.display_name = name.to_string();
        self
    }

    /// Adds an event at `offset_ps` from the line start lasting `duration_ps`.
    pub fn event(&mut self, name: &str, offset_ps: i64, duration_ps: i64) -> EventBuilder<'_, 'p> {
        let metadata_id = event_id(self.plane, self.event_ids, name);
        self.line.events.push(pb::XEvent {
            metadata_id,
            duration_ps,
            data: Some(pb::x_event::Data::OffsetPs(offset_ps)),
            stats: Vec::new(),
        });
        EventBuilder { line: self }
    }

    /// Adds an aggregated event (`num_occurrences` instead of an offset).
    pub fn aggregated_event(&mut self, name: &str, occurrences: i64, duration_ps: i64) -> EventBuilder<'_, 'p> {
        let metadata_id = event_id(self.plane, self.event_ids, name);
        self.line.events.push(pb::XEvent {
            metadata_id,
            duration_ps,
            data: Some(pb::x_event::Data::NumOccurrences(occurrences)),
            stats: Vec::new(),
        });
        EventBuilder { line: self }
    }
}

/// Adds stats to the event just added.
pub struct EventBuilder<'l, 'p> {
    line: &'l mut LineBuilder<'p>,
}

impl EventBuilder<'_, '_> {
    /// Adds a stat.
    pub fn stat(self, name: &str, value: impl Into<Value>) -> Self {
        let s = make_stat(self.line.plane, self.line.stat_ids, name, value.into());
        if let Some(e) = self.line.line.events.last_mut() {
            e.stats.push(s);
        }
        self
    }
}

fn event_id(plane: &mut pb::XPlane, ids: &mut HashMap<String, i64>, name: &str) -> i64 {
    if let Some(&id) = ids.get(name) {
        return id;
    }
    let id = ids.len() as i64 + 1;
    ids.insert(name.to_string(), id);
    plane.event_metadata.insert(id, pb::XEventMetadata { id, name: name.to_string(), ..Default::default() });
    id
}

fn stat_id(plane: &mut pb::XPlane, ids: &mut HashMap<String, i64>, name: &str) -> i64 {
    if let Some(&id) = ids.get(name) {
        return id;
    }
    let id = ids.len() as i64 + 1;
    ids.insert(name.to_string(), id);
    plane.stat_metadata.insert(id, pb::XStatMetadata { id, name: name.to_string(), description: String::new() });
    id
}

fn make_stat(plane: &mut pb::XPlane, ids: &mut HashMap<String, i64>, name: &str, value: Value) -> pb::XStat {
    use pb::x_stat::Value as V;
    let metadata_id = stat_id(plane, ids, name);
    let value = match value {
        Value::I64(v) => V::Int64Value(v),
        Value::U64(v) => V::Uint64Value(v),
        Value::F64(v) => V::DoubleValue(v),
        Value::Str(v) => V::StrValue(v),
        Value::Bytes(v) => V::BytesValue(v),
        Value::Ref(v) => V::RefValue(stat_id(plane, ids, &v) as u64),
        Value::Compressed(v) => {
            use std::io::Write;
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            let _ = gz.write_all(v.as_bytes());
            V::CompressedStrValue(gz.finish().unwrap_or_default())
        }
    };
    pb::XStat { metadata_id, value: Some(value) }
}

/// Decodes `bytes` with both oxprof's decoder and prost (the reference protobuf
/// implementation) and checks that they agree on every field. Returns `Ok(false)` when
/// prost rejects the input (nothing to compare), `Err` with the first difference found.
///
/// Used by tests over real profiles and random mutations, and by the fuzz target.
pub fn crosscheck(bytes: &[u8]) -> Result<bool, String> {
    let Ok(reference) = pb::XSpace::decode(bytes) else {
        return Ok(false);
    };
    if has_mistyped_map_field(bytes) {
        // prost reads map entries without checking their wire type, where protobuf (and
        // oxprof) skip such a field as unknown: no common ground to compare on.
        return Ok(false);
    }
    let ours = match crate::decode_xspace(bytes) {
        Ok(space) => space,
        // Our decoder calls an empty buffer or one with no XSpace field an error, where
        // protobuf sees an empty message.
        Err(crate::DecodeError::Empty | crate::DecodeError::NotAnXSpace(_))
            if reference.planes.is_empty()
                && reference.errors.is_empty()
                && reference.warnings.is_empty()
                && reference.hostnames.is_empty() =>
        {
            return Ok(true);
        }
        // A budget against hostile input is not a disagreement about the format.
        Err(crate::DecodeError::LimitExceeded(_)) => return Ok(false),
        Err(e) => return Err(format!("prost decodes it but oxprof fails: {e}")),
    };
    crosscheck_space(&reference, &ours)?;
    Ok(true)
}

/// Whether a plane carries an `event_metadata`/`stat_metadata` field (4/5) with a wire
/// type other than length-delimited.
fn has_mistyped_map_field(bytes: &[u8]) -> bool {
    use crate::wire::{Reader, WireType};
    let mut top = Reader::new(bytes, 0);
    while !top.is_empty() {
        let Ok((field, wt)) = top.tag() else { return false };
        if field == 1 && wt == WireType::Len {
            let Ok((plane, base)) = top.len_delimited() else { return false };
            let mut r = Reader::new(plane, base);
            while !r.is_empty() {
                let Ok((f, w)) = r.tag() else { break };
                if (f == 4 || f == 5) && w != WireType::Len {
                    return true;
                }
                if r.skip(f, w).is_err() {
                    break;
                }
            }
        } else if top.skip(field, wt).is_err() {
            return false;
        }
    }
    false
}

fn check<T: PartialEq + std::fmt::Debug>(what: &dyn Fn() -> String, expected: T, actual: T) -> Result<(), String> {
    if expected == actual { Ok(()) } else { Err(format!("{}: expected {expected:?}, got {actual:?}", what())) }
}

fn crosscheck_space(reference: &pb::XSpace, ours: &crate::XSpace) -> Result<(), String> {
    check(&|| "errors".into(), &reference.errors, &ours.errors)?;
    check(&|| "warnings".into(), &reference.warnings, &ours.warnings)?;
    check(&|| "hostnames".into(), &reference.hostnames, &ours.hostnames)?;
    check(&|| "plane count".into(), reference.planes.len(), ours.planes.len())?;
    for (pi, (rp, op)) in reference.planes.iter().zip(&ours.planes).enumerate() {
        let at = |what: &str| format!("planes[{pi}].{what}");
        check(&|| at("id"), rp.id, op.id)?;
        check(&|| at("name"), &rp.name, &op.name)?;
        check(&|| at("event_metadata count"), rp.event_metadata.len(), op.event_metadata_count())?;
        check(&|| at("stat_metadata count"), rp.stat_metadata.len(), op.stat_metadata_count())?;
        for (key, rm) in &rp.stat_metadata {
            let id = op.stat_metadata_by_file_id(*key).ok_or_else(|| at(&format!("stat_metadata[{key}] missing")))?;
            let om = op.stat_metadata_at(id);
            check(&|| at(&format!("stat_metadata[{key}].id")), rm.id, om.id)?;
            check(&|| at(&format!("stat_metadata[{key}].name")), rm.name.as_str(), op.str(om.name))?;
            check(
                &|| at(&format!("stat_metadata[{key}].description")),
                rm.description.as_str(),
                op.str(om.description),
            )?;
        }
        for (key, rm) in &rp.event_metadata {
            let id = op.event_metadata_by_file_id(*key).ok_or_else(|| at(&format!("event_metadata[{key}] missing")))?;
            let om = op.event_metadata_at(id);
            let at_m = |w: &str| at(&format!("event_metadata[{key}].{w}"));
            check(&|| at_m("id"), rm.id, om.id)?;
            check(&|| at_m("name"), rm.name.as_str(), op.str(om.name))?;
            check(&|| at_m("display_name"), rm.display_name.as_str(), op.str(om.display_name))?;
            check(&|| at_m("metadata"), &rm.metadata[..], &om.metadata[..])?;
            check(&|| at_m("child_id"), &rm.child_id[..], &om.child_ids[..])?;
            crosscheck_stats(rp, op, &rm.stats, op.metadata_stats(id), &at_m("stats"))?;
        }
        crosscheck_stats(rp, op, &rp.stats, op.stats(), &at("stats"))?;
        check(&|| at("line count"), rp.lines.len(), op.lines.len())?;
        for (li, (rl, ol)) in rp.lines.iter().zip(&op.lines).enumerate() {
            let at_l = |w: &str| at(&format!("lines[{li}].{w}"));
            check(&|| at_l("id"), rl.id, ol.id)?;
            check(&|| at_l("display_id"), rl.display_id, ol.display_id)?;
            check(&|| at_l("name"), &rl.name, &ol.name)?;
            check(&|| at_l("display_name"), &rl.display_name, &ol.display_name)?;
            check(&|| at_l("timestamp_ns"), rl.timestamp_ns, ol.timestamp_ns)?;
            check(&|| at_l("duration_ps"), rl.duration_ps, ol.duration_ps)?;
            check(&|| at_l("event count"), rl.events.len(), ol.event_count())?;
            for (ei, (re, oe)) in rl.events.iter().zip(ol.events(op)).enumerate() {
                let at_e = |w: &str| at_l(&format!("events[{ei}].{w}"));
                match op.event_metadata_by_file_id(re.metadata_id) {
                    Some(id) => check(&|| at_e("metadata"), id, oe.metadata_id())?,
                    None => return Err(at_e("metadata placeholder missing")),
                }
                let (offset, occurrences) = match re.data {
                    Some(pb::x_event::Data::OffsetPs(o)) => (o, None),
                    Some(pb::x_event::Data::NumOccurrences(n)) => (0, Some(n)),
                    None => (0, None),
                };
                check(&|| at_e("offset_ps"), offset, oe.offset_ps())?;
                check(&|| at_e("num_occurrences"), occurrences, oe.num_occurrences())?;
                check(&|| at_e("duration_ps"), re.duration_ps, oe.duration_ps())?;
                crosscheck_stats(rp, op, &re.stats, oe.stats(), &at_e("stats"))?;
            }
        }
    }
    Ok(())
}

fn crosscheck_stats(
    rp: &pb::XPlane,
    op: &crate::XPlane,
    reference: &[pb::XStat],
    ours: crate::Stats<'_>,
    at: &str,
) -> Result<(), String> {
    use crate::StatValue;
    use pb::x_stat::Value as V;
    check(&|| format!("{at} count"), reference.len(), ours.len())?;
    for (si, (rs, os)) in reference.iter().zip(ours).enumerate() {
        let at_s = || format!("{at}[{si}]");
        check(&|| format!("{}.metadata", at_s()), op.stat_metadata_by_file_id(rs.metadata_id), Some(os.metadata_id()))?;
        let gunzipped;
        let expected = match &rs.value {
            None => StatValue::Unset,
            Some(V::DoubleValue(d)) => StatValue::Double(*d),
            Some(V::Uint64Value(x)) => StatValue::Uint64(*x),
            Some(V::Int64Value(x)) => StatValue::Int64(*x),
            Some(V::StrValue(s)) => StatValue::Str(s),
            Some(V::BytesValue(b)) => StatValue::Bytes(b),
            Some(V::RefValue(r)) => StatValue::Ref(
                i64::try_from(*r).ok().and_then(|r| rp.stat_metadata.get(&r)).map_or("", |m| m.name.as_str()),
            ),
            Some(V::CompressedStrValue(c)) => {
                use std::io::Read;
                let mut out = Vec::new();
                gunzipped = match flate2::read::GzDecoder::new(&c[..]).read_to_end(&mut out) {
                    Ok(_) => String::from_utf8_lossy(&out).into_owned(),
                    Err(_) => String::new(),
                };
                StatValue::Str(&gunzipped)
            }
        };
        let same = match (expected, os.value) {
            (StatValue::Double(a), StatValue::Double(b)) => a.to_bits() == b.to_bits(),
            (a, b) => a == b,
        };
        if !same {
            return Err(format!("{}: expected {expected:?}, got {:?}", at_s(), os.value));
        }
    }
    Ok(())
}

/// Hostile inputs for tests of [`crate::LoadLimits`]: bytes that cost far more to decode
/// than their size, written as raw protobuf (the builder would take too long for millions
/// of items). Each is valid protobuf, so only the limits stop it.
pub mod bombs {
    use std::io::Write;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    /// A length-delimited field.
    fn field(number: u64, bytes: &[u8], out: &mut Vec<u8>) {
        varint(number << 3 | 2, out);
        varint(bytes.len() as u64, out);
        out.extend_from_slice(bytes);
    }

    /// A varint field.
    fn field_varint(number: u64, value: u64, out: &mut Vec<u8>) {
        varint(number << 3, out);
        varint(value, out);
    }

    /// `n` empty planes named `/device:GPU:<i>` (about 19 bytes each).
    pub fn empty_planes(n: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(n * 20);
        let mut plane = Vec::new();
        for i in 0..n {
            plane.clear();
            field(2, format!("/device:GPU:{i}").as_bytes(), &mut plane);
            field(1, &plane, &mut out);
        }
        out
    }

    /// One `/host:CPU` plane with `n` empty lines (2 bytes each).
    pub fn empty_lines(n: usize) -> Vec<u8> {
        let mut plane = Vec::with_capacity(2 * n + 16);
        field(2, b"/host:CPU", &mut plane);
        for _ in 0..n {
            field(3, &[], &mut plane);
        }
        let mut out = Vec::with_capacity(plane.len() + 8);
        field(1, &plane, &mut out);
        out
    }

    /// One `/host:CPU` plane with `n` empty event metadata entries (2 bytes each).
    pub fn empty_metadata(n: usize) -> Vec<u8> {
        let mut plane = Vec::with_capacity(2 * n + 16);
        field(2, b"/host:CPU", &mut plane);
        for _ in 0..n {
            field(4, &[], &mut plane);
        }
        let mut out = Vec::with_capacity(plane.len() + 8);
        field(1, &plane, &mut out);
        out
    }

    /// One `/host:CPU` line of `n` events, each naming an event metadata id the file
    /// lacks (a placeholder entry each, for about 5 bytes on the wire).
    pub fn unknown_metadata_ids(n: usize) -> Vec<u8> {
        let mut line = Vec::with_capacity(6 * n + 16);
        let mut event = Vec::new();
        for i in 0..n {
            event.clear();
            field_varint(1, i as u64 + 1, &mut event);
            field(4, &event, &mut line);
        }
        let mut plane = Vec::with_capacity(line.len() + 32);
        field(2, b"/host:CPU", &mut plane);
        field(3, &line, &mut plane);
        let mut out = Vec::with_capacity(plane.len() + 8);
        field(1, &plane, &mut out);
        out
    }

    /// One event on a `/host:CPU` line with `count` `compressed_str_value` stats, each
    /// inflating to `each` bytes of `a` (about `each / 1000` bytes on the wire).
    pub fn compressed_strings(count: usize, each: usize) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let chunk = vec![b'a'; 1 << 20];
        let mut left = each;
        while left > 0 {
            let n = left.min(chunk.len());
            let _ = gz.write_all(&chunk[..n]);
            left -= n;
        }
        let compressed = gz.finish().unwrap_or_default();
        let mut event = Vec::new();
        field_varint(1, 1, &mut event);
        let mut stat = Vec::new();
        field_varint(1, 1, &mut stat);
        field(8, &compressed, &mut stat);
        for _ in 0..count {
            field(4, &stat, &mut event);
        }
        let mut line = Vec::new();
        field_varint(1, 1, &mut line);
        field(4, &event, &mut line);
        let (mut event_metadata, mut stat_metadata, mut value) = (Vec::new(), Vec::new(), Vec::new());
        field_varint(1, 1, &mut value);
        field(2, b"e", &mut value);
        field_varint(1, 1, &mut event_metadata);
        field(2, &value, &mut event_metadata);
        value.clear();
        field_varint(1, 1, &mut value);
        field(2, b"s", &mut value);
        field_varint(1, 1, &mut stat_metadata);
        field(2, &value, &mut stat_metadata);
        let mut plane = Vec::new();
        field(2, b"/host:CPU", &mut plane);
        field(3, &line, &mut plane);
        field(4, &event_metadata, &mut plane);
        field(5, &stat_metadata, &mut plane);
        let mut out = Vec::new();
        field(1, &plane, &mut out);
        out
    }

    /// Writes a gzip stream that inflates to `n` zero bytes (about `n / 1000` bytes),
    /// generated on the fly.
    pub fn gzip_of_zeros(n: u64, out: impl Write) -> std::io::Result<()> {
        let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::best());
        let zeros = vec![0u8; 1 << 20];
        let mut left = n;
        while left > 0 {
            let k = left.min(zeros.len() as u64) as usize;
            gz.write_all(&zeros[..k])?;
            left -= k as u64;
        }
        gz.finish()?;
        Ok(())
    }
}
