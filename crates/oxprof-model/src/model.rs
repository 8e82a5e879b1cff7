//! The in-memory XSpace model: planes, lines, events, stats and metadata, stored in
//! compact columns with interned strings, read through borrowed views.
//!
//! Invariants (established by [`crate::PlaneBuilder`], the only way in; relied on by every
//! reader):
//! * every event's metadata index and every stat's metadata index is valid for its plane
//!   (ids missing from the input get placeholder metadata with an empty name, counted in
//!   [`crate::Diagnostics`]);
//! * string ids index the owning plane's [`StringTable`];
//! * order of planes, lines, events and stats is the input's order.

use crate::builder::Unsettled;
use crate::columns::{BlockedI64, EscapedI64, IdColumn, RowEnds};
use crate::diagnostics::Diagnostics;
use crate::key_index::KeyIndex;
use crate::schema::{HostEventType, StatType};
use crate::strings::{StrId, StringTable};
use std::sync::Arc;

/// Dense index of an event metadata entry within its plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventMetadataId(pub(crate) u32);

/// Dense index of a stat metadata entry within its plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StatMetadataId(pub(crate) u32);

impl From<EventMetadataId> for usize {
    fn from(id: EventMetadataId) -> usize {
        id.index()
    }
}

impl From<StatMetadataId> for usize {
    fn from(id: StatMetadataId) -> usize {
        id.index()
    }
}

impl EventMetadataId {
    /// Position in [`XPlane::event_metadata`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl StatMetadataId {
    /// Position in [`XPlane::stat_metadata`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A decoded XSpace: everything one host's profile file holds.
#[derive(Debug, Default)]
pub struct XSpace {
    /// Planes in file order.
    pub planes: Vec<XPlane>,
    /// `XSpace.errors`: problems the profiler reported while collecting.
    pub errors: Vec<String>,
    /// `XSpace.warnings`.
    pub warnings: Vec<String>,
    /// `XSpace.hostnames`.
    pub hostnames: Vec<String>,
    /// What the importer skipped or repaired.
    pub diagnostics: Diagnostics,
}

impl XSpace {
    /// The first plane with exactly this name.
    pub fn plane(&self, name: &str) -> Option<&XPlane> {
        self.planes.iter().find(|p| p.name == name)
    }

    /// Planes whose name starts with `prefix`, in file order.
    pub fn planes_with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a XPlane> {
        self.planes.iter().filter(move |p| p.name.starts_with(prefix))
    }

    /// Total number of events over all planes.
    pub fn event_count(&self) -> usize {
        self.planes.iter().map(XPlane::event_count).sum()
    }

    /// Approximate heap bytes held by the model (for memory budgets and benchmarks).
    pub fn heap_bytes(&self) -> usize {
        self.planes.iter().map(XPlane::heap_bytes).sum()
    }
}

/// `XEventMetadata`: what events of one kind share.
#[derive(Debug, Clone)]
pub struct EventMetadata {
    /// The id used in the file.
    pub id: i64,
    /// Name (for HLO ops: the long form, e.g. the HLO expression).
    pub name: StrId,
    /// Display name (for HLO ops: the short op name); empty when unset.
    pub display_name: StrId,
    /// `XEventMetadata.metadata`: opaque serialized bytes.
    pub metadata: ThinSlice<u8>,
    /// Ids (in the file's id space) of child event metadata, e.g. fused ops.
    pub child_ids: ThinSlice<i64>,
    /// The host event type its name resolves to, if any.
    pub host_event_type: Option<HostEventType>,
    pub(crate) stats: std::ops::Range<u32>,
    /// Its key in the plane's `event_metadata` map (almost always `id`).
    pub(crate) key: i64,
    /// Made for an id that events used but the input lacked.
    pub(crate) placeholder: bool,
}

impl EventMetadata {
    /// Its key in the input's `event_metadata` map: the id events refer to it by (almost
    /// always equal to [`EventMetadata::id`]).
    pub fn key(&self) -> i64 {
        self.key
    }

    /// Whether the entry is a placeholder for an id that events used but the input lacked.
    pub fn is_placeholder(&self) -> bool {
        self.placeholder
    }
}

/// A boxed slice in one pointer, for what most entries of a table leave empty (each event
/// metadata entry has opaque bytes and child ids, and a trace may have millions of entries,
/// almost none with either): empty without allocating, else a box of the boxed slice. Reads
/// as a slice.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct ThinSlice<T>(Option<Box<Box<[T]>>>);

impl<T> std::ops::Deref for ThinSlice<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        match &self.0 {
            Some(items) => items,
            None => &[],
        }
    }
}

impl<T> From<Box<[T]>> for ThinSlice<T> {
    fn from(items: Box<[T]>) -> Self {
        ThinSlice((!items.is_empty()).then(|| Box::new(items)))
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for ThinSlice<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// `XStatMetadata`: the name (and optional description) of a stat kind.
#[derive(Debug, Clone)]
pub struct StatMetadata {
    /// The id used in the file.
    pub id: i64,
    /// Name, e.g. `step_num`.
    pub name: StrId,
    /// Description; empty when unset.
    pub description: StrId,
    /// The stat type its name resolves to, if any.
    pub stat_type: Option<StatType>,
    /// Its key in the plane's `stat_metadata` map (almost always `id`).
    pub(crate) key: i64,
    /// Made for an id that stats used but the input lacked.
    pub(crate) placeholder: bool,
}

impl StatMetadata {
    /// Its key in the input's `stat_metadata` map: the id stats refer to it by (almost
    /// always equal to [`StatMetadata::id`]).
    pub fn key(&self) -> i64 {
        self.key
    }

    /// Whether the entry is a placeholder for an id that stats used but the input lacked.
    pub fn is_placeholder(&self) -> bool {
        self.placeholder
    }
}

/// One plane: a set of timelines (lines) from one profiling source.
#[derive(Debug)]
pub struct XPlane {
    /// `XPlane.id`.
    pub id: i64,
    /// `XPlane.name`, e.g. `/host:CPU`.
    pub name: String,
    /// Lines in file order.
    pub lines: Vec<XLine>,
    /// Shared only while an importer that gave the plane its table still reads it (see
    /// [`crate::PlaneBuilder::with_strings`]).
    pub(crate) strings: Arc<StringTable>,
    pub(crate) event_metadata: Vec<EventMetadata>,
    pub(crate) event_metadata_by_id: KeyIndex,
    pub(crate) stat_metadata: Vec<StatMetadata>,
    pub(crate) stat_metadata_by_id: KeyIndex,
    /// Stats of event metadata (ranges in [`EventMetadata::stats`]).
    pub(crate) metadata_stats: StatColumns,
    /// Plane-level stats (all rows).
    pub(crate) plane_stats: StatColumns,
    /// Bytes values of metadata and plane stats.
    pub(crate) bytes: Vec<Box<[u8]>>,
    /// Number of event metadata entries the input holds (placeholders excluded).
    pub(crate) event_metadata_in_file: usize,
    /// Number of stat metadata entries the input holds (placeholders excluded).
    pub(crate) stat_metadata_in_file: usize,
    /// Lines in the input that were left out (an importer asked for metadata only).
    pub(crate) lines_not_decoded: usize,
}

impl XPlane {
    /// Number of the plane's lines that were left out because only metadata was asked for
    /// (e.g. `oxprof_format::load_xspace_lines_of`); 0 after a full decode.
    pub fn lines_not_decoded(&self) -> usize {
        self.lines_not_decoded
    }

    /// The plane's string table.
    pub fn strings(&self) -> &StringTable {
        &self.strings
    }

    /// Resolves an interned string.
    #[inline]
    pub fn str(&self, id: StrId) -> &str {
        self.strings.get(id)
    }

    /// All event metadata (input entries, then placeholders for ids events referred to but
    /// the input lacked, in the order the builder met them).
    pub fn event_metadata(&self) -> &[EventMetadata] {
        &self.event_metadata
    }

    /// All stat metadata (input entries, then placeholders).
    pub fn stat_metadata(&self) -> &[StatMetadata] {
        &self.stat_metadata
    }

    /// Number of `event_metadata` map entries in the input (what XProf's protobuf counts).
    pub fn event_metadata_count(&self) -> usize {
        self.event_metadata_in_file
    }

    /// Number of `stat_metadata` map entries in the input.
    pub fn stat_metadata_count(&self) -> usize {
        self.stat_metadata_in_file
    }

    /// Dense ids of all event metadata, in [`XPlane::event_metadata`] order.
    pub fn event_metadata_ids(&self) -> impl Iterator<Item = EventMetadataId> + use<> {
        (0..self.event_metadata.len() as u32).map(EventMetadataId)
    }

    /// Event metadata by dense id.
    #[inline]
    pub fn event_metadata_at(&self, id: EventMetadataId) -> &EventMetadata {
        &self.event_metadata[id.index()]
    }

    /// Stat metadata by dense id.
    #[inline]
    pub fn stat_metadata_at(&self, id: StatMetadataId) -> &StatMetadata {
        &self.stat_metadata[id.index()]
    }

    /// Event metadata by the id used in the input (its map key).
    pub fn event_metadata_by_file_id(&self, id: i64) -> Option<EventMetadataId> {
        self.event_metadata_by_id.get(id).map(EventMetadataId)
    }

    /// Stat metadata by the id used in the input (its map key).
    pub fn stat_metadata_by_file_id(&self, id: i64) -> Option<StatMetadataId> {
        self.stat_metadata_by_id.get(id).map(StatMetadataId)
    }

    /// The stat metadata of a stat type, if this plane defines it.
    pub fn stat_metadata_of_type(&self, ty: StatType) -> Option<StatMetadataId> {
        self.stat_metadata.iter().position(|m| m.stat_type == Some(ty)).map(|i| StatMetadataId(i as u32))
    }

    /// The stat metadata with this exact name, if any.
    pub fn stat_metadata_named(&self, name: &str) -> Option<StatMetadataId> {
        let id = self.strings.find(name)?;
        self.stat_metadata.iter().position(|m| m.name == id).map(|i| StatMetadataId(i as u32))
    }

    /// Plane-level stats (e.g. device capabilities).
    pub fn stats(&self) -> Stats<'_> {
        Stats { plane: self, columns: &self.plane_stats, bytes: &self.bytes, rows: 0..self.plane_stats.len() as u32 }
    }

    /// The metadata of every stat on event metadata entries and on the plane itself.
    pub fn metadata_and_plane_stat_ids(&self) -> impl Iterator<Item = StatMetadataId> + '_ {
        let m = (0..self.metadata_stats.len()).map(|r| StatMetadataId(self.metadata_stats.meta(r)));
        let p = (0..self.plane_stats.len()).map(|r| StatMetadataId(self.plane_stats.meta(r)));
        m.chain(p)
    }

    /// Stats of an event metadata entry (shared by all its events).
    pub fn metadata_stats(&self, id: EventMetadataId) -> Stats<'_> {
        let rows = self.event_metadata[id.index()].stats.clone();
        Stats { plane: self, columns: &self.metadata_stats, bytes: &self.bytes, rows }
    }

    /// Total events over all lines.
    pub fn event_count(&self) -> usize {
        self.lines.iter().map(XLine::event_count).sum()
    }

    /// Events of every line, line by line.
    pub fn events(&self) -> impl Iterator<Item = Event<'_>> {
        self.lines.iter().flat_map(move |l| l.events(self))
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.strings.heap_bytes()
            + self.event_metadata.capacity() * std::mem::size_of::<EventMetadata>()
            + self.event_metadata.iter().map(|m| m.metadata.len() + m.child_ids.len() * 8).sum::<usize>()
            + self.stat_metadata.capacity() * std::mem::size_of::<StatMetadata>()
            + self.event_metadata_by_id.heap_bytes()
            + self.stat_metadata_by_id.heap_bytes()
            + self.metadata_stats.heap_bytes()
            + self.plane_stats.heap_bytes()
            + self.bytes.iter().map(|b| b.len()).sum::<usize>()
            + self.lines.iter().map(XLine::heap_bytes).sum::<usize>()
    }
}

/// One timeline (e.g. a host thread or a GPU stream).
#[derive(Debug, Default)]
pub struct XLine {
    /// `XLine.id` (lines with the same id are one timeline).
    pub id: i64,
    /// `XLine.display_id`.
    pub display_id: i64,
    /// `XLine.name`.
    pub name: String,
    /// `XLine.display_name`; empty when unset.
    pub display_name: String,
    /// Line start, ns since the Unix epoch; event offsets are relative to it.
    pub timestamp_ns: i64,
    /// `XLine.duration_ps`.
    pub duration_ps: i64,
    pub(crate) events: EventColumns,
    pub(crate) stats: StatColumns,
    pub(crate) bytes: Vec<Box<[u8]>>,
    /// While the line is a [`crate::LineDraft`]: what it could not settle alone (always
    /// `None` in a built plane).
    pub(crate) unsettled: Option<Box<Unsettled>>,
}

impl XLine {
    /// Number of events.
    pub fn event_count(&self) -> usize {
        self.events.metadata.len()
    }

    /// The name to display: `display_name` if set, else `name`.
    pub fn display_name_or_name(&self) -> &str {
        if self.display_name.is_empty() { &self.name } else { &self.display_name }
    }

    /// The `index`-th event. Panics if out of range (as slice indexing does).
    pub fn event<'a>(&'a self, plane: &'a XPlane, index: usize) -> Event<'a> {
        assert!(index < self.event_count(), "event index out of range");
        Event { plane, line: self, row: index as u32 }
    }

    /// Events in file order.
    pub fn events<'a>(&'a self, plane: &'a XPlane) -> impl ExactSizeIterator<Item = Event<'a>> + 'a {
        (0..self.event_count() as u32).map(move |row| Event { plane, line: self, row })
    }

    /// Total stats over all events.
    pub fn stat_count(&self) -> usize {
        self.stats.len()
    }

    /// The metadata of every event stat on this line, in order (fast: reads one column).
    pub fn event_stat_metadata_ids(&self) -> impl Iterator<Item = StatMetadataId> + '_ {
        (0..self.stats.len()).map(|row| StatMetadataId(self.stats.meta(row)))
    }

    /// Earliest start and latest end offsets (ps from `timestamp_ns`) of its events.
    pub fn offset_span_ps(&self) -> Option<(i64, i64)> {
        let n = self.event_count();
        if n == 0 {
            return None;
        }
        let (mut begin, mut end) = (i64::MAX, i64::MIN);
        for row in 0..n {
            let start = self.events.offset_ps.get(row);
            begin = begin.min(start);
            end = end.max(start.saturating_add(self.events.duration_ps.get(row)));
        }
        Some((begin, end))
    }

    fn heap_bytes(&self) -> usize {
        self.events.heap_bytes()
            + self.stats.heap_bytes()
            + self.bytes.iter().map(|b| b.len()).sum::<usize>()
            + self.name.capacity()
            + self.display_name.capacity()
    }
}

/// Per-line event columns.
#[derive(Debug, Default)]
pub(crate) struct EventColumns {
    pub(crate) metadata: IdColumn,
    pub(crate) offset_ps: BlockedI64,
    pub(crate) duration_ps: EscapedI64,
    /// End (exclusive) of each event's stats in the line's stat columns.
    pub(crate) stats_end: RowEnds,
    /// `(row, num_occurrences)` for aggregated events, sorted by row.
    pub(crate) occurrences: Vec<(u32, i64)>,
}

impl EventColumns {
    fn heap_bytes(&self) -> usize {
        self.metadata.heap_bytes()
            + self.offset_ps.heap_bytes()
            + self.duration_ps.heap_bytes()
            + self.stats_end.heap_bytes()
            + self.occurrences.capacity() * 16
    }
}

/// Stat value kinds as stored (4 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum StoredKind {
    Unset = 0,
    Double = 1,
    U64Narrow = 2,
    U64Wide = 3,
    I64Narrow = 4,
    I64Wide = 5,
    Str = 6,
    Bytes = 7,
    RefNarrow = 8,
    RefWide = 9,
    /// A negative `int64` in `i32` range, stored as its 32-bit two's complement (ids
    /// hashed into negative numbers are common, e.g. one per event in JAX CPU traces).
    I64Negative = 10,
}

impl StoredKind {
    fn from_bits(bits: u32) -> StoredKind {
        match bits {
            1 => StoredKind::Double,
            2 => StoredKind::U64Narrow,
            3 => StoredKind::U64Wide,
            4 => StoredKind::I64Narrow,
            5 => StoredKind::I64Wide,
            6 => StoredKind::Str,
            7 => StoredKind::Bytes,
            8 => StoredKind::RefNarrow,
            9 => StoredKind::RefWide,
            10 => StoredKind::I64Negative,
            _ => StoredKind::Unset,
        }
    }
}

pub(crate) const META_BITS: u32 = 28;
pub(crate) const META_MASK: u32 = (1 << META_BITS) - 1;

/// Stat rows: kind + metadata index packed in a [`TagColumn`], a 32-bit value, 64-bit
/// values in a side table. Str values hold a [`StrId`], bytes values an index into the
/// owner's bytes.
#[derive(Debug, Default, Clone)]
pub(crate) struct StatColumns {
    tag: TagColumn,
    value: Vec<u32>,
    pub(crate) wide: Vec<u64>,
}

/// Bits of the metadata index in a narrow tag.
const NARROW_META_BITS: u32 = 12;
const NARROW_META_MASK: u32 = (1 << NARROW_META_BITS) - 1;

/// Stat kinds and metadata indexes: 16 bits per row (4 kind, 12 metadata) while every
/// index is below 4,096, as in almost every line; else 32 bits (4 kind, 28 metadata).
/// Stats are the largest part of a decoded profile, so this saves a fifth of it.
#[derive(Debug, Clone)]
enum TagColumn {
    Narrow(Vec<u16>),
    Wide(Vec<u32>),
}

impl Default for TagColumn {
    fn default() -> Self {
        TagColumn::Narrow(Vec::new())
    }
}

impl TagColumn {
    fn len(&self) -> usize {
        match self {
            TagColumn::Narrow(t) => t.len(),
            TagColumn::Wide(t) => t.len(),
        }
    }

    /// `(kind bits, metadata index)` of a row.
    #[inline]
    fn get(&self, row: usize) -> (u32, u32) {
        match self {
            TagColumn::Narrow(t) => {
                let tag = u32::from(t[row]);
                (tag >> NARROW_META_BITS, tag & NARROW_META_MASK)
            }
            TagColumn::Wide(t) => (t[row] >> META_BITS, t[row] & META_MASK),
        }
    }

    #[inline(always)]
    fn push(&mut self, kind: u32, meta: u32) {
        let meta = meta & META_MASK;
        match self {
            TagColumn::Narrow(t) if meta <= NARROW_META_MASK => t.push(((kind << NARROW_META_BITS) | meta) as u16),
            TagColumn::Narrow(_) => {
                self.widen();
                self.push(kind, meta);
            }
            TagColumn::Wide(t) => t.push((kind << META_BITS) | meta),
        }
    }

    fn set(&mut self, row: usize, kind: u32, meta: u32) {
        let meta = meta & META_MASK;
        if matches!(self, TagColumn::Narrow(_)) && meta > NARROW_META_MASK {
            self.widen();
        }
        match self {
            TagColumn::Narrow(t) => t[row] = ((kind << NARROW_META_BITS) | meta) as u16,
            TagColumn::Wide(t) => t[row] = (kind << META_BITS) | meta,
        }
    }

    /// Switches to 32-bit tags (at most once per column).
    fn widen(&mut self) {
        if let TagColumn::Narrow(t) = self {
            let wide = t
                .iter()
                .map(|&tag| {
                    let tag = u32::from(tag);
                    ((tag >> NARROW_META_BITS) << META_BITS) | (tag & NARROW_META_MASK)
                })
                .collect();
            *self = TagColumn::Wide(wide);
        }
    }

    fn shrink_to_fit(&mut self) {
        match self {
            TagColumn::Narrow(t) => t.shrink_to_fit(),
            TagColumn::Wide(t) => t.shrink_to_fit(),
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            TagColumn::Narrow(t) => t.capacity() * 2,
            TagColumn::Wide(t) => t.capacity() * 4,
        }
    }
}

/// A decoded stat value (stored form, before string resolution).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum RawValue {
    Unset,
    Double(f64),
    U64(u64),
    I64(i64),
    Str(StrId),
    Bytes(u32),
    Ref(u64),
}

impl StatColumns {
    pub(crate) fn len(&self) -> usize {
        self.tag.len()
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, meta: u32, value: RawValue) {
        let (kind, v) = match value {
            RawValue::Unset => (StoredKind::Unset, 0),
            RawValue::Double(d) => (StoredKind::Double, self.push_wide(d.to_bits())),
            RawValue::U64(x) if x < u64::from(u32::MAX) => (StoredKind::U64Narrow, x as u32),
            RawValue::U64(x) => (StoredKind::U64Wide, self.push_wide(x)),
            RawValue::I64(x) if (0..i64::from(u32::MAX)).contains(&x) => (StoredKind::I64Narrow, x as u32),
            RawValue::I64(x) if (i64::from(i32::MIN)..0).contains(&x) => (StoredKind::I64Negative, x as i32 as u32),
            RawValue::I64(x) => (StoredKind::I64Wide, self.push_wide(x as u64)),
            RawValue::Str(s) => (StoredKind::Str, s.0),
            RawValue::Bytes(b) => (StoredKind::Bytes, b),
            RawValue::Ref(x) if x < u64::from(u32::MAX) => (StoredKind::RefNarrow, x as u32),
            RawValue::Ref(x) => (StoredKind::RefWide, self.push_wide(x)),
        };
        self.tag.push(kind as u32, meta);
        self.value.push(v);
    }

    /// Room for `rows` more rows (their 64-bit values still grow as needed).
    pub(crate) fn reserve(&mut self, rows: usize) {
        match &mut self.tag {
            TagColumn::Narrow(t) => t.reserve_exact(rows),
            TagColumn::Wide(t) => t.reserve_exact(rows),
        }
        self.value.reserve_exact(rows);
    }

    fn push_wide(&mut self, v: u64) -> u32 {
        self.wide.push(v);
        (self.wide.len() - 1) as u32
    }

    #[inline]
    pub(crate) fn meta(&self, row: usize) -> u32 {
        self.tag.get(row).1
    }

    pub(crate) fn set_meta(&mut self, row: usize, meta: u32) {
        let (kind, _) = self.tag.get(row);
        self.tag.set(row, kind, meta);
    }

    #[inline]
    pub(crate) fn raw(&self, row: usize) -> RawValue {
        let kind = StoredKind::from_bits(self.tag.get(row).0);
        let v = self.value[row];
        match kind {
            StoredKind::Unset => RawValue::Unset,
            StoredKind::Double => RawValue::Double(f64::from_bits(self.wide[v as usize])),
            StoredKind::U64Narrow => RawValue::U64(u64::from(v)),
            StoredKind::U64Wide => RawValue::U64(self.wide[v as usize]),
            StoredKind::I64Narrow => RawValue::I64(i64::from(v)),
            StoredKind::I64Wide => RawValue::I64(self.wide[v as usize] as i64),
            StoredKind::I64Negative => RawValue::I64(i64::from(v as i32)),
            StoredKind::Str => RawValue::Str(StrId(v)),
            StoredKind::Bytes => RawValue::Bytes(v),
            StoredKind::RefNarrow => RawValue::Ref(u64::from(v)),
            StoredKind::RefWide => RawValue::Ref(self.wide[v as usize]),
        }
    }

    pub(crate) fn is_str(&self, row: usize) -> bool {
        self.tag.get(row).0 == StoredKind::Str as u32
    }

    pub(crate) fn set_value(&mut self, row: usize, v: u32) {
        self.value[row] = v;
    }

    pub(crate) fn value_bits(&self, row: usize) -> u32 {
        self.value[row]
    }

    pub(crate) fn finish(&mut self) {
        self.tag.shrink_to_fit();
        self.value.shrink_to_fit();
        self.wide.shrink_to_fit();
    }

    fn heap_bytes(&self) -> usize {
        self.tag.heap_bytes() + self.value.capacity() * 4 + self.wide.capacity() * 8
    }
}

/// A borrowed view of one event.
#[derive(Clone, Copy)]
pub struct Event<'a> {
    plane: &'a XPlane,
    line: &'a XLine,
    row: u32,
}

impl std::fmt::Debug for Event<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("name", &self.name())
            .field("offset_ps", &self.offset_ps())
            .field("duration_ps", &self.duration_ps())
            .finish()
    }
}

impl<'a> Event<'a> {
    /// Position within its line.
    pub fn index(&self) -> usize {
        self.row as usize
    }

    /// The plane it belongs to.
    pub fn plane(&self) -> &'a XPlane {
        self.plane
    }

    /// The line it belongs to.
    pub fn line(&self) -> &'a XLine {
        self.line
    }

    /// Its metadata's dense id.
    #[inline]
    pub fn metadata_id(&self) -> EventMetadataId {
        EventMetadataId(self.line.events.metadata.get(self.row as usize))
    }

    /// Its metadata.
    #[inline]
    pub fn metadata(&self) -> &'a EventMetadata {
        &self.plane.event_metadata[self.line.events.metadata.get(self.row as usize) as usize]
    }

    /// Metadata name.
    pub fn name(&self) -> &'a str {
        self.plane.str(self.metadata().name)
    }

    /// Metadata display name if set, else the name.
    pub fn display_name(&self) -> &'a str {
        let m = self.metadata();
        if m.display_name == StrId::EMPTY { self.plane.str(m.name) } else { self.plane.str(m.display_name) }
    }

    /// Start relative to the line's `timestamp_ns` (0 for aggregated events).
    #[inline]
    pub fn offset_ps(&self) -> i64 {
        self.line.events.offset_ps.get(self.row as usize)
    }

    /// Duration in ps.
    #[inline]
    pub fn duration_ps(&self) -> i64 {
        self.line.events.duration_ps.get(self.row as usize)
    }

    /// Absolute start, `timestamp_ns * 1000 + offset_ps`, computed modulo 2^64 exactly as
    /// XProf does (epoch picoseconds do not fit 64 bits; differences are exact).
    #[inline]
    pub fn timestamp_ps(&self) -> i64 {
        self.line.timestamp_ns.wrapping_mul(1000).wrapping_add(self.offset_ps())
    }

    /// Absolute end (start + duration), modulo 2^64 like [`Event::timestamp_ps`].
    #[inline]
    pub fn end_timestamp_ps(&self) -> i64 {
        self.timestamp_ps().wrapping_add(self.duration_ps())
    }

    /// `num_occurrences` for aggregated events.
    pub fn num_occurrences(&self) -> Option<i64> {
        let occ = &self.line.events.occurrences;
        occ.binary_search_by_key(&self.row, |&(r, _)| r).ok().map(|i| occ[i].1)
    }

    /// The event's own stats (not its metadata's).
    pub fn stats(&self) -> Stats<'a> {
        let rows = self.line.events.stats_end.range(self.row as usize);
        Stats { plane: self.plane, columns: &self.line.stats, bytes: &self.line.bytes, rows }
    }

    /// Stats of the event's metadata (shared by every event of that kind).
    pub fn metadata_stats(&self) -> Stats<'a> {
        self.plane.metadata_stats(self.metadata_id())
    }

    /// The event's own stat of this type, else its metadata's (XProf's usual lookup).
    pub fn stat(&self, ty: StatType) -> Option<Stat<'a>> {
        self.stats().get(ty).or_else(|| self.metadata_stats().get(ty))
    }
}

/// A list of stats (an event's, a metadata entry's, or a plane's).
#[derive(Clone)]
pub struct Stats<'a> {
    plane: &'a XPlane,
    columns: &'a StatColumns,
    bytes: &'a [Box<[u8]>],
    rows: std::ops::Range<u32>,
}

impl<'a> Stats<'a> {
    /// Number of stats.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The stats as `(metadata, integer value)` pairs, without resolving strings, bytes or
    /// refs (a ref would cost a metadata lookup): for hot loops that read integer stats only.
    pub fn int_values(self) -> impl Iterator<Item = (StatMetadataId, IntValue)> + 'a {
        let columns = self.columns;
        self.rows.map(move |row| {
            let row = row as usize;
            let value = match columns.raw(row) {
                RawValue::I64(v) => IntValue::Int64(v),
                RawValue::U64(v) => IntValue::Uint64(v),
                _ => IntValue::NotInt,
            };
            (StatMetadataId(columns.meta(row)), value)
        })
    }

    /// The first stat of this type.
    pub fn get(&self, ty: StatType) -> Option<Stat<'a>> {
        // The type is the metadata's: only the match's value is resolved (a string or a
        // ref costs a lookup), which keeps per-event lookups in hot loops cheap.
        let stat_metadata = &self.plane.stat_metadata;
        self.rows
            .clone()
            .find(|&row| {
                stat_metadata.get(self.columns.meta(row as usize) as usize).is_some_and(|m| m.stat_type == Some(ty))
            })
            .map(|row| self.at(row as usize))
    }

    fn at(&self, row: usize) -> Stat<'a> {
        let plane = self.plane;
        let metadata = StatMetadataId(self.columns.meta(row));
        let raw = self.columns.raw(row);
        let ref_id = if let RawValue::Ref(id) = raw { id } else { 0 };
        let value = match raw {
            RawValue::Unset => StatValue::Unset,
            RawValue::Double(d) => StatValue::Double(d),
            RawValue::U64(x) => StatValue::Uint64(x),
            RawValue::I64(x) => StatValue::Int64(x),
            RawValue::Str(s) => StatValue::Str(plane.str(s)),
            RawValue::Bytes(b) => StatValue::Bytes(self.bytes.get(b as usize).map_or(&[][..], |b| &b[..])),
            RawValue::Ref(id) => StatValue::Ref(
                i64::try_from(id)
                    .ok()
                    .and_then(|id| plane.stat_metadata_by_file_id(id))
                    .map_or("", |m| plane.str(plane.stat_metadata_at(m).name)),
            ),
        };
        Stat { plane, metadata, value, ref_id }
    }
}

impl<'a> Iterator for Stats<'a> {
    type Item = Stat<'a>;

    fn next(&mut self) -> Option<Stat<'a>> {
        let row = self.rows.next()?;
        Some(self.at(row as usize))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.rows.len(), Some(self.rows.len()))
    }
}

impl ExactSizeIterator for Stats<'_> {}

/// A stat's value as [`Stats::int_values`] reports it: the integer oneofs, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntValue {
    /// `int64_value`.
    Int64(i64),
    /// `uint64_value`.
    Uint64(u64),
    /// Any other oneof (double, string, bytes, ref) or unset.
    NotInt,
}

/// A stat's value. `Ref` is already resolved to the referenced metadata's name.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StatValue<'a> {
    /// The oneof was not set.
    Unset,
    /// `double_value`.
    Double(f64),
    /// `uint64_value`.
    Uint64(u64),
    /// `int64_value`.
    Int64(i64),
    /// `str_value`, or `compressed_str_value` after gunzip.
    Str(&'a str),
    /// `bytes_value`.
    Bytes(&'a [u8]),
    /// `ref_value`: the name of the referenced stat metadata (empty if it does not exist).
    Ref(&'a str),
}

/// One stat.
#[derive(Clone, Copy)]
pub struct Stat<'a> {
    plane: &'a XPlane,
    metadata: StatMetadataId,
    /// The value.
    pub value: StatValue<'a>,
    /// The raw `ref_value` (a stat metadata key) when `value` is a [`StatValue::Ref`].
    ref_id: u64,
}

impl std::fmt::Debug for Stat<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={:?}", self.name(), self.value)
    }
}

impl<'a> Stat<'a> {
    /// Its metadata's dense id.
    pub fn metadata_id(&self) -> StatMetadataId {
        self.metadata
    }

    /// Its metadata.
    pub fn metadata(&self) -> &'a StatMetadata {
        self.plane.stat_metadata_at(self.metadata)
    }

    /// Stat name.
    pub fn name(&self) -> &'a str {
        self.plane.str(self.metadata().name)
    }

    /// Stat type, if the name is one XProf knows.
    pub fn stat_type(&self) -> Option<StatType> {
        self.metadata().stat_type
    }

    /// Integer value of an int or uint stat (XProf's `IntOrUintValue`; uint wraps).
    pub fn as_i64(&self) -> Option<i64> {
        match self.value {
            StatValue::Int64(x) => Some(x),
            StatValue::Uint64(x) => Some(x as i64),
            _ => None,
        }
    }

    /// Unsigned value of an int or uint stat (int wraps, as XProf's `IntOrUintValue`).
    pub fn as_u64(&self) -> Option<u64> {
        match self.value {
            StatValue::Int64(x) => Some(x as u64),
            StatValue::Uint64(x) => Some(x),
            _ => None,
        }
    }

    /// Numeric value as f64 (double, int or uint).
    pub fn as_f64(&self) -> Option<f64> {
        match self.value {
            StatValue::Double(d) => Some(d),
            StatValue::Int64(x) => Some(x as f64),
            StatValue::Uint64(x) => Some(x as f64),
            _ => None,
        }
    }

    /// String value of a str or ref stat (XProf's `StrOrRefValue`).
    pub fn as_str(&self) -> Option<&'a str> {
        match self.value {
            StatValue::Str(s) | StatValue::Ref(s) => Some(s),
            _ => None,
        }
    }

    /// Bytes value.
    pub fn as_bytes(&self) -> Option<&'a [u8]> {
        match self.value {
            StatValue::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// The stat metadata key a `ref_value` stat holds (what [`StatValue::Ref`] resolved),
    /// for writers that must reproduce it.
    pub fn ref_key(&self) -> Option<u64> {
        matches!(self.value, StatValue::Ref(_)).then_some(self.ref_id)
    }
}

impl std::fmt::Display for StatValue<'_> {
    /// Formats like XProf's `XStatVisitor::ToString`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StatValue::Unset => Ok(()),
            StatValue::Double(d) => write!(f, "{d}"),
            StatValue::Uint64(x) => write!(f, "{x}"),
            StatValue::Int64(x) => write!(f, "{x}"),
            StatValue::Str(s) | StatValue::Ref(s) => f.write_str(s),
            StatValue::Bytes(b) => write!(f, "<{} bytes>", b.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every distinct name of a trace has an event metadata entry, every arg key a stat
    /// metadata entry: their size is the model's size on traces of many names.
    #[test]
    fn metadata_entries_stay_small() {
        assert_eq!(std::mem::size_of::<ThinSlice<i64>>(), 8);
        assert!(std::mem::size_of::<EventMetadata>() <= 56, "{}", std::mem::size_of::<EventMetadata>());
        assert!(std::mem::size_of::<StatMetadata>() <= 32, "{}", std::mem::size_of::<StatMetadata>());
        let bytes = ThinSlice::from(Box::<[u8]>::from(&b"ab"[..]));
        let none = ThinSlice::from(Box::<[u8]>::default());
        assert_eq!((&bytes[..], &none[..], format!("{bytes:?}")), (&b"ab"[..], &b""[..], "[97, 98]".to_string()));
    }

    #[test]
    fn stat_columns_round_trip_every_value_kind_at_its_edges() {
        let values = [
            RawValue::Unset,
            RawValue::Double(-0.5),
            RawValue::U64(0),
            RawValue::U64(u64::from(u32::MAX) - 1),
            RawValue::U64(u64::from(u32::MAX)),
            RawValue::U64(u64::MAX),
            RawValue::I64(0),
            RawValue::I64(i64::from(u32::MAX) - 1),
            RawValue::I64(i64::from(u32::MAX)),
            RawValue::I64(-1),
            RawValue::I64(-621_622_989),
            RawValue::I64(i64::from(i32::MIN)),
            RawValue::I64(i64::from(i32::MIN) - 1),
            RawValue::I64(i64::MIN),
            RawValue::Str(StrId(7)),
            RawValue::Bytes(3),
            RawValue::Ref(5),
            RawValue::Ref(u64::MAX),
        ];
        let mut columns = StatColumns::default();
        for (meta, &value) in (0u32..).zip(&values) {
            columns.push(meta, value);
        }
        for (row, &value) in values.iter().enumerate() {
            assert_eq!(columns.raw(row), value, "row {row}");
            assert_eq!(columns.meta(row), row as u32);
        }
        // Only values outside 32 bits take a 64-bit slot.
        assert_eq!(columns.wide.len(), 7);
        assert!(matches!(columns.tag, TagColumn::Narrow(_)));
        // A metadata index of 4,096 or more widens the tags; kinds and values stay.
        columns.push(5_000, RawValue::I64(-2));
        columns.set_meta(0, 70_000);
        assert!(matches!(columns.tag, TagColumn::Wide(_)));
        assert_eq!((columns.meta(0), columns.raw(0)), (70_000, RawValue::Unset));
        for (row, &value) in values.iter().enumerate().skip(1) {
            assert_eq!((columns.meta(row), columns.raw(row)), (row as u32, value), "row {row}");
        }
        assert_eq!((columns.meta(values.len()), columns.raw(values.len())), (5_000, RawValue::I64(-2)));
        let mut narrow = StatColumns::default();
        narrow.push(1, RawValue::Str(StrId(9)));
        narrow.set_meta(0, 4_000);
        assert!(narrow.is_str(0) && matches!(narrow.tag, TagColumn::Narrow(_)));
        assert_eq!(narrow.meta(0), 4_000);
    }
}
