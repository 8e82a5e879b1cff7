//! The builder every importer writes through: planes with their metadata and stats, then
//! lines of events and stats, into the compact columns of [`XPlane`], with the model's
//! invariants kept in one place (placeholder metadata for ids the input lacks, strings
//! interned plane-wide in input order, deterministic dense ids).
//!
//! It is the XSpace decoder's own path, so it is built for speed and for lines built in
//! parallel:
//!
//! ```text
//!  PlaneBuilder: stat metadata, event metadata (+ their stats), plane stats
//!       │ metadata_ids()                       (read-only, shared by threads)
//!       ▼
//!  LineBuilder per line, on any thread: events and stats by the input's metadata ids;
//!       │ finish()          strings and unknown ids stay local to the line
//!       ▼
//!  LineDraft ──PlaneBuilder::add_line(s), in input order──> settled XLine
//!             (local strings and placeholders made plane-wide: ids do not depend on
//!             which thread built which line)
//! ```
//!
//! Input ids ("keys") are the ids of the input's metadata maps; the model's dense
//! [`EventMetadataId`]/[`StatMetadataId`] are assigned here. For an easier API by names, see
//! [`crate::ModelBuilder`].

use crate::columns::{BlockedI64, EscapedI64, IdColumn, RowEnds};
use crate::diagnostics::{DiagnosticKind, Diagnostics};
use crate::key_index::KeyIndex;
use crate::limits::{LimitExceeded, SharedBudget};
use crate::model::{
    EventColumns, EventMetadata, EventMetadataId, META_MASK, RawValue, StatColumns, StatMetadata, StatMetadataId,
    ThinSlice, XLine, XPlane,
};
use crate::schema::{HostEventType, StatType};
use crate::strings::{StrId, StringTable};
use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

/// Metadata indexes are stored in 28 bits; a line's placeholders count down from the top.
const MAX_METADATA: usize = (META_MASK as usize) / 2;

/// Why the builder refused an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// A placeholder would exceed the budget the importer gave (see [`SharedBudget`]).
    #[error("{0}")]
    LimitExceeded(LimitExceeded),
    /// A limit of the in-memory model (e.g. 2^27 metadata entries in one plane).
    #[error("too large to load: {0}")]
    TooLarge(&'static str),
}

impl From<LimitExceeded> for BuildError {
    fn from(e: LimitExceeded) -> Self {
        BuildError::LimitExceeded(e)
    }
}

/// A stat value as an importer hands it over.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StatInput<'a> {
    /// No value (the oneof was not set).
    Unset,
    /// `double_value`.
    Double(f64),
    /// `uint64_value`.
    Uint64(u64),
    /// `int64_value`.
    Int64(i64),
    /// A string value.
    Str(&'a str),
    /// Bytes that should be UTF-8 but are untrusted, possibly changing while read (a
    /// memory-mapped file): validated on the copy that is kept; invalid sequences are
    /// replaced with U+FFFD and counted as [`DiagnosticKind::InvalidUtf8`].
    Utf8(&'a [u8]),
    /// `bytes_value` (copied).
    Bytes(&'a [u8]),
    /// `ref_value`: the key of a stat metadata entry whose name is the value. A key the
    /// plane lacks is counted as [`DiagnosticKind::DanglingRefValue`] and reads as "".
    Ref(u64),
}

/// Input fields of an event metadata entry (its stats are added before it with
/// [`PlaneBuilder::add_metadata_stat`]).
#[derive(Debug, Clone, Default)]
pub struct NewEventMetadata {
    /// `XEventMetadata.id`.
    pub id: i64,
    /// Name (interned with [`PlaneBuilder::intern`]).
    pub name: StrId,
    /// Display name; [`StrId::EMPTY`] when unset.
    pub display_name: StrId,
    /// Opaque serialized metadata.
    pub metadata: Box<[u8]>,
    /// Keys of child event metadata (e.g. fused ops).
    pub child_ids: Box<[i64]>,
}

/// Builds one [`XPlane`]: metadata and plane stats first, then lines.
#[derive(Debug)]
pub struct PlaneBuilder {
    plane: XPlane,
    diag: Diagnostics,
    /// First row (in the metadata stat columns) of the next event metadata entry's stats.
    open_metadata_stats: u32,
}

impl PlaneBuilder {
    /// An empty plane.
    pub fn new(id: i64, name: impl Into<String>) -> Self {
        Self::with_strings(id, name, Arc::new(StringTable::default()))
    }

    /// An empty plane whose string table starts as `strings`: an importer that interned
    /// its input's strings in a table of its own hands it to the plane that needs most of
    /// them, instead of the plane copying each string again. The importer may keep reading
    /// the table (a clone of the `Arc`) while the plane is built: interning a string the
    /// table holds finds it; a new string copies the table first, once, if it is still
    /// shared. Ids of the table's strings are the plane's.
    pub fn with_strings(id: i64, name: impl Into<String>, strings: Arc<StringTable>) -> Self {
        let plane = XPlane {
            id,
            name: name.into(),
            lines: Vec::new(),
            strings,
            event_metadata: Vec::new(),
            event_metadata_by_id: KeyIndex::default(),
            stat_metadata: Vec::new(),
            stat_metadata_by_id: KeyIndex::default(),
            metadata_stats: StatColumns::default(),
            plane_stats: StatColumns::default(),
            bytes: Vec::new(),
            event_metadata_in_file: 0,
            stat_metadata_in_file: 0,
            lines_not_decoded: 0,
        };
        PlaneBuilder { plane, diag: Diagnostics::default(), open_metadata_stats: 0 }
    }

    /// Reserves room for this many metadata entries and lines (exactly, to keep the model
    /// small).
    pub fn reserve(&mut self, event_metadata: usize, stat_metadata: usize, lines: usize) {
        self.plane.event_metadata.reserve_exact(event_metadata);
        self.plane.stat_metadata.reserve_exact(stat_metadata);
        self.plane.lines.reserve_exact(lines);
    }

    /// Interns a string in the plane's table.
    #[inline]
    pub fn intern(&mut self, s: &str) -> StrId {
        intern_in(&mut self.plane.strings, s)
    }

    /// Interns untrusted bytes that should be UTF-8 (see [`StatInput::Utf8`]).
    #[inline]
    pub fn intern_utf8(&mut self, bytes: &[u8]) -> StrId {
        let (id, replaced) = Arc::make_mut(&mut self.plane.strings).intern_utf8(bytes);
        if replaced {
            self.diag.add(DiagnosticKind::InvalidUtf8, 1);
        }
        id
    }

    /// The string behind an id of this plane.
    pub fn str(&self, id: StrId) -> &str {
        self.plane.strings.get(id)
    }

    /// Counts of what was repaired so far (importers add their own, e.g. unknown fields).
    pub fn diagnostics_mut(&mut self) -> &mut Diagnostics {
        &mut self.diag
    }

    /// Adds the stat metadata entry `key` (a key given twice keeps the last entry, in the
    /// first one's place, counted as [`DiagnosticKind::DuplicateMetadataKey`]).
    pub fn add_stat_metadata(
        &mut self,
        key: i64,
        id: i64,
        name: StrId,
        description: StrId,
    ) -> Result<StatMetadataId, BuildError> {
        let stat_type = StatType::from_name(self.plane.strings.get(name));
        let entry = StatMetadata { id, name, description, stat_type, key, placeholder: false };
        let plane = &mut self.plane;
        let keyed = KeyedTable {
            entries: &mut plane.stat_metadata,
            by_key: &mut plane.stat_metadata_by_id,
            in_file: &mut plane.stat_metadata_in_file,
        };
        keyed.insert(
            key,
            entry,
            |e| e.placeholder,
            StatMetadataId,
            "more stat metadata than oxprof supports",
            &mut self.diag,
        )
    }

    /// Adds a stat to the event metadata entry that the next [`PlaneBuilder::add_event_metadata`]
    /// adds. `stat_key` names its stat metadata; a key the plane lacks gets a placeholder
    /// entry (paid from `placeholders`).
    pub fn add_metadata_stat(
        &mut self,
        stat_key: i64,
        value: StatInput<'_>,
        placeholders: &SharedBudget,
    ) -> Result<(), BuildError> {
        let (meta, value) = self.owned_stat(stat_key, value, placeholders)?;
        self.plane.metadata_stats.push(meta, value);
        Ok(())
    }

    /// Adds a plane-level stat (e.g. a device capability).
    pub fn add_plane_stat(
        &mut self,
        stat_key: i64,
        value: StatInput<'_>,
        placeholders: &SharedBudget,
    ) -> Result<(), BuildError> {
        let (meta, value) = self.owned_stat(stat_key, value, placeholders)?;
        self.plane.plane_stats.push(meta, value);
        Ok(())
    }

    /// Adds the event metadata entry `key`, with the stats added since the previous entry
    /// (a key given twice keeps the last entry, in the first one's place).
    pub fn add_event_metadata(&mut self, key: i64, new: NewEventMetadata) -> Result<EventMetadataId, BuildError> {
        let end = self.plane.metadata_stats.len() as u32;
        let stats = std::mem::replace(&mut self.open_metadata_stats, end)..end;
        let host_event_type = HostEventType::from_name(self.plane.strings.get(new.name));
        let entry = EventMetadata {
            id: new.id,
            name: new.name,
            display_name: new.display_name,
            metadata: new.metadata.into(),
            child_ids: new.child_ids.into(),
            host_event_type,
            stats,
            key,
            placeholder: false,
        };
        let plane = &mut self.plane;
        let keyed = KeyedTable {
            entries: &mut plane.event_metadata,
            by_key: &mut plane.event_metadata_by_id,
            in_file: &mut plane.event_metadata_in_file,
        };
        keyed.insert(
            key,
            entry,
            |e| e.placeholder,
            EventMetadataId,
            "more event metadata than oxprof supports",
            &mut self.diag,
        )
    }

    /// Records that the input holds `n` lines of this plane that were left out.
    pub fn set_lines_not_decoded(&mut self, n: usize) {
        self.plane.lines_not_decoded = n;
    }

    /// The plane's metadata keys → dense ids, for [`LineBuilder`]s (a snapshot: metadata
    /// added later is found when their drafts are added, not while they are built).
    pub fn metadata_ids(&self) -> MetadataIds {
        let plane = &self.plane;
        MetadataIds { events: plane.event_metadata_by_id.clone(), stats: plane.stat_metadata_by_id.clone() }
    }

    /// Adds a line built by a [`LineBuilder`]: its strings become plane-wide and its
    /// unknown metadata keys become placeholder entries (or the entries added since).
    /// Drafts must be added in input order for ids to be deterministic.
    pub fn add_line(&mut self, draft: LineDraft) -> Result<(), BuildError> {
        let mut line = draft.line;
        self.settle(&mut line)?;
        self.plane.lines.push(line);
        Ok(())
    }

    /// Adds lines in order, as [`PlaneBuilder::add_line`]. The first lines of a plane are
    /// settled where they are: the drafts' memory becomes the plane's lines (no second
    /// table of lines, which matters for inputs of millions of small lines).
    pub fn add_lines(&mut self, drafts: Vec<LineDraft>) -> Result<(), BuildError> {
        if !self.plane.lines.is_empty() {
            return drafts.into_iter().try_for_each(|d| self.add_line(d));
        }
        // A draft is a line (same layout), so this collect reuses the drafts' allocation.
        let mut lines: Vec<XLine> = drafts.into_iter().map(|d| d.line).collect();
        for i in 0..lines.len() {
            if let Err(e) = self.settle(&mut lines[i]) {
                lines.truncate(i);
                self.plane.lines = lines;
                return Err(e);
            }
        }
        self.plane.lines = lines;
        Ok(())
    }

    /// The plane; its repair counts are added to `diag`.
    pub fn finish(mut self, diag: &mut Diagnostics) -> XPlane {
        self.plane.metadata_stats.finish();
        self.plane.plane_stats.finish();
        diag.merge(&self.diag);
        self.plane
    }

    /// A metadata or plane stat's metadata index and stored value.
    fn owned_stat(
        &mut self,
        stat_key: i64,
        value: StatInput<'_>,
        placeholders: &SharedBudget,
    ) -> Result<(u32, RawValue), BuildError> {
        let meta = self.stat_metadata_or_placeholder(stat_key, placeholders)?;
        let value = match value {
            StatInput::Unset => RawValue::Unset,
            StatInput::Double(d) => RawValue::Double(d),
            StatInput::Uint64(x) => RawValue::U64(x),
            StatInput::Int64(x) => RawValue::I64(x),
            StatInput::Str(s) => RawValue::Str(intern_in(&mut self.plane.strings, s)),
            StatInput::Utf8(b) => RawValue::Str(self.intern_utf8(b)),
            StatInput::Bytes(b) => {
                self.plane.bytes.push(b.into());
                RawValue::Bytes((self.plane.bytes.len() - 1) as u32)
            }
            StatInput::Ref(id) => {
                if i64::try_from(id).map_or(true, |id| !self.plane.stat_metadata_by_id.contains(id)) {
                    self.diag.add(DiagnosticKind::DanglingRefValue, 1);
                }
                RawValue::Ref(id)
            }
        };
        Ok((meta, value))
    }

    /// Metadata index for a key, adding a placeholder entry if the plane lacks it.
    fn stat_metadata_or_placeholder(&mut self, key: i64, placeholders: &SharedBudget) -> Result<u32, BuildError> {
        if let Some(m) = self.plane.stat_metadata_by_id.get(key) {
            return Ok(m);
        }
        placeholders.spend(1)?;
        self.diag.add(DiagnosticKind::UnknownStatMetadata, 1);
        Ok(self.stat_placeholder(key))
    }

    fn stat_placeholder(&mut self, key: i64) -> u32 {
        let plane = &mut self.plane;
        let index = plane.stat_metadata.len() as u32;
        let entry = StatMetadata {
            id: key,
            name: StrId::EMPTY,
            description: StrId::EMPTY,
            stat_type: None,
            key,
            placeholder: true,
        };
        plane.stat_metadata.push(entry);
        plane.stat_metadata_by_id.insert_new(key, index);
        index
    }

    fn event_placeholder(&mut self, key: i64) -> u32 {
        let plane = &mut self.plane;
        let index = plane.event_metadata.len() as u32;
        plane.event_metadata.push(EventMetadata {
            id: key,
            name: StrId::EMPTY,
            display_name: StrId::EMPTY,
            metadata: ThinSlice::default(),
            child_ids: ThinSlice::default(),
            host_event_type: None,
            stats: 0..0,
            key,
            placeholder: true,
        });
        plane.event_metadata_by_id.insert_new(key, index);
        index
    }

    /// Makes a drafted line's strings and placeholder metadata plane-wide.
    fn settle(&mut self, line: &mut XLine) -> Result<(), BuildError> {
        if let Some(rest) = line.unsettled.take() {
            self.merge(line, *rest)?;
        }
        #[cfg(debug_assertions)]
        self.debug_check_ids(line);
        Ok(())
    }

    /// Debug builds: every metadata index of a settled line is one of the plane's entries
    /// (a draft built against another plane's [`MetadataIds`] is a caller's bug).
    #[cfg(debug_assertions)]
    fn debug_check_ids(&self, line: &XLine) {
        let (events, stats) = (self.plane.event_metadata.len(), self.plane.stat_metadata.len());
        let event_ok = (0..line.events.metadata.len()).all(|row| (line.events.metadata.get(row) as usize) < events);
        let stat_ok = (0..line.stats.len()).all(|row| (line.stats.meta(row) as usize) < stats);
        assert!(event_ok && stat_ok, "a line was built against another plane's metadata ids");
    }

    /// Merges what a line could not settle alone.
    fn merge(&mut self, line: &mut XLine, rest: Unsettled) -> Result<(), BuildError> {
        let Unsettled { strings, unknown_events, unknown_stats, diag } = rest;
        self.diag.merge(&diag);
        if let Some(strings) = strings
            && strings.len() > 1
        {
            let remap: Vec<StrId> = strings.iter().map(|(_, s)| intern_in(&mut self.plane.strings, s)).collect();
            for row in 0..line.stats.len() {
                if line.stats.is_str(row) {
                    let local = line.stats.value_bits(row) as usize;
                    line.stats.set_value(row, remap.get(local).map_or(0, |id| id.0));
                }
            }
        }
        if !unknown_stats.is_empty() {
            let remap: Vec<u32> = unknown_stats
                .iter()
                .map(|&key| match self.plane.stat_metadata_by_id.get(key) {
                    Some(m) => m,
                    None => self.stat_placeholder(key),
                })
                .collect();
            let first_placeholder = META_MASK - (remap.len() as u32 - 1);
            for row in 0..line.stats.len() {
                let meta = line.stats.meta(row);
                if meta >= first_placeholder {
                    line.stats.set_meta(row, remap[(META_MASK - meta) as usize]);
                }
            }
        }
        if !unknown_events.is_empty() {
            let remap: Vec<u32> = unknown_events
                .iter()
                .map(|&key| match self.plane.event_metadata_by_id.get(key) {
                    Some(m) => m,
                    None => self.event_placeholder(key),
                })
                .collect();
            let first_placeholder = u32::MAX - (remap.len() as u32 - 1);
            line.events
                .metadata
                .map_in_place(|meta| if meta >= first_placeholder { remap[(u32::MAX - meta) as usize] } else { meta });
        }
        if self.plane.stat_metadata.len() >= MAX_METADATA || self.plane.event_metadata.len() >= MAX_METADATA {
            return Err(BuildError::TooLarge("more metadata entries in one plane than oxprof supports"));
        }
        Ok(())
    }
}

/// Interns `s` in a plane's table, copying the table only if it is shared with its
/// importer and lacks `s`.
#[inline]
fn intern_in(strings: &mut Arc<StringTable>, s: &str) -> StrId {
    if let Some(table) = Arc::get_mut(strings) {
        return table.intern(s);
    }
    match strings.find(s) {
        Some(id) => id,
        None => Arc::make_mut(strings).intern(s),
    }
}

/// What a line could not settle alone: its own strings, the keys it used that the plane
/// lacked, and its repair counts. Boxed and usually absent.
#[derive(Debug, Default)]
pub(crate) struct Unsettled {
    /// Line-local strings; none until the line has a string stat (most lines of files
    /// made of many small lines have none).
    strings: Option<StringTable>,
    /// Event metadata keys the plane lacks; event `u32::MAX - k` means entry k.
    unknown_events: Vec<i64>,
    /// Stat metadata keys the plane lacks; stat meta `META_MASK - k` means entry k.
    unknown_stats: Vec<i64>,
    diag: Diagnostics,
}

/// A plane's metadata table (event or stat) with its index by the input's keys.
struct KeyedTable<'a, T> {
    entries: &'a mut Vec<T>,
    by_key: &'a mut KeyIndex,
    in_file: &'a mut usize,
}

impl<T> KeyedTable<'_, T> {
    /// Adds `entry` under `key`. A placeholder (made when the key was referenced before it
    /// was defined) is replaced silently; a key defined twice keeps the last entry, in the
    /// first one's place, counted as [`DiagnosticKind::DuplicateMetadataKey`].
    fn insert<Id>(
        self,
        key: i64,
        entry: T,
        is_placeholder: impl Fn(&T) -> bool,
        make_id: impl Fn(u32) -> Id,
        too_many: &'static str,
        diag: &mut Diagnostics,
    ) -> Result<Id, BuildError> {
        if let Some(existing) = self.by_key.get(key) {
            let slot = &mut self.entries[existing as usize];
            if is_placeholder(slot) {
                *self.in_file += 1;
            } else {
                diag.add(DiagnosticKind::DuplicateMetadataKey, 1);
            }
            *slot = entry;
            return Ok(make_id(existing));
        }
        if self.entries.len() >= MAX_METADATA {
            return Err(BuildError::TooLarge(too_many));
        }
        let dense = self.entries.len() as u32;
        self.by_key.insert_new(key, dense);
        self.entries.push(entry);
        *self.in_file += 1;
        Ok(make_id(dense))
    }
}

/// A line built on its own (by a [`LineBuilder`], on any thread), waiting for
/// [`PlaneBuilder::add_line`] to settle it.
#[derive(Debug, Default)]
pub struct LineDraft {
    line: XLine,
}

impl LineDraft {
    /// Number of events.
    pub fn event_count(&self) -> usize {
        self.line.event_count()
    }
}

/// The keys → dense ids of one plane's metadata, shared read-only by the threads that
/// build its lines.
#[derive(Debug)]
pub struct MetadataIds {
    events: KeyIndex,
    stats: KeyIndex,
}

/// Builds one line: events and stats by the input's metadata keys, with line-local
/// strings and placeholders, so that many lines of a plane can be built at once.
///
/// An event's stats come first ([`LineBuilder::push_stat`]), then the event itself
/// ([`LineBuilder::push_event`]), the order a streaming reader meets them in.
///
/// The pushes take the plane's [`MetadataIds`] again (the ones given to
/// [`LineBuilder::new`]): passed along, they stay in registers through a decoding loop;
/// read from the builder, each push re-read them after every store (6% slower decoding).
#[derive(Debug)]
pub struct LineBuilder<'a> {
    /// The ids given to `new`, read by debug checks only (pushes take them as an argument).
    ids: &'a MetadataIds,
    placeholders: &'a SharedBudget,
    line: XLine,
    rest: Unsettled,
    unknown_event_index: FxHashMap<i64, u32>,
    unknown_stat_index: FxHashMap<i64, u32>,
    /// Why the last placeholder was refused (kept here so that the hot paths pass small
    /// values around, not errors).
    refused: Option<BuildError>,
}

impl<'a> LineBuilder<'a> {
    /// A line of a plane whose metadata is `ids`; placeholders for keys the plane lacks are
    /// paid from `placeholders`. `expected_events` sizes the columns (0 allocates nothing).
    pub fn new(ids: &'a MetadataIds, placeholders: &'a SharedBudget, expected_events: usize) -> Self {
        let line = XLine {
            events: EventColumns {
                metadata: IdColumn::with_capacity(expected_events),
                offset_ps: BlockedI64::with_capacity(expected_events),
                duration_ps: EscapedI64::with_capacity(expected_events),
                stats_end: RowEnds::with_capacity(expected_events),
                occurrences: Vec::new(),
            },
            ..XLine::default()
        };
        LineBuilder {
            ids,
            placeholders,
            line,
            rest: Unsettled::default(),
            unknown_event_index: FxHashMap::default(),
            unknown_stat_index: FxHashMap::default(),
            refused: None,
        }
    }

    /// Room for `stats` more stats: an importer that knows (an upper bound of) its count
    /// spares the column's regrowth, its copies and its slack at the peak.
    pub fn reserve_stats(&mut self, stats: usize) {
        self.line.stats.reserve(stats);
    }

    /// Sets `XLine.id`.
    pub fn set_id(&mut self, id: i64) {
        self.line.id = id;
    }

    /// Sets `XLine.display_id`.
    pub fn set_display_id(&mut self, id: i64) {
        self.line.display_id = id;
    }

    /// Sets `XLine.name`.
    pub fn set_name(&mut self, name: String) {
        self.line.name = name;
    }

    /// Sets `XLine.display_name`.
    pub fn set_display_name(&mut self, name: String) {
        self.line.display_name = name;
    }

    /// Sets the line start (ns since the Unix epoch).
    pub fn set_timestamp_ns(&mut self, timestamp_ns: i64) {
        self.line.timestamp_ns = timestamp_ns;
    }

    /// Sets `XLine.duration_ps`.
    pub fn set_duration_ps(&mut self, duration_ps: i64) {
        self.line.duration_ps = duration_ps;
    }

    /// The line's repair counts (importers add their own, e.g. unknown fields).
    #[inline]
    pub fn diagnostics_mut(&mut self) -> &mut Diagnostics {
        &mut self.rest.diag
    }

    /// Adds a stat to the event the next [`LineBuilder::push_event`] completes.
    #[inline]
    pub fn push_stat(&mut self, ids: &MetadataIds, stat_key: i64, value: StatInput<'_>) -> Result<(), BuildError> {
        debug_assert!(std::ptr::eq(self.ids, ids), "a line's pushes take the ids it was made with");
        let meta = match ids.stats.get(stat_key) {
            Some(m) => m,
            None => match self.unknown_stat(stat_key) {
                Some(m) => m,
                None => return Err(self.refusal()),
            },
        };
        // One dispatch: each arm pushes its own kind (the push is inlined per kind).
        match value {
            StatInput::Unset => self.line.stats.push(meta, RawValue::Unset),
            StatInput::Double(d) => self.line.stats.push(meta, RawValue::Double(d)),
            StatInput::Uint64(x) => self.line.stats.push(meta, RawValue::U64(x)),
            StatInput::Int64(x) => self.line.stats.push(meta, RawValue::I64(x)),
            StatInput::Str(s) => {
                let id = self.rest.strings.get_or_insert_with(StringTable::default).intern(s);
                self.line.stats.push(meta, RawValue::Str(id));
            }
            StatInput::Utf8(b) => {
                let strings = self.rest.strings.get_or_insert_with(StringTable::default);
                let (id, replaced) = strings.intern_utf8(b);
                if replaced {
                    self.rest.diag.add(DiagnosticKind::InvalidUtf8, 1);
                }
                self.line.stats.push(meta, RawValue::Str(id));
            }
            StatInput::Bytes(b) => {
                self.line.bytes.push(b.into());
                let index = (self.line.bytes.len() - 1) as u32;
                self.line.stats.push(meta, RawValue::Bytes(index));
            }
            StatInput::Ref(id) => {
                if i64::try_from(id).ok().and_then(|id| ids.stats.get(id)).is_none() {
                    self.rest.diag.add(DiagnosticKind::DanglingRefValue, 1);
                }
                self.line.stats.push(meta, RawValue::Ref(id));
            }
        }
        Ok(())
    }

    /// Completes an event of metadata `metadata_key` at `offset_ps` from the line start,
    /// lasting `duration_ps`, with the stats pushed since the previous event.
    #[inline]
    pub fn push_event(
        &mut self,
        ids: &MetadataIds,
        metadata_key: i64,
        offset_ps: i64,
        duration_ps: i64,
    ) -> Result<(), BuildError> {
        let meta = self.event_metadata(ids, metadata_key)?;
        self.push_row(meta, offset_ps, duration_ps)
    }

    /// Completes an aggregated event (`num_occurrences` instead of an offset; its offset
    /// reads as 0).
    #[inline]
    pub fn push_aggregated_event(
        &mut self,
        ids: &MetadataIds,
        metadata_key: i64,
        num_occurrences: i64,
        duration_ps: i64,
    ) -> Result<(), BuildError> {
        let meta = self.event_metadata(ids, metadata_key)?;
        let events = &mut self.line.events;
        events.occurrences.push((events.metadata.len() as u32, num_occurrences));
        self.push_row(meta, 0, duration_ps)
    }

    /// The draft, for [`PlaneBuilder::add_line`].
    pub fn finish(self) -> LineDraft {
        let LineBuilder { mut line, rest, .. } = self;
        line.events.metadata.shrink_to_fit();
        line.events.offset_ps.finish();
        line.events.duration_ps.finish();
        line.events.stats_end.shrink_to_fit();
        line.stats.finish();
        let settled = rest.strings.is_none()
            && rest.unknown_events.is_empty()
            && rest.unknown_stats.is_empty()
            && rest.diag.is_empty();
        if !settled {
            line.unsettled = Some(Box::new(rest));
        }
        LineDraft { line }
    }

    #[inline(always)]
    fn push_row(&mut self, meta: u32, offset_ps: i64, duration_ps: i64) -> Result<(), BuildError> {
        let events = &mut self.line.events;
        events.metadata.push(meta);
        events.offset_ps.push(offset_ps);
        events.duration_ps.push(duration_ps);
        if self.line.stats.len() > u32::MAX as usize - 1 {
            return Err(BuildError::TooLarge("more stats in one line than oxprof supports"));
        }
        events.stats_end.push(self.line.stats.len() as u32);
        Ok(())
    }

    #[inline]
    fn event_metadata(&mut self, ids: &MetadataIds, key: i64) -> Result<u32, BuildError> {
        debug_assert!(std::ptr::eq(self.ids, ids), "a line's pushes take the ids it was made with");
        match ids.events.get(key) {
            Some(m) => Ok(m),
            None => match self.unknown_event(key) {
                Some(m) => Ok(m),
                None => Err(self.refusal()),
            },
        }
    }

    /// Why the last placeholder was refused.
    #[cold]
    fn refusal(&mut self) -> BuildError {
        self.refused.take().unwrap_or(BuildError::TooLarge("placeholder refused"))
    }

    /// A line-local placeholder index for an event metadata key the plane lacks (`None`:
    /// refused, see [`LineBuilder::refusal`]).
    #[cold]
    fn unknown_event(&mut self, key: i64) -> Option<u32> {
        self.rest.diag.add(DiagnosticKind::UnknownEventMetadata, 1);
        let k = placeholder(
            key,
            &mut self.rest.unknown_events,
            &mut self.unknown_event_index,
            self.placeholders,
            &mut self.refused,
            "too many unknown event metadata ids",
        )?;
        Some(u32::MAX - k)
    }

    /// A line-local placeholder index for a stat metadata key the plane lacks (`None`:
    /// refused, see [`LineBuilder::refusal`]).
    #[cold]
    fn unknown_stat(&mut self, key: i64) -> Option<u32> {
        self.rest.diag.add(DiagnosticKind::UnknownStatMetadata, 1);
        let k = placeholder(
            key,
            &mut self.rest.unknown_stats,
            &mut self.unknown_stat_index,
            self.placeholders,
            &mut self.refused,
            "too many unknown stat metadata ids",
        )?;
        Some(META_MASK - k)
    }
}

/// The line-local index of `key` among the keys a line referenced that its plane lacks,
/// adding it (paid from `placeholders`) on first sight; `None` when refused, with why in
/// `refused`.
fn placeholder(
    key: i64,
    keys: &mut Vec<i64>,
    index: &mut FxHashMap<i64, u32>,
    placeholders: &SharedBudget,
    refused: &mut Option<BuildError>,
    too_many: &'static str,
) -> Option<u32> {
    if keys.len() >= MAX_METADATA {
        *refused = Some(BuildError::TooLarge(too_many));
        return None;
    }
    match index.entry(key) {
        Entry::Occupied(e) => Some(*e.get()),
        Entry::Vacant(e) => {
            if let Err(exceeded) = placeholders.spend(1) {
                *refused = Some(exceeded.into());
                return None;
            }
            keys.push(key);
            Some(*e.insert(keys.len() as u32 - 1))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limit;

    fn unlimited() -> SharedBudget {
        SharedBudget::unlimited(Limit::MetadataEntries)
    }

    /// Lines built in any order and added in input order give the same ids: local strings
    /// and placeholders are numbered when drafts are added.
    #[test]
    fn drafts_settle_strings_and_placeholders_in_the_order_they_are_added() {
        let budget = unlimited();
        let build = |reverse: bool| {
            let mut p = PlaneBuilder::new(1, "/host:CPU");
            let name = p.intern("op");
            let step = p.intern("step");
            p.add_stat_metadata(10, 10, step, StrId::EMPTY).unwrap();
            p.add_event_metadata(1, NewEventMetadata { id: 1, name, ..Default::default() }).unwrap();
            let ids = p.metadata_ids();
            let line = |text: &str, unknown: i64| {
                let mut l = LineBuilder::new(&ids, &budget, 0);
                l.push_stat(&ids, 10, StatInput::Str(text)).unwrap();
                l.push_stat(&ids, unknown, StatInput::Int64(-3)).unwrap();
                l.push_event(&ids, unknown, 5, 7).unwrap();
                l.push_event(&ids, 1, 9, 1).unwrap();
                l.finish()
            };
            let mut drafts = if reverse {
                let b = line("b", 21);
                let a = line("a", 20);
                vec![a, b]
            } else {
                vec![line("a", 20), line("b", 21)]
            };
            let second = drafts.pop().unwrap();
            p.add_lines(drafts).unwrap();
            p.add_line(second).unwrap();
            let mut diag = Diagnostics::default();
            (p.finish(&mut diag), diag)
        };
        let ((one, d1), (two, d2)) = (build(false), build(true));
        assert_eq!(d1, d2);
        assert_eq!(d1.count(DiagnosticKind::UnknownEventMetadata), 2);
        assert_eq!(d1.count(DiagnosticKind::UnknownStatMetadata), 2);
        for plane in [&one, &two] {
            let keys: Vec<i64> = plane.event_metadata().iter().map(|m| m.key()).collect();
            assert_eq!(keys, [1, 20, 21]);
            assert!(plane.event_metadata()[1].is_placeholder() && !plane.event_metadata()[0].is_placeholder());
            assert_eq!((plane.event_metadata_count(), plane.stat_metadata_count()), (1, 1));
            let strings: Vec<&str> = plane.strings().iter().map(|(_, s)| s).collect();
            assert_eq!(strings, ["", "op", "step", "a", "b"]);
            let line = &plane.lines[1];
            let e = line.event(plane, 0);
            assert_eq!((e.metadata().key(), e.offset_ps(), e.duration_ps()), (21, 5, 7));
            let stats: Vec<String> = e.stats().map(|s| format!("{s:?}")).collect();
            assert_eq!(stats, ["step=Str(\"b\")", "=Int64(-3)"]);
            assert_eq!(line.event(plane, 1).stats().len(), 0);
        }
    }

    #[test]
    fn a_placeholder_budget_stops_unknown_keys() {
        let budget = SharedBudget::new(Limit::MetadataEntries, 1, 0);
        let p = PlaneBuilder::new(1, "p");
        let ids = p.metadata_ids();
        let mut l = LineBuilder::new(&ids, &budget, 0);
        l.push_event(&ids, 5, 0, 1).unwrap();
        l.push_event(&ids, 5, 1, 1).unwrap();
        assert!(matches!(l.push_event(&ids, 6, 2, 1), Err(BuildError::LimitExceeded(_))));
    }

    #[test]
    fn metadata_given_after_a_placeholder_fills_it() {
        let budget = unlimited();
        let mut p = PlaneBuilder::new(1, "p");
        p.add_plane_stat(3, StatInput::Uint64(1), &budget).unwrap();
        let name = p.intern("late");
        p.add_stat_metadata(3, 3, name, StrId::EMPTY).unwrap();
        p.add_stat_metadata(3, 3, name, StrId::EMPTY).unwrap();
        let mut diag = Diagnostics::default();
        let plane = p.finish(&mut diag);
        assert_eq!(plane.stat_metadata_count(), 1);
        assert!(!plane.stat_metadata()[0].is_placeholder());
        assert_eq!(format!("{:?}", plane.stats().next().unwrap()), "late=Uint64(1)");
        assert_eq!(diag.count(DiagnosticKind::UnknownStatMetadata), 1);
        assert_eq!(diag.count(DiagnosticKind::DuplicateMetadataKey), 1);
    }

    /// Drafts become the plane's lines without a second table of lines.
    #[test]
    fn add_lines_reuses_the_drafts_memory() {
        let budget = unlimited();
        let mut p = PlaneBuilder::new(1, "p");
        let ids = p.metadata_ids();
        let drafts: Vec<LineDraft> = (0..100).map(|_| LineBuilder::new(&ids, &budget, 0).finish()).collect();
        let before = drafts.as_ptr() as usize;
        p.add_lines(drafts).unwrap();
        let plane = p.finish(&mut Diagnostics::default());
        assert_eq!(plane.lines.as_ptr() as usize, before);
        assert_eq!(plane.lines.len(), 100);
    }
}
