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
