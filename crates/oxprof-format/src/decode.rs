//! The XSpace decoder: protobuf bytes straight into the compact model, without building
//! intermediate message objects.
//!
//! Plan of a decode:
//!
//! ```text
//!  XSpace bytes ──scan──> plane ranges, errors/warnings/hostnames
//!  each plane   ──scan──> line ranges; metadata maps and plane stats decoded first
//!                         (the file stores lines before metadata, but lines need it)
//!  all lines of all planes ──rayon, largest first──> event and stat columns
//!  sequential merge, file order: line-local strings and placeholder metadata
//!                         become plane-wide, so ids do not depend on thread count
//! ```
//!
//! Every decoded range can be handed back to the OS as soon as it is consumed
//! ([`ReleasePages`]), so decoding a memory-mapped file does not keep the whole file
//! resident next to the model.

use crate::columns::{BlockedI64, EscapedI64, IdColumn, RowEnds};
use crate::diagnostics::{DiagnosticKind, Diagnostics};
use crate::error::{DecodeError, WireError};
use crate::limits::{Limit, LimitExceeded, LoadLimits};
use crate::model::{
    EventColumns, EventMetadata, EventMetadataId, META_MASK, RawValue, StatColumns, StatMetadata, StatMetadataId,
    XLine, XPlane, XSpace,
};
use crate::schema::{HostEventType, StatType};
use crate::strings::{StrId, StringTable};
use crate::wire::{Reader, WireType};
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;
use std::io::Read;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

/// Receives byte ranges of the input that the decoder no longer needs.
pub trait ReleasePages: Sync {
    /// `range` (absolute offsets into the decoded buffer) has been consumed.
    fn release(&self, range: Range<usize>);
}

/// A [`ReleasePages`] that keeps everything (for in-memory buffers).
pub struct KeepPages;

impl ReleasePages for KeepPages {
    fn release(&self, _range: Range<usize>) {}
}

/// How often (in bytes) a long line hands consumed input back.
const RELEASE_EVERY: usize = 4 << 20;
/// Largest gunzipped `compressed_str_value` kept (larger ones are counted as bad and read
/// as ""); all of them together are bounded by [`LoadLimits::compressed_str_bytes`].
const MAX_DECOMPRESSED_STR: u64 = 256 << 20;
/// Metadata indexes are stored in 28 bits; placeholders count down from the top.
const MAX_METADATA: usize = (META_MASK as usize) / 2;

/// Decodes an XSpace from memory.
pub fn decode_xspace(buf: &[u8]) -> Result<XSpace, DecodeError> {
    decode_xspace_with(buf, &KeepPages)
}

/// Decodes an XSpace, reporting consumed ranges to `release`.
pub fn decode_xspace_with(buf: &[u8], release: &dyn ReleasePages) -> Result<XSpace, DecodeError> {
    decode_xspace_lines_of(buf, release, &|_| true)
}

/// Decodes an XSpace, with the lines (the events) of only the planes whose name passes
/// `lines_of`: the other planes keep their metadata and stats, no lines, and count the
/// lines left out in [`XPlane::lines_not_decoded`]. For questions about a profile that the
/// metadata answers (its HLO modules, which tools apply), at a fraction of a full decode.
/// Within the default [`LoadLimits`].
pub fn decode_xspace_lines_of(
    buf: &[u8],
    release: &dyn ReleasePages,
    lines_of: &dyn Fn(&str) -> bool,
) -> Result<XSpace, DecodeError> {
    decode_xspace_within(buf, release, lines_of, &LoadLimits::default())
}

/// [`decode_xspace_lines_of`] within explicit budgets: a buffer larger than
/// `limits.max_profile_bytes`, with more planes, lines or metadata entries than its size
/// allows, or whose compressed string stats inflate past their budget is refused with
/// [`DecodeError::LimitExceeded`], before the memory it would take is allocated.
pub fn decode_xspace_within(
    buf: &[u8],
    release: &dyn ReleasePages,
    lines_of: &dyn Fn(&str) -> bool,
    limits: &LoadLimits,
) -> Result<XSpace, DecodeError> {
    if buf.is_empty() {
        return Err(DecodeError::Empty);
    }
    let size = buf.len() as u64;
    if size > limits.max_profile_bytes {
        let exceeded = LimitExceeded { limit: Limit::ProfileBytes, allowed: limits.max_profile_bytes, at_least: size };
        return Err(DecodeError::LimitExceeded(exceeded));
    }
    let mut counts = ScanCounts {
        planes: Count::new(Limit::Planes, limits.planes.for_size(size)),
        lines: Count::new(Limit::Lines, limits.lines.for_size(size)),
        metadata: Count::new(Limit::MetadataEntries, limits.metadata_entries.for_size(size)),
    };
    let mut space = XSpace::default();
    let mut diag = Diagnostics::default();
    let mut plane_ranges = Vec::new();
    let mut known_fields = 0usize;
    let mut r = Reader::new(buf, 0);
    let ctx = |e: WireError| DecodeError::Wire { cause: e, context: "XSpace".into() };
    while !r.is_empty() {
        let (field, wt) = r.tag().map_err(ctx)?;
        match (field, wt) {
            (1, WireType::Len) => {
                counts.planes.add_one().map_err(DecodeError::LimitExceeded)?;
                plane_ranges.push(r.len_delimited().map_err(ctx)?);
                known_fields += 1;
            }
            (2..=4, WireType::Len) => {
                let (bytes, _) = r.len_delimited().map_err(ctx)?;
                let s = owned_utf8(bytes.to_vec(), &mut diag);
                match field {
                    2 => space.errors.push(s),
                    3 => space.warnings.push(s),
                    _ => space.hostnames.push(s),
                }
                known_fields += 1;
            }
            _ => {
                r.skip(field, wt).map_err(ctx)?;
                diag.add(DiagnosticKind::UnknownField, 1);
            }
        }
    }
    if known_fields == 0 {
        return Err(DecodeError::NotAnXSpace(buf.len()));
    }

    // Placeholders for metadata ids the file lacks count as metadata entries too.
    let budgets = Budgets {
        strings: SharedBudget::new(Limit::CompressedStrBytes, limits.compressed_str_bytes.for_size(size), 0),
        placeholders: SharedBudget::new(Limit::MetadataEntries, counts.metadata.allowed, counts.metadata.seen),
    };
    // Planes: scan and decode metadata (sequential; metadata is small).
    let mut scans = Vec::with_capacity(plane_ranges.len());
    for (i, &(bytes, base)) in plane_ranges.iter().enumerate() {
        let scan = scan_plane(bytes, base, &mut counts, &mut diag)
            .map_err(|e| e.into_decode_error(|| format!("XSpace.planes[{i}]")))?;
        scans.push(scan);
    }
    let mut planes = Vec::with_capacity(scans.len());
    for (i, scan) in scans.iter_mut().enumerate() {
        let plane = decode_plane_metadata(scan, &budgets, &mut diag)
            .map_err(|e| e.into_decode_error(|| format!("XSpace.planes[{i}] metadata")))?;
        planes.push(plane);
    }

    // Lines of all planes (that are asked for), in parallel, largest first for balance.
    let wanted: Vec<bool> = planes.iter().map(|p| lines_of(&p.name)).collect();
    for ((plane, scan), &wanted) in planes.iter_mut().zip(&scans).zip(&wanted) {
        if !wanted {
            plane.lines_not_decoded = scan.lines.len();
        }
    }
    let lookups: Vec<(IdLookup, IdLookup)> = planes
        .iter()
        .map(|plane| {
            let events = IdLookup::new(plane.event_metadata_by_id.iter().map(|(&k, v)| (k, v.0)));
            let stats = IdLookup::new(plane.stat_metadata_by_id.iter().map(|(&k, v)| (k, v.0)));
            (events, stats)
        })
        .collect();
    // Each line is decoded straight into its place in its plane; what it could not settle
    // alone (line-local strings, placeholders, diagnostics) is merged after, in file order.
    // (A table of decoded lines beside the planes' own doubled the memory of files made
    // of many small lines.)
    let mut jobs: Vec<(usize, usize, &[u8], usize, &mut XLine)> = Vec::new();
    for (p, (plane, scan)) in planes.iter_mut().zip(&scans).enumerate() {
        if wanted[p] {
            plane.lines = std::iter::repeat_with(XLine::default).take(scan.lines.len()).collect();
            let slots = plane.lines.iter_mut().zip(&scan.lines).enumerate();
            jobs.extend(slots.map(|(l, (slot, &(bytes, base)))| (p, l, bytes, base, slot)));
        }
    }
    jobs.sort_by_key(|&(p, l, bytes, _, _)| (std::cmp::Reverse(bytes.len()), p, l));
    let (lookups_ref, budgets) = (&lookups, &budgets);
    let mut rests: Vec<((usize, usize), LineResult)> = jobs
        .into_par_iter()
        .map(|(p, l, bytes, base, slot)| {
            ((p, l), decode_line_into(slot, bytes, base, &lookups_ref[p], budgets, release))
        })
        .collect();
    rests.sort_unstable_by_key(|&(position, _)| position);
    for ((p, l), rest) in rests {
        let rest = rest.map_err(|e| e.into_decode_error(|| format!("XSpace.planes[{p}].lines[{l}]")))?;
        if let Some(rest) = rest {
            let plane = &mut planes[p];
            let mut line = std::mem::take(&mut plane.lines[l]);
            merge_line(plane, &mut line, *rest, &mut diag)?;
            plane.lines[l] = line;
        }
    }
    space.planes = planes;
    space.diagnostics = diag;
    Ok(space)
}

/// Why decoding stopped, before the context of the failing message is known.
enum Failure {
    Wire(WireError),
    Limit(LimitExceeded),
}

impl From<WireError> for Failure {
    fn from(e: WireError) -> Self {
        Failure::Wire(e)
    }
}

impl From<LimitExceeded> for Failure {
    fn from(e: LimitExceeded) -> Self {
        Failure::Limit(e)
    }
}

impl Failure {
    fn into_decode_error(self, context: impl FnOnce() -> String) -> DecodeError {
        match self {
            Failure::Wire(cause) => DecodeError::Wire { cause, context: context() },
            Failure::Limit(exceeded) => DecodeError::LimitExceeded(exceeded),
        }
    }
}

/// Items of one kind met while scanning, against what the file's size allows.
struct Count {
    limit: Limit,
    allowed: u64,
    seen: u64,
}

impl Count {
    fn new(limit: Limit, allowed: u64) -> Self {
        Count { limit, allowed, seen: 0 }
    }

    /// Counts one more item; refuses it before the caller allocates anything for it.
    #[inline]
    fn add_one(&mut self) -> Result<(), LimitExceeded> {
        self.seen += 1;
        if self.seen > self.allowed {
            return Err(LimitExceeded { limit: self.limit, allowed: self.allowed, at_least: self.seen });
        }
        Ok(())
    }
}

/// The counted items of a file's scan.
struct ScanCounts {
    planes: Count,
    lines: Count,
    metadata: Count,
}

/// What the threads decoding lines may still spend, shared between them.
struct Budgets {
    /// Bytes of gunzipped string stats.
    strings: SharedBudget,
    /// Placeholder metadata entries (for ids events and stats use but the file lacks).
    placeholders: SharedBudget,
}

/// A budget shared by threads. Whether it is exceeded does not depend on the order in
/// which threads spend it: only what is actually produced is counted.
struct SharedBudget {
    limit: Limit,
    allowed: u64,
    used: AtomicU64,
}

impl SharedBudget {
    fn new(limit: Limit, allowed: u64, used: u64) -> Self {
        SharedBudget { limit, allowed, used: AtomicU64::new(used) }
    }

    fn spend(&self, amount: usize) -> Result<(), LimitExceeded> {
        let used = self.used.fetch_add(amount as u64, Ordering::Relaxed).saturating_add(amount as u64);
        if used > self.allowed {
            return Err(LimitExceeded { limit: self.limit, allowed: self.allowed, at_least: used });
        }
        Ok(())
    }
}

/// Bytes that should be UTF-8, as an owned string (invalid sequences replaced, counted).
/// Callers copy the bytes first and validate the copy: bytes of a mapped file can change
/// under us (another process writing it), so bytes validated in place could be invalid by
/// the time they were copied.
fn owned_utf8(bytes: Vec<u8>, diag: &mut Diagnostics) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| {
        diag.add(DiagnosticKind::InvalidUtf8, 1);
        String::from_utf8_lossy(e.as_bytes()).into_owned()
    })
}

/// Interns bytes that should be UTF-8 (validated on the copy that is kept: see
/// [`StringTable::intern_untrusted`]).
#[inline]
fn intern_utf8(table: &mut StringTable, bytes: &[u8], diag: &mut Diagnostics) -> StrId {
    let (id, replaced) = table.intern_untrusted(bytes);
    if replaced {
        diag.add(DiagnosticKind::InvalidUtf8, 1);
    }
    id
}

/// Where a plane's parts are, before decoding them.
struct PlaneScan<'a> {
    id: i64,
    name: String,
    lines: Vec<(&'a [u8], usize)>,
    event_metadata: Vec<(&'a [u8], usize)>,
    stat_metadata: Vec<(&'a [u8], usize)>,
    stats: Vec<(&'a [u8], usize)>,
}

fn scan_plane<'a>(
    bytes: &'a [u8],
    base: usize,
    counts: &mut ScanCounts,
    diag: &mut Diagnostics,
) -> Result<PlaneScan<'a>, Failure> {
    let mut scan = PlaneScan {
        id: 0,
        name: String::new(),
        lines: Vec::new(),
        event_metadata: Vec::new(),
        stat_metadata: Vec::new(),
        stats: Vec::new(),
    };
    let mut r = Reader::new(bytes, base);
    while !r.is_empty() {
        match r.tag()? {
            (1, WireType::Varint) => scan.id = r.varint()? as i64,
            (2, WireType::Len) => scan.name = owned_utf8(r.len_delimited()?.0.to_vec(), diag),
            (3, WireType::Len) => {
                counts.lines.add_one()?;
                scan.lines.push(r.len_delimited()?);
            }
            (4, WireType::Len) => {
                counts.metadata.add_one()?;
                scan.event_metadata.push(r.len_delimited()?);
            }
            (5, WireType::Len) => {
                counts.metadata.add_one()?;
                scan.stat_metadata.push(r.len_delimited()?);
            }
            (6, WireType::Len) => scan.stats.push(r.len_delimited()?),
            (field, wt) => {
                r.skip(field, wt)?;
                diag.add(DiagnosticKind::UnknownField, 1);
            }
        }
    }
    Ok(scan)
}

/// Reads a map entry `{key = 1 (int64), value = 2 (message)}`: the key (last one wins)
/// and every occurrence of the value. Protobuf merges repeated occurrences of a singular
/// message field, so the caller decodes the returned segments in order into one value.
fn map_entry<'a>(bytes: &'a [u8], base: usize, diag: &mut Diagnostics) -> Result<(i64, MapValues<'a>), WireError> {
    let mut key = 0i64;
    let mut values = MapValues { first: (&[], base), rest: None };
    let mut r = Reader::new(bytes, base);
    while !r.is_empty() {
        match r.tag()? {
            (1, WireType::Varint) => key = r.varint()? as i64,
            (2, WireType::Len) => {
                let value = r.len_delimited()?;
                if values.first.0.is_empty() && values.rest.is_none() {
                    values.first = value;
                } else {
                    values.rest.get_or_insert_with(Vec::new).push(value);
                }
            }
            (field, wt) => {
                r.skip(field, wt)?;
                diag.add(DiagnosticKind::UnknownField, 1);
            }
        }
    }
    Ok((key, values))
}

/// The value segments of one map entry (almost always exactly one: no allocation then).
struct MapValues<'a> {
    first: (&'a [u8], usize),
    rest: Option<Vec<(&'a [u8], usize)>>,
}

impl<'a> MapValues<'a> {
    /// One reader per segment, in file order.
    fn readers(&self) -> impl Iterator<Item = Reader<'a>> + '_ {
        std::iter::once(self.first).chain(self.rest.iter().flatten().copied()).map(|(b, base)| Reader::new(b, base))
    }
}

fn decode_plane_metadata(
    scan: &mut PlaneScan<'_>,
    budgets: &Budgets,
    diag: &mut Diagnostics,
) -> Result<XPlane, Failure> {
    let mut strings = StringTable::default();

    // Stat metadata first: every stat refers to it.
    let mut stat_metadata: Vec<StatMetadata> = Vec::with_capacity(scan.stat_metadata.len());
    let mut stat_metadata_by_id: FxHashMap<i64, StatMetadataId> = FxHashMap::default();
    for &(bytes, base) in &scan.stat_metadata {
        let (key, values) = map_entry(bytes, base, diag)?;
        let mut id = 0i64;
        let mut name = StrId::EMPTY;
        let mut description = StrId::EMPTY;
        for mut r in values.readers() {
            while !r.is_empty() {
                match r.tag()? {
                    (1, WireType::Varint) => id = r.varint()? as i64,
                    (2, WireType::Len) => name = intern_utf8(&mut strings, r.len_delimited()?.0, diag),
                    (3, WireType::Len) => description = intern_utf8(&mut strings, r.len_delimited()?.0, diag),
                    (field, wt) => {
                        r.skip(field, wt)?;
                        diag.add(DiagnosticKind::UnknownField, 1);
                    }
                }
            }
        }
        let stat_type = StatType::from_name(strings.get(name));
        let entry = StatMetadata { id, name, description, stat_type };
        if let Some(&existing) = stat_metadata_by_id.get(&key) {
            diag.add(DiagnosticKind::DuplicateMetadataKey, 1);
            stat_metadata[existing.index()] = entry;
        } else {
            if stat_metadata.len() >= MAX_METADATA {
                return Err(WireError { offset: base as u64, what: "more stat metadata than oxprof supports" }.into());
            }
            stat_metadata_by_id.insert(key, StatMetadataId(stat_metadata.len() as u32));
            stat_metadata.push(entry);
        }
    }

    let mut plane = XPlane {
        id: scan.id,
        name: std::mem::take(&mut scan.name),
        lines: Vec::with_capacity(scan.lines.len()),
        strings,
        event_metadata: Vec::with_capacity(scan.event_metadata.len()),
        event_metadata_by_id: FxHashMap::default(),
        stat_metadata_in_file: stat_metadata.len(),
        stat_metadata,
        stat_metadata_by_id,
        metadata_stats: StatColumns::default(),
        plane_stats: StatColumns::default(),
        bytes: Vec::new(),
        event_metadata_in_file: 0,
        lines_not_decoded: 0,
    };

    // Event metadata, with their stats.
    for &(bytes, base) in &scan.event_metadata {
        let (key, values) = map_entry(bytes, base, diag)?;
        let mut entry = EventMetadata {
            id: 0,
            name: StrId::EMPTY,
            display_name: StrId::EMPTY,
            metadata: Box::default(),
            child_ids: Box::default(),
            host_event_type: None,
            stats: 0..0,
        };
        let stats_start = plane.metadata_stats.len() as u32;
        let mut child_ids = Vec::new();
        for mut r in values.readers() {
            while !r.is_empty() {
                match r.tag()? {
                    (1, WireType::Varint) => entry.id = r.varint()? as i64,
                    (2, WireType::Len) => entry.name = intern_utf8(&mut plane.strings, r.len_delimited()?.0, diag),
                    (4, WireType::Len) => {
                        entry.display_name = intern_utf8(&mut plane.strings, r.len_delimited()?.0, diag)
                    }
                    (3, WireType::Len) => entry.metadata = r.len_delimited()?.0.into(),
                    (5, WireType::Len) => {
                        let (b, off) = r.len_delimited()?;
                        decode_owned_stat(b, off, &mut plane, StatTarget::Metadata, budgets, diag)?;
                    }
                    (6, WireType::Varint) => child_ids.push(r.varint()? as i64),
                    (6, WireType::Len) => {
                        let (b, off) = r.len_delimited()?;
                        let mut packed = Reader::new(b, off);
                        while !packed.is_empty() {
                            child_ids.push(packed.varint()? as i64);
                        }
                    }
                    (field, wt) => {
                        r.skip(field, wt)?;
                        diag.add(DiagnosticKind::UnknownField, 1);
                    }
                }
            }
        }
        entry.stats = stats_start..plane.metadata_stats.len() as u32;
        entry.child_ids = child_ids.into();
        entry.host_event_type = HostEventType::from_name(plane.strings.get(entry.name));
        if let Some(&existing) = plane.event_metadata_by_id.get(&key) {
            diag.add(DiagnosticKind::DuplicateMetadataKey, 1);
            plane.event_metadata[existing.index()] = entry;
        } else {
            if plane.event_metadata.len() >= MAX_METADATA {
                return Err(WireError { offset: base as u64, what: "more event metadata than oxprof supports" }.into());
            }
            plane.event_metadata_by_id.insert(key, EventMetadataId(plane.event_metadata.len() as u32));
            plane.event_metadata.push(entry);
        }
    }
    plane.event_metadata_in_file = plane.event_metadata.len();

    for &(bytes, base) in &scan.stats {
        decode_owned_stat(bytes, base, &mut plane, StatTarget::Plane, budgets, diag)?;
    }
    plane.metadata_stats.finish();
    plane.plane_stats.finish();
    Ok(plane)
}

#[derive(Clone, Copy)]
enum StatTarget {
    Metadata,
    Plane,
}

/// Decodes one stat of a metadata entry or of the plane (strings go to the plane table).
fn decode_owned_stat(
    bytes: &[u8],
    base: usize,
    plane: &mut XPlane,
    target: StatTarget,
    budgets: &Budgets,
    diag: &mut Diagnostics,
) -> Result<(), Failure> {
    let raw = read_stat(Reader::new(bytes, base), diag)?;
    let meta = resolve_stat_metadata(plane, raw.metadata_id, &budgets.placeholders, diag)?;
    let value = match raw.value {
        StatPayload::Value(v) => v,
        StatPayload::Str(s) => RawValue::Str(intern_utf8(&mut plane.strings, s, diag)),
        StatPayload::Compressed(c) => RawValue::Str(plane.strings.intern(&gunzip_str(c, &budgets.strings, diag)?)),
        StatPayload::Bytes(b) => {
            plane.bytes.push(b.into());
            RawValue::Bytes((plane.bytes.len() - 1) as u32)
        }
    };
    if let RawValue::Ref(id) = value {
        check_ref(&plane.stat_metadata_by_id, id, diag);
    }
    let columns = match target {
        StatTarget::Metadata => &mut plane.metadata_stats,
        StatTarget::Plane => &mut plane.plane_stats,
    };
    columns.push(meta, value);
    Ok(())
}

/// Metadata index for a file id, adding a placeholder entry if the file lacks it.
fn resolve_stat_metadata(
    plane: &mut XPlane,
    id: i64,
    placeholders: &SharedBudget,
    diag: &mut Diagnostics,
) -> Result<u32, LimitExceeded> {
    if let Some(m) = plane.stat_metadata_by_id.get(&id) {
        return Ok(m.0);
    }
    placeholders.spend(1)?;
    diag.add(DiagnosticKind::UnknownStatMetadata, 1);
    let index = plane.stat_metadata.len() as u32;
    plane.stat_metadata.push(StatMetadata { id, name: StrId::EMPTY, description: StrId::EMPTY, stat_type: None });
    plane.stat_metadata_by_id.insert(id, StatMetadataId(index));
    Ok(index)
}

fn check_ref(by_id: &FxHashMap<i64, StatMetadataId>, id: u64, diag: &mut Diagnostics) {
    if i64::try_from(id).map_or(true, |id| !by_id.contains_key(&id)) {
        diag.add(DiagnosticKind::DanglingRefValue, 1);
    }
}

/// Gunzips a `compressed_str_value`, chunk by chunk against the file's budget (so a
/// dozen strings that each inflate to hundreds of megabytes stop at the budget). One that
/// is not gzip or inflates past [`MAX_DECOMPRESSED_STR`] reads as "" and is counted.
fn gunzip_str(bytes: &[u8], budget: &SharedBudget, diag: &mut Diagnostics) -> Result<String, LimitExceeded> {
    let mut gz = flate2::read::GzDecoder::new(bytes).take(MAX_DECOMPRESSED_STR + 1);
    let mut out = Vec::new();
    let mut chunk = [0u8; 16 << 10];
    loop {
        match gz.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                budget.spend(n)?;
                out.extend_from_slice(&chunk[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => {
                diag.add(DiagnosticKind::BadCompressedString, 1);
                return Ok(String::new());
            }
        }
    }
    if out.len() as u64 > MAX_DECOMPRESSED_STR {
        diag.add(DiagnosticKind::BadCompressedString, 1);
        return Ok(String::new());
    }
    Ok(owned_utf8(out, diag))
}

enum StatPayload<'a> {
    Value(RawValue),
    Str(&'a [u8]),
    Bytes(&'a [u8]),
    Compressed(&'a [u8]),
}

struct RawStat<'a> {
    metadata_id: i64,
    value: StatPayload<'a>,
}

/// Reads one `XStat` message. The value oneof keeps the last value field, as protobuf does.
#[inline(always)]
fn read_stat<'a>(mut r: Reader<'a>, diag: &mut Diagnostics) -> Result<RawStat<'a>, WireError> {
    let mut stat = RawStat { metadata_id: 0, value: StatPayload::Value(RawValue::Unset) };
    while !r.is_empty() {
        // Keys: field << 3 | wire type (0 varint, 1 fixed64, 2 length-delimited).
        match r.key()? {
            0x08 => stat.metadata_id = r.varint()? as i64,
            0x11 => stat.value = StatPayload::Value(RawValue::Double(f64::from_bits(r.fixed64()?))),
            0x18 => stat.value = StatPayload::Value(RawValue::U64(r.varint()?)),
            0x20 => stat.value = StatPayload::Value(RawValue::I64(r.varint()? as i64)),
            0x2a => stat.value = StatPayload::Str(r.len_delimited()?.0),
            0x32 => stat.value = StatPayload::Bytes(r.len_delimited()?.0),
            0x38 => stat.value = StatPayload::Value(RawValue::Ref(r.varint()?)),
            0x42 => stat.value = StatPayload::Compressed(r.len_delimited()?.0),
            key => {
                let (field, wt) = r.split_key(key)?;
                r.skip(field, wt)?;
                diag.add(DiagnosticKind::UnknownField, 1);
            }
        }
    }
    Ok(stat)
}

/// File metadata id → dense index, for the per-event and per-stat lookups of a plane's
/// lines. Files number metadata 1, 2, 3, …, so a plain table indexed by id is the usual
/// case; sparse or negative ids fall back to a hash map.
struct IdLookup {
    dense: Vec<u32>,
    sparse: FxHashMap<i64, u32>,
}

impl IdLookup {
    const ABSENT: u32 = u32::MAX;

    fn new(entries: impl ExactSizeIterator<Item = (i64, u32)> + Clone) -> Self {
        let len = entries.len();
        let max = entries.clone().map(|(id, _)| id).max().unwrap_or(-1);
        let dense_fits = entries.clone().all(|(id, _)| id >= 0) && (max as u64) < 4 * len as u64 + 1024;
        if !dense_fits {
            return IdLookup { dense: Vec::new(), sparse: entries.collect() };
        }
        let mut dense = vec![Self::ABSENT; (max + 1) as usize];
        for (id, index) in entries {
            dense[id as usize] = index;
        }
        IdLookup { dense, sparse: FxHashMap::default() }
    }

    #[inline(always)]
    fn get(&self, id: i64) -> Option<u32> {
        match self.dense.get(id as usize) {
            Some(&index) if index != Self::ABSENT => Some(index),
            Some(_) => None,
            None => self.sparse.get(&id).copied(),
        }
    }
}

/// A decoded line before its strings and placeholders are made plane-wide.
struct LineOut {
    line: XLine,
    /// Line-local strings; none until the line has a string stat (most lines of files
    /// made of many small lines have none).
    strings: Option<StringTable>,
    /// File ids of event metadata the plane lacks; event `u32::MAX - k` means entry k.
    unknown_events: Vec<i64>,
    /// File ids of stat metadata the plane lacks; stat meta `META_MASK - k` means entry k.
    unknown_stats: Vec<i64>,
    diag: Diagnostics,
}

/// A line decoded into its slot: what is left to merge, or why it failed.
type LineResult = Result<Option<Box<LineRest>>, Failure>;

/// What a decoded line could not settle alone; `None` for most lines.
struct LineRest {
    strings: Option<StringTable>,
    unknown_events: Vec<i64>,
    unknown_stats: Vec<i64>,
    diag: Diagnostics,
}

/// Decodes a line into `slot`, returning what [`merge_line`] must still settle.
fn decode_line_into(
    slot: &mut XLine,
    bytes: &[u8],
    base: usize,
    ids: &(IdLookup, IdLookup),
    budgets: &Budgets,
    release: &dyn ReleasePages,
) -> LineResult {
    let LineOut { line, strings, unknown_events, unknown_stats, diag } =
        decode_line(bytes, base, ids, budgets, release)?;
    *slot = line;
    if strings.is_none() && unknown_events.is_empty() && unknown_stats.is_empty() && diag.is_empty() {
        return Ok(None);
    }
    Ok(Some(Box::new(LineRest { strings, unknown_events, unknown_stats, diag })))
}

fn decode_line(
    bytes: &[u8],
    base: usize,
    ids: &(IdLookup, IdLookup),
    budgets: &Budgets,
    release: &dyn ReleasePages,
) -> Result<LineOut, Failure> {
    let estimate = bytes.len() / 32;
    let mut out = LineOut {
        line: XLine {
            id: 0,
            display_id: 0,
            name: String::new(),
            display_name: String::new(),
            timestamp_ns: 0,
            duration_ps: 0,
            events: EventColumns {
                metadata: IdColumn::with_capacity(estimate),
                offset_ps: BlockedI64::with_capacity(estimate),
                duration_ps: EscapedI64::with_capacity(estimate),
                stats_end: RowEnds::with_capacity(estimate),
                occurrences: Vec::new(),
            },
            stats: StatColumns::default(),
            bytes: Vec::new(),
        },
        strings: None,
        unknown_events: Vec::new(),
        unknown_stats: Vec::new(),
        diag: Diagnostics::default(),
    };
    let mut unknown_event_index: FxHashMap<i64, u32> = FxHashMap::default();
    let mut unknown_stat_index: FxHashMap<i64, u32> = FxHashMap::default();
    let mut released_to = base;
    let mut r = Reader::new(bytes, base);
    while !r.is_empty() {
        match r.tag()? {
            (1, WireType::Varint) => out.line.id = r.varint()? as i64,
            (10, WireType::Varint) => out.line.display_id = r.varint()? as i64,
            (2, WireType::Len) => out.line.name = owned_utf8(r.len_delimited()?.0.to_vec(), &mut out.diag),
            (11, WireType::Len) => out.line.display_name = owned_utf8(r.len_delimited()?.0.to_vec(), &mut out.diag),
            (3, WireType::Varint) => out.line.timestamp_ns = r.varint()? as i64,
            (9, WireType::Varint) => out.line.duration_ps = r.varint()? as i64,
            (4, WireType::Len) => {
                let event = r.nested()?;
                decode_event(event, ids, budgets, &mut out, &mut unknown_event_index, &mut unknown_stat_index)?;
                if r.offset() - released_to >= RELEASE_EVERY {
                    release.release(released_to..r.offset());
                    released_to = r.offset();
                }
            }
            (field, wt) => {
                r.skip(field, wt)?;
                out.diag.add(DiagnosticKind::UnknownField, 1);
            }
        }
    }
    release.release(released_to..base + bytes.len());
    out.line.events.metadata.shrink_to_fit();
    out.line.events.offset_ps.finish();
    out.line.events.duration_ps.finish();
    out.line.events.stats_end.shrink_to_fit();
    out.line.stats.finish();
    Ok(out)
}

#[inline]
fn decode_event(
    mut r: Reader<'_>,
    (event_ids, stat_ids): &(IdLookup, IdLookup),
    budgets: &Budgets,
    out: &mut LineOut,
    unknown_event_index: &mut FxHashMap<i64, u32>,
    unknown_stat_index: &mut FxHashMap<i64, u32>,
) -> Result<(), Failure> {
    let mut metadata_id = 0i64;
    let mut offset_ps = 0i64;
    let mut occurrences: Option<i64> = None;
    let mut duration_ps = 0i64;
    let base = r.offset();
    while !r.is_empty() {
        // Keys: field << 3 | wire type (0 varint, 2 length-delimited).
        match r.key()? {
            0x08 => metadata_id = r.varint()? as i64,
            0x10 => {
                offset_ps = r.varint()? as i64;
                occurrences = None;
            }
            0x28 => {
                occurrences = Some(r.varint()? as i64);
                offset_ps = 0;
            }
            0x18 => duration_ps = r.varint()? as i64,
            0x22 => {
                let stat_reader = r.nested()?;
                let sbase = stat_reader.offset();
                let stat = read_stat(stat_reader, &mut out.diag)?;
                let meta = match stat_ids.get(stat.metadata_id) {
                    Some(m) => m,
                    None => {
                        out.diag.add(DiagnosticKind::UnknownStatMetadata, 1);
                        if out.unknown_stats.len() >= MAX_METADATA {
                            let what = "too many unknown stat metadata ids";
                            return Err(WireError { offset: sbase as u64, what }.into());
                        }
                        let k = match unknown_stat_index.entry(stat.metadata_id) {
                            Entry::Occupied(e) => *e.get(),
                            Entry::Vacant(e) => {
                                budgets.placeholders.spend(1)?;
                                out.unknown_stats.push(stat.metadata_id);
                                *e.insert(out.unknown_stats.len() as u32 - 1)
                            }
                        };
                        META_MASK - k
                    }
                };
                let value = match stat.value {
                    StatPayload::Value(v) => v,
                    StatPayload::Str(s) => {
                        let strings = out.strings.get_or_insert_with(StringTable::default);
                        RawValue::Str(intern_utf8(strings, s, &mut out.diag))
                    }
                    StatPayload::Compressed(c) => {
                        let s = gunzip_str(c, &budgets.strings, &mut out.diag)?;
                        RawValue::Str(out.strings.get_or_insert_with(StringTable::default).intern(&s))
                    }
                    StatPayload::Bytes(b) => {
                        out.line.bytes.push(b.into());
                        RawValue::Bytes((out.line.bytes.len() - 1) as u32)
                    }
                };
                if let RawValue::Ref(id) = value
                    && i64::try_from(id).ok().and_then(|id| stat_ids.get(id)).is_none()
                {
                    out.diag.add(DiagnosticKind::DanglingRefValue, 1);
                }
                out.line.stats.push(meta, value);
            }
            key => {
                let (field, wt) = r.split_key(key)?;
                r.skip(field, wt)?;
                out.diag.add(DiagnosticKind::UnknownField, 1);
            }
        }
    }
    let meta = match event_ids.get(metadata_id) {
        Some(m) => m,
        None => {
            out.diag.add(DiagnosticKind::UnknownEventMetadata, 1);
            if out.unknown_events.len() >= MAX_METADATA {
                return Err(WireError { offset: base as u64, what: "too many unknown event metadata ids" }.into());
            }
            let k = match unknown_event_index.entry(metadata_id) {
                Entry::Occupied(e) => *e.get(),
                Entry::Vacant(e) => {
                    budgets.placeholders.spend(1)?;
                    out.unknown_events.push(metadata_id);
                    *e.insert(out.unknown_events.len() as u32 - 1)
                }
            };
            u32::MAX - k
        }
    };
    let events = &mut out.line.events;
    if let Some(n) = occurrences {
        events.occurrences.push((events.metadata.len() as u32, n));
    }
    events.metadata.push(meta);
    events.offset_ps.push(offset_ps);
    events.duration_ps.push(duration_ps);
    if out.line.stats.len() > u32::MAX as usize - 1 {
        return Err(WireError { offset: base as u64, what: "more stats in one line than oxprof supports" }.into());
    }
    events.stats_end.push(out.line.stats.len() as u32);
    Ok(())
}

/// Makes a decoded line's strings and placeholder metadata plane-wide.
fn merge_line(
    plane: &mut XPlane,
    line: &mut XLine,
    mut rest: LineRest,
    diag: &mut Diagnostics,
) -> Result<(), DecodeError> {
    diag.merge(&rest.diag);
    if let Some(strings) = rest.strings.take()
        && strings.len() > 1
    {
        let remap: Vec<StrId> = strings.iter().map(|(_, s)| plane.strings.intern(s)).collect();
        for row in 0..line.stats.len() {
            if line.stats.is_str(row) {
                let local = line.stats.value_bits(row) as usize;
                line.stats.set_value(row, remap.get(local).map_or(0, |id| id.0));
            }
        }
    }
    if !rest.unknown_stats.is_empty() {
        let remap: Vec<u32> = rest
            .unknown_stats
            .iter()
            .map(|&id| match plane.stat_metadata_by_id.get(&id) {
                Some(m) => m.0,
                None => {
                    let index = plane.stat_metadata.len() as u32;
                    plane.stat_metadata.push(StatMetadata {
                        id,
                        name: StrId::EMPTY,
                        description: StrId::EMPTY,
                        stat_type: None,
                    });
                    plane.stat_metadata_by_id.insert(id, StatMetadataId(index));
                    index
                }
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
    if !rest.unknown_events.is_empty() {
        let remap: Vec<u32> = rest
            .unknown_events
            .iter()
            .map(|&id| match plane.event_metadata_by_id.get(&id) {
                Some(m) => m.0,
                None => {
                    let index = plane.event_metadata.len() as u32;
                    plane.event_metadata.push(EventMetadata {
                        id,
                        name: StrId::EMPTY,
                        display_name: StrId::EMPTY,
                        metadata: Box::default(),
                        child_ids: Box::default(),
                        host_event_type: None,
                        stats: 0..0,
                    });
                    plane.event_metadata_by_id.insert(id, EventMetadataId(index));
                    index
                }
            })
            .collect();
        let first_placeholder = u32::MAX - (remap.len() as u32 - 1);
        line.events
            .metadata
            .map_in_place(|meta| if meta >= first_placeholder { remap[(u32::MAX - meta) as usize] } else { meta });
    }
    if plane.stat_metadata.len() >= MAX_METADATA || plane.event_metadata.len() >= MAX_METADATA {
        return Err(DecodeError::TooLarge("more metadata entries in one plane than oxprof supports"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::IdLookup;

    /// Protobuf wire helpers for hand-written inputs the builders cannot produce.
    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    fn field_varint(field: u64, v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        varint(field << 3, &mut out);
        varint(v, &mut out);
        out
    }
    fn field_bytes(field: u64, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        varint(field << 3 | 2, &mut out);
        varint(bytes.len() as u64, &mut out);
        out.extend_from_slice(bytes);
        out
    }

    /// A map entry whose value field occurs twice is one value merged from both, as
    /// protobuf reads it: later scalars win, repeated fields (stats, child ids) append.
    #[test]
    fn a_map_value_given_twice_is_merged_as_protobuf_merges_it() {
        let stat_value_a =
            [field_varint(1, 5), field_bytes(2, b"kernel_details"), field_bytes(3, b"launch details")].concat();
        let stat_value_b = [field_varint(1, 6), field_bytes(2, b"renamed")].concat();
        let stat_entry =
            [field_varint(1, 5), field_bytes(2, &stat_value_a), field_varint(1, 6), field_bytes(2, &stat_value_b)]
                .concat();
        let event_value_a = [
            field_varint(1, 1),
            field_bytes(2, b"first"),
            field_bytes(4, b"shown"),
            field_varint(6, 7),
            field_bytes(5, &[field_varint(1, 6), field_varint(4, 3)].concat()),
        ]
        .concat();
        let event_value_b = [field_bytes(2, b"second"), field_varint(6, 8)].concat();
        let event_entry = [field_varint(1, 1), field_bytes(2, &event_value_a), field_bytes(2, &event_value_b)].concat();
        let plane = [field_bytes(2, b"/host:CPU"), field_bytes(5, &stat_entry), field_bytes(4, &event_entry)].concat();
        let bytes = field_bytes(1, &plane);

        assert_eq!(crate::testing::crosscheck(&bytes), Ok(true));
        let space = super::decode_xspace(&bytes).unwrap();
        let plane = &space.planes[0];
        let stat = &plane.stat_metadata()[0];
        assert_eq!((stat.id, plane.str(stat.name), plane.str(stat.description)), (6, "renamed", "launch details"));
        let id = plane.event_metadata_ids().next().unwrap();
        let event = plane.event_metadata_at(id);
        assert_eq!((event.id, plane.str(event.name), plane.str(event.display_name)), (1, "second", "shown"));
        assert_eq!(&*event.child_ids, &[7, 8]);
        assert_eq!(plane.metadata_stats(id).len(), 1);
    }

    #[test]
    fn id_lookup_is_dense_for_small_ids_and_falls_back_for_sparse_or_negative_ones() {
        let dense = IdLookup::new([(1, 0), (2, 1), (7, 2)].into_iter());
        assert!(!dense.dense.is_empty());
        assert_eq!([0, 1, 2, 7, 8, -1].map(|id| dense.get(id)), [None, Some(0), Some(1), Some(2), None, None]);
        for entries in [vec![(-5, 0), (3, 1)], vec![(1 << 40, 0), (3, 1)]] {
            let sparse = IdLookup::new(entries.clone().into_iter());
            assert!(sparse.dense.is_empty());
            for (id, index) in entries {
                assert_eq!(sparse.get(id), Some(index));
            }
            assert_eq!(sparse.get(4), None);
        }
        assert_eq!(IdLookup::new(std::iter::empty()).get(0), None);
    }
}
