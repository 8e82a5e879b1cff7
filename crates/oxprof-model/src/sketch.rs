//! The easy way in: a model described by names, for importers of small formats and for
//! tests. Metadata is created on first use of a name (keys 1, 2, 3, … in that order) and
//! the plane is built through [`crate::PlaneBuilder`] when its closure returns, so it
//! holds exactly what a decoder would have made of the same content.
//!
//! ```
//! use oxprof_model::ModelBuilder;
//! // python  |-- train 0 --------|
//! //            |- matmul -|
//! let space = ModelBuilder::new()
//!     .plane("/host:CPU", |p| {
//!         p.line(1, "python", 1_000, |l| {
//!             l.event("train", 0, 100).stat("step_num", 0i64).stat("_r", 1i64);
//!             l.event("matmul", 10, 50);
//!         });
//!     })
//!     .build()
//!     .unwrap();
//! assert_eq!(space.event_count(), 2);
//! ```

use crate::builder::{BuildError, LineBuilder, NewEventMetadata, PlaneBuilder, StatInput};
use crate::limits::{Limit, SharedBudget};
use crate::model::XSpace;
use crate::strings::StrId;
use std::collections::HashMap;

/// A stat value by name-level content.
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

/// A stat as sketched: its stat metadata key and value (refs resolved to keys).
#[derive(Debug, Clone)]
enum SketchedValue {
    Plain(Value),
    Ref(i64),
}

impl SketchedValue {
    fn input(&self) -> StatInput<'_> {
        match self {
            SketchedValue::Plain(Value::I64(v)) => StatInput::Int64(*v),
            SketchedValue::Plain(Value::U64(v)) => StatInput::Uint64(*v),
            SketchedValue::Plain(Value::F64(v)) => StatInput::Double(*v),
            SketchedValue::Plain(Value::Str(s)) => StatInput::Str(s),
            SketchedValue::Plain(Value::Bytes(b)) => StatInput::Bytes(b),
            SketchedValue::Plain(Value::Ref(_)) => StatInput::Unset,
            SketchedValue::Ref(key) => StatInput::Ref(*key as u64),
        }
    }
}

/// Builds an [`XSpace`] plane by plane.
#[derive(Debug, Default)]
pub struct ModelBuilder {
    space: XSpace,
    error: Option<BuildError>,
}

impl ModelBuilder {
    /// An empty space.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a plane (its id is its position unless set with [`PlaneSketch::id`]).
    pub fn plane(mut self, name: &str, build: impl FnOnce(&mut PlaneSketch)) -> Self {
        let mut sketch = PlaneSketch::new(self.space.planes.len() as i64, name);
        build(&mut sketch);
        match sketch.build(&mut self.space) {
            Ok(()) => {}
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
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

    /// The space built so far (planes the builder refused are missing: see
    /// [`ModelBuilder::build`]).
    pub fn space(&self) -> &XSpace {
        &self.space
    }

    /// The space, or why a plane could not be built (a model limit, never for test-sized
    /// content).
    pub fn build(self) -> Result<XSpace, BuildError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.space),
        }
    }
}

/// An event metadata entry as sketched.
#[derive(Debug, Default)]
struct EventMetadataSketch {
    name: String,
    display_name: String,
    stats: Vec<(i64, SketchedValue)>,
}

/// How an event sits on its line.
#[derive(Debug, Clone, Copy)]
enum Timing {
    Offset(i64),
    Occurrences(i64),
}

#[derive(Debug)]
struct EventSketchRecord {
    metadata: i64,
    timing: Timing,
    duration_ps: i64,
    stats: Vec<(i64, SketchedValue)>,
}

#[derive(Debug)]
struct LineSketchRecord {
    id: i64,
    display_id: i64,
    name: String,
    display_name: String,
    timestamp_ns: i64,
    duration_ps: i64,
    events: Vec<EventSketchRecord>,
}

/// One plane, described by names.
#[derive(Debug)]
pub struct PlaneSketch {
    id: i64,
    name: String,
    event_ids: HashMap<String, i64>,
    event_metadata: Vec<EventMetadataSketch>,
    stat_ids: HashMap<String, i64>,
    stat_names: Vec<String>,
    stats: Vec<(i64, SketchedValue)>,
    lines: Vec<LineSketchRecord>,
}

impl PlaneSketch {
    fn new(id: i64, name: &str) -> Self {
        PlaneSketch {
            id,
            name: name.to_string(),
            event_ids: HashMap::new(),
            event_metadata: Vec::new(),
            stat_ids: HashMap::new(),
            stat_names: Vec::new(),
            stats: Vec::new(),
            lines: Vec::new(),
        }
    }

    /// Sets the plane id.
    pub fn id(&mut self, id: i64) -> &mut Self {
        self.id = id;
        self
    }

    /// The key of the stat metadata named `name`, creating it.
    pub fn stat_metadata(&mut self, name: &str) -> i64 {
        if let Some(&id) = self.stat_ids.get(name) {
            return id;
        }
        let id = self.stat_names.len() as i64 + 1;
        self.stat_ids.insert(name.to_string(), id);
        self.stat_names.push(name.to_string());
        id
    }

    /// The key of the event metadata named `name`, creating it.
    pub fn event_metadata(&mut self, name: &str) -> i64 {
        if let Some(&id) = self.event_ids.get(name) {
            return id;
        }
        let id = self.event_metadata.len() as i64 + 1;
        self.event_ids.insert(name.to_string(), id);
        self.event_metadata.push(EventMetadataSketch { name: name.to_string(), ..Default::default() });
        id
    }

    /// Sets the display name of an event metadata entry.
    pub fn event_display_name(&mut self, name: &str, display_name: &str) -> &mut Self {
        let id = self.event_metadata(name);
        if let Some(m) = self.event_metadata.get_mut(id as usize - 1) {
            m.display_name = display_name.to_string();
        }
        self
    }

    /// Adds a stat to an event metadata entry.
    pub fn event_metadata_stat(&mut self, event: &str, stat: &str, value: impl Into<Value>) -> &mut Self {
        let id = self.event_metadata(event);
        let s = self.sketch_stat(stat, value.into());
        if let Some(m) = self.event_metadata.get_mut(id as usize - 1) {
            m.stats.push(s);
        }
        self
    }

    /// Adds a plane-level stat.
    pub fn stat(&mut self, name: &str, value: impl Into<Value>) -> &mut Self {
        let s = self.sketch_stat(name, value.into());
        self.stats.push(s);
        self
    }

    /// Adds a line starting at `timestamp_ns` (its display id is `id`).
    pub fn line(
        &mut self,
        id: i64,
        name: &str,
        timestamp_ns: i64,
        build: impl FnOnce(&mut LineSketch<'_>),
    ) -> &mut Self {
        let record = LineSketchRecord {
            id,
            display_id: id,
            name: name.to_string(),
            display_name: String::new(),
            timestamp_ns,
            duration_ps: 0,
            events: Vec::new(),
        };
        let mut l = LineSketch { plane: self, line: record };
        build(&mut l);
        let record = l.line;
        self.lines.push(record);
        self
    }

    fn sketch_stat(&mut self, name: &str, value: Value) -> (i64, SketchedValue) {
        let key = self.stat_metadata(name);
        let value = match value {
            Value::Ref(target) => SketchedValue::Ref(self.stat_metadata(&target)),
            other => SketchedValue::Plain(other),
        };
        (key, value)
    }

    /// Builds the plane through [`PlaneBuilder`] into `space`.
    fn build(self, space: &mut XSpace) -> Result<(), BuildError> {
        let budget = SharedBudget::unlimited(Limit::MetadataEntries);
        let mut plane = PlaneBuilder::new(self.id, self.name);
        plane.reserve(self.event_metadata.len(), self.stat_names.len(), self.lines.len());
        for (key, name) in (1..).zip(&self.stat_names) {
            let name = plane.intern(name);
            plane.add_stat_metadata(key, key, name, StrId::EMPTY)?;
        }
        for (key, entry) in (1..).zip(&self.event_metadata) {
            for (stat, value) in &entry.stats {
                plane.add_metadata_stat(*stat, value.input(), &budget)?;
            }
            let name = plane.intern(&entry.name);
            let display_name = plane.intern(&entry.display_name);
            plane.add_event_metadata(key, NewEventMetadata { id: key, name, display_name, ..Default::default() })?;
        }
        for (stat, value) in &self.stats {
            plane.add_plane_stat(*stat, value.input(), &budget)?;
        }
        let ids = plane.metadata_ids();
        for record in self.lines {
            let mut line = LineBuilder::new(&ids, &budget, record.events.len());
            line.set_id(record.id);
            line.set_display_id(record.display_id);
            line.set_name(record.name);
            line.set_display_name(record.display_name);
            line.set_timestamp_ns(record.timestamp_ns);
            line.set_duration_ps(record.duration_ps);
            for event in &record.events {
                for (stat, value) in &event.stats {
                    line.push_stat(&ids, *stat, value.input())?;
                }
                match event.timing {
                    Timing::Offset(offset) => line.push_event(&ids, event.metadata, offset, event.duration_ps)?,
                    Timing::Occurrences(n) => line.push_aggregated_event(&ids, event.metadata, n, event.duration_ps)?,
                }
            }
            plane.add_line(line.finish())?;
        }
        space.planes.push(plane.finish(&mut space.diagnostics));
        Ok(())
    }
}

/// One line of a [`PlaneSketch`].
#[derive(Debug)]
pub struct LineSketch<'p> {
    plane: &'p mut PlaneSketch,
    line: LineSketchRecord,
}

impl<'p> LineSketch<'p> {
    /// Sets the display name.
    pub fn display_name(&mut self, name: &str) -> &mut Self {
        self.line.display_name = name.to_string();
        self
    }

    /// Sets `XLine.duration_ps`.
    pub fn duration_ps(&mut self, duration_ps: i64) -> &mut Self {
        self.line.duration_ps = duration_ps;
        self
    }

    /// Adds an event at `offset_ps` from the line start lasting `duration_ps`.
    pub fn event(&mut self, name: &str, offset_ps: i64, duration_ps: i64) -> EventSketch<'_, 'p> {
        self.push(name, Timing::Offset(offset_ps), duration_ps)
    }

    /// Adds an aggregated event (`num_occurrences` instead of an offset).
    pub fn aggregated_event(&mut self, name: &str, occurrences: i64, duration_ps: i64) -> EventSketch<'_, 'p> {
        self.push(name, Timing::Occurrences(occurrences), duration_ps)
    }

    fn push(&mut self, name: &str, timing: Timing, duration_ps: i64) -> EventSketch<'_, 'p> {
        let metadata = self.plane.event_metadata(name);
        self.line.events.push(EventSketchRecord { metadata, timing, duration_ps, stats: Vec::new() });
        EventSketch { line: self }
    }
}

/// Adds stats to the event just added.
#[derive(Debug)]
pub struct EventSketch<'l, 'p> {
    line: &'l mut LineSketch<'p>,
}

impl EventSketch<'_, '_> {
    /// Adds a stat.
    pub fn stat(self, name: &str, value: impl Into<Value>) -> Self {
        let s = self.line.plane.sketch_stat(name, value.into());
        if let Some(e) = self.line.line.events.last_mut() {
            e.stats.push(s);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::StatValue;

    #[test]
    fn names_become_metadata_in_first_use_order_and_refs_resolve() {
        let space = ModelBuilder::new()
            .hostname("vm")
            .plane("/host:CPU", |p| {
                p.id(7).stat("clock", 5u64).event_display_name("op", "Op");
                p.event_metadata_stat("op", "flops", 2.5);
                p.line(3, "t", 1_000, |l| {
                    l.display_name("thread").duration_ps(9);
                    l.event("op", 10, 20).stat("kind", Value::Ref("clock".into())).stat("s", "x");
                    l.aggregated_event("agg", 4, 30).stat("b", Value::Bytes(vec![1, 2]));
                });
            })
            .build()
            .unwrap();
        assert_eq!(space.hostnames, ["vm"]);
        let p = &space.planes[0];
        assert_eq!((p.id, p.event_metadata_count(), p.stat_metadata_count()), (7, 2, 5));
        let names: Vec<&str> = p.stat_metadata().iter().map(|m| p.str(m.name)).collect();
        assert_eq!(names, ["clock", "flops", "kind", "s", "b"]);
        let line = &p.lines[0];
        assert_eq!((line.id, line.display_id, line.display_name.as_str(), line.duration_ps), (3, 3, "thread", 9));
        let op = line.event(p, 0);
        assert_eq!((op.name(), op.display_name(), op.offset_ps(), op.duration_ps()), ("op", "Op", 10, 20));
        let values: Vec<StatValue<'_>> = op.stats().map(|s| s.value).collect();
        assert_eq!(values, [StatValue::Ref("clock"), StatValue::Str("x")]);
        assert_eq!(op.stats().next().unwrap().ref_key(), Some(1));
        assert_eq!(op.metadata_stats().next().unwrap().value, StatValue::Double(2.5));
        let agg = line.event(p, 1);
        assert_eq!((agg.num_occurrences(), agg.offset_ps()), (Some(4), 0));
        assert_eq!(agg.stats().next().unwrap().value, StatValue::Bytes(&[1, 2]));
        assert_eq!(p.stats().next().unwrap().as_u64(), Some(5));
        assert!(space.diagnostics.is_empty());
    }
}
